/**
 * Type-level checks: the types refuse what the runtime refuses (test/api/options.test.ts).
 * Not a test file: `tsc --noEmit` checks it (tsconfig includes test/), and every
 * `@ts-expect-error` must meet an error or tsc reports it unused. Nothing here runs.
 */
import * as HTTP from '../../index.js';
import { DiskStore, MemoryStore } from '../../plugins/index.js';

export async function slips(url: string, c: HTTP.Client, name: string, count: number): Promise<void> {
  // What passes: options in the second position, headers in `headers:` or positionally before a body.
  await HTTP.get(url, { requestTimeout: 1000, headers: { 'X-Header': 'v' }, query: { a: 1 } });
  await HTTP.post(url, { 'Content-Type': 'text/plain' }, 'body');
  await HTTP.post(url, { 'Content-Type': 'text/plain' }, 'body', { retries: 2 });
  await HTTP.get(url, new HTTP.Headers([['X-Header', 'v']]));
  await HTTP.get(url, [['X-Header', 'v']]);
  await HTTP.get(url, { 'X-Header': 'v' }, undefined);
  await c.post(url, { body: { name, count } });
  await HTTP.post(url, { json: { name, count } });
  const made: HTTP.Response = HTTP.Response.json({ name }, { status: 201 });
  void made;

  // @ts-expect-error timeout is not an option (requestTimeout, connectTimeout, readIdleTimeout)
  await HTTP.get(url, { timeout: 1000 });
  // @ts-expect-error a plain object in the options position is options, not the body
  await HTTP.post(url, { name, count });
  // @ts-expect-error a plain object in the options position is options, not headers
  await HTTP.get(url, { 'X-Header': 'v' });
  // @ts-expect-error misspelt
  await HTTP.get(url, { requestTimeot: 1000 });
  // @ts-expect-error misspelt
  await HTTP.post(url, { jsn: { a: 1 } });
  // @ts-expect-error json is per call, not a Client default
  new HTTP.Client({ json: { a: 1 } });
  // @ts-expect-error data is body
  await HTTP.post(url, { data: 'x' });
  // @ts-expect-error params is query
  await HTTP.get(url, { params: { a: 1 } });
  // @ts-expect-error followRedirects is redirect
  await HTTP.get(url, { followRedirects: true });
  // @ts-expect-error maxRedirects is redirectLimit
  await HTTP.get(url, { maxRedirects: 3 });
  // @ts-expect-error retries is a number
  await HTTP.get(url, { retries: '3' });
  // @ts-expect-error a string is not options: post(url, { body }) or post(url, headers, body)
  await HTTP.post(url, 'a string');
  // @ts-expect-error the Client methods take the same shapes
  await c.get(url, { timeout: 1000 });
  // @ts-expect-error the Client methods take the same shapes
  await c.post(url, { name, count });
  // @ts-expect-error the URL comes first
  await HTTP.get({ url });
  // @ts-expect-error the method comes first: request(method, url, options)
  await HTTP.request(url, { method: 'POST' });

  // @ts-expect-error a client's headers are defaultHeaders
  void new HTTP.Client({ headers: { a: '1' } });
  // @ts-expect-error not a client option
  void new HTTP.Client({ timeout: 5 });
  // @ts-expect-error retries is a number
  void new HTTP.Client({ retries: '3' });
  // @ts-expect-error not a transport option
  void new HTTP.Transport({ maxIdle: 3 });
  // @ts-expect-error not an option of WebSockets.open
  await HTTP.WebSockets.open(url, () => undefined, { timeout: 5 });
  // @ts-expect-error a stray key beside an option
  void new HTTP.Request('GET', '/', { headers: { a: '1' }, bdy: 'x' });
  // @ts-expect-error misspelt
  void new HTTP.Response(200, 'x', { header: { a: '1' } });
  // @ts-expect-error misspelt
  void new HTTP.Router({ notFund: () => new HTTP.Response(404) });
  // @ts-expect-error misspelt
  void HTTP.fileServer('.', { index: 'a.html' });
  // @ts-expect-error misspelt
  void new HTTP.Form({ a: '1' }, { boundry: 'x' });
  // @ts-expect-error misspelt
  void HTTP.sseStream({ maxLength: 10 });
  // @ts-expect-error misspelt
  await HTTP.sseConnect(url, () => undefined, { retrydelay: 5 });

  // The proxy plugin's option, wherever a policy goes: a call, a Client, a Transport, WebSockets.open.
  const policy = new HTTP.ProxyConfig('http://127.0.0.1:3128');
  await HTTP.request('GET', url, { proxy: 'http://127.0.0.1:3128' });
  await HTTP.get(url, { proxy: null });
  void new HTTP.Client({ proxy: policy });
  void new HTTP.Client({ transport: new HTTP.Transport({ proxy: policy }), proxy: null });
  await HTTP.WebSockets.open(url, () => undefined, { proxy: policy });
  // @ts-expect-error misspelt
  await HTTP.get(url, { proxi: policy });
  // @ts-expect-error misspelt
  void new HTTP.Client({ proxi: policy });
  // @ts-expect-error misspelt
  void new HTTP.Transport({ proxi: policy });
  // @ts-expect-error a policy is a ProxyConfig, a proxy URL or null
  await HTTP.get(url, { proxy: 3128 });
  // @ts-expect-error a policy is a ProxyConfig, a proxy URL or null
  await HTTP.WebSockets.open(url, () => undefined, { proxy: 3128 });

  // Server options the h2 and h2c plugins declare are server options like the kernel's own.
  const ok = (): HTTP.Response => new HTTP.Response(200);
  await HTTP.serve(ok, { port: 0, maxConcurrentStreams: 50, allowH2c: false, http2Settings: new HTTP.HTTP2Settings({ initialWindowSize: 1 << 20 }) });
  await HTTP.listen(() => undefined, { http2Settings: { connectionWindowSize: 1 << 20 } });
  // @ts-expect-error misspelt
  await HTTP.serve(ok, { maxConcurentStreams: 50 });
  // @ts-expect-error allowH2c is a boolean
  await HTTP.serve(ok, { allowH2c: 'no' });
  // @ts-expect-error not a window of HTTP2Settings
  await HTTP.serve(ok, { http2Settings: { windowSize: 5 } });
}

export async function injects(server: HTTP.Server, kernel: HTTP.Kernel): Promise<void> {
  // What passes: a url alone, the options, a JSON value as the body.
  await server.inject('/');
  await server.inject({ method: 'POST', url: '/a', payload: { n: 1 }, query: { q: ['x', 2, true] }, cookies: { sid: 'v' }, remoteAddress: '::1' });
  await kernel.inject({ handler: () => new HTTP.Response(200), maxBodyBytes: 10 }, { url: '/', body: [1, 2] });

  // @ts-expect-error misspelt
  await server.inject({ url: '/', payolad: 'x' });
  // @ts-expect-error url is required
  await server.inject({ method: 'GET' });
  // @ts-expect-error a number has no body form (send a string, bytes or an object)
  await server.inject({ url: '/', body: 42 });
  // @ts-expect-error query values are strings, numbers or booleans
  await server.inject({ url: '/', query: { a: { b: 1 } } });
  // @ts-expect-error cookie values are strings
  await server.inject({ url: '/', cookies: { a: 1 } });
  // @ts-expect-error the target takes no kernel (the server runs the one inject is called on)
  await kernel.inject({ handler: () => new HTTP.Response(200), kernel }, '/');
}

export async function drains(ok: () => HTTP.Response): Promise<void> {
  // What passes: the drain options, signals as a list (a readonly one too).
  const signals = ['SIGTERM', 'SIGINT'] as const;
  const server = await HTTP.serve(ok, { port: 0, healthPath: '/healthz', drainDelay: 500, drainTimeout: 5000, signals });
  await server.shutdown();
  const ready: boolean = server.ready;
  void ready;

  // @ts-expect-error SIGKILL cannot be caught
  await HTTP.serve(ok, { signals: ['SIGKILL'] });
  // @ts-expect-error a signal name, not a number
  await HTTP.serve(ok, { signals: [15] });
  // @ts-expect-error a list, not one name
  await HTTP.serve(ok, { signals: 'SIGTERM' });
  // @ts-expect-error milliseconds as a number
  await HTTP.serve(ok, { drainDelay: '5s' });
  // @ts-expect-error misspelt
  await HTTP.serve(ok, { drainDelai: 500 });
}

/** The cache plugin's stores refuse what their constructors refuse at run time. */
export function cacheStores(): void {
  new MemoryStore({ maxEntries: 10, maxBytes: 1 << 20, maxEntryBytes: 1 << 16 });
  // @ts-expect-error misspelt
  new MemoryStore({ maxEntrys: 10 });
  new DiskStore('/tmp/cache', { maxEntryBytes: 1 << 20, verifyBytes: 1 << 10 });
  // @ts-expect-error misspelt
  new DiskStore('/tmp/cache', { verifyByte: 1 });
}
