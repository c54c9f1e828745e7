import { describe, expect, it } from 'vitest';
import { ArgumentError } from '../../../kernel/errors.js';
import {
  Headers,
  Request,
  Response,
  appendHeader,
  canonicalHeaderKey,
  defaultHeader,
  hasHeader,
  header,
  headerContains,
  headers,
  mkHeaders,
  removeHeader,
  setHeader,
  type HeadersInit,
} from '../../../kernel/message/index.js';

/** The stored pairs, in order, with their stored spelling. */
const pairs = (h: Headers): [string, string][] => [...h];

describe('Headers: case-insensitive lookup', () => {
  const h = new Headers([
    ['Content-Type', 'text/plain'],
    ['X-Custom', 'one'],
  ]);

  it.each([
    ['content-type', 'text/plain'],
    ['CONTENT-TYPE', 'text/plain'],
    ['Content-Type', 'text/plain'],
    ['cOnTeNt-TyPe', 'text/plain'],
    ['x-custom', 'one'],
  ])('get(%j) finds the header', (key, value) => {
    expect(h.get(key)).toBe(value);
    expect(h.has(key)).toBe(true);
    expect(header(h, key)).toBe(value);
  });

  it('keeps the spelling a header was stored with', () => {
    const s = new Headers([
      ['x-lower', 'a'],
      ['X-UPPER', 'b'],
      ['X-Mixed-Case', 'c'],
    ]);
    expect(s.keys()).toEqual(['x-lower', 'X-UPPER', 'X-Mixed-Case']);
    expect(pairs(s)).toEqual([
      ['x-lower', 'a'],
      ['X-UPPER', 'b'],
      ['X-Mixed-Case', 'c'],
    ]);
  });

  it('does not fold characters that only differ by bit 0x20 outside A–Z', () => {
    // '@' (0x40) and '`' (0x60) differ only in bit 0x20, as do '[' and '{'.
    const s = new Headers([
      ['x-@', '1'],
      ['x-[', '2'],
    ]);
    expect(s.get('x-`')).toBeUndefined();
    expect(s.get('x-{')).toBeUndefined();
    expect(s.get('X-@')).toBe('1');
  });

  it('getAll returns every value of a name in order, any case', () => {
    const s = new Headers([
      ['A', '1'],
      ['B', '2'],
      ['a', '3'],
    ]);
    expect(s.getAll('a')).toEqual(['1', '3']);
    expect(s.getAll('missing')).toEqual([]);
    expect(s.size).toBe(3);
  });
});

describe('Headers: construction', () => {
  const cases: [string, () => HeadersInit, [string, string][]][] = [
    [
      'array of pairs',
      () => [
        ['Accept', 'text/html'],
        ['Host', 'example.com'],
      ],
      [
        ['Accept', 'text/html'],
        ['Host', 'example.com'],
      ],
    ],
    [
      'plain object',
      () => ({ Accept: 'text/html', Host: 'example.com' }),
      [
        ['Accept', 'text/html'],
        ['Host', 'example.com'],
      ],
    ],
    [
      'Map',
      () =>
        new Map([
          ['Accept', 'text/html'],
          ['Host', 'example.com'],
        ]),
      [
        ['Accept', 'text/html'],
        ['Host', 'example.com'],
      ],
    ],
    [
      'another Headers',
      () =>
        new Headers([
          ['Accept', 'text/html'],
          ['Host', 'example.com'],
        ]),
      [
        ['Accept', 'text/html'],
        ['Host', 'example.com'],
      ],
    ],
    [
      'generator of pairs',
      () =>
        (function* () {
          yield ['Accept', 'text/html'] as const;
          yield ['Host', 'example.com'] as const;
        })(),
      [
        ['Accept', 'text/html'],
        ['Host', 'example.com'],
      ],
    ],
    ['numbers converted to strings', () => [['Content-Length', 42]], [['Content-Length', '42']]],
    ['object with array value', () => ({ Accept: ['a', 'b'] }), [['Accept', 'a,b']]],
    [
      'object skips undefined values',
      () => ({ A: '1', B: undefined, C: '3' }),
      [
        ['A', '1'],
        ['C', '3'],
      ],
    ],
    [
      'Map with array value, Set-Cookie kept apart',
      () => new Map([['Set-Cookie', ['a=1', 'b=2']]]),
      [
        ['Set-Cookie', 'a=1'],
        ['Set-Cookie', 'b=2'],
      ],
    ],
  ];

  it.each(cases)('from %s', (_name, make, expected) => {
    expect(pairs(new Headers(make()))).toEqual(expected);
  });

  it.each([
    ['no argument', undefined],
    ['null', null],
    ['empty array', []],
    ['empty object', {}],
    ['empty Map', new Map()],
  ])('from %s is empty', (_name, init) => {
    const h = new Headers(init as HeadersInit | null | undefined);
    expect(h.size).toBe(0);
    expect(pairs(h)).toEqual([]);
  });

  it.each([
    [
      'other names with ","',
      [
        ['Accept', 'text/html'],
        ['accept', 'application/json'],
      ],
      [['Accept', 'text/html,application/json']],
    ],
    [
      'Cookie with "; "',
      [
        ['Cookie', 'a=1'],
        ['cookie', 'b=2'],
      ],
      [['Cookie', 'a=1; b=2']],
    ],
    [
      'three in a row',
      [
        ['X-A', '1'],
        ['X-A', '2'],
        ['X-A', '3'],
      ],
      [['X-A', '1,2,3']],
    ],
    [
      'Set-Cookie never',
      [
        ['Set-Cookie', 'a=1'],
        ['set-cookie', 'b=2'],
      ],
      [
        ['Set-Cookie', 'a=1'],
        ['set-cookie', 'b=2'],
      ],
    ],
    [
      'only consecutive names',
      [
        ['X-A', '1'],
        ['X-B', '2'],
        ['X-A', '3'],
      ],
      [
        ['X-A', '1'],
        ['X-B', '2'],
        ['X-A', '3'],
      ],
    ],
  ] as [string, [string, string][], [string, string][]][])('joins consecutive same names: %s', (_name, input, expected) => {
    expect(pairs(new Headers(input))).toEqual(expected);
  });

  it('copies an array input: later changes to it do not show', () => {
    const input: [string, string][] = [['A', '1']];
    const h = new Headers(input);
    input.push(['B', '2']);
    input[0]![1] = 'changed';
    expect(pairs(h)).toEqual([['A', '1']]);
  });

  it('copies an object and a Map input', () => {
    const obj: Record<string, string> = { A: '1' };
    const map = new Map([['A', '1']]);
    const h1 = new Headers(obj);
    const h2 = new Headers(map);
    obj.B = '2';
    map.set('B', '2');
    expect(h1.has('B')).toBe(false);
    expect(h2.has('B')).toBe(false);
  });

  it('copies another Headers in both directions', () => {
    const src = new Headers([['A', '1']]);
    const copy = new Headers(src);
    expect(copy).not.toBe(src);
    src.set('A', 'changed');
    src.push('B', '2');
    expect(pairs(copy)).toEqual([['A', '1']]);
    copy.push('C', '3');
    expect(src.has('C')).toBe(false);
  });

  it.each([0, 1, 16, 1000])('new Headers(%i) is empty with room for that many', (n) => {
    const h = new Headers(n);
    expect(h.size).toBe(0);
    expect(pairs(h)).toEqual([]);
    expect(h.get('anything')).toBeUndefined();
    h.push('A', '1');
    expect(pairs(h)).toEqual([['A', '1']]);
  });

  it.each([
    ['negative capacity', -1, /capacity.*non-negative integer.*-1/],
    ['fractional capacity', 2.5, /capacity.*2\.5/],
    ['NaN capacity', Number.NaN, /capacity/],
    ['a string', 'Accept: text/html', /Headers, array of pairs, Map or object.*string/],
    ['a boolean', true, /boolean/],
    ['an item that is not a pair', [['only-name']], /\[name, value\] pair/],
    ['an item with three elements', [['a', 'b', 'c']], /\[name, value\] pair/],
    ['an item that is a string', ['ab'], /\[name, value\] pair/],
    ['a non-string name in a Map', new Map([[1, 'x']]), /name must be a string.*number/],
    ['an object value', { A: { nested: true } }, /"A".*string value.*object/],
    ['a symbol value', [['A', Symbol('x')]], /"A".*string value.*symbol/],
    ['an undefined value in a pair', [['A', undefined]], /"A".*string value.*undefined/],
  ])('rejects %s with an ArgumentError naming the problem', (_name, input, message) => {
    expect(() => new Headers(input as never)).toThrow(ArgumentError);
    expect(() => new Headers(input as never)).toThrow(message);
  });
});

describe('Headers: methods', () => {
  it('set replaces all values, keeps the first position, takes the new spelling', () => {
    const h = new Headers([
      ['a', '1'],
      ['B', '2'],
      ['A', '3'],
      ['C', '4'],
    ]);
    h.set('A', 'new');
    expect(pairs(h)).toEqual([
      ['A', 'new'],
      ['B', '2'],
      ['C', '4'],
    ]);
  });

  it('append joins onto the last header only', () => {
    const h = new Headers();
    h.append('X', '1');
    h.append('x', '2');
    h.append('Y', '3');
    h.append('X', '4');
    expect(pairs(h)).toEqual([
      ['X', '1,2'],
      ['Y', '3'],
      ['X', '4'],
    ]);
  });

  it('push never joins', () => {
    const h = new Headers();
    h.push('X', '1');
    h.push('X', '2');
    expect(pairs(h)).toEqual([
      ['X', '1'],
      ['X', '2'],
    ]);
  });

  it('delete removes every value and reports how many', () => {
    const h = new Headers([
      ['A', '1'],
      ['B', '2'],
      ['A', '3'],
    ]);
    expect(h.delete('a')).toBe(2);
    expect(h.delete('a')).toBe(0);
    expect(pairs(h)).toEqual([['B', '2']]);
  });

  it('clone keeps pairs exactly (no joining) and is independent', () => {
    const h = new Headers();
    h.push('X', '1');
    h.push('X', '2');
    const c = h.clone();
    expect(pairs(c)).toEqual([
      ['X', '1'],
      ['X', '2'],
    ]);
    c.set('X', 'z');
    expect(pairs(h)).toEqual([
      ['X', '1'],
      ['X', '2'],
    ]);
  });

  it('toObject lowercases names and joins repeated ones with ", "', () => {
    const h = new Headers();
    h.push('Accept', 'a');
    h.push('Host', 'h');
    h.push('accept', 'b');
    expect(h.toObject()).toEqual({ accept: 'a, b', host: 'h' });
  });

  it('toJSON and toArray give the pairs; clear empties', () => {
    const h = new Headers([['A', '1']]);
    expect(JSON.parse(JSON.stringify(h))).toEqual([['A', '1']]);
    expect(h.toArray()).toEqual([['A', '1']]);
    h.clear();
    expect(h.size).toBe(0);
  });

  it('indexOf, nameAt and valueAt address positions', () => {
    const h = new Headers([
      ['A', '1'],
      ['B', '2'],
      ['a', '3'],
    ]);
    expect(h.indexOf('a')).toBe(0);
    expect(h.indexOf('a', 1)).toBe(2);
    expect(h.indexOf('zzz')).toBe(-1);
    expect(h.nameAt(2)).toBe('a');
    expect(h.valueAt(1)).toBe('2');
  });
});

describe('header / headers', () => {
  const h = new Headers([
    ['Accept', 'a'],
    ['X-Empty', ''],
    ['Set-Cookie', 'x=1'],
    ['Set-Cookie', 'y=2'],
  ]);

  it.each([
    ['accept', undefined, 'a'],
    ['missing', undefined, ''],
    ['missing', 'fallback', 'fallback'],
    ['x-empty', 'fallback', ''],
    ['set-cookie', undefined, 'x=1'],
  ])('header(h, %j, %j) is %j', (key, dflt, expected) => {
    expect(dflt === undefined ? header(h, key) : header(h, key, dflt)).toBe(expected);
  });

  it('headers returns all values in order, empty when none', () => {
    expect(headers(h, 'SET-COOKIE')).toEqual(['x=1', 'y=2']);
    expect(headers(h, 'missing')).toEqual([]);
  });

  it('both take a Request or a Response', () => {
    const req = new Request('GET', '/', { headers: h });
    const res = new Response(200, { headers: h });
    expect(header(req, 'accept')).toBe('a');
    expect(header(res, 'ACCEPT')).toBe('a');
    expect(headers(req, 'set-cookie')).toEqual(['x=1', 'y=2']);
    expect(headers(res, 'set-cookie')).toEqual(['x=1', 'y=2']);
  });
});

describe('hasHeader', () => {
  const h = new Headers();
  h.push('Accept', 'text/html');
  h.push('X-Empty', '');
  h.push('X-Later', '');
  h.push('X-Later', 'filled');
  h.push('Connection', 'keep-alive');
  h.push('connection', 'Upgrade');

  it.each([
    ['accept', true],
    ['ACCEPT', true],
    ['missing', false],
    ['x-empty', false],
    // the first value decides
    ['x-later', false],
  ])('hasHeader(h, %j) is %s', (key, expected) => {
    expect(hasHeader(h, key)).toBe(expected);
  });

  it.each([
    ['connection', 'keep-alive', true],
    ['Connection', 'KEEP-ALIVE', true],
    ['connection', 'upgrade', true],
    ['connection', 'close', false],
    ['connection', 'keep', false],
    ['accept', 'text/html', true],
    ['accept', 'TEXT/HTML', true],
    ['missing', '', false],
    ['x-empty', '', true],
  ])('hasHeader(h, %j, %j) is %s', (key, value, expected) => {
    expect(hasHeader(h, key, value)).toBe(expected);
  });

  it('works on messages', () => {
    // copyHeaders: false keeps the two Connection headers apart, as they are in h
    const req = new Request('GET', '/', { headers: h, copyHeaders: false });
    expect(hasHeader(req, 'accept')).toBe(true);
    expect(hasHeader(req, 'x-empty')).toBe(false);
    expect(hasHeader(req, 'connection', 'UPGRADE')).toBe(true);
    expect(hasHeader(new Response(200), 'accept')).toBe(false);
  });
});

describe('headerContains', () => {
  const h = new Headers();
  h.push('Connection', 'keep-alive, Upgrade');
  h.push('Accept-Encoding', ' gzip ,\tdeflate,br ');
  h.push('Connection', 'TE');
  h.push('X-Single', 'token');

  it.each([
    ['connection', 'upgrade', true],
    ['connection', 'UPGRADE', true],
    ['CONNECTION', 'keep-alive', true],
    ['connection', 'te', true], // second header of the same name
    ['connection', 'keep', false], // not a substring match
    ['connection', 'alive', false],
    ['connection', 'keep-alive, upgrade', false],
    ['accept-encoding', 'gzip', true],
    ['accept-encoding', 'deflate', true],
    ['accept-encoding', 'br', true],
    ['accept-encoding', 'zstd', false],
    ['x-single', 'token', true],
    ['x-single', 'tok', false],
    ['missing', 'token', false],
  ])('headerContains(h, %j, %j) is %s', (key, token, expected) => {
    expect(headerContains(h, key, token)).toBe(expected);
  });

  it('works on messages', () => {
    const res = new Response(200, { headers: h });
    expect(headerContains(res, 'connection', 'upgrade')).toBe(true);
  });
});

describe('setHeader', () => {
  const start = (): [string, string][] => [
    ['Host', 'h'],
    ['x-a', '1'],
    ['Accept', '*/*'],
    ['X-A', '2'],
  ];

  it.each([
    ['(h, key, value)', (h: Headers) => setHeader(h, 'X-A', 'new')],
    ['(h, [key, value])', (h: Headers) => setHeader(h, ['X-A', 'new'])],
  ])('%s replaces every value at the first position with the new spelling', (_name, call) => {
    const h = new Headers();
    for (const [k, v] of start()) h.push(k, v);
    call(h);
    expect(pairs(h)).toEqual([
      ['Host', 'h'],
      ['X-A', 'new'],
      ['Accept', '*/*'],
    ]);
  });

  it('takes the spelling of the key given', () => {
    const h = new Headers([['Content-Type', 'a']]);
    setHeader(h, 'content-TYPE', 'b');
    expect(pairs(h)).toEqual([['content-TYPE', 'b']]);
  });

  it('puts a new header at the end', () => {
    const h = new Headers([
      ['A', '1'],
      ['B', '2'],
    ]);
    setHeader(h, 'C', '3');
    expect(pairs(h)).toEqual([
      ['A', '1'],
      ['B', '2'],
      ['C', '3'],
    ]);
  });

  it('works on a Request and a Response', () => {
    const req = new Request('GET', '/', {
      headers: [
        ['A', '1'],
        ['B', '2'],
      ],
    });
    setHeader(req, 'a', 'x');
    expect(pairs(req.headers)).toEqual([
      ['a', 'x'],
      ['B', '2'],
    ]);
    const res = new Response(200, { headers: [['A', '1']] });
    setHeader(res, ['Content-Type', 'text/plain']);
    expect(pairs(res.headers)).toEqual([
      ['A', '1'],
      ['Content-Type', 'text/plain'],
    ]);
  });

  it('forwards to a target that sets headers itself, such as a server stream', () => {
    const calls: [string, string][] = [];
    const stream = { setHeader: (k: string, v: string) => void calls.push([k, v]) };
    setHeader(stream, 'X-A', '1');
    setHeader(stream, ['X-B', '2']);
    expect(calls).toEqual([
      ['X-A', '1'],
      ['X-B', '2'],
    ]);
  });

  it.each([
    ['key without value', (h: Headers) => setHeader(h, 'X-A'), /needs a value for X-A/],
    ['pair of wrong length', (h: Headers) => setHeader(h, ['X-A'] as never), /\(target, key, value\) or \(target, \[key, value\]\)/],
  ])('rejects a %s', (_name, call, message) => {
    const h = new Headers();
    expect(() => call(h)).toThrow(ArgumentError);
    expect(() => call(h)).toThrow(message);
  });
});

describe('defaultHeader', () => {
  it.each([
    ['(h, key, value)', (h: Headers) => defaultHeader(h, 'user-agent', 'other')],
    ['(h, [key, value])', (h: Headers) => defaultHeader(h, ['user-agent', 'other'])],
  ])('%s leaves a present header alone', (_name, call) => {
    const h = new Headers([['User-Agent', 'mine']]);
    call(h);
    expect(pairs(h)).toEqual([['User-Agent', 'mine']]);
  });

  it('adds a missing header at the end', () => {
    const h = new Headers([['A', '1']]);
    defaultHeader(h, 'User-Agent', 'switchyard');
    expect(pairs(h)).toEqual([
      ['A', '1'],
      ['User-Agent', 'switchyard'],
    ]);
  });

  it('treats a header with an empty value as present', () => {
    const h = new Headers([['Accept', '']]);
    defaultHeader(h, ['Accept', '*/*']);
    expect(pairs(h)).toEqual([['Accept', '']]);
  });

  it('works on messages', () => {
    const req = new Request('GET', '/');
    defaultHeader(req, 'Accept', '*/*');
    defaultHeader(req, 'accept', 'text/html');
    expect(pairs(req.headers)).toEqual([['Accept', '*/*']]);
  });
});

describe('appendHeader', () => {
  it.each([
    ['other names with ","', 'Accept', 'accept', [['Accept', 'a,b']]],
    ['Cookie with "; "', 'Cookie', 'COOKIE', [['Cookie', 'a; b']]],
    [
      'Set-Cookie never',
      'Set-Cookie',
      'set-cookie',
      [
        ['Set-Cookie', 'a'],
        ['set-cookie', 'b'],
      ],
    ],
  ] as [string, string, string, [string, string][]][])('joins onto the last header: %s', (_name, k1, k2, expected) => {
    const h = new Headers();
    appendHeader(h, k1, 'a');
    appendHeader(h, [k2, 'b']);
    expect(pairs(h)).toEqual(expected);
  });

  it('adds a separate header when the last header has another name', () => {
    const h = new Headers([
      ['Accept', 'a'],
      ['Host', 'h'],
    ]);
    appendHeader(h, 'Accept', 'b');
    expect(pairs(h)).toEqual([
      ['Accept', 'a'],
      ['Host', 'h'],
      ['Accept', 'b'],
    ]);
  });

  it('works on messages', () => {
    const res = new Response(200);
    appendHeader(res, 'Vary', 'Accept');
    appendHeader(res, 'Vary', 'Origin');
    expect(header(res, 'vary')).toBe('Accept,Origin');
  });
});

describe('removeHeader', () => {
  it('removes every value of a name in any case and keeps the rest in order', () => {
    const h = new Headers();
    h.push('A', '1');
    h.push('B', '2');
    h.push('a', '3');
    h.push('C', '4');
    removeHeader(h, 'A');
    expect(pairs(h)).toEqual([
      ['B', '2'],
      ['C', '4'],
    ]);
    removeHeader(h, 'missing');
    expect(pairs(h)).toEqual([
      ['B', '2'],
      ['C', '4'],
    ]);
  });

  it('works on messages', () => {
    const req = new Request('GET', '/', { headers: { Cookie: 'a=1', Host: 'h' } });
    removeHeader(req, 'cookie');
    expect(pairs(req.headers)).toEqual([['Host', 'h']]);
  });
});

describe('mkHeaders', () => {
  it.each([
    ['null', null, []],
    ['undefined', undefined, []],
    ['a single pair', ['Accept', 'text/html'], [['Accept', 'text/html']]],
    ['a single pair with a number value', ['Content-Length', 5], [['Content-Length', '5']]],
    [
      'an array of two pairs (not a pair)',
      [
        ['A', '1'],
        ['B', '2'],
      ],
      [
        ['A', '1'],
        ['B', '2'],
      ],
    ],
    [
      'an object',
      { A: '1', B: '2' },
      [
        ['A', '1'],
        ['B', '2'],
      ],
    ],
    ['a Map', new Map([['A', '1']]), [['A', '1']]],
    ['an iterable', new Set([['A', '1'] as const, ['a', '2'] as const]), [['A', '1,2']]],
    [
      'pairs joined as appendHeader does',
      [
        ['Cookie', 'a=1'],
        ['Cookie', 'b=2'],
      ],
      [['Cookie', 'a=1; b=2']],
    ],
  ])('converts %s', (_name, input, expected) => {
    expect(pairs(mkHeaders(input as never))).toEqual(expected);
  });

  it('returns a Headers as is (same object)', () => {
    const h = new Headers([['A', '1']]);
    expect(mkHeaders(h)).toBe(h);
  });

  it('returns a fresh Headers for every other input', () => {
    const a = mkHeaders(null);
    const b = mkHeaders(null);
    expect(a).not.toBe(b);
    a.push('X', '1');
    expect(b.size).toBe(0);
  });

  it('rejects invalid input with ArgumentError', () => {
    expect(() => mkHeaders([['A']] as never)).toThrow(ArgumentError);
    expect(() => mkHeaders('A: 1' as never)).toThrow(ArgumentError);
  });
});

describe('canonicalHeaderKey', () => {
  it.each([
    ['content-type', 'Content-Type'],
    ['CONTENT-TYPE', 'Content-Type'],
    ['Content-Type', 'Content-Type'],
    ['X-FORWARDED-FOR', 'X-Forwarded-For'],
    ['x-forwarded-for', 'X-Forwarded-For'],
    ['www-authenticate', 'Www-Authenticate'],
    ['WWW-Authenticate', 'Www-Authenticate'],
    ['etag', 'Etag'],
    ['ETAG', 'Etag'],
    ['content-md5', 'Content-Md5'],
    ['x-1abc', 'X-1abc'],
    ['x_custom_HEADER', 'X_custom_header'],
    ['123', '123'],
    ['a--b', 'A--B'],
    ['-leading', '-Leading'],
    ['', ''],
    // not validated: odd keys are converted, not rejected
    ['bad key!', 'Bad key!'],
    ['ünïcode-KEY', 'ünïcode-Key'],
  ])('%j → %j', (input, expected) => {
    expect(canonicalHeaderKey(input)).toBe(expected);
  });
});

describe('copying a Headers keeps its pairs', () => {
  it('does not join repeated names when the input is already a Headers', () => {
    const src = new Headers();
    src.push('Connection', 'keep-alive');
    src.push('Connection', 'Upgrade');
    const copy = new Headers(src);
    expect(copy.getAll('connection')).toEqual(['keep-alive', 'Upgrade']);
    expect(hasHeader(copy, 'connection', 'upgrade')).toBe(true);
    copy.set('Connection', 'close');
    expect(src.getAll('Connection')).toEqual(['keep-alive', 'Upgrade']);
  });
  it('mkHeaders refuses a number', () => {
    expect(() => mkHeaders(5 as never)).toThrow(ArgumentError);
  });
});
