/**
 * Through Debian's microsocks (SOCKS5), started per test: plain http and https (TLS end to
 * end) with `socks5://` and `socks5h://`, host names sent to the proxy (never resolved here),
 * user/password authentication (RFC 1929), and microsocks' own refusals. Its log line
 * "connected to host:port" proves each connection went through it.
 */
import { lookup } from 'node:dns/promises';
import { hostname } from 'node:os';
import { describe, expect, it } from 'vitest';
import { ConnectError } from '../../../kernel/index.js';
import { ProxyConfig, Socks5Error, proxyURL } from '../../../plugins/proxy/index.js';
import { freePort, startMicrosocks } from '../../helpers/proxies.js';
import { certificate, makeClient, rejection, startOrigin } from './setup.js';

const AUTH = { user: 'bob', pass: 'p@ss word' };

describe('microsocks (SOCKS5)', () => {
  it.each(['socks5', 'socks5h'] as const)('%s://: plain http through the proxy', async (scheme) => {
    const socks = await startMicrosocks();
    const origin = await startOrigin();
    const client = await makeClient({ proxy: proxyURL(socks.url(scheme)) });
    // 0.0.0.0 is not a loopback name, so it is proxied, and reaches the local origin from microsocks.
    expect((await client.get(`http://0.0.0.0:${origin.port}/s`)).text()).toBe('http /s');
    expect((await client.get(`http://0.0.0.0:${origin.port}/t`)).text()).toBe('http /t');
    expect(await socks.waitConnected(1)).toEqual([`0.0.0.0:${origin.port}`]); // one pooled connection
  });

  it.each(['socks5', 'socks5h'] as const)('%s://: https with TLS end to end', async (scheme) => {
    const socks = await startMicrosocks();
    const origin = await startOrigin({ tls: true });
    const client = await makeClient({ proxy: socks.url(scheme), tlsConfig: { ca: certificate().cert } });
    expect((await client.get(`https://0.0.0.0:${origin.port}/secure`)).text()).toBe('https /secure');
    expect(await socks.waitConnected(1)).toEqual([`0.0.0.0:${origin.port}`]);
  });

  it.each(['socks5', 'socks5h'] as const)('%s://: a host name goes to the proxy as a name', async (scheme) => {
    // This machine's own name: microsocks resolves it; the log shows the name it was given.
    const name = hostname();
    const { address } = await lookup(name);
    const origin = await startOrigin({ host: address });
    const socks = await startMicrosocks();
    const client = await makeClient({ proxy: socks.url(scheme) });
    expect((await client.get(`http://${name}:${origin.port}/named`)).text()).toBe('http /named');
    expect(await socks.waitConnected(1)).toEqual([`${name}:${origin.port}`]);
  });

  it('user/password authentication', async () => {
    const socks = await startMicrosocks({ auth: AUTH });
    const origin = await startOrigin();
    const client = await makeClient({ proxy: new ProxyConfig(socks.url()) });
    expect(socks.url()).toContain('p%40ss%20word');
    expect((await client.get(`http://0.0.0.0:${origin.port}/auth`)).text()).toBe('http /auth');
    expect(await socks.waitConnected(1)).toEqual([`0.0.0.0:${origin.port}`]);
  });

  it('wrong credentials: a Socks5Error at the authentication step', async () => {
    const socks = await startMicrosocks({ auth: AUTH });
    const origin = await startOrigin();
    const client = await makeClient({ proxy: `socks5://bob:wrong@127.0.0.1:${socks.port}` });
    const err = await rejection(client.get(`http://0.0.0.0:${origin.port}/`));
    expect(err).toBeInstanceOf(ConnectError);
    expect((err as ConnectError).address).toBe(`0.0.0.0:${origin.port}`);
    const cause = err.cause as Socks5Error;
    expect(cause).toBeInstanceOf(Socks5Error);
    expect(cause.step).toBe('authentication');
    expect(err.message).toMatch(/rejected the user name and password/);
    expect(err.message).not.toContain('wrong');
    expect(origin.hits).toEqual([]);
  });

  it('no credentials for a proxy that needs them: no acceptable method', async () => {
    const socks = await startMicrosocks({ auth: AUTH });
    const client = await makeClient({ proxy: `socks5://127.0.0.1:${socks.port}` });
    const err = await rejection(client.get('http://0.0.0.0:9/'));
    const cause = err.cause as Socks5Error;
    expect(cause).toBeInstanceOf(Socks5Error);
    expect(cause.step).toBe('greeting');
    expect(err.message).toMatch(/accepts none of the offered authentication methods/);
  });

  it('the origin refuses: microsocks answers reply 5, connection refused', async () => {
    const socks = await startMicrosocks();
    const closed = await freePort();
    const client = await makeClient({ proxy: socks.url() });
    const err = await rejection(client.get(`http://0.0.0.0:${closed}/`));
    expect(err).toBeInstanceOf(ConnectError);
    const cause = err.cause as Socks5Error;
    expect(cause.reply).toBe(5);
    expect(cause.step).toBe('connect');
    expect(err.message).toMatch(/could not connect to 0\.0\.0\.0:\d+: connection refused \(reply 0x05\)/);
  });
});
