/**
 * The drain sequence, `server.shutdown()`: readiness turns unready at once (`server.ready`,
 * the `healthPath` answer 503) while the server still accepts and serves for `drainDelay`;
 * then the listener closes, every HTTP/1 response says `Connection: close`, HTTP/2 sessions
 * get GOAWAY, requests in flight finish, kept-alive idle connections close after
 * IDLE_AT_DRAIN_MS more (a request on its way is answered), and a connection accepted but not
 * used yet gets its first request answered (in `close()` too); `drainTimeout` forces what is
 * left; `signals` starts it on a process signal (the next one forces), and the listeners go
 * once the server is closed.
 */
import http2 from 'node:http2';
import net from 'node:net';
import process from 'node:process';
import { describe, expect, it } from 'vitest';
import { ArgumentError, Response, serve } from '../../../kernel/index.js';
import { IDLE_AT_DRAIN_MS } from '../../../kernel/server/server.js';
import { forceCloseAfter } from '../../helpers/cleanup.js';
import { startServer as startH2Server } from '../../helpers/h2.js';
import { rawClient, startServer, track, waitConnections, waitFor, within } from '../../helpers/server.js';

const GET = (path: string): string => `GET ${path} HTTP/1.1\r\nHost: x\r\n\r\n`;

/** Resolves once a TCP connect to `port` is refused (the listener closed). */
function refused(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const s = net.connect({ host: '127.0.0.1', port });
    s.once('connect', () => {
      s.destroy();
      resolve(false);
    });
    s.once('error', () => resolve(true));
  });
}

/** A handler that answers once `release()` is called; `entered` resolves when a request reached it. */
function gate(): { handler: () => Promise<Response>; entered: Promise<void>; release: () => void } {
  let release!: () => void;
  let enter!: () => void;
  const entered = new Promise<void>((r) => (enter = r));
  const released = new Promise<void>((r) => (release = r));
  return {
    handler: async () => {
      enter();
      await released;
      return new Response(200, 'done');
    },
    entered,
    release,
  };
}

describe('shutdown(): readiness and the delay', () => {
  it('answers healthPath 200 while ready and 503 once draining, before any handler, and still accepts during drainDelay', async () => {
    let handled = 0;
    const { server, port } = await startServer(
      () => {
        handled++;
        return new Response(200, 'app');
      },
      { healthPath: '/healthz', drainDelay: 60_000, drainTimeout: 120_000 },
    );
    expect(server.ready).toBe(true);
    const before = await rawClient(port);
    await before.write(GET('/healthz'));
    const ok = await before.response();
    expect(ok.status).toBe(200);
    expect(ok.text).toBe('ok\n');
    expect(ok.headers.get('cache-control')).toBe('no-store');
    expect(ok.close).toBe(false);

    const closed = server.shutdown();
    expect(server.ready).toBe(false);
    expect(server.closing).toBe(false);
    // A new connection during the delay is accepted and served as before.
    const during = await rawClient(port);
    await during.write('OPTIONS /healthz HTTP/1.1\r\nHost: x\r\n\r\n');
    const draining = await during.response();
    expect(draining.status).toBe(503);
    expect(draining.text).toBe('draining\n');
    expect(draining.close).toBe(false);
    const app = await rawClient(port);
    await app.write(GET('/'));
    expect((await app.response()).text).toBe('app');
    expect(handled).toBe(1);
    // The query is not the health path's: the handler answers it.
    const query = await rawClient(port);
    await query.write(GET('/healthz?x=1'));
    expect((await query.response()).text).toBe('app');
    await server.close();
    await closed;
  });

  it('closes the listener only after drainDelay', async () => {
    const { server, port } = await startServer(() => new Response(200, 'ok'), { drainDelay: 300 });
    const t0 = performance.now();
    const closed = server.shutdown();
    expect(await refused(port)).toBe(false);
    await within(closed, 5000, 'the drain to end');
    expect(performance.now() - t0).toBeGreaterThanOrEqual(290);
    expect(await refused(port)).toBe(true);
    expect(server.closing).toBe(true);
  });

  it('with no drainDelay is close() with the server unready', async () => {
    const { server, port } = await startServer(() => new Response(200, 'ok'), { healthPath: '/healthz' });
    await within(server.shutdown(), 3000, 'shutdown');
    expect(server.ready).toBe(false);
    expect(await refused(port)).toBe(true);
  });
});

describe('shutdown(): connections', () => {
  it('keeps connections alive during drainDelay, then says Connection: close on the next response and closes after it', async () => {
    const { server, port } = await startServer(() => new Response(200, 'ok'), { drainDelay: 150 });
    const c = await rawClient(port);
    await c.write(GET('/a'));
    expect((await c.response()).close).toBe(false);
    void server.shutdown();
    // During the delay a client (a balancer without health checks) keeps using its connection:
    // told to close, it would connect again, into an accept queue the listener close resets.
    await c.write(GET('/b'));
    expect((await c.response()).close).toBe(false);
    await waitFor(() => server.closing, 3000, 'the delay to end');
    await c.write(GET('/c'));
    const res = await c.response();
    expect(res.status).toBe(200);
    expect(res.headers.get('connection')).toBe('close');
    await c.untilClosed();
    await within(server.wait(), 3000, 'the drain to end');
  });

  it('finishes a request in flight, and closes the kept-alive idle connections once it stops accepting', async () => {
    const g = gate();
    const { server, port } = await startServer((req) => (req.target === '/slow' ? g.handler() : new Response(200, 'ok')), { drainDelay: 200 });
    const kept = await rawClient(port);
    await kept.write(GET('/first'));
    expect((await kept.response()).close).toBe(false);
    const inFlight = await rawClient(port);
    await inFlight.write(GET('/slow'));
    await g.entered;
    const closed = server.shutdown();
    expect(await refused(port)).toBe(false);
    expect(kept.isClosed).toBe(false);
    // The delay is over: the listener is closed, the idle connection too, the request still runs.
    await waitFor(() => server.closing, 3000, 'the delay to end');
    const closedAt = performance.now();
    expect(await refused(port)).toBe(true);
    // A request may be on its way on the idle connection: it stays open IDLE_AT_DRAIN_MS more.
    expect(kept.isClosed).toBe(false);
    await kept.untilClosed();
    expect(performance.now() - closedAt).toBeGreaterThanOrEqual(IDLE_AT_DRAIN_MS - 50);
    expect(kept.received.toString('latin1').split('HTTP/1.1 ').length).toBe(2);
    expect(inFlight.isClosed).toBe(false);
    g.release();
    const res = await inFlight.response();
    expect(res.text).toBe('done');
    expect(res.close).toBe(true);
    await within(closed, 3000, 'the drain to end');
  });

  it('answers the first request of a connection accepted but not used yet when close() is called', async () => {
    const { server, port } = await startServer(() => new Response(200, 'late but answered'));
    const c = await rawClient(port);
    await waitConnections(server, 1);
    const closed = server.close();
    await c.write(GET('/'));
    const res = await c.response();
    expect(res.status).toBe(200);
    expect(res.text).toBe('late but answered');
    expect(res.close).toBe(true);
    await within(closed, 3000, 'close');
  });

  it('answers the first request of a connection waiting for protocol detection (h2c on) when close() is called', async () => {
    const { server, port } = await startH2Server(() => new Response(200, 'detected'));
    const c = await rawClient(port);
    await waitConnections(server, 1);
    const closed = server.close();
    await c.write(GET('/'));
    const res = await c.response();
    expect(res.text).toBe('detected');
    expect(res.close).toBe(true);
    await within(closed, 3000, 'close');
  });

  it('tells no connection to close before the listener is closed: a client that connects again at once is refused, never reset', async () => {
    const g = gate();
    let calls = 0;
    const { server, port } = await startServer((req) => (++calls === 1 ? g.handler() : new Response(200, `again ${req.target}`)), { drainDelay: 50 });
    const c = await rawClient(port);
    await c.write(GET('/first'));
    await g.entered;
    void server.shutdown();
    // Answered in the event-loop turn the delay ends in, right after its timer.
    track(setTimeout(g.release, 50));
    let res = await c.response();
    if (!res.close) {
      await c.write(GET('/second'));
      res = await c.response();
    }
    expect(res.close).toBe(true);
    // What nginx does when told to close: a new connection for its next request, at once.
    const next = await new Promise<string>((resolve) => {
      const s = net.connect({ host: '127.0.0.1', port });
      s.once('connect', () => s.write(GET('/third')));
      s.once('data', () => resolve('answered'));
      s.once('error', (err: NodeJS.ErrnoException) => resolve(err.code ?? err.message));
      s.once('close', () => resolve('closed without an answer'));
    });
    expect(next).toBe('ECONNREFUSED');
    await within(server.wait(), 3000, 'the drain to end');
  });

  it('answers a request that comes on an idle kept-alive connection after the listener closed, with Connection: close', async () => {
    const { server, port } = await startServer(() => new Response(200, 'still answered'));
    const c = await rawClient(port);
    await c.write(GET('/a'));
    expect((await c.response()).close).toBe(false);
    const closed = server.shutdown();
    await waitFor(() => server.closing, 3000, 'the listener to close');
    await c.write('POST /b HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\nhi');
    const res = await c.response();
    expect(res.text).toBe('still answered');
    expect(res.close).toBe(true);
    await within(closed, 3000, 'the drain to end');
  });

  it('does not cut a request that began on an idle connection during its grace, with every timeout off', async () => {
    const off = { readTimeout: 0, readHeaderTimeout: 0, idleTimeout: 0, writeTimeout: 0 };
    const { server, port } = await startServer(() => new Response(200, 'whole'), off);
    const c = await rawClient(port);
    await c.write(GET('/a'));
    expect((await c.response()).close).toBe(false);
    const closed = server.shutdown();
    await waitFor(() => server.closing, 3000, 'the listener to close');
    await c.write('GET /b HTTP/1.1\r\n');
    // The idle grace is over while the head is still arriving: the request is not idle.
    await new Promise<void>((resolve) => setTimeout(resolve, IDLE_AT_DRAIN_MS + 200));
    expect(c.isClosed).toBe(false);
    await c.write('Host: x\r\n\r\n');
    const res = await c.response();
    expect(res.text).toBe('whole');
    expect(res.close).toBe(true);
    await within(closed, 3000, 'the drain to end');
  });

  it('sends GOAWAY to HTTP/2 sessions once the delay is over and lets their streams finish', async () => {
    const g = gate();
    const { server, port } = await startH2Server(g.handler, { drainDelay: 100 });
    const session = http2.connect(`http://127.0.0.1:${port}`);
    session.on('error', () => undefined);
    const goaway = new Promise<number>((resolve) => session.once('goaway', (code) => resolve(code)));
    const st = session.request({ ':path': '/' });
    const body: Buffer[] = [];
    st.on('data', (d: Buffer) => body.push(d));
    const ended = new Promise<void>((r) => st.on('end', () => r()));
    await g.entered;
    void server.shutdown();
    expect(await within(goaway, 3000, 'GOAWAY')).toBe(http2.constants.NGHTTP2_NO_ERROR);
    g.release();
    await within(ended, 3000, 'the stream to end');
    expect(Buffer.concat(body).toString()).toBe('done');
    session.destroy();
    await server.close();
  });
});

describe('shutdown(): drainTimeout', () => {
  it('drops what is still open at drainTimeout', async () => {
    const g = gate();
    const { server, port } = await startServer(g.handler, { drainDelay: 50, drainTimeout: 300, closeGracePeriod: 0 });
    const c = await rawClient(port);
    await c.write(GET('/never'));
    await g.entered;
    const t0 = performance.now();
    await within(server.shutdown(), 3000, 'the drain to be forced');
    expect(performance.now() - t0).toBeGreaterThanOrEqual(290);
    await c.untilClosed();
    expect(c.received.length).toBe(0);
    g.release();
  });

  it('checks the drain options', async () => {
    const h = (): Response => new Response(200, 'x');
    await expect(serve(h, { port: 0, drainDelay: 5000, drainTimeout: 5000 })).rejects.toThrow(/drainDelay \(5000 ms\) must be shorter than drainTimeout/);
    await expect(serve(h, { port: 0, drainDelay: -1 })).rejects.toThrow(ArgumentError);
    await expect(serve(h, { port: 0, healthPath: 'healthz' })).rejects.toThrow(/healthPath must be a path such as '\/healthz'/);
    await expect(serve(h, { port: 0, healthPath: '/h?x' })).rejects.toThrow(/healthPath/);
    await expect(serve(h, { port: 0, signals: 'SIGTERM' } as never)).rejects.toThrow(/signals must be an array/);
    await expect(serve(h, { port: 0, signals: ['SIGTREM'] } as never)).rejects.toThrow(/"SIGTREM" is not a signal name/);
    await expect(serve(h, { port: 0, signals: ['SIGKILL'] } as never)).rejects.toThrow(/cannot be caught/);
    await expect(serve(h, { port: 0, signals: ['SIGTERM', 'SIGTERM'] })).rejects.toThrow(/listed twice/);
    await expect(serve(h, { port: 0, drainDelai: 1 } as never)).rejects.toThrow(/unknown server option "drainDelai".*drainDelay/);
  });
});

describe('shutdown(): signals', () => {
  it('listens only when asked, drains on the first signal, forces on the second, and stops listening once closed', async () => {
    const base = process.listenerCount('SIGUSR2');
    const plain = forceCloseAfter(await serve(() => new Response(200, 'x'), { port: 0 }));
    expect(process.listenerCount('SIGUSR2')).toBe(base);
    await plain.close();

    const g = gate();
    const { server, port } = await startServer(g.handler, { signals: ['SIGUSR2'], drainDelay: 60_000, drainTimeout: 120_000 });
    expect(process.listenerCount('SIGUSR2')).toBe(base + 1);
    const c = await rawClient(port);
    await c.write(GET('/'));
    await g.entered;
    process.kill(process.pid, 'SIGUSR2');
    await waitFor(() => !server.ready, 3000, 'the signal to start the drain');
    expect(server.closing).toBe(false);
    process.kill(process.pid, 'SIGUSR2');
    await within(server.wait(), 3000, 'the second signal to force the close');
    await c.untilClosed();
    expect(process.listenerCount('SIGUSR2')).toBe(base);
    g.release();
  });
});
