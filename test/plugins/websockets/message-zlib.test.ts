/**
 * permessage-deflate's compression (plugins/websockets/message-zlib.ts) against node's zlib as
 * the other end: messages each one zlib write, the 00 00 ff ff tail off and back on, the
 * context kept or reset as agreed, the bound on inflated size, broken input, a final block,
 * cleanup with work in flight, and many connections at once past the process-wide job limit.
 */
import { randomBytes } from 'node:crypto';
import zlib from 'node:zlib';
import { describe, expect, it } from 'vitest';
import { MessageZlib } from '../../../plugins/websockets/message-zlib.js';

const TAIL = Buffer.from([0, 0, 0xff, 0xff]);

function compress(z: MessageZlib, data: Buffer): Promise<Buffer> {
  return new Promise((resolve, reject) => z.compress(data, true, (err, out) => (err ? reject(err) : resolve(out!))));
}

function decompress(z: MessageZlib, data: Buffer, fin = true): Promise<Buffer> {
  return new Promise((resolve, reject) => z.decompress(data, fin, (err, out) => (err ? reject(err) : resolve(out!))));
}

/** A message as a peer without context takeover compresses it: sync flush, tail off. */
function peerMessage(msg: Buffer): Buffer {
  const out = zlib.deflateRawSync(msg, { finishFlush: zlib.constants.Z_SYNC_FLUSH });
  return out.subarray(0, out.length - 4);
}

describe('MessageZlib', () => {
  it('compresses with the context kept: each message inflates in one continuing zlib stream, and repeats shrink', async () => {
    const z = new MessageZlib({}, true, 0);
    const inflater = zlib.createInflateRaw({ windowBits: 15 });
    const got: Buffer[] = [];
    inflater.on('data', (c: Buffer) => got.push(c));
    const msg = Buffer.from('the same message, sent again and again '.repeat(4));
    const sizes: number[] = [];
    for (let i = 0; i < 5; i++) {
      const c = await compress(z, msg);
      expect(c.subarray(-4).equals(TAIL)).toBe(false);
      sizes.push(c.length);
      await new Promise<void>((r) => inflater.write(Buffer.concat([c, TAIL]), () => inflater.flush(() => r())));
      expect(Buffer.concat(got).equals(msg)).toBe(true);
      got.length = 0;
    }
    // Later copies refer back to the first: the context was kept.
    expect(sizes[1]!).toBeLessThan(sizes[0]! / 2);
    z.cleanup();
    inflater.close();
  });

  it('resets the context after each message under server_no_context_takeover', async () => {
    const z = new MessageZlib({ server_no_context_takeover: true }, true, 0);
    const msg = Buffer.from('independent message '.repeat(10));
    const a = await compress(z, msg);
    const b = await compress(z, msg);
    expect(a.equals(b)).toBe(true);
    // Each inflates alone, with a fresh stream.
    expect(zlib.inflateRawSync(Buffer.concat([b, TAIL]), { finishFlush: zlib.constants.Z_SYNC_FLUSH }).equals(msg)).toBe(true);
    z.cleanup();
  });

  it('uses the agreed window bits: client_max_window_bits 9 for the inflater of a server', async () => {
    const z = new MessageZlib({ client_max_window_bits: 9 }, true, 0);
    const msg = Buffer.from('x'.repeat(3000) + 'y'.repeat(3000));
    const c = zlib.deflateRawSync(msg, { windowBits: 9, finishFlush: zlib.constants.Z_SYNC_FLUSH });
    expect((await decompress(z, c.subarray(0, c.length - 4))).equals(msg)).toBe(true);
    z.cleanup();
  });

  it('inflates messages in fragments and whole, large ones with the tail written apart', async () => {
    const z = new MessageZlib({}, true, 0);
    // Bytes that do not compress: a compressed frame over 64 KiB.
    const big = randomBytes(300_000);
    const c = zlib.deflateRawSync(big, { finishFlush: zlib.constants.Z_SYNC_FLUSH }).subarray(0, -4);
    expect(c.length).toBeGreaterThan(65536);
    const parts = [c.subarray(0, 1000), c.subarray(1000, 90_000), c.subarray(90_000)];
    const out: Buffer[] = [];
    for (let i = 0; i < parts.length; i++) out.push(await decompress(z, parts[i]!, i === parts.length - 1));
    expect(Buffer.concat(out).equals(big)).toBe(true);
    const small = Buffer.from('small one');
    expect((await decompress(z, peerMessage(small))).equals(small)).toBe(true);
    z.cleanup();
  });

  it('stops at maxPayload with a RangeError, and fails input that is not deflate', async () => {
    const bomb = zlib.deflateRawSync(Buffer.alloc(10 * 1024 * 1024), { finishFlush: zlib.constants.Z_SYNC_FLUSH }).subarray(0, -4);
    const z = new MessageZlib({}, true, 1024 * 1024);
    const err = await decompress(z, bomb).then(
      () => null,
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(RangeError);
    z.cleanup();
    // The bound is the message's, not each frame's: two fragments of 600 KB pass 1 MiB together.
    const parts = new MessageZlib({}, true, 1024 * 1024);
    const piece = zlib.deflateRawSync(Buffer.alloc(600 * 1024, 7), { finishFlush: zlib.constants.Z_SYNC_FLUSH });
    expect((await decompress(parts, piece, false)).length).toBe(600 * 1024);
    const err1 = await decompress(parts, piece.subarray(0, piece.length - 4), true).then(
      () => null,
      (e: unknown) => e,
    );
    expect(err1).toBeInstanceOf(RangeError);
    parts.cleanup();
    const bad = new MessageZlib({}, true, 0);
    const err2 = await decompress(bad, Buffer.from([0xff, 0xff, 0xff, 0xff, 0x00])).then(
      () => null,
      (e: unknown) => e,
    );
    expect(err2).toBeInstanceOf(Error);
    expect(err2).not.toBeInstanceOf(RangeError);
    bad.cleanup();
  });

  it('starts a new inflate stream after a message that ended with a final block', async () => {
    const z = new MessageZlib({}, true, 0);
    const first = zlib.deflateRawSync(Buffer.from('final block')); // Z_FINISH: BFINAL set
    expect((await decompress(z, first)).toString()).toBe('final block');
    expect((await decompress(z, peerMessage(Buffer.from('next')))).toString()).toBe('next');
    z.cleanup();
  });

  it('compresses an empty message after another to the single byte 0x00, and the peer inflates what follows', async () => {
    // RFC 7692 §7.2.3.6. zlib writes nothing for a second sync flush without input: sent as no
    // bytes, the trailer put back opens a stored block on the peer that eats the next message.
    const z = new MessageZlib({}, true, 0);
    const inflater = zlib.createInflateRaw({ windowBits: 15 });
    const got: Buffer[] = [];
    inflater.on('data', (c: Buffer) => got.push(c));
    for (const text of ['abc', '', '', 'after two empty ones', '']) {
      const c = await compress(z, Buffer.from(text));
      if (text === '') expect([...c]).toEqual([0]);
      await new Promise<void>((r) => inflater.write(Buffer.concat([c, TAIL]), () => inflater.flush(() => r())));
      expect(Buffer.concat(got).toString()).toBe(text);
      got.length = 0;
    }
    z.cleanup();
    inflater.close();
  });

  it('inflates empty messages and empty fragments, and a compressed message of no bytes as empty, in step with the peer', async () => {
    const z = new MessageZlib({}, false, 0);
    // A peer keeping its context, sending each message with a sync flush (the tail taken off).
    const peer = zlib.createDeflateRaw({ flush: zlib.constants.Z_SYNC_FLUSH });
    const parts: Buffer[] = [];
    peer.on('data', (c: Buffer) => parts.push(c));
    const deflate = (text: string): Promise<Buffer> =>
      new Promise((r) =>
        peer.write(Buffer.from(text), () => {
          const out = Buffer.concat(parts);
          parts.length = 0;
          r(out.length >= 4 ? out.subarray(0, -4) : out);
        }),
      );
    expect((await decompress(z, await deflate('abc'))).toString()).toBe('abc');
    // zlib's quirk: an empty message right after a flush is no bytes at all.
    const none = await deflate('');
    expect(none.length).toBe(0);
    expect((await decompress(z, none)).length).toBe(0);
    expect((await decompress(z, await deflate('next'))).toString()).toBe('next');
    // The single 0x00 byte.
    expect((await decompress(z, Buffer.from([0]))).length).toBe(0);
    // Fragments: empty ones in the middle and at the end, the tail put back once, after the last.
    const whole = await deflate('fragmented');
    const pieces = [whole.subarray(0, 3), Buffer.alloc(0), whole.subarray(3), Buffer.alloc(0)];
    const out: Buffer[] = [];
    for (let i = 0; i < pieces.length; i++) out.push(await decompress(z, pieces[i]!, i === pieces.length - 1));
    expect(Buffer.concat(out).toString()).toBe('fragmented');
    // A message of empty fragments only.
    expect((await decompress(z, Buffer.alloc(0), false)).length).toBe(0);
    expect((await decompress(z, Buffer.alloc(0), true)).length).toBe(0);
    expect((await decompress(z, await deflate('still in step'))).toString()).toBe('still in step');
    z.cleanup();
    peer.close();
  });

  it('cleanup() fails a compression in flight and later ones', async () => {
    const z = new MessageZlib({}, false, 0);
    const p = compress(z, Buffer.alloc(1 << 20, 1));
    z.cleanup();
    await expect(p).rejects.toThrow(/closed/);
    await expect(compress(z, Buffer.from('late'))).rejects.toThrow(/closed/);
  });

  it('200 connections at once, past the 10 zlib jobs in flight, all complete in order, each way', async () => {
    const zs = Array.from({ length: 200 }, () => new MessageZlib({}, true, 0));
    const results = await Promise.all(
      zs.map(async (z, i) => {
        // One message at a time each way, as the codec drives it; both ways at once.
        const msgs = [0, 1, 2].map((k) => Buffer.from(`connection ${i} message ${k} `.repeat(20)));
        const peer = msgs.map(peerMessage);
        const back: Buffer[] = [];
        const [cs] = await Promise.all([
          (async () => {
            const out: Buffer[] = [];
            for (const m of msgs) out.push(await compress(z, m));
            return out;
          })(),
          (async () => {
            for (const c of peer) back.push(await decompress(z, c));
          })(),
        ]);
        // The three compressed messages inflate as one continuing stream.
        const all = zlib.inflateRawSync(Buffer.concat(cs.flatMap((c) => [c, TAIL])), { finishFlush: zlib.constants.Z_SYNC_FLUSH });
        return back.every((b, k) => b.equals(msgs[k]!)) && all.equals(Buffer.concat(msgs));
      }),
    );
    expect(results.every(Boolean)).toBe(true);
    for (const z of zs) z.cleanup();
  });
});
