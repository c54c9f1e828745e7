/**
 * `server.inject()` and `kernel.inject()`: one request through the whole server stack with no
 * socket. Plugins (router, fileserver, custom `onRequest`/`onResponseHead` taps), middleware,
 * SSE, request and stream handlers, limits and error answers; what needs a socket (upgrades)
 * rejects with `NeedsSocketError`; and the same requests against the same server listening,
 * through a real client, give the same status, headers (but Date and Connection) and body.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import {
  ArgumentError,
  CanceledError,
  createKernel,
  definePlugin,
  NeedsSocketError,
  ProtocolError,
  Request,
  Response,
  Server,
  Stage,
  type Kernel,
  type RequestHandler,
  type ServerExchange,
  type Stream,
  type StreamHandler,
} from '../../../kernel/index.js';
import { fileserver } from '../../../plugins/fileserver/index.js';
import { handlerTimeout, loggingMiddleware, type AccessRecord, type Logger } from '../../../plugins/middleware/index.js';
import { getParam, router } from '../../../plugins/router/index.js';
import { SSEEvent, sseStream } from '../../../plugins/sse/index.js';
import { websockets } from '../../../plugins/websockets/index.js';
import { request as httpRequest, serve } from '../../../index.js';
import { closeAfter, closeKernelAfter, forceCloseAfter, onCleanup } from '../../helpers/cleanup.js';
import { deferred } from '../../helpers/server.js';

/** A booted kernel with what `setup` registers, closed after the test. */
async function kernelOf(setup: (kernel: Kernel) => unknown = () => undefined): Promise<Kernel> {
  const kernel = createKernel();
  setup(kernel);
  await kernel.ready();
  return closeKernelAfter(kernel);
}

/** A server of `kernel` for `handler` that does not listen; its errors collected. */
function serverOf(handler: RequestHandler, kernel: Kernel | undefined, options: { maxBodyBytes?: number } = {}): { server: Server; errors: unknown[] } {
  const errors: unknown[] = [];
  const server = forceCloseAfter(new Server({ handler, kernel, onError: (e) => errors.push(e), ...options }));
  return { server, errors };
}

describe('inject: plugins and handlers', () => {
  it('router: routes with params, 404 and 405 with Allow, HEAD by the GET route; before listen()', async () => {
    const kernel = await kernelOf((k) => k.register(router));
    kernel.route('GET', '/users/{id:\\d+}', (req) => Response.json({ id: getParam(req, 'id') }));
    kernel.route('POST', '/users', (req) => new Response(201, `created ${req.body instanceof Uint8Array ? Buffer.from(req.body).toString() : ''}`));
    const { server } = serverOf(() => new Response(404, 'fallback'), kernel);
    expect(server.listening).toBe(false);
    const a = await server.inject('/users/42');
    expect([a.status, a.headers.get('Content-Type'), a.json()]).toEqual([200, 'application/json', { id: '42' }]);
    const b = await server.inject({ method: 'POST', url: '/users', body: 'ann' });
    expect([b.status, b.text()]).toEqual([201, 'created ann']);
    const c = await server.inject('/nowhere');
    expect([c.status, c.text()]).toEqual([404, 'fallback']);
    const d = await server.inject({ method: 'DELETE', url: '/users' });
    expect([d.status, d.headers.get('Allow'), d.text()]).toEqual([405, 'POST', '']);
    const h = await server.inject({ method: 'HEAD', url: '/users/7' });
    expect([h.status, h.headers.get('Content-Length'), h.body]).toEqual([200, '10', Buffer.alloc(0)]);
  });

  it('middleware: loggingMiddleware records each request; handlerTimeout answers 503 and cancels the handler', async () => {
    const records: AccessRecord[] = [];
    const keep = (obj: object): void => void records.push(obj as AccessRecord);
    const logger: Logger = { info: keep, warn: keep, error: keep, debug: keep };
    const logged = serverOf(
      loggingMiddleware(() => new Response(201, 'hello'), { logger }),
      undefined,
    ).server;
    const res = await logged.inject('/logged?x=1');
    expect([res.status, res.text()]).toEqual([201, 'hello']);
    expect(records.map((r) => [r.method, r.target, r.status, r.length])).toEqual([['GET', '/logged?x=1', 201, 5]]);

    const canceled = deferred<boolean>();
    const slow: RequestHandler = (req) =>
      new Promise((resolve) => {
        req.ctx.signal.addEventListener('abort', () => {
          canceled.resolve(req.ctx.canceled);
          resolve(new Response(200, 'too late'));
        });
      });
    const timed = serverOf(handlerTimeout(30)(slow), undefined).server;
    const t = await timed.inject('/slow');
    expect([t.status, t.text()]).toEqual([503, 'handler timed out']);
    expect(await canceled.promise).toBe(true);
  });

  it('fileserver: a mount answers from disk ahead of the handler; a missing file falls through', async () => {
    const root = mkdtempSync(join(tmpdir(), 'inject-fs-'));
    onCleanup(() => rmSync(root, { recursive: true, force: true }));
    writeFileSync(join(root, 'hello.txt'), 'hello from disk\n');
    const kernel = await kernelOf((k) => k.register(fileserver, { root, prefix: '/static', etag: 'weak_stat' }));
    const { server } = serverOf(() => new Response(200, 'handler'), kernel);
    const f = await server.inject('/static/hello.txt');
    expect([f.status, f.text(), f.headers.get('Content-Type'), f.headers.get('Content-Length')]).toEqual([200, 'hello from disk\n', 'text/plain; charset=utf-8', '16']);
    const etag = f.headers.get('ETag')!;
    expect(etag).toBeTruthy();
    const again = await server.inject({ url: '/static/hello.txt', headers: { 'If-None-Match': etag } });
    expect([again.status, again.text()]).toEqual([304, '']);
    expect((await server.inject('/static/missing.txt')).text()).toBe('handler');
  });

  it('SSE: a streamed response is collected until it ends, framed chunked as on a connection', async () => {
    const handler: RequestHandler = (req) =>
      sseStream(
        async (s) => {
          await s.write(new SSEEvent('one'));
          await s.write(new SSEEvent('two', { event: 'tick', id: '2' }));
        },
        200,
        { request: req },
      );
    const { server, errors } = serverOf(handler, undefined);
    const res = await server.inject('/events');
    expect(res.status).toBe(200);
    expect(res.headers.get('Content-Type')).toBe('text/event-stream');
    expect(res.headers.get('Transfer-Encoding')).toBe('chunked');
    expect(res.text()).toBe('data: one\n\nevent: tick\nid: 2\ndata: two\n\n');
    expect(errors).toEqual([]);
  });

  it('JSON POST: an object body is sent as JSON with its Content-Type and Content-Length; query and cookies join the request', async () => {
    const seen: Request[] = [];
    const { server } = serverOf((req) => {
      seen.push(req);
      const got = JSON.parse(Buffer.from(req.body as Uint8Array).toString()) as { n: number };
      return Response.json({ doubled: got.n * 2 }, { status: 201 });
    }, undefined);
    const res = await server.inject({ method: 'POST', url: 'http://api.test/calc?a=1', payload: { n: 21 }, query: { b: ['x y', 2] }, cookies: { sid: 'a;b' } });
    expect([res.status, res.json()]).toEqual([201, { doubled: 42 }]);
    const req = seen[0]!;
    expect(req.target).toBe('/calc?a=1&b=x+y&b=2');
    expect((await server.inject({ method: 'POST', url: '/frag?x=1#section', query: { y: 2 }, body: { n: 1 } })).status).toBe(201);
    expect(seen[1]!.target).toBe('/frag?x=1&y=2');
    expect(req.headers.get('Host')).toBe('api.test');
    expect(req.headers.get('Content-Type')).toBe('application/json');
    expect(req.headers.get('Content-Length')).toBe('8');
    expect(req.headers.get('Cookie')).toBe('sid=a%3Bb');
    expect(res.request).toBe(req);
  });

  it('a handler that throws: 500, and onError gets the error and the request', async () => {
    const boom = new Error('boom');
    const { server, errors } = serverOf(() => {
      throw boom;
    }, undefined);
    const res = await server.inject('/boom');
    expect([res.status, res.text()]).toEqual([500, '']);
    expect(errors).toEqual([boom]);
  });

  it('maxBodyBytes: a longer body is answered 413 and the handler never runs, with a length or chunked', async () => {
    let calls = 0;
    const { server } = serverOf(
      () => {
        calls++;
        return new Response(200, 'ok');
      },
      undefined,
      { maxBodyBytes: 8 },
    );
    const big = await server.inject({ method: 'POST', url: '/up', body: '0123456789' });
    expect(big.status).toBe(413);
    expect(big.text()).toContain('exceeds maxBodyBytes (8)');
    const chunked = await server.inject({ method: 'POST', url: '/up', body: '0123456789', headers: { 'Transfer-Encoding': 'chunked' } });
    expect(chunked.status).toBe(413);
    const fits = await server.inject({ method: 'POST', url: '/up', body: '01234567' });
    expect(fits.status).toBe(200);
    expect(calls).toBe(1);
  });

  it('kernel.inject with a stream handler: it reads the body from the stream; peerAddr is the remoteAddress option', async () => {
    const kernel = await kernelOf();
    const handler: StreamHandler = async (s) => {
      const req = await s.startRead();
      const body = Buffer.from(await s.readAll()).toString();
      s.setHeader('X-Peer', String(s.peerAddr()));
      await s.write(`${req.method} ${req.target} ${body} via ${s.protocol}`);
    };
    const res = await kernel.inject({ handler, stream: true }, { method: 'PUT', url: '/items/1', body: 'payload', remoteAddress: '10.1.2.3' });
    expect([res.status, res.text(), res.headers.get('X-Peer')]).toEqual([200, 'PUT /items/1 payload via http/1.1', '10.1.2.3:0']);
    const plain = await kernel.inject((req) => new Response(200, `plain ${req.target}`), '/x');
    expect(plain.text()).toBe('plain /x');
  });

  it('a failing stream handler: within its first 4 KiB a clean 500; past them the inject rejects as a client would lose the connection', async () => {
    const failAfter =
      (bytes: number): StreamHandler =>
      async (s) => {
        await s.startRead();
        s.setHeader('Content-Length', '100000');
        await s.write(Buffer.alloc(bytes, 'a'));
        throw new Error(`failed after ${bytes}`);
      };
    const kernel = await kernelOf();
    const errors: unknown[] = [];
    const early = await kernel.inject({ handler: failAfter(100), stream: true, onError: (e) => errors.push(e) }, '/early');
    expect([early.status, early.text()]).toEqual([500, '']);
    const late = kernel.inject({ handler: failAfter(10_000), stream: true, onError: (e) => errors.push(e) }, '/late');
    await expect(late).rejects.toBeInstanceOf(ProtocolError);
    await expect(late).rejects.toThrow(/abandoned the response.*failed after 10000/);
    expect(errors.map((e) => (e as Error).message)).toEqual(['failed after 100', 'failed after 10000']);
  });

  it('trailers of a chunked response reach the Response', async () => {
    const kernel = await kernelOf();
    const res = await kernel.inject(
      {
        handler: async (s: Stream) => {
          await s.startRead();
          await s.write('part one,');
          s.addTrailer('X-Checksum', 'abc');
          await s.write(' part two');
        },
        stream: true,
      },
      '/t',
    );
    expect([res.text(), res.headers.get('Transfer-Encoding'), res.trailers.get('X-Checksum')]).toEqual(['part one, part two', 'chunked', 'abc']);
  });

  it("a custom plugin's onRequest and onResponseHead taps run: setHeader, answering, changing the head", async () => {
    const exchanges: ServerExchange[] = [];
    const plugin = definePlugin({
      name: 'inject-taps',
      register(k) {
        k.hooks.server.onRequest.tap({ name: 'inject-taps', stage: Stage.FIRST }, (req, ex) => {
          exchanges.push(ex);
          ex.setHeader('X-Request-Id', 'r1');
          if (req.target === '/tap') return new Response(202, 'from the tap');
        });
        k.hooks.server.onResponseHead.tap('inject-taps', (res, req) => {
          res.headers.set('X-Seen', `${req.method} ${res.status}`);
        });
      },
    });
    const kernel = await kernelOf((k) => k.register(plugin));
    const { server } = serverOf(() => new Response(200, 'handler'), kernel);
    const tapped = await server.inject('/tap');
    expect([tapped.status, tapped.text(), tapped.headers.get('X-Request-Id'), tapped.headers.get('X-Seen')]).toEqual([202, 'from the tap', 'r1', 'GET 202']);
    const handled = await server.inject({ method: 'POST', url: '/h' });
    expect([handled.status, handled.text(), handled.headers.get('X-Request-Id'), handled.headers.get('X-Seen')]).toEqual([200, 'handler', 'r1', 'POST 200']);
    expect(exchanges.map((e) => [e.protocol, String(e.peerAddr())])).toEqual([
      ['http/1.1', '127.0.0.1:0'],
      ['http/1.1', '127.0.0.1:0'],
    ]);
  });
});

describe('inject: what needs a socket, and bad input', () => {
  it('an Upgrade request offered to onUpgrade taps (websockets) rejects with NeedsSocketError, the tap never called', async () => {
    let offered = 0;
    const counter = definePlugin({
      name: 'upgrade-counter',
      register(k) {
        k.hooks.server.onUpgrade.tapPromise('upgrade-counter', async () => {
          offered++;
        });
      },
    });
    const kernel = await kernelOf((k) => k.register(websockets).register(counter));
    const { server } = serverOf(() => new Response(200, 'plain'), kernel);
    const ws = server.inject({ url: '/ws', headers: { Connection: 'Upgrade', Upgrade: 'websocket', 'Sec-WebSocket-Version': '13', 'Sec-WebSocket-Key': 'dGhlIHNhbXBsZSBub25jZQ==' } });
    await expect(ws).rejects.toBeInstanceOf(NeedsSocketError);
    await expect(ws).rejects.toMatchObject({ code: 'SWY_ERR_NEEDS_SOCKET', feature: 'upgrade', message: expect.stringMatching(/websocket.*listening server/) });
    expect(offered).toBe(0);
    // The same server answers ordinary requests.
    expect((await server.inject('/ws')).text()).toBe('plain');
  });

  it("a stream handler's stream.upgrade() rejects the inject with NeedsSocketError", async () => {
    const errors: unknown[] = [];
    const server = forceCloseAfter(
      new Server({
        handler: (s: Stream) => {
          s.upgrade();
        },
        stream: true,
        onError: (e) => errors.push(e),
      }),
    );
    const p = server.inject({ url: '/raw', headers: { Connection: 'Upgrade', Upgrade: 'x-custom' } });
    await expect(p).rejects.toBeInstanceOf(NeedsSocketError);
    await expect(p).rejects.toMatchObject({ feature: 'stream.upgrade()' });
  });

  it('a head the server refuses gets the answer a connection gives: 431 past maxHeaderBytes, 501 for an unknown transfer coding', async () => {
    let calls = 0;
    const server = forceCloseAfter(
      new Server({
        handler: () => {
          calls++;
          return new Response(200, 'ok');
        },
        maxHeaderBytes: 512,
      }),
    );
    const big = await server.inject({ url: '/', headers: { 'X-Big': 'x'.repeat(600) } });
    expect([big.status, big.headers.get('Content-Type')]).toEqual([431, 'text/plain; charset=utf-8']);
    expect(big.text()).toMatch(/maxHeaderBytes/);
    const coded = await server.inject({ method: 'POST', url: '/', body: 'x', headers: { 'Transfer-Encoding': 'gzip, chunked' } });
    expect(coded.status).toBe(501);
    expect(calls).toBe(0);
  });

  it('unknown option keys and values a client could not send are ArgumentErrors naming them', async () => {
    const { server } = serverOf(() => new Response(200, 'ok'), undefined);
    await expect(server.inject({ url: '/', payolad: 'x' } as never)).rejects.toThrow(/payolad.*payload/);
    await expect(server.inject({ url: '/', payolad: 'x' } as never)).rejects.toBeInstanceOf(ArgumentError);
    await expect(server.inject({ url: '/', body: 'a', payload: 'b' })).rejects.toThrow(/not both/);
    await expect(server.inject({ url: 'ftp://x/' })).rejects.toThrow(/http: or https:/);
    await expect(server.inject({ url: 'relative' })).rejects.toThrow(/url must be/);
    await expect(server.inject({ url: '/', method: 'GE T' })).rejects.toThrow(/method/);
    await expect(server.inject({ url: '/a b' })).rejects.toThrow(ArgumentError);
    await expect(server.inject({ url: '/', headers: { 'X-Bad': 'a\r\nb' } })).rejects.toThrow(/X-Bad/);
    await expect(server.inject({ url: '/', remoteAddress: 'nowhere' })).rejects.toThrow(/remoteAddress/);
    await expect(server.inject({ url: '/', cookies: { 'a b': 'x' } })).rejects.toThrow(/cookie name/);
    await expect(server.inject({ url: '/', query: { a: {} as never } })).rejects.toThrow(/query\.a/);
    const kernel = await kernelOf();
    await expect(kernel.inject(42 as never, '/')).rejects.toThrow(/target must be/);
    await expect(kernel.inject({ handler: () => new Response(200), maxBodyByte: 1 } as never, '/')).rejects.toThrow(/maxBodyByte.*maxBodyBytes/);
  });
});

describe('inject: the server lifecycle', () => {
  it('inject before listen(), while listening, and a rejection after close()', async () => {
    const server = forceCloseAfter(new Server({ handler: (req: Request) => new Response(200, req.target) }));
    expect((await server.inject('/before')).text()).toBe('/before');
    await server.listen();
    expect((await server.inject('/during')).text()).toBe('/during');
    await server.close();
    await expect(server.inject('/after')).rejects.toThrow(/closing or closed/);
  });

  it('kernel.inject keeps the server made for a handler, boots an idle kernel, and refuses once the kernel closes', async () => {
    const kernel = createKernel();
    let calls = 0;
    const handler: RequestHandler = () => new Response(200, `call ${++calls}`);
    expect(kernel.state).toBe('idle');
    expect((await kernel.inject(handler, '/')).text()).toBe('call 1');
    expect(kernel.state).toBe('ready');
    expect((await kernel.inject(handler, '/')).text()).toBe('call 2');
    await kernel.close();
    await expect(kernel.inject(handler, '/')).rejects.toThrow(/kernel is closed/);
  });

  it('the server HTTP.serve returns (default kernel, listening) injects too, without a connection', async () => {
    const server = forceCloseAfter(await serve((req) => new Response(200, `served ${req.target}`), { host: '127.0.0.1', port: 0 }));
    const res = await server.inject('/top?level=1');
    expect([res.status, res.text()]).toEqual([200, 'served /top?level=1']);
    expect(server.connectionCount).toBe(0);
  });

  it('forceClose() rejects an exchange in flight with CanceledError and cancels its context; close() waits for one', async () => {
    const started = deferred();
    const release = deferred();
    let ctxCanceled = false;
    const server = forceCloseAfter(
      new Server({
        handler: async (req: Request) => {
          started.resolve();
          req.ctx.signal.addEventListener('abort', () => (ctxCanceled = true));
          await release.promise;
          return new Response(200, 'late');
        },
        onError: () => {},
      }),
    );
    const p = server.inject('/held');
    await started.promise;
    expect(server.connectionCount).toBe(1);
    await server.forceClose();
    await expect(p).rejects.toBeInstanceOf(CanceledError);
    expect(ctxCanceled).toBe(true);
    release.resolve();

    const started2 = deferred();
    const release2 = deferred();
    const graceful = forceCloseAfter(
      new Server({
        handler: async () => {
          started2.resolve();
          await release2.promise;
          return new Response(200, 'finished');
        },
      }),
    );
    const q = graceful.inject('/slow');
    await started2.promise;
    let closed = false;
    const closing = graceful.close().then(() => (closed = true));
    await Promise.resolve();
    expect(closed).toBe(false);
    release2.resolve();
    expect((await q).text()).toBe('finished');
    await closing;
  });
  it('an endless SSE response ends at the grace period of close(): the inject resolves with the events sent', async () => {
    const sent = deferred();
    const server = forceCloseAfter(
      new Server({
        handler: (req: Request) =>
          sseStream(
            async (s) => {
              await s.write(new SSEEvent('first'));
              sent.resolve();
              // Waits for the end of the stream (the server's close), as a live feed does.
              await new Promise<void>((resolve) => s.ctx.signal.addEventListener('abort', () => resolve()));
            },
            200,
            { request: req },
          ),
        closeGracePeriod: 20,
        onError: () => {},
      }),
    );
    const p = server.inject('/feed');
    await sent.promise;
    await server.close();
    const res = await p;
    expect([res.status, res.text()]).toEqual([200, 'data: first\n\n']);
  });
});

describe('inject matches a real socket exchange', () => {
  it('same status, headers (but Date and Connection) and body as HTTP.request against the listening server', async () => {
    const kernel = await kernelOf((k) => k.register(router));
    kernel.route('GET', '/users/{id}', (req) => Response.json({ id: getParam(req, 'id'), q: req.target }, { headers: { 'X-Route': 'users' } }));
    kernel.route('POST', '/echo', (req) => new Response(200, Buffer.from(req.body as Uint8Array), { headers: { 'Content-Type': req.headers.get('Content-Type') ?? 'none' } }));
    kernel.route('GET', '/stream', () => sseStream(async (s) => s.write(new SSEEvent('x'))));
    const server = forceCloseAfter(await kernel.serve(() => new Response(404, 'no such thing'), { port: 0 }));
    const client = closeAfter(kernel.client());
    const base = `http://127.0.0.1:${server.port}`;
    const cases: { method: string; path: string; body?: string; headers?: Record<string, string> }[] = [
      { method: 'GET', path: '/users/7?full=1' },
      { method: 'POST', path: '/echo', body: '{"a":1}', headers: { 'Content-Type': 'application/json' } },
      { method: 'HEAD', path: '/users/7' },
      { method: 'GET', path: '/stream' },
      { method: 'GET', path: '/missing' },
      { method: 'PATCH', path: '/echo', body: 'x' },
    ];
    const strip = (h: Iterable<[string, string]>): [string, string][] => [...h].filter(([k]) => !/^(date|connection|keep-alive)$/i.test(k)).map(([k, v]) => [k.toLowerCase(), v]);
    for (const c of cases) {
      const real = await httpRequest(c.method, base + c.path, { client, headers: c.headers, body: c.body, statusException: false });
      const injected = await server.inject({ method: c.method, url: c.path, headers: c.headers, body: c.body });
      expect({ what: `${c.method} ${c.path}`, status: injected.status, reason: injected.reason, headers: strip(injected.headers), body: injected.text() }).toEqual({
        what: `${c.method} ${c.path}`,
        status: real.status,
        reason: real.reason,
        headers: strip(real.headers),
        body: real.text(),
      });
      expect(injected.headers.has('Date')).toBe(true);
    }
  });
});
