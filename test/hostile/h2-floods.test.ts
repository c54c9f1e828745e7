/**
 * HTTP/2 floods against the project's server (h2c with prior knowledge on a plain port), from
 * a raw frame client that breaks the rules on purpose: Rapid Reset (HEADERS + RST_STREAM pairs
^ * in bursts), a header block continued forever (CONTINUATION without END_HEADERS), SETTINGS and
 * PING floods from a client that never reads the acknowledgements, and clients that grant no
 * flow-control window to many streams of a streaming handler. For each: another client is
 * served during the flood within a latency bound, the flooding connection is ended (GOAWAY, as
 * nghttp2 answers a flood) or held to its bound, and the process's memory grows by less than a
 * stated bound.
 *
 * Single-connection correctness cases (streams past maxConcurrentStreams, one rapid-reset
 * burst, oversized header blocks, one non-reading client) are in
 * test/plugins/h2/bad-input.test.ts and test/plugins/h2/zero-window.test.ts; this file is the
 * flood and memory view.
 */
import type { Socket } from 'node:net';
import { describe, expect, it } from 'vitest';
import http2 from 'node:http2';
import { Response } from '../../kernel/index.js';
import { block, frame, FrameReader, get, PREFACE, rst, settings, T } from '../helpers/h2-frames.js';
import { nodeRequest, nodeSession, rawSocket, startServer, startStreamServer, waitFor } from '../helpers/h2.js';
import { growth, latencyDuring, memory, MiB } from './peers.js';

/** GOAWAY error codes (RFC 9113 §7). */
const INTERNAL_ERROR = 2;
const ENHANCE_YOUR_CALM = 11;
/** A normal client's slowest call during a flood, ms: generous for a loaded CI machine, far below a stall. */
const LATENCY = 2000;
/** Heap growth allowed for one flood case (the flooding client runs in the same process). */
const HEAP = 64 * MiB;

/** A well-behaved client on its own connection: one GET /ok, checked. */
async function probe(port: number): Promise<() => Promise<void>> {
  const s = nodeSession(`http://127.0.0.1:${port}`);
  return async () => {
    const r = await nodeRequest(s, { ':path': '/ok' });
    expect(r.status).toBe(200);
  };
}

/** Writes `bufs` on `sock` honouring backpressure; stops early (resolves false) once the socket closed. */
async function writeAll(sock: Socket, bufs: Iterable<Buffer>): Promise<boolean> {
  for (const b of bufs) {
    if (sock.destroyed || !sock.writable) return false;
    if (!sock.write(b)) {
      const ok = await new Promise<boolean>((resolve) => {
        const done = (v: boolean) => () => {
          sock.off('drain', onDrain);
          sock.off('close', onClose);
          resolve(v);
        };
        const onDrain = done(true);
        const onClose = done(false);
        sock.once('drain', onDrain);
        sock.once('close', onClose);
      });
      if (!ok) return false;
    }
  }
  return true;
}

function goawayCodes(reader: FrameReader): number[] {
  return reader.of(T.GOAWAY).map((f) => f.payload.readUInt32BE(4));
}

const okHandler = (req: { target: string }): Response => (req.target === '/ok' ? new Response(200, 'ok') : new Response(200, 'x'));

describe('HTTP/2 floods', () => {
  it('Rapid Reset, up to 20,000 HEADERS+RST_STREAM pairs in bursts of 1,000: GOAWAY ENHANCE_YOUR_CALM, few handlers run, others served, memory bounded', async () => {
    let handled = 0;
    const { port, server } = await startServer(async (req) => {
      if (req.target === '/ok') return new Response(200, 'ok');
      handled++;
      await new Promise((r) => setTimeout(r, 5));
      return new Response(200, 'late');
    });
    const call = await probe(port);
    const before = memory();
    const sock = await rawSocket(port);
    const reader = new FrameReader(sock);
    sock.write(Buffer.concat([PREFACE, settings()]));
    let pairs = 0;
    const flood = (async () => {
      for (let burst = 0; burst < 20; burst++) {
        const out: Buffer[] = [];
        for (let i = 0; i < 1000; i++, pairs++) out.push(get(1 + 2 * pairs, '/x'), rst(1 + 2 * pairs));
        if (!(await writeAll(sock, [Buffer.concat(out)]))) return;
        await new Promise<void>((r) => setImmediate(r));
      }
    })();
    const { max } = await latencyDuring(call, () => reader.closed);
    await flood;
    await waitFor(() => reader.closed, 10_000, 'the server to close the flooding connection');
    // nghttp2's reset-rate limit ends the connection (node:http2 also sends INTERNAL_ERROR as it tears the session down).
    expect(goawayCodes(reader)).toContain(ENHANCE_YOUR_CALM);
    expect(handled).toBeLessThan(5000);
    expect(max).toBeLessThan(LATENCY);
    expect(growth(before).heap).toBeLessThan(HEAP);
    await waitFor(() => server.connectionCount <= 1, 5000, 'the flooding connection to be gone');
    await call();
  });

  it('CONTINUATION without END_HEADERS, 1 KB each, up to 20,000: the connection is ended with GOAWAY before any handler runs, others served', async () => {
    let seen = 0;
    const { port, server } = await startServer((req) => {
      if (req.target !== '/ok') seen++;
      return okHandler(req);
    });
    const call = await probe(port);
    const before = memory();
    const sock = await rawSocket(port);
    const reader = new FrameReader(sock);
    const first = block([
      [':method', 'GET'],
      [':scheme', 'http'],
      [':path', '/c'],
      [':authority', 'localhost'],
    ]);
    sock.write(Buffer.concat([PREFACE, settings(), frame(T.HEADERS, 0x1 /* END_STREAM, no END_HEADERS */, 1, first)]));
    let sent = 0;
    const piece = frame(T.CONTINUATION, 0, 1, block([['x-more', 'a'.repeat(1000)]]));
    const flood = (async () => {
      for (let burst = 0; burst < 200 && !reader.closed; burst++) {
        sent += 100;
        if (!(await writeAll(sock, [Buffer.concat(Array.from({ length: 100 }, () => piece))]))) return;
        await new Promise<void>((r) => setImmediate(r));
      }
    })();
    const { max } = await latencyDuring(call, () => reader.closed);
    await flood;
    await waitFor(() => reader.closed, 10_000, 'the server to close the connection');
    // As node:http2 itself answers it: nghttp2 refuses the block, the session ends with INTERNAL_ERROR.
    expect(goawayCodes(reader)).toEqual([INTERNAL_ERROR]);
    expect(sent).toBeLessThan(20_000);
    expect(seen).toBe(0);
    expect(max).toBeLessThan(LATENCY);
    expect(growth(before).heap).toBeLessThan(HEAP);
    await waitFor(() => server.connectionCount <= 1, 5000, 'the flooding connection to be gone');
    await call();
  });

  for (const kind of ['SETTINGS', 'PING'] as const) {
    it(`${kind} flood, 5,000 frames per write up to 100,000: nghttp2 sees the queued acknowledgements pile up and ends the connection; others served`, async () => {
      const { port, server } = await startServer(okHandler);
      const call = await probe(port);
      const before = memory();
      const sock = await rawSocket(port);
      const reader = new FrameReader(sock);
      sock.write(Buffer.concat([PREFACE, settings()]));
      const one = kind === 'SETTINGS' ? settings([[4, 65535]]) : frame(T.PING, 0, 0, Buffer.alloc(8));
      // More than nghttp2's 1,000 queued acknowledgements in every read of the socket.
      const burst = Buffer.concat(Array.from({ length: 5000 }, () => one));
      let sent = 0;
      const flood = (async () => {
        while (sent < 100_000 && !reader.closed) {
          sent += 5000;
          if (!(await writeAll(sock, [burst]))) return;
          await new Promise<void>((r) => setImmediate(r));
        }
      })();
      const { max } = await latencyDuring(call, () => reader.closed || sent >= 100_000);
      await flood;
      await waitFor(() => reader.closed, 10_000, 'the server to close the flooding connection');
      // node:http2 tears a flooded session down with GOAWAY INTERNAL_ERROR (a plain node:http2 server does the same).
      expect(goawayCodes(reader)).toEqual([INTERNAL_ERROR]);
      expect(sent).toBeLessThan(100_000);
      const acks = reader.frames.filter((f) => f.type === (kind === 'SETTINGS' ? T.SETTINGS : T.PING) && (f.flags & 1) !== 0).length;
      expect(acks).toBeLessThan(sent);
      expect(max).toBeLessThan(LATENCY);
      expect(growth(before).heap).toBeLessThan(HEAP);
      await waitFor(() => server.connectionCount <= 1, 5000, 'the flooding connection to be gone');
      await call();
    });
  }

  it('zero-window readers: 5 connections x 100 streams of a streaming handler, initialWindowSize 0: each connection parks at most its budget, others served, handlers end when the clients go', async () => {
    const CONNECTIONS = 5;
    const STREAMS = 100;
    /** What one connection's parked streams may have been let write (the send budget, 256 KiB, plus a slice). */
    const PER_CONNECTION = 320 * 1024;
    let written = 0;
    let started = 0;
    let ended = 0;
    const chunk = Buffer.alloc(1024, 0x61);
    const { port, server } = await startStreamServer(async (st) => {
      if (st.request.target === '/ok') {
        await st.write('ok');
        return;
      }
      started++;
      try {
        for (let i = 0; i < 1024; i++) {
          await st.write(chunk); // 1 MiB per stream, 500 MiB in all if nothing held them
          written += chunk.length;
        }
      } finally {
        ended++;
      }
    });
    const call = await probe(port);
    const before = memory();
    const sessions: http2.ClientHttp2Session[] = [];
    for (let c = 0; c < CONNECTIONS; c++) {
      const s = nodeSession(`http://127.0.0.1:${port}`, { settings: { initialWindowSize: 0 } });
      sessions.push(s);
      for (let i = 0; i < STREAMS; i++) s.request({ ':path': '/stream' }).on('error', () => undefined);
    }
    await waitFor(() => started === CONNECTIONS * STREAMS, 10_000, 'every stream handler to start');
    // Until the handlers are all parked (nothing written for 250 ms), a normal client is timed.
    let last = -1;
    let since = performance.now();
    const { max } = await latencyDuring(call, () => {
      if (written !== last) {
        last = written;
        since = performance.now();
      }
      return performance.now() - since > 250;
    });
    expect(written).toBeGreaterThan(0);
    expect(written).toBeLessThan(CONNECTIONS * PER_CONNECTION);
    expect(max).toBeLessThan(LATENCY);
    expect(growth(before).heap).toBeLessThan(HEAP);
    for (const s of sessions) s.destroy();
    await waitFor(() => ended === CONNECTIONS * STREAMS, 10_000, 'the parked handlers to end once their clients went');
    await waitFor(() => server.connectionCount <= 1, 5000, 'the zero-window connections to be gone');
    await call();
  });
});
