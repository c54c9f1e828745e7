/**
 * The client API against the project's own server on loopback: every verb in both forms
 * (`(url, options)` and `(url, headers, body, options)`), `request(method, url, options)`,
 * `dispatch(request)` with a streamed body, the `client` option, `close(client)` and
 * `isOpen`, at the top level and as `Client` methods.
 */
import { describe, expect, it } from 'vitest';
import * as HTTP from '../../../index.js';
import { AbstractBody, ArgumentError, Client, Request, Response, type CallOptions, type Stream } from '../../../kernel/index.js';
import { deferred, newClient, okResponse, rawServer, readRequests, rejection, reqText, startServer, startStreamServer, text, within, type RawRequest } from '../../helpers/client.js';

/** A server that echoes `METHOD target|x-test header|body` and records what it saw. */
async function echoServer() {
  const seen: { method: string; target: string; headers: HTTP.Headers; body: string }[] = [];
  const s = await startServer((req) => {
    seen.push({ method: req.method, target: req.target, headers: req.headers, body: reqText(req) });
    return new Response(200, `${req.method} ${req.target}|${req.headers.get('X-Test') ?? ''}|${reqText(req)}`);
  });
  return Object.assign(s, { seen });
}

type Verb = (url: string, a?: unknown, b?: unknown, c?: unknown) => Promise<Response>;

const TOP: [string, Verb][] = [
  ['GET', HTTP.get as Verb],
  ['HEAD', HTTP.head as Verb],
  ['QUERY', HTTP.query as Verb],
  ['POST', HTTP.post as Verb],
  ['PUT', HTTP.put as Verb],
  ['PATCH', HTTP.patch as Verb],
  ['DELETE', HTTP.delete as Verb],
  ['OPTIONS', HTTP.options as Verb],
];

const METHOD_NAMES = { GET: 'get', HEAD: 'head', QUERY: 'query', POST: 'post', PUT: 'put', PATCH: 'patch', DELETE: 'delete', OPTIONS: 'options' } as const;

describe('top-level verbs', () => {
  it.each(TOP)('%s (url, options) sends the method with the options applied', async (method, fn) => {
    const s = await echoServer();
    const res = await fn(`${s.origin}/p?a=1`, { headers: { 'X-Test': 'opt' }, query: { b: '2' } });
    expect(res.status).toBe(200);
    expect(s.seen).toHaveLength(1);
    expect(s.seen[0]!.method).toBe(method);
    expect(s.seen[0]!.target).toBe('/p?a=1&b=2');
    expect(s.seen[0]!.headers.get('X-Test')).toBe('opt');
    if (method === 'HEAD') expect(text(res)).toBe('');
    else expect(text(res)).toBe(`${method} /p?a=1&b=2|opt|`);
    expect(res.url).toBe(`${s.origin}/p?a=1&b=2`);
  });

  it.each(TOP)('%s (url, headers, body, options) sends headers and body positionally', async (method, fn) => {
    const s = await echoServer();
    const res = await fn(`${s.origin}/q`, { 'X-Test': 'pos' }, 'the body', { query: [['k', 'v']] });
    expect(res.status).toBe(200);
    expect(s.seen[0]!.method).toBe(method);
    expect(s.seen[0]!.target).toBe('/q?k=v');
    expect(s.seen[0]!.headers.get('X-Test')).toBe('pos');
    expect(s.seen[0]!.body).toBe('the body');
    expect(s.seen[0]!.headers.get('Content-Length')).toBe('8');
  });

  it('(url, headers) with headers as an array of pairs sends them', async () => {
    const s = await echoServer();
    await HTTP.get(`${s.origin}/h`, [['X-Test', 'pairs']]);
    expect(s.seen[0]!.headers.get('X-Test')).toBe('pairs');
  });

  it('(url, headers) with a Headers instance sends them', async () => {
    const s = await echoServer();
    await HTTP.get(`${s.origin}/h`, new HTTP.Headers([['X-Test', 'instance']]));
    expect(s.seen[0]!.headers.get('X-Test')).toBe('instance');
  });

  it('(url, null, body) sends the body with no extra headers', async () => {
    const s = await echoServer();
    const res = await HTTP.post(`${s.origin}/n`, null, 'xyz');
    expect(text(res)).toBe('POST /n||xyz');
  });

  it('request(method, url, options) sends any method, also a URL object', async () => {
    const s = await echoServer();
    const a = await HTTP.request('PUT', `${s.origin}/r`, { body: 'put-body', headers: [['X-Test', 'r']] });
    expect(text(a)).toBe('PUT /r|r|put-body');
    const b = await HTTP.request('PROPFIND', new URL(`${s.origin}/dav`));
    expect(text(b)).toBe('PROPFIND /dav||');
    expect(s.seen.map((x) => x.method)).toEqual(['PUT', 'PROPFIND']);
  });

  it('the Host header is the URL authority and a User-Agent is sent', async () => {
    const s = await echoServer();
    await HTTP.get(`${s.origin}/host`);
    expect(s.seen[0]!.headers.get('Host')).toBe(`127.0.0.1:${s.port}`);
    expect(s.seen[0]!.headers.get('User-Agent')).toMatch(/switchyard/);
  });

  it('rejects bad arguments with ArgumentError before any connection', async () => {
    const s = await echoServer();
    expect(await rejection(HTTP.get('not a url'))).toBeInstanceOf(ArgumentError);
    expect(await rejection(HTTP.get(`ftp://127.0.0.1:${s.port}/`))).toBeInstanceOf(ArgumentError);
    expect(await rejection(HTTP.get(`${s.origin}/`, { connectTimeout: -1 }))).toBeInstanceOf(ArgumentError);
    expect(await rejection(HTTP.get(`${s.origin}/`, { basicauth: ['only-user'] as unknown as [string, string] }))).toBeInstanceOf(ArgumentError);
    expect(s.connections).toBe(0);
  });

  it('a `client` option that is not a Client rejects the returned promise (no synchronous throw)', async () => {
    const s = await echoServer();
    const bad = { client: {} as unknown as Client };
    // Promise-returning helpers report argument errors through the promise, as every other
    // argument error here does; a synchronous throw escapes `.catch()` chains.
    const calls: (() => Promise<unknown>)[] = [
      () => HTTP.get(`${s.origin}/`, bad),
      () => HTTP.request('GET', `${s.origin}/`, bad),
      () => HTTP.dispatch(Object.assign(new Request('GET', '/'), { url: `${s.origin}/` }), bad),
    ];
    for (const call of calls) {
      let p: Promise<unknown> | undefined;
      expect(() => {
        p = call();
      }).not.toThrow();
      expect(await rejection(p!)).toBeInstanceOf(ArgumentError);
    }
  });
});

describe('Client methods', () => {
  it.each(Object.entries(METHOD_NAMES))('client.%s in both forms', async (method, name) => {
    const s = await echoServer();
    const c = newClient();
    const m = (c[name] as Verb).bind(c);
    const a = await m(`${s.origin}/one`, { headers: { 'X-Test': 'o' } });
    expect(a.status).toBe(200);
    const b = await m(`${s.origin}/two`, { 'X-Test': 'p' }, 'B', { query: { z: '9' } });
    expect(b.status).toBe(200);
    expect(s.seen.map((x) => [x.method, x.target, x.headers.get('X-Test'), x.body])).toEqual([
      [method, '/one', 'o', ''],
      [method, '/two?z=9', 'p', 'B'],
    ]);
  });

  it('client.request(method, url, options)', async () => {
    const s = await echoServer();
    const c = newClient();
    const res = await c.request('POST', `${s.origin}/cr`, { body: 'x' });
    expect(text(res)).toBe('POST /cr||x');
  });

  it('client.get(url, headers) with an array of header pairs sends the headers (2-argument headers form)', async () => {
    // The overload (url, headers, body?, options?) accepts two arguments; an array cannot be options.
    const s = await echoServer();
    const c = newClient();
    await c.get(`${s.origin}/h2`, [['X-Test', 'arr']] as unknown as CallOptions);
    await c.get(`${s.origin}/h3`, new HTTP.Headers([['X-Test', 'inst']]));
    expect(s.seen.map((x) => x.headers.get('X-Test'))).toEqual(['arr', 'inst']);
  });
});

describe('the client option, close and isOpen', () => {
  it('top-level helpers use the Client given as `client` (its defaults and its pool)', async () => {
    const s = await echoServer();
    const c = newClient({ defaultHeaders: { 'X-Test': 'from-client' } });
    const res = await HTTP.get(`${s.origin}/c`, { client: c });
    expect(text(res)).toBe('GET /c|from-client|');
    expect(c.transport.connectionCount()).toBe(1);
    expect(c.transport.idleConnectionCount()).toBe(1);
    await HTTP.request('GET', `${s.origin}/c2`, { client: c });
    await HTTP.post(`${s.origin}/c3`, null, 'b', { client: c });
    expect(s.connections).toBe(1);
  });

  it('isOpen is true until close(client); later calls throw ArgumentError saying it is closed', async () => {
    const s = await echoServer();
    const c = newClient();
    expect(HTTP.isOpen(c)).toBe(true);
    expect(c.isOpen).toBe(true);
    await HTTP.get(`${s.origin}/before`, { client: c });
    HTTP.close(c);
    expect(HTTP.isOpen(c)).toBe(false);
    expect(c.isOpen).toBe(false);
    const calls: (() => Promise<unknown>)[] = [
      () => HTTP.get(`${s.origin}/after`, { client: c }),
      () => HTTP.request('GET', `${s.origin}/after`, { client: c }),
      () => HTTP.post(`${s.origin}/after`, null, 'x', { client: c }),
      () => HTTP.dispatch(Object.assign(new Request('GET', '/after'), { url: `${s.origin}/after` }), { client: c }),
      () => c.get(`${s.origin}/after`),
      () => c.request('GET', `${s.origin}/after`),
    ];
    for (const call of calls) {
      let err: unknown;
      try {
        await call();
      } catch (e) {
        err = e;
      }
      expect(err).toBeInstanceOf(ArgumentError);
      expect((err as Error).message).toMatch(/closed/);
    }
    // Closing its own transport closed the idle connection.
    await within(s.closedAt(1), 3000, 'the idle connection to close');
    expect(s.seen.map((x) => x.target)).toEqual(['/before']);
  });

  it('close and isOpen take only a Client', () => {
    expect(() => HTTP.close({} as Client)).toThrow(ArgumentError);
    expect(() => HTTP.isOpen({} as Client)).toThrow(ArgumentError);
  });

  it('a closed default client is replaced: top-level calls without `client` keep working', async () => {
    const s = await echoServer();
    const d = HTTP.getDefaultClient();
    HTTP.close(d);
    const res = await HTTP.get(`${s.origin}/d`);
    expect(res.status).toBe(200);
    expect(HTTP.getDefaultClient()).not.toBe(d);
  });
});

describe('dispatch', () => {
  it('sends a prepared Request and streams the body: the head arrives before the body ends', async () => {
    const release = deferred();
    const s = await startStreamServer(async (stream: Stream) => {
      await stream.startRead();
      await stream.readAll();
      stream.setStatus(200);
      stream.setHeader('X-Kind', 'streamed');
      stream.startWrite();
      await stream.write(Buffer.alloc(8192, 'a'));
      await release.promise;
      await stream.write(Buffer.alloc(8192, 'b'));
      await stream.closeWrite();
    });
    const req = new Request('GET', '/stream', { headers: { 'X-Test': 'd' } });
    req.url = `${s.origin}/stream`;
    const res = await within(HTTP.dispatch(req), 3000, 'the response head');
    expect(res.status).toBe(200);
    expect(res.headers.get('X-Kind')).toBe('streamed');
    expect(res.body).toBeInstanceOf(AbstractBody);
    const body = res.body as AbstractBody;
    const first = new Uint8Array(65536);
    let got = 0;
    while (got < 8192) got += await body.read(first.subarray(got));
    expect(Buffer.from(first.subarray(0, got)).toString()).toBe('a'.repeat(8192));
    release.resolve();
    const rest: Buffer[] = [];
    for await (const c of body) rest.push(Buffer.from(c));
    expect(Buffer.concat(rest).toString()).toBe('b'.repeat(8192));
    body.close();
  });

  it('dispatch accepts `client` and `context`, and a Request with a body', async () => {
    const s = await echoServer();
    const c = newClient();
    const ctx = new HTTP.RequestContext();
    const req = new Request('POST', '/dp?x=1', { body: 'payload' });
    req.url = `${s.origin}/dp?x=1`;
    const res = await HTTP.dispatch(req, { client: c, context: ctx });
    expect(res.body).toBeInstanceOf(AbstractBody);
    const chunks: Uint8Array[] = [];
    for await (const ch of res.body as AbstractBody) chunks.push(ch);
    expect(Buffer.concat(chunks).toString()).toBe('POST /dp?x=1||payload');
    expect(c.transport.connectionCount()).toBe(1);
    expect(res.request).toBe(req);
  });

  it('a Request without url is an ArgumentError', async () => {
    expect(await rejection(HTTP.dispatch(new Request('GET', '/x')))).toBeInstanceOf(ArgumentError);
  });
});

describe('what goes on the wire', () => {
  it('a header value with CR/LF or a bad header name is an ArgumentError and nothing is sent', async () => {
    const got: RawRequest[] = [];
    const raw = await rawServer((sock) => readRequests(sock, (r) => (got.push(r), sock.write(okResponse()))));
    const c = newClient();
    expect(await rejection(c.get(`${raw.origin}/`, { headers: { 'X-Bad': 'a\r\nInjected: 1' } }))).toBeInstanceOf(ArgumentError);
    expect(await rejection(c.get(`${raw.origin}/`, { headers: { 'Bad Name': 'v' } }))).toBeInstanceOf(ArgumentError);
    expect(await rejection(c.request('GET /x HTTP/1.1\r\nX: y\r\n\r\nGET', `${raw.origin}/`))).toBeInstanceOf(ArgumentError);
    expect(await rejection(c.request('GE T', `${raw.origin}/`))).toBeInstanceOf(ArgumentError);
    expect(got).toHaveLength(0);
    await c.get(`${raw.origin}/ok`);
    expect(got.map((r) => r.head.split('\r\n')[0])).toEqual(['GET /ok HTTP/1.1']);
  });

  it('an IPv6 literal URL connects to [::1] and sends a bracketed Host', async () => {
    const got: RawRequest[] = [];
    const raw = await rawServer((sock) => readRequests(sock, (r) => (got.push(r), sock.write(okResponse('v6')))), '::1');
    const res = await newClient().get(`http://[::1]:${raw.port}/six`);
    expect(text(res)).toBe('v6');
    expect(got[0]!.headers.get('host')).toBe(`[::1]:${raw.port}`);
    expect(got[0]!.target).toBe('/six');
  });

  it('a GET without a body sends neither Content-Length nor Transfer-Encoding; a POST without one sends Content-Length: 0', async () => {
    const got: RawRequest[] = [];
    const raw = await rawServer((sock) => readRequests(sock, (r) => (got.push(r), sock.write(okResponse()))));
    const c = newClient();
    await c.get(`${raw.origin}/g`);
    await c.post(`${raw.origin}/p`);
    expect(got[0]!.headers.has('content-length')).toBe(false);
    expect(got[0]!.headers.has('transfer-encoding')).toBe(false);
    expect(got[1]!.headers.get('content-length')).toBe('0');
  });
});
