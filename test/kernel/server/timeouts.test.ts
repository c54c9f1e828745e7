/**
 * Server timeouts on real loopback sockets: readHeaderTimeout, readTimeout, idleTimeout,
 * writeTimeout and their fallbacks. Small timeouts, measured with performance.now(); the tests
 * wait on socket events, never on sleeps.
 */
import net from 'node:net';
import { describe, expect, it } from 'vitest';
import { createKernel, definePlugin, Response, type Request, type Stream } from '../../../kernel/index.js';
import {
  curlEnv,
  expectClosed,
  expectServing,
  get,
  onCleanup,
  rawClient,
  runCurl,
  startServer,
  startStreamServer,
  statusOf,
  track,
  waitConnections,
  waitFor,
  within,
  type RawClient,
} from '../../helpers/server.js';

const ok = (req: Request): Response => new Response(200, `ok ${req.target}`);

/** Slack for timer-based closes on a loaded machine. */
const SLACK = 400;

/** Elapsed ms since `t0`. */
function since(t0: number): number {
  return performance.now() - t0;
}

describe('readHeaderTimeout', () => {
  it('a client that sends part of a head and stalls gets 408 and a close within about the timeout', async () => {
    const { port, server } = await startServer(ok, { readHeaderTimeout: 200 });
    const c = await rawClient(port);
    const t0 = performance.now();
    await c.write('GET /slow HTTP/1.1\r\nHost: x\r\nX-Partial: ');
    const bytes = await expectClosed(c, 3000);
    const elapsed = since(t0);
    expect(statusOf(bytes)).toBe(408);
    expect(elapsed).toBeGreaterThanOrEqual(180);
    expect(elapsed).toBeLessThan(200 + SLACK);
    await waitConnections(server, 0);
    await expectServing(port);
  });

  it('a client that connects and sends nothing is closed quietly (no 408)', async () => {
    const { port, server } = await startServer(ok, { readHeaderTimeout: 200 });
    const t0 = performance.now();
    const c = await rawClient(port);
    const bytes = await expectClosed(c, 3000);
    const elapsed = since(t0);
    expect(bytes.length).toBe(0);
    expect(elapsed).toBeGreaterThanOrEqual(180);
    expect(elapsed).toBeLessThan(200 + SLACK);
    await waitConnections(server, 0);
  });

  it('does not cut off a head that completes in time', async () => {
    const { port } = await startServer(ok, { readHeaderTimeout: 300 });
    const c = await rawClient(port);
    await c.write('GET /a HTTP/1.1\r\n');
    await c.write('Host: x\r\n');
    await c.write('\r\n');
    const r = await c.response();
    expect(r.status).toBe(200);
  });

  it('limits the head of the second request on a kept-alive connection too', async () => {
    const { port } = await startServer(ok, { readHeaderTimeout: 200 });
    const c = await rawClient(port);
    await c.write(get('/1'));
    expect((await c.response()).status).toBe(200);
    const t0 = performance.now();
    await c.write('GET /2 HTTP/1.1\r\nHost: x\r\n');
    const bytes = await expectClosed(c, 1000);
    const elapsed = since(t0);
    const second = bytes.subarray(bytes.toString('latin1').indexOf('HTTP/1.1', 10));
    expect(statusOf(second)).toBe(408);
    expect(elapsed).toBeLessThan(200 + SLACK);
  });

  it('200 clients trickling heads never delay a normal request by 100 ms, and all are cut off', async () => {
    const N = 200;
    const { port, server } = await startServer(ok, { readHeaderTimeout: 500 });
    const head = 'GET /slow HTTP/1.1\r\nHost: slow.example\r\nX-Trickle: ' + 'z'.repeat(200);
    const slow: RawClient[] = [];
    const t0 = performance.now();
    // Connect in batches, the first byte at once, then one byte every 50-100 ms per socket.
    // Each batch waits until the server accepted it: Node accepts about one connection per
    // event-loop turn, and a burst beyond the listen backlog (128) would be dropped by the kernel
    // and retried a second later.
    for (let b = 0; b < N; b += 50) {
      const batch = await Promise.all(Array.from({ length: Math.min(50, N - b) }, () => rawClient(port)));
      await waitFor(() => server.connectionCount >= b + batch.length, 3000, `the server to accept ${b + batch.length} connections`);
      for (const c of batch) {
        const i = slow.length;
        slow.push(c);
        let at = 0;
        const tick = (): void => {
          if (c.isClosed || c.ended || at >= head.length) {
            clearInterval(timer);
            return;
          }
          c.socket.write(head[at++]!, 'latin1');
        };
        const timer = track(setInterval(tick, 50 + (i % 51)));
        tick();
      }
    }
    onCleanup(() => slow.forEach((c) => c.destroy()));
    await waitFor(() => server.connectionCount >= N, 3000, `${N} slow connections`);

    // Normal requests on fresh connections while the slow ones trickle.
    const times: number[] = [];
    for (let k = 0; k < 5; k++) {
      const s = performance.now();
      const c = await rawClient(port);
      await c.write(get(`/fast${k}`));
      const r = await c.response();
      times.push(since(s));
      expect(r.status).toBe(200);
      expect(r.text).toBe(`ok /fast${k}`);
      c.destroy();
    }
    expect(Math.max(...times), `normal request times ${times.map((t) => t.toFixed(1)).join(', ')} ms`).toBeLessThan(100);

    // Every slow client is cut off by readHeaderTimeout (within ~2 s of the start), with 408.
    await within(Promise.all(slow.map((c) => c.closed)), Math.max(500, 2000 - since(t0)) + SLACK, 'all slow clients to be closed');
    expect(since(t0)).toBeLessThan(2000 + SLACK);
    const statuses = new Set(slow.map((c) => statusOf(c.received)));
    expect([...statuses]).toEqual([408]);
    await waitConnections(server, 0);
    await expectServing(port);
  });
});

describe('readTimeout', () => {
  it('a body that stalls gets 408 and a close (serve)', async () => {
    let ran = 0;
    const { port, server } = await startServer(
      () => {
        ran++;
        return new Response(200, 'ok');
      },
      { readTimeout: 200 },
    );
    const c = await rawClient(port);
    const t0 = performance.now();
    await c.write('POST /up HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n0123456789');
    const bytes = await expectClosed(c, 3000);
    const elapsed = since(t0);
    expect(statusOf(bytes)).toBe(408);
    expect(elapsed).toBeGreaterThanOrEqual(180);
    expect(elapsed).toBeLessThan(200 + SLACK);
    expect(ran).toBe(0);
    await waitConnections(server, 0);
    await expectServing(port);
  });

  it('a chunked body that stalls gets 408 and a close (serve)', async () => {
    const { port } = await startServer(ok, { readTimeout: 200 });
    const c = await rawClient(port);
    await c.write('POST /up HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n');
    const bytes = await expectClosed(c, 3000);
    expect(statusOf(bytes)).toBe(408);
  });

  it("a body that stalls gets 408, and the stream handler's read rejects (listen)", async () => {
    let readError: unknown = null;
    const { port } = await startStreamServer(
      async (s: Stream) => {
        await s.startRead();
        try {
          await s.readAll();
        } catch (err) {
          readError = err;
          throw err;
        }
        await s.write('done');
      },
      { readTimeout: 200 },
    );
    const c = await rawClient(port);
    const t0 = performance.now();
    await c.write('POST /up HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n0123456789');
    const bytes = await expectClosed(c, 3000);
    expect(statusOf(bytes)).toBe(408);
    expect(since(t0)).toBeLessThan(200 + SLACK);
    await waitFor(() => readError !== null, 2000, 'the read to reject');
    expect(readError).toBeInstanceOf(Error);
  });

  it('does not limit a handler that takes longer than readTimeout after the body arrived', async () => {
    const { port } = await startServer(
      async () => {
        await new Promise((r) => setTimeout(r, 350));
        return new Response(200, 'slow but fine');
      },
      { readTimeout: 200 },
    );
    const c = await rawClient(port);
    await c.write('POST /up HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\nhi');
    const r = await c.response();
    expect(r.status).toBe(200);
    expect(r.text).toBe('slow but fine');
  });
});

describe('idleTimeout', () => {
  it('closes an idle keep-alive connection quietly after a response', async () => {
    const { port, server } = await startServer(ok, { idleTimeout: 200 });
    const c = await rawClient(port);
    await c.write(get('/1'));
    const r = await c.response();
    expect(r.status).toBe(200);
    const afterResponse = c.received.length;
    const t0 = performance.now();
    await expectClosed(c, 3000);
    const elapsed = since(t0);
    expect(c.received.length).toBe(afterResponse); // nothing more was sent
    expect(elapsed).toBeGreaterThanOrEqual(150);
    expect(elapsed).toBeLessThan(200 + SLACK);
    await waitConnections(server, 0);
  });

  it('a request within the idle time keeps the connection', async () => {
    const { port } = await startServer(ok, { idleTimeout: 300 });
    const c = await rawClient(port);
    for (let i = 0; i < 3; i++) {
      await c.write(get(`/${i}`));
      expect((await c.response()).text).toBe(`ok /${i}`);
    }
    expect(c.isClosed).toBe(false);
  });

  it('closes the idle connection after a large response that filled the socket buffer', async () => {
    const big = Buffer.alloc(8 * 1024 * 1024, 0x61);
    const { port } = await startServer(() => new Response(200, big), { idleTimeout: 300, writeTimeout: 3000 });
    const c = await rawClient(port);
    await c.write(get('/big'));
    const r = await c.response();
    expect(r.body.length).toBe(big.length);
    const t0 = performance.now();
    await expectClosed(c, 1000);
    expect(since(t0)).toBeLessThan(300 + SLACK);
  });
});

describe('fallbacks to readTimeout', () => {
  it('with only readTimeout set, a stalled head gets 408 within about readTimeout', async () => {
    const { port } = await startServer(ok, { readTimeout: 200 });
    const c = await rawClient(port);
    const t0 = performance.now();
    await c.write('GET / HTTP/1.1\r\nHo');
    const bytes = await expectClosed(c, 3000);
    expect(statusOf(bytes)).toBe(408);
    expect(since(t0)).toBeGreaterThanOrEqual(180);
    expect(since(t0)).toBeLessThan(200 + SLACK);
  });

  it('with only readTimeout set, a silent connection is closed quietly', async () => {
    const { port } = await startServer(ok, { readTimeout: 200 });
    const c = await rawClient(port);
    const bytes = await expectClosed(c, 3000);
    expect(bytes.length).toBe(0);
  });

  it('with only readTimeout set, an idle keep-alive connection closes quietly within about readTimeout', async () => {
    const { port } = await startServer(ok, { readTimeout: 200 });
    const c = await rawClient(port);
    await c.write(get('/1'));
    expect((await c.response()).status).toBe(200);
    const n = c.received.length;
    const t0 = performance.now();
    await expectClosed(c, 3000);
    expect(c.received.length).toBe(n);
    expect(since(t0)).toBeLessThan(200 + SLACK);
  });

  it('an explicit readHeaderTimeout wins over readTimeout', async () => {
    const { port } = await startServer(ok, { readTimeout: 2000, readHeaderTimeout: 150 });
    const c = await rawClient(port);
    const t0 = performance.now();
    await c.write('GET / HTTP/1.1\r\n');
    const bytes = await expectClosed(c, 3000);
    expect(statusOf(bytes)).toBe(408);
    expect(since(t0)).toBeLessThan(150 + SLACK);
  });
});

describe('writeTimeout', () => {
  it('does not close a client that kept reading while the server event loop was held up longer than writeTimeout', async () => {
    // curl, another process, reads all along; this process blocks for three writeTimeouts right
    // after handing the socket a write larger than its buffers. The timer then fires before the
    // loop has seen the bytes the socket could take meanwhile: judging then would cut curl off.
    const SIZE = 32 * 1024 * 1024;
    const { port } = await startStreamServer(
      async (s: Stream) => {
        await s.startRead();
        s.setHeader('Content-Length', String(SIZE));
        const sent = s.write(Buffer.alloc(SIZE, 0x7a));
        const until = performance.now() + 600;
        while (performance.now() < until);
        await sent;
        await s.closeWrite();
      },
      { writeTimeout: 200 },
    );
    // Three exchanges: whether the timer was armed before the loop stopped varies from run to run.
    const urls = [1, 2, 3].map((n) => `http://127.0.0.1:${port}/${n}`);
    const r = await runCurl(['-w', '%{size_download} ', ...urls.flatMap((u) => ['-o', '/dev/null', u])], curlEnv());
    expect(r.stderr).toBe('');
    expect({ code: r.code, sizes: r.stdout.toString().trim() }).toEqual({ code: 0, sizes: `${SIZE} ${SIZE} ${SIZE}` });
  });

  /** A client that never reads: pauses its socket right after connecting. */
  async function stalledClient(port: number, raw: string): Promise<RawClient> {
    const c = await rawClient(port);
    c.socket.pause();
    await c.write(raw);
    return c;
  }

  it('closes the connection of a client that never reads a 64 MiB streamed response (listen)', async () => {
    const TOTAL = 64 * 1024 * 1024;
    let written = 0;
    let blockedAt = 0;
    let finished: { err: unknown; at: number } | null = null;
    const { port, server } = await startStreamServer(
      async (s: Stream) => {
        await s.startRead();
        if (s.request.target !== '/huge') {
          await s.write('small');
          return;
        }
        s.setHeader('Content-Length', String(TOTAL));
        const chunk = Buffer.alloc(64 * 1024, 0x78);
        try {
          while (written < TOTAL) {
            const t = performance.now();
            await s.write(chunk);
            if (performance.now() - t > 20 && blockedAt === 0) blockedAt = t;
            written += chunk.length;
          }
          finished = { err: null, at: performance.now() };
        } catch (err) {
          finished = { err, at: performance.now() };
          throw err;
        }
      },
      { writeTimeout: 200 },
    );
    const c = await stalledClient(port, get('/huge'));
    const t0 = performance.now();
    await waitConnections(server, 0, 5000);
    const elapsed = since(t0);
    expect(written).toBeLessThan(TOTAL);
    expect(elapsed).toBeLessThan(200 + 1500);
    await waitFor(() => finished !== null, 2000, 'the handler to fail');
    expect(finished!.err).toBeInstanceOf(Error);
    if (blockedAt > 0) expect(finished!.at - blockedAt).toBeLessThan(200 + SLACK);
    // The client sees the connection go once it looks.
    c.socket.resume();
    await expectClosed(c, 3000);
    await expectServing(port);
  });

  it('closes the connection of a client that never reads a 64 MiB response from a sync request handler', async () => {
    const huge = Buffer.alloc(64 * 1024 * 1024, 0x78);
    const { port, server } = await startServer((req: Request) => (req.target === '/huge' ? new Response(200, huge) : new Response(200, 'small')), { writeTimeout: 200 });
    await stalledClient(port, get('/huge'));
    const t0 = performance.now();
    await waitConnections(server, 0, 5000);
    expect(since(t0)).toBeLessThan(200 + 1500);
    await expectServing(port);
  });

  it('closes the connection of a client that never reads a 64 MiB response from an async handler with idleTimeout set', async () => {
    const huge = Buffer.alloc(64 * 1024 * 1024, 0x78);
    const { port, server } = await startServer(
      async (req: Request) => {
        await Promise.resolve();
        return req.target === '/huge' ? new Response(200, huge) : new Response(200, 'small');
      },
      { writeTimeout: 200, idleTimeout: 10_000 },
    );
    await stalledClient(port, get('/huge'));
    const t0 = performance.now();
    await waitConnections(server, 0, 1500);
    expect(since(t0)).toBeLessThan(200 + 1500);
    await expectServing(port);
  });

  it('bounds a gap in progress, not the time until a large write drains: a slow reader that keeps reading gets it all', async () => {
    // One 24 MiB write drains only at its end; read at about 8 MiB/s, that takes well over
    // writeTimeout, yet the client never stops taking bytes for that long.
    const size = 24 * 1024 * 1024;
    const { port } = await startServer(() => new Response(200, Buffer.alloc(size, 0x79)), { writeTimeout: 300 });
    const socket = net.connect({ host: '127.0.0.1', port });
    onCleanup(() => void socket.destroy());
    socket.on('error', () => {});
    socket.write(get('/big'));
    let got = 0;
    const t0 = performance.now();
    const ended = new Promise<boolean>((resolve) => {
      socket.on('data', (d: Buffer) => {
        got += d.length;
        // Pace the reads: at most about 8 MiB/s.
        if (got > (performance.now() - t0) * 8 * 1024) {
          socket.pause();
          track(setTimeout(() => socket.resume(), 20));
        }
      });
      socket.once('close', () => resolve(got >= size));
    });
    const whole = new Promise<void>((resolve) => socket.on('data', () => got >= size && resolve()));
    const outcome = await Promise.race([whole.then(() => 'whole'), ended.then(() => 'closed')]);
    expect(outcome).toBe('whole');
    expect(performance.now() - t0).toBeGreaterThan(300);
  });

  it('a write still waiting when the connection is upgraded does not time out the upgraded socket', async () => {
    // The upgrade is pipelined behind a large response, so the write timer runs when the
    // socket is handed over; the new owner's quiet socket must not be destroyed by it.
    const plugin = definePlugin({
      name: 'echo-upgrade',
      register(k) {
        k.hooks.server.onUpgrade.tap('echo', (_req, socket) => {
          socket.write('HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: foo\r\n\r\n');
          socket.on('data', (d: Buffer) => socket.write(Buffer.concat([Buffer.from('echo:'), d])));
          socket.resume();
          return true;
        });
      },
    });
    const kernel = await createKernel().register(plugin).ready();
    const { port } = await startServer(() => new Response(200, Buffer.alloc(8 * 1024 * 1024, 0x79)), { kernel, writeTimeout: 200 });
    const socket = net.connect({ host: '127.0.0.1', port });
    onCleanup(() => void socket.destroy());
    socket.on('error', () => {});
    let text = '';
    let closed = false;
    socket.on('data', (d: Buffer) => (text += d.toString('latin1')));
    socket.once('close', () => (closed = true));
    socket.write(get('/big') + 'GET /chat HTTP/1.1\r\nHost: x\r\nConnection: Upgrade\r\nUpgrade: foo\r\n\r\n');
    await waitFor(() => text.includes('101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: foo\r\n\r\n'), 5000, 'the response and the 101');
    // Quiet for longer than twice writeTimeout: nothing may close the upgraded socket.
    await new Promise<void>((r) => track(setTimeout(r, 700)));
    expect(closed).toBe(false);
    socket.write('ping');
    await waitFor(() => text.endsWith('echo:ping'), 3000, 'the echo');
    await kernel.close();
  });

  it('does not cut off a slow reader that keeps reading', async () => {
    const size = 4 * 1024 * 1024;
    const { port } = await startServer(() => new Response(200, Buffer.alloc(size, 0x79)), { writeTimeout: 300 });
    const c = await rawClient(port);
    await c.write(get('/big'));
    const r = await c.response();
    expect(r.body.length).toBe(size);
  });
});
