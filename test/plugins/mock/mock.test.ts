/**
 * The mock plugin used the way a user's test uses it: a kernel of the default preset plus
 * `mocks.plugin` (or `mocks.client()`), calls through the top-level helpers, and the other
 * plugins acting on mocked responses (cookies, redirects, retries, decompression). Network
 * passthrough and the timeout and cancellation paths run against real loopback servers and
 * real timers; nothing here sleeps.
 */
import { gzipSync } from 'node:zlib';
import { describe, expect, it } from 'vitest';
import * as HTTP from '../../../index.js';
import { presets } from '../../../plugins/index.js';
import { closeKernelAfter, onCleanup } from '../../helpers/cleanup.js';
import { startServer } from '../../helpers/server.js';

const API = 'https://api.example.test';
const AUTH = 'https://auth.example.test';

/** A mock agent and a client on the default preset with its plugin; both closed after the test. */
async function setup(options: HTTP.MockOptions = {}, clientOptions: Omit<HTTP.ClientOptions, 'kernel'> = {}): Promise<{ mocks: HTTP.MockAgent; client: HTTP.Client; kernel: HTTP.Kernel }> {
  const mocks = HTTP.mock(options);
  const kernel = closeKernelAfter(
    await HTTP.createKernel()
      .register([...presets.defaults, mocks.plugin])
      .ready(),
  );
  const client = kernel.client({ retryDelayScale: 1, ...clientOptions });
  return { mocks, client, kernel };
}

describe('mock: replies', () => {
  it('answers from an interceptor with status, headers and a JSON body, without the network', async () => {
    const { mocks, client } = await setup();
    mocks.intercept({ origin: API, path: '/users/1' }).reply(200, { id: 1, name: 'ada' }, { headers: { 'X-Mock': 'yes' } });
    const res = await HTTP.get(`${API}/users/1`, { client });
    expect(res.status).toBe(200);
    expect(res.headers.get('X-Mock')).toBe('yes');
    expect(res.headers.get('Content-Type')).toBe('application/json');
    expect(res.headers.get('Content-Length')).toBe(String(res.text().length));
    expect(JSON.parse(res.text())).toEqual({ id: 1, name: 'ada' });
    expect(res.url).toBe(`${API}/users/1`);
    mocks.assertNoPending();
  });

  it('works with the top-level helpers through mocks.client()', async () => {
    const mocks = HTTP.mock();
    onCleanup(() => mocks.close());
    mocks.intercept({ origin: 'http://localhost:9', method: 'POST', path: '/echo', body: { a: 1 } }).reply((req) => ({ status: 201, body: `got ${req.text()} from ${req.method} ${req.path}` }));
    const res = await HTTP.post('http://localhost:9/echo', { json: { a: 1 }, client: mocks.client({ requestTimeout: 5000 }) });
    expect(res.status).toBe(201);
    expect(mocks.client()).toBe(mocks.client());
    expect(() => mocks.client({ requestTimeout: 1 })).toThrow(/exists already/);
    expect(res.text()).toBe('got {"a":1} from POST /echo');
  });

  it('streams a large body in pieces, as a network body arrives', async () => {
    const { mocks, client } = await setup();
    const big = Buffer.alloc(1 << 20, 7);
    mocks.intercept({ origin: API, path: '/big' }).reply(200, big);
    const res = await client.dispatch(mkRequest(`${API}/big`));
    const body = res.body as HTTP.AbstractBody;
    expect(body).toBeInstanceOf(HTTP.AbstractBody);
    expect(body.length).toBe(big.length);
    let reads = 0;
    let total = 0;
    for await (const c of body) {
      reads++;
      total += c.length;
    }
    expect(total).toBe(big.length);
    expect(reads).toBeGreaterThan(1);
  });

  it('sends trailers after the body', async () => {
    const { mocks, client } = await setup();
    mocks
      .intercept({ origin: API, path: '/t' })
      .reply(200, 'data', { trailers: { 'X-Checksum': 'abc' } })
      .times(2);
    const res = await HTTP.get(`${API}/t`, { client });
    expect(res.text()).toBe('data');
    expect(res.trailers.get('X-Checksum')).toBe('abc');
    const streamed = await client.dispatch(mkRequest(`${API}/t`));
    const body = streamed.body as HTTP.AbstractBody;
    for await (const _ of body) void _;
    expect(body.trailers().get('X-Checksum')).toBe('abc');
  });

  it('matches method, query, headers and body, and uses times() and persist()', async () => {
    const { mocks, client } = await setup();
    mocks
      .intercept({ origin: API, path: '/items', query: { page: 2, tag: ['a', 'b'] }, headers: { 'X-Key': /^k-/ } })
      .reply(200, 'page 2')
      .times(2);
    mocks.intercept({ origin: API, method: 'PUT', path: '/items/9', body: 'nine' }).reply(204).persist();
    const q = { page: '2', tag: ['b', 'a'] };
    expect((await HTTP.get(`${API}/items`, { query: q, headers: { 'X-Key': 'k-1' }, client })).text()).toBe('page 2');
    expect((await HTTP.get(`${API}/items?tag=a&tag=b&page=2`, { headers: { 'X-Key': 'k-2' }, client })).text()).toBe('page 2');
    const third = await HTTP.get(`${API}/items`, { query: q, headers: { 'X-Key': 'k-3' }, client }).catch((e: unknown) => e);
    expect(third).toBeInstanceOf(HTTP.MockNotMatchedError);
    expect((third as Error).message).toContain('used up: it answered 2 times');
    for (let i = 0; i < 3; i++) expect((await HTTP.put(`${API}/items/9`, null, 'nine', { client })).status).toBe(204);
    mocks.assertNoPending();
  });

  it('lists pending interceptors and assertNoPending names them', async () => {
    const { mocks, client } = await setup();
    mocks.intercept({ origin: API, path: '/used' }).reply(200, 'x');
    mocks.intercept({ origin: API, path: '/twice' }).reply(200, 'x').times(2);
    mocks.intercept({ origin: API, method: 'DELETE', path: '/never' }).reply(204).persist();
    await HTTP.get(`${API}/used`, { client });
    await HTTP.get(`${API}/twice`, { client });
    const pending = mocks.pending();
    expect(pending.map((p) => [p.method, p.calls, p.remaining])).toEqual([
      ['GET', 1, 1],
      ['DELETE', 0, Infinity],
    ]);
    const err = (() => {
      try {
        mocks.assertNoPending();
      } catch (e) {
        return e;
      }
      return null;
    })();
    expect(err).toBeInstanceOf(HTTP.MockPendingError);
    expect((err as HTTP.MockPendingError).code).toBe('SWY_ERR_MOCK_PENDING');
    expect((err as Error).message).toContain(`GET ${API}/twice (answered 1 time, 1 left)`);
    expect((err as Error).message).toContain(`DELETE ${API}/never (answered 0 times, persisted)`);
  });

  it('fails an unmatched request with MockNotMatchedError naming the closest interceptor', async () => {
    const { mocks, client } = await setup();
    mocks.intercept({ origin: API, path: '/users' }).reply(200, '[]');
    mocks.intercept({ origin: AUTH, method: 'POST', path: '/token' }).reply(200, 't');
    const err = (await HTTP.get(`${API}/user?id=1`, { client }).catch((e: unknown) => e)) as HTTP.MockNotMatchedError;
    expect(err).toBeInstanceOf(HTTP.MockNotMatchedError);
    expect(err.code).toBe('SWY_ERR_MOCK_NOT_MATCHED');
    expect(err.method).toBe('GET');
    expect(err.url).toBe(`${API}/user?id=1`);
    expect(err.closest).toBe(`GET ${API}/users`);
    expect(err.message).toContain('path /users is not /user');
    const wrongMethod = (await HTTP.get(`${AUTH}/token`, { client }).catch((e: unknown) => e)) as HTTP.MockNotMatchedError;
    expect(wrongMethod.message).toContain('method POST is not GET');
    // An origin with no interceptor, the network not allowed: no connection is made either.
    const nowhere = (await HTTP.get('http://127.0.0.1:1/x', { client }).catch((e: unknown) => e)) as HTTP.MockNotMatchedError;
    expect(nowhere).toBeInstanceOf(HTTP.MockNotMatchedError);
    expect(nowhere.message).toContain('GET http://127.0.0.1:1/x');
  });

  it('a reply function may be async; what it throws or a bad reply it returns fails the call', async () => {
    const { mocks, client } = await setup();
    mocks.intercept({ origin: API, path: '/async' }).reply(async (req) => ({ status: 200, body: [req.headers.get('X-N')], headers: [['X-Seen', 'yes']] }));
    const ok = await HTTP.get(`${API}/async`, { client, headers: { 'X-N': '7' } });
    expect(ok.text()).toBe('["7"]');
    expect(ok.headers.get('X-Seen')).toBe('yes');
    const boom = new Error('reply failed');
    mocks.intercept({ origin: API, path: '/throws' }).reply(() => {
      throw boom;
    });
    expect(await HTTP.get(`${API}/throws`, { client, retry: false }).catch((e: unknown) => e)).toBe(boom);
    mocks.intercept({ origin: API, path: '/bad' }).reply(() => ({ status: 'ok' }) as never);
    const bad = await HTTP.get(`${API}/bad`, { client }).catch((e: unknown) => e);
    expect(bad).toBeInstanceOf(HTTP.ArgumentError);
    expect((bad as Error).message).toContain(`the reply function of GET ${API}/bad: status must be an integer`);
  });

  it('refuses bad options, interceptors and replies with ArgumentError', async () => {
    expect(() => HTTP.mock({ alowNetwork: true } as never)).toThrow(/mock\(\): unknown option "alowNetwork" \(did you mean allowNetwork\?\)/);
    expect(() => HTTP.mock().intercept({ origin: API, path: '/', heders: {} } as never)).toThrow(/did you mean headers\?/);
    expect(() => HTTP.mock({ record: 'a.json', replay: 'b.json' })).toThrow(HTTP.ArgumentError);
    const mocks = HTTP.mock();
    expect(() => mocks.intercept({ origin: 'https://a.test/path', path: '/' })).toThrow(/without a path/);
    expect(() => mocks.intercept({ origin: 'ftp://a.test', path: '/' })).toThrow(/http: or https:/);
    expect(() => mocks.intercept({ origin: API, path: 'x' })).toThrow(/start with "\/"/);
    expect(() => mocks.intercept({ origin: API, path: '/?a=1', query: { b: 1 } })).toThrow(/query goes with/);
    expect(() => mocks.intercept({ origin: API, path: '/' }).reply(42)).toThrow(/status must be/);
    expect(() => mocks.intercept({ origin: API, path: '/' }).replyWithError('EWHAT' as never)).toThrow(/ECONNREFUSED/);
    expect(() => mocks.intercept({ origin: API, path: '/' }).reply(200).times(0)).toThrow(/times/);
    expect(() => mocks.intercept({ origin: API, path: '/' }).reply(200, 'x', { header: {} } as never)).toThrow(/did you mean headers\?/);
  });
});

function mkRequest(url: string): HTTP.Request {
  const u = new URL(url);
  const req = new HTTP.Request('GET', u.pathname + u.search, [['Host', u.host]]);
  req.url = url;
  req.host = u.host;
  return req;
}

describe('mock: with the default plugins', () => {
  it('cookies: a Set-Cookie of a mocked response is sent on the next mocked request', async () => {
    const { mocks, client } = await setup({}, { cookiejar: new HTTP.Cookies.CookieJar() });
    mocks.intercept({ origin: API, method: 'POST', path: '/login' }).reply(200, 'ok', { headers: { 'Set-Cookie': 'sid=abc; Path=/; Secure; HttpOnly' } });
    mocks.intercept({ origin: API, path: '/me', headers: { Cookie: 'sid=abc' } }).reply(200, 'ada');
    await HTTP.post(`${API}/login`, { client });
    expect((await HTTP.get(`${API}/me`, { client })).text()).toBe('ada');
  });

  it('redirects: a mocked 302 is followed to another mocked origin', async () => {
    const { mocks, client } = await setup();
    mocks.intercept({ origin: API, path: '/start' }).reply(302, null, { headers: { Location: `${AUTH}/landing?from=api` } });
    mocks.intercept({ origin: AUTH, path: '/landing', query: { from: 'api' } }).reply(200, 'landed');
    const events: HTTP.ClientEvent[] = [];
    const res = await HTTP.get(`${API}/start`, { client, trace: (e) => events.push(e) });
    expect(res.status).toBe(200);
    expect(res.text()).toBe('landed');
    expect(res.url).toBe(`${AUTH}/landing?from=api`);
    expect(events.some((e) => e instanceof HTTP.RedirectEvent)).toBe(true);
    mocks.assertNoPending();
  });

  it('retries: a mocked 503 is retried, counted against the budget, then 200', async () => {
    const { mocks, client } = await setup();
    mocks.intercept({ origin: API, path: '/flaky' }).reply(503, 'busy').times(2);
    mocks.intercept({ origin: API, path: '/flaky' }).reply(200, 'fine');
    const retries: HTTP.RetryEvent[] = [];
    const res = await HTTP.get(`${API}/flaky`, { client, trace: (e) => e instanceof HTTP.RetryEvent && retries.push(e) });
    expect(res.text()).toBe('fine');
    expect(retries.map((r) => [r.attempt, r.status])).toEqual([
      [1, 503],
      [2, 503],
    ]);
    // The budget: with retries: 1, the second 503 is the answer.
    mocks.intercept({ origin: API, path: '/down' }).reply(503, 'busy').persist();
    const err = (await HTTP.get(`${API}/down`, { client, retries: 1 }).catch((e: unknown) => e)) as HTTP.StatusError;
    expect(err).toBeInstanceOf(HTTP.StatusError);
    expect(err.status).toBe(503);
    expect(mocks.pending()).toEqual([]);
  });

  it('replyWithError: a mocked ECONNREFUSED is the kernel ConnectError, retried like a real one', async () => {
    const { mocks, client } = await setup();
    mocks.intercept({ origin: API, path: '/conn' }).replyWithError('ECONNREFUSED');
    mocks.intercept({ origin: API, path: '/conn' }).reply(200, 'up');
    const retries: HTTP.RetryEvent[] = [];
    const res = await HTTP.get(`${API}/conn`, { client, trace: (e) => e instanceof HTTP.RetryEvent && retries.push(e) });
    expect(res.text()).toBe('up');
    expect(retries).toHaveLength(1);
    expect(retries[0]!.error).toBeInstanceOf(HTTP.ConnectError);
    mocks.intercept({ origin: API, path: '/dns' }).replyWithError('ENOTFOUND');
    const dns = await HTTP.get(`${API}/dns`, { client }).catch((e: unknown) => e);
    expect(dns).toBeInstanceOf(HTTP.DNSError);
    expect((dns as HTTP.DNSError).hostname).toBe('api.example.test');
    const own = new HTTP.ConnectError('api.example.test:443', 'nope');
    mocks.intercept({ origin: API, path: '/own' }).replyWithError(own);
    expect(await HTTP.get(`${API}/own`, { client, retry: false }).catch((e: unknown) => e)).toBe(own);
  });

  it('decompression: a mocked gzip body with Content-Encoding is decoded', async () => {
    const { mocks, client } = await setup();
    const text = 'hello, compressed world '.repeat(100);
    mocks.intercept({ origin: API, path: '/gz' }).reply(200, gzipSync(text), { headers: { 'Content-Encoding': 'gzip', 'Content-Type': 'text/plain' } });
    const res = await HTTP.get(`${API}/gz`, { client });
    expect(res.text()).toBe(text);
    expect(res.headers.has('Content-Encoding')).toBe(false);
  });

  it('HTTP/2 call options: http2PriorKnowledge on a mocked origin answers as HTTP/2', async () => {
    const { mocks, client } = await setup();
    mocks.intercept({ origin: 'http://h2.example.test', path: '/' }).reply(200, 'two').times(2);
    const h2 = await HTTP.get('http://h2.example.test/', { client, http2PriorKnowledge: true });
    expect(h2.text()).toBe('two');
    expect([h2.protoMajor, h2.protoMinor]).toEqual([2, 0]);
    const h1 = await HTTP.get('http://h2.example.test/', { client });
    expect([h1.protoMajor, h1.protoMinor]).toEqual([1, 1]);
    expect(h1.reason).toBe('OK');
  });
});

describe('mock: network, timeouts and cancellation', () => {
  it('allowNetwork lets an origin without interceptors reach a real loopback server', async () => {
    const { port } = await startServer((req) => new HTTP.Response(200, `real ${req.target}`));
    const origin = `http://127.0.0.1:${port}`;
    const { mocks, client } = await setup({ allowNetwork: [origin] });
    mocks.intercept({ origin: API, path: '/mocked' }).reply(200, 'mocked');
    expect((await HTTP.get(`${origin}/x`, { client })).text()).toBe('real /x');
    expect((await HTTP.get(`${API}/mocked`, { client })).text()).toBe('mocked');
    // Without the allowance the same server is not reached.
    const closed = await setup();
    expect(await HTTP.get(`${origin}/x`, { client: closed.client }).catch((e: unknown) => e)).toBeInstanceOf(HTTP.MockNotMatchedError);
    // allowNetwork: true allows every origin.
    const open = await setup({ allowNetwork: true });
    expect((await HTTP.get(`${origin}/y`, { client: open.client })).text()).toBe('real /y');
  });

  it('after clear(), an allowed origin whose mocked connection is pooled reaches the network', async () => {
    const { port } = await startServer(() => new HTTP.Response(200, 'real'));
    const origin = `http://127.0.0.1:${port}`;
    const { mocks, client } = await setup({ allowNetwork: [origin] });
    mocks.intercept({ origin, path: '/' }).reply(200, 'mocked');
    expect((await HTTP.get(`${origin}/`, { client })).text()).toBe('mocked');
    mocks.clear();
    expect((await HTTP.get(`${origin}/`, { client })).text()).toBe('real');
  });

  it('delay with a request timeout fails with the kernel TimeoutError', async () => {
    const { mocks, client } = await setup();
    mocks.intercept({ origin: API, path: '/slow' }).reply(200, 'late').delay(10_000);
    const err = (await HTTP.get(`${API}/slow`, { client, requestTimeout: 50, retry: false }).catch((e: unknown) => e)) as HTTP.TimeoutError;
    expect(err).toBeInstanceOf(HTTP.TimeoutError);
    expect(err.operation).toBe('request');
    expect(err.message).toContain('requestTimeout of 50 ms passed');
    mocks.intercept({ origin: API, path: '/slow2' }).reply(200, 'late').delay(10_000);
    const head = (await HTTP.get(`${API}/slow2`, { client, responseHeaderTimeout: 40, retry: false }).catch((e: unknown) => e)) as HTTP.TimeoutError;
    expect(head).toBeInstanceOf(HTTP.TimeoutError);
    expect(head.message).toContain('responseHeaderTimeout of 40 ms passed');
  });

  it('a delayed reply arrives after its delay; aborting the signal cancels it', async () => {
    const { mocks, client } = await setup();
    mocks.intercept({ origin: API, path: '/later' }).reply(200, 'now').delay(30);
    const t0 = performance.now();
    expect((await HTTP.get(`${API}/later`, { client })).text()).toBe('now');
    expect(performance.now() - t0).toBeGreaterThanOrEqual(25);
    mocks.intercept({ origin: API, path: '/never' }).reply(200, 'x').delay(60_000);
    const ac = new AbortController();
    const p = HTTP.get(`${API}/never`, { client, signal: ac.signal, retry: false }).catch((e: unknown) => e);
    setImmediate(() => ac.abort());
    expect(await p).toBeInstanceOf(HTTP.CanceledError);
  });
});

describe('mock: what it does not answer', () => {
  it('a WebSocket handshake to a mocked origin fails at once, saying to allow the network', async () => {
    const { mocks, kernel } = await setup();
    mocks.intercept({ origin: 'http://ws.example.test', path: '/' }).reply(200, 'x');
    const err = await HTTP.WebSockets.open('ws://ws.example.test/chat', async () => undefined, { kernel, connectTimeout: 5000 }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(HTTP.ArgumentError);
    expect((err as Error).message).toMatch(/not connections written to directly .*allowNetwork/);
  });
});
