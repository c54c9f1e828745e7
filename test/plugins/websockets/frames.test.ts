/**
 * The plugin's frame codec (FrameConnection) against hand-made frames: frames split at every byte,
 * each length encoding at its boundaries, random fragmenting and chunking, fragments with a
 * ping between them, the close handshake's echo, malformed close frames and continuations,
 * permessage-deflate's RSV1 rules, and, on the client side, a server that masks its frames.
 */
import { createHash } from 'node:crypto';
import { constants, deflateRawSync, inflateRawSync } from 'node:zlib';
import { once } from 'node:events';
import net from 'node:net';
import { describe, expect, it } from 'vitest';
import { WebSocket as WsClient } from 'ws';
import { WebSockets } from '../../../plugins/websockets/index.js';
import { closeCodeFor, echo, frame, onCleanup, rawWs, startWs, waitFor, within } from '../../helpers/websockets.js';

/** Yields to the event loop so the next write leaves as its own TCP segment. */
const tick = (): Promise<void> => new Promise((r) => setTimeout(r, 1));

describe('WebSockets: the frame codec', () => {
  it('reassembles frames that arrive a few bytes at a time, at each length encoding boundary', async () => {
    const { port } = await startWs(echo);
    const c = await rawWs(port);
    const sizes = [0, 1, 125, 126, 127, 65535, 65536, 70000];
    for (const n of sizes) {
      const payload = Buffer.alloc(n, n % 251);
      const bytes = frame(2, payload);
      // Headers byte by byte, then the payload in a few pieces.
      const cut = Math.min(bytes.length, 14);
      for (let i = 0; i < cut; i++) {
        await c.client.write(bytes.subarray(i, i + 1));
        await tick();
      }
      for (let i = cut; i < bytes.length; i += 16384) {
        await c.client.write(bytes.subarray(i, i + 16384));
        await tick();
      }
    }
    await waitFor(() => c.frames().length >= sizes.length, 5000, 'every echo');
    const got = c.frames();
    expect(got.map((f) => f.payload.length)).toEqual(sizes);
    for (const f of got) {
      expect(f.opcode).toBe(2);
      expect(f.payload.every((b) => b === f.payload.length % 251)).toBe(true);
    }
    c.client.destroy();
  });

  it('echoes 150 messages of random sizes, fragmented at random and written in random pieces, in order and intact', async () => {
    // A fixed-seed LCG: the same stream every run.
    let x = 20261126;
    const rnd = (n: number): number => {
      x = (Math.imul(x, 1103515245) + 12345) >>> 0;
      return x % n;
    };
    const { port } = await startWs(echo);
    const c = await rawWs(port);
    const sent: { text: boolean; data: Buffer }[] = [];
    const wire: Buffer[] = [];
    for (let i = 0; i < 150; i++) {
      const size = rnd(4) === 0 ? rnd(70000) : rnd(300);
      const text = rnd(2) === 0;
      const data = text ? Buffer.from('é'.repeat(size >> 1) + 'x'.repeat(size & 1)) : Buffer.from(Array.from({ length: size }, () => rnd(256)));
      sent.push({ text, data });
      const parts = 1 + rnd(4);
      const step = Math.ceil(data.length / parts) || 1;
      let first = true;
      // A fragment may cut a character in two: UTF-8 is checked on the whole message.
      for (let at = 0; first || at < data.length; at += step) {
        const last = at + step >= data.length;
        wire.push(frame(first ? (text ? 1 : 2) : 0, data.subarray(at, at + step), { fin: last }));
        if (rnd(5) === 0 && !last) wire.push(frame(9, 'p'));
        first = false;
      }
    }
    const all = Buffer.concat(wire);
    for (let at = 0; at < all.length;) {
      const n = 1 + rnd(rnd(3) === 0 ? 20 : 40000);
      await c.client.write(all.subarray(at, at + n));
      at += n;
      if (rnd(3) === 0) await tick();
    }
    await waitFor(() => c.frames().filter((f) => f.opcode !== 10).length >= sent.length, 10_000, 'every echo');
    const echoed = c.frames().filter((f) => f.opcode !== 10);
    expect(echoed.length).toBe(sent.length);
    for (let i = 0; i < sent.length; i++) {
      expect(echoed[i]!.opcode).toBe(sent[i]!.text ? 1 : 2);
      expect(echoed[i]!.payload.equals(sent[i]!.data)).toBe(true);
    }
    c.client.destroy();
  });

  it('joins fragments across a ping, answers the ping with its data, and echoes the message whole', async () => {
    const { port } = await startWs(echo);
    const c = await rawWs(port);
    await c.client.write(Buffer.concat([frame(1, 'frag', { fin: false }), frame(9, 'are you there'), frame(0, 'men', { fin: false }), frame(0, 'ted ✓')]));
    await waitFor(() => c.frames().length >= 2, 3000, 'the pong and the echo');
    const [pong, text] = c.frames();
    expect(pong!.opcode).toBe(10);
    expect(pong!.payload.toString()).toBe('are you there');
    expect(text!.opcode).toBe(1);
    expect(text!.payload.toString()).toBe('fragmented ✓');
    c.client.destroy();
  });

  it('answers a close frame with its code and reason, then closes the connection', async () => {
    let seen: number | null = null;
    const { port } = await startWs(async (ws) => {
      await ws.receive().catch(() => undefined);
      seen = ws.closeCode;
    });
    const c = await rawWs(port);
    const payload = Buffer.concat([Buffer.from([0x0f, 0xa0]), Buffer.from('bye now')]); // 4000
    await c.client.write(frame(8, payload));
    expect(await c.closeFrame()).toEqual({ code: 4000, reason: 'bye now' });
    await within(c.client.closed, 3000, 'the server to close the connection');
    await waitFor(() => seen !== null, 3000, 'the handler to see the close');
    expect(seen).toBe(4000);
  });

  it('an empty close frame is answered with an empty one (1005 on both ends)', async () => {
    const { port } = await startWs(echo);
    const c = await rawWs(port);
    await c.client.write(frame(8, Buffer.alloc(0)));
    await waitFor(() => c.frames().some((f) => f.opcode === 8), 3000, 'the close frame');
    expect(c.frames().find((f) => f.opcode === 8)!.payload.length).toBe(0);
    await within(c.client.closed, 3000, 'the server to close the connection');
  });

  it('a malformed close frame closes with 1002 (1-byte payload, code 999, code 1005 on the wire) or 1007 (reason not UTF-8)', async () => {
    expect((await closeCodeFor([frame(8, Buffer.from([0x03]))])).code).toBe(1002);
    expect((await closeCodeFor([frame(8, Buffer.from([0x03, 0xe7]))])).code).toBe(1002);
    expect((await closeCodeFor([frame(8, Buffer.from([0x03, 0xed]))])).code).toBe(1002);
    expect((await closeCodeFor([frame(8, Buffer.from([0x03, 0xe8, 0xff, 0xfe]))])).code).toBe(1007);
  });

  it('a continuation without a message, or a new message inside a fragmented one, closes with 1002', async () => {
    expect((await closeCodeFor([frame(0, 'orphan')])).code).toBe(1002);
    expect((await closeCodeFor([frame(1, 'start', { fin: false }), frame(2, 'again')])).code).toBe(1002);
  });

  it('with permessage-deflate: inflates a compressed message, compresses the echo (RSV1), and refuses RSV1 on a continuation or a control frame', async () => {
    const deflateExt = 'Sec-WebSocket-Extensions: permessage-deflate\r\n';
    const { port } = await startWs(echo, { compress: true });
    const c = await rawWs(port, deflateExt);
    expect(c.head).toMatch(/Sec-WebSocket-Extensions: permessage-deflate/i);
    const text = 'compressed, compressed, compressed ✓'.repeat(20);
    const z = deflateRawSync(Buffer.from(text), { finishFlush: constants.Z_SYNC_FLUSH });
    // RFC 7692 §7.2.1: the trailing 00 00 ff ff of the flush is left off.
    expect(z.subarray(-4).toString('hex')).toBe('0000ffff');
    await c.client.write(frame(1, z.subarray(0, z.length - 4), { rsv1: true }));
    await waitFor(() => c.frames().length >= 1, 3000, 'the echo');
    const echoed = c.frames()[0]!;
    expect(echoed.opcode).toBe(1);
    expect(echoed.rsv1).toBe(true);
    expect(echoed.payload.length).toBeLessThan(Buffer.byteLength(text));
    expect(inflateRawSync(Buffer.concat([echoed.payload, Buffer.from([0, 0, 0xff, 0xff])]), { finishFlush: constants.Z_SYNC_FLUSH }).toString()).toBe(text);
    c.client.destroy();
    for (const bad of [[frame(2, 'a', { fin: false }), frame(0, 'b', { rsv1: true })], [frame(9, 'p', { rsv1: true })]]) {
      expect((await closeCodeFor(bad, { compress: true }, deflateExt)).code).toBe(1002);
    }
  });

  it('with permessage-deflate: 300 messages of 20-100 KB sent without waiting arrive inflated, in order, both ways', async () => {
    const body = (i: number): string => `${i}:`.padEnd(20_000 + (i % 5) * 20_000, String.fromCharCode(97 + (i % 26)));
    const { url } = await startWs(echo, { compress: true });
    await WebSockets.open(
      url,
      async (ws) => {
        expect(ws.compressed).toBe(true);
        const sends = Array.from({ length: 300 }, (_, i) => ws.send(body(i)));
        for (let i = 0; i < 300; i++) expect(await ws.receive()).toBe(body(i));
        await Promise.all(sends);
      },
      { compress: true },
    );
  });

  it("with permessage-deflate agreed as no_context_takeover and 9-bit windows by ws's client, messages of every size echo", async () => {
    const { url } = await startWs(echo, { compress: true });
    const client = new WsClient(url, { perMessageDeflate: { serverNoContextTakeover: true, clientNoContextTakeover: true, serverMaxWindowBits: 9, clientMaxWindowBits: 9, threshold: 0 } });
    onCleanup(() => client.terminate());
    let agreed = '';
    client.on('upgrade', (res: { headers: Record<string, string | undefined> }) => (agreed = res.headers['sec-websocket-extensions'] ?? ''));
    await once(client, 'open');
    expect(agreed).toContain('server_no_context_takeover');
    expect(agreed).toContain('client_no_context_takeover');
    expect(agreed).toContain('server_max_window_bits=9');
    // A 700-letter block repeated: a compressor with a window over 512 bytes would refer 700
    // back, which the client's 9-bit inflater refuses; every message starts like the last, which
    // a compressor that kept its context would refer to, which the client's reset inflater refuses.
    let x = 7;
    const block = Array.from({ length: 700 }, () => String.fromCharCode(97 + ((x = (x * 48271) % 2147483647) % 26))).join('');
    const sizes = [0, 10, 1023, 1024, 5000, 100_000, 300_000];
    for (const n of sizes) {
      const text = block.repeat(Math.ceil(n / 700)).slice(0, n);
      client.send(text);
      const [data] = (await once(client, 'message')) as [Buffer];
      expect(data.toString()).toBe(text);
    }
    client.close();
    await once(client, 'close');
  });

  it('the client closes with 1002 when a server masks its frames, and masks its own', async () => {
    const server = net.createServer();
    onCleanup(() => new Promise<void>((r) => server.close(() => r())));
    const seen: Buffer[] = [];
    server.on('connection', (socket) => {
      let buf = Buffer.alloc(0);
      let upgraded = false;
      socket.on('data', (chunk: Buffer) => {
        buf = Buffer.concat([buf, chunk]);
        if (!upgraded) {
          const end = buf.indexOf('\r\n\r\n');
          if (end < 0) return;
          const key = /sec-websocket-key: *(\S+)/i.exec(buf.toString('latin1', 0, end))![1]!;
          const accept = createHash('sha1').update(`${key}258EAFA5-E914-47DA-95CA-C5AB0DC85B11`).digest('base64');
          socket.write(`HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: ${accept}\r\n\r\n`);
          socket.write(frame(1, 'masked by a server', { mask: true }));
          upgraded = true;
          buf = buf.subarray(end + 4);
        }
        seen.push(buf);
        buf = Buffer.alloc(0);
      });
      socket.on('error', () => {});
    });
    server.listen(0, '127.0.0.1');
    await once(server, 'listening');
    const port = (server.address() as net.AddressInfo).port;
    let code: number | null = null;
    await WebSockets.open(`ws://127.0.0.1:${port}/`, async (ws) => {
      await ws.receive().catch(() => undefined);
      code = ws.closeCode;
    }).catch(() => undefined);
    const bytes = Buffer.concat(seen);
    // The client's close frame: masked (bit 0x80 of the second byte), carrying 1002.
    expect(bytes[0]).toBe(0x88);
    expect(bytes[1]! & 0x80).toBe(0x80);
    const key = bytes.subarray(2, 6);
    expect(((bytes[6]! ^ key[0]!) << 8) | (bytes[7]! ^ key[1]!)).toBe(1002);
    // The server never answered with its own close frame: the code reported is the one sent.
    expect(code).toBe(1002);
  });
});
