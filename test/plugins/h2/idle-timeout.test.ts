/**
 * `idleTimeout` over HTTP/2, from a raw frame client: a connection is closed with GOAWAY once
 * no stream is going and none arrived for `idleTimeout`, counted from the last request (when
 * it was answered at once) or from the end of the last stream still going; requests arriving
 * in time keep it open.
 */
import { describe, expect, it } from 'vitest';
import { Response } from '../../../kernel/index.js';
import { FrameReader, get, PREFACE, settings, T } from '../../helpers/h2-frames.js';
import { rawSocket, startServer, waitFor } from '../../helpers/h2.js';

const IDLE = 300;

/** Resolves after `ms` (to show something did NOT happen in that time). */
const quiet = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

function answered(reader: FrameReader, id: number): boolean {
  return reader.of(T.DATA).some((f) => f.stream === id && (f.flags & 1) !== 0);
}

describe('idleTimeout over HTTP/2', () => {
  it('keeps a connection whose requests come in time, and closes it IDLE after the last one', async () => {
    const { port } = await startServer((req) => new Response(200, req.target), { idleTimeout: IDLE });
    const sock = await rawSocket(port);
    const reader = new FrameReader(sock);
    sock.write(Buffer.concat([PREFACE, settings()]));
    let last = 0;
    for (let i = 0; i < 4; i++) {
      const id = 1 + 2 * i;
      sock.write(get(id, `/r${i}`));
      await waitFor(() => answered(reader, id), 3000, `the response to stream ${id}`);
      last = performance.now();
      // 4 × IDLE/2 in all: past IDLE, so only the requests kept it open.
      await quiet(IDLE / 2);
      expect(reader.of(T.GOAWAY)).toHaveLength(0);
    }
    await waitFor(() => reader.of(T.GOAWAY).length > 0, 3000, 'GOAWAY');
    const after = performance.now() - last;
    expect(after).toBeGreaterThanOrEqual(IDLE - 20);
    expect(after).toBeLessThan(IDLE + 400);
    expect(reader.of(T.GOAWAY)[0]!.payload.readUInt32BE(4)).toBe(0);
    await waitFor(() => reader.closed, 3000, 'the connection closed');
  });

  it('does not count a stream still going as idle time; counts from its end', async () => {
    let release!: () => void;
    const held = new Promise<void>((r) => (release = r));
    const { port } = await startServer(
      async (req) => {
        if (req.target === '/hold') await held;
        return new Response(200, 'done');
      },
      { idleTimeout: IDLE },
    );
    const sock = await rawSocket(port);
    const reader = new FrameReader(sock);
    sock.write(Buffer.concat([PREFACE, settings(), get(1, '/hold')]));
    await quiet(IDLE * 2);
    expect(reader.of(T.GOAWAY)).toHaveLength(0);
    release();
    await waitFor(() => answered(reader, 1), 3000, 'the held response');
    const ended = performance.now();
    await waitFor(() => reader.of(T.GOAWAY).length > 0, 3000, 'GOAWAY');
    expect(performance.now() - ended).toBeGreaterThanOrEqual(IDLE - 20);
  });
});
