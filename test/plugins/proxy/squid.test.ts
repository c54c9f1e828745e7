/**
 * Through Debian's squid, started per test on a free loopback port: plain http as
 * absolute-form requests (forward), https through CONNECT with TLS end to end, basic proxy
 * authentication (the credentials reach squid, never the origin), a 407 on CONNECT, pooling
 * per proxy, and redirects leaving the proxy. Every test proves its requests went through
 * squid by its access log. The origin's name (origin.test) resolves only in squid's hosts
 * file: the client never looks it up.
 */
import { describe, expect, it } from 'vitest';
import tls from 'node:tls';
import { ConnectError, Transport, TLSHandshakeError } from '../../../kernel/index.js';
import { redirects } from '../../../plugins/redirects/index.js';
import { ProxyConfig, ProxyStatusError, connectThroughProxy, proxyURL } from '../../../plugins/proxy/index.js';
import { freePort, startSquid } from '../../helpers/proxies.js';
import { bootKernel, certificate, makeClient, rejection, startOrigin } from './setup.js';

const HOSTS = { 'origin.test': '127.0.0.1' };
const AUTH = { user: 'alice', pass: 's3cret:pw' };
const basic = (u: string, p: string): string => `Basic ${Buffer.from(`${u}:${p}`).toString('base64')}`;

describe('squid as a forward proxy (plain http)', () => {
  it('sends absolute-form requests; squid forwards them; the origin sees origin-form', async () => {
    const squid = await startSquid({ hosts: HOSTS });
    const origin = await startOrigin();
    const client = await makeClient({ proxy: proxyURL(squid.url) });
    const res = await client.get(`http://origin.test:${origin.port}/hello?x=1`);
    expect(res.text()).toBe('http /hello?x=1');
    expect(origin.hits).toEqual([{ target: '/hello?x=1', host: `origin.test:${origin.port}`, proxyAuthorization: undefined }]);
    // squid logs the URL without its query (strip_query_terms).
    await squid.waitLog(new RegExp(`TCP_MISS/200 .* GET http://origin\\.test:${origin.port}/hello\\? `));
    // A second request reuses the pooled connection to squid.
    await client.get(`http://origin.test:${origin.port}/again`);
    await squid.waitLog(/GET http:\/\/origin\.test:\d+\/again /);
    expect(client.transport.connectionCount()).toBe(1);
  });

  it('basic proxy authentication: Proxy-Authorization reaches squid, not the origin', async () => {
    const squid = await startSquid({ hosts: HOSTS, auth: AUTH });
    const origin = await startOrigin();
    const client = await makeClient({ proxy: new ProxyConfig(squid.url) });
    expect((await client.get(`http://origin.test:${origin.port}/secret`)).text()).toBe('http /secret');
    expect(origin.hits[0]!.proxyAuthorization).toBeUndefined();
    const line = await squid.waitLog(/GET http:\/\/origin\.test:\d+\/secret /);
    expect(line).toContain(' alice ');
  });

  it('without or with wrong credentials squid answers 407 (the response, as a StatusError)', async () => {
    const squid = await startSquid({ hosts: HOSTS, auth: AUTH });
    const origin = await startOrigin();
    const bare = await makeClient({ proxy: `http://127.0.0.1:${squid.port}` });
    const res = await bare.get(`http://origin.test:${origin.port}/`, { statusException: false });
    expect(res.status).toBe(407);
    expect(res.headers.get('Proxy-Authenticate')).toMatch(/^Basic/);
    const wrong = await makeClient({ proxy: `http://alice:nope@127.0.0.1:${squid.port}` });
    expect((await wrong.get(`http://origin.test:${origin.port}/`, { statusException: false })).status).toBe(407);
    expect(origin.hits).toEqual([]);
    await squid.waitLog(/TCP_DENIED\/407 .* GET http:\/\/origin\.test/);
  });

  it('a caller-set Proxy-Authorization is kept', async () => {
    const squid = await startSquid({ hosts: HOSTS, auth: AUTH });
    const origin = await startOrigin();
    const client = await makeClient({ proxy: `http://127.0.0.1:${squid.port}` });
    const res = await client.get(`http://origin.test:${origin.port}/mine`, { headers: { 'Proxy-Authorization': basic(AUTH.user, AUTH.pass) } });
    expect(res.status).toBe(200);
  });
});

describe('squid as a CONNECT proxy (https, TLS end to end)', () => {
  it('tunnels https; the certificate is checked for the origin name', async () => {
    const squid = await startSquid({ hosts: HOSTS });
    const origin = await startOrigin({ tls: true });
    const client = await makeClient({ proxy: proxyURL(squid.url), tlsConfig: { ca: certificate().cert } });
    const res = await client.get(`https://origin.test:${origin.port}/tls`);
    expect(res.text()).toBe('https /tls');
    expect(origin.hits[0]!.target).toBe('/tls');
    client.close();
    await squid.waitLog(new RegExp(`TCP_TUNNEL/200 .* CONNECT origin\\.test:${origin.port} `));
  });

  it('with basic authentication; the origin never sees the proxy credentials', async () => {
    const squid = await startSquid({ hosts: HOSTS, auth: AUTH });
    const origin = await startOrigin({ tls: true });
    const client = await makeClient({ proxy: squid.url, tlsConfig: { ca: certificate().cert } });
    expect((await client.get(`https://origin.test:${origin.port}/a`)).status).toBe(200);
    expect(origin.hits[0]!.proxyAuthorization).toBeUndefined();
    client.close();
    expect(await squid.waitLog(/CONNECT origin\.test:\d+ /)).toContain(' alice ');
  });

  it('a 407 answer to CONNECT is a ConnectError whose cause carries the status', async () => {
    const squid = await startSquid({ hosts: HOSTS, auth: AUTH });
    const origin = await startOrigin({ tls: true });
    for (const url of [`http://127.0.0.1:${squid.port}`, `http://alice:wrong@127.0.0.1:${squid.port}`]) {
      const client = await makeClient({ proxy: url, tlsConfig: { ca: certificate().cert } });
      const err = await rejection(client.get(`https://origin.test:${origin.port}/`));
      expect(err).toBeInstanceOf(ConnectError);
      expect((err as ConnectError).address).toBe(`origin.test:${origin.port}`);
      const cause = err.cause as ProxyStatusError;
      expect(cause).toBeInstanceOf(ProxyStatusError);
      expect(cause.status).toBe(407);
      expect(cause.proxy).toBe(`http://127.0.0.1:${squid.port}`);
      expect(cause.headers.get('Proxy-Authenticate')).toMatch(/^Basic/);
      expect(err.message).toMatch(/refused CONNECT origin\.test:\d+ with 407/);
      expect(err.message).toMatch(url.includes('@') ? /refused the credentials/ : /put user:password in the proxy URL/);
      expect(err.message).not.toContain('wrong');
    }
    expect(origin.hits).toEqual([]);
  });

  it('squid cannot reach the origin: its error answer to CONNECT is the cause', async () => {
    const closed = await freePort();
    const squid = await startSquid({ hosts: { ...HOSTS, 'closed.test': '127.0.0.1' } });
    const client = await makeClient({ proxy: squid.url });
    const err = await rejection(client.get(`https://closed.test:${closed}/`));
    expect(err).toBeInstanceOf(ConnectError);
    expect((err.cause as ProxyStatusError).status).toBe(503);
    expect(err.message).toMatch(/refused CONNECT closed\.test:\d+ with 503/);
  });

  it('plain http is forwarded when only the Transport has the policy', async () => {
    const squid = await startSquid({ hosts: HOSTS });
    const origin = await startOrigin();
    const client = await makeClient({ transport: new Transport({ proxy: new ProxyConfig(squid.url) }) });
    expect((await client.get(`http://origin.test:${origin.port}/via-transport`)).text()).toBe('http /via-transport');
    expect(origin.hits[0]!.target).toBe('/via-transport');
    client.transport.close();
    await squid.waitLog(new RegExp(`TCP_MISS/200 .* GET http://origin\\.test:${origin.port}/via-transport `));
  });

  it('TLS failure after the tunnel (wrong CA) is a TLSHandshakeError', async () => {
    const squid = await startSquid({ hosts: HOSTS });
    const origin = await startOrigin({ tls: true });
    const client = await makeClient({ proxy: squid.url });
    expect(await rejection(client.get(`https://origin.test:${origin.port}/`))).toBeInstanceOf(TLSHandshakeError);
  });
});

describe('pooling, redirects and per-call policies', () => {
  it('connections are pooled per proxy as well as per origin', async () => {
    const squid = await startSquid({ hosts: HOSTS });
    const origin = await startOrigin();
    // 0.0.0.0 is not loopback by name (so it may be proxied) yet reaches the local origin either way.
    const url = `http://0.0.0.0:${origin.port}/p`;
    const client = await makeClient({ proxy: new ProxyConfig(squid.url) });
    await client.get(url);
    await client.get(url, { proxy: null });
    await client.get(url);
    await client.get(url, { proxy: null });
    expect(origin.hits).toHaveLength(4);
    expect(client.transport.connectionCount()).toBe(2);
    await squid.waitLog(new RegExp(`GET http://0\\.0\\.0\\.0:${origin.port}/p `), 2);
    expect(squid.log().filter((l) => l.includes(`GET http://0.0.0.0:${origin.port}/p `))).toHaveLength(2);
  });

  it('a redirect from proxied http to https: tunnel, and the proxy credentials stay with the proxy', async () => {
    const squid = await startSquid({ hosts: HOSTS, auth: AUTH });
    const secure = await startOrigin({ tls: true });
    const plain = await startOrigin();
    const kernel = await bootKernel([redirects]);
    const client = await makeClient({ proxy: squid.url, tlsConfig: { ca: certificate().cert } }, kernel);
    const to = encodeURIComponent(`https://origin.test:${secure.port}/landed`);
    const res = await client.get(`http://origin.test:${plain.port}/redirect-to/${to}`);
    expect(res.text()).toBe('https /landed');
    expect(plain.hits[0]!.proxyAuthorization).toBeUndefined();
    expect(secure.hits[0]!.proxyAuthorization).toBeUndefined();
    client.close();
    await squid.waitLog(/CONNECT origin\.test:\d+ /);
    expect(squid.log().some((l) => /GET http:\/\/origin\.test:\d+\/redirect-to\//.test(l))).toBe(true);
  });

  it('a NO_PROXY host goes direct (squid sees nothing)', async () => {
    const squid = await startSquid({ hosts: HOSTS });
    const origin = await startOrigin();
    const client = await makeClient({ proxy: new ProxyConfig(squid.url, { noProxy: 'origin.test' }) });
    // origin.test cannot be resolved locally: going direct shows as a DNS failure, not a squid log line.
    await expect(client.get(`http://origin.test:${origin.port}/`)).rejects.toThrow(/origin\.test/);
    const local = await client.get(`http://localhost:${origin.port}/loop`);
    expect(local.text()).toBe('http /loop');
    expect(squid.log()).toEqual([]);
  });

  it('the plugin default policy applies to calls without one', async () => {
    const squid = await startSquid({ hosts: HOSTS });
    const origin = await startOrigin();
    const kernel = await bootKernel([], { proxy: squid.url });
    const client = await makeClient({}, kernel);
    expect((await client.get(`http://origin.test:${origin.port}/default`)).text()).toBe('http /default');
    await squid.waitLog(/GET http:\/\/origin\.test:\d+\/default /);
  });
});

describe('connectThroughProxy (for clients that own their sockets)', () => {
  it('returns a tunnel for a proxied URL and null for a direct one', async () => {
    const squid = await startSquid({ hosts: HOSTS });
    const origin = await startOrigin({ tls: true });
    const config = new ProxyConfig(squid.url);
    expect(await connectThroughProxy(config, `wss://localhost:${origin.port}/`)).toBeNull();
    const raw = await connectThroughProxy(config, `wss://origin.test:${origin.port}/`, { timeoutMs: 5000 });
    expect(raw).not.toBeNull();
    const t = tls.connect({ socket: raw!, servername: 'origin.test', ca: certificate().cert });
    await new Promise<void>((resolve, reject) => {
      t.once('secureConnect', resolve);
      t.once('error', reject);
    });
    t.write('GET /raw HTTP/1.1\r\nHost: origin.test\r\nConnection: close\r\n\r\n');
    let text = '';
    for await (const chunk of t) text += String(chunk);
    expect(text).toMatch(/^HTTP\/1\.1 200/);
    expect(text).toContain('https /raw');
    await squid.waitLog(/TCP_TUNNEL\/200 .* CONNECT origin\.test:\d+ /);
  });
});
