import { describe, expect, it } from 'vitest';
import { ArgumentError } from '../../../kernel/errors.js';
import { URI, decodeComponent, encodeQuery, queryParamPairs, queryParams } from '../../../kernel/message/index.js';

type Parts = {
  scheme: string;
  userinfo: string;
  host: string;
  port: string;
  path: string;
  query: string;
  fragment: string;
};

const parts = (u: URI): Parts => ({
  scheme: u.scheme,
  userinfo: u.userinfo,
  host: u.host,
  port: u.port,
  path: u.path,
  query: u.query,
  fragment: u.fragment,
});

const none: Parts = { scheme: '', userinfo: '', host: '', port: '', path: '', query: '', fragment: '' };

describe('URI: splitting', () => {
  it.each<[string, Partial<Parts>]>([
    [
      'https://user:pa%20ss@example.com:8443/a/b%2Fc?x=1&y=2#frag',
      { scheme: 'https', userinfo: 'user:pa%20ss', host: 'example.com', port: '8443', path: '/a/b%2Fc', query: 'x=1&y=2', fragment: 'frag' },
    ],
    ['http://example.com', { scheme: 'http', host: 'example.com' }],
    ['http://example.com/', { scheme: 'http', host: 'example.com', path: '/' }],
    ['HTTP://Example.COM/Path', { scheme: 'http', host: 'Example.COM', path: '/Path' }],
    ['http://[::1]:8080/x', { scheme: 'http', host: '::1', port: '8080', path: '/x' }],
    ['http://[2001:db8::7]/', { scheme: 'http', host: '2001:db8::7', path: '/' }],
    ['http://user@[::1]:80', { scheme: 'http', userinfo: 'user', host: '::1', port: '80' }],
    ['http://127.0.0.1:3000?q', { scheme: 'http', host: '127.0.0.1', port: '3000', query: 'q' }],
    ['ws://localhost:9000/socket', { scheme: 'ws', host: 'localhost', port: '9000', path: '/socket' }],
    ['http://a@b@host/', { scheme: 'http', userinfo: 'a@b', host: 'host', path: '/' }],
    ['/a/b?x=1#f', { path: '/a/b', query: 'x=1', fragment: 'f' }],
    ['/a/b', { path: '/a/b' }],
    ['/?', { path: '/' }],
    ['/search?q=a?b#c#d', { path: '/search', query: 'q=a?b', fragment: 'c#d' }],
    ['*', { path: '*' }],
    ['', {}],
    ['//cdn.example.com/lib.js', { host: 'cdn.example.com', path: '/lib.js' }],
  ])('%j', (input, expected) => {
    expect(parts(new URI(input))).toEqual({ ...none, ...expected });
  });

  it('copies another URI', () => {
    const a = new URI('https://u@h:1/p?q#f');
    const b = new URI(a);
    expect(b).not.toBe(a);
    expect(parts(b)).toEqual(parts(a));
  });

  it.each([
    ['a non-numeric port', 'http://host:abc/', /invalid port "abc"/],
    ['a port of six digits', 'http://host:123456/', /invalid port/],
    ['an unclosed IPv6 bracket', 'http://[::1/', /invalid IPv6 host/],
    ['a number', 42, /URI takes a string/],
  ])('rejects %s with ArgumentError', (_name, input, message) => {
    expect(() => new URI(input as string)).toThrow(ArgumentError);
    expect(() => new URI(input as string)).toThrow(message);
  });
});

describe('URI: target, portNumber, toString', () => {
  it.each([
    ['http://h/a/b?x=1#f', '/a/b?x=1'],
    ['http://h', '/'],
    ['http://h?x=1', '/?x=1'],
    ['/p', '/p'],
    ['/p?', '/p'],
    ['/a%20b?q=%20', '/a%20b?q=%20'],
  ])('target of %j is %j', (input, expected) => {
    expect(new URI(input).target).toBe(expected);
  });

  it.each([
    ['http://h', 80],
    ['https://h', 443],
    ['ws://h', 80],
    ['wss://h', 443],
    ['HTTPS://h', 443],
    ['http://h:8080', 8080],
    ['https://h:80', 80],
    ['http://[::1]:3000', 3000],
    ['ftp://h', 0],
    ['/relative', 0],
  ])('portNumber of %j is %i', (input, expected) => {
    expect(new URI(input).portNumber).toBe(expected);
  });

  it.each(['https://user@example.com:8443/a/b?x=1#frag', 'http://[::1]:8080/x', '/a/b?x=1#f', 'http://example.com'])('toString reassembles %j', (input) => {
    expect(String(new URI(input))).toBe(input);
  });
});

describe('queryParams and queryParamPairs', () => {
  it.each<[string, [string, string][]]>([
    [
      'a=1&b=2',
      [
        ['a', '1'],
        ['b', '2'],
      ],
    ],
    [
      '?a=1&b=2',
      [
        ['a', '1'],
        ['b', '2'],
      ],
    ],
    ['', []],
    ['?', []],
    ['q=hello+world', [['q', 'hello world']]],
    ['q=hello%20world', [['q', 'hello world']]],
    ['first+name=J%C3%B6rg', [['first name', 'Jörg']]],
    ['plus=a%2Bb', [['plus', 'a+b']]],
    [
      'tag=a&tag=b&tag=c',
      [
        ['tag', 'a'],
        ['tag', 'b'],
        ['tag', 'c'],
      ],
    ],
    [
      'a=2&b=1&a=1',
      [
        ['a', '2'],
        ['b', '1'],
        ['a', '1'],
      ],
    ],
    [
      'empty=&x=1',
      [
        ['empty', ''],
        ['x', '1'],
      ],
    ],
    [
      'flag&x=1',
      [
        ['flag', ''],
        ['x', '1'],
      ],
    ],
    ['=v', [['', 'v']]],
    ['a=1=2', [['a', '1=2']]],
    [
      'a=1&&b=2&',
      [
        ['a', '1'],
        ['b', '2'],
      ],
    ],
    ['bad=%zz', [['bad', '%zz']]],
    ['pct=100%', [['pct', '100%']]],
    ['half=%4', [['half', '%4']]],
    ['mixed=%41%zz%42', [['mixed', 'A%zzB']]],
    ['broken=%E0%A4', [['broken', '%E0%A4']]],
    ['k%3Dey=v%26al', [['k=ey', 'v&al']]],
    ['%zz=1', [['%zz', '1']]],
  ])('queryParamPairs(%j)', (query, expected) => {
    expect(queryParamPairs(query)).toEqual(expected);
  });

  it.each<[string, Record<string, string>]>([
    ['a=1&b=2', { a: '1', b: '2' }],
    ['?x=hello+world&y=a%20b', { x: 'hello world', y: 'a b' }],
    ['a=first&b=1&a=last', { a: 'last', b: '1' }],
    ['flag&empty=', { flag: '', empty: '' }],
    ['bad=%zz', { bad: '%zz' }],
    ['', {}],
  ])('queryParams(%j)', (query, expected) => {
    expect({ ...queryParams(query) }).toEqual(expected);
  });

  it('queryParams takes keys like __proto__ as plain data', () => {
    const q = queryParams('__proto__=x&constructor=y&toString=z');
    expect(q['__proto__']).toBe('x');
    expect(q['constructor']).toBe('y');
    expect(q['toString']).toBe('z');
    expect(Object.keys(q)).toEqual(['__proto__', 'constructor', 'toString']);
  });

  it('queryParams has no inherited keys', () => {
    const q = queryParams('a=1');
    expect('toString' in q).toBe(false);
    expect(q['hasOwnProperty']).toBeUndefined();
  });

  it('both take a URI and use its query', () => {
    const u = new URI('http://h/p?a=1&a=2#a=3');
    expect(queryParamPairs(u)).toEqual([
      ['a', '1'],
      ['a', '2'],
    ]);
    expect({ ...queryParams(u) }).toEqual({ a: '2' });
  });

  it('decode application/x-www-form-urlencoded bodies', () => {
    const body = 'name=Ada+Lovelace&note=1%2B1%3D2&empty=';
    expect(queryParamPairs(body)).toEqual([
      ['name', 'Ada Lovelace'],
      ['note', '1+1=2'],
      ['empty', ''],
    ]);
  });

  it('reject other input with ArgumentError', () => {
    expect(() => queryParams(5 as never)).toThrow(ArgumentError);
    expect(() => queryParamPairs(null as never)).toThrow(/query must be a string or URI/);
  });
});

describe('decodeComponent and encodeQuery', () => {
  it.each([
    ['a+b', 'a b'],
    ['a%20b', 'a b'],
    ['%2B', '+'],
    ['%E2%82%AC', '€'],
    ['%', '%'],
    ['%%41', '%A'],
    ['plain', 'plain'],
  ])('decodeComponent(%j) is %j', (input, expected) => {
    expect(decodeComponent(input)).toBe(expected);
  });

  it('encodeQuery writes spaces as + and round-trips through queryParamPairs', () => {
    const pairs: [string, string][] = [
      ['first name', 'Jörg'],
      ['q', 'a+b&c=d'],
      ['e', ''],
    ];
    const s = encodeQuery(pairs);
    expect(s).toBe('first+name=J%C3%B6rg&q=a%2Bb%26c%3Dd&e=');
    expect(queryParamPairs(s)).toEqual(pairs);
  });
});
