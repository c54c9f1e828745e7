/**
 * Router matching without a network: segment kinds, precedence regardless of registration
 * order, backtracking, percent-decoding, trailing slashes, HEAD → GET, 405 `Allow` lists,
 * the register forms, middleware, and every pattern error. Request handlers are called
 * directly with `Request` objects (a Router is a request handler).
 */
import { describe, expect, it } from 'vitest';
import { ArgumentError, Request, Response, type RequestHandler } from '../../../kernel/index.js';
import { getParam, getParams, getRoute, register, Router } from '../../../plugins/router/index.js';

/** A handler answering with its own name, so a test sees which route ran. */
function named(name: string): RequestHandler {
  return () => new Response(200, name);
}

/** Routes `method target` through `router` and returns status, body, route and params. */
async function call(router: Router, method: string, target: string) {
  const req = new Request(method, target);
  const res = await router(req);
  return {
    status: res.status,
    body: typeof res.body === 'string' ? res.body : res.body === null ? '' : Buffer.from(res.body as Uint8Array).toString(),
    allow: res.headers.get('Allow'),
    route: getRoute(req),
    params: getParams(req),
  };
}

function matched(router: Router, method: string, target: string): string | null | string[] {
  const f = router.match(method, target);
  if (f === null) return null;
  return f.route === null ? [...f.allow] : f.route.pattern;
}

describe('segments', () => {
  it('literal, variable, regex variable, * and trailing ** each match what the reference says', async () => {
    const r = new Router()
      .get('/users', named('list'))
      .get('/users/{id}', named('one'))
      .get('/posts/{year:\\d{4}}/{slug}', named('post'))
      .get('/any/*/end', named('star'))
      .get('/files/**', named('rest'));
    expect(await call(r, 'GET', '/users')).toMatchObject({ status: 200, body: 'list', route: '/users', params: undefined });
    expect(await call(r, 'GET', '/users/42')).toMatchObject({ body: 'one', route: '/users/{id}', params: { id: '42' } });
    expect(await call(r, 'GET', '/posts/2024/hello-world')).toMatchObject({ body: 'post', params: { year: '2024', slug: 'hello-world' } });
    expect((await call(r, 'GET', '/posts/24/hello')).status).toBe(404);
    expect(await call(r, 'GET', '/any/thing/end')).toMatchObject({ body: 'star', route: '/any/*/end', params: undefined });
    expect((await call(r, 'GET', '/any/a/b/end')).status).toBe(404);
    expect(await call(r, 'GET', '/files/a/b/c.txt')).toMatchObject({ body: 'rest', params: { '**': 'a/b/c.txt' } });
    expect(await call(r, 'GET', '/files/')).toMatchObject({ body: 'rest', params: { '**': '' } });
    expect((await call(r, 'GET', '/files')).status).toBe(404);
  });

  it('a regex is anchored to the whole segment', () => {
    const r = new Router().get('/n/{id:\\d+}', named('n')).get('/a/{x:a|b}', named('ab'));
    expect(matched(r, 'GET', '/n/123')).toBe('/n/{id:\\d+}');
    expect(matched(r, 'GET', '/n/12abc')).toBeNull();
    expect(matched(r, 'GET', '/n/abc12')).toBeNull();
    // `a|b` anchored as a group: "ab" and "xb" do not match.
    expect(matched(r, 'GET', '/a/a')).toBe('/a/{x:a|b}');
    expect(matched(r, 'GET', '/a/ab')).toBeNull();
    expect(matched(r, 'GET', '/a/xb')).toBeNull();
  });

  it('variables and * take one non-empty segment; the root is its own route', async () => {
    const r = new Router().get('/', named('root')).get('/u/{id}', named('u')).get('/w/*', named('w'));
    expect((await call(r, 'GET', '/')).body).toBe('root');
    expect((await call(r, 'GET', '/u/')).status).toBe(404);
    expect((await call(r, 'GET', '/u/1/2')).status).toBe(404);
    expect((await call(r, 'GET', '/w/')).status).toBe(404);
    expect((await call(r, 'GET', '/w/x')).body).toBe('w');
  });

  it('routes on one path shape share a node but keep their own variable names', async () => {
    const r = new Router().get('/u/{id}', named('get')).delete('/u/{name}', named('del'));
    expect(await call(r, 'GET', '/u/7')).toMatchObject({ body: 'get', params: { id: '7' } });
    expect(await call(r, 'DELETE', '/u/7')).toMatchObject({ body: 'del', params: { name: '7' } });
  });
});

describe('precedence', () => {
  const routes: [string, string][] = [
    ['/a/{x}', 'var'],
    ['/a/new', 'literal'],
    ['/a/*', 'star'],
    ['/a/**', 'rest'],
    ['/a/{n:\\d+}', 'regex'],
  ];

  function orders<T>(xs: T[]): T[][] {
    if (xs.length <= 1) return [xs];
    return xs.flatMap((x, i) => orders([...xs.slice(0, i), ...xs.slice(i + 1)]).map((rest) => [x, ...rest]));
  }

  it('literal over regex variable over variable over * over **, in all 120 registration orders', async () => {
    for (const order of orders(routes)) {
      const r = new Router();
      for (const [p, n] of order) r.get(p, named(n));
      expect((await call(r, 'GET', '/a/new')).body).toBe('literal');
      expect((await call(r, 'GET', '/a/123')).body).toBe('regex');
      expect((await call(r, 'GET', '/a/abc')).body).toBe('var');
      expect((await call(r, 'GET', '/a/abc/def')).body).toBe('rest');
      expect((await call(r, 'GET', '/a/')).body).toBe('rest');
    }
  });

  it('* wins over ** when a variable does not fit', async () => {
    const r = new Router().get('/b/**', named('rest')).get('/b/*', named('star')).get('/b/{id:\\d+}', named('num'));
    expect((await call(r, 'GET', '/b/x')).body).toBe('star');
    expect((await call(r, 'GET', '/b/1')).body).toBe('num');
  });

  it('backtracks from a literal dead end to a variable', async () => {
    const r = new Router().get('/a/b/c', named('lit')).get('/{x}/b/d', named('var')).get('/a/{y}/e', named('mid'));
    expect(await call(r, 'GET', '/a/b/c')).toMatchObject({ body: 'lit' });
    expect(await call(r, 'GET', '/a/b/d')).toMatchObject({ body: 'var', params: { x: 'a' } });
    expect(await call(r, 'GET', '/a/b/e')).toMatchObject({ body: 'mid', params: { y: 'b' } });
    expect((await call(r, 'GET', '/a/b/f')).status).toBe(404);
  });

  it('a literal route for another method does not hide a variable route for this one', async () => {
    const r = new Router().post('/users/new', named('create')).get('/users/{id}', named('show'));
    expect(await call(r, 'GET', '/users/new')).toMatchObject({ body: 'show', params: { id: 'new' } });
    expect((await call(r, 'POST', '/users/new')).body).toBe('create');
    expect(await call(r, 'PUT', '/users/new')).toMatchObject({ status: 405, allow: 'POST, GET, HEAD' });
  });
});

describe('paths', () => {
  it('segments are percent-decoded: literals, variables and the rest; %2F stays in its segment', async () => {
    const r = new Router().get('/café', named('lit')).get('/v/{name}', named('var')).get('/r/**', named('rest')).get('/x/a%2Fb', named('slash'));
    expect((await call(r, 'GET', '/caf%C3%A9')).body).toBe('lit');
    expect((await call(r, 'GET', '/café')).body).toBe('lit');
    expect(await call(r, 'GET', '/v/hello%20world')).toMatchObject({ params: { name: 'hello world' } });
    expect(await call(r, 'GET', '/v/a%2Fb')).toMatchObject({ body: 'var', params: { name: 'a/b' } });
    expect(await call(r, 'GET', '/r/a%20b/c')).toMatchObject({ params: { '**': 'a b/c' } });
    expect((await call(r, 'GET', '/x/a%2Fb')).body).toBe('slash');
    expect((await call(r, 'GET', '/x/a/b')).status).toBe(404);
  });

  it('a malformed escape is matched as written and never decodes into another path', async () => {
    const r = new Router().get('/v/{name}', named('var')).get('/a', named('a'));
    expect(await call(r, 'GET', '/v/%zz')).toMatchObject({ body: 'var', params: { name: '%zz' } });
    expect(await call(r, 'GET', '/v/%E0%A4%A')).toMatchObject({ params: { name: '%E0%A4%A' } });
    expect((await call(r, 'GET', '/%61')).body).toBe('a'); // %61 is "a": a valid escape decodes
  });

  it('the query string and fragment are not part of the path; absolute-form targets use their path', async () => {
    const r = new Router().get('/q/{id}', named('q'));
    expect(await call(r, 'GET', '/q/1?x=/q/2')).toMatchObject({ body: 'q', params: { id: '1' } });
    expect(await call(r, 'GET', '/q/1#frag')).toMatchObject({ params: { id: '1' } });
    expect(await call(r, 'GET', 'http://example.com/q/3?y')).toMatchObject({ params: { id: '3' } });
    expect((await call(r, 'OPTIONS', '*')).status).toBe(404);
    expect((await call(r, 'CONNECT', 'example.com:443')).status).toBe(404);
  });

  it('paths are case-sensitive', () => {
    const r = new Router().get('/Users', named('u'));
    expect(matched(r, 'GET', '/Users')).toBe('/Users');
    expect(matched(r, 'GET', '/users')).toBeNull();
  });

  it('trailing slash: /a and /a/ differ by default; ignoreTrailingSlash joins them', () => {
    const strict = new Router().get('/a', named('a')).get('/b/', named('b'));
    expect(matched(strict, 'GET', '/a')).toBe('/a');
    expect(matched(strict, 'GET', '/a/')).toBeNull();
    expect(matched(strict, 'GET', '/b/')).toBe('/b/');
    expect(matched(strict, 'GET', '/b')).toBeNull();
    const loose = new Router({ ignoreTrailingSlash: true }).get('/a', named('a')).get('/b/', named('b')).get('/c/{id}', named('c')).get('/d/**', named('d'));
    expect(matched(loose, 'GET', '/a/')).toBe('/a');
    expect(matched(loose, 'GET', '/b')).toBe('/b/');
    expect(matched(loose, 'GET', '/c/1/')).toBe('/c/{id}');
    expect(matched(loose, 'GET', '/d/')).toBe('/d/**');
    expect(matched(loose, 'GET', '/')).toBeNull();
    expect(() => loose.get('/a/', named('dup'))).toThrow(ArgumentError);
  });
});

describe('methods', () => {
  it('HEAD falls back to a GET route; an explicit HEAD route wins; Allow lists HEAD with GET', async () => {
    const r = new Router().get('/g', named('get')).get('/h', named('get-h')).head('/h', named('head-h')).post('/p', named('post'));
    expect((await call(r, 'HEAD', '/g')).body).toBe('get');
    expect((await call(r, 'HEAD', '/h')).body).toBe('head-h');
    expect(await call(r, 'DELETE', '/g')).toMatchObject({ status: 405, allow: 'GET, HEAD', body: '' });
    expect(await call(r, 'GET', '/p')).toMatchObject({ status: 405, allow: 'POST' });
    expect((await call(r, 'HEAD', '/p')).status).toBe(405);
  });

  it('a method-less route takes every method; a method route on the same path wins for its method', async () => {
    const r = new Router().all('/x', named('any')).get('/x', named('get'));
    register(r, '/y', named('any-y'));
    expect((await call(r, 'GET', '/x')).body).toBe('get');
    expect((await call(r, 'PATCH', '/x')).body).toBe('any');
    expect((await call(r, 'HEAD', '/x')).body).toBe('any'); // explicit (any) beats the implicit GET fallback
    expect((await call(r, 'BREW', '/y')).body).toBe('any-y');
  });

  it('methods are upper-cased at registration; "*" means every method', async () => {
    const r = new Router().register('get', '/lower', named('lower')).register('*', '/star', named('star'));
    expect((await call(r, 'GET', '/lower')).body).toBe('lower');
    expect((await call(r, 'PUT', '/star')).body).toBe('star');
  });

  it('a path matching routes of several shapes lists every method they take', async () => {
    const r = new Router().get('/m/{id}', named('g')).put('/m/fixed', named('p')).delete('/m/*', named('d'));
    const res = await call(r, 'POST', '/m/fixed');
    expect(res.status).toBe(405);
    expect(res.allow!.split(', ').sort()).toEqual(['DELETE', 'GET', 'HEAD', 'PUT']);
  });
});

describe('register forms and options', () => {
  it('the four register forms and the verb methods all add routes', async () => {
    const r = new Router();
    register(r, 'GET', '/one', named('1'));
    register(r, '/two', named('2'));
    register(named('3'), r, 'POST', '/three');
    register(named('4'), r, '/four');
    r.put('/five', named('5')).patch('/six', named('6')).options('/seven', named('7')).query('/eight', named('8')).delete('/nine', named('9'));
    expect((await call(r, 'GET', '/one')).body).toBe('1');
    expect((await call(r, 'DELETE', '/two')).body).toBe('2');
    expect((await call(r, 'POST', '/three')).body).toBe('3');
    expect((await call(r, 'GET', '/four')).body).toBe('4');
    expect((await call(r, 'PUT', '/five')).body).toBe('5');
    expect((await call(r, 'PATCH', '/six')).body).toBe('6');
    expect((await call(r, 'OPTIONS', '/seven')).body).toBe('7');
    expect((await call(r, 'QUERY', '/eight')).body).toBe('8');
    expect((await call(r, 'DELETE', '/nine')).body).toBe('9');
    expect(r.routes).toContainEqual({ method: null, pattern: '/two' });
    expect(r.routes).toHaveLength(9);
  });

  it('a Router can be a route of another router (mounted under **)', async () => {
    const api = new Router().get('/api/v1/{thing}', named('inner'));
    const outer = new Router().get('/', named('home'));
    register(api, outer, '/api/**');
    expect(await call(outer, 'GET', '/api/v1/x')).toMatchObject({ body: 'inner', route: '/api/v1/{thing}', params: { thing: 'x' } });
    expect((await call(outer, 'GET', '/api/nope/x/y')).status).toBe(404);
  });

  it('middleware wraps each registered handler once, at registration, and not notFound', async () => {
    let wrapped = 0;
    const seen: string[] = [];
    const r = new Router({
      middleware: (h) => {
        wrapped++;
        return (req) => {
          seen.push(req.target);
          return h(req);
        };
      },
      notFound: () => new Response(404, 'custom'),
    });
    r.get('/a', named('a')).get('/b', named('b'));
    expect(wrapped).toBe(2);
    await call(r, 'GET', '/a');
    await call(r, 'GET', '/a');
    expect(await call(r, 'GET', '/zzz')).toMatchObject({ status: 404, body: 'custom' });
    expect(seen).toEqual(['/a', '/a']);
    expect(wrapped).toBe(2);
  });

  it('positional notFound and methodNotAllowed; Allow is added to a custom 405 without changing its Response', async () => {
    const shared = new Response(405, 'nope');
    const r = new Router(
      () => new Response(404, 'lost'),
      () => shared,
    ).get('/x', named('x'));
    expect(await call(r, 'GET', '/y')).toMatchObject({ status: 404, body: 'lost' });
    expect(await call(r, 'POST', '/x')).toMatchObject({ status: 405, body: 'nope', allow: 'GET, HEAD' });
    expect(shared.headers.has('Allow')).toBe(false);
    const async405 = new Router({ methodNotAllowed: async () => new Response(405, null, { headers: { Allow: 'MINE' } }) }).get('/x', named('x'));
    expect((await call(async405, 'POST', '/x')).allow).toBe('MINE');
  });

  it('getParam gives one variable or the default; getRoute and getParams are undefined without a match', async () => {
    const r = new Router().get('/p/{a}/{b}', (req) => new Response(200, `${getParam(req, 'a')}|${getParam(req, 'c', 'dflt')}|${String(getParam(req, 'c'))}`));
    expect((await call(r, 'GET', '/p/1/2')).body).toBe('1|dflt|undefined');
    const req = new Request('GET', '/nothing');
    await r(req);
    expect(getRoute(req)).toBeUndefined();
    expect(getParams(req)).toBeUndefined();
    expect(getParam(req, 'a', 0)).toBe(0);
    expect(() => getRoute({} as Request)).toThrow(ArgumentError);
  });

  it('the match is also under the context keys the reference uses', async () => {
    const r = new Router().get('/k/{id}', named('k'));
    const req = new Request('GET', '/k/9');
    await r(req);
    expect(req.context.get('route')).toBe('/k/{id}');
    expect(req.context.get('params')).toEqual({ id: '9' });
  });

  it('a Router is a function with call/apply/bind and is an instance of Router', async () => {
    const r = new Router().get('/', named('root'));
    expect(typeof r).toBe('function');
    expect(r).toBeInstanceOf(Router);
    const res = await (r as RequestHandler).call(null, new Request('GET', '/'));
    expect(res.body).toBe('root');
    expect(() => (r as unknown as (x: unknown) => unknown)(42)).toThrow(ArgumentError);
  });
});

describe('errors at registration', () => {
  const bad: [string, string][] = [
    ['no leading slash', 'users'],
    ['empty', ''],
    ['** not last', '/a/**/b'],
    ['mixed text and variable', '/a/x{id}'],
    ['variable then text', '/a/{id}.json'],
    ['unbalanced {', '/a/{id'],
    ['unbalanced }', '/a/id}'],
    ['empty name', '/a/{}'],
    ['empty name with regex', '/a/{:\\d+}'],
    ['empty regex', '/a/{id:}'],
    ['invalid regex', '/a/{id:(}'],
    ['duplicate name', '/a/{id}/{id}'],
    ['reserved ** name', '/a/{**}'],
    ['__proto__ name', '/a/{__proto__}'],
  ];
  for (const [what, pattern] of bad) {
    it(`${what}: ${JSON.stringify(pattern)} → ArgumentError`, () => {
      expect(() => new Router().get(pattern, named('x'))).toThrow(ArgumentError);
    });
  }

  it('duplicates, bad methods and non-function handlers are ArgumentErrors', () => {
    const r = new Router().get('/a/{id}', named('x')).all('/b', named('b'));
    expect(() => r.get('/a/{other}', named('y'))).toThrow(/already registered/);
    expect(() => r.all('/b', named('b2'))).toThrow(ArgumentError);
    expect(() => r.register('GE T', '/c', named('c'))).toThrow(ArgumentError);
    // The method rule is the kernel's token rule (isToken): no CTL, no non-ASCII, not empty.
    for (const m of ['GET\r\n', 'GET\n', '', 'G\u00c9T', 'GET/1', 'GE\tT']) expect(() => new Router().register(m, '/c', named('c')), JSON.stringify(m)).toThrow(/route method must be a method name/);
    for (const m of ['M-SEARCH', 'x.y_z~!', 'PROPFIND']) expect(() => new Router().register(m, '/c', named('c'))).not.toThrow();
    expect(() => r.get('/c', 'nope' as unknown as RequestHandler)).toThrow(ArgumentError);
    expect(() => register({} as Router, '/c', named('c'))).toThrow(ArgumentError);
    expect(() => new Router({ notFound: 5 as unknown as RequestHandler })).toThrow(ArgumentError);
    expect(() => new Router({ middleware: () => 5 as unknown as RequestHandler }).get('/m', named('m'))).toThrow(/middleware/);
  });

  it('a regex may contain braces and slashes', () => {
    const r = new Router().get('/d/{code:[a-z]{2}/?}', named('x'));
    expect(matched(r, 'GET', '/d/ab')).toBe('/d/{code:[a-z]{2}/?}');
    expect(matched(r, 'GET', '/d/ab%2F')).toBe('/d/{code:[a-z]{2}/?}');
    expect(matched(r, 'GET', '/d/abc')).toBeNull();
  });
});
