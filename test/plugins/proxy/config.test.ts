/**
 * ProxyConfig, proxyURL and proxyFromEnvironment: which proxy each URL gets, proxy URL parsing
 * (schemes, default ports, percent-decoded credentials), the environment variables (both cases,
 * precedence, empty values, the CGI refusal of HTTP_PROXY), and argument errors.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { ArgumentError } from '../../../kernel/index.js';
import { NoProxy, ProxyConfig, ProxyEndpoint, proxyFromEnvironment, proxyURL } from '../../../plugins/proxy/index.js';

const VARS = ['http_proxy', 'HTTP_PROXY', 'https_proxy', 'HTTPS_PROXY', 'all_proxy', 'ALL_PROXY', 'no_proxy', 'NO_PROXY', 'REQUEST_METHOD'];
const saved = new Map(VARS.map((v) => [v, process.env[v]]));
afterEach(() => {
  for (const [k, v] of saved) {
    if (v === undefined) delete process.env[k];
    else process.env[k] = v;
  }
});
function setEnv(vars: Record<string, string>): void {
  for (const v of VARS) delete process.env[v];
  Object.assign(process.env, vars);
}

const href = (e: ProxyEndpoint | null): string | null => (e === null ? null : e.href);

describe('ProxyEndpoint (proxy URLs)', () => {
  it.each([
    ['http://proxy.test:3128', 'http:', 'proxy.test', 3128],
    ['http://proxy.test', 'http:', 'proxy.test', 80],
    ['proxy.test:3128', 'http:', 'proxy.test', 3128],
    ['socks5://127.0.0.1', 'socks5:', '127.0.0.1', 1080],
    ['socks5h://Proxy.Test:9050', 'socks5h:', 'proxy.test', 9050],
    ['https://proxy.test', 'https:', 'proxy.test', 443],
    ['http://[::1]:3128', 'http:', '::1', 3128],
    ['socks5://[::1]:1081', 'socks5:', '::1', 1081],
  ])('%s', (url, protocol, host, port) => {
    const e = new ProxyEndpoint(url);
    expect([e.protocol, e.host, e.port]).toEqual([protocol, host, port]);
  });

  it('percent-decodes the user info; href and messages never show it', () => {
    const e = new ProxyEndpoint('http://us%40er:p%3Ass%20w@proxy.test:3128');
    expect(e.username).toBe('us@er');
    expect(e.password).toBe('p:ss w');
    expect(e.authorization).toBe(`Basic ${Buffer.from('us@er:p:ss w').toString('base64')}`);
    expect(e.href).toBe('http://proxy.test:3128');
    expect(String(e)).toBe('http://proxy.test:3128');
    expect(e.address).toBe('proxy.test:3128');
  });

  it('no user info: no Proxy-Authorization', () => {
    expect(new ProxyEndpoint('http://proxy.test').authorization).toBeNull();
  });

  it.each([
    ['socks4://proxy.test', /unsupported proxy scheme socks4:/],
    ['ftp://proxy.test', /unsupported proxy scheme ftp:/],
    ['', /empty/],
    ['http://', /not a valid URL|no host/],
    ['socks5://:pw@proxy.test', /user name/],
    [`socks5://${'u'.repeat(256)}:p@proxy.test`, /255 bytes/],
  ])('refuses %j', (url, message) => {
    expect(() => new ProxyEndpoint(url)).toThrow(ArgumentError);
    expect(() => new ProxyEndpoint(url)).toThrow(message);
  });

  it('an error message never shows the password', () => {
    try {
      new ProxyEndpoint('http://user:secret@exa mple:99999');
      expect.unreachable();
    } catch (err) {
      expect((err as Error).message).not.toContain('secret');
    }
  });
});

describe('ProxyConfig selection', () => {
  it('ProxyConfig() is direct', () => {
    const c = new ProxyConfig();
    expect(c.isDirect).toBe(true);
    expect(c.proxyFor('http://example.com/')).toBeNull();
    expect(c.proxyFor('https://example.com/')).toBeNull();
    expect(String(c)).toBe('ProxyConfig(direct)');
  });

  it('ProxyConfig(url) sends every scheme through it, except noProxy hosts and loopback', () => {
    const c = new ProxyConfig('http://proxy.test:3128', { noProxy: '.internal' });
    expect(href(c.proxyFor('http://example.com/'))).toBe('http://proxy.test:3128');
    expect(href(c.proxyFor('https://example.com/'))).toBe('http://proxy.test:3128');
    expect(href(c.proxyFor('wss://example.com/'))).toBe('http://proxy.test:3128');
    expect(c.proxyFor('http://db.internal/')).toBeNull();
    expect(c.proxyFor('http://localhost:8080/')).toBeNull();
    expect(c.proxyFor('http://127.0.0.1:8080/')).toBeNull();
    expect(c.proxyFor('http://[::1]:8080/')).toBeNull();
  });

  it('per scheme: http for http/ws, https for https/wss, all as the fallback', () => {
    const c = new ProxyConfig({ http: 'http://h.test:1', https: 'socks5://s.test:2', all: 'http://a.test:3' });
    expect(href(c.proxyFor('http://x.test/'))).toBe('http://h.test:1');
    expect(href(c.proxyFor('ws://x.test/'))).toBe('http://h.test:1');
    expect(href(c.proxyFor('https://x.test/'))).toBe('socks5://s.test:2');
    expect(href(c.proxyFor('wss://x.test/'))).toBe('socks5://s.test:2');
    const onlyAll = new ProxyConfig({ all: 'http://a.test:3', https: null });
    expect(href(onlyAll.proxyFor('https://x.test/'))).toBe('http://a.test:3');
    const onlyHttp = new ProxyConfig({ http: 'http://h.test:1' });
    expect(onlyHttp.proxyFor('https://x.test/')).toBeNull();
  });

  it('noProxy ports use the effective port of the URL', () => {
    const c = new ProxyConfig('http://p.test', { noProxy: 'x.test:443' });
    expect(c.proxyFor('https://x.test/')).toBeNull();
    expect(c.proxyFor('http://x.test/')).not.toBeNull();
    expect(c.proxyFor('https://x.test:8443/')).not.toBeNull();
  });

  it('noProxy takes a NoProxy, a string or an array', () => {
    for (const noProxy of [new NoProxy('x.test'), 'x.test', ['x.test']]) {
      expect(new ProxyConfig('http://p.test', { noProxy }).proxyFor('http://a.x.test/')).toBeNull();
    }
  });

  it('proxyURL(url, { noProxy }) is ProxyConfig(url, { noProxy })', () => {
    const c = proxyURL('socks5h://p.test:1080', { noProxy: '10.0.0.0/8' });
    expect(c).toBeInstanceOf(ProxyConfig);
    expect(href(c.proxyFor('https://example.com/'))).toBe('socks5h://p.test:1080');
    expect(c.proxyFor('http://10.1.1.1/')).toBeNull();
  });

  it('an https:// proxy URL is accepted by the config', () => {
    const c = new ProxyConfig('https://p.test');
    expect(c.proxyFor('http://example.com/')!.protocol).toBe('https:');
  });

  it.each([
    [() => new ProxyConfig({ http: 'socks4://p' }), /unsupported proxy scheme/],
    [() => new ProxyConfig({ bogus: 1 } as never), /unknown option "bogus"/],
    [() => new ProxyConfig(42 as never), /ProxyConfig takes/],
    [() => new ProxyConfig({ env: 'yes' } as never), /env must be/],
    [() => new ProxyConfig('http://p', 'x' as never), /options must be an object/],
    [() => new ProxyConfig().proxyFor('ftp://x/'), /unsupported URL scheme/],
    [() => new ProxyConfig().proxyFor('not a url'), /invalid URL/],
  ])('argument error %#', (fn, message) => {
    expect(fn).toThrow(ArgumentError);
    expect(fn).toThrow(message);
  });
});

describe('proxies from the environment', () => {
  it('reads all four variables in upper case', () => {
    setEnv({ HTTP_PROXY: 'http://h.test:1', HTTPS_PROXY: 'http://s.test:2', ALL_PROXY: 'socks5://a.test', NO_PROXY: 'skip.test' });
    const c = proxyFromEnvironment();
    expect(href(c.http)).toBe('http://h.test:1');
    expect(href(c.https)).toBe('http://s.test:2');
    expect(href(c.all)).toBe('socks5://a.test:1080');
    expect(c.proxyFor('https://skip.test/')).toBeNull();
  });

  it('lower case wins over upper case; empty values are unset', () => {
    setEnv({ http_proxy: 'http://lower.test', HTTP_PROXY: 'http://upper.test', https_proxy: '', HTTPS_PROXY: 'http://s.test', no_proxy: 'a.test', NO_PROXY: 'b.test' });
    const c = proxyFromEnvironment();
    expect(href(c.http)).toBe('http://lower.test:80');
    expect(href(c.https)).toBe('http://s.test:80');
    expect(c.proxyFor('http://a.test/')).toBeNull();
    expect(c.proxyFor('http://b.test/')).not.toBeNull();
  });

  it('is read once, when called', () => {
    setEnv({ HTTPS_PROXY: 'http://first.test' });
    const c = proxyFromEnvironment();
    process.env.HTTPS_PROXY = 'http://second.test';
    expect(href(c.proxyFor('https://x.test/'))).toBe('http://first.test:80');
  });

  it('ProxyConfig({ env: true }) fills only what is left unset', () => {
    setEnv({ HTTP_PROXY: 'http://env-h.test', HTTPS_PROXY: 'http://env-s.test', NO_PROXY: 'n.test' });
    const c = new ProxyConfig({ https: 'http://mine.test', all: null, env: true });
    expect(href(c.http)).toBe('http://env-h.test:80');
    expect(href(c.https)).toBe('http://mine.test:80');
    expect(c.all).toBeNull();
    expect(c.proxyFor('http://n.test/')).toBeNull();
    const off = new ProxyConfig({ https: 'http://mine.test' });
    expect(off.http).toBeNull();
  });

  it('takes an explicit variables object', () => {
    const c = proxyFromEnvironment({ ALL_PROXY: 'socks5h://a.test:9', no_proxy: '*' });
    expect(href(c.all)).toBe('socks5h://a.test:9');
    expect(c.proxyFor('http://example.com/')).toBeNull();
  });

  it('localhost and loopback never use environment proxies', () => {
    const c = proxyFromEnvironment({ ALL_PROXY: 'http://p.test' });
    for (const u of ['http://localhost/', 'https://127.0.0.1:8443/', 'http://[::1]/']) expect(c.proxyFor(u)).toBeNull();
  });

  it('skips unreadable NO_PROXY entries; an unreadable proxy URL names its variable', () => {
    const c = proxyFromEnvironment({ ALL_PROXY: 'http://p.test', NO_PROXY: '10.0.0.0/99,ok.test' });
    expect(c.noProxy.entries).toEqual(['ok.test']);
    expect(() => proxyFromEnvironment({ ALL_PROXY: 'socks4://p.test' })).toThrow(/ALL_PROXY: unsupported proxy scheme/);
  });

  it('refuses HTTP_PROXY in a CGI environment (httpoxy); http_proxy still works', () => {
    const cgi = proxyFromEnvironment({ REQUEST_METHOD: 'GET', HTTP_PROXY: 'http://evil.test:8080', HTTPS_PROXY: 'http://s.test' });
    expect(cgi.http).toBeNull();
    expect(cgi.refusedHttp).toBe('http://evil.test:8080');
    expect(() => cgi.proxyFor('http://example.com/')).toThrow(ArgumentError);
    expect(() => cgi.proxyFor('http://example.com/')).toThrow(/CGI/);
    expect(cgi.proxyFor('http://localhost/')).toBeNull(); // direct anyway
    expect(href(cgi.proxyFor('https://example.com/'))).toBe('http://s.test:80');
    const lower = proxyFromEnvironment({ REQUEST_METHOD: 'GET', http_proxy: 'http://ok.test' });
    expect(href(lower.proxyFor('http://example.com/'))).toBe('http://ok.test:80');
  });
});
