/**
 * The fileserver's pure parts: Range parsing, preconditions in RFC 9110 order, If-Range,
 * entity tags, HTTP dates, request-path decoding, and WHATWG content sniffing.
 */
import { describe, expect, it } from 'vitest';
import { ArgumentError, Headers } from '../../../kernel/index.js';
import { evaluatePreconditions, ifRangeAllows } from '../../../plugins/fileserver/conditional.js';
import { contentTypeByName } from '../../../plugins/fileserver/content-type.js';
import { listMatches, normalizeEtag, parseEtagList, weakStatEtag } from '../../../plugins/fileserver/etag.js';
import { formatHttpDate, parseHttpDate } from '../../../plugins/fileserver/http-date.js';
import { decodeRequestPath, isUnsafeFsPath, isWithin } from '../../../plugins/fileserver/path-safety.js';
import { parseRange } from '../../../plugins/fileserver/range.js';
import { sniffContentType } from '../../../plugins/fileserver/sniff.js';

describe('parseRange', () => {
  it.each([
    ['bytes=0-0', 10, { kind: 'range', start: 0, end: 0 }],
    ['bytes=2-5', 10, { kind: 'range', start: 2, end: 5 }],
    ['bytes=2-', 10, { kind: 'range', start: 2, end: 9 }],
    ['bytes=5-100', 10, { kind: 'range', start: 5, end: 9 }],
    ['bytes=-3', 10, { kind: 'range', start: 7, end: 9 }],
    ['bytes=-30', 10, { kind: 'range', start: 0, end: 9 }],
    ['BYTES = 1-2', 10, { kind: 'range', start: 1, end: 2 }],
    ['bytes=1-2,', 10, { kind: 'range', start: 1, end: 2 }],
    ['bytes=10-', 10, { kind: 'unsatisfiable' }],
    ['bytes=10-20', 10, { kind: 'unsatisfiable' }],
    ['bytes=-0', 10, { kind: 'unsatisfiable' }],
    ['bytes=0-', 0, { kind: 'unsatisfiable' }],
    ['bytes=-5', 0, { kind: 'unsatisfiable' }],
    ['bytes=99999999999999999999-', 10, { kind: 'unsatisfiable' }],
    ['bytes=0-1,3-4', 10, { kind: 'ignore' }],
    ['bytes=0-1, 20-30', 10, { kind: 'ignore' }],
    ['items=0-1', 10, { kind: 'ignore' }],
    ['bytes=5-2', 10, { kind: 'ignore' }],
    ['bytes=-', 10, { kind: 'ignore' }],
    ['bytes=a-b', 10, { kind: 'ignore' }],
    ['bytes=', 10, { kind: 'ignore' }],
    ['0-5', 10, { kind: 'ignore' }],
  ] as const)('%s of %i bytes', (value, size, want) => {
    expect(parseRange(value, size)).toEqual(want);
  });
});

describe('entity tags', () => {
  it('weak_stat tags change with size and time', () => {
    expect(weakStatEtag({ size: 255, mtimeMs: 4096.7 })).toBe('W/"ff-1000"');
    expect(weakStatEtag({ size: 256, mtimeMs: 4096 })).not.toBe(weakStatEtag({ size: 255, mtimeMs: 4096 }));
  });
  it('normalizes and validates', () => {
    expect(normalizeEtag('abc')).toBe('"abc"');
    expect(normalizeEtag('"abc"')).toBe('"abc"');
    expect(normalizeEtag('W/"abc"')).toBe('W/"abc"');
    expect(() => normalizeEtag('a b')).toThrow(ArgumentError);
    expect(() => normalizeEtag('a"b')).toThrow(ArgumentError);
    expect(() => normalizeEtag('W/abc')).toThrow(ArgumentError);
  });
  it('parses lists, commas inside quotes included', () => {
    expect(parseEtagList(' * ')).toBe('*');
    expect(parseEtagList('"a", W/"b",  "c,d" ,junk, "e"')).toEqual(['"a"', 'W/"b"', '"c,d"', '"e"']);
  });
  it('strong vs weak comparison', () => {
    expect(listMatches('W/"a"', '"a"', false)).toBe(true);
    expect(listMatches('W/"a"', '"a"', true)).toBe(false);
    expect(listMatches('"a"', 'W/"a"', true)).toBe(false);
    expect(listMatches('"x", "a"', '"a"', true)).toBe(true);
    expect(listMatches('*', null, true)).toBe(true);
    expect(listMatches('"a"', null, false)).toBe(false);
  });
});

describe('HTTP dates', () => {
  const t = Date.UTC(1994, 10, 6, 8, 49, 37);
  it('reads all three forms, in UTC', () => {
    expect(parseHttpDate('Sun, 06 Nov 1994 08:49:37 GMT')).toBe(t);
    expect(parseHttpDate('Sunday, 06-Nov-94 08:49:37 GMT')).toBe(t);
    expect(parseHttpDate('Sun Nov  6 08:49:37 1994')).toBe(t);
    expect(formatHttpDate(t + 999)).toBe('Sun, 06 Nov 1994 08:49:37 GMT');
  });
  it.each(['', 'yesterday', 'Sun, 06 Nov 1994 08:49:37 PST', 'Sun, 32 Nov 1994 08:49:37 GMT', '1994-11-06T08:49:37Z'])('rejects %j', (v) => {
    expect(parseHttpDate(v)).toBeNull();
  });
});

describe('preconditions (RFC 9110 §13.2.2 order)', () => {
  const lm = Date.UTC(2024, 0, 2, 3, 4, 5);
  const v = { etag: '"v1"', lastModified: lm };
  const before = formatHttpDate(lm - 1000);
  const at = formatHttpDate(lm);
  const h = (o: Record<string, string>): Headers => new Headers(o);
  it.each([
    ['GET', {}, 0],
    ['GET', { 'If-None-Match': '"v1"' }, 304],
    ['HEAD', { 'If-None-Match': 'W/"v1"' }, 304],
    ['GET', { 'If-None-Match': '"v2"' }, 0],
    ['GET', { 'If-None-Match': '*' }, 304],
    ['POST', { 'If-None-Match': '"v1"' }, 412],
    ['GET', { 'If-Modified-Since': at }, 304],
    ['GET', { 'If-Modified-Since': before }, 0],
    ['GET', { 'If-Modified-Since': 'garbage' }, 0],
    ['POST', { 'If-Modified-Since': at }, 0],
    // If-None-Match wins over If-Modified-Since.
    ['GET', { 'If-None-Match': '"v2"', 'If-Modified-Since': at }, 0],
    ['GET', { 'If-Match': '"v1"' }, 0],
    ['GET', { 'If-Match': '"v2"' }, 412],
    ['GET', { 'If-Match': 'W/"v1"' }, 412],
    ['GET', { 'If-Match': '*' }, 0],
    ['PUT', { 'If-Unmodified-Since': before }, 412],
    ['PUT', { 'If-Unmodified-Since': at }, 0],
    // If-Match wins over If-Unmodified-Since.
    ['GET', { 'If-Match': '"v1"', 'If-Unmodified-Since': before }, 0],
    ['GET', { 'If-Match': '"v1"', 'If-None-Match': '"v1"' }, 304],
  ] as const)('%s %j → %i', (method, headers, want) => {
    expect(evaluatePreconditions(method, h(headers), v)).toBe(want);
  });
  it('If-Match with no ETag known fails unless *', () => {
    expect(evaluatePreconditions('GET', h({ 'If-Match': '"a"' }), { etag: null, lastModified: null })).toBe(412);
    expect(evaluatePreconditions('GET', h({ 'If-Match': '*' }), { etag: null, lastModified: null })).toBe(0);
  });
  it('If-Range: strong tag match or exact date', () => {
    expect(ifRangeAllows(h({}), v)).toBe(true);
    expect(ifRangeAllows(h({ 'If-Range': '"v1"' }), v)).toBe(true);
    expect(ifRangeAllows(h({ 'If-Range': '"v2"' }), v)).toBe(false);
    expect(ifRangeAllows(h({ 'If-Range': 'W/"v1"' }), v)).toBe(false);
    expect(ifRangeAllows(h({ 'If-Range': '"v1"' }), { etag: 'W/"v1"', lastModified: lm })).toBe(false);
    expect(ifRangeAllows(h({ 'If-Range': at }), v)).toBe(true);
    expect(ifRangeAllows(h({ 'If-Range': before }), v)).toBe(false);
    expect(ifRangeAllows(h({ 'If-Range': 'nonsense' }), v)).toBe(false);
  });
});

describe('request paths', () => {
  it('decodes once into segments', () => {
    expect(decodeRequestPath('/a/b%20c/d.txt?x=1')).toEqual({ rawPath: '/a/b%20c/d.txt', query: '?x=1', segments: ['a', 'b c', 'd.txt'], trailingSlash: false });
    expect(decodeRequestPath('/')).toEqual({ rawPath: '/', query: '', segments: [], trailingSlash: false });
    expect(decodeRequestPath('/dir/')?.trailingSlash).toBe(true);
    expect(decodeRequestPath('/%252e%252e/x')?.segments).toEqual(['%2e%2e', 'x']);
    expect(decodeRequestPath('/caf%C3%A9')?.segments).toEqual(['café']);
    expect(decodeRequestPath('http://h:1/a/b?q')).toMatchObject({ rawPath: '/a/b', query: '?q', segments: ['a', 'b'] });
  });
  it.each([
    '/..',
    '/a/../b',
    '/%2e%2e/x',
    '/%2E%2e/x',
    '/.%2e/x',
    '/./a',
    '/a\\b',
    '/a%5cb',
    '/a%00b',
    '/a\0b',
    '/a%0ab',
    '//etc/passwd',
    '/a//b',
    '/%zz',
    '/%2',
    '/%c3%28',
    '/a%2f..%2fb',
    '*',
    'example.com:80',
  ])('refuses %j', (t) => {
    expect(decodeRequestPath(t)).toBeNull();
  });
  it('serveFile path checks and root containment', () => {
    expect(isUnsafeFsPath('/srv/a/../b')).toBe(true);
    expect(isUnsafeFsPath('C:\\srv\\..\\b')).toBe(true);
    expect(isUnsafeFsPath('/srv/a\0')).toBe(true);
    expect(isUnsafeFsPath('/srv/a..b/c')).toBe(false);
    expect(isWithin('/srv/www', '/srv/www/a')).toBe(true);
    expect(isWithin('/srv/www', '/srv/www')).toBe(true);
    expect(isWithin('/srv/www', '/srv/www2/a')).toBe(false);
    expect(isWithin('/', '/etc')).toBe(true);
  });
});

describe('content types', () => {
  it('by name through mime-types', () => {
    expect(contentTypeByName('/x/index.html')).toBe('text/html; charset=utf-8');
    expect(contentTypeByName('a.PNG')).toBe('image/png');
    expect(contentTypeByName('app.js')).toBe('text/javascript; charset=utf-8');
    expect(contentTypeByName('html')).toBeNull();
    expect(contentTypeByName('a.unknownext')).toBeNull();
  });

  const b = (...parts: (string | number[])[]): Uint8Array => Buffer.concat(parts.map((p) => (typeof p === 'string' ? Buffer.from(p, 'latin1') : Buffer.from(p))));
  it.each([
    ['html doctype', b('<!DOCTYPE html><p>x'), 'text/html; charset=utf-8'],
    ['html after whitespace, any case', b('\n\t  <hTmL>'), 'text/html; charset=utf-8'],
    ['html comment', b('<!-- x -->'), 'text/html; charset=utf-8'],
    ['<p> needs a terminator', b('<pre>x</pre>'), 'text/plain; charset=utf-8'],
    ['<b> tag', b('<b>bold</b>'), 'text/html; charset=utf-8'],
    ['xml', b('  <?xml version="1.0"?>'), 'text/xml; charset=utf-8'],
    ['pdf', b('%PDF-1.7\n'), 'application/pdf'],
    ['postscript', b('%!PS-Adobe-3.0'), 'application/postscript'],
    ['utf-16be bom', b([0xfe, 0xff, 0, 0x41]), 'text/plain; charset=utf-16be'],
    ['utf-16le bom', b([0xff, 0xfe, 0x41, 0]), 'text/plain; charset=utf-16le'],
    ['utf-8 bom', b([0xef, 0xbb, 0xbf], 'hi'), 'text/plain; charset=utf-8'],
    ['png', b([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0, 0, 0, 13]), 'image/png'],
    ['jpeg', b([0xff, 0xd8, 0xff, 0xe0, 0, 0x10]), 'image/jpeg'],
    ['gif87a', b('GIF87a', [1, 0, 1, 0]), 'image/gif'],
    ['gif89a', b('GIF89a', [1, 0, 1, 0]), 'image/gif'],
    ['webp', b('RIFF', [1, 2, 3, 4], 'WEBPVP8 '), 'image/webp'],
    ['bmp', b('BM', [0, 0, 0, 0]), 'image/bmp'],
    ['ico', b([0, 0, 1, 0, 1, 0]), 'image/x-icon'],
    ['wave', b('RIFF', [1, 2, 3, 4], 'WAVEfmt '), 'audio/wave'],
    ['avi', b('RIFF', [1, 2, 3, 4], 'AVI LIST'), 'video/avi'],
    ['ogg', b('OggS', [0, 2]), 'application/ogg'],
    ['mp3 id3', b('ID3', [4, 0, 0]), 'audio/mpeg'],
    ['midi', b('MThd', [0, 0, 0, 6, 0, 1]), 'audio/midi'],
    ['mp4', b([0, 0, 0, 0x1c], 'ftypisom', [0, 0, 2, 0], 'isomiso2mp41'), 'video/mp4'],
    ['webm', b([0x1a, 0x45, 0xdf, 0xa3, 0x9f, 0x42, 0x86, 0x81, 0x01, 0x42, 0x82, 0x84], 'webm'), 'video/webm'],
    ['gzip', b([0x1f, 0x8b, 0x08, 0]), 'application/x-gzip'],
    ['zip', b('PK', [3, 4, 20, 0]), 'application/zip'],
    ['rar', b('Rar!', [0x1a, 7, 0]), 'application/x-rar-compressed'],
    ['plain text', b('hello, world\r\n'), 'text/plain; charset=utf-8'],
    ['empty', b(''), 'text/plain; charset=utf-8'],
    ['binary', b('abc', [0, 1, 2]), 'application/octet-stream'],
    ['escape byte is text', b('\x1b[0m colored'), 'text/plain; charset=utf-8'],
  ])('%s', (_name, data, want) => {
    expect(sniffContentType(data)).toBe(want);
  });
  it('looks at the first 512 bytes only', () => {
    const data = Buffer.alloc(600, 0x61);
    data[550] = 0;
    expect(sniffContentType(data)).toBe('text/plain; charset=utf-8');
  });
});
