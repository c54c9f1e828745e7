/**
 * Slow and silent clients against the default server on loopback: a slowloris crowd dripping
 * heads while a normal client's latency is measured, and idle, silent, half-preface and
 * stalled-body connections reclaimed by their timers. Short timeouts; the only pacing is the
 * drip of the slow clients themselves.
 */
import net from 'node:net';
import { describe, expect, it } from 'vitest';
import { Response, serve, type ServeOptions, type Server } from '../../index.js';
import { forceCloseAfter, onCleanup } from '../helpers/cleanup.js';
import { expectServing, rawClient, waitConnections, waitFor } from '../helpers/server.js';
import { dripClient } from './generators.js';

async function start(options: ServeOptions): Promise<Server> {
  return forceCloseAfter(await serve(() => new Response(200, 'ok'), { host: '127.0.0.1', port: 0, onError: () => {}, ...options }));
}

/** Opens `n` connections that stay silent (or send `first`), reading and dropping what arrives. */
async function openMany(port: number, n: number, first = ''): Promise<{ closed: () => number }> {
  let closed = 0;
  const all = await Promise.all(
    Array.from(
      { length: n },
      () =>
        new Promise<net.Socket>((resolve, reject) => {
          const s = net.connect({ host: '127.0.0.1', port });
          s.on('error', () => {});
          s.once('close', () => closed++);
          s.once('connect', () => {
            if (first !== '') s.write(first, 'latin1');
            resolve(s);
          });
          s.once('error', reject);
          s.resume();
        }),
    ),
  );
  onCleanup(() => all.forEach((s) => s.destroy()));
  return { closed: () => closed };
}

function percentile(xs: number[], p: number): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))]!;
}

describe('slowloris', () => {
  it('200 connections dripping a head byte by byte are reclaimed by readHeaderTimeout while a normal client stays fast', async () => {
    // Long enough that the first drips are still open when the 200th connects on a busy machine.
    const HEAD_MS = 2000;
    const server = await start({ readHeaderTimeout: HEAD_MS });
    const port = server.port;
    await expectServing(port);
    await waitConnections(server, 0);
    const head = `GET /slow HTTP/1.1\r\nHost: x\r\nX-Slow: ${'a'.repeat(100)}\r\n\r\n`;
    const drips = Array.from({ length: 200 }, () => dripClient(port, head, 100));
    onCleanup(() => drips.forEach((d) => d.stop()));
    await waitFor(() => server.connectionCount >= 200, 3000, '200 slow connections');
    const t0 = performance.now();

    // A normal client during the drip: keep-alive requests, and a fresh connection every 10th.
    const latencies: number[] = [];
    let c = await rawClient(port);
    for (let i = 0; drips.some((d) => !d.isClosed()) && performance.now() - t0 < HEAD_MS + 3000; i++) {
      if (i % 10 === 9) {
        c.destroy();
        const s = performance.now();
        c = await rawClient(port);
        await c.write('GET /fast HTTP/1.1\r\nHost: x\r\n\r\n');
        expect((await c.response({ timeout: 2000 })).status).toBe(200);
        latencies.push(performance.now() - s);
        continue;
      }
      const s = performance.now();
      await c.write('GET /fast HTTP/1.1\r\nHost: x\r\n\r\n');
      expect((await c.response({ timeout: 2000 })).status).toBe(200);
      latencies.push(performance.now() - s);
    }
    c.destroy();
    const reclaimMs = performance.now() - t0;

    expect(
      drips.every((d) => d.isClosed()),
      'every slow connection closed by the server',
    ).toBe(true);
    expect(reclaimMs).toBeLessThan(HEAD_MS + 2000);
    await waitConnections(server, 0, 2000);
    expect(latencies.length).toBeGreaterThan(20);
    const p99 = percentile(latencies, 99);
    console.log(
      `slowloris: ${latencies.length} normal requests, p50 ${percentile(latencies, 50).toFixed(1)} ms, p99 ${p99.toFixed(1)} ms; slow connections reclaimed after ${reclaimMs.toFixed(0)} ms`,
    );
    expect(p99).toBeLessThan(200);
    await expectServing(port);
  });
});

describe('connections reclaimed by their timers', () => {
  it('100 silent connections are closed by readHeaderTimeout, quietly', async () => {
    const server = await start({ readHeaderTimeout: 300 });
    const t0 = performance.now();
    const conns = await openMany(server.port, 100);
    await waitFor(() => conns.closed() === 100, 3000, 'silent connections closed');
    expect(performance.now() - t0).toBeGreaterThanOrEqual(250);
    await waitConnections(server, 0);
    await expectServing(server.port);
  });

  it('100 connections that stop inside the HTTP/2 preface are closed by readHeaderTimeout', async () => {
    const server = await start({ readHeaderTimeout: 300 });
    const conns = await openMany(server.port, 100, 'PRI * HTTP/2.0\r\n');
    await waitFor(() => conns.closed() === 100, 3000, 'half-preface connections closed');
    await waitConnections(server, 0);
    await expectServing(server.port);
  });

  it('100 idle keep-alive connections are closed by idleTimeout after their response', async () => {
    const server = await start({ idleTimeout: 300 });
    const clients = await Promise.all(Array.from({ length: 100 }, () => rawClient(server.port)));
    await Promise.all(
      clients.map(async (c) => {
        await c.write('GET / HTTP/1.1\r\nHost: x\r\n\r\n');
        expect((await c.response()).status).toBe(200);
      }),
    );
    await waitFor(() => clients.every((c) => c.isClosed), 3000, 'idle connections closed');
    expect(clients.every((c) => c.received.toString('latin1').match(/HTTP\/1\.1 /g)?.length === 1)).toBe(true);
    await waitConnections(server, 0);
  });

  it('100 connections that stall inside a request body get 408 from readTimeout and are closed', async () => {
    const server = await start({ readTimeout: 300 });
    const clients = await Promise.all(Array.from({ length: 100 }, () => rawClient(server.port)));
    await Promise.all(clients.map((c) => c.write('POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n0123456789')));
    await waitFor(() => clients.every((c) => c.isClosed), 3000, 'stalled-body connections closed');
    expect(clients.map((c) => c.firstStatus)).toEqual(Array(100).fill(408));
    await waitConnections(server, 0);
    await expectServing(server.port);
  });
});
