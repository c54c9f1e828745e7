/**
 * A seeded WebSocket frame fuzz against `WebSockets.listen` on loopback. Each connection sends
 * a few valid frames (messages, fragments with pings between them, compressed messages where
 * permessage-deflate is on), then either a clean close or one frame broken in one way: a
 * reserved opcode or RSV bit, a 64-bit length with its high bit set or past maxFrameSize, an
 * unmasked frame, a fragmented or oversized control frame, text or a close reason that is not
 * UTF-8, a close code nobody may send, a message interleaved with another, or a compressed
 * frame that does not inflate or inflates past the bound. The connection must end with the
 * close code RFC 6455 §7.4.1 names for that defect (or echo everything and close with 1000);
 * the server survives, stays within a memory bound, and serves a normal client at the end.
 * A failure names its seed and case: the same seed replays the same frames.
 *
 * The single hand-made cases, one each, are in test/plugins/websockets/bad-input.test.ts.
 */
import { constants, deflateRawSync } from 'node:zlib';
import { describe, expect, it } from 'vitest';
import { WebSockets } from '../../plugins/websockets/index.js';
import { echo, frame, frameHeader, rawWs, startWs, waitFor, within } from '../helpers/websockets.js';
import { growth, memory, MiB, rng, type Rng } from './peers.js';

/** The server's maxFrameSize here: small, so "past the bound" needs no megabytes on the wire. */
const MAX = 4096;

/** One connection's frames and how it must end: the close code, and (for 1000) the echoes it must get first. */
interface Case {
  what: string;
  frames: Buffer[];
  code: number;
  messages: number;
  pings: number;
}

/** permessage-deflate data for `data`: a sync-flushed raw deflate without its 00 00 ff ff tail (RFC 7692 §7.2.1). */
function deflated(data: Buffer): Buffer {
  const z = deflateRawSync(data, { finishFlush: constants.Z_SYNC_FLUSH });
  return z.subarray(0, z.length - 4);
}

function ascii(r: Rng, n: number): Buffer {
  const b = Buffer.alloc(n);
  for (let i = 0; i < n; i++) b[i] = 0x20 + r.int(95);
  return b;
}

const BAD_UTF8 = [[0xff], [0xc0, 0xaf], [0xed, 0xa0, 0x80], [0xf4, 0x90, 0x80, 0x80], [0xe2, 0x28, 0xa1], [0x80]];
const BAD_CLOSE_CODES = [0, 1, 999, 1004, 1005, 1006, 1015, 1016, 1100, 2000, 2999, 5000, 65535];

/** Text with one invalid UTF-8 sequence somewhere in it. */
function badUtf8(r: Rng): Buffer {
  const a = ascii(r, r.int(40));
  return Buffer.concat([a, Buffer.from(r.pick(BAD_UTF8)), ascii(r, r.int(40))]);
}

/** A valid start: messages (some fragmented, with pings between the fragments), counted. */
function validPrefix(r: Rng, compressed: boolean): { frames: Buffer[]; messages: number; pings: number } {
  const frames: Buffer[] = [];
  let messages = 0;
  let pings = 0;
  for (let n = r.int(4); n > 0; n--) {
    const kind = r.int(4);
    if (kind === 0) {
      frames.push(frame(9, r.bytes(r.int(126))));
      pings++;
    } else if (kind === 1 || !compressed) {
      const op = 1 + r.int(2);
      const payload = op === 1 ? Buffer.from('héllo ✓ '.repeat(r.int(20)) + ascii(r, r.int(200)).toString('latin1')) : r.bytes(r.int(MAX));
      const parts = 1 + r.int(3);
      const step = Math.ceil(payload.length / parts) || 1;
      for (let i = 0, at = 0; i < parts; i++, at += step) {
        frames.push(frame(i === 0 ? op : 0, payload.subarray(at, at + step), { fin: i === parts - 1 }));
        if (i < parts - 1 && r.int(2) === 0) {
          frames.push(frame(9, r.bytes(r.int(20))));
          pings++;
        }
      }
      messages++;
    } else {
      // Random bytes do not compress: keep the frame itself under maxFrameSize.
      frames.push(frame(2, deflated(r.bytes(r.int(MAX - 64))), { rsv1: true }));
      messages++;
    }
  }
  return { frames, messages, pings };
}

/** One defect: the frames that carry it and the close code it must get. */
function defect(r: Rng, compressed: boolean): { what: string; frames: Buffer[]; code: number } {
  const kinds = compressed ? 12 : 10;
  switch (r.int(kinds)) {
    case 0: {
      const op = r.pick([3, 4, 5, 6, 7, 11, 12, 13, 14, 15]);
      return { what: `reserved opcode ${op}`, frames: [frame(op, ascii(r, r.int(10)))], code: 1002 };
    }
    case 1: {
      const f = frame(1 + r.int(2), ascii(r, r.int(10)));
      const bit = r.pick([0x10, 0x20, 0x30]);
      f[0]! |= bit;
      return { what: `RSV bits 0x${bit.toString(16)}`, frames: [f], code: 1002 };
    }
    case 2: {
      // RSV1 where no extension defines it: any frame without deflate, a control frame with it.
      const op = compressed ? r.pick([8, 9, 10]) : r.pick([1, 2, 9]);
      return { what: `RSV1 on opcode ${op}`, frames: [frame(op, op === 8 ? Buffer.from([0x03, 0xe8]) : ascii(r, 4), { rsv1: true })], code: 1002 };
    }
    case 3: {
      // 64-bit length: the high bit set (RFC 6455 §5.2: MUST be 0), or only past maxFrameSize.
      const high = r.int(2) === 0;
      const len = high ? 2 ** 63 + r.int(2 ** 20) * 2048 : MAX + 1 + r.int(2 ** 30);
      return { what: `64-bit length ${high ? 'with the high bit' : len}`, frames: [frameHeader(1 + r.int(2), len)], code: high ? 1002 : 1009 };
    }
    case 4:
      return { what: 'unmasked frame', frames: [frame(r.pick([1, 2, 9]), ascii(r, r.int(30)), { mask: false })], code: 1002 };
    case 5: {
      const op = r.pick([8, 9, 10]);
      return { what: `fragmented control frame ${op}`, frames: [frame(op, op === 8 ? Buffer.from([0x03, 0xe8]) : ascii(r, 3), { fin: false })], code: 1002 };
    }
    case 6: {
      const op = r.pick([8, 9, 10]);
      const body = ascii(r, 126 + r.int(200));
      if (op === 8) body.writeUInt16BE(1000, 0);
      return { what: `control frame ${op} of ${body.length} bytes`, frames: [frame(op, body)], code: 1002 };
    }
    case 7: {
      const bad = badUtf8(r);
      if (r.int(2) === 0) return { what: 'text not UTF-8', frames: [frame(1, bad)], code: 1007 };
      const cut = r.int(bad.length + 1);
      return { what: 'text not UTF-8 across fragments', frames: [frame(1, bad.subarray(0, cut), { fin: false }), frame(0, bad.subarray(cut))], code: 1007 };
    }
    case 8: {
      const which = r.int(3);
      if (which === 0) {
        const c = r.pick(BAD_CLOSE_CODES);
        const p = Buffer.alloc(2);
        p.writeUInt16BE(c, 0);
        return { what: `close code ${c}`, frames: [frame(8, Buffer.concat([p, ascii(r, r.int(20))]))], code: 1002 };
      }
      if (which === 1) return { what: 'close with a 1-byte payload', frames: [frame(8, Buffer.from([0x03]))], code: 1002 };
      return { what: 'close reason not UTF-8', frames: [frame(8, Buffer.concat([Buffer.from([0x03, 0xe8]), badUtf8(r)]))], code: 1007 };
    }
    case 9: {
      if (r.int(2) === 0) return { what: 'continuation without a message', frames: [frame(0, ascii(r, 5), { fin: r.int(2) === 0 })], code: 1002 };
      return {
        what: 'a new message inside a fragmented one',
        frames: [frame(1 + r.int(2), ascii(r, 5), { fin: false }), frame(1 + r.int(2), ascii(r, 5), { fin: r.int(2) === 0 })],
        code: 1002,
      };
    }
    case 10: {
      // BTYPE 11 in the first block header: no inflater accepts it, whatever follows.
      const garbage = Buffer.concat([Buffer.from([0x06 | (r.int(256) & 0xf9)]), r.bytes(r.int(200))]);
      return { what: 'compressed garbage', frames: [frame(1 + r.int(2), garbage, { rsv1: true })], code: 1007 };
    }
    default:
      // Small on the wire, past maxFrameSize once inflated.
      return { what: 'compressed past maxFrameSize', frames: [frame(2, deflated(Buffer.alloc(MAX * (2 + r.int(30)))), { rsv1: true })], code: 1009 };
  }
}

/** The case for connection `i` of the run seeded `seed`. */
function makeCase(seed: number, i: number, compressed: boolean): Case {
  const r = rng(seed * 100_003 + i);
  const pre = validPrefix(r, compressed);
  if (r.int(8) === 0)
    return { what: 'valid frames, then close 1000', frames: [...pre.frames, frame(8, Buffer.from([0x03, 0xe8, 0x62, 0x79, 0x65]))], code: 1000, messages: pre.messages, pings: pre.pings };
  const d = defect(r, compressed);
  return { what: d.what, frames: [...pre.frames, ...d.frames], code: d.code, messages: pre.messages, pings: pre.pings };
}

/** Runs one case on a fresh raw connection; resolves with what went wrong, or null. */
async function runCase(port: number, c: Case, compressed: boolean): Promise<string | null> {
  const ws = await rawWs(port, compressed ? 'Sec-WebSocket-Extensions: permessage-deflate\r\n' : '');
  if (compressed && !/permessage-deflate/i.test(ws.head)) return 'permessage-deflate was not negotiated';
  const count = (op: (o: number) => boolean): number => ws.frames().filter((f) => op(f.opcode)).length;
  if (c.code === 1000) {
    // A close is answered at once, ahead of echoes the handler has not sent yet: wait for them first.
    await ws.client.write(Buffer.concat(c.frames.slice(0, -1)));
    const echoed = (): boolean => count((o) => o === 1 || o === 2) >= c.messages && count((o) => o === 10) >= c.pings;
    await waitFor(() => echoed() || ws.client.isClosed, 5000, 'the echoes').catch(() => undefined);
    const messages = count((o) => o === 1 || o === 2);
    const pongs = count((o) => o === 10);
    if (messages !== c.messages || pongs !== c.pings) return `echoed ${messages} messages and ${pongs} pongs, expected ${c.messages} and ${c.pings}`;
    await ws.client.write(c.frames.at(-1)!);
  } else {
    await ws.client.write(Buffer.concat(c.frames));
  }
  const { code } = await ws.closeFrame(5000);
  await within(ws.client.closed, 5000, 'the server to close the connection');
  if (code !== c.code) return `close code ${code}, expected ${c.code}`;
  return null;
}

/** Runs `count` cases, `parallel` connections at a time; returns the failures (with seed and case). */
async function fuzz(port: number, seed: number, count: number, compressed: boolean, parallel = 25): Promise<{ failures: string[]; frames: number }> {
  const failures: string[] = [];
  let frames = 0;
  for (let at = 0; at < count; at += parallel) {
    await Promise.all(
      Array.from({ length: Math.min(parallel, count - at) }, async (_, k) => {
        const i = at + k;
        const c = makeCase(seed, i, compressed);
        frames += c.frames.length;
        const err = await runCase(port, c, compressed).catch((e: unknown) => String(e));
        if (err !== null) failures.push(`seed ${seed} case ${i} (${c.what}${compressed ? ', compressed' : ''}): ${err}`);
      }),
    );
  }
  return { failures, frames };
}

async function stillServes(url: string): Promise<void> {
  expect(
    await within(
      WebSockets.open(url, async (ws) => (await ws.send('still here'), await ws.receive())),
      5000,
      'a normal client',
    ),
  ).toBe('still here');
}

const SEED = Number(process.env.WS_FUZZ_SEED ?? 0x5eed);

describe('WebSocket frame fuzz (seeded)', () => {
  it(`every mutated connection ends with the close code for its defect; the server survives and serves (seed ${SEED})`, async () => {
    const { port, url, server } = await startWs(echo, { maxFrameSize: MAX });
    const before = memory();
    const { failures, frames } = await fuzz(port, SEED, 1200, false);
    expect(failures.slice(0, 10)).toEqual([]);
    expect(frames).toBeGreaterThan(3000);
    await waitFor(() => server.connectionCount === 0, 5000, 'every fuzzed connection to be gone');
    expect(growth(before).heap).toBeLessThan(64 * MiB);
    await stillServes(url);
  });

  it(`with permessage-deflate negotiated: compressed garbage and bombs as well (seed ${SEED})`, async () => {
    const { port, url, server } = await startWs(echo, { maxFrameSize: MAX, compress: true });
    const before = memory();
    const { failures, frames } = await fuzz(port, SEED + 1, 500, true);
    expect(failures.slice(0, 10)).toEqual([]);
    expect(frames).toBeGreaterThan(1000);
    await waitFor(() => server.connectionCount === 0, 5000, 'every fuzzed connection to be gone');
    expect(growth(before).heap).toBeLessThan(64 * MiB);
    await stillServes(url);
  });
});
