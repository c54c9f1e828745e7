/**
 * Connections that send nothing, or stop before a protocol is known, are reclaimed by a timer in
 * every state that waits for bytes: protocol detection on a plain listener with the h2c/h2
 * plugins, the TLS handshake, an HTTP/1 head, the HTTP/2 preface; a head still arriving when
 * `close()` is called; and with no timeout options at all, by the defaults. Real sockets on
 * loopback; the tests with the defaults advance a fake clock instead of waiting a minute.
 */
import net from 'node:net';
import { performance } from 'node:perf_hooks';
import tls from 'node:tls';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { createKernel, Response, serve, type Kernel, type ServeOptions, type Server } from '../../../kernel/index.js';
import { selfSignedCertificate } from '../../../tls/self-signed.js';
import { resolveServerOptions } from '../../../kernel/server/options.js';
import { h2 } from '../../../plugins/h2/index.js';
import { h2c } from '../../../plugins/h2c/index.js';
import { onCleanup, waitConnections, waitFor } from '../../helpers/server.js';
import { forceCloseAfter } from '../../helpers/cleanup.js';

const hello = (): Response => new Response(200, 'hello');
const cert = selfSignedCertificate();
const PREFACE = Buffer.from('PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n', 'latin1');

/** Slack for timer-based closes on a loaded machine. */
const SLACK = 600;

let kernel: Kernel | null = null;
async function h2Kernel(): Promise<Kernel> {
  kernel ??= await createKernel().register(h2).register(h2c).ready();
  return kernel;
}

async function start(options: ServeOptions & { plugins?: boolean } = {}): Promise<Server> {
  const { plugins = true, ...rest } = options;
  const server = await serve(hello, { host: '127.0.0.1', port: 0, onError: () => {}, ...(plugins ? { kernel: await h2Kernel() } : {}), ...rest });
  forceCloseAfter(server);
  return server;
}

/** A TCP connection to `port` whose close is observed; it reads (and drops) whatever arrives. */
async function connect(port: number): Promise<{ socket: net.Socket; closed: Promise<void>; isClosed: () => boolean }> {
  const socket = net.connect({ host: '127.0.0.1', port });
  socket.on('error', () => {});
  onCleanup(() => void socket.destroy());
  let done = false;
  const closed = new Promise<void>((resolve) =>
    socket.once('close', () => {
      done = true;
      resolve();
    }),
  );
  socket.resume();
  await new Promise<void>((resolve) => socket.once('connect', () => resolve()));
  return { socket, closed, isClosed: () => done };
}

/** Waits (real time, setImmediate steps: works under a fake clock) until `c` is closed. */
function closedWithin(c: { isClosed: () => boolean }, ms: number, what: string): Promise<void> {
  return waitFor(c.isClosed, ms, what);
}

/** A few turns of the event loop, so that what a timer started (a close) gets to happen. */
async function turns(n = 20): Promise<void> {
  for (let i = 0; i < n; i++) await new Promise<void>((r) => setImmediate(r));
}

describe('a connection that sends nothing or only part of the HTTP/2 preface is reclaimed', () => {
  it('protocol detection (plain listener, h2c): a silent connection is closed at readHeaderTimeout', async () => {
    const server = await start({ readHeaderTimeout: 200 });
    const t0 = performance.now();
    const c = await connect(server.port);
    await waitConnections(server, 1);
    await closedWithin(c, 200 + SLACK, 'the silent connection to be closed');
    expect(performance.now() - t0).toBeGreaterThanOrEqual(180);
    await waitConnections(server, 0);
  });

  it('protocol detection: 10 bytes of the preface and then nothing is closed at readHeaderTimeout', async () => {
    const server = await start({ readHeaderTimeout: 200 });
    const c = await connect(server.port);
    const t0 = performance.now();
    c.socket.write(PREFACE.subarray(0, 10));
    await waitConnections(server, 1);
    await closedWithin(c, 200 + SLACK, 'the partial preface to be closed');
    expect(performance.now() - t0).toBeGreaterThanOrEqual(180);
    await waitConnections(server, 0);
  });

  it('idleTimeout and readTimeout alone bound the detection too (the head falls back to readTimeout)', async () => {
    const server = await start({ readHeaderTimeout: 0, readTimeout: 200, idleTimeout: 200 });
    const c = await connect(server.port);
    c.socket.write(PREFACE.subarray(0, 10));
    await closedWithin(c, 200 + SLACK, 'the partial preface to be closed');
    await waitConnections(server, 0);
  });

  it('HTTP/2 after the whole preface: no SETTINGS and no request is closed at readHeaderTimeout', async () => {
    const server = await start({ readHeaderTimeout: 200 });
    const c = await connect(server.port);
    c.socket.write(PREFACE);
    await closedWithin(c, 2 * 200 + SLACK, 'the session without SETTINGS to be closed');
    await waitConnections(server, 0);
  });

  it('HTTP/1 without plugins: a silent connection is closed at readHeaderTimeout', async () => {
    const server = await start({ plugins: false, readHeaderTimeout: 200 });
    const c = await connect(server.port);
    await closedWithin(c, 200 + SLACK, 'the silent connection to be closed');
    await waitConnections(server, 0);
  });

  it('TLS: a connection that never sends its ClientHello is dropped at tlsHandshakeTimeout', async () => {
    const server = await start({ tlsHandshakeTimeout: 200, tls: { key: cert.key, cert: cert.cert } });
    const t0 = performance.now();
    const c = await connect(server.port);
    await waitConnections(server, 1);
    await closedWithin(c, 200 + SLACK, 'the TCP connection without a handshake to be closed');
    expect(performance.now() - t0).toBeGreaterThanOrEqual(180);
    await waitConnections(server, 0);
  });

  it('TLS with a caller-made tls.Server as listener: the same timer applies', async () => {
    const l = tls.createServer({ key: cert.key, cert: cert.cert });
    onCleanup(() => void l.close());
    const server = await start({ tlsHandshakeTimeout: 200, listener: l });
    const c = await connect(server.port);
    await closedWithin(c, 200 + SLACK, 'the TCP connection without a handshake to be closed');
    await waitConnections(server, 0);
  });

  it('TLS: a handshake that completes in time is served, and the timer does not cut the connection later', async () => {
    const server = await start({ tlsHandshakeTimeout: 200, tls: { key: cert.key, cert: cert.cert, ALPNProtocols: ['http/1.1'] } });
    const s = tls.connect({ host: '127.0.0.1', port: server.port, ca: cert.cert, servername: 'localhost', ALPNProtocols: ['http/1.1'] });
    s.on('error', () => {});
    onCleanup(() => void s.destroy());
    await new Promise<void>((resolve) => s.once('secureConnect', () => resolve()));
    let closed = false;
    s.once('close', () => (closed = true));
    // Past the handshake timeout, a request on the connection is still answered.
    await new Promise<void>((r) => setTimeout(r, 400));
    expect(closed).toBe(false);
    s.write('GET / HTTP/1.1\r\nHost: x\r\n\r\n');
    const got = await new Promise<string>((resolve) => s.once('data', (d: Buffer) => resolve(d.toString('latin1'))));
    expect(got.startsWith('HTTP/1.1 200')).toBe(true);
  });

  it('timeouts set to 0 turn the detection timer off too', async () => {
    const server = await start({ readHeaderTimeout: 0, readTimeout: 0, idleTimeout: 0 });
    const c = await connect(server.port);
    c.socket.write(PREFACE.subarray(0, 10));
    await new Promise<void>((r) => setTimeout(r, 300));
    expect(c.isClosed()).toBe(false);
    expect(server.connectionCount).toBe(1);
  });
});

/**
 * Sends a whole request and, in the same write, part of a second head: once the first response
 * is back, the server has read the part (it answers after the whole read is processed).
 */
async function headPartlyRead(socket: net.Socket, tail: string): Promise<void> {
  let got = '';
  const answered = new Promise<void>((resolve) => {
    const onData = (d: Buffer): void => {
      got += d.toString('latin1');
      if (got.endsWith('hello')) {
        socket.removeListener('data', onData);
        resolve();
      }
    };
    socket.on('data', onData);
  });
  socket.write(`GET /a HTTP/1.1\r\nHost: x\r\n\r\nGET /slow HTTP/1.1\r\nHost: x\r\n${tail}`);
  await answered;
}

describe('close() and a head still arriving', () => {
  it('a partial head is not a request in flight: with no head timer and no grace limit, close() still ends it within 5 s', async () => {
    const server = await start({ plugins: false, readHeaderTimeout: 0, readTimeout: 0, closeGracePeriod: 0 });
    const c = await connect(server.port);
    await headPartlyRead(c.socket, 'X-Partial: ');
    const t0 = performance.now();
    await server.close();
    await closedWithin(c, 1000, 'the connection to be closed');
    const took = performance.now() - t0;
    expect(took).toBeGreaterThanOrEqual(4900);
    expect(took).toBeLessThan(5000 + SLACK);
  }, 10_000);

  it('a shorter readHeaderTimeout is kept when close() is called', async () => {
    const server = await start({ plugins: false, readHeaderTimeout: 300, closeGracePeriod: 0 });
    const c = await connect(server.port);
    await headPartlyRead(c.socket, '');
    const t0 = performance.now();
    await server.close();
    expect(performance.now() - t0).toBeLessThan(300 + SLACK);
    await closedWithin(c, 1000, 'close');
  });
});

/** Fake timers, and a `performance.now()` that moves with them (the server measures waits with it). */
let skew = 0;
function fakeClock(): void {
  vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout', 'setInterval', 'clearInterval'] });
  const real = performance.now.bind(performance);
  skew = 0;
  vi.spyOn(performance, 'now').mockImplementation(() => real() + skew);
}

/** Moves both clocks by `ms`, a second at a time, so timers fire when they would have. */
function advance(ms: number): void {
  while (ms > 0) {
    const step = Math.min(ms, 1000);
    skew += step;
    vi.advanceTimersByTime(step);
    ms -= step;
  }
}

describe('the defaults', () => {
  afterEach(() => {
    vi.useRealTimers();
    vi.restoreAllMocks();
  });

  it('resolve to a head, body, write, idle and TLS handshake limit', () => {
    const o = resolveServerOptions({}, false);
    expect(o.readHeaderTimeout).toBe(60_000);
    expect(o.readTimeout).toBe(300_000);
    expect(o.writeTimeout).toBe(60_000);
    expect(o.idleTimeout).toBe(75_000);
    expect(o.tlsHandshakeTimeout).toBe(10_000);
    expect(o.closeGracePeriod).toBe(10_000);
    // A shorter readTimeout given alone also bounds the head and the idle wait, as it did.
    const r = resolveServerOptions({ readTimeout: 5000 }, false);
    expect([r.readHeaderTimeout, r.idleTimeout]).toEqual([5000, 5000]);
    // readTimeout: 0 lifts the body limit only.
    const z = resolveServerOptions({ readTimeout: 0 }, false);
    expect([z.readTimeout, z.readHeaderTimeout, z.idleTimeout]).toEqual([0, 60_000, 75_000]);
    // 0 everywhere: no timer at all.
    const off = resolveServerOptions({ readTimeout: 0, readHeaderTimeout: 0, idleTimeout: 0, writeTimeout: 0, tlsHandshakeTimeout: 0 }, false);
    expect(off.timeouts).toBe(false);
    expect(off.tlsHandshakeTimeout).toBe(0);
  });

  for (const plugins of [true, false]) {
    it(`a silent connection is closed by the default head timer (60 s, ${plugins ? 'protocol detection' : 'HTTP/1'})`, async () => {
      const server = await start({ plugins });
      fakeClock();
      const c = await connect(server.port);
      if (plugins) c.socket.write(PREFACE.subarray(0, 10));
      await waitConnections(server, 1);
      await turns();
      advance(59_000);
      await turns();
      expect(c.isClosed()).toBe(false);
      advance(1_100);
      await closedWithin(c, 3000, 'the default head timer to close the connection');
      await waitConnections(server, 0);
    });
  }

  it('a TCP connection that never starts its TLS handshake is dropped by the default (10 s)', async () => {
    const server = await start({ tls: { key: cert.key, cert: cert.cert } });
    fakeClock();
    const c = await connect(server.port);
    await waitConnections(server, 1);
    await turns();
    advance(9_000);
    await turns();
    expect(c.isClosed()).toBe(false);
    advance(1_100);
    await closedWithin(c, 3000, 'the default handshake timer to close the connection');
    await waitConnections(server, 0);
  });

  it('an idle kept-alive connection is closed by the default idle timer (75 s), not before', async () => {
    const server = await start({ plugins: false });
    fakeClock();
    const c = await connect(server.port);
    let got = '';
    c.socket.on('data', (d: Buffer) => (got += d.toString('latin1')));
    c.socket.write('GET / HTTP/1.1\r\nHost: x\r\n\r\n');
    await waitFor(() => got.endsWith('hello'), 3000, 'the response');
    advance(74_000);
    await turns();
    expect(c.isClosed()).toBe(false);
    advance(1_100);
    await closedWithin(c, 3000, 'the default idle timer to close the connection');
    await waitConnections(server, 0);
  });
});
