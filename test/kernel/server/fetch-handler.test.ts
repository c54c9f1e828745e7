/**
 * fetchHandler / serveFetch: fetch-style handlers over real loopback sockets, against curl
 * (HTTP/1.1, h2c prior knowledge, h2 over TLS) and switchyard's client: the web request they
 * get (absolute URL, streamed body, signal), the response streamed out (SSE per chunk), errors
 * (500 and the server's report, 400 for a request that makes no URL), and server hooks.
 */
import { spawn } from 'node:child_process';
import net from 'node:net';
import { describe, expect, it } from 'vitest';
import { createKernel, definePlugin, fetchHandler, listen, serveFetch, toWebResponse, type FetchHandler, type Kernel, type Server } from '../../../kernel/index.js';
import { router as routerPlugin } from '../../../plugins/router/index.js';
import { loggingMiddleware } from '../../../plugins/middleware/index.js';
import { Response as SwResponse } from '../../../kernel/index.js';
import { destroyAfter, forceCloseAfter, killAfter, onCleanup } from '../../helpers/cleanup.js';
import { curlEnv, deferred, exchange, get, rawClient, runCurl } from '../../helpers/server.js';
import { cert, h2Kernel } from '../../helpers/h2.js';
import { newClient } from '../../helpers/client.js';

interface Started {
  server: Server;
  port: number;
  errors: unknown[];
}

async function start(handler: FetchHandler, options: { kernel?: Kernel; secure?: boolean } = {}): Promise<Started> {
  const errors: unknown[] = [];
  const server = forceCloseAfter(
    await serveFetch(handler, {
      host: '127.0.0.1',
      port: 0,
      onError: (e) => void errors.push(e),
      ...(options.kernel !== undefined ? { kernel: options.kernel } : {}),
      ...(options.secure === true ? { tls: { key: cert.key, cert: cert.cert } } : {}),
    }),
  );
  return { server, port: server.port, errors };
}

function curl(args: string[], input?: Buffer) {
  return runCurl(args, curlEnv(), input);
}

/** An app exercising the request: echoes what it saw as JSON. */
const echo: FetchHandler = async (req, env) => {
  const body = req.method === 'GET' || req.method === 'HEAD' ? null : await req.text();
  return Response.json({ method: req.method, url: req.url, ua: req.headers.get('user-agent'), body, protocol: env.stream.protocol, isRequest: req instanceof Request });
};

describe('fetchHandler over HTTP/1.1', () => {
  it('gives an absolute URL, headers and the body, and sends a JSON response (curl)', async () => {
    const { port } = await start(echo);
    const r = await curl(['-H', 'User-Agent: t/1', '--data-binary', 'hello', `http://127.0.0.1:${port}/p/../q?x=1`, '--path-as-is']);
    expect(JSON.parse(r.stdout.toString())).toEqual({ method: 'POST', url: `http://127.0.0.1:${port}/q?x=1`, ua: 't/1', body: 'hello', protocol: 'http/1.1', isRequest: true });
  });

  it("switchyard's client reads status, status text, headers (Set-Cookie apart) and body", async () => {
    const { port } = await start(() => {
      const h = new Headers([
        ['x-a', '1'],
        ['set-cookie', 'a=1'],
        ['set-cookie', 'b=2'],
      ]);
      return new Response('made', { status: 201, statusText: 'Made It', headers: h });
    });
    const res = await newClient().get(`http://127.0.0.1:${port}/`);
    expect([res.status, res.reason, res.headers.get('x-a'), res.headers.getAll('set-cookie'), res.text()]).toEqual([201, 'Made It', '1', ['a=1', 'b=2'], 'made']);
    expect(res.headers.get('content-length')).toBe('4');
  });

  it('writes the fields of a Headers given as init as the platform response has them, and leaves that Headers alone', async () => {
    const kept: { res: Response; given: Headers }[] = [];
    const { port } = await start((req) => {
      const given = new Headers([
        ['x-b', '1'],
        ['set-cookie', 'a=1'],
        ['X-A', '1'],
        ['x-a', '2'],
        ['set-cookie', 'b=2'],
      ]);
      const path = new URL(req.url).pathname;
      if (path === '/typed') given.set('Content-Type', 'application/json');
      const res = new Response(path === '/bytes' ? new Uint8Array([111, 107]) : 'ok', { headers: given });
      // Changed after the response was made, before it is written: the platform's copy would be made then too.
      given.append('x-late', 'yes');
      kept.push({ res, given });
      return res;
    });
    const fields = async (path: string): Promise<string[]> => {
      const { client, res } = await exchange(port, get(path));
      client.destroy();
      return [...res.headers].map(([k, v]) => `${k.toLowerCase()}: ${v}`).filter((f) => !f.startsWith('date:') && !f.startsWith('content-length:'));
    };
    const rest = ['set-cookie: a=1', 'set-cookie: b=2', 'x-a: 1, 2', 'x-b: 1', 'x-late: yes'];
    expect(await fields('/typed')).toEqual(['content-type: application/json', ...rest]);
    // A string body without a type gets the platform's default, in its sorted place.
    expect(await fields('/text')).toEqual(['content-type: text/plain;charset=UTF-8', ...rest]);
    expect(await fields('/bytes')).toEqual(rest);
    for (const { res, given } of kept) {
      res.headers.set('x-after', '1');
      expect(given.has('x-after')).toBe(false);
      expect(res.headers.get('x-late')).toBe('yes');
    }
  });

  it('streams the request body to the app as it arrives (chunked upload)', async () => {
    const first = deferred<string>();
    const { port } = await start(async (req) => {
      const reader = req.body!.getReader();
      let text = '';
      for (;;) {
        const { done, value } = await reader.read();
        if (done) break;
        if (text === '') first.resolve(Buffer.from(value).toString());
        text += Buffer.from(value).toString();
      }
      return new Response(`got ${text.length}`);
    });
    const client = await rawClient(port);
    await client.write(`POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n`);
    // The app has the first chunk while the rest is not sent yet.
    expect(await first.promise).toBe('abc');
    await client.write('2\r\nde\r\n0\r\n\r\n');
    expect((await client.response()).text).toBe('got 5');
  });

  it('sends each chunk of a ReadableStream body as the app produces it (SSE reaches curl per event)', async () => {
    const next = deferred();
    const { port } = await start(() => {
      let n = 0;
      const enc = new TextEncoder();
      const body = new ReadableStream<Uint8Array>({
        async pull(c) {
          n++;
          if (n === 2) await next.promise; // the second event waits until the client saw the first
          if (n === 3) return c.close();
          c.enqueue(enc.encode(`data: ${n}\n\n`));
        },
      });
      return new Response(body, { headers: { 'content-type': 'text/event-stream' } });
    });
    const child = killAfter(spawn('curl', ['-q', '--noproxy', '*', '-sSN', `http://127.0.0.1:${port}/events`], { env: curlEnv() }));
    let out = '';
    const saw = deferred();
    child.stdout!.on('data', (c: Buffer) => {
      out += c.toString();
      if (out.includes('data: 1\n\n')) saw.resolve();
    });
    const exit = new Promise<number | null>((r) => child.once('exit', r));
    await saw.promise;
    expect(out).toBe('data: 1\n\n');
    next.resolve();
    expect(await exit).toBe(0);
    expect(out).toBe('data: 1\n\ndata: 2\n\n');
  });

  it('aborts request.signal and cancels the response stream when the client goes away', async () => {
    const aborted = deferred<unknown>();
    const canceled = deferred<unknown>();
    const started = deferred();
    const { port } = await start((req) => {
      req.signal.addEventListener('abort', () => aborted.resolve(req.signal.reason));
      const body = new ReadableStream<Uint8Array>({
        start(c) {
          c.enqueue(new TextEncoder().encode('data: first\n\n'));
          started.resolve();
        },
        cancel(reason) {
          canceled.resolve(reason);
        },
      });
      return new Response(body);
    });
    const child = killAfter(spawn('curl', ['-q', '--noproxy', '*', '-sSN', `http://127.0.0.1:${port}/`], { env: curlEnv() }));
    child.stdout!.once('data', () => child.kill('SIGKILL'));
    await started.promise;
    expect(String(await aborted.promise)).toMatch(/client closed/);
    expect(await canceled.promise).toBeDefined();
  });

  it('answers 500 and reports a handler that throws or returns something else', async () => {
    const { port, errors } = await start((req) => {
      if (req.url.endsWith('/throw')) throw new Error('boom');
      if (req.url.endsWith('/reject')) return Promise.reject(new Error('async boom'));
      if (req.url.endsWith('/null')) return null as unknown as Response;
      return { not: 'a response' } as unknown as Response;
    });
    for (const path of ['/throw', '/reject', '/null', '/other']) expect((await exchange(port, get(path))).res.status, path).toBe(500);
    expect(errors.map(String)).toEqual([
      expect.stringMatching(/boom/),
      expect.stringMatching(/async boom/),
      expect.stringMatching(/fetch handler returned null, not a web Response/),
      expect.stringMatching(/fetch handler returned a plain object, not a web Response/),
    ]);
  });

  it('answers 400 to a request whose Host does not make a URL, without calling the app', async () => {
    let calls = 0;
    const { port } = await start(() => {
      calls++;
      return new Response('x');
    });
    const r = (await exchange(port, 'GET / HTTP/1.1\r\nHost: user@evil\r\n\r\n')).res;
    expect(r.status).toBe(400);
    expect(calls).toBe(0);
  });

  it('HEAD gets the head a GET would, and no body', async () => {
    const { port } = await start(() => new Response('twelve bytes'));
    const r = await curl(['-I', `http://127.0.0.1:${port}/`]);
    expect(r.stdout.toString()).toMatch(/content-length: 12/i);
  });

  it('server hooks apply: the router answers its routes and falls through to the app; onResponseHead taps see every response', async () => {
    const tags = definePlugin({
      name: 'tagging',
      register(k) {
        k.hooks.server.onResponseHead.tap('tagging', (res) => void res.headers.set('X-Tagged', 'yes'));
      },
    });
    const kernel = createKernel().register(routerPlugin).register(tags);
    await kernel.ready();
    onCleanup(() => kernel.close());
    kernel.route('GET', '/routed', () => new SwResponse(200, 'from the router'));
    const { port } = await start(() => new Response('from the app'), { kernel });
    const a = (await exchange(port, get('/routed'))).res;
    const b = (await exchange(port, get('/other'))).res;
    expect([a.text, a.headers.get('X-Tagged'), b.text, b.headers.get('X-Tagged')]).toEqual(['from the router', 'yes', 'from the app', 'yes']);
  });

  it("the lazy request passes for the platform's: new Request(request), clone(), formData(), headers", async () => {
    const { port } = await start(async (req) => {
      const copy = new Request(req);
      const form = await copy.clone().formData();
      return Response.json({ url: copy.url, method: copy.method, x: copy.headers.get('x-tag'), a: form.get('a'), raw: await copy.text(), tag: Object.prototype.toString.call(req) });
    });
    const r = await curl(['-H', 'X-Tag: t', '--data', 'a=1&b=2', `http://127.0.0.1:${port}/form`]);
    expect(JSON.parse(r.stdout.toString())).toEqual({ url: `http://127.0.0.1:${port}/form`, method: 'POST', x: 't', a: '1', raw: 'a=1&b=2', tag: '[object Request]' });
  });

  it('the access-log middleware wraps a fetch handler: one record per request, with the status sent', async () => {
    const records: object[] = [];
    const log = (o: object): void => void records.push(o);
    const logger = { info: log, warn: log, error: log, debug: log };
    const server = forceCloseAfter(
      await listen(
        loggingMiddleware(
          fetchHandler((req) => new Response('x', { status: req.url.endsWith('/missing') ? 404 : 200 })),
          { logger },
        ),
        { host: '127.0.0.1', port: 0 },
      ),
    );
    await exchange(server.port, get('/ok'));
    await exchange(server.port, get('/missing'));
    expect(records.map((r) => [(r as { target: string }).target, (r as { status: number }).status])).toEqual([
      ['/ok', 200],
      ['/missing', 404],
    ]);
  });

  it("writes the body of a Response subclass that keeps it elsewhere (switchyard's own fetch result, a proxy)", async () => {
    const upstream = await start(() => new Response('from upstream', { headers: { 'x-up': '1' } }));
    const client = newClient();
    const { port } = await start(async (req) => {
      if (req.url.endsWith('/converted')) return toWebResponse(new SwResponse(200, 'converted body'));
      if (req.url.endsWith('/sub')) {
        class Sub extends Response {}
        Object.defineProperty(Sub.prototype, 'body', { get: () => new Response('subclass body').body });
        return new Sub(null);
      }
      return client.fetch(`http://127.0.0.1:${upstream.port}/`);
    });
    expect((await exchange(port, get('/proxy'))).res.text).toBe('from upstream');
    expect((await exchange(port, get('/converted'))).res.text).toBe('converted body');
    expect((await exchange(port, get('/sub'))).res.text).toBe('subclass body');
  });

  it('fetchHandler refuses what is not a function', () => {
    expect(() => fetchHandler(42 as unknown as FetchHandler)).toThrow(/handler must be a function/);
  });
});

describe('fetchHandler over HTTP/2', () => {
  it('h2c with prior knowledge (curl): URL, body and a streamed response', async () => {
    const { port } = await start(echo, { kernel: await h2Kernel() });
    const r = await curl(['--http2-prior-knowledge', '--data-binary', 'h2c body', `http://127.0.0.1:${port}/x?y`]);
    expect(JSON.parse(r.stdout.toString())).toMatchObject({ method: 'POST', url: `http://127.0.0.1:${port}/x?y`, body: 'h2c body', protocol: 'h2' });
  });

  it('h2 over TLS (curl): the URL says https', async () => {
    const { port } = await start(echo, { kernel: await h2Kernel(), secure: true });
    const r = await curl(['-k', '--http2', '--data-binary', 'tls body', `https://localhost:${port}/s`]);
    expect(JSON.parse(r.stdout.toString())).toMatchObject({ url: `https://localhost:${port}/s`, body: 'tls body', protocol: 'h2' });
  });
});

describe('fetchHandler response heads of streamed bodies', () => {
  it('sends the head of a stream whose first chunk is late before that chunk comes', async () => {
    const release = deferred();
    const { port } = await start(
      () =>
        new Response(
          new ReadableStream<Uint8Array>({
            async pull(c) {
              await release.promise;
              c.enqueue(new TextEncoder().encode('late'));
              c.close();
            },
          }),
          { headers: { 'content-type': 'text/event-stream' } },
        ),
    );
    const sock = destroyAfter(net.connect(port, '127.0.0.1'));
    let text = '';
    let waiter: { test: (t: string) => boolean; resolve: () => void } | null = null;
    const until = (test: (t: string) => boolean): Promise<void> => (test(text) ? Promise.resolve() : new Promise((resolve) => (waiter = { test, resolve })));
    sock.on('data', (c: Buffer) => {
      text += c.toString('latin1');
      if (waiter !== null && waiter.test(text)) waiter.resolve();
    });
    sock.write(get('/'));
    // The head arrives while the body's producer is still waiting.
    await until((t) => t.includes('\r\n\r\n'));
    expect(text).toMatch(/^HTTP\/1\.1 200[^]*content-type: text\/event-stream/i);
    expect(text).not.toContain('late');
    release.resolve();
    await until((t) => t.endsWith('0\r\n\r\n'));
    expect(text).toContain('late');
  });
});
