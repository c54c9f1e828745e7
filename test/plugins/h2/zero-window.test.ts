/**
 * Clients that grant no flow-control window (SETTINGS_INITIAL_WINDOW_SIZE 0) and open every
 * stream they may: what the server holds for them is bounded per connection, not per stream.
 * A stream handler's `await stream.write()` waits; a request handler's streamed body is read
 * only as the window allows; the room is given back when a stream is reset or its bytes go
 * out, and other clients are served meanwhile.
 */
import { describe, expect, it } from 'vitest';
import http2 from 'node:http2';
import { CallbackBody, Response } from '../../../kernel/index.js';
import { h2Client, nodeRequest, nodeServer, nodeSession, startServer, startStreamServer, waitFor } from '../../helpers/h2.js';

const STREAMS = 100;
/** What one connection's parked streams may have been let write, at most (the budget is 256 KiB, plus a slice). */
const BOUND = 320 * 1024;

/** Resolves once `value()` stopped changing for `quietMs` (the handlers are all blocked). */
async function steady(value: () => number, quietMs = 250, ms = 5000): Promise<number> {
  const start = performance.now();
  let last = value();
  let since = performance.now();
  for (;;) {
    await new Promise<void>((r) => setTimeout(r, 10));
    const v = value();
    if (v !== last) {
      last = v;
      since = performance.now();
    } else if (performance.now() - since >= quietMs) return v;
    if (performance.now() - start > ms) throw new Error(`still moving after ${ms} ms: ${v}`);
  }
}

/** Opens `n` streams on `s` that nobody reads; resolves once each got its response head. */
async function parked(s: http2.ClientHttp2Session, path: string, n = STREAMS): Promise<http2.ClientHttp2Stream[]> {
  const streams: http2.ClientHttp2Stream[] = [];
  const heads: Promise<void>[] = [];
  for (let i = 0; i < n; i++) {
    const st = s.request({ ':path': path });
    st.on('error', () => undefined);
    heads.push(new Promise((r) => st.once('response', () => r())));
    streams.push(st);
  }
  await Promise.all(heads);
  return streams;
}

async function stillServes(port: number): Promise<void> {
  const other = nodeSession(`http://127.0.0.1:${port}`);
  const r = await nodeRequest(other, { ':path': '/ok' });
  expect(r.status).toBe(200);
  expect(r.body.toString()).toBe('ok');
  other.close();
}

/** Reads a stream to its end and resolves with its bytes. */
function bodyOf(st: http2.ClientHttp2Stream): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    st.on('data', (c: Buffer) => chunks.push(c));
    st.once('end', () => resolve(Buffer.concat(chunks)));
    st.once('error', reject);
    st.resume();
  });
}

describe('HTTP/2 clients that grant no window', () => {
  it('a stream handler writing as fast as allowed is held: the connection parks at most its budget, other clients are served, and the streams finish once the window opens', async () => {
    const PER_STREAM = 64 * 1024;
    let written = 0;
    let started = 0;
    const { port } = await startStreamServer(async (st) => {
      if (st.request.target === '/ok') {
        await st.write('ok');
        return;
      }
      started++;
      const chunk = Buffer.alloc(1024);
      for (let i = 0; i < PER_STREAM / chunk.length; i++) {
        // The buffer is reused once the write resolved: what the wire keeps must be its own copy.
        chunk.fill(i & 0xff);
        await st.write(chunk);
        written += chunk.length;
      }
    });
    const s = nodeSession(`http://127.0.0.1:${port}`, { settings: { initialWindowSize: 0 } });
    const streams = await parked(s, '/stream');
    expect(started).toBe(STREAMS);
    const held = await steady(() => written);
    // Without a bound per connection, each stream would have written about 16 KiB (1.6 MB in all).
    expect(held).toBeLessThan(BOUND);
    expect(held).toBeGreaterThan(0);
    await stillServes(port);
    // The window opens: every stream gets its whole body, byte for byte (no room was lost).
    s.settings({ initialWindowSize: 65535 });
    const bodies = await Promise.all(streams.map(bodyOf));
    const expected = Buffer.concat(Array.from({ length: PER_STREAM / 1024 }, (_, i) => Buffer.alloc(1024, i & 0xff)));
    for (const b of bodies) expect(b.equals(expected)).toBe(true);
    expect(written).toBe(STREAMS * PER_STREAM);
  });

  it('a streamed response body is read only as the window allows', async () => {
    let pulled = 0;
    let closed = 0;
    const { port } = await startServer((req) => {
      if (req.target === '/ok') return new Response(200, 'ok');
      return new Response(
        200,
        new CallbackBody(
          (dst) => {
            dst.fill(0x62);
            pulled += dst.length;
            return dst.length;
          },
          () => void closed++,
        ),
      );
    });
    const s = nodeSession(`http://127.0.0.1:${port}`, { settings: { initialWindowSize: 0 } });
    const streams = await parked(s, '/endless');
    const held = await steady(() => pulled);
    // Read ahead of the window, it was 64 KiB per stream (6.4 MB here), each held with a copy.
    expect(held).toBeLessThan(BOUND);
    await stillServes(port);
    for (const st of streams) st.close(http2.constants.NGHTTP2_CANCEL);
    await waitFor(() => closed === STREAMS, 5000, 'every body closed after its stream was reset');
  });

  it('gives a reset stream its room back: after the parked streams are reset, the same connection streams again', async () => {
    const chunk = Buffer.alloc(1024, 0x63);
    const { port } = await startStreamServer(async (st) => {
      const n = st.request.target === '/finite' ? 512 : Infinity;
      for (let i = 0; i < n; i++) await st.write(chunk);
    });
    const s = nodeSession(`http://127.0.0.1:${port}`, { settings: { initialWindowSize: 0 } });
    const streams = await parked(s, '/endless');
    for (const st of streams) st.close(http2.constants.NGHTTP2_CANCEL);
    await waitFor(() => streams.every((st) => st.closed), 5000, 'the parked streams closed');
    s.settings({ initialWindowSize: 65535 });
    // 512 KiB: past the connection's budget, so it only comes through if the reset streams gave theirs back.
    const body = await bodyOf(s.request({ ':path': '/finite' }));
    expect(body.length).toBe(512 * 1024);
  });

  it('writeTimeout resets the streams that wait, for window or for room', async () => {
    let failed = 0;
    const { port } = await startStreamServer(
      async (st) => {
        try {
          for (;;) await st.write(Buffer.alloc(1024));
        } catch {
          failed++;
        }
      },
      { writeTimeout: 300 },
    );
    const s = nodeSession(`http://127.0.0.1:${port}`, { settings: { initialWindowSize: 0 } });
    const t0 = performance.now();
    const streams = await parked(s, '/endless');
    await waitFor(() => streams.every((st) => st.closed), 5000, 'every parked stream reset');
    // All at once: a stream granted room another one gave back has sent nothing more, so its clock runs on.
    expect(performance.now() - t0).toBeLessThan(1500);
    for (const st of streams) expect(st.rstCode).toBe(http2.constants.NGHTTP2_CANCEL);
    await waitFor(() => failed === STREAMS, 5000, 'every handler told its write failed');
  });

  it('writes not awaited keep their order, the end after them', async () => {
    const { port } = await startStreamServer(async (st) => {
      const writes: Promise<void>[] = [];
      for (let i = 0; i < 8; i++) writes.push(st.write(Buffer.alloc(40000, 0x30 + i)));
      writes.push(st.closeWrite());
      await Promise.all(writes);
    });
    const s = nodeSession(`http://127.0.0.1:${port}`);
    const r = await nodeRequest(s, { ':path': '/' });
    expect(r.status).toBe(200);
    const expected = Buffer.concat(Array.from({ length: 8 }, (_, i) => Buffer.alloc(40000, 0x30 + i)));
    expect(r.body.equals(expected)).toBe(true);
  });
});

describe('an HTTP/2 server that grants the client no window', () => {
  it('holds a streamed request body unread: the client reads at most two frames of it ahead', async () => {
    let reached = false;
    const { port, sessions } = await nodeServer(
      (st) => {
        reached = true;
        st.on('error', () => undefined);
      },
      { initialWindowSize: 0 },
    );
    let pulled = 0;
    const body = new CallbackBody((dst) => {
      dst.fill(0x64);
      pulled += dst.length;
      return dst.length;
    });
    const c = await h2Client();
    const call = c.request('POST', `http://127.0.0.1:${port}/`, { body, http2PriorKnowledge: true }).catch((e: unknown) => e);
    await waitFor(() => reached, 5000, 'the request at the server');
    const held = await steady(() => pulled);
    // It was a 64 KiB read buffer and a copy of it.
    expect(held).toBeLessThanOrEqual(32768);
    for (const s of sessions) s.destroy();
    expect(await call).toBeInstanceOf(Error);
  });
});
