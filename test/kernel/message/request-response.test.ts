import { describe, expect, it } from 'vitest';
import { ArgumentError } from '../../../kernel/errors.js';
import { BytesBody, CallbackBody, Headers, Request, RequestContext, Response, getRequestContext, type Body } from '../../../kernel/message/index.js';
import { headersFromArrays, headersFromFields } from '../../../kernel/protocol.js';
import { protocolRequest } from '../../../kernel/server/exchange.js';

const pairs = (h: Headers): [string, string][] => [...h];

describe('Request: construction forms', () => {
  it('(method, target) has every default', () => {
    const req = new Request('GET', '/path?q=1');
    expect(req.method).toBe('GET');
    expect(req.target).toBe('/path?q=1');
    expect(req.headers).toBeInstanceOf(Headers);
    expect(req.headers.size).toBe(0);
    expect(req.body).toBeNull();
    expect(req.trailers).toBeInstanceOf(Headers);
    expect(req.trailers.size).toBe(0);
    expect(req.host).toBeNull();
    expect(req.contentLength).toBe(0);
    expect(req.protoMajor).toBe(1);
    expect(req.protoMinor).toBe(1);
    expect(req.close).toBe(false);
    expect(getRequestContext(req)).toBeInstanceOf(RequestContext);
    expect(getRequestContext(req).deadline).toBe(0);
    expect(getRequestContext(req).canceled).toBe(false);
    expect(req.url).toBe('');
  });

  it('(method, target, options) sets every field', () => {
    const ctx = new RequestContext();
    const req = new Request('POST', '/submit', {
      headers: { 'Content-Type': 'text/plain' },
      body: 'hello',
      trailers: [['X-Checksum', 'abc']],
      host: 'example.com:8080',
      contentLength: 5,
      protoMajor: 2,
      protoMinor: 0,
      close: true,
      context: ctx,
    });
    expect(req.method).toBe('POST');
    expect(req.target).toBe('/submit');
    expect(pairs(req.headers)).toEqual([['Content-Type', 'text/plain']]);
    expect(req.body).toBe('hello');
    expect(pairs(req.trailers)).toEqual([['X-Checksum', 'abc']]);
    expect(req.host).toBe('example.com:8080');
    expect(req.contentLength).toBe(5);
    expect(req.protoMajor).toBe(2);
    expect(req.protoMinor).toBe(0);
    expect(req.close).toBe(true);
    expect(getRequestContext(req)).toBe(ctx);
  });

  it('(method, target, headers, body) takes headers and body positionally', () => {
    const req = new Request('PUT', '/x', [['Accept', '*/*']], 'data');
    expect(pairs(req.headers)).toEqual([['Accept', '*/*']]);
    expect(req.body).toBe('data');
    expect(req.contentLength).toBe(4);
  });

  it('(method, target, headers) with a plain object of header names is headers, not options', () => {
    const req = new Request('GET', '/', { Accept: 'text/html', 'X-Trace': '1' });
    expect(pairs(req.headers)).toEqual([
      ['Accept', 'text/html'],
      ['X-Trace', '1'],
    ]);
    expect(req.body).toBeNull();
  });

  it('(method, target, headers) accepts a Headers, a Map and an array', () => {
    for (const h of [new Headers([['A', '1']]), new Map([['A', '1']]), [['A', '1']] as [string, string][]]) {
      expect(pairs(new Request('GET', '/', h).headers)).toEqual([['A', '1']]);
    }
  });

  it('(method, target, headers, body, options) merges the options', () => {
    const req = new Request('POST', '/', { A: '1' }, new Uint8Array([1, 2, 3]), { close: true, host: 'h' });
    expect(pairs(req.headers)).toEqual([['A', '1']]);
    expect(req.body).toEqual(new Uint8Array([1, 2, 3]));
    expect(req.contentLength).toBe(3);
    expect(req.close).toBe(true);
    expect(req.host).toBe('h');
  });

  it('(method, target, null, body) has empty headers', () => {
    const req = new Request('POST', '/', null, 'x');
    expect(req.headers.size).toBe(0);
    expect(req.body).toBe('x');
  });

  it('stores a string or bytes body as is', () => {
    const bytes = new Uint8Array([1, 2]);
    expect(new Request('POST', '/', { body: bytes }).body).toBe(bytes);
    const body = new BytesBody('abc');
    expect(new Request('POST', '/', { body }).body).toBe(body);
  });
});

describe('Request: contentLength', () => {
  const cb = new CallbackBody(() => 0);
  it.each([
    ['null body', null, undefined, 0],
    ['no body', undefined, undefined, 0],
    ['ASCII string', 'hello', undefined, 5],
    ['string in UTF-8 bytes (héllo)', 'héllo', undefined, 6],
    ['string with an astral character', '😀', undefined, 4],
    ['empty string', '', undefined, 0],
    ['Uint8Array', new Uint8Array(7), undefined, 7],
    ['Buffer', Buffer.from('abcd'), undefined, 4],
    ['subarray', new Uint8Array(10).subarray(2, 5), undefined, 3],
    ['CallbackBody (unknown)', cb, undefined, -1],
    ['BytesBody (an AbstractBody, unknown)', new BytesBody('abc'), undefined, -1],
    ['explicit value wins over a string', 'hello', 3, 3],
    ['explicit 0 wins', 'hello', 0, 0],
    ['explicit value for a streamed body', new BytesBody('abc'), 3, 3],
    ['explicit -1 computes', 'hey', -1, 3],
  ] as [string, Body | undefined, number | undefined, number][])('%s → %i', (_name, body, explicit, expected) => {
    const opts = explicit === undefined ? { body } : { body, contentLength: explicit };
    expect(new Request('POST', '/', opts).contentLength).toBe(expected);
  });

  it('setBody recomputes the length', () => {
    const req = new Request('POST', '/', { body: 'a' });
    req.setBody('héllo');
    expect(req.body).toBe('héllo');
    expect(req.contentLength).toBe(6);
    req.setBody(null);
    expect(req.contentLength).toBe(0);
    req.setBody(new BytesBody('x'), 1);
    expect(req.contentLength).toBe(1);
  });
});

describe('Request: headers copy rule', () => {
  it('copies a Headers by default', () => {
    const h = new Headers([['A', '1']]);
    const req = new Request('GET', '/', { headers: h });
    expect(req.headers).not.toBe(h);
    h.set('A', 'changed');
    req.headers.push('B', '2');
    expect(pairs(req.headers)).toEqual([
      ['A', '1'],
      ['B', '2'],
    ]);
    expect(pairs(h)).toEqual([['A', 'changed']]);
  });

  it('copies with copyHeaders: true', () => {
    const h = new Headers([['A', '1']]);
    expect(new Request('GET', '/', { headers: h, copyHeaders: true }).headers).not.toBe(h);
  });

  it('uses the same Headers object with copyHeaders: false', () => {
    const h = new Headers([['A', '1']]);
    const req = new Request('GET', '/', { headers: h, copyHeaders: false });
    expect(req.headers).toBe(h);
  });

  it('copyHeaders: false in the positional form uses the same object', () => {
    const h = new Headers([['A', '1']]);
    expect(new Request('GET', '/', h, null, { copyHeaders: false }).headers).toBe(h);
  });

  it('copyHeaders: false with a non-Headers value still builds a Headers', () => {
    const req = new Request('GET', '/', { headers: { A: '1' }, copyHeaders: false });
    expect(req.headers).toBeInstanceOf(Headers);
    expect(pairs(req.headers)).toEqual([['A', '1']]);
  });

  it('a plain object of strings maps name for name, and the Headers is a copy of it', () => {
    const init = { 'Content-Type': 'text/plain', 'X-A': '1' };
    const res = new Response(200, 'x', { headers: init });
    init['X-A'] = 'changed';
    expect(pairs(res.headers)).toEqual([
      ['Content-Type', 'text/plain'],
      ['X-A', '1'],
    ]);
    res.headers.push('X-B', '2');
    expect(Object.keys(init)).toEqual(['Content-Type', 'X-A']);
    // Names equal but for case are joined, as append() does; arrays and numbers are added one by one.
    expect(pairs(new Headers({ 'x-a': '1', 'X-A': '2' }))).toEqual([['x-a', '1,2']]);
    expect(pairs(new Headers({ A: ['1', '2'], B: 3 }))).toEqual([
      ['A', '1,2'],
      ['B', '3'],
    ]);
  });

  it('headers can be replaced by a Headers, and only by one', () => {
    const req = new Request('GET', '/');
    const h = new Headers([['A', '1']]);
    req.headers = h;
    expect(req.headers).toBe(h);
    expect(() => {
      req.headers = { A: '1' } as unknown as Headers;
    }).toThrow(ArgumentError);
  });

  it('copies trailers given as a Headers', () => {
    const t = new Headers([['X-T', '1']]);
    const req = new Request('GET', '/', { trailers: t });
    expect(req.trailers).not.toBe(t);
    expect(pairs(req.trailers)).toEqual([['X-T', '1']]);
  });
});

describe('Request: context', () => {
  it('creates a new context per request by default', () => {
    const a = new Request('GET', '/');
    const b = new Request('GET', '/');
    expect(getRequestContext(a)).not.toBe(getRequestContext(b));
  });

  it('uses a given context', () => {
    const ctx = new RequestContext({ deadline: 12345 });
    const req = new Request('GET', '/', { context: ctx });
    expect(getRequestContext(req)).toBe(ctx);
    expect(getRequestContext(req).deadline).toBe(12345);
  });

  it('req.context is the application data map of the context', () => {
    const ctx = new RequestContext();
    const req = new Request('GET', '/', { context: ctx });
    expect(req.context).toBeInstanceOf(Map);
    req.context.set('user', 'alice');
    expect(ctx.get('user')).toBe('alice');
    ctx.set('role', 'admin');
    expect(req.context.get('role')).toBe('admin');
    expect(req.context).not.toBeInstanceOf(RequestContext);
  });

  it('getRequestContext rejects a non-Request', () => {
    expect(() => getRequestContext({ ctx: new RequestContext() } as never)).toThrow(ArgumentError);
    expect(() => getRequestContext(null as never)).toThrow(/getRequestContext takes a Request/);
  });
});

describe('Request: wrong types', () => {
  it.each([
    ['a non-string method', () => new Request(1 as never, '/'), /method must be a non-empty string/],
    ['an empty method', () => new Request('', '/'), /method/],
    ['a non-string target', () => new Request('GET', 42 as never), /target must be a string/],
    ['a number body', () => new Request('POST', '/', { body: 5 as never }), /body must be a string, Uint8Array, AbstractBody or null.*number/],
    ['an object body', () => new Request('POST', '/', { body: { a: 1 } as never }), /body must be/],
    ['a positional array body', () => new Request('POST', '/', null, [1, 2] as never), /body must be.*Array/],
    ['a non-string host', () => new Request('GET', '/', { host: 80 as never }), /host must be a string/],
    ['a fractional contentLength', () => new Request('GET', '/', { contentLength: 1.5 }), /contentLength must be an integer >= -1/],
    ['a contentLength below -1', () => new Request('GET', '/', { contentLength: -2 }), /contentLength/],
    ['a string contentLength', () => new Request('GET', '/', { contentLength: '5' as never }), /contentLength/],
    ['a bad protoMajor', () => new Request('GET', '/', { protoMajor: 1.5 }), /protoMajor/],
    ['a string protoMinor', () => new Request('GET', '/', { protoMinor: '1' as never }), /protoMinor/],
    ['a context that is not a RequestContext', () => new Request('GET', '/', { context: {} as never }), /context must be a RequestContext/],
    ['invalid headers', () => new Request('GET', '/', { headers: 'Accept: x' as never }), /headers/],
    ['a number as headers', () => new Request('GET', '/', 5 as never), /headers/],
  ])('rejects %s with ArgumentError', (_name, make, message) => {
    expect(make).toThrow(ArgumentError);
    expect(make).toThrow(message);
  });
});

describe('Request: toString', () => {
  it('renders the request line', () => {
    expect(String(new Request('GET', '/a?b', { protoMinor: 0 }))).toBe('GET /a?b HTTP/1.0');
  });
});

describe('Response: construction forms', () => {
  it('(status) has every default', () => {
    const res = new Response(204);
    expect(res.status).toBe(204);
    expect(res.statusCode).toBe(204);
    expect(res.body).toBeNull();
    expect(res.headers).toBeInstanceOf(Headers);
    expect(res.headers.size).toBe(0);
    expect(res.reason).toBe('');
    expect(res.trailers.size).toBe(0);
    expect(res.contentLength).toBe(0);
    expect(res.protoMajor).toBe(1);
    expect(res.protoMinor).toBe(1);
    expect(res.close).toBe(false);
    expect(res.request).toBeNull();
    expect(res.url).toBe('');
  });

  it('(status, body)', () => {
    const res = new Response(201, 'created');
    expect(res.status).toBe(201);
    expect(res.body).toBe('created');
    expect(res.contentLength).toBe(7);
  });

  it('(status, body, options) sets every field', () => {
    const req = new Request('GET', '/');
    const res = new Response(404, 'nope', {
      headers: { 'Content-Type': 'text/plain' },
      reason: 'Not Here',
      trailers: [['X-T', '1']],
      contentLength: 4,
      protoMajor: 1,
      protoMinor: 0,
      close: true,
      request: req,
    });
    expect(res.status).toBe(404);
    expect(res.body).toBe('nope');
    expect(pairs(res.headers)).toEqual([['Content-Type', 'text/plain']]);
    expect(res.reason).toBe('Not Here');
    expect(pairs(res.trailers)).toEqual([['X-T', '1']]);
    expect(res.contentLength).toBe(4);
    expect(res.protoMinor).toBe(0);
    expect(res.close).toBe(true);
    expect(res.request).toBe(req);
  });

  it('(status, headers, body)', () => {
    const res = new Response(200, [['Content-Type', 'application/json']], '{"a":1}');
    expect(pairs(res.headers)).toEqual([['Content-Type', 'application/json']]);
    expect(res.body).toBe('{"a":1}');
    expect(res.contentLength).toBe(7);
  });

  it('(status, headers object, body)', () => {
    const res = new Response(200, { 'X-A': '1' }, 'x');
    // A text body without a type of its own is text/plain (see "Response: default Content-Type").
    expect(pairs(res.headers)).toEqual([
      ['X-A', '1'],
      ['Content-Type', 'text/plain; charset=utf-8'],
    ]);
    expect(res.body).toBe('x');
  });

  it('(status, Headers, null body)', () => {
    const h = new Headers([['X-A', '1']]);
    const res = new Response(304, h, null);
    expect(pairs(res.headers)).toEqual([['X-A', '1']]);
    expect(res.body).toBeNull();
  });

  it('(status, null headers, body)', () => {
    const res = new Response(200, null, 'x');
    expect(pairs(res.headers)).toEqual([['Content-Type', 'text/plain; charset=utf-8']]);
    expect(res.body).toBe('x');
  });

  it('(status, headers, body, options)', () => {
    const h = new Headers([['X-A', '1']]);
    const res = new Response(200, h, 'x', { reason: 'Fine', copyHeaders: false });
    expect(res.headers).toBe(h);
    expect(res.reason).toBe('Fine');
    expect(res.body).toBe('x');
  });

  it.each([
    ['a string', 'hello', 5],
    ['bytes', new Uint8Array([1, 2, 3]), 3],
    ['a streamed body', new BytesBody('abc'), -1],
  ] as [string, Body, number][])('(body) with %s has status 200', (_name, body, length) => {
    const res = new Response(body as string);
    expect(res.status).toBe(200);
    expect(res.body).toBe(body);
    expect(res.contentLength).toBe(length);
  });

  it('(status, options)', () => {
    const res = new Response(302, { headers: { Location: '/x' }, reason: 'Found' });
    expect(res.status).toBe(302);
    expect(pairs(res.headers)).toEqual([['Location', '/x']]);
    expect(res.reason).toBe('Found');
    expect(res.body).toBeNull();
  });

  it('(status, options) with a body option', () => {
    const res = new Response(200, { body: 'b' });
    expect(res.body).toBe('b');
    expect(res.contentLength).toBe(1);
  });

  it('(status, undefined, options)', () => {
    const res = new Response(200, undefined, { headers: { A: '1' } });
    expect(res.body).toBeNull();
    expect(pairs(res.headers)).toEqual([['A', '1']]);
  });

  it('stores a string or bytes body as is, so one Response can serve many requests', () => {
    const bytes = new Uint8Array([104, 105]);
    const a = new Response(200, bytes);
    expect(a.body).toBe(bytes);
    expect(new Response(bytes).body).toBe(bytes);
    expect(new Response(200, null, bytes).body).toBe(bytes);
    const s = 'shared';
    expect(new Response(200, s).body).toBe(s);
  });

  it('copies headers by default', () => {
    const h = new Headers([['A', '1']]);
    const res = new Response(200, { headers: h });
    expect(res.headers).not.toBe(h);
    h.push('B', '2');
    expect(res.headers.has('B')).toBe(false);
  });

  it.each([
    ['explicit length', { contentLength: 10 }, 'abc', 10],
    ['UTF-8 byte length', {}, 'héllo', 6],
    ['null body', {}, null, 0],
  ] as [string, { contentLength?: number }, Body, number][])('contentLength: %s', (_name, opts, body, expected) => {
    expect(new Response(200, body, opts).contentLength).toBe(expected);
  });

  it('setBody recomputes the length', () => {
    const res = new Response(200, 'a');
    res.setBody(new Uint8Array(9));
    expect(res.contentLength).toBe(9);
    res.setBody(new BytesBody('x'));
    expect(res.contentLength).toBe(-1);
  });
});

describe('Response: default Content-Type', () => {
  it('a text body without a Content-Type gets text/plain; charset=utf-8, in every construction form and setBody', () => {
    const T = 'text/plain; charset=utf-8';
    expect(new Response(200, 'hi').headers.get('Content-Type')).toBe(T);
    expect(new Response('hi').headers.get('Content-Type')).toBe(T);
    expect(new Response(404, { body: 'missing' }).headers.get('Content-Type')).toBe(T);
    expect(new Response(500, [['X-A', '1']], 'oops').headers.get('Content-Type')).toBe(T);
    const later = new Response(200);
    expect(later.headers.has('Content-Type')).toBe(false);
    later.setBody('now text');
    expect(later.headers.get('Content-Type')).toBe(T);
  });

  it('a type given is kept (in any spelling); bytes, streamed and empty bodies get none', () => {
    expect(new Response(200, { 'content-type': 'text/html' }, '<p>').headers.getAll('Content-Type')).toEqual(['text/html']);
    expect(new Response(200, new Uint8Array([1])).headers.has('Content-Type')).toBe(false);
    expect(new Response(200, new BytesBody('streamed')).headers.has('Content-Type')).toBe(false);
    expect(new Response(200, '').headers.has('Content-Type')).toBe(false);
    expect(new Response(200, null).headers.has('Content-Type')).toBe(false);
  });

  it("no type on statuses without content: 1xx, 204, 304 (a 304 updates a cache's stored fields)", () => {
    for (const st of [103, 204, 304]) expect(new Response(st, 'ignored').headers.has('Content-Type')).toBe(false);
  });
});

describe('Response.json (static) and response.json() (instance)', () => {
  it('builds a 200 with the JSON text and Content-Type application/json', () => {
    const r = Response.json({ id: 7, tags: ['a'] });
    expect(r.status).toBe(200);
    expect(r.body).toBe('{"id":7,"tags":["a"]}');
    expect(r.headers.get('Content-Type')).toBe('application/json');
    expect(r.contentLength).toBe(21);
    // The instance method of the same name parses it back, typed.
    expect(r.json<{ id: number }>().id).toBe(7);
  });

  it('takes a status and the other options; a Content-Type given is kept', () => {
    const r = Response.json([1], { status: 201, headers: { 'Content-Type': 'application/problem+json', 'X-A': '1' }, reason: 'Made' });
    expect(r.status).toBe(201);
    expect(r.reason).toBe('Made');
    expect(r.headers.getAll('Content-Type')).toEqual(['application/problem+json']);
    expect(r.headers.get('X-A')).toBe('1');
    expect(Response.json(null).body).toBe('null');
  });

  it('a value with no JSON form, a bad status, or a body in init is an ArgumentError', () => {
    expect(() => Response.json(undefined)).toThrow(ArgumentError);
    expect(() => Response.json(Symbol('x'))).toThrow(/symbol has no JSON form/);
    const cyclic: Record<string, unknown> = {};
    cyclic.self = cyclic;
    expect(() => Response.json(cyclic)).toThrow(ArgumentError);
    expect(() => Response.json(1, { status: 42 })).toThrow(ArgumentError);
    expect(() => Response.json(1, { body: 'x' } as never)).toThrow(/takes no body/);
    expect(() => Response.json(1, null as never)).toThrow(ArgumentError);
  });
});

describe('Response: fields', () => {
  it('statusCode is an alias of status, both ways', () => {
    const res = new Response(200);
    res.statusCode = 404;
    expect(res.status).toBe(404);
    res.status = 500;
    expect(res.statusCode).toBe(500);
  });

  it('setting an invalid statusCode throws ArgumentError and keeps the status', () => {
    const res = new Response(200);
    expect(() => {
      res.statusCode = 42;
    }).toThrow(ArgumentError);
    expect(res.status).toBe(200);
  });

  it('request and url can be set', () => {
    const req = new Request('GET', '/a');
    const res = new Response(200, { request: req });
    expect(res.request).toBe(req);
    res.url = 'https://example.com/a';
    expect(res.url).toBe('https://example.com/a');
  });

  it.each([
    ['a string body', 'héllo', 'héllo'],
    ['a bytes body', new TextEncoder().encode('héllo'), 'héllo'],
    ['a bytes body at an offset', new TextEncoder().encode('xxhéllo').subarray(2), 'héllo'],
    ['no body', null, ''],
  ] as [string, Body, string][])('text() decodes %s', (_name, body, expected) => {
    expect(new Response(200, body).text()).toBe(expected);
  });

  it('json() parses string and byte bodies', () => {
    expect(new Response(200, '{"a":[1,2]}').json()).toEqual({ a: [1, 2] });
    expect(new Response(200, Buffer.from('[true]')).json()).toEqual([true]);
    expect(() => new Response(200, '{bad').json()).toThrow(SyntaxError);
  });

  it('text() on a streamed body says to read it first', () => {
    const res = new Response(200, new BytesBody('x'));
    expect(() => res.text()).toThrow(ArgumentError);
    expect(() => res.text()).toThrow(/streamed body/);
  });

  it('toString renders the status line', () => {
    expect(String(new Response(404, { reason: 'Not Found' }))).toBe('HTTP/1.1 404 Not Found');
    expect(String(new Response(200))).toBe('HTTP/1.1 200');
  });
});

describe('Response: invalid arguments', () => {
  it.each([99, 1000, 200.5, -1, Number.NaN, Infinity])('status %d → ArgumentError', (status) => {
    expect(() => new Response(status)).toThrow(ArgumentError);
    expect(() => new Response(status)).toThrow(/status must be an integer 100\.\.999/);
  });

  it.each([
    ['a number body', () => new Response(200, 5 as never), /body must be a string, Uint8Array, AbstractBody or null/],
    ['an object as the only argument', () => new Response({} as never), /status number or a body/],
    ['null as the only argument', () => new Response(null as never), /status number or a body/],
    ['(body, extra)', () => new Response('x' as never, 'y' as never), /one argument/],
    ['a non-string reason', () => new Response(200, { reason: 5 as never }), /reason must be a string/],
    ['a request that is not a Request', () => new Response(200, { request: {} as never }), /request must be a Request/],
    ['a bad contentLength', () => new Response(200, { contentLength: -5 }), /contentLength/],
    ['a non-object options', () => new Response(200, 'x', 5 as never), /options must be an object/],
    ['a number in place of the body', () => new Response(200, null, 5 as never), /Response/],
  ])('%s → ArgumentError', (_name, make, message) => {
    expect(make).toThrow(ArgumentError);
    expect(make).toThrow(message);
  });
});

describe('headers from a protocol driver', () => {
  it('headersFromArrays takes the arrays as they are', () => {
    const names = ['A'];
    const values = ['1'];
    const h = headersFromArrays(names, values);
    expect(h.get('a')).toBe('1');
    h.push('B', '2');
    expect(names).toEqual(['A', 'B']);
  });

  it('headersFromFields skips pseudo-headers, spells names canonically and adds Host from :authority', () => {
    const fields = [':method', 'GET', ':path', '/x', ':authority', 'example.com:8080', 'user-agent', 'u', 'x-multi', '1', 'x-multi', '2', 'www-authenticate', 'w'];
    const h = headersFromFields(fields, true);
    expect(pairs(h)).toEqual([
      ['User-Agent', 'u'],
      ['X-Multi', '1'],
      ['X-Multi', '2'],
      ['Www-Authenticate', 'w'],
      ['Host', 'example.com:8080'],
    ]);
    expect(pairs(headersFromFields(fields, false))).toEqual([
      ['User-Agent', 'u'],
      ['X-Multi', '1'],
      ['X-Multi', '2'],
      ['Www-Authenticate', 'w'],
    ]);
    // A host field wins over :authority; no :authority, no Host.
    expect(pairs(headersFromFields([':authority', 'a', 'host', 'b'], true))).toEqual([['Host', 'b']]);
    expect(pairs(headersFromFields([':path', '/'], true))).toEqual([]);
  });

  it('a request from a field list reads it into Headers on first use, once', () => {
    const fields = [':method', 'POST', ':authority', 'h:1', 'content-type', 'text/plain'];
    const req = protocolRequest('POST', '/', fields, null, -1, 'h:1', 2);
    // The host field given later does not change what the list says.
    req.host = 'other';
    const h = req.headers;
    expect(pairs(h)).toEqual([
      ['Content-Type', 'text/plain'],
      ['Host', 'h:1'],
    ]);
    expect(req.headers).toBe(h);
    expect(req.protoMajor).toBe(2);
  });
});
