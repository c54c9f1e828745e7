/**
 * A Router on real servers: `serve(router)` (request handlers) and `listen(router)` (stream
 * handlers), the `router` plugin on both kinds of server, curl as a real peer, and bad
 * targets that must get a status, never a crash.
 */
import { describe, expect, it } from 'vitest';
import { createKernel, Response, type Kernel, type Request, type RequestHandler, type Stream, type StreamHandler } from '../../../kernel/index.js';
import { getParam, getParams, getRoute, router as routerPlugin, Router, type RouterPluginOptions } from '../../../plugins/router/index.js';
import { curlEnv, exchange, get, onCleanup, rawClient, runCurl, startServer, startStreamServer } from '../../helpers/server.js';

/** Runs curl; the child is killed after the test if still running. */
async function curl(args: string[]) {
  return runCurl(args, curlEnv());
}

/** Echoes the route and variables a request handler sees. */
const echo: RequestHandler = (req: Request) => new Response(200, `${getRoute(req)} ${JSON.stringify(getParams(req) ?? null)}`);

async function bootKernel(options: RouterPluginOptions = {}): Promise<Kernel> {
  const kernel = createKernel().register(routerPlugin, options);
  await kernel.ready();
  onCleanup(() => kernel.close());
  return kernel;
}

describe('serve(router): a Router as a request handler', () => {
  it('routes, stores the match on the request, and answers 404 and 405 (with Allow) with empty bodies', async () => {
    const r = new Router().get('/users/{id:\\d+}', echo).post('/users', echo).get('/static/**', echo);
    const { port, errors } = await startServer(r);
    expect((await exchange(port, get('/users/42'))).res.text).toBe('/users/{id:\\d+} {"id":"42"}');
    expect((await exchange(port, get('/static/css/site.css?v=3'))).res.text).toBe('/static/** {"**":"css/site.css"}');
    const nf = (await exchange(port, get('/users/abc'))).res;
    expect([nf.status, nf.headers.get('Content-Length'), nf.text]).toEqual([404, '0', '']);
    const mna = (await exchange(port, 'DELETE /users HTTP/1.1\r\nHost: x\r\n\r\n')).res;
    expect([mna.status, mna.headers.get('Allow'), mna.text]).toEqual([405, 'POST', '']);
    expect(errors).toEqual([]);
  });

  it('HEAD is answered by the GET route, without a body but with its length', async () => {
    const r = new Router().get('/doc', () => new Response(200, 'twelve bytes'));
    const { port } = await startServer(r);
    const { res } = await exchange(port, 'HEAD /doc HTTP/1.1\r\nHost: x\r\n\r\n', 'HEAD');
    expect([res.status, res.headers.get('Content-Length'), res.body.length]).toEqual([200, '12', 0]);
  });

  it('a handler that throws is a 500 and the server keeps serving', async () => {
    const r = new Router()
      .get('/boom', () => {
        throw new Error('boom');
      })
      .get('/ok', () => new Response(200, 'ok'));
    const { port, errors } = await startServer(r);
    expect((await exchange(port, get('/boom'))).res.status).toBe(500);
    expect((await exchange(port, get('/ok'))).res.text).toBe('ok');
    expect(errors).toHaveLength(1);
  });

  it('one connection, many routes: keep-alive requests each get their own match', async () => {
    const r = new Router().get('/a/{x}', echo).get('/b/{y}', echo);
    const { port } = await startServer(r);
    const c = await rawClient(port);
    await c.write(get('/a/1') + get('/b/2') + get('/a/3'));
    const rs = await c.responses(3);
    expect(rs.map((x) => x.text)).toEqual(['/a/{x} {"x":"1"}', '/b/{y} {"y":"2"}', '/a/{x} {"x":"3"}']);
  });
});

describe('listen(router): a Router as a stream handler', () => {
  it('runs stream handlers with the match on stream.request; 404/405 are written on the stream', async () => {
    const upload: StreamHandler = async (stream: Stream) => {
      const body = Buffer.from(await stream.readAll()).toString();
      stream.setHeader('Content-Type', 'text/plain');
      await stream.write(`${getRoute(stream.request)} ${getParam(stream.request, 'name')} ${body}`);
    };
    const r = new Router<StreamHandler>().put('/files/{name}', upload);
    const { port, errors } = await startStreamServer(r);
    const put = (await exchange(port, 'PUT /files/a%20b HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n\r\nhello')).res;
    expect([put.status, put.text]).toEqual([200, '/files/{name} a b hello']);
    const nf = (await exchange(port, get('/nope'))).res;
    expect([nf.status, nf.headers.get('Content-Length'), nf.text]).toEqual([404, '0', '']);
    const mna = (await exchange(port, get('/files/x'))).res;
    expect([mna.status, mna.headers.get('Allow')]).toEqual([405, 'PUT']);
    expect(errors).toEqual([]);
  });

  it('custom notFound and methodNotAllowed stream handlers; Allow is already set for the 405 one', async () => {
    const r = new Router<StreamHandler>({
      notFound: async (s) => {
        s.setStatus(404);
        await s.write('custom 404');
      },
      methodNotAllowed: async (s) => {
        s.setStatus(405);
        await s.write('custom 405');
      },
    }).get('/x', async (s) => s.write('x'));
    const { port } = await startStreamServer(r);
    expect((await exchange(port, get('/y'))).res.text).toBe('custom 404');
    const mna = (await exchange(port, 'POST /x HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n\r\n')).res;
    expect([mna.status, mna.text, mna.headers.get('Allow')]).toEqual([405, 'custom 405', 'GET, HEAD']);
  });

  it('the same Router instance serves a request server and a stream server', async () => {
    // Handlers that work with either argument: what a Router itself is.
    const both = ((x: Request | Stream) => ('write' in x ? x.write('stream') : new Response(200, 'request'))) as unknown as RequestHandler;
    const r = new Router().get('/', both);
    const a = await startServer(r);
    const b = await startStreamServer(r as unknown as StreamHandler);
    expect((await exchange(a.port, get('/'))).res.text).toBe('request');
    expect((await exchange(b.port, get('/'))).res.text).toBe('stream');
  });
});

describe('the router plugin', () => {
  it('kernel.route answers matched paths; others go to the server handler; a method mismatch is 405', async () => {
    const kernel = await bootKernel();
    kernel.route('GET', '/hello/{name}', (req) => new Response(200, `hello ${getParam(req, 'name')}`));
    kernel.route('/any', () => new Response(200, 'any'));
    kernel.router.post('/form', (req) => new Response(200, `got ${Buffer.from(req.body as Uint8Array).toString()}`));
    const { port } = await startServer(() => new Response(200, 'fallback'), { kernel });
    expect((await exchange(port, get('/hello/world'))).res.text).toBe('hello world');
    expect((await exchange(port, 'PATCH /any HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n\r\n')).res.text).toBe('any');
    expect((await exchange(port, 'POST /form HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\n\r\nabc')).res.text).toBe('got abc');
    expect((await exchange(port, get('/elsewhere'))).res.text).toBe('fallback');
    const mna = (await exchange(port, 'POST /hello/x HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n\r\n')).res;
    expect([mna.status, mna.headers.get('Allow')]).toEqual([405, 'GET, HEAD']);
  });

  it('methodNotAllowed: false and notFound options', async () => {
    const kernel = await bootKernel({ methodNotAllowed: false, notFound: () => new Response(404, 'plugin 404') });
    kernel.route('GET', '/only-get', () => new Response(200, 'get'));
    const { port } = await startServer(() => new Response(200, 'fallback'), { kernel });
    expect((await exchange(port, 'PUT /only-get HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n\r\n')).res.text).toBe('fallback');
    expect((await exchange(port, get('/missing'))).res.text).toBe('plugin 404');
  });

  it('async route handlers and plugin middleware', async () => {
    const seen: string[] = [];
    const kernel = await bootKernel({
      middleware: (h) => (req) => {
        seen.push(getRoute(req)!);
        return h(req);
      },
    });
    kernel.route('GET', '/slow/{n}', async (req) => {
      await new Promise((r) => setImmediate(r));
      return new Response(200, `n=${getParam(req, 'n')}`);
    });
    const { port } = await startServer(() => new Response(500), { kernel });
    expect((await exchange(port, get('/slow/7'))).res.text).toBe('n=7');
    expect(seen).toEqual(['/slow/{n}']);
  });

  it('on a stream server, routes get a Request with the body read; past maxBodyBytes it is 413', async () => {
    const kernel = await bootKernel({ maxBodyBytes: 10 });
    kernel.route('POST', '/echo', (req) => new Response(200, Buffer.from(req.body as Uint8Array)));
    const { port } = await startStreamServer(async (s) => s.write('stream fallback'), { kernel });
    expect((await exchange(port, 'POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 4\r\n\r\nbody')).res.text).toBe('body');
    expect((await exchange(port, get('/other'))).res.text).toBe('stream fallback');
    const big = (await exchange(port, 'POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 20\r\n\r\n01234567890123456789')).res;
    expect(big.status).toBe(413);
  });

  it('a route handler that throws or returns no Response is a 500, never a fall-through', async () => {
    const kernel = await bootKernel();
    kernel.route('GET', '/throws', () => {
      throw new Error('route failed');
    });
    kernel.route('GET', '/nothing', (() => undefined) as unknown as RequestHandler);
    kernel.route('GET', '/later', (async () => undefined) as unknown as RequestHandler);
    const { port, errors } = await startServer(() => new Response(200, 'fallback'), { kernel });
    for (const p of ['/throws', '/nothing', '/later']) expect((await exchange(port, get(p))).res.status).toBe(500);
    expect(errors).toHaveLength(3);
    expect((await exchange(port, get('/other'))).res.text).toBe('fallback');
  });

  it('kernel.route after ready() works (the router is mutable; the decoration is not)', async () => {
    const kernel = await bootKernel();
    const { port } = await startServer(() => new Response(404), { kernel });
    expect((await exchange(port, get('/late'))).res.status).toBe(404);
    kernel.route('GET', '/late', () => new Response(200, 'late'));
    expect((await exchange(port, get('/late'))).res.text).toBe('late');
  });
});

describe('curl against a Router', () => {
  it('percent-encoded segments, HEAD (-I), a 405 with Allow, and a POST', async () => {
    const r = new Router()
      .get('/u/{name}', (req) => new Response(200, `name=${getParam(req, 'name')}`))
      .post('/u/{name}', (req) => new Response(201, `created ${getParam(req, 'name')} ${Buffer.from(req.body as Uint8Array).toString()}`))
      .get('/d/{id:\\d+}', () => new Response(200, 'digits'));
    const { port } = await startServer(r);
    const base = `http://127.0.0.1:${port}`;
    const a = await curl([`${base}/u/J%C3%BCrgen%2Fx`]);
    expect(a.stdout.toString()).toBe('name=Jürgen/x');
    const h = await curl(['-I', `${base}/u/x`]);
    expect(h.stdout.toString()).toMatch(/^HTTP\/1\.1 200/);
    expect(h.stdout.toString()).toMatch(/content-length: 6/i);
    const m = await curl(['-i', '-X', 'DELETE', `${base}/u/x`]);
    expect(m.stdout.toString()).toMatch(/^HTTP\/1\.1 405/);
    expect(m.stdout.toString()).toMatch(/allow: GET, HEAD, POST/i);
    const p = await curl(['-d', 'body', `${base}/u/new`, '-w', ' %{http_code}']);
    expect(p.stdout.toString()).toBe('created new body 201');
    const n = await curl(['-o', '/dev/null', '-w', '%{http_code}', `${base}/d/12x`]);
    expect(n.stdout.toString()).toBe('404');
  });
});

describe('bad targets', () => {
  it('odd and hostile targets get 404 (or their route), and the server keeps serving', async () => {
    const r = new Router()
      .get('/users/{id}', echo)
      .get('/files/**', echo)
      .get('/', () => new Response(200, 'root'));
    const { port, errors } = await startServer(r);
    const cases: [string, number][] = [
      ['OPTIONS * HTTP/1.1', 404],
      ['GET http://example.com/users/5 HTTP/1.1', 200],
      ['GET /users/%zz HTTP/1.1', 200],
      ['GET /users/%00 HTTP/1.1', 200],
      ['GET /users/%C0%AF HTTP/1.1', 200],
      ['GET //users/1 HTTP/1.1', 404],
      ['GET /users//1 HTTP/1.1', 404],
      ['GET /users/1/ HTTP/1.1', 404],
      ['GET /users/. HTTP/1.1', 200],
      ['GET /files/../../etc/passwd HTTP/1.1', 200], // the router does not resolve dot segments; files/** is what matched
      [`GET /${'a/'.repeat(5000)} HTTP/1.1`, 404],
      [`GET /users/${'9'.repeat(20000)} HTTP/1.1`, 200],
      ['GET /%2e%2e/%2e%2e HTTP/1.1', 404],
      ['GET /? HTTP/1.1', 200],
    ];
    for (const [line, status] of cases) {
      const { res } = await exchange(port, `${line}\r\nHost: x\r\n\r\n`);
      expect([line.slice(0, 60), res.status]).toEqual([line.slice(0, 60), status]);
    }
    expect((await exchange(port, get('/users/1'))).res.text).toBe('/users/{id} {"id":"1"}');
    expect(errors).toEqual([]);
  });
});
