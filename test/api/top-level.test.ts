/**
 * The top-level API, `import * as HTTP from 'switchyard'`: every name the README's mapping
 * table lists as available today exists with the right kind (class, function, value), the
 * members it names exist on those classes, and the default stack behind the top-level helpers
 * (presets.defaults: redirects and decompression) works end to end on loopback; the `client`
 * option and `close(client)` / `isOpen(client)`.
 */
import { gzipSync } from 'node:zlib';
import { afterEach, describe, expect, it } from 'vitest';
import * as HTTP from '../../index.js';
import { decompression, redirects } from '../../plugins/index.js';

// ---- cleanup -----------------------------------------------------------------------------------

const servers = new Set<HTTP.Server>();
const clients = new Set<HTTP.Client>();

afterEach(async () => {
  for (const c of clients) c.close();
  clients.clear();
  const all = [...servers];
  servers.clear();
  await Promise.all(all.map((s) => s.forceClose()));
});

async function serveHere(handler: HTTP.RequestHandler): Promise<{ server: HTTP.Server; origin: string }> {
  const server = await HTTP.serve(handler, { host: '127.0.0.1', port: 0 });
  servers.add(server);
  return { server, origin: `http://127.0.0.1:${server.port}` };
}

async function rejection(p: Promise<unknown>): Promise<Error> {
  try {
    await p;
  } catch (err) {
    return err as Error;
  }
  throw new Error('expected the promise to reject, it resolved');
}

// ---- kinds -------------------------------------------------------------------------------------

const api = HTTP as unknown as Record<string, unknown>;

function isClass(x: unknown): boolean {
  return typeof x === 'function' && /^class[\s{]/.test(Function.prototype.toString.call(x));
}

/** Classes the mapping table names (kernel, server, client, trace). */
const CLASSES = [
  'Request',
  'Response',
  'Headers',
  'RequestContext',
  'AbstractBody',
  'CallbackBody',
  'BytesBody',
  'URI',
  'Server',
  'Stream',
  'PeerAddr',
  'Client',
  'Transport',
  'ClientEvent',
  'RequestEvent',
  'ResponseHeadEvent',
  'RetryEvent',
  'RetrySkippedEvent',
  'RedirectEvent',
  'DoneEvent',
  'Kernel',
  'ChunkedDecoder',
  'IncomingBody',
  'ByteReader',
] as const;

/** Error classes of the table. */
const ERRORS = [
  'HTTPError',
  'ParseError',
  'ProtocolError',
  'CanceledError',
  'StatusError',
  'TooManyRedirectsError',
  'ConnectError',
  'DNSError',
  'TLSHandshakeError',
  'TLSTransportError',
  'AddressInUseError',
  'RequestRetryError',
  'ArgumentError',
  'ResponseTooLargeError',
  'DecompressionLimitError',
  'TimeoutError',
  'HTTPTimeoutError',
  'PluginError',
] as const;

/** Plain functions of the table (never classes). */
const FUNCTIONS = [
  'getRequestContext',
  'header',
  'headers',
  'hasHeader',
  'headerContains',
  'setHeader',
  'defaultHeader',
  'appendHeader',
  'removeHeader',
  'mkHeaders',
  'canonicalHeaderKey',
  'setDeadline',
  'cancel',
  'canceled',
  'expired',
  'bodyRead',
  'bodyClose',
  'bodyClosed',
  'trailers',
  'queryParams',
  'queryParamPairs',
  'readRequest',
  'writeRequest',
  'writeResponse',
  'readResponse',
  'serve',
  'listen',
  'streamHandler',
  'port',
  'request',
  'get',
  'head',
  'query',
  'post',
  'put',
  'patch',
  'delete',
  'del',
  'options',
  'open',
  'dispatch',
  'close',
  'isOpen',
  'createKernel',
  'definePlugin',
  'tapErrorInfo',
  'selfSignedCertificate',
  'getDefaultKernel',
  'getDefaultClient',
] as const;

describe('names of the mapping table', () => {
  it.each(CLASSES)('%s is a class', (name) => {
    expect(api[name], name).toBeTypeOf('function');
    expect(isClass(api[name]), `${name} is a class`).toBe(true);
  });

  it.each(ERRORS)('%s is an Error class', (name) => {
    const C = api[name] as abstract new (...args: never[]) => Error;
    expect(isClass(C), `${name} is a class`).toBe(true);
    expect(C.prototype).toBeInstanceOf(Error);
    if (name !== 'ArgumentError' && name !== 'PluginError' && name !== 'HTTPError') expect(C.prototype).toBeInstanceOf(HTTP.HTTPError);
  });

  it.each(FUNCTIONS)('%s is a function, not a class', (name) => {
    expect(api[name], name).toBeTypeOf('function');
    expect(isClass(api[name]), `${name} is not a class`).toBe(false);
  });

  it('HTTP.delete is HTTP.del; HTTPTimeoutError is TimeoutError', () => {
    expect(api['delete']).toBe(HTTP.del);
    expect(HTTP.HTTPTimeoutError).toBe(HTTP.TimeoutError);
  });

  it('values: nobody is an empty byte array, Stage a frozen table, presets.defaults holds redirects and decompression', () => {
    expect(HTTP.nobody).toBeInstanceOf(Uint8Array);
    expect(HTTP.nobody.length).toBe(0);
    expect(typeof HTTP.Stage).toBe('object');
    expect(Object.isFrozen(HTTP.Stage)).toBe(true);
    expect(Array.isArray(HTTP.presets.defaults)).toBe(true);
    expect(HTTP.presets.defaults).toContain(redirects);
    expect(HTTP.presets.defaults).toContain(decompression);
    expect(HTTP.presets.defaults.map((p) => p.name)).toEqual(expect.arrayContaining(['redirects', 'decompression']));
  });

  it('members the table names exist on the classes', () => {
    const has = (C: { prototype: object }, names: (string | symbol)[]): void => {
      for (const n of names) expect(n in C.prototype, `${(C as unknown as { name: string }).name}.${String(n)}`).toBe(true);
    };
    has(HTTP.Response, ['text', 'json', 'statusCode']);
    has(HTTP.Stream, ['message', 'startRead', 'startWrite', 'setStatus', 'setHeader', 'addTrailer', 'closeWrite', 'closeRead', 'peerAddr', 'read', 'readBytes', 'readAll', Symbol.asyncIterator]);
    has(HTTP.ClientStream, ['write', 'closeWrite', 'startRead', 'read', 'readBytes', 'readAll', 'closeRead', 'peerAddr', Symbol.asyncIterator]);
    has(HTTP.Server, ['listen', 'close', 'forceClose', 'wait', 'port']);
    has(HTTP.Client, ['request', 'get', 'head', 'query', 'post', 'put', 'patch', 'delete', 'options', 'open', 'dispatch', 'close', 'isOpen']);
    has(HTTP.Transport, ['closeIdleConnections', 'idleConnectionCount']);
    has(HTTP.Kernel, ['register', 'ready', 'close', 'decorate', 'onClose', 'client', 'serve', 'listen', 'tapped']);
    expect(new HTTP.Response(201).statusCode).toBe(201);
    expect(new HTTP.RequestContext().signal).toBeInstanceOf(AbortSignal);
    expect(HTTP.createKernel().hooks.client.onRequest).toBeDefined();
  });

  it('a few helpers work through the namespace', () => {
    const req = new HTTP.Request('GET', '/p?a=1&a=2&b=x+y', [['content-type', 'text/plain']]);
    expect(HTTP.header(req, 'Content-Type')).toBe('text/plain');
    HTTP.setHeader(req, 'X-One', '1');
    HTTP.appendHeader(req, 'X-One', '2');
    // appendHeader joins onto the same-name header just before it, with ',' (the reference's rule).
    expect(HTTP.headers(req, 'x-one')).toEqual(['1,2']);
    expect(HTTP.hasHeader(req, 'x-one')).toBe(true);
    HTTP.removeHeader(req, 'X-One');
    expect(HTTP.hasHeader(req, 'X-One')).toBe(false);
    expect(HTTP.canonicalHeaderKey('content-type')).toBe('Content-Type');
    const uri = new HTTP.URI(req.target);
    expect(HTTP.queryParamPairs(uri)).toEqual([
      ['a', '1'],
      ['a', '2'],
      ['b', 'x y'],
    ]);
    expect(HTTP.queryParams(uri)['b']).toBe('x y');
    const ctx = HTTP.getRequestContext(req);
    expect(HTTP.canceled(ctx)).toBe(false);
    HTTP.cancel(ctx, { message: 'stop' });
    expect(HTTP.canceled(ctx)).toBe(true);
    expect(HTTP.getDefaultKernel()).toBe(HTTP.getDefaultKernel());
    expect(HTTP.getDefaultClient()).toBe(HTTP.getDefaultClient());
  });
});

// ---- the default stack -------------------------------------------------------------------------

describe('top-level helpers on the default stack', () => {
  it('serve, listen and serveFetch report a mistake in their arguments as a rejection, never a throw', async () => {
    const calls: [string, () => Promise<unknown>][] = [
      ['serve', () => HTTP.serve(() => new HTTP.Response(200), { prot: 1 } as never)],
      ['listen', () => HTTP.listen(() => undefined, { prot: 1 } as never)],
      ['serveFetch', () => HTTP.serveFetch(() => new globalThis.Response('x'), { prot: 1 } as never)],
      ['serve (handler)', () => HTTP.serve('nope' as never)],
      ['kernel.serve', () => HTTP.createKernel().serve(() => new HTTP.Response(200), { prot: 1 } as never)],
    ];
    for (const [name, call] of calls) {
      let p: Promise<unknown> | undefined;
      expect(() => (p = call()), name).not.toThrow();
      await expect(p, name).rejects.toThrow(HTTP.ArgumentError);
    }
    await expect(HTTP.serve(() => new HTTP.Response(200), { prot: 1 } as never)).rejects.toThrow(/unknown server option "prot" \(did you mean port\?\)/);
  });

  it('HTTP.get follows a 302 and decompresses a gzip body (presets.defaults)', async () => {
    const seen: { target: string; acceptEncoding: string | undefined }[] = [];
    const { origin } = await serveHere((req) => {
      seen.push({ target: req.target, acceptEncoding: req.headers.get('Accept-Encoding') });
      if (req.target === '/start') return new HTTP.Response(302, 'moved', { headers: { Location: '/final' } });
      return new HTTP.Response(200, gzipSync(Buffer.from('hello, decompressed world')), {
        headers: { 'Content-Type': 'text/plain', 'Content-Encoding': 'gzip' },
      });
    });
    const res = await HTTP.get(`${origin}/start`);
    expect(res.status).toBe(200);
    expect(res.text()).toBe('hello, decompressed world');
    expect(res.url).toBe(`${origin}/final`);
    expect(seen.map((s) => s.target)).toEqual(['/start', '/final']);
    expect(seen[1]!.acceptEncoding).toMatch(/gzip/);
    const k = HTTP.getDefaultKernel();
    expect(k.state).toBe('ready');
    expect(k.hasPlugin('redirects')).toBe(true);
    expect(k.hasPlugin('decompression')).toBe(true);
  });

  it('HTTP.request and HTTP.dispatch use the same default stack', async () => {
    const { origin } = await serveHere((req) => {
      if (req.target === '/r') return new HTTP.Response(301, '', { headers: { Location: '/z' } });
      return new HTTP.Response(200, gzipSync(Buffer.from(`zipped ${req.method}`)), { headers: { 'Content-Encoding': 'gzip' } });
    });
    const a = await HTTP.request('GET', `${origin}/r`);
    expect(a.text()).toBe('zipped GET');
    const req = new HTTP.Request('GET', '/r');
    req.url = `${origin}/r`;
    const b = await HTTP.dispatch(req);
    expect(b.status).toBe(200);
    expect(b.body).toBeInstanceOf(HTTP.AbstractBody);
    const chunks: Uint8Array[] = [];
    for await (const c of b.body as HTTP.AbstractBody) chunks.push(c);
    expect(Buffer.concat(chunks).toString()).toBe('zipped GET');
  });

  it('HTTP.get(url, { client }) uses that client (its kernel without plugins, its default headers)', async () => {
    const seen: (string | undefined)[] = [];
    const { origin } = await serveHere((req) => {
      seen.push(req.headers.get('X-Client'));
      if (req.target === '/start') return new HTTP.Response(302, 'moved', { headers: { Location: '/final' } });
      return new HTTP.Response(200, 'final');
    });
    const client = new HTTP.Client({ kernel: HTTP.createKernel(), defaultHeaders: { 'X-Client': 'mine' } });
    clients.add(client);
    const res = await HTTP.get(`${origin}/start`, { client });
    // A client on a kernel without plugins has no redirects plugin: the 302 comes back as it is.
    expect(res.status).toBe(302);
    expect(res.text()).toBe('moved');
    expect(seen).toEqual(['mine']);
    const res2 = await HTTP.post(`${origin}/final`, { 'X-Extra': '1' }, 'body', { client });
    expect(res2.text()).toBe('final');
    expect(seen).toEqual(['mine', 'mine']);
    const viaDelete = await HTTP.delete(`${origin}/final`, { client });
    expect(viaDelete.status).toBe(200);
  });

  it('close(client): isOpen is false and HTTP.get(url, { client }) rejects with ArgumentError saying closed', async () => {
    const { origin } = await serveHere(() => new HTTP.Response(200, 'ok'));
    const client = new HTTP.Client();
    clients.add(client);
    expect(HTTP.isOpen(client)).toBe(true);
    expect((await HTTP.get(`${origin}/`, { client })).text()).toBe('ok');
    HTTP.close(client);
    expect(HTTP.isOpen(client)).toBe(false);
    let p: Promise<unknown> | null = null;
    expect(() => {
      p = HTTP.get(`${origin}/`, { client });
    }).not.toThrow();
    const err = await rejection(p!);
    expect(err).toBeInstanceOf(HTTP.ArgumentError);
    expect(err.message).toMatch(/closed/i);
    for (const call of [
      () => HTTP.request('GET', `${origin}/`, { client }),
      () => HTTP.open('GET', `${origin}/`, async () => undefined, { client }),
      () => HTTP.post(`${origin}/`, null, 'x', { client }),
    ]) {
      const e = await rejection(call());
      expect(e).toBeInstanceOf(HTTP.ArgumentError);
      expect(e.message).toMatch(/closed/i);
    }
  });

  it('a client option that is not a Client rejects with ArgumentError; close/isOpen refuse non-clients', async () => {
    const err = await rejection(HTTP.get('http://127.0.0.1:1/', { client: {} }));
    expect(err).toBeInstanceOf(HTTP.ArgumentError);
    expect(() => HTTP.close({} as HTTP.Client)).toThrow(HTTP.ArgumentError);
    expect(() => HTTP.isOpen({} as HTTP.Client)).toThrow(HTTP.ArgumentError);
  });
});
