import { describe, expect, it } from 'vitest';
import { ParseError, ProtocolError } from '../../../kernel/errors.js';
import { ChunkedDecoder } from '../../../kernel/http1/chunked.js';
import { FORBIDDEN_TRAILERS, isForbiddenTrailer } from '../../../kernel/http1/tables.js';
import { b, decodeChunked, pieces, prng } from './helpers.js';

interface Case {
  name: string;
  raw: string;
  data?: string;
  trailers?: [string, string][];
  leftover?: string;
  error?: typeof ParseError | typeof ProtocolError;
  message?: string;
  options?: ConstructorParameters<typeof ChunkedDecoder>[0];
}

const CASES: Case[] = [
  { name: 'one chunk', raw: '5\r\nhello\r\n0\r\n\r\n', data: 'hello' },
  { name: 'several chunks, hex sizes in both cases, leading zeros', raw: '3\r\nabc\r\nA\r\n0123456789\r\n000b\r\nhello world\r\n0\r\n\r\n', data: 'abc0123456789hello world' },
  { name: 'empty body', raw: '0\r\n\r\n', data: '' },
  { name: 'uppercase hex', raw: 'F\r\n0123456789abcde\r\n0\r\n\r\n', data: '0123456789abcde' },
  { name: 'chunk extensions are ignored', raw: '5;name=value\r\nhello\r\n6;a;b="q; x"\r\n world\r\n0;last\r\n\r\n', data: 'hello world' },
  { name: 'whitespace before an extension', raw: '5 \t;x\r\nhello\r\n0\r\n\r\n', data: 'hello' },
  { name: 'data containing CRLF', raw: '4\r\n\r\n\r\n\r\n0\r\n\r\n', data: '\r\n\r\n' },
  {
    name: 'trailers with canonical names',
    raw: '5\r\nhello\r\n0\r\nx-checksum: abc\r\nETAG:  never \r\nserver-timing: db;dur=53\r\n\r\n',
    data: 'hello',
    trailers: [
      ['X-Checksum', 'abc'],
      ['Etag', 'never'],
      ['Server-Timing', 'db;dur=53'],
    ],
  },
  {
    // RFC 9110 §6.5.1: framing, routing, authentication, content-format and control fields
    // cannot trail; they are dropped, whatever their case, and the rest are kept in order.
    name: 'trailers that may not trail are dropped',
    raw:
      '1\r\nx\r\n0\r\nX-A: 1\r\ncontent-length: 99\r\nTransfer-Encoding: chunked\r\nHOST: evil.example\r\n' +
      'Content-Type: text/html\r\nContent-Encoding: gzip\r\nContent-Range: bytes 0-1/2\r\nTrailer: X-B\r\n' +
      'Authorization: Basic eA==\r\nProxy-Authorization: Basic eA==\r\nSet-Cookie: s=1\r\nCookie: c=1\r\nTE: trailers\r\n' +
      'Connection: close\r\nKeep-Alive: timeout=5\r\nUpgrade: h2c\r\nCache-Control: no-store\r\nExpires: 0\r\n' +
      'Pragma: no-cache\r\nExpect: 100-continue\r\nMax-Forwards: 1\r\nRange: bytes=0-\r\nWWW-Authenticate: Basic\r\n' +
      'Proxy-Authenticate: Basic\r\nProxy-Connection: close\r\nX-B: 2\r\n\r\n',
    data: 'x',
    trailers: [
      ['X-A', '1'],
      ['X-B', '2'],
    ],
  },
  { name: 'stops at the end and leaves the next message', raw: '2\r\nhi\r\n0\r\n\r\nGET / HTTP/1.1\r\n\r\n', data: 'hi', leftover: 'GET / HTTP/1.1\r\n\r\n' },
  { name: 'stops after trailers and leaves the rest', raw: '0\r\nA: b\r\n\r\nnext', data: '', trailers: [['A', 'b']], leftover: 'next' },
  { name: 'non-hex size', raw: 'x\r\nhello\r\n0\r\n\r\n', error: ParseError, message: 'chunk size' },
  { name: 'hex prefix 0x', raw: '0x5\r\nhello\r\n0\r\n\r\n', error: ParseError, message: 'chunk size' },
  { name: 'negative size', raw: '-5\r\nhello\r\n', error: ParseError },
  { name: 'empty size', raw: '\r\nhello\r\n0\r\n\r\n', error: ParseError, message: 'empty chunk size' },
  { name: 'extension without size', raw: ';x\r\nhello\r\n', error: ParseError, message: 'empty chunk size' },
  { name: 'size overflowing 2^53', raw: '20000000000000\r\n', error: ParseError, message: '2^53' },
  { name: 'absurdly long hex', raw: '00000000000000000001\r\nx\r\n0\r\n\r\n', error: ParseError, message: 'hex digits' },
  { name: 'whitespace after the size without an extension', raw: '5 \r\nhello\r\n0\r\n\r\n', error: ParseError, message: 'whitespace' },
  { name: 'leading whitespace before the size', raw: ' 5\r\nhello\r\n0\r\n\r\n', error: ParseError },
  { name: 'CTL in an extension', raw: '5;a\x01b\r\nhello\r\n0\r\n\r\n', error: ParseError, message: 'extension' },
  { name: 'bare LF in an extension', raw: '5;a\nhello\r\n0\r\n\r\n', error: ParseError },
  { name: 'bare LF after the size', raw: '5\nhello\r\n0\r\n\r\n', error: ParseError },
  { name: 'bare CR after the size', raw: '5\rhello\r\n0\r\n\r\n', error: ParseError, message: 'bare CR' },
  { name: 'missing CRLF after data', raw: '5\r\nhelloX\r\n0\r\n\r\n', error: ParseError, message: 'missing CRLF after chunk data' },
  { name: 'CR without LF after data', raw: '5\r\nhello\rX0\r\n\r\n', error: ParseError, message: 'missing CRLF' },
  { name: 'data longer than its size', raw: '3\r\nhello\r\n0\r\n\r\n', error: ParseError, message: 'missing CRLF' },
  { name: 'bare CR after the last chunk', raw: '0\r\n\rX', error: ParseError },
  { name: 'obs-fold in trailers', raw: '0\r\nA: b\r\n c\r\n\r\n', error: ParseError, message: 'folding' },
  { name: 'invalid trailer name', raw: '0\r\nA B: c\r\n\r\n', error: ParseError },
  { name: 'bare LF in trailers', raw: '0\r\nA: b\n\r\n', error: ParseError },
  { name: 'NUL in a trailer value', raw: '0\r\nA: b\0\r\n\r\n', error: ParseError },
  { name: 'chunk-size line longer than maxLineBytes', raw: `5;${'x'.repeat(200)}\r\nhello\r\n0\r\n\r\n`, error: ProtocolError, message: 'maxLineBytes (100 bytes)', options: { maxLineBytes: 100 } },
  {
    name: 'trailers count against maxHeaderBytes with the head',
    raw: '0\r\nX-Big: 0123456789\r\n\r\n',
    error: ProtocolError,
    message: 'maxHeaderBytes (100 bytes)',
    options: { maxHeaderBytes: 100, headBytes: 90 },
  },
  {
    name: 'trailers that fit beside the head',
    raw: '0\r\nX-Big: 0123456789\r\n\r\n',
    data: '',
    trailers: [['X-Big', '0123456789']],
    options: { maxHeaderBytes: 100, headBytes: 60 },
  },
];

describe('ChunkedDecoder', () => {
  for (const c of CASES) {
    it(c.name, () => {
      const raw = b(c.raw);
      const splits: Uint8Array[][] = [pieces(raw, 'whole'), pieces(raw, 'bytes')];
      for (let seed = 1; seed <= 20; seed++) splits.push(pieces(raw, prng(seed)));
      for (const parts of splits) {
        if (c.error) {
          let caught: unknown;
          try {
            decodeChunked(parts, c.options);
          } catch (err) {
            caught = err;
          }
          expect(caught).toBeInstanceOf(c.error);
          expect((caught as Error).constructor).toBe(c.error);
          if (c.message) expect((caught as Error).message).toContain(c.message);
          continue;
        }
        const r = decodeChunked(parts, c.options);
        expect(r.done).toBe(true);
        expect(r.data.toString('latin1')).toBe(c.data);
        expect(r.trailers).toEqual(c.trailers ?? []);
        expect(r.leftover.toString('latin1')).toBe(c.leftover ?? '');
      }
    });
  }

  it('drops every name of FORBIDDEN_TRAILERS, in any letter case, whole or split', () => {
    expect(FORBIDDEN_TRAILERS.size).toBeGreaterThan(20);
    for (const name of FORBIDDEN_TRAILERS) {
      expect(isForbiddenTrailer(name.toUpperCase())).toBe(true);
      for (const spelling of [name, name.toUpperCase()]) {
        const raw = b(`0\r\nX-Before: 1\r\n${spelling}: v\r\nX-After: 2\r\n\r\n`);
        for (const parts of [pieces(raw, 'whole'), pieces(raw, 'bytes'), pieces(raw, prng(name.length))]) {
          expect(decodeChunked(parts).trailers, spelling).toEqual([
            ['X-Before', '1'],
            ['X-After', '2'],
          ]);
        }
      }
    }
    expect(isForbiddenTrailer('Server-Timing')).toBe(false);
    expect(isForbiddenTrailer('X-Checksum')).toBe(false);
  });

  it('limits each data span to maxData and reports offsets into the given buffer', () => {
    const raw = b('xx a\r\n0123456789\r\n0\r\n\r\n');
    const dec = new ChunkedDecoder();
    let pos = 3;
    const spans: string[] = [];
    while (!dec.done) {
      pos += dec.execute(raw, pos, raw.length, 4);
      if (dec.dataEnd > dec.dataStart) spans.push(raw.toString('latin1', dec.dataStart, dec.dataEnd));
    }
    expect(spans).toEqual(['0123', '4567', '89']);
    expect(pos).toBe(raw.length);
    expect(dec.bodyBytes).toBe(10);
  });

  it('returns 0 and consumes nothing once done', () => {
    const dec = new ChunkedDecoder();
    const raw = b('0\r\n\r\nrest');
    expect(dec.execute(raw, 0, raw.length)).toBe(5);
    expect(dec.done).toBe(true);
    expect(dec.execute(raw, 5, raw.length)).toBe(0);
  });

  it('handles big sizes split anywhere', () => {
    const data = Buffer.alloc(300_000, 0x62);
    const raw = Buffer.concat([b(`${data.length.toString(16)}\r\n`), data, b('\r\n0\r\n\r\n')]);
    const r = decodeChunked(pieces(raw, prng(99)));
    expect(r.data.equals(data)).toBe(true);
  });
});
