import { describe, expect, it } from 'vitest';
import { ParseError, ProtocolError, ArgumentError } from '../../../kernel/errors.js';
import { canonicalHeaderKey } from '../../../kernel/message/headers.js';
import { CONN_CLOSE, CONN_KEEP_ALIVE, CONN_UPGRADE, H2_PREFACE, HeadParser, isH2Preface, matchH2Preface, parseContentLength } from '../../../kernel/http1/head-parser.js';
import { requestBodyKind, responseBodyKind } from '../../../kernel/http1/framing.js';
import { KNOWN_MAX_PROBE, KNOWN_NAMES } from '../../../kernel/http1/tables.js';
import { b, feedHead, pieces, prng, snapshot } from './helpers.js';

type Kind = 'request' | 'response';
type ErrClass = typeof ParseError | typeof ProtocolError;

interface Fixture {
  name: string;
  kind: Kind;
  raw: string;
  /** Bytes after the head (must be left unconsumed). */
  rest?: string;
  check?: (p: HeadParser) => void;
  error?: ErrClass;
  /** Part of the error message. */
  message?: string;
  /** The ProtocolError's `notImplemented` (checked when given). */
  notImplemented?: boolean;
}

const GET = 'GET / HTTP/1.1\r\nHost: a\r\n';

const VALID: Fixture[] = [
  {
    name: 'browser GET',
    kind: 'request',
    raw:
      'GET /search?q=x&y=%20z HTTP/1.1\r\nHost: www.example.com\r\nUser-Agent: Mozilla/5.0 (X11)\r\n' +
      'Accept: text/html,*/*;q=0.8\r\nAccept-Language: en-US,en;q=0.5\r\nAccept-Encoding: gzip, br\r\n' +
      'Connection: keep-alive\r\nCookie: a=1; b=2\r\nUpgrade-Insecure-Requests: 1\r\nSec-Fetch-Dest: document\r\n\r\n',
    check: (p) => {
      expect(p.method).toBe('GET');
      expect(p.target).toBe('/search?q=x&y=%20z');
      expect(p.versionMinor).toBe(1);
      expect(p.headers.toArray()).toEqual([
        ['Host', 'www.example.com'],
        ['User-Agent', 'Mozilla/5.0 (X11)'],
        ['Accept', 'text/html,*/*;q=0.8'],
        ['Accept-Language', 'en-US,en;q=0.5'],
        ['Accept-Encoding', 'gzip, br'],
        ['Connection', 'keep-alive'],
        ['Cookie', 'a=1; b=2'],
        ['Upgrade-Insecure-Requests', '1'],
        ['Sec-Fetch-Dest', 'document'],
      ]);
      expect(p.keepAlive).toBe(true);
      expect(p.contentLength).toBe(-1);
      expect(requestBodyKind(p)).toBe('none');
    },
  },
  {
    name: 'POST with Content-Length and a pipelined body',
    kind: 'request',
    raw: 'POST /submit HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\nContent-Type: text/plain\r\n\r\n',
    rest: 'helloGET / HTTP/1.1\r\n\r\n',
    check: (p) => {
      expect(p.method).toBe('POST');
      expect(p.contentLength).toBe(5);
      expect(requestBodyKind(p)).toBe('length');
    },
  },
  {
    name: 'chunked request',
    kind: 'request',
    raw: 'PUT /up HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n',
    rest: '5\r\nhello\r\n0\r\n\r\n',
    check: (p) => {
      expect(p.chunked).toBe(true);
      expect(p.otherCoding).toBe('');
      expect(requestBodyKind(p)).toBe('chunked');
    },
  },
  ...['CHUNKED', ' chunked\t', 'chunked,', ', chunked', ',, chunked , ,'].map((te): Fixture => ({
    name: `request Transfer-Encoding "${te}" is chunked (case, OWS and empty list elements)`,
    kind: 'request',
    raw: `PUT /up HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: ${te}\r\n\r\n`,
    check: (p) => expect(requestBodyKind(p)).toBe('chunked'),
  })),
  {
    name: 'HTTP/1.0 response with Transfer-Encoding closes the connection even with keep-alive',
    kind: 'response',
    raw: 'HTTP/1.0 200 OK\r\nConnection: keep-alive\r\nTransfer-Encoding: chunked\r\n\r\n',
    check: (p) => {
      expect(responseBodyKind(p, 'GET')).toBe('chunked');
      expect(p.keepAlive).toBe(false);
    },
  },
  {
    name: 'HTTP/1.0 request defaults to close',
    kind: 'request',
    raw: 'GET /old HTTP/1.0\r\n\r\n',
    check: (p) => {
      expect(p.versionMinor).toBe(0);
      expect(p.keepAlive).toBe(false);
      expect(p.headers.size).toBe(0);
    },
  },
  {
    name: 'HTTP/1.0 keep-alive',
    kind: 'request',
    raw: 'GET / HTTP/1.0\r\nConnection: Keep-Alive\r\n\r\n',
    check: (p) => {
      expect(p.connection).toBe(CONN_KEEP_ALIVE);
      expect(p.keepAlive).toBe(true);
    },
  },
  {
    name: 'Connection list with close and upgrade',
    kind: 'request',
    raw: `${GET}Connection: Upgrade, close\r\nUpgrade: websocket\r\n\r\n`,
    check: (p) => {
      expect(p.connection).toBe(CONN_CLOSE | CONN_UPGRADE);
      expect(p.upgrade).toBe(true);
      expect(p.keepAlive).toBe(false);
    },
  },
  {
    name: 'leading empty lines before the request line are skipped',
    kind: 'request',
    raw: '\r\n\r\nDELETE /x HTTP/1.1\r\nHost: h\r\n\r\n',
    check: (p) => expect(p.method).toBe('DELETE'),
  },
  {
    name: 'unknown method, absolute-form target, Expect',
    kind: 'request',
    raw: 'PROPFIND http://example.com/a?b HTTP/1.1\r\nHost: example.com\r\nExpect: 100-continue\r\n\r\n',
    check: (p) => {
      expect(p.method).toBe('PROPFIND');
      expect(p.target).toBe('http://example.com/a?b');
      expect(p.expectContinue).toBe(true);
    },
  },
  {
    name: 'CONNECT authority-form and OPTIONS *',
    kind: 'request',
    raw: 'CONNECT example.com:443 HTTP/1.1\r\nHost: example.com:443\r\n\r\n',
    check: (p) => {
      expect(p.method).toBe('CONNECT');
      expect(p.target).toBe('example.com:443');
    },
  },
  {
    name: 'OWS trimmed, inner whitespace kept, empty values, obs-text kept',
    kind: 'request',
    raw: `${GET}X-Pad: \t  a  b \t \r\nX-Empty:\r\nX-Blank:    \r\nX-Latin: caf\xe9\r\n\r\n`,
    check: (p) => {
      expect(p.headers.get('X-Pad')).toBe('a  b');
      expect(p.headers.get('X-Empty')).toBe('');
      expect(p.headers.get('X-Blank')).toBe('');
      expect(p.headers.get('X-Latin')).toBe('caf\xe9');
    },
  },
  {
    name: 'names canonicalized',
    kind: 'request',
    raw:
      `GET / HTTP/1.1\r\nhost: a\r\ncontent-TYPE: t\r\nx-custom-header: 1\r\nX-CUSTOM-HEADER: 2\r\netag: e\r\n` +
      `www-authenticate: w\r\nsec-ch-ua: s\r\nx_under: u\r\na1-b2: n\r\n!x-y: z\r\nTE: trailers\r\n\r\n`,
    check: (p) => {
      expect(p.headers.keys()).toEqual(['Host', 'Content-Type', 'X-Custom-Header', 'X-Custom-Header', 'Etag', 'Www-Authenticate', 'Sec-Ch-Ua', 'X_under', 'A1-B2', '!x-Y', 'Te']);
    },
  },
  {
    name: 'identical repeated Content-Length values are accepted',
    kind: 'request',
    raw: 'POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 3, 3\r\nContent-Length: 3\r\n\r\n',
    check: (p) => expect(p.contentLength).toBe(3),
  },
  {
    name: 'simple response',
    kind: 'response',
    raw: 'HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 11\r\n\r\n',
    rest: 'hello world',
    check: (p) => {
      expect(p.status).toBe(200);
      expect(p.reason).toBe('OK');
      expect(responseBodyKind(p, 'GET')).toBe('length');
      expect(responseBodyKind(p, 'HEAD')).toBe('none');
    },
  },
  {
    name: 'response without reason phrase (with and without the space)',
    kind: 'response',
    raw: 'HTTP/1.1 204\r\nServer: s\r\n\r\n',
    check: (p) => {
      expect(p.status).toBe(204);
      expect(p.reason).toBe('');
      expect(responseBodyKind(p, 'GET')).toBe('none');
    },
  },
  {
    name: 'response with empty reason after the space',
    kind: 'response',
    raw: 'HTTP/1.0 404 \r\n\r\n',
    check: (p) => {
      expect(p.status).toBe(404);
      expect(p.reason).toBe('');
      expect(p.versionMinor).toBe(0);
      expect(responseBodyKind(p, 'GET')).toBe('close');
    },
  },
  {
    name: 'reason with spaces and tabs',
    kind: 'response',
    raw: 'HTTP/1.1 503 Service\tTemporarily  Unavailable\r\n\r\n',
    check: (p) => expect(p.reason).toBe('Service\tTemporarily  Unavailable'),
  },
  {
    name: 'chunked response',
    kind: 'response',
    raw: 'HTTP/1.1 200 OK\r\nTransfer-Encoding: Chunked\r\n\r\n',
    check: (p) => expect(responseBodyKind(p, 'GET')).toBe('chunked'),
  },
  {
    name: '304 and 1xx have no body',
    kind: 'response',
    raw: 'HTTP/1.1 304 Not Modified\r\nContent-Length: 100\r\n\r\n',
    check: (p) => expect(responseBodyKind(p, 'GET')).toBe('none'),
  },
  {
    name: '2xx to CONNECT has no body',
    kind: 'response',
    raw: 'HTTP/1.1 200 Connection established\r\n\r\n',
    check: (p) => {
      expect(responseBodyKind(p, 'CONNECT')).toBe('none');
      expect(responseBodyKind(p, 'GET')).toBe('close');
    },
  },
];

const INVALID: Fixture[] = [
  // Syntax: ParseError.
  { name: 'obs-fold', kind: 'request', raw: `${GET}X-A: b\r\n  c\r\n\r\n`, error: ParseError, message: 'folding' },
  { name: 'obs-fold with HTAB', kind: 'request', raw: `${GET}X-A: b\r\n\tc\r\n\r\n`, error: ParseError, message: 'folding' },
  { name: 'whitespace before the first header', kind: 'request', raw: 'GET / HTTP/1.1\r\n Host: a\r\n\r\n', error: ParseError },
  { name: 'bare CR in a value', kind: 'request', raw: `${GET}X-A: b\rc\r\n\r\n`, error: ParseError, message: 'bare CR' },
  { name: 'bare CR at the end of a value', kind: 'request', raw: `${GET}X-A: b\r\r\n\r\n`, error: ParseError, message: 'bare CR' },
  { name: 'bare CR in the request line', kind: 'request', raw: 'GET / HTTP/1.1\rX\r\n\r\n', error: ParseError, message: 'bare CR' },
  { name: 'bare CR ending the head', kind: 'request', raw: `${GET}\rX`, error: ParseError, message: 'bare CR' },
  { name: 'bare CR before the request line', kind: 'request', raw: '\rGET / HTTP/1.1\r\n\r\n', error: ParseError },
  { name: 'bare CR in a status line', kind: 'response', raw: 'HTTP/1.1 200 O\rK\r\n\r\n', error: ParseError, message: 'bare CR' },
  { name: 'bare LF lines', kind: 'request', raw: 'GET / HTTP/1.1\nHost: a\n\n', error: ParseError, message: 'bare LF' },
  { name: 'bare LF after a header', kind: 'request', raw: `${GET}X-A: b\n\r\n`, error: ParseError, message: 'bare LF' },
  { name: 'bare LF ending the head', kind: 'request', raw: `${GET}\n`, error: ParseError, message: 'bare LF' },
  { name: 'NUL in a value', kind: 'request', raw: `${GET}X-A: a\0b\r\n\r\n`, error: ParseError, message: '0x00' },
  { name: 'NUL in a name', kind: 'request', raw: `${GET}X\0A: b\r\n\r\n`, error: ParseError, message: '0x00' },
  { name: 'NUL in the target', kind: 'request', raw: 'GET /a\0b HTTP/1.1\r\n\r\n', error: ParseError, message: '0x00' },
  { name: 'NUL in the method', kind: 'request', raw: 'G\0ET / HTTP/1.1\r\n\r\n', error: ParseError, message: '0x00' },
  { name: 'NUL in the version', kind: 'request', raw: 'GET / HTTP/1.1\0\r\n\r\n', error: ParseError },
  { name: 'NUL in a reason', kind: 'response', raw: 'HTTP/1.1 200 O\0K\r\n\r\n', error: ParseError },
  { name: 'NUL in a Content-Length value', kind: 'request', raw: 'POST / HTTP/1.1\r\nContent-Length: 1\0\r\n\r\n', error: ParseError },
  { name: 'space before the colon', kind: 'request', raw: `${GET}X-A : b\r\n\r\n`, error: ParseError, message: 'whitespace between header name' },
  { name: 'tab before the colon', kind: 'request', raw: `${GET}Content-Length\t: 1\r\n\r\n`, error: ParseError, message: 'whitespace between header name' },
  { name: 'invalid token byte in a name', kind: 'request', raw: `${GET}X(A): b\r\n\r\n`, error: ParseError, message: 'header name' },
  { name: 'non-ASCII byte in a name', kind: 'request', raw: `${GET}X-\xe9: b\r\n\r\n`, error: ParseError, message: 'header name' },
  { name: 'slash in a name', kind: 'request', raw: `${GET}X/A: b\r\n\r\n`, error: ParseError },
  { name: 'invalid token byte in the method', kind: 'request', raw: 'G(ET / HTTP/1.1\r\n\r\n', error: ParseError, message: 'method' },
  { name: 'empty header name', kind: 'request', raw: `${GET}: value\r\n\r\n`, error: ParseError, message: 'empty header name' },
  { name: 'header line without colon', kind: 'request', raw: `${GET}NoColon\r\n\r\n`, error: ParseError, message: 'no colon' },
  { name: 'CTL 0x01 in a value', kind: 'request', raw: `${GET}X-A: a\x01\r\n\r\n`, error: ParseError, message: '0x01' },
  { name: 'DEL in a value', kind: 'request', raw: `${GET}X-A: a\x7f\r\n\r\n`, error: ParseError, message: '0x7f' },
  { name: 'ESC in a value', kind: 'request', raw: `${GET}X-A: \x1b[31m\r\n\r\n`, error: ParseError },
  { name: 'double space in the request line', kind: 'request', raw: 'GET  / HTTP/1.1\r\n\r\n', error: ParseError, message: 'request line' },
  { name: 'leading space in the request line', kind: 'request', raw: ' GET / HTTP/1.1\r\n\r\n', error: ParseError },
  { name: 'trailing junk after the version', kind: 'request', raw: 'GET / HTTP/1.1 x\r\n\r\n', error: ParseError },
  { name: 'HTTP/0.9 request line', kind: 'request', raw: 'GET /\r\n\r\n', error: ParseError, message: 'version' },
  { name: 'missing target', kind: 'request', raw: 'GET\r\n\r\n', error: ParseError },
  { name: 'lowercase protocol name', kind: 'request', raw: 'GET / http/1.1\r\n\r\n', error: ParseError, message: 'version' },
  { name: 'HTTP/1.2', kind: 'request', raw: 'GET / HTTP/1.2\r\n\r\n', error: ParseError, message: 'unsupported' },
  { name: 'HTTP/2.0 request line', kind: 'request', raw: 'GET / HTTP/2.0\r\n\r\n', error: ParseError, message: 'unsupported' },
  { name: 'HTTP/1.10', kind: 'request', raw: 'GET / HTTP/1.10\r\n\r\n', error: ParseError },
  { name: 'target as first token', kind: 'request', raw: '/ HTTP/1.1\r\n\r\n', error: ParseError },
  { name: 'DEL in the target', kind: 'request', raw: 'GET /\x7f HTTP/1.1\r\n\r\n', error: ParseError },
  { name: 'status code with 2 digits', kind: 'response', raw: 'HTTP/1.1 20 OK\r\n\r\n', error: ParseError, message: 'status' },
  { name: 'status code with 4 digits', kind: 'response', raw: 'HTTP/1.1 2000 OK\r\n\r\n', error: ParseError, message: 'status' },
  { name: 'non-numeric status', kind: 'response', raw: 'HTTP/1.1 abc OK\r\n\r\n', error: ParseError, message: 'status' },
  { name: 'status below 100', kind: 'response', raw: 'HTTP/1.1 099 X\r\n\r\n', error: ParseError, message: 'status' },
  { name: 'double space in the status line', kind: 'response', raw: 'HTTP/1.1  200 OK\r\n\r\n', error: ParseError },
  { name: 'HTTP/2 status line', kind: 'response', raw: 'HTTP/2 200\r\n\r\n', error: ParseError },
  { name: 'HTTP/2.0 status line', kind: 'response', raw: 'HTTP/2.0 200 OK\r\n\r\n', error: ParseError, message: 'unsupported' },
  { name: 'ICY status line', kind: 'response', raw: 'ICY 200 OK\r\n\r\n', error: ParseError, message: 'status line' },
  { name: 'CTL in the reason', kind: 'response', raw: 'HTTP/1.1 200 OK\x01\r\n\r\n', error: ParseError },
  { name: 'obs-fold in a response', kind: 'response', raw: 'HTTP/1.1 200 OK\r\nX-A: b\r\n c\r\n\r\n', error: ParseError },
  // Framing: ProtocolError.
  { name: 'Content-Length with Transfer-Encoding', kind: 'request', raw: 'POST / HTTP/1.1\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n', error: ProtocolError, message: 'both' },
  { name: 'Transfer-Encoding then Content-Length', kind: 'request', raw: 'POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\nContent-Length: 5\r\n\r\n', error: ProtocolError, message: 'both' },
  { name: 'Content-Length with Transfer-Encoding in a response', kind: 'response', raw: 'HTTP/1.1 200 OK\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n', error: ProtocolError },
  { name: 'differing Content-Length headers', kind: 'request', raw: 'POST / HTTP/1.1\r\nContent-Length: 5\r\nContent-Length: 6\r\n\r\n', error: ProtocolError, message: 'differing' },
  { name: 'differing Content-Length list', kind: 'request', raw: 'POST / HTTP/1.1\r\nContent-Length: 5, 6\r\n\r\n', error: ProtocolError, message: 'differing' },
  { name: 'differing Content-Length in a response', kind: 'response', raw: 'HTTP/1.1 200 OK\r\nContent-Length: 5,6\r\n\r\n', error: ProtocolError },
  { name: 'non-numeric Content-Length', kind: 'request', raw: 'POST / HTTP/1.1\r\nContent-Length: abc\r\n\r\n', error: ProtocolError, message: 'invalid Content-Length' },
  { name: 'negative Content-Length', kind: 'request', raw: 'POST / HTTP/1.1\r\nContent-Length: -1\r\n\r\n', error: ProtocolError, message: 'invalid Content-Length' },
  { name: 'signed Content-Length', kind: 'request', raw: 'POST / HTTP/1.1\r\nContent-Length: +5\r\n\r\n', error: ProtocolError },
  { name: 'fractional Content-Length', kind: 'request', raw: 'POST / HTTP/1.1\r\nContent-Length: 1.5\r\n\r\n', error: ProtocolError },
  { name: 'empty Content-Length', kind: 'request', raw: 'POST / HTTP/1.1\r\nContent-Length: \r\n\r\n', error: ProtocolError },
  { name: 'Content-Length with an empty list element', kind: 'request', raw: 'POST / HTTP/1.1\r\nContent-Length: 5,\r\n\r\n', error: ProtocolError },
  { name: 'huge Content-Length', kind: 'request', raw: 'POST / HTTP/1.1\r\nContent-Length: 99999999999999999999\r\n\r\n', error: ProtocolError },
  { name: 'hex Content-Length', kind: 'request', raw: 'POST / HTTP/1.1\r\nContent-Length: 0x10\r\n\r\n', error: ProtocolError },
  { name: 'request TE not ending in chunked', kind: 'request', raw: 'POST / HTTP/1.1\r\nTransfer-Encoding: gzip\r\n\r\n', error: ProtocolError, message: 'chunked' },
  { name: 'request TE chunked then gzip', kind: 'request', raw: 'POST / HTTP/1.1\r\nTransfer-Encoding: chunked, gzip\r\n\r\n', error: ProtocolError },
  { name: 'request TE chunked twice', kind: 'request', raw: 'POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n\r\n', error: ProtocolError },
  { name: 'request TE with junk after chunked', kind: 'request', raw: 'POST / HTTP/1.1\r\nTransfer-Encoding: chunked x\r\n\r\n', error: ProtocolError },
  { name: 'request TE empty', kind: 'request', raw: 'POST / HTTP/1.1\r\nTransfer-Encoding:\r\n\r\n', error: ProtocolError },
  // Transfer codings (RFC 9112 §6.1, §6.3, §7): malformed or misplaced -> 400, not implemented -> 501.
  ...(
    [
      ['chunked;', 'no parameters'],
      ['chunked; q=1', 'no parameters'],
      ['chunked ;q=1', 'no parameters'],
      ['chunked;', 'no parameters'],
      [',', 'no transfer coding'],
      ['  ,  , ', 'no transfer coding'],
      ['"chunked"', 'should start'],
      ['chunked x', "'x' after transfer coding chunked"],
      ['gzip;, chunked', 'malformed parameter'],
      ['gzip;q, chunked', 'malformed parameter'],
      ['gzip;q=, chunked', 'malformed parameter'],
      ['gzip;=1, chunked', 'malformed parameter'],
      ['gzip;q="1, chunked', 'malformed parameter'],
      ['gzip;q="1\\", chunked', 'malformed parameter'],
      ['gzip q=1, chunked', "'q' after transfer coding gzip"],
    ] as const
  ).map(([te, message]): Fixture => ({
    name: `request TE "${te}" is malformed`,
    kind: 'request',
    raw: `POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: ${te}\r\n\r\n`,
    error: ProtocolError,
    message,
    notImplemented: false,
  })),
  ...['gzip', 'chunked, gzip', 'chunked, chunked', 'chunked,,chunked', 'chunked, identity', 'gzip, chunked, chunked'].map((te): Fixture => ({
    name: `request TE "${te}" does not end in a single chunked`,
    kind: 'request',
    raw: `POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: ${te}\r\n\r\n`,
    error: ProtocolError,
    message: 'single chunked',
    notImplemented: false,
  })),
  ...['identity, chunked', 'gzip, chunked', 'GZIP,chunked', 'x-custom;a=1;b="c,d\\"e", chunked', 'gzip\r\nTransfer-Encoding: chunked'].map((te): Fixture => ({
    name: `request TE "${te}" names a coding that is not implemented`,
    kind: 'request',
    raw: `POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: ${te}\r\n\r\n`,
    error: ProtocolError,
    message: 'not implemented',
    notImplemented: true,
  })),
  {
    name: 'request TE empty field before chunked',
    kind: 'request',
    raw: 'POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: \r\nTransfer-Encoding: chunked\r\n\r\n',
    error: ProtocolError,
    message: 'no transfer coding',
  },
  ...['chunked, gzip', 'gzip', 'gzip, chunked', 'chunked;', 'chunked, chunked', 'identity'].map((te): Fixture => ({
    name: `response TE "${te}" is refused, not read until close or decoded as chunked`,
    kind: 'response',
    raw: `HTTP/1.1 200 OK\r\nTransfer-Encoding: ${te}\r\n\r\n`,
    error: ProtocolError,
    message: 'Transfer-Encoding',
  })),
  { name: 'Transfer-Encoding in HTTP/1.0', kind: 'request', raw: 'POST / HTTP/1.0\r\nTransfer-Encoding: chunked\r\n\r\n', error: ProtocolError, message: 'HTTP/1.0' },
  { name: 'two Host headers', kind: 'request', raw: 'GET / HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n', error: ProtocolError, message: 'Host' },
];

function expectError(fn: () => unknown, cls: ErrClass, message?: string): Error {
  let caught: unknown;
  try {
    fn();
  } catch (err) {
    caught = err;
  }
  expect(caught, 'expected an error').toBeInstanceOf(cls);
  // ProtocolError and ParseError are siblings: make sure the class is exactly the one expected.
  expect((caught as Error).constructor).toBe(cls);
  if (message !== undefined) expect((caught as Error).message).toContain(message);
  return caught as Error;
}

describe('HeadParser: valid heads', () => {
  for (const f of VALID) {
    it(f.name, () => {
      const head = b(f.raw);
      const all = Buffer.concat([head, b(f.rest ?? '')]);
      const { parser, consumed } = feedHead(f.kind, [all]);
      expect(parser.complete).toBe(true);
      expect(consumed).toBe(head.length);
      expect(parser.headBytes).toBe(head.length);
      f.check?.(parser);
    });
  }
});

describe('HeadParser: invalid heads', () => {
  for (const f of INVALID) {
    it(`${f.name} -> ${f.error!.name}`, () => {
      const err = expectError(() => feedHead(f.kind, [b(f.raw)]), f.error!, f.message);
      if (f.notImplemented !== undefined) expect((err as ProtocolError).notImplemented).toBe(f.notImplemented);
    });
  }
});

describe('HeadParser: every fixture byte at a time and in random splits', () => {
  for (const f of [...VALID, ...INVALID]) {
    it(f.name, () => {
      const all = Buffer.concat([b(f.raw), b(f.rest ?? '')]);
      if (f.error) {
        expectError(() => feedHead(f.kind, pieces(all, 'bytes')), f.error);
        for (let seed = 1; seed <= 20; seed++) expectError(() => feedHead(f.kind, pieces(all, prng(seed))), f.error);
        return;
      }
      const whole = feedHead(f.kind, [all]);
      const ref = snapshot(whole.parser);
      const bytes = feedHead(f.kind, pieces(all, 'bytes'));
      expect(bytes.consumed).toBe(whole.consumed);
      expect(snapshot(bytes.parser)).toEqual(ref);
      for (let seed = 1; seed <= 20; seed++) {
        const r = feedHead(f.kind, pieces(all, prng(seed)));
        expect(r.consumed, `seed ${seed}`).toBe(whole.consumed);
        expect(snapshot(r.parser), `seed ${seed}`).toEqual(ref);
      }
    });
  }
});

describe('HeadParser: behaviour', () => {
  it('stops at the end of the head and leaves the rest', () => {
    const p = new HeadParser('request');
    const buf = b('GET /a HTTP/1.1\r\nHost: h\r\n\r\nGET /b HTTP/1.1\r\nHost: h\r\n\r\n');
    const n = p.execute(buf);
    expect(n).toBe(28);
    expect(p.target).toBe('/a');
    expect(p.execute(buf, n)).toBe(0);
    p.reset();
    expect(p.execute(buf, n)).toBe(28);
    expect(p.target).toBe('/b');
  });

  it('reports the HTTP/2 preface distinctly', () => {
    const p = new HeadParser('request');
    expect(() => p.execute(H2_PREFACE)).toThrow(ParseError);
    expect(p.h2Preface).toBe(true);
    const q = new HeadParser('request');
    expect(() => q.execute(b('GET / HTTP/2.0\r\n\r\n'))).toThrow(ParseError);
    expect(q.h2Preface).toBe(false);
    expect(isH2Preface(H2_PREFACE)).toBe(true);
    expect(matchH2Preface(H2_PREFACE.subarray(0, 10))).toBe(0);
    expect(matchH2Preface(b('GET / HTTP/1.1\r\n'))).toBe(-1);
    expect(matchH2Preface(Buffer.concat([H2_PREFACE, b('xyz')]))).toBe(1);
  });

  it('keeps throwing after an error until reset', () => {
    const p = new HeadParser('request');
    expect(() => p.execute(b('GET / HTTP/1.1\r\nX : y\r\n'))).toThrow(ParseError);
    expect(() => p.execute(b('\r\n'))).toThrow(ParseError);
    p.reset();
    p.execute(b('GET / HTTP/1.1\r\nHost: h\r\n\r\n'));
    expect(p.complete).toBe(true);
  });

  it('accepts Uint8Array views that are not Buffers, with offsets', () => {
    const src = b('xxGET /v HTTP/1.1\r\nHost: h\r\n\r\nyy');
    const view = new Uint8Array(src.buffer.slice(src.byteOffset, src.byteOffset + src.length));
    const p = new HeadParser('request');
    expect(p.execute(view, 2, view.length)).toBe(src.length - 4);
    expect(p.headers.get('host')).toBe('h');
  });

  it('does not keep state across chunks whose memory is reused', () => {
    const p = new HeadParser('request');
    const buf = Buffer.alloc(64);
    const parts = ['GET /x HTTP/1.1\r\nHost: h\r\nX-A: one\r\n', 'X-B: two\r\n\r\n'];
    for (const s of parts) {
      buf.fill(0x41);
      buf.write(s, 0, 'latin1');
      p.execute(buf, 0, s.length);
    }
    expect(p.headers.toArray()).toEqual([
      ['Host', 'h'],
      ['X-A', 'one'],
      ['X-B', 'two'],
    ]);
  });

  it('hands out values that survive reuse of the input buffer', () => {
    const p = new HeadParser('request');
    const buf = b('GET /long-target-path HTTP/1.1\r\nHost: h\r\nUser-Agent: a fairly long value here\r\n\r\n');
    p.execute(buf);
    buf.fill(0x5a);
    expect(p.target).toBe('/long-target-path');
    expect(p.headers.get('User-Agent')).toBe('a fairly long value here');
  });

  it('every known header name is matched case-insensitively to its canonical spelling', () => {
    expect(KNOWN_MAX_PROBE).toBeLessThanOrEqual(4);
    for (const name of KNOWN_NAMES) {
      for (const spelled of [name, name.toLowerCase(), name.toUpperCase()]) {
        const value = name === 'Transfer-Encoding' ? 'chunked' : '1';
        const { parser } = feedHead('response', [b(`HTTP/1.1 200 OK\r\n${spelled}: ${value}\r\n\r\n`)]);
        expect(parser.headers.nameAt(0)).toBe(name);
        expect(name).toBe(canonicalHeaderKey(name));
      }
    }
  });

  it('canonicalizes unknown names like canonicalHeaderKey', () => {
    const rnd = prng(7);
    const alphabet = "abcXYZ-09!#$%&'*+.^_`|~";
    for (let i = 0; i < 500; i++) {
      let name = '';
      const len = 1 + Math.floor(rnd() * 20);
      for (let k = 0; k < len; k++) name += alphabet[Math.floor(rnd() * alphabet.length)];
      const { parser } = feedHead('request', [b(`GET / HTTP/1.0\r\n${name}: v\r\n\r\n`)]);
      expect(parser.headers.nameAt(0)).toBe(canonicalHeaderKey(name));
    }
  });

  it('validates its limits', () => {
    expect(() => new HeadParser('request', { maxLineBytes: 0 })).toThrow(ArgumentError);
    expect(() => new HeadParser('request', { maxHeaderBytes: 1.5 })).toThrow(ArgumentError);
    expect(() => new HeadParser('bogus' as 'request')).toThrow(ArgumentError);
  });
});

describe('HeadParser: limits', () => {
  const line = (n: number): string => `X-Long: ${'a'.repeat(n - 8)}`; // a header line of exactly n bytes (no CRLF)

  it('a header line of exactly maxLineBytes passes, one more byte fails with ProtocolError', () => {
    const ok = `GET / HTTP/1.1\r\nHost: h\r\n${line(100)}\r\n\r\n`;
    for (const how of ['whole', 'bytes'] as const) {
      expect(feedHead('request', pieces(b(ok), how), { maxLineBytes: 100 }).parser.complete).toBe(true);
    }
    const bad = `GET / HTTP/1.1\r\n${line(101)}\r\n\r\n`;
    for (const how of ['whole', 'bytes'] as const) {
      expectError(() => feedHead('request', pieces(b(bad), how), { maxLineBytes: 100 }), ProtocolError, 'header line exceeds maxLineBytes (100 bytes)');
    }
  });

  it('the request line and the status line are limited too', () => {
    const req = `GET /${'p'.repeat(200)} HTTP/1.1\r\n\r\n`;
    expectError(() => feedHead('request', [b(req)], { maxLineBytes: 100 }), ProtocolError, 'request line exceeds maxLineBytes (100 bytes)');
    expectError(() => feedHead('request', pieces(b(req), 'bytes'), { maxLineBytes: 100 }), ProtocolError, 'request line exceeds maxLineBytes');
    const res = `HTTP/1.1 200 ${'r'.repeat(200)}\r\n\r\n`;
    expectError(() => feedHead('response', [b(res)], { maxLineBytes: 100 }), ProtocolError, 'status line exceeds maxLineBytes (100 bytes)');
  });

  it('a head of exactly maxHeaderBytes passes, one more byte fails', () => {
    const head = `GET / HTTP/1.1\r\nHost: abc\r\n\r\n`;
    const max = head.length;
    expect(feedHead('request', [b(head)], { maxHeaderBytes: max }).parser.complete).toBe(true);
    expect(feedHead('request', pieces(b(head), 'bytes'), { maxHeaderBytes: max }).parser.complete).toBe(true);
    const longer = `GET / HTTP/1.1\r\nHost: abcd\r\n\r\n`;
    for (const how of ['whole', 'bytes'] as const) {
      expectError(() => feedHead('request', pieces(b(longer), how), { maxHeaderBytes: max }), ProtocolError, `head exceeds maxHeaderBytes (${max} bytes)`);
    }
  });

  it('an endless header line fails as soon as it passes maxLineBytes, without buffering the rest', () => {
    const max = 1024;
    const p = new HeadParser('request', { maxLineBytes: max });
    p.execute(b('GET / HTTP/1.1\r\nX-Endless: '));
    const piece = b('aaaaaaa');
    let fed = 0;
    let error: unknown;
    for (let i = 0; i < 100_000 && error === undefined; i++) {
      try {
        p.execute(piece);
        fed += piece.length;
      } catch (err) {
        error = err;
      }
    }
    expect(error).toBeInstanceOf(ProtocolError);
    expect((error as Error).message).toContain('maxLineBytes (1024 bytes)');
    // 'X-Endless: ' is 11 bytes; the error comes with the piece that crosses the limit.
    expect(fed + 11).toBeLessThanOrEqual(max + 1);
    expect(fed + 11 + piece.length).toBeGreaterThan(max + 1);
  });

  it('an endless stream of header lines fails as soon as it passes maxHeaderBytes', () => {
    const max = 4096;
    const p = new HeadParser('request', { maxHeaderBytes: max });
    p.execute(b('GET / HTTP/1.1\r\n'));
    let fed = 16;
    const piece = b('X-A: b\r\n');
    let error: unknown;
    for (let i = 0; i < 100_000 && error === undefined; i++) {
      try {
        p.execute(piece);
        fed += piece.length;
      } catch (err) {
        error = err;
      }
    }
    expect(error).toBeInstanceOf(ProtocolError);
    expect((error as Error).message).toContain('maxHeaderBytes (4096 bytes)');
    expect(fed).toBeLessThanOrEqual(max);
  });

  it('a 60 KB line fed one byte at a time is handled in linear time', () => {
    const value = 'v'.repeat(60_000);
    const head = b(`GET / HTTP/1.1\r\nHost: h\r\nX-Big: ${value}\r\nX-After: 1\r\n\r\n`);
    const p = new HeadParser('request');
    const one = Buffer.alloc(1);
    const t0 = performance.now();
    for (let i = 0; i < head.length; i++) {
      one[0] = head[i]!;
      p.execute(one);
    }
    expect(p.complete).toBe(true);
    expect(p.headers.get('X-Big')).toBe(value);
    expect(p.headers.get('X-After')).toBe('1');
    // Quadratic rescanning would take minutes here; linear work takes milliseconds.
    expect(performance.now() - t0).toBeLessThan(3000);
  });

  it('one huge chunk with an overlong line fails on the limit, not after scanning it all', () => {
    const huge = Buffer.concat([b('GET / HTTP/1.1\r\nX-A: '), Buffer.alloc(10_000_000, 0x61), b('\r\n\r\n')]);
    expectError(() => feedHead('request', [huge]), ProtocolError, 'maxLineBytes (65536 bytes)');
  });
});

describe('parseContentLength', () => {
  it('parses single values and identical lists', () => {
    expect(parseContentLength('0')).toBe(0);
    expect(parseContentLength('123')).toBe(123);
    expect(parseContentLength(' 7 , 7,7 ')).toBe(7);
    expect(parseContentLength('007')).toBe(7);
    expect(parseContentLength('999999999999999')).toBe(999999999999999);
  });
  it('rejects malformed and differing values', () => {
    for (const v of ['', ' ', 'a', '-1', '+1', '1.0', '1 2', '1,', ',1', '0x1', '1234567890123456']) expect(parseContentLength(v), v).toBe(-1);
    expect(parseContentLength('1, 2')).toBe(-2);
  });
});

describe('HeadParser: word-at-a-time scans at every alignment', () => {
  /** Parses `head` placed at byte offset `pad` of a larger buffer, as a socket chunk would be. */
  function parseAt(head: string, pad: number, kind: 'request' | 'response' = 'request'): HeadParser {
    const backing = Buffer.alloc(pad + head.length + 8, 0x7a);
    backing.write(head, pad, 'latin1');
    const chunk = backing.subarray(pad, pad + head.length);
    const p = new HeadParser(kind);
    const n = p.execute(chunk);
    expect(n).toBe(head.length);
    expect(p.complete).toBe(true);
    return p;
  }

  const long = 'abcdefghijklmnopqrstuvwxyz0123456789ABCDEFGHIJ'; // 46 bytes

  it('finds an invalid byte at any position of a long value', () => {
    for (let pad = 0; pad < 8; pad++) {
      for (let at = 0; at < long.length; at++) {
        for (const bad of ['\0', '\x01', '\x1f', '\x7f', '\n', '\rX']) {
          const value = long.slice(0, at) + bad + long.slice(at + 1);
          expect(() => parseAt(`GET / HTTP/1.1\r\nX-Long: ${value}\r\n\r\n`, pad), `pad ${pad} at ${at} ${JSON.stringify(bad)}`).toThrow(ParseError);
        }
      }
    }
  });

  it('keeps HTAB and obs-text at any position of a long value', () => {
    for (let pad = 0; pad < 8; pad++) {
      for (let at = 0; at < long.length; at++) {
        for (const ok of ['\t', '\x80', '\xff', ' ']) {
          const value = long.slice(0, at) + ok + long.slice(at + 1);
          const p = parseAt(`GET / HTTP/1.1\r\nHost: h\r\nX-Long: ${value}\r\n\r\n`, pad);
          expect(p.headers.get('X-Long')).toBe(value.trim());
        }
      }
    }
  });

  it('matches known names at any alignment and rejects near misses', () => {
    const names = ['content-length', 'Content-Type', 'ACCEPT-ENCODING', 'access-control-allow-credentials', 'te', 'Sec-Fetch-User'];
    for (let pad = 0; pad < 8; pad++) {
      for (let lead = 0; lead < 4; lead++) {
        const filler = 'X-F: y\r\n'.repeat(lead);
        for (const name of names) {
          const value = /length/i.test(name) ? '0' : 'v';
          const p = parseAt(`HTTP/1.1 200 OK\r\n${filler}${name}: ${value}\r\n\r\n`, pad, 'response');
          expect(p.headers.nameAt(lead)).toBe(canonicalHeaderKey(name));
          // One byte changed anywhere: not the known name, and canonicalized on its own.
          for (let i = 0; i < name.length; i++) {
            const c = name.charCodeAt(i);
            const swapped = c === 0x2d ? '_' : c === 0x7a || c === 0x5a ? 'q' : String.fromCharCode(c + 1);
            const near = name.slice(0, i) + swapped + name.slice(i + 1);
            const q = parseAt(`HTTP/1.1 200 OK\r\n${filler}${near}: 5\r\n\r\n`, pad, 'response');
            expect(q.headers.nameAt(lead)).toBe(canonicalHeaderKey(near));
            expect(q.contentLength).toBe(-1);
          }
        }
      }
    }
  });

  it('does not let CTLs alias the dashes of a known name', () => {
    for (let pad = 0; pad < 4; pad++) {
      for (const bad of ['Content\rLength: 5', 'Content\x0dLength: 5', 'Transfer\rEncoding: chunked', 'Content-Length\r: 5']) {
        expect(() => parseAt(`POST / HTTP/1.1\r\n${bad}\r\nX: y\r\n\r\n`, pad)).toThrow(ParseError);
      }
    }
  });
});

/** What feeding `parts` ends in: complete, incomplete, or the error (class, limit, message). */
function outcome(kind: Kind, parts: Uint8Array[], limits: { maxLineBytes?: number; maxHeaderBytes?: number }): string {
  try {
    return feedHead(kind, parts, limits).consumed >= 0 ? 'complete' : 'incomplete';
  } catch (err) {
    const e = err as Error & { limit?: string | null };
    return `${e.constructor.name} (${e.limit ?? 'no limit'}): ${e.message}`;
  }
}

describe('HeadParser: a bad byte fails at that byte, whatever the split', () => {
  // Every prefix of every invalid fixture, followed by bytes that keep the line going (or end
  // it), must fail the same way whole, byte by byte, in random pieces, and cut once before a
  // big chunk: a bad byte on a line still arriving is a ParseError (400), never a limit error
  // (414/431) because the line grew past a limit before its end arrived.
  const configs = [
    { name: 'an endless line past maxLineBytes', limits: { maxLineBytes: 100, maxHeaderBytes: 400 }, fill: 'a'.repeat(300) },
    { name: 'endless lines past maxHeaderBytes', limits: { maxLineBytes: 100, maxHeaderBytes: 150 }, fill: 'a\r\nX: b\r\n'.repeat(40) },
    { name: 'a line that ends', limits: {}, fill: `${'a'.repeat(300)}\r\n\r\n` },
  ];
  for (const { name, limits, fill } of configs) {
    it(`each invalid fixture, cut anywhere, then ${name}`, () => {
      const mismatches: string[] = [];
      for (const f of INVALID) {
        for (let k = 1; k <= f.raw.length; k++) {
          const buf = b(f.raw.slice(0, k) + fill);
          const whole = outcome(f.kind, [buf], limits);
          const splits: [string, Uint8Array[]][] = [['byte by byte', pieces(buf, 'bytes')]];
          for (let seed = 1; seed <= 3; seed++) splits.push([`seed ${seed}`, pieces(buf, prng(seed * 31 + k))]);
          for (const cut of [1, k - 1, k]) {
            if (cut <= 0 || cut >= buf.length) continue;
            splits.push([`cut at ${cut}, big rest`, [buf.subarray(0, cut), buf.subarray(cut)]]);
            splits.push([`bytes to ${cut}, big rest`, [...pieces(buf.subarray(0, cut), 'bytes'), buf.subarray(cut)]]);
          }
          for (const [how, parts] of splits) {
            const got = outcome(f.kind, parts, limits);
            if (got !== whole) mismatches.push(`${f.name}, ${JSON.stringify(f.raw.slice(0, k))}, ${how}: whole ${whole}; split ${got}`);
          }
        }
      }
      expect(mismatches.slice(0, 10)).toEqual([]);
    });
  }
});

describe('HeadParser: heads split across chunks', () => {
  /** Every valid fixture, cut once or twice, with a big last chunk (the rest of the head and a body). */
  it('a big chunk after a split parses the rest in place, same result', () => {
    const body = 'b'.repeat(400);
    for (const f of VALID) {
      const all = Buffer.concat([b(f.raw), b(f.rest ?? ''), b(body)]);
      const whole = feedHead(f.kind, [all]);
      const ref = snapshot(whole.parser);
      const n = b(f.raw).length;
      for (let cut = 1; cut < n; cut++) {
        const once = feedHead(f.kind, [all.subarray(0, cut), all.subarray(cut)]);
        expect(once.consumed, `${f.name} cut ${cut}`).toBe(whole.consumed);
        expect(snapshot(once.parser), `${f.name} cut ${cut}`).toEqual(ref);
        const mid = cut + ((cut * 7) % Math.max(1, n - cut));
        const twice = feedHead(f.kind, [all.subarray(0, cut), all.subarray(cut, mid), all.subarray(mid)]);
        expect(twice.consumed, `${f.name} cuts ${cut} ${mid}`).toBe(whole.consumed);
        expect(snapshot(twice.parser), `${f.name} cuts ${cut} ${mid}`).toEqual(ref);
      }
    }
  });

  it('a line that begins inside a later chunk fails as soon as its bad byte arrives', () => {
    for (const [bad, message] of [
      ['Bad Name: x', 'whitespace between header name'],
      [': x', 'empty header name'],
      [' x', 'folding'],
      ['X(: y', 'header name'],
    ]) {
      const p = new HeadParser('request');
      p.execute(b('GET / HTTP/1.1\r\nHo'));
      expectError(() => p.execute(b(`st: a\r\n${bad}`)), ParseError, message);
    }
  });

  it('fields parsed before an error are in headers, with no placeholder left', () => {
    const p = new HeadParser('request');
    p.execute(b('GET /t HTTP/1.1\r\nHo'));
    p.execute(b('st: a\r\nX-Odd: 1\r\nx-lower: 2\r\n'));
    expectError(() => p.execute(b('X-B: \0')), ParseError, '0x00');
    expect(p.target).toBe('/t');
    expect(p.headers.toArray()).toEqual([
      ['Host', 'a'],
      ['X-Odd', '1'],
      ['X-Lower', '2'],
    ]);
  });

  it('reuses its buffer across heads on one connection', () => {
    const p = new HeadParser('response');
    for (let i = 0; i < 5; i++) {
      const head = b(`HTTP/1.1 200 Reason ${i}\r\nX-Big: ${'v'.repeat(i * 3000)}\r\nX-I: ${i}\r\n\r\n`);
      p.reset();
      for (let at = 0; at < head.length; at += 13) p.execute(head.subarray(at, Math.min(head.length, at + 13)));
      expect(p.complete).toBe(true);
      expect(p.reason).toBe(`Reason ${i}`);
      expect(p.headers.get('X-I')).toBe(String(i));
      expect(p.headers.get('X-Big')).toBe('v'.repeat(i * 3000));
    }
  });

  it('a line end just past maxLineBytes fails on the limit whole or split, at any alignment', () => {
    // The LF is the first byte past the limit: the limit error, not a complaint about that byte.
    const value = 'a'.repeat(40);
    const head = `GET / HTTP/1.1\r\nX-Long: ${value}\nX: y\r\n\r\n`;
    const max = `X-Long: ${value}`.length - 2;
    for (let pad = 0; pad < 8; pad++) {
      const backing = Buffer.alloc(pad + head.length, 0x7a);
      backing.write(head, pad, 'latin1');
      const chunk = backing.subarray(pad);
      expectError(() => feedHead('request', [chunk], { maxLineBytes: max }), ProtocolError, 'maxLineBytes');
    }
    expectError(() => feedHead('request', pieces(b(head), 'bytes'), { maxLineBytes: max }), ProtocolError, 'maxLineBytes');
  });
});

describe('HeadParser: long heads held across chunks', () => {
  // Past its first few lines a held head records nothing per line and is parsed again when it
  // completes: every fixture behind 70 more lines must still end the same way whole and split,
  // with the same fields, after an error too.
  const PAD = Array.from({ length: 70 }, (_, i) => `X-Pad-${String(i).padStart(2, '0')}: v\r\n`).join('');
  /** `raw` with the padding lines after its first line. */
  const padded = (raw: string): string => {
    const at = raw.indexOf('\r\n') + 2;
    return at < 2 ? raw : raw.slice(0, at) + PAD + raw.slice(at);
  };
  /** What feeding `parts` ends in, with the fields the parser holds then. */
  function ending(kind: Kind, parts: Uint8Array[], limits?: { maxLineBytes?: number; maxHeaderBytes?: number }): unknown {
    const p = new HeadParser(kind, limits);
    let consumed = 0;
    try {
      for (const part of parts) {
        const n = p.execute(part);
        consumed += n;
        if (p.complete) return { consumed, ...(snapshot(p) as object) };
      }
      return { incomplete: true, headers: p.headers.toArray() };
    } catch (err) {
      const e = err as Error & { limit?: string | null };
      return { error: `${e.constructor.name} (${e.limit ?? 'no limit'}): ${e.message}`, target: p.target, headers: p.headers.toArray() };
    }
  }

  it('every fixture behind 70 more lines: whole, byte by byte and in random pieces agree, fields included', () => {
    const mismatches: string[] = [];
    for (const f of [...VALID, ...INVALID]) {
      const all = b(padded(f.raw) + (f.rest ?? ''));
      const whole = ending(f.kind, [all]);
      const splits: [string, Uint8Array[]][] = [['byte by byte', pieces(all, 'bytes')]];
      for (let seed = 1; seed <= 10; seed++) splits.push([`seed ${seed}`, pieces(all, prng(seed))]);
      for (const cut of [20, 600, all.length - 5]) splits.push([`cut at ${cut}, big rest`, [all.subarray(0, cut), all.subarray(cut)]]);
      for (const [how, parts] of splits) {
        const got = ending(f.kind, parts);
        if (JSON.stringify(got) !== JSON.stringify(whole)) mismatches.push(`${f.name}, ${how}: whole ${JSON.stringify(whole).slice(0, 300)}; split ${JSON.stringify(got).slice(0, 300)}`);
      }
    }
    expect(mismatches.slice(0, 5)).toEqual([]);
  });

  it('a bad byte behind 70 more lines fails at that byte, whatever the split', () => {
    const configs = [
      { limits: { maxLineBytes: 100, maxHeaderBytes: 2000 }, fill: 'a'.repeat(300) },
      { limits: { maxLineBytes: 100, maxHeaderBytes: 1100 }, fill: 'a\r\nX: b\r\n'.repeat(40) },
    ];
    const mismatches: string[] = [];
    for (const { limits, fill } of configs) {
      for (const f of INVALID) {
        const raw = padded(f.raw);
        for (let k = raw.length - f.raw.length + f.raw.indexOf('\r\n') + 3; k <= raw.length; k++) {
          const buf = b(raw.slice(0, k) + fill);
          const whole = outcome(f.kind, [buf], limits);
          for (const [how, parts] of [
            ['byte by byte', pieces(buf, 'bytes')],
            ['seed', pieces(buf, prng(k))],
          ] as const) {
            const got = outcome(f.kind, parts, limits);
            if (got !== whole) mismatches.push(`${f.name}, cut at ${k}, ${how}: whole ${whole}; split ${got}`);
          }
        }
      }
    }
    expect(mismatches.slice(0, 10)).toEqual([]);
  });

  it('a trailer section of 70 lines after a head: whole, byte by byte and in random pieces agree, limits included', () => {
    const ends = ['\r\n', 'Content-Length: 5\r\nX-Last: y\r\n\r\n', 'X-Bad : y\r\n\r\n', 'X-Ctl: a\x01\r\n\r\n', 'X-End: z\n\r\n', `X-Long: ${'a'.repeat(300)}\r\n\r\n`];
    const mismatches: string[] = [];
    for (const tail of ends) {
      const all = b(PAD + tail + 'rest');
      // The last: the head before the section (50 bytes) decides whether the section fits.
      for (const maxHeaderBytes of [4096, 1000, 50 + PAD.length + 20]) {
        const feed = (parts: Uint8Array[]): string => {
          const p = new HeadParser('trailers', { maxLineBytes: 200, maxHeaderBytes });
          p.headBytes = 50;
          let consumed = 0;
          try {
            for (const part of parts) {
              consumed += p.execute(part);
              if (p.complete) break;
            }
            return JSON.stringify({ complete: p.complete, consumed, headBytes: p.headBytes, headers: p.headers.toArray() });
          } catch (err) {
            return JSON.stringify({ error: `${(err as Error).constructor.name}: ${(err as Error).message}`, headers: p.headers.toArray() });
          }
        };
        const whole = feed([all]);
        for (const [how, parts] of [
          ['bytes', pieces(all, 'bytes')],
          ['seed 1', pieces(all, prng(1))],
          ['seed 2', pieces(all, prng(2))],
        ] as const) {
          const got = feed(parts);
          if (got !== whole) mismatches.push(`${JSON.stringify(tail)}, max ${maxHeaderBytes}, ${how}: whole ${whole.slice(0, 200)}; split ${got.slice(0, 200)}`);
        }
      }
    }
    expect(mismatches.slice(0, 5)).toEqual([]);
  });

  it('a held head that completes in a later chunk keeps what follows it for the caller', () => {
    const head = b(`GET /x HTTP/1.1\r\nHost: h\r\n${PAD}\r\n`);
    const p = new HeadParser('request');
    expect(p.execute(head.subarray(0, 500))).toBe(500);
    const rest = Buffer.concat([head.subarray(500), b('GET /y HTTP/1.1\r\n')]);
    expect(p.execute(rest)).toBe(head.length - 500);
    expect(p.complete).toBe(true);
    expect(p.target).toBe('/x');
    expect(p.headers.size).toBe(71);
    expect(p.headers.get('X-Pad-69')).toBe('v');
  });
});
