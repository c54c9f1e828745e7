/**
 * `readHeaderTimeout` over HTTP/2, from a raw frame client: a connection that sends the preface
 * and SETTINGS and no request head is closed with GOAWAY; so is one whose HEADERS frame never
 * gets its CONTINUATION; a request sent in time is served, and a slow but steady client with a
 * stream open is not cut.
 */
import { describe, expect, it } from 'vitest';
import { Response } from '../../../kernel/index.js';
import { block, frame, FrameReader, get, PREFACE, settings, T } from '../../helpers/h2-frames.js';
import { rawSocket, startServer, waitFor } from '../../helpers/h2.js';

const RHT = 150;

function goawayCode(reader: FrameReader): number {
  const g = reader.of(T.GOAWAY)[0];
  return g === undefined ? -1 : g.payload.readUInt32BE(4);
}

async function server(): Promise<number> {
  const { port } = await startServer((req) => new Response(200, `${req.target} ${(req.body as Uint8Array).length}`), { readHeaderTimeout: RHT });
  return port;
}

/** Resolves after `ms` (to show something did NOT happen in that time). */
const quiet = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

describe('readHeaderTimeout over HTTP/2', () => {
  it('closes with GOAWAY a connection that sends the preface and SETTINGS and then nothing', async () => {
    const port = await server();
    const sock = await rawSocket(port);
    const reader = new FrameReader(sock);
    const start = performance.now();
    sock.write(Buffer.concat([PREFACE, settings()]));
    await waitFor(() => reader.of(T.GOAWAY).length > 0 && reader.closed, 3000, 'GOAWAY and close');
    const took = performance.now() - start;
    expect(goawayCode(reader)).toBe(0);
    expect(took).toBeGreaterThanOrEqual(RHT - 20);
    expect(took).toBeLessThan(RHT * 2 + 500);
  });

  it('serves a request sent in time and then leaves the idle connection alone', async () => {
    const port = await server();
    const sock = await rawSocket(port);
    const reader = new FrameReader(sock);
    sock.write(Buffer.concat([PREFACE, settings()]));
    await quiet(RHT / 3);
    sock.write(get(1, '/a'));
    await waitFor(() => reader.of(T.DATA).some((f) => f.stream === 1 && (f.flags & 1) !== 0), 3000, 'the response');
    expect(reader.of(T.HEADERS).some((f) => f.stream === 1)).toBe(true);
    // No head in progress: several checks pass without a GOAWAY (idleTimeout is off).
    await quiet(RHT * 4);
    expect(reader.of(T.GOAWAY)).toHaveLength(0);
    expect(reader.closed).toBe(false);
  });

  it('counts a head answered before any handler (431 past maxHeaderBytes, 400 malformed) as complete: the idle connection is left alone', async () => {
    const { port } = await startServer(() => new Response(200, 'ok'), { readHeaderTimeout: RHT, maxHeaderBytes: 2048 });
    const sock = await rawSocket(port);
    const reader = new FrameReader(sock);
    sock.write(Buffer.concat([PREFACE, settings(), get(1, '/a'), get(3, '/other', [['host', 'elsewhere.example']]), get(5, '/big', [['x-big', 'a'.repeat(3000)]])]));
    await waitFor(() => [1, 3, 5].every((id) => reader.of(T.HEADERS).some((f) => f.stream === id)), 3000, 'the three answers');
    await quiet(RHT * 4);
    expect(reader.of(T.GOAWAY)).toHaveLength(0);
    expect(reader.closed).toBe(false);
  });

  it('closes with GOAWAY a connection whose HEADERS never gets its CONTINUATION', async () => {
    const port = await server();
    const sock = await rawSocket(port);
    const reader = new FrameReader(sock);
    sock.write(Buffer.concat([PREFACE, settings(), get(1, '/first')]));
    await waitFor(() => reader.of(T.DATA).some((f) => f.stream === 1), 3000, 'the first response');
    const blk = block([
      [':method', 'GET'],
      [':scheme', 'http'],
      [':path', '/stuck'],
      [':authority', 'localhost'],
    ]);
    const start = performance.now();
    sock.write(frame(T.HEADERS, 0x1, 3, blk.subarray(0, 12))); // END_STREAM, no END_HEADERS
    await waitFor(() => reader.of(T.GOAWAY).length > 0 && reader.closed, 3000, 'GOAWAY and close');
    const took = performance.now() - start;
    expect(goawayCode(reader)).toBe(0);
    expect(took).toBeGreaterThanOrEqual(RHT - 20);
    expect(took).toBeLessThan(RHT * 2 + 500);
    expect(reader.of(T.HEADERS).some((f) => f.stream === 3)).toBe(false);
  });

  it('does not cut a slow but steady client with a stream open', async () => {
    const port = await server();
    const sock = await rawSocket(port);
    const reader = new FrameReader(sock);
    const head = block([
      [':method', 'POST'],
      [':scheme', 'http'],
      [':path', '/slow'],
      [':authority', 'localhost'],
    ]);
    sock.write(Buffer.concat([PREFACE, settings(), frame(T.HEADERS, 0x4, 1, head)]));
    // One byte every RHT/3 for about 4 × readHeaderTimeout, then the end of the body.
    for (let i = 0; i < 12; i++) {
      await quiet(RHT / 3);
      expect(reader.closed).toBe(false);
      sock.write(frame(T.DATA, 0, 1, Buffer.from('x')));
    }
    sock.write(frame(T.DATA, 0x1, 1));
    await waitFor(() => reader.of(T.DATA).some((f) => f.stream === 1 && (f.flags & 1) !== 0), 3000, 'the response');
    const body = Buffer.concat(
      reader
        .of(T.DATA)
        .filter((f) => f.stream === 1)
        .map((f) => f.payload),
    ).toString();
    expect(body).toBe('/slow 12');
    expect(reader.of(T.GOAWAY)).toHaveLength(0);
  });
});
