/**
 * Bad input on purpose: hand-made frames on a raw socket after a valid handshake. Each closes
 * the connection with the close code RFC 6455 §7.4.1 names, and the server keeps serving.
 */
import { createDeflateRaw } from 'node:zlib';
import { describe, expect, it } from 'vitest';
import { WebSockets } from '../../../plugins/websockets/index.js';
import { closeCodeFor, echo, frame, frameHeader, rawWs, startWs, waitFor } from '../../helpers/websockets.js';

async function stillServing(url: string): Promise<void> {
  expect(await WebSockets.open(url, async (ws) => (await ws.send('still here'), await ws.receive()))).toBe('still here');
}

/** `total` zero bytes, deflated (raw, as permessage-deflate sends them), without the final empty block's tail. */
async function deflateBomb(total: number): Promise<Buffer> {
  const z = createDeflateRaw({ level: 9 });
  const out: Buffer[] = [];
  z.on('data', (c: Buffer) => out.push(c));
  const chunk = Buffer.alloc(1024 * 1024);
  for (let sent = 0; sent < total; sent += chunk.length) {
    if (!z.write(chunk)) await new Promise((r) => z.once('drain', r));
  }
  await new Promise<void>((r) => z.end(() => r()));
  return Buffer.concat(out);
}

describe('WebSockets: bad input', () => {
  it('an unmasked client frame closes with 1002', async () => {
    const { code, url } = await closeCodeFor(frame(1, 'no mask', { mask: false }));
    expect(code).toBe(1002);
    await stillServing(url);
  });

  it('a frame over maxFrameSize closes with 1009 (declared length, before any payload)', async () => {
    const small = await closeCodeFor(frame(2, Buffer.alloc(2048)), { maxFrameSize: 1024 });
    expect(small.code).toBe(1009);
    await stillServing(small.url);
    // Default 16 MiB: a header claiming 17 MiB is refused at once, nothing buffered.
    const big = await closeCodeFor(frameHeader(2, 17 * 1024 * 1024));
    expect(big.code).toBe(1009);
    await stillServing(big.url);
  });

  it('a message over maxFrameSize across fragments closes with 1009', async () => {
    const parts = [frame(2, Buffer.alloc(600), { fin: false }), frame(0, Buffer.alloc(600))];
    const { code, url } = await closeCodeFor(parts, { maxFrameSize: 1024 });
    expect(code).toBe(1009);
    await stillServing(url);
  });

  it('a deflate bomb closes with 1009 and memory stays bounded', async () => {
    const total = 128 * 1024 * 1024;
    const bomb = await deflateBomb(total);
    expect(bomb.length).toBeLessThan(1024 * 1024);
    const { url, port } = await startWs(echo, { compress: true });
    const c = await rawWs(port, 'Sec-WebSocket-Extensions: permessage-deflate\r\n');
    expect(c.head).toMatch(/Sec-WebSocket-Extensions: permessage-deflate/i);
    const base = process.memoryUsage().arrayBuffers;
    let peak = base;
    const sampler = setInterval(() => {
      peak = Math.max(peak, process.memoryUsage().arrayBuffers);
    }, 5);
    try {
      await c.client.write(frame(2, bomb, { rsv1: true }));
      const { code } = await c.closeFrame(10_000);
      expect(code).toBe(1009);
    } finally {
      clearInterval(sampler);
    }
    peak = Math.max(peak, process.memoryUsage().arrayBuffers);
    // Unbounded inflation would hold 128 MiB; the 16 MiB bound keeps it far below that.
    expect(peak - base).toBeLessThan(48 * 1024 * 1024);
    await stillServing(url);
  });

  it('invalid UTF-8 in a text frame closes with 1007', async () => {
    const { code, url } = await closeCodeFor(frame(1, Buffer.from([0x68, 0x69, 0xff, 0xfe])));
    expect(code).toBe(1007);
    await stillServing(url);
  });

  it('invalid UTF-8 split across fragments closes with 1007', async () => {
    const { code, url } = await closeCodeFor([frame(1, Buffer.from([0xe2, 0x82]), { fin: false }), frame(0, Buffer.from([0x28]))]);
    expect(code).toBe(1007);
    await stillServing(url);
  });

  it('a fragmented control frame closes with 1002', async () => {
    const { code, url } = await closeCodeFor(frame(9, 'ping', { fin: false }));
    expect(code).toBe(1002);
    await stillServing(url);
  });

  it('a control frame over 125 bytes, a reserved opcode, and RSV1 without deflate close with 1002', async () => {
    for (const bad of [frame(9, Buffer.alloc(126)), frame(3, 'reserved'), frame(1, 'x', { rsv1: true })]) {
      const { code, url } = await closeCodeFor(bad);
      expect(code).toBe(1002);
      await stillServing(url);
    }
  });

  it('more fragments than maxFragmentation closes with 1008', async () => {
    const parts = [frame(1, 'a', { fin: false }), ...Array.from({ length: 5 }, () => frame(0, 'b', { fin: false })), frame(0, 'c')];
    const { code, url } = await closeCodeFor(parts, { maxFragmentation: 4 });
    expect(code).toBe(1008);
    await stillServing(url);
  });

  it('a client that vanishes mid-frame leaves the handler with 1006 and the server serving', async () => {
    let seen: number | null = null;
    const { port, url } = await startWs(async (ws) => {
      await ws.receive().catch(() => undefined);
      seen = ws.closeCode;
    });
    const c = await rawWs(port);
    await c.client.write(frame(2, Buffer.alloc(1000)).subarray(0, 500));
    c.client.destroy();
    await waitFor(() => seen !== null, 3000, 'the handler to see the drop');
    expect(seen).toBe(1006);
    expect(await WebSockets.open(url, () => 'ok')).toBe('ok');
  });
});
