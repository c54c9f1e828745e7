/**
 * The cookies plugin and helpers: RFC 6265 parsing vectors, the jar's storage model (domain,
 * path, secure, expiry, public suffixes, IPs), stringify/addCookie, and the plugin end to end
 * against the project's server across a redirect chain on 127.0.0.1.
 */
import { describe, expect, it } from 'vitest';
import { ArgumentError, Client, Request, Response, createKernel } from '../../../kernel/index.js';
import { Cookie, CookieJar, Cookies, addCookie, cookies, cookiesOf, getJarCookies, getRequestCookies, parseSetCookie, presets, setCookies, stringify } from '../../../plugins/index.js';
import { redirects } from '../../../plugins/redirects/index.js';
import { onCleanup, startServer } from '../../helpers/server.js';

const NOW = Date.UTC(2024, 0, 1);

describe('parseSetCookie (RFC 6265 §5.2)', () => {
  it.each<[string, Partial<Cookie> | undefined]>([
    ['a=b', { name: 'a', value: 'b', path: '', domain: '', secure: false, httpOnly: false }],
    ['a="quoted value"', { name: 'a', value: 'quoted value' }],
    ['  a = b  ; Path=/x', { name: 'a', value: 'b', path: '/x' }],
    ['a=b; SECURE; hTtPoNlY; PaTh=/p; DoMaIn=.Example.COM', { secure: true, httpOnly: true, path: '/p', domain: 'example.com' }],
    ['a=b; samesite=STRICT', { sameSite: 'strict' }],
    ['a=b; SameSite=Lax', { sameSite: 'lax' }],
    ['a=b; SameSite=None; Secure', { sameSite: 'none', secure: true }],
    ['a=b; SameSite=bogus', { sameSite: undefined }],
    ['a=b; Max-Age=60', { maxAge: 60 }],
    ['a=b; Max-Age=-5', { maxAge: 0 }],
    ['a=b; Max-Age=1x', { maxAge: undefined }],
    ['a=b; Path=relative', { path: '' }],
    ['a=b; Domain=', { domain: '' }],
    ['a=b; Unknown=zzz; Foo', { name: 'a', value: 'b' }],
    ['a=', { name: 'a', value: '' }],
    ['noequals', undefined],
    ['=b', undefined],
    ['a b=c', undefined],
    ['a=b\x01c', undefined],
    ['a="x"y"', undefined],
    ['', undefined],
  ])('%j', (header, want) => {
    const c = parseSetCookie(header);
    if (want === undefined) expect(c).toBeUndefined();
    else expect(c).toMatchObject(want);
  });

  it.each([
    ['Wed, 09 Jun 2021 10:18:14 GMT', Date.UTC(2021, 5, 9, 10, 18, 14)],
    ['Wednesday, 09-Jun-21 10:18:14 GMT', Date.UTC(2021, 5, 9, 10, 18, 14)],
    ['Sun Nov  6 08:49:37 1994', Date.UTC(1994, 10, 6, 8, 49, 37)],
    ['"Thu, 01 Jan 1970 00:00:00 GMT"', 0],
  ])('Expires=%s', (date, ms) => {
    expect(parseSetCookie(`a=b; Expires=${date}`)!.expires!.getTime()).toBe(ms);
  });

  it('an invalid Expires is ignored; the last attribute wins', () => {
    expect(parseSetCookie('a=b; Expires=not a date')!.expires).toBeUndefined();
    expect(parseSetCookie('a=b; Path=/one; path=/two')!.path).toBe('/two');
    expect(parseSetCookie('a=b; Expires=Wed, 30 Feb 2021 10:00:00 GMT')!.expires).toBeUndefined();
  });

  it('never throws on junk', () => {
    for (const s of [';;;', '=;=;=', 'a=b;;;;', '\u0000', 'a=b; Expires=99:99:99 99 Foo 99999']) expect(() => parseSetCookie(s)).not.toThrow();
    expect(parseSetCookie(undefined as unknown as string)).toBeUndefined();
  });
});

/** Stores each Set-Cookie value from `scheme://host/path` into a fresh jar (or `jar`). */
function store(url: string, setCookie: string[], jar = new CookieJar(), now = NOW): CookieJar {
  const u = new URL(url);
  setCookies(
    jar,
    u.protocol,
    u.hostname,
    u.pathname,
    setCookie.map((v) => ['Set-Cookie', v] as const),
    now,
  );
  return jar;
}
function sent(jar: CookieJar, url: string, now: number | Date = NOW): string {
  const u = new URL(url);
  return getJarCookies(jar, u.protocol, u.hostname, u.pathname, now)
    .map((c) => `${c.name}=${c.value}`)
    .join('; ');
}

describe('CookieJar: domains', () => {
  it.each<[string, string, string, string]>([
    // set from, Set-Cookie, request to, expected Cookie
    ['http://example.com/', 'a=1', 'http://example.com/', 'a=1'],
    ['http://example.com/', 'a=1', 'http://www.example.com/', ''], // host-only
    ['http://example.com/', 'a=1; Domain=example.com', 'http://www.example.com/', 'a=1'],
    ['http://example.com/', 'a=1; Domain=.example.com', 'http://a.b.example.com/', 'a=1'],
    ['http://www.example.com/', 'a=1; Domain=example.com', 'http://example.com/', 'a=1'],
    ['http://www.example.com/', 'a=1; Domain=other.com', 'http://other.com/', ''], // not domain-matching
    ['http://www.example.com/', 'a=1; Domain=ww.example.com', 'http://www.example.com/', ''],
    ['http://example.com/', 'a=1; Domain=www.example.com', 'http://www.example.com/', ''], // child of host
    ['http://example.com/', 'a=1', 'http://notexample.com/', ''],
    ['http://foo.example.com/', 'a=1; Domain=example.com', 'http://badexample.com/', ''],
    ['http://EXAMPLE.com/', 'a=1; Domain=Example.COM', 'http://example.COM/', 'a=1'],
  ])('%s %j → %s', (from, header, to, want) => {
    expect(sent(store(from, [header]), to)).toBe(want);
  });

  it.each(['com', 'co.uk', '.co.uk', 'github.io'])('Domain=%s (a public suffix) is refused', (domain) => {
    const host = domain.replace(/^\./, '') === 'com' ? 'www.example.com' : domain === 'github.io' ? 'me.github.io' : 'www.example.co.uk';
    const jar = store(`http://${host}/`, [`a=1; Domain=${domain}`]);
    expect(jar.entries.size).toBe(0);
    expect(sent(jar, `http://${host}/`)).toBe('');
  });

  it('a Domain equal to a public-suffix host is host-only', () => {
    const jar = store('http://localhost/', ['a=1; Domain=localhost']);
    expect(sent(jar, 'http://localhost/')).toBe('a=1');
    expect(sent(jar, 'http://x.localhost/')).toBe('');
  });

  it('IP hosts: no parent domains, Domain must equal the IP', () => {
    expect(store('http://127.0.0.1/', ['a=1; Domain=0.0.1']).entries.size).toBe(0);
    expect(store('http://127.0.0.1/', ['a=1; Domain=0.1']).entries.size).toBe(0);
    expect(store('http://127.0.0.1/', ['a=1; Domain=127.0.0.2']).entries.size).toBe(0);
    const jar = store('http://127.0.0.1/', ['a=1; Domain=127.0.0.1', 'b=2']);
    expect(sent(jar, 'http://127.0.0.1/')).toBe('a=1; b=2');
    expect(sent(jar, 'http://127.0.0.2/')).toBe('');
    expect(sent(store('http://[::1]/', ['c=3']), 'http://[::1]/x')).toBe('c=3');
  });

  it('entries are keyed by host and the given map is used without copying', () => {
    const map = new Map<string, Map<string, Cookie>>();
    const jar = new CookieJar(map);
    store('http://www.example.com/', ['a=1', 'b=2; Domain=example.com'], jar);
    expect(jar.entries).toBe(map);
    expect([...map.keys()].sort()).toEqual(['example.com', 'www.example.com']);
    expect(map.get('www.example.com')!.get('a;/')!.hostOnly).toBe(true);
  });
});

describe('CookieJar: paths, secure, expiry, order', () => {
  it.each<[string, string, string, string]>([
    ['http://h.com/a/b', 'x=1', 'http://h.com/a/c', 'x=1'], // default path /a
    ['http://h.com/a/b', 'x=1', 'http://h.com/a', 'x=1'],
    ['http://h.com/a/b', 'x=1', 'http://h.com/', ''],
    ['http://h.com/a/b', 'x=1', 'http://h.com/ab', ''],
    ['http://h.com/a', 'x=1', 'http://h.com/zzz', 'x=1'], // default path /
    ['http://h.com/', 'x=1; Path=/docs', 'http://h.com/docs/web', 'x=1'],
    ['http://h.com/', 'x=1; Path=/docs/', 'http://h.com/docs/web', 'x=1'],
    ['http://h.com/', 'x=1; Path=/docs', 'http://h.com/docsets', ''],
    ['http://h.com/', 'x=1; Path=/docs', 'http://h.com/Docs', ''],
    ['https://h.com/', 'x=1; Secure', 'https://h.com/', 'x=1'],
    ['https://h.com/', 'x=1; Secure', 'http://h.com/', ''],
    ['http://h.com/', 'x=1; Secure', 'https://h.com/', ''], // not stored from http
    ['http://localhost/', 'x=1; Secure', 'http://localhost/', 'x=1'], // localhost is secure
    ['http://127.0.0.1/', 'x=1; Secure', 'http://127.0.0.1/', 'x=1'],
    ['http://h.com/', '__Secure-x=1; Secure', 'http://h.com/', ''],
    ['https://h.com/', '__Secure-x=1; Secure', 'https://h.com/', '__Secure-x=1'],
    ['https://h.com/', '__Host-x=1; Secure; Path=/', 'https://h.com/', '__Host-x=1'],
    ['https://h.com/', '__Host-x=1; Secure; Path=/; Domain=h.com', 'https://h.com/', ''],
    // RFC 6265bis §4.1.3: the prefixes match case-insensitively.
    ['http://h.com/', '__secure-d=evil', 'http://h.com/', ''],
    ['https://h.com/', '__SECURE-d=evil', 'https://h.com/', ''],
    ['https://h.com/', '__sEcUrE-d=1; Secure', 'https://h.com/', '__sEcUrE-d=1'],
    ['http://h.com/', '__host-f=evil', 'http://h.com/', ''],
    ['https://h.com/a/b', '__HOST-f=evil; Secure', 'https://h.com/a/b', ''], // path /a, not /
    ['https://h.com/', '__host-f=evil; Secure; Path=/; Domain=h.com', 'https://h.com/', ''],
    ['https://h.com/', '__hOsT-f=1; Secure; Path=/', 'https://h.com/', '__hOsT-f=1'],
  ])('%s %j → %s', (from, header, to, want) => {
    expect(sent(store(from, [header]), to)).toBe(want);
  });

  it('Max-Age wins over Expires, expired cookies are removed', () => {
    const future = new Date(NOW + 86_400_000).toUTCString();
    const past = new Date(NOW - 86_400_000).toUTCString();
    const jar = store('http://h.com/', [`a=1; Expires=${past}; Max-Age=100`, `b=2; Expires=${future}; Max-Age=0`, `c=3; Expires=${future}`, `d=4; Expires=${past}`, 'e=5']);
    expect(sent(jar, 'http://h.com/')).toBe('a=1; c=3; e=5');
    expect(sent(jar, 'http://h.com/', NOW + 99_000)).toBe('a=1; c=3; e=5');
    expect(sent(jar, 'http://h.com/', NOW + 100_000)).toBe('c=3; e=5');
    expect(jar.entries.get('h.com')!.has('a;/')).toBe(false); // removed when met expired
    expect(sent(jar, 'http://h.com/', new Date(NOW + 2 * 86_400_000))).toBe('e=5');
  });

  it('a later cookie replaces (same name, domain, path); an expired one deletes', () => {
    const jar = store('http://h.com/', ['a=1', 'a=2; Path=/x']);
    store('http://h.com/', ['a=3'], jar, NOW + 10);
    expect(sent(jar, 'http://h.com/x')).toBe('a=2; a=3');
    store('http://h.com/', ['a=gone; Max-Age=0'], jar);
    expect(sent(jar, 'http://h.com/x')).toBe('a=2');
  });

  it('http cannot overwrite a Secure cookie', () => {
    const jar = store('https://h.com/', ['a=1; Secure']);
    store('http://h.com/', ['a=2'], jar);
    expect(sent(jar, 'https://h.com/')).toBe('a=1');
  });

  it('order: longest path first, then earliest creation (kept on replace)', () => {
    const jar = store('http://h.com/', ['b=1; Path=/'], new CookieJar(), NOW);
    store('http://h.com/', ['a=1; Path=/'], jar, NOW + 1);
    store('http://h.com/', ['c=1; Path=/a/b'], jar, NOW + 2);
    store('http://h.com/', ['d=1; Path=/a'], jar, NOW + 3);
    store('http://h.com/', ['b=2; Path=/'], jar, NOW + 4);
    expect(sent(jar, 'http://h.com/a/b/c', NOW + 5)).toBe('c=1; d=1; b=2; a=1');
  });
});

describe('helpers', () => {
  it('stringify: request and Set-Cookie forms, and the prefix form', () => {
    const c = new Cookie('id', 'a b', { path: '/', domain: '.Example.com', maxAge: 60, secure: true, httpOnly: true, sameSite: 'lax', expires: new Date(0) });
    expect(stringify(c)).toBe('id="a b"');
    expect(stringify(c, false)).toBe('id="a b"; Path=/; Domain=example.com; Expires=Thu, 01 Jan 1970 00:00:00 GMT; Max-Age=60; HttpOnly; Secure; SameSite=Lax');
    const list = [new Cookie('a', '1'), new Cookie('b', '2')];
    expect(stringify('', list)).toBe('a=1; b=2');
    expect(stringify('x=0', list)).toBe('x=0; a=1; b=2');
    expect(stringify('x=0', [])).toBe('x=0');
    expect(stringify('', [new Cookie('a', '1', { path: '/p' })], false)).toBe('a=1; Path=/p');
    expect(parseSetCookie(stringify(c, false))).toMatchObject({ name: 'id', value: 'a b', domain: 'example.com', maxAge: 60, sameSite: 'lax', secure: true, httpOnly: true });
  });

  it('addCookie, cookies of a message, getRequestCookies', () => {
    const req = new Request('GET', '/');
    addCookie(req, new Cookie('a', '1'));
    addCookie(req, new Cookie('b', '2', { path: '/ignored' }));
    expect(req.headers.getAll('Cookie')).toEqual(['a=1; b=2']);
    expect(getRequestCookies(req).map((c) => [c.name, c.value])).toEqual([
      ['a', '1'],
      ['b', '2'],
    ]);
    expect(Cookies.cookies(req)).toEqual(cookiesOf(req));
    const res = new Response(200);
    addCookie(res, new Cookie('a', '1', { path: '/' }));
    addCookie(res, new Cookie('b', '2', { httpOnly: true }));
    expect(res.headers.getAll('Set-Cookie')).toEqual(['a=1; Path=/', 'b=2; HttpOnly']);
    res.headers.push('Set-Cookie', 'broken');
    expect(cookiesOf(res).map((c) => c.name)).toEqual(['a', 'b']);
    expect(getRequestCookies(new Request('GET', '/', { Cookie: 'x=1; bad; y="2"; =z' })).map((c) => `${c.name}=${c.value}`)).toEqual(['x=1', 'y=2']);
  });

  it('the Cookies namespace and the default preset', () => {
    expect(Object.keys(Cookies).sort()).toEqual(['Cookie', 'CookieJar', 'addCookie', 'cookies', 'getCookies', 'getRequestCookies', 'parseSetCookie', 'setCookies', 'stringify']);
    expect(Cookies.getCookies).toBe(getJarCookies);
    expect(presets.defaults).toContain(cookies);
  });
});

describe('building refuses what would change the header', () => {
  const bad = (f: () => unknown, message: RegExp): void => {
    expect(f).toThrow(ArgumentError);
    expect(f).toThrow(message);
  };

  it('a value with ";" cannot add attributes: refused at construction and when rendered after a change', () => {
    bad(() => new Cookie('n', 'x;Domain=evil.example;Path=/admin'), /cookie value .*';'/);
    const c = new Cookie('n', 'x');
    c.value = 'x;Domain=evil.example;Path=/admin';
    bad(() => stringify(c), /cookie value .*';'/);
    bad(() => stringify(c, false), /cookie value .*';'/);
    bad(() => stringify('', [c], false), /cookie value/);
    bad(() => addCookie(new Response(200), c), /cookie value/);
    bad(() => addCookie(new Request('GET', '/'), c), /cookie value/);
  });

  it.each([
    ['x\r\nSet-Cookie: evil=1', /U\+000D/],
    ['a\nb', /U\+000A/],
    ['nul\0', /U\+0000/],
    ['del\x7f', /U\+007F/],
    ['q"uote', /'"'/],
    ['back\\slash', /'\\'/],
    ['euro€', /U\+20AC/],
  ])('value %j is refused', (value, char) => {
    bad(() => new Cookie('n', value), /cookie value/);
    bad(() => new Cookie('n', value), char);
  });

  it.each(['', 'a;b', 'a\nb', 'a b', 'a=b', 'a,b', 'é', '(x)'])('name %j is refused (a name is a token)', (name) => {
    bad(() => new Cookie(name, 'v'), /cookie name/);
    const c = new Cookie('ok', 'v');
    c.name = name;
    bad(() => stringify(c), /cookie name/);
  });

  it('space and comma go out in the quoted form; an empty value and obs-text are kept', () => {
    expect(stringify(new Cookie('a', 'x y'))).toBe('a="x y"');
    expect(stringify(new Cookie('a', 'x,y'))).toBe('a="x,y"');
    expect(stringify(new Cookie('a', ''))).toBe('a=');
    expect(stringify(new Cookie('a', 'caf\u00e9'))).toBe('a=caf\u00e9');
    expect(parseSetCookie(stringify(new Cookie('a', 'x y'), false))!.value).toBe('x y');
  });

  it('a value in the RFC 6265 quoted form (as curl keeps it in cookies.txt) is sent as it is', () => {
    expect(stringify(new Cookie('a', '"abc"'))).toBe('a="abc"');
    expect(stringify(new Cookie('a', '"x y"'), false)).toBe('a="x y"');
    expect(stringify(new Cookie('a', '""'))).toBe('a=""');
    expect(parseSetCookie(stringify(new Cookie('a', '"abc"'), false))!.value).toBe('abc');
    for (const v of ['"', '"abc', 'abc"', '"a"b"', '"a;b"', '"a\\"']) bad(() => new Cookie('a', v), /cookie value/);
    expect(parseSetCookie('a=""x""')).toBeUndefined(); // one pair of quotes is taken off; none may be left
  });

  it('sameSite must be lax, strict or none (any case)', () => {
    bad(() => new Cookie('n', 'v', { sameSite: 'lax; Domain=evil.example' as never }), /sameSite/);
    bad(() => new Cookie('n', 'v', { sameSite: 'bogus' as never }), /sameSite/);
    const c = new Cookie('n', 'v');
    (c as { sameSite: unknown }).sameSite = 'bogus';
    bad(() => stringify(c, false), /sameSite/);
    expect(stringify(new Cookie('n', 'v', { sameSite: 'Strict' as never }), false)).toBe('n=v; SameSite=Strict');
    expect(new Cookie('n', 'v', { sameSite: 'NONE' as never }).sameSite).toBe('none');
  });

  it.each([
    ['path', { path: '/a;Domain=evil.example' }, /cookie path .*';'/],
    ['path', { path: '/a\r\nX: y' }, /cookie path .*U\+000D/],
    ['path', { path: '/caf\u20ac' }, /cookie path .*U\+20AC/],
    ['domain', { domain: 'example.com;Path=/' }, /cookie domain .*';'/],
    ['domain', { domain: 'exa mple.com' }, /cookie domain .*U\+0020/],
    ['domain', { domain: 'ex\nample.com' }, /cookie domain .*U\+000A/],
    ['domain', { domain: 'b\u00fccher.example' }, /cookie domain .*U\+00FC/],
    ['expires', { expires: 'tomorrow' as never }, /expires must be a Date/],
    ['expires', { expires: new Date(NaN) }, /expires must be a valid Date/],
    ['maxAge', { maxAge: '60; Domain=evil.example' as never }, /maxAge must be a finite number/],
    ['maxAge', { maxAge: NaN }, /maxAge must be a finite number/],
    ['maxAge', { maxAge: Infinity }, /maxAge must be a finite number/],
    ['secure', { secure: 'yes' as never }, /secure must be a boolean/],
    ['httpOnly', { httpOnly: 1 as never }, /httpOnly must be a boolean/],
  ])('%s %j is refused', (_field, options, message) => {
    bad(() => new Cookie('n', 'v', options), message);
  });

  it('attributes changed after construction are checked when rendered', () => {
    const c = new Cookie('n', 'v');
    c.path = '/x; Domain=evil.example';
    bad(() => stringify(c, false), /cookie path/);
    c.path = '/';
    c.domain = 'evil.example; Secure';
    bad(() => addCookie(new Response(200), c), /cookie domain/);
    c.domain = '';
    c.maxAge = '1; Domain=x' as never;
    bad(() => stringify(c, false), /maxAge/);
  });

  it('parsing never yields a cookie that cannot be rendered back (and setCookies does not throw)', () => {
    expect(parseSetCookie('a=b; Path=/x\x01y')).toBeUndefined();
    expect(parseSetCookie('a=b; Domain=exa mple.com')).toBeUndefined();
    expect(parseSetCookie('a=b; Domain=ex\u00e4mple.com')).toBeUndefined();
    expect(parseSetCookie('a=b; Path=/\u20ac')).toBeUndefined();
    const jar = store('http://h.com/', ['a=b; Path=/x\x01y', 'c=d; Domain=h .com', 'e=f']);
    expect(sent(jar, 'http://h.com/')).toBe('e=f');
    for (const h of ['a=b; Path=/ok; Domain=h.com; Max-Age=5; Secure; HttpOnly; SameSite=Lax', 'a="q v"']) {
      const c = parseSetCookie(h)!;
      expect(parseSetCookie(stringify(c, false))).toMatchObject({ name: c.name, value: c.value, path: c.path, domain: c.domain });
    }
  });

  it("a Response built by a handler with addCookie reaches a real client as one header (the project's server)", async () => {
    const { port } = await startServer(() => {
      const res = new Response(200, 'ok');
      addCookie(res, new Cookie('s', 'a b', { path: '/', sameSite: 'strict', httpOnly: true }));
      return res;
    });
    const client = new Client();
    onCleanup(() => client.close());
    const res = await client.get(`http://127.0.0.1:${port}/`);
    expect(res.headers.getAll('Set-Cookie')).toEqual(['s="a b"; Path=/; HttpOnly; SameSite=Strict']);
  });
});

describe('cookies plugin end to end', () => {
  async function setup(jar?: CookieJar) {
    const seen: { target: string; cookie: string | undefined }[] = [];
    const { port } = await startServer((req) => {
      seen.push({ target: req.target, cookie: req.headers.getAll('Cookie').join(' | ') || undefined });
      const path = req.target.split('?')[0];
      if (path === '/login')
        return new Response(302, 'moved', {
          headers: [
            ['Location', '/step'],
            ['Set-Cookie', 'session=abc; Path=/; HttpOnly'],
            ['Set-Cookie', 'flash=1; Path=/step'],
          ],
        });
      if (path === '/step')
        return new Response(302, 'moved', {
          headers: [
            ['Location', '/home'],
            ['Set-Cookie', 'theme=dark; Max-Age=3600'],
            ['Set-Cookie', 'bad; Domain=com'],
          ],
        });
      if (path === '/home') return new Response(200, 'home', { headers: [['Set-Cookie', 'lang=en']] });
      return new Response(200, 'ok');
    });
    const kernel = createKernel().register([cookies, redirects]);
    await kernel.ready();
    const client = new Client({ kernel, ...(jar !== undefined ? { cookiejar: jar } : {}) });
    onCleanup(async () => {
      await client.close();
      await kernel.close();
    });
    return { base: `http://127.0.0.1:${port}`, seen, client };
  }

  it('cookies set across a redirect chain are stored and sent on later hops and requests', async () => {
    const jar = new CookieJar();
    const { base, seen, client } = await setup(jar);
    const res = await client.get(`${base}/login`);
    expect(res.status).toBe(200);
    expect(seen.map((s) => [s.target, s.cookie])).toEqual([
      ['/login', undefined],
      ['/step', 'flash=1; session=abc'], // longest path first
      ['/home', 'session=abc; theme=dark'],
    ]);
    expect([...jar.entries.keys()]).toEqual(['127.0.0.1']);
    await client.get(`${base}/other`);
    expect(seen.at(-1)).toEqual({ target: '/other', cookie: 'session=abc; theme=dark; lang=en' });
  });

  it('a user Cookie header is kept and merged, not duplicated on hops; the user wins a name clash', async () => {
    const jar = new CookieJar();
    const { base, seen, client } = await setup(jar);
    await client.get(`${base}/login`, { headers: { Cookie: 'mine=1; theme=light' } });
    expect(seen.map((s) => s.cookie)).toEqual(['mine=1; theme=light', 'mine=1; theme=light; flash=1; session=abc', 'mine=1; theme=light; session=abc']);
    await client.get(`${base}/x`, { headers: { Cookie: 'mine=2' } });
    expect(seen.at(-1)!.cookie).toBe('mine=2; session=abc; theme=dark; lang=en');
  });

  it('per-call cookiejar: false sends and stores nothing', async () => {
    const jar = new CookieJar();
    const { base, seen, client } = await setup(jar);
    await client.get(`${base}/login`, { cookiejar: false });
    expect(seen.every((s) => s.cookie === undefined)).toBe(true);
    expect(jar.entries.size).toBe(0);
  });

  it('no jar: no cookie sent, the user header untouched', async () => {
    const { base, seen, client } = await setup();
    await client.get(`${base}/login`);
    await client.get(`${base}/x`, { headers: { Cookie: 'u=1' } });
    expect(seen.map((s) => s.cookie)).toEqual([undefined, undefined, undefined, 'u=1']);
  });

  it("a chain across 127.0.0.1 and localhost keeps each host's cookies to itself", async () => {
    const jar = new CookieJar();
    const seen: { host: string; target: string; cookie: string | undefined }[] = [];
    const { port } = await startServer((req) => {
      const host = (req.headers.get('Host') ?? '').split(':')[0]!;
      seen.push({ host, target: req.target, cookie: req.headers.getAll('Cookie').join(' | ') || undefined });
      if (req.target === '/a')
        return new Response(302, '', {
          headers: [
            ['Location', `http://localhost:${port}/b`],
            ['Set-Cookie', 'ip=1; Path=/'],
          ],
        });
      if (req.target === '/b')
        return new Response(302, '', {
          headers: [
            ['Location', `http://127.0.0.1:${port}/c`],
            ['Set-Cookie', 'name=2; Path=/'],
          ],
        });
      return new Response(200, 'done', { headers: [['Set-Cookie', 'ip2=3; Path=/']] });
    });
    const kernel = createKernel().register([cookies, redirects]);
    await kernel.ready();
    const client = new Client({ kernel, cookiejar: jar });
    onCleanup(async () => {
      await client.close();
      await kernel.close();
    });
    const res = await client.get(`http://127.0.0.1:${port}/a`);
    expect(res.status).toBe(200);
    expect(seen).toEqual([
      { host: '127.0.0.1', target: '/a', cookie: undefined },
      { host: 'localhost', target: '/b', cookie: undefined },
      { host: '127.0.0.1', target: '/c', cookie: 'ip=1' },
    ]);
    await client.get(`http://localhost:${port}/d`);
    expect(seen.at(-1)).toEqual({ host: 'localhost', target: '/d', cookie: 'name=2' });
    expect([...jar.entries.keys()].sort()).toEqual(['127.0.0.1', 'localhost']);
  });
});
