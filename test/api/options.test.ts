/**
 * Nothing silent: a `Client` made without a kernel runs on the default plugins (so the
 * README's `new Client({ proxy, cookiejar })` works); on a kernel that lacks the plugin an
 * option needs, the option is refused at construction and per call, naming the plugin; every
 * options object refuses unknown names, with the nearest valid one or the name this library
 * uses for what another library calls it.
 */
import { describe, expect, it } from 'vitest';
import * as HTTP from '../../index.js';
import { cookies, h2, redirects, retries } from '../../plugins/index.js';
import { closeAfter, closeKernelAfter, forceCloseAfter } from '../helpers/cleanup.js';

async function serveHere(handler: HTTP.RequestHandler): Promise<string> {
  const server = forceCloseAfter(await HTTP.serve(handler, { host: '127.0.0.1', port: 0 }));
  return `http://127.0.0.1:${server.port}`;
}

function client(options: HTTP.ClientOptions = {}): HTTP.Client {
  return closeAfter(new HTTP.Client(options));
}

/** The message of the ArgumentError `fn` throws (fails the test when it throws none or another kind). */
function thrown(fn: () => unknown): string {
  try {
    fn();
  } catch (err) {
    expect(err).toBeInstanceOf(HTTP.ArgumentError);
    return (err as Error).message;
  }
  throw new Error('expected an ArgumentError, nothing was thrown');
}

/** The message of the ArgumentError `p` rejects with. */
async function rejected(p: Promise<unknown>): Promise<string> {
  const err = await p.then(
    () => new Error('expected a rejection, the promise resolved'),
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(HTTP.ArgumentError);
  return (err as Error).message;
}

const URL_ = 'http://127.0.0.1:9/';

describe('new Client() without a kernel', () => {
  it("runs on the default plugins: the README's new Client({ proxy, cookiejar }) proxies, keeps cookies and follows redirects", async () => {
    // A forward proxy in miniature: it answers every request itself, showing the absolute-form target it got.
    const seen: { target: string; cookie: string | undefined }[] = [];
    const proxy = await serveHere((req) => {
      seen.push({ target: req.target, cookie: req.headers.get('Cookie') });
      if (req.target.endsWith('/start')) return new HTTP.Response(302, '', { headers: { Location: '/final', 'Set-Cookie': 'sid=1; Path=/' } });
      return new HTTP.Response(200, `at ${req.target}`);
    });
    const jar = new HTTP.Cookies.CookieJar();
    const c = client({ proxy, cookiejar: jar });
    const res = await c.get('http://app.example/start');
    expect(res.status).toBe(200);
    expect(res.text()).toBe('at http://app.example/final');
    expect(seen).toEqual([
      { target: 'http://app.example/start', cookie: undefined },
      { target: 'http://app.example/final', cookie: 'sid=1' },
    ]);
  });

  it('given a Transport with a proxy, the proxy plugin of the default kernel uses it', async () => {
    const proxy = await serveHere((req) => new HTTP.Response(200, req.target));
    const c = client({ transport: new HTTP.Transport({ proxy }) });
    expect((await c.get('http://app.example/t')).text()).toBe('http://app.example/t');
    c.transport.close();
  });
});

describe('an option whose plugin the kernel lacks', () => {
  it('is an ArgumentError naming the plugin at construction', () => {
    const kernel = HTTP.createKernel().register(redirects);
    expect(thrown(() => new HTTP.Client({ kernel, cookiejar: new HTTP.Cookies.CookieJar() }))).toBe(
      "new Client(): cookiejar needs the cookies plugin, which this client's kernel does not have: register it on this kernel (kernel.register(cookies)) before making the client, or leave out kernel to get the default plugins",
    );
    expect(thrown(() => kernel.client({ retries: 2 }))).toMatch(/^new Client\(\): retries needs the retries plugin/);
    // A plugin registered (not yet loaded) counts: the kernel boots at the first call.
    expect(() => client({ kernel: HTTP.createKernel().register([cookies, retries]), cookiejar: false, retries: 1 })).not.toThrow();
  });

  it('a proxy given to the Transport is refused on a kernel without the proxy plugin', () => {
    const transport = new HTTP.Transport({ proxy: 'http://127.0.0.1:9' });
    expect(thrown(() => new HTTP.Client({ kernel: HTTP.createKernel(), transport }))).toMatch(/^new Client\(\) \(its transport\): proxy needs the proxy plugin/);
    transport.close();
  });

  it('is refused per call too, before anything is sent', async () => {
    let hits = 0;
    const origin = await serveHere(() => (hits++, new HTTP.Response(200, 'ok')));
    const c = client({ kernel: HTTP.createKernel().register(redirects) });
    expect(await rejected(c.get(`${origin}/`, { retries: 3 }))).toMatch(/^request\("GET", …\): retries needs the retries plugin/);
    expect(await rejected(HTTP.get(`${origin}/`, { client: c, decompress: false }))).toMatch(/decompress needs the decompression plugin/);
    expect(hits).toBe(0);
    // The options of the plugin it has pass.
    expect((await c.get(`${origin}/`, { redirectLimit: 1 })).text()).toBe('ok');
  });

  it('WebSockets.open refuses cookiejar on a kernel without the cookies plugin', async () => {
    const kernel = HTTP.createKernel();
    expect(await rejected(HTTP.WebSockets.open('ws://127.0.0.1:9/', () => undefined, { kernel, cookiejar: new HTTP.Cookies.CookieJar() }))).toMatch(
      /^WebSockets\.open: cookiejar needs the cookies plugin/,
    );
  });
});

describe('unknown option names', () => {
  it('per call: the nearest name, or the name this library uses for another library’s', async () => {
    const cases: [Record<string, unknown>, string][] = [
      [{ timeout: 1000 }, 'unknown option "timeout" (did you mean requestTimeout (or connectTimeout/readIdleTimeout)?)'],
      [{ requestTimeot: 1000 }, 'unknown option "requestTimeot" (did you mean requestTimeout?)'],
      [{ data: 'x' }, 'unknown option "data" (did you mean body (or json)?)'],
      [{ params: { a: 1 } }, 'unknown option "params" (did you mean query?)'],
      [{ followRedirects: true }, 'unknown option "followRedirects" (did you mean redirect?)'],
      [{ maxRedirects: 3 }, 'unknown option "maxRedirects" (did you mean redirectLimit?)'],
      [{ redirectLimt: 3 }, 'unknown option "redirectLimt" (did you mean redirectLimit?)'],
      [{ 'X-Extra': '1' }, 'unknown option "X-Extra"; request headers go in { headers: { … } }, or in the positional form (url, headers, body, options)'],
      [{ 'X-Header': 'v' }, 'unknown option "X-Header"; request headers go in { headers: { … } }, or in the positional form (url, headers, body, options)'],
      // A name that is also an Object.prototype member is just an unknown name.
      [{ constructor: 1, toString: 2, requestTimeout: 5 }, 'unknown option "constructor"'],
    ];
    for (const [options, message] of cases) {
      expect(await rejected(HTTP.get(URL_, options as HTTP.CallOptions))).toBe(`request("GET", …): ${message}`);
    }
    // An object of no option's names was meant as the body.
    expect(await rejected(HTTP.post(URL_, { name: 'a', count: 1 } as HTTP.CallOptions))).toBe(
      'request("POST", …): unknown option "name"; a request body goes in { body: … } (an object there is sent form-encoded), or in { json: … } to send it as JSON',
    );
    expect(await rejected(HTTP.post(URL_, { jsn: { a: 1 } } as HTTP.CallOptions))).toBe('request("POST", …): unknown option "jsn" (did you mean json?)');
    expect(await rejected(HTTP.post(URL_, { JSON: { a: 1 } } as HTTP.CallOptions))).toBe('request("POST", …): unknown option "JSON" (did you mean json?)');
  });

  it('a wrong type says what the option takes', async () => {
    expect(await rejected(HTTP.get(URL_, { retries: '3' } as unknown as HTTP.CallOptions))).toBe('request("GET", …): retries must be an integer >= 0, got the string "3"');
    expect(thrown(() => new HTTP.Client({ retries: '3' } as unknown as HTTP.ClientOptions))).toBe('new Client(): retries must be an integer >= 0, got the string "3"');
    expect(await rejected(HTTP.get(URL_, { retry: 3 } as unknown as HTTP.CallOptions))).toBe('request("GET", …): retry must be a boolean (to set how many retries, use retries), got 3');
    expect(await rejected(HTTP.get(URL_, { cookiejar: {} } as unknown as HTTP.CallOptions))).toBe(
      'request("GET", …): cookiejar must be a CookieJar (new Cookies.CookieJar()) or false, got a plain object',
    );
  });

  it('new Client() and new Transport()', () => {
    expect(thrown(() => new HTTP.Client({ timeout: 5 } as HTTP.ClientOptions))).toBe('new Client(): unknown option "timeout" (did you mean requestTimeout (or connectTimeout/readIdleTimeout)?)');
    expect(thrown(() => new HTTP.Client({ headers: { a: '1' } } as HTTP.ClientOptions))).toBe('new Client(): unknown option "headers" (did you mean defaultHeaders?)');
    expect(thrown(() => new HTTP.Client({ followRedirects: false } as HTTP.ClientOptions))).toBe('new Client(): unknown option "followRedirects" (did you mean redirect?)');
    expect(thrown(() => new HTTP.Transport({ maxIdle: 3 } as HTTP.TransportOptions))).toBe('new Transport(): unknown option "maxIdle" (did you mean maxIdlePerHost (or maxIdleTotal)?)');
    // The proxy plugin's option is one a Transport carries: a near miss of it is named too.
    expect(thrown(() => new HTTP.Transport({ proxi: 'http://127.0.0.1:9' } as HTTP.TransportOptions))).toBe('new Transport(): unknown option "proxi" (did you mean proxy?)');
  });

  it('serve() and WebSockets.listen', async () => {
    const ok = (): HTTP.Response => new HTTP.Response(200);
    // (serve checks its options before it returns its promise: the wrapper takes either way.)
    expect(await rejected(Promise.resolve().then(() => HTTP.serve(ok, { port: 0, readTimout: 5 } as never)))).toBe('unknown server option "readTimout" (did you mean readTimeout?)');
    expect(await rejected(HTTP.WebSockets.listen(() => undefined, { port: 0, timeout: 5 } as never))).toBe('unknown server option "timeout" (did you mean readTimeout (or idleTimeout)?)');
  });

  it('WebSockets.open, like WebSockets.listen', async () => {
    expect(await rejected(HTTP.WebSockets.open('ws://127.0.0.1:9/', () => undefined, { timeout: 5 } as never))).toBe(
      'WebSockets.open: unknown option "timeout" (did you mean requestTimeout (or connectTimeout/readIdleTimeout)?)',
    );
    expect(await rejected(HTTP.WebSockets.open('wss://127.0.0.1:9/', () => undefined, { tlsConfig: {} } as never))).toBe('WebSockets.open: unknown option "tlsConfig" (did you mean tls?)');
  });

  it('Request and Response: a stray key is an error, never a header nobody meant', () => {
    expect(thrown(() => new HTTP.Request('GET', '/', { headers: { a: '1' }, bdy: 'x' } as never))).toBe('new Request(): unknown option "bdy" (did you mean body?)');
    expect(thrown(() => new HTTP.Request('GET', '/', { bdy: 'x' } as never))).toBe('new Request(): unknown option "bdy" (did you mean body?)');
    expect(thrown(() => new HTTP.Request('GET', '/', null, 'x', { contentLenght: 1 } as never))).toBe('new Request(): unknown option "contentLenght" (did you mean contentLength?)');
    expect(thrown(() => new HTTP.Response(200, 'x', { header: { a: '1' } } as never))).toBe('new Response(): unknown option "header" (did you mean headers?)');
    expect(thrown(() => new HTTP.Response(200, { reason: 'fine', heders: {} } as never))).toBe('new Response(): unknown option "heders" (did you mean headers?)');
    // A headers object stays one.
    expect(new HTTP.Request('GET', '/', { 'X-A': '1', accept: 'text/plain' }).headers.get('x-a')).toBe('1');
  });

  it('Router, fileServer, serveFile, Form, sseStream, sseConnect, definePlugin, register', async () => {
    expect(thrown(() => new HTTP.Router({ notFund: () => new HTTP.Response(404) } as never))).toBe('new Router(): unknown option "notFund" (did you mean notFound?)');
    expect(thrown(() => HTTP.fileServer('.', { index: 'a.html' } as never))).toBe('fileServer: unknown option "index" (did you mean indexFile?)');
    expect(thrown(() => new HTTP.Form({ a: '1' }, { boundry: 'x' } as never))).toBe('new Form(): unknown option "boundry" (did you mean boundary?)');
    expect(thrown(() => HTTP.sseStream({ maxLength: 10 } as never))).toBe('sseStream: unknown option "maxLength" (did you mean maxLen?)');
    expect(await rejected(HTTP.sseConnect(URL_, () => undefined, { retrydelay: 5 } as never))).toBe('sseConnect: unknown option "retrydelay" (did you mean retryDelay?)');
    expect(thrown(() => HTTP.definePlugin({ name: 'x', dependancies: [], register() {} } as never))).toBe('definePlugin(\'x\'): unknown option "dependancies" (did you mean dependencies?)');
    const boot = HTTP.createKernel()
      .register(redirects, { redirectLimt: 2 } as never)
      .ready();
    await expect(boot).rejects.toThrow('register(redirects, …): unknown option "redirectLimt" (did you mean redirectLimit?)');
  });
});

describe('errors that name the right call', () => {
  it('a URL without a scheme suggests http:// (ws:// for WebSockets); a path alone asks for an absolute URL', async () => {
    expect(await rejected(HTTP.get('localhost:8080/api'))).toBe('invalid URL "localhost:8080/api": no scheme: did you mean http://localhost:8080/api?');
    expect(await rejected(HTTP.get('example.com/api?x=1'))).toBe('invalid URL "example.com/api?x=1": no scheme: did you mean http://example.com/api?x=1?');
    expect(await rejected(HTTP.get('127.0.0.1:8080'))).toBe('invalid URL "127.0.0.1:8080": no scheme: did you mean http://127.0.0.1:8080?');
    expect(await rejected(HTTP.get('/api'))).toBe('invalid URL "/api": a path alone; a request needs an absolute URL such as http://host/api');
    expect(await rejected(HTTP.WebSockets.open('localhost:8080/ws', () => undefined))).toBe('WebSockets.open: invalid URL "localhost:8080/ws": no scheme: did you mean ws://localhost:8080/ws?');
  });

  it('get({ url }), request(url, { method }) and post(url, string) name the call shape', async () => {
    expect(await rejected(HTTP.get({ url: 'http://x/' } as never))).toBe('the URL must be a string or a URL, got an object with url: pass the URL as the first argument, get(url, options)');
    expect(await rejected(HTTP.request('http://x/', { method: 'POST' } as never))).toBe(
      'request(method, url, options) takes the method first: request("POST", "http://x/", options), or post(url, options)',
    );
    expect(await rejected(HTTP.post(URL_, 'a string' as never))).toBe(
      'post(url, "a string"): the second argument is the options object; send a body as post(url, { body }) or post(url, headers, body)',
    );
    const c = client({ kernel: HTTP.createKernel() });
    expect(await rejected(c.put(URL_, 42 as never))).toMatch(/^put\(url, number\): the second argument is the options object/);
  });
});

describe('HTTP/2 asked for on a kernel without its plugin', () => {
  it("httpVersion: 'h2' needs h2 and http2PriorKnowledge needs h2c, instead of a quiet HTTP/1.1", async () => {
    const bare = HTTP.createKernel();
    expect(thrown(() => new HTTP.Client({ kernel: bare, http2PriorKnowledge: true }))).toMatch(/^new Client\(\): http2PriorKnowledge needs the h2c plugin/);
    const c = client({ kernel: bare });
    expect(await rejected(c.get(URL_, { httpVersion: 'h2' }))).toMatch(/^request\("GET", …\): httpVersion: 'h2' needs the h2 plugin/);
    // HTTP/1.1 and 'auto' need nothing.
    expect(() => client({ kernel: bare, httpVersion: 'h1', http2PriorKnowledge: false })).not.toThrow();
  });

  it("httpVersion: 'h2' on an http:// URL needs h2c, instead of a quiet HTTP/1.1 on a kernel with h2 alone", async () => {
    const url = await serveHere((req) => new HTTP.Response(200, `HTTP/${req.protoMajor}.${req.protoMinor}`));
    const c = client({ kernel: closeKernelAfter(await HTTP.createKernel().register(h2).ready()) });
    expect(await rejected(c.get(`${url}/`, { httpVersion: 'h2' }))).toMatch(
      /^GET http:\/\/127\.0\.0\.1:\d+\/: httpVersion: 'h2' on an http:\/\/ URL needs the h2c plugin, which this client's kernel does not have: register it on this kernel \(kernel\.register\(h2c\)\)/,
    );
    // The same client speaks HTTP/1.1 when asked nothing else.
    expect((await c.get(`${url}/`)).text()).toBe('HTTP/1.1');
  });

  it('a plugin that declares the protocol it speaks satisfies the check, whatever its name', () => {
    const ownH2c = HTTP.definePlugin({ name: 'own-h2c', clientProtocols: ['h2c'], register() {} });
    expect(() => client({ kernel: HTTP.createKernel().register(ownH2c), http2PriorKnowledge: true })).not.toThrow();
    expect(thrown(() => HTTP.definePlugin({ name: 'bad', clientProtocols: 'h2' as never, register() {} }))).toMatch(/^definePlugin\('bad'\): clientProtocols must be an array of protocol names/);
  });
});
