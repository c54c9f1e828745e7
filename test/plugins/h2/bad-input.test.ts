/**
 * Bad input over HTTP/2, from a raw frame client that breaks the rules on purpose: a flood of
 * streams past `maxConcurrentStreams`, the rapid-reset pattern (open and reset many streams),
 * oversized header blocks, and clients that stop reading (flow control holds, memory stays
 * bounded). After each, the server still serves other connections.
 */
import { describe, expect, it } from 'vitest';
import http2 from 'node:http2';
import { ParseError, Response } from '../../../kernel/index.js';
import { block, frame, FrameReader, get, PREFACE, rst, settings, T } from '../../helpers/h2-frames.js';
import { nodeRequest, nodeSession, rawSocket, startServer, startStreamServer, waitFor } from '../../helpers/h2.js';

async function stillServes(port: number): Promise<void> {
  const s = nodeSession(`http://127.0.0.1:${port}`);
  const r = await nodeRequest(s, { ':path': '/ok' });
  expect(r.status).toBe(200);
  s.close();
}

describe('stream flood past maxConcurrentStreams', () => {
  it('refuses the streams beyond the limit and serves the rest', async () => {
    let running = 0;
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    const { port } = await startServer(
      async (req) => {
        if (req.target === '/ok') return new Response(200, 'ok');
        running++;
        await gate;
        return new Response(200, 'done');
      },
      { maxConcurrentStreams: 5 },
    );
    const sock = await rawSocket(port);
    const reader = new FrameReader(sock);
    const out: Buffer[] = [PREFACE, settings()];
    for (let i = 0; i < 40; i++) out.push(get(1 + 2 * i, '/slow'));
    sock.write(Buffer.concat(out));
    await waitFor(() => reader.resets().size >= 35, 5000, 'RST_STREAM for the refused streams');
    expect(running).toBe(5);
    for (const code of reader.resets().values()) expect(code).toBe(7); // REFUSED_STREAM: safe to retry
    await stillServes(port);
    release();
    await waitFor(() => reader.of(T.DATA).filter((f) => (f.flags & 1) !== 0).length === 5, 5000, 'the 5 accepted streams answered');
  });
});

describe('rapid reset (CVE-2023-44487)', () => {
  it('survives a connection opening and resetting thousands of streams; other connections are served', async () => {
    let handled = 0;
    let canceled = 0;
    const { port, server } = await startServer(async (req) => {
      handled++;
      if (req.target === '/ok') return new Response(200, 'ok');
      await new Promise((r) => setTimeout(r, 5));
      if (req.ctx.canceled) canceled++;
      return new Response(200, 'late');
    });
    const sock = await rawSocket(port);
    const reader = new FrameReader(sock);
    const out: Buffer[] = [PREFACE, settings()];
    for (let i = 0; i < 5000; i++) {
      const id = 1 + 2 * i;
      out.push(get(id, '/x'), rst(id));
    }
    sock.write(Buffer.concat(out));
    // nghttp2 ends such a connection (GOAWAY) or keeps up; either way the server lives on.
    await waitFor(() => reader.closed || reader.of(T.GOAWAY).length > 0 || handled >= 5000, 10_000, 'the flood to be dealt with');
    await waitFor(() => reader.closed, 5000, 'the server to close the flooding connection');
    // Closed with ENHANCE_YOUR_CALM long before 5000 handler runs.
    expect(reader.of(T.GOAWAY).map((f) => f.payload.readUInt32BE(4))).toContain(11);
    expect(handled).toBeLessThan(2500);
    await stillServes(port);
    expect(canceled).toBeLessThanOrEqual(handled);
    sock.destroy();
    await waitFor(() => server.connectionCount === 0, 5000, 'the flooding connection to close');
  });
});

describe('streams reset with an error code', () => {
  it('a client resetting streams with INTERNAL_ERROR, answered or not, does not take the server down', async () => {
    // node:http2 emits 'error' on a stream closed with a code other than NO_ERROR or CANCEL;
    // with nothing listening that would be an uncaught exception in the server's process.
    let later = 0;
    let laterDone = 0;
    const { port, server } = await startServer(async (req) => {
      if (req.target === '/later') {
        later++;
        await new Promise((r) => setTimeout(r, 20));
        laterDone++;
      }
      return new Response(200, 'x');
    });
    const sock = await rawSocket(port);
    const reader = new FrameReader(sock);
    const out: Buffer[] = [PREFACE, settings()];
    // In one write: nghttp2 reads each reset right after its HEADERS, so the answered streams
    // ('/now', answered at once) are reset before their response has left.
    for (let i = 0; i < 100; i++) {
      const id = 1 + 2 * i;
      out.push(get(id, i % 2 === 0 ? '/now' : '/later'), rst(id, 2));
    }
    sock.write(Buffer.concat(out));
    await waitFor(() => later === 50 && laterDone === 50, 5000, 'the /later handlers to finish (their responses come after the reset)');
    await stillServes(port);
    expect(reader.closed).toBe(false);
    sock.destroy();
    await waitFor(() => server.connectionCount === 0, 5000, 'the connection to close');
  });
});

describe('a request body whose DATA does not add up to its content-length (RFC 9113 §8.1.1)', () => {
  it('is malformed: the stream is reset with PROTOCOL_ERROR and no handler runs; a matching one is served', async () => {
    const seen: string[] = [];
    const { port } = await startServer((req) => {
      seen.push(`${req.target} ${Buffer.from(req.body as Uint8Array).toString()}`);
      return new Response(200, 'ok');
    });
    const s = nodeSession(`http://127.0.0.1:${port}`);
    for (const [path, body] of [
      ['/short', 'abc'],
      ['/long', 'abcdefghijklmnop'],
    ] as const) {
      const r = await nodeRequest(s, { ':method': 'POST', ':path': path, 'content-length': '10' }, body);
      expect(r.status, path).toBe(0);
      expect(r.rstCode, path).toBe(http2.constants.NGHTTP2_PROTOCOL_ERROR);
    }
    const ok = await nodeRequest(s, { ':method': 'POST', ':path': '/exact', 'content-length': '10' }, 'abcdefghij');
    expect(ok.status).toBe(200);
    expect(seen).toEqual(['/exact abcdefghij']);
  });
});

describe('a request body cut by the client resetting its stream', () => {
  // node:http2 ends a reset stream's readable side as if the body had ended. The client asks
  // for trailers it never sends, so close() sends no END_STREAM of its own before RST_STREAM.
  it('never reaches a request handler as a complete body (CANCEL or NO_ERROR)', async () => {
    const seen: string[] = [];
    const { port } = await startServer((req) => {
      seen.push(`${req.target} ${Buffer.from(req.body as Uint8Array).toString()}`);
      return new Response(200, 'ok');
    });
    const s = nodeSession(`http://127.0.0.1:${port}`);
    for (const code of [http2.constants.NGHTTP2_CANCEL, http2.constants.NGHTTP2_NO_ERROR]) {
      const st = s.request({ ':method': 'POST', ':path': `/cut-${code}` }, { endStream: false, waitForTrailers: true });
      st.on('error', () => undefined);
      st.write('partial', () => st.close(code));
      await new Promise((r) => st.once('close', r));
    }
    // The server settled the reset streams before it could answer a later one on the connection.
    expect((await nodeRequest(s, { ':path': '/after' })).status).toBe(200);
    expect(seen).toEqual(['/after ']);
  });

  it('makes the read of a stream handler fail instead of ending', async () => {
    const outcome: unknown[] = [];
    const { port } = await startStreamServer(async (stream) => {
      const parts: string[] = [];
      try {
        for await (const c of stream) parts.push(Buffer.from(c).toString());
        outcome.push(`ended after ${parts.join('')}`);
      } catch (err) {
        outcome.push(err);
      }
    });
    const s = nodeSession(`http://127.0.0.1:${port}`);
    const st = s.request({ ':method': 'POST', ':path': '/' }, { endStream: false, waitForTrailers: true });
    st.on('error', () => undefined);
    st.write('partial', () => st.close(http2.constants.NGHTTP2_CANCEL));
    await waitFor(() => outcome.length === 1, 5000, 'the handler to finish reading');
    expect(outcome[0]).toBeInstanceOf(ParseError);
    expect(String(outcome[0])).toMatch(/reset the stream before the request body ended/);
  });
});

describe('oversized header blocks', () => {
  it('rejects a header block larger than maxHeaderBytes without touching the handler', async () => {
    let seen = 0;
    const { port } = await startServer(
      (req) => {
        if (req.target !== '/ok') seen++;
        return new Response(200, 'ok');
      },
      { maxHeaderBytes: 4096 },
    );
    const sock = await rawSocket(port);
    const reader = new FrameReader(sock);
    const big = block([
      [':method', 'GET'],
      [':scheme', 'http'],
      [':path', '/big'],
      [':authority', 'localhost'],
      ['x-big', 'a'.repeat(12000)],
    ]);
    sock.write(Buffer.concat([PREFACE, settings(), frame(T.HEADERS, 0x5, 1, big)]));
    await waitFor(() => reader.of(T.RST_STREAM).length > 0 || reader.of(T.GOAWAY).length > 0 || reader.of(T.HEADERS).length > 0, 5000, 'an answer to the oversized block');
    const status = reader.of(T.HEADERS).length;
    // Either the stream is reset or a 431 comes back; the handler never sees the request.
    expect(reader.of(T.RST_STREAM).length + reader.of(T.GOAWAY).length + status).toBeGreaterThan(0);
    expect(seen).toBe(0);
    await stillServes(port);
  });
});

describe('a client that stops reading', () => {
  it('flow control holds the response: the handler waits, memory stays bounded, other connections are served', async () => {
    let written = 0;
    const chunk = Buffer.alloc(16384, 0x61);
    const { port } = await startStreamServer(async (st) => {
      if (st.request.target === '/ok') {
        await st.write('ok');
        return;
      }
      for (let i = 0; i < 3200; i++) {
        await st.write(chunk); // 50 MiB if nobody stopped it
        written += chunk.length;
      }
    });
    const sock = await rawSocket(port);
    // Never sends WINDOW_UPDATE: the server may send 65535 bytes on the stream, no more.
    const reader = new FrameReader(sock);
    sock.write(Buffer.concat([PREFACE, settings(), get(1, '/huge')]));
    await waitFor(() => written > 0, 5000, 'the handler to start writing');
    await new Promise((r) => setTimeout(r, 300));
    const held = written;
    expect(held).toBeLessThan(2 * 1024 * 1024); // the window plus node's stream buffer, not 50 MiB
    await stillServes(port);
    await new Promise((r) => setTimeout(r, 100));
    expect(written).toBe(held); // still stuck: no busy loop, no buffering
    const data = reader.of(T.DATA).reduce((n, f) => n + f.payload.length, 0);
    expect(data).toBeLessThanOrEqual(65535);
  });

  it('writeTimeout resets a stream whose client stopped reading; the connection goes on', async () => {
    let failed: unknown = null;
    const { port } = await startStreamServer(
      async (st) => {
        if (st.request.target === '/ok') {
          await st.write('ok');
          return;
        }
        try {
          for (let i = 0; i < 1000; i++) await st.write(Buffer.alloc(65536));
        } catch (err) {
          failed = err;
          throw err;
        }
      },
      { writeTimeout: 200 },
    );
    const sock = await rawSocket(port);
    const reader = new FrameReader(sock);
    sock.write(Buffer.concat([PREFACE, settings(), get(1, '/huge')]));
    await waitFor(() => reader.resets().has(1), 5000, 'RST_STREAM on the stuck stream');
    expect(reader.resets().get(1)).toBe(8); // CANCEL
    await waitFor(() => failed !== null, 2000, 'the handler to see the reset');
    // The same connection still takes a new stream.
    sock.write(get(3, '/ok'));
    // Its HEADERS go out (its DATA would wait: the client never returned connection window).
    await waitFor(() => reader.of(T.HEADERS).some((f) => f.stream === 3), 5000, 'stream 3 answered');
  });

  it('a request body the handler does not read is held by flow control', async () => {
    let reads = 0;
    const { port } = await startStreamServer(async (st) => {
      if (st.request.target === '/ok') {
        await st.write('ok');
        return;
      }
      await st.read();
      reads++;
      await new Promise(() => undefined); // never reads again
    });
    const sock = await rawSocket(port);
    const reader = new FrameReader(sock);
    const post = frame(
      T.HEADERS,
      0x4,
      1,
      block([
        [':method', 'POST'],
        [':scheme', 'http'],
        [':path', '/up'],
        [':authority', 'localhost'],
      ]),
    );
    const out: Buffer[] = [PREFACE, settings(), post];
    // 1 MiB of DATA, far past the 65535-byte window the client was given.
    for (let i = 0; i < 64; i++) out.push(frame(T.DATA, 0, 1, Buffer.alloc(16384)));
    sock.write(Buffer.concat(out));
    await waitFor(() => reads === 1 || reader.closed || reader.of(T.GOAWAY).length > 0 || reader.of(T.RST_STREAM).length > 0, 5000, 'the server to react');
    await new Promise((r) => setTimeout(r, 200));
    // Sending past the window is a flow-control error: nghttp2 ends the stream or the connection.
    expect(reader.of(T.RST_STREAM).length + reader.of(T.GOAWAY).length).toBeGreaterThan(0);
    await stillServes(port);
  });
});

describe('a client that never sends its request body', () => {
  it('readTimeout answers 408 on that stream', async () => {
    const { port } = await startServer((req) => new Response(200, `got ${(req.body as Uint8Array).length}`), { readTimeout: 150 });
    const sock = await rawSocket(port);
    const reader = new FrameReader(sock);
    const post = frame(
      T.HEADERS,
      0x4,
      1,
      block([
        [':method', 'POST'],
        [':scheme', 'http'],
        [':path', '/'],
        [':authority', 'localhost'],
      ]),
    );
    sock.write(Buffer.concat([PREFACE, settings(), post, frame(T.DATA, 0, 1, Buffer.from('partial'))]));
    await waitFor(() => reader.of(T.HEADERS).some((f) => f.stream === 1), 3000, 'the 408');
    // HPACK static table index 8 is ":status: 200"; 408 is a literal: look for its digits.
    const head = reader.of(T.HEADERS).find((f) => f.stream === 1)!;
    expect(head.payload.includes(Buffer.from('408'))).toBe(true);
    await stillServes(port);
  });
});
