/**
 * A real Hono app (the `hono` package) served by switchyard's `serveFetch`: routes, a
 * middleware, JSON in and out, `streamSSE`, `c.req.raw.body` read as a stream, over HTTP/1.1
 * (curl and switchyard's client), h2c (curl prior knowledge) and h2 over TLS, and the request
 * signal aborting when curl is killed mid-stream.
 */
import { spawn } from 'node:child_process';
import { Hono } from 'hono';
import { streamSSE } from 'hono/streaming';
import { describe, expect, it } from 'vitest';
import { serveFetch, type FetchEnv, type Kernel, type Server } from '../../kernel/index.js';
import { forceCloseAfter, killAfter } from '../helpers/cleanup.js';
import { cert, h2Kernel } from '../helpers/h2.js';
import { newClient } from '../helpers/client.js';
import { curlEnv, deferred, runCurl } from '../helpers/server.js';

interface Probe {
  aborted: { promise: Promise<unknown>; resolve: (reason: unknown) => void };
  streaming: { promise: Promise<void>; resolve: () => void };
}

function app(probe: Probe): Hono<{ Bindings: FetchEnv }> {
  const a = new Hono<{ Bindings: FetchEnv }>();
  a.use('*', async (c, next) => {
    await next();
    c.header('X-Served-By', 'hono-on-switchyard');
  });
  a.get('/', (c) => c.text('Hello Hono!'));
  a.get('/users/:id', (c) => c.json({ id: c.req.param('id'), q: c.req.query('q') ?? null, proto: c.env.stream.protocol }));
  a.post('/json', async (c) => {
    const body = await c.req.json<{ n: number }>();
    return c.json({ doubled: body.n * 2 }, 201);
  });
  a.post('/count', async (c) => {
    let bytes = 0;
    const reader = c.req.raw.body!.getReader();
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      bytes += value.byteLength;
    }
    return c.text(String(bytes));
  });
  a.get('/sse', (c) =>
    streamSSE(c, async (s) => {
      for (let i = 1; i <= 3; i++) await s.writeSSE({ data: `tick ${i}`, event: 'tick', id: String(i) });
    }),
  );
  a.get('/forever', (c) => {
    c.req.raw.signal.addEventListener('abort', () => probe.aborted.resolve(c.req.raw.signal.reason));
    return streamSSE(c, async (s) => {
      await s.writeSSE({ data: 'first' });
      probe.streaming.resolve();
      await new Promise<void>((resolve) => s.onAbort(() => resolve()));
    });
  });
  return a;
}

async function start(options: { kernel?: Kernel; secure?: boolean } = {}): Promise<{ server: Server; port: number; probe: Probe }> {
  const probe: Probe = { aborted: deferred<unknown>(), streaming: deferred<void>() };
  const a = app(probe);
  const server = forceCloseAfter(
    await serveFetch(a.fetch, {
      host: '127.0.0.1',
      port: 0,
      ...(options.kernel !== undefined ? { kernel: options.kernel } : {}),
      ...(options.secure === true ? { tls: { key: cert.key, cert: cert.cert } } : {}),
    }),
  );
  return { server, port: server.port, probe };
}

const curl = (args: string[], input?: Buffer) => runCurl(['-i', ...args], curlEnv(), input);

describe('Hono on switchyard over HTTP/1.1', () => {
  it('routes, middleware and JSON in and out (curl)', async () => {
    const { port } = await start();
    const base = `http://127.0.0.1:${port}`;
    const hello = (await curl([`${base}/`])).stdout.toString();
    expect(hello).toMatch(/^HTTP\/1\.1 200/);
    expect(hello).toMatch(/x-served-by: hono-on-switchyard/i);
    expect(hello.endsWith('\r\n\r\nHello Hono!')).toBe(true);
    const user = (await curl([`${base}/users/42?q=x`])).stdout.toString();
    expect(JSON.parse(user.slice(user.indexOf('\r\n\r\n') + 4))).toEqual({ id: '42', q: 'x', proto: 'http/1.1' });
    const post = (await curl(['-H', 'Content-Type: application/json', '--data-binary', '{"n":21}', `${base}/json`])).stdout.toString();
    expect(post).toMatch(/^HTTP\/1\.1 201/);
    expect(post.endsWith('{"doubled":42}')).toBe(true);
    expect((await curl([`${base}/nowhere`])).stdout.toString()).toMatch(/^HTTP\/1\.1 404/);
  });

  it("c.req.raw.body read as a stream (a 1 MiB chunked upload), with switchyard's client", async () => {
    const { port } = await start();
    const client = newClient();
    async function* upload(): AsyncGenerator<Uint8Array> {
      for (let i = 0; i < 64; i++) yield new Uint8Array(16384);
    }
    const res = await client.post(`http://127.0.0.1:${port}/count`, null, upload());
    expect([res.status, res.text(), res.headers.get('x-served-by')]).toEqual([200, String(64 * 16384), 'hono-on-switchyard']);
  });

  it('streamSSE events reach the client', async () => {
    const { port } = await start();
    const out = (await curl(['-N', `http://127.0.0.1:${port}/sse`])).stdout.toString();
    expect(out).toMatch(/content-type: text\/event-stream/i);
    expect(out).toContain('event: tick\ndata: tick 1\nid: 1\n\n');
    expect(out).toContain('data: tick 3\nid: 3\n\n');
  });

  it('the request signal aborts when curl is killed mid-stream', async () => {
    const { port, probe } = await start();
    const child = killAfter(spawn('curl', ['-q', '--noproxy', '*', '-sSN', `http://127.0.0.1:${port}/forever`], { env: curlEnv() }));
    child.stdout!.once('data', () => child.kill('SIGKILL'));
    await probe.streaming.promise;
    expect(String(await probe.aborted.promise)).toMatch(/client closed/);
  });
});

describe('Hono on switchyard over HTTP/2', () => {
  it('h2c with prior knowledge (curl): routes, JSON, SSE', async () => {
    const { port } = await start({ kernel: await h2Kernel() });
    const base = `http://127.0.0.1:${port}`;
    const user = (await curl(['--http2-prior-knowledge', `${base}/users/7`])).stdout.toString();
    expect(user).toMatch(/^HTTP\/2 200/);
    expect(user.endsWith('{"id":"7","q":null,"proto":"h2"}')).toBe(true);
    const post = (await curl(['--http2-prior-knowledge', '-H', 'Content-Type: application/json', '--data-binary', '{"n":5}', `${base}/json`])).stdout.toString();
    expect(post.endsWith('{"doubled":10}')).toBe(true);
    expect((await curl(['--http2-prior-knowledge', '-N', `${base}/sse`])).stdout.toString()).toContain('data: tick 3\nid: 3\n\n');
  });

  it('h2 over TLS (curl): hello, a streamed upload read from c.req.raw.body', async () => {
    const { port } = await start({ kernel: await h2Kernel(), secure: true });
    const base = `https://localhost:${port}`;
    const hello = (await curl(['-k', '--http2', `${base}/`])).stdout.toString();
    expect(hello).toMatch(/^HTTP\/2 200/);
    expect(hello.endsWith('Hello Hono!')).toBe(true);
    const count = (await curl(['-k', '--http2', '--data-binary', '@-', `${base}/count`], Buffer.alloc(300000, 1))).stdout.toString();
    expect(count.endsWith('\r\n\r\n300000')).toBe(true);
  });
});
