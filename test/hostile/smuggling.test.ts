/**
 * Request smuggling vectors as a table, against the default server over loopback: each request
 * carries a second request inside what its framing should make its body. The expected answer is
 * either a refusal (400 or 501) and a close, or acceptance with the body framed as declared;
 * in every case the hidden request is never answered, nor handed to the handler, as a request of
 * its own.
 */
import { describe, expect, it } from 'vitest';
import { Response, serve, type Request } from '../../index.js';
import { forceCloseAfter } from '../helpers/cleanup.js';
import { expectServing } from '../helpers/server.js';
import { sendBatch } from './generators.js';

const HIDDEN = 'GET /smuggled HTTP/1.1\r\nHost: x\r\n\r\n';

/** `POST /up` with the given header lines (CRLF-terminated each) and raw body bytes. */
const post = (fields: string, body: string, eol = '\r\n'): string => `POST /up HTTP/1.1${eol}Host: x${eol}${fields}${eol}${body}`;
/** A chunked body of "hello" then the hidden request. */
const CHUNKED = `5\r\nhello\r\n0\r\n\r\n${HIDDEN}`;

interface Vector {
  name: string;
  raw: string;
  /** The one status expected; 200 means accepted. */
  status: number;
  /** For an accepted request: the body the handler must have read. */
  body?: string;
}

const vectors: Vector[] = [
  { name: 'CL then TE', raw: post(`Content-Length: ${CHUNKED.length}\r\nTransfer-Encoding: chunked\r\n`, CHUNKED), status: 400 },
  { name: 'TE then CL', raw: post(`Transfer-Encoding: chunked\r\nContent-Length: 4\r\n`, CHUNKED), status: 400 },
  { name: 'CL, CL conflicting (two lines)', raw: post(`Content-Length: 5\r\nContent-Length: ${5 + HIDDEN.length}\r\n`, `hello${HIDDEN}`), status: 400 },
  { name: 'CL, CL conflicting (one list)', raw: post(`Content-Length: 5, ${5 + HIDDEN.length}\r\n`, `hello${HIDDEN}`), status: 400 },
  { name: 'TE with obs-fold', raw: post(`Transfer-Encoding:\r\n chunked\r\nContent-Length: 4\r\n`, CHUNKED), status: 400 },
  { name: 'TE with whitespace before the colon', raw: post(`Transfer-Encoding : chunked\r\nContent-Length: 4\r\n`, CHUNKED), status: 400 },
  { name: 'CL with whitespace before the colon', raw: post(`Content-Length : 5\r\n`, `hello${HIDDEN}`), status: 400 },
  // Not ending in chunked: the length cannot be known (RFC 9112 §6.3), so 400 rather than 501.
  { name: 'Transfer-Encoding: xchunked', raw: post(`Transfer-Encoding: xchunked\r\n`, CHUNKED), status: 400 },
  { name: 'Transfer-Encoding: xchunked with CL', raw: post(`Transfer-Encoding: xchunked\r\nContent-Length: 5\r\n`, `hello${HIDDEN}`), status: 400 },
  { name: 'Transfer-Encoding: chunked\\x0b', raw: post(`Transfer-Encoding: chunked\x0b\r\n`, CHUNKED), status: 400 },
  { name: 'Transfer-Encoding: chunked, then a second TE line', raw: post(`Transfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n`, CHUNKED), status: 400 },
  { name: 'Transfer-Encoding: identity then chunked lines', raw: post(`Transfer-Encoding: identity\r\nTransfer-Encoding: chunked\r\n`, CHUNKED), status: 501 },
  { name: 'chunk size with leading junk', raw: post(`Transfer-Encoding: chunked\r\n`, ` 5\r\nhello\r\n0\r\n\r\n${HIDDEN}`), status: 400 },
  { name: 'chunk size with trailing junk', raw: post(`Transfer-Encoding: chunked\r\n`, `5x\r\nhello\r\n0\r\n\r\n${HIDDEN}`), status: 400 },
  { name: 'chunk size 0x5', raw: post(`Transfer-Encoding: chunked\r\n`, `0x5\r\nhello\r\n0\r\n\r\n${HIDDEN}`), status: 400 },
  { name: 'chunk size overflowing 64 bits', raw: post(`Transfer-Encoding: chunked\r\n`, `10000000000000005\r\nhello\r\n0\r\n\r\n${HIDDEN}`), status: 400 },
  { name: 'chunk extension ended by a bare LF', raw: post(`Transfer-Encoding: chunked\r\n`, `5;a=b\nhello\r\n0\r\n\r\n${HIDDEN}`), status: 400 },
  { name: 'chunk data ended by a bare LF', raw: post(`Transfer-Encoding: chunked\r\n`, `5\r\nhello\n0\r\n\r\n${HIDDEN}`), status: 400 },
  { name: 'chunk data longer than its size', raw: post(`Transfer-Encoding: chunked\r\n`, `3\r\nhello\r\n0\r\n\r\n${HIDDEN}`), status: 400 },
  { name: 'Content-Length: +5', raw: post(`Content-Length: +5\r\n`, `hello${HIDDEN}`), status: 400 },
  { name: 'Content-Length: 0x5', raw: post(`Content-Length: 0x5\r\n`, `hello${HIDDEN}`), status: 400 },
  { name: 'Content-Length: -5', raw: post(`Content-Length: -5\r\n`, `hello${HIDDEN}`), status: 400 },
  { name: 'Content-Length: 5.0', raw: post(`Content-Length: 5.0\r\n`, `hello${HIDDEN}`), status: 400 },
  { name: 'Content-Length: huge (past 2^53)', raw: post(`Content-Length: 99999999999999999999\r\n`, `hello${HIDDEN}`), status: 400 },
  // Valid framings: the hidden request is the declared body, so it must never be answered.
  { name: 'Content-Length with leading zeros', raw: post(`Content-Length: 000${HIDDEN.length}\r\n`, HIDDEN), status: 200, body: HIDDEN },
  { name: 'Content-Length: n, n (identical list)', raw: post(`Content-Length: ${HIDDEN.length}, ${HIDDEN.length}\r\n`, HIDDEN), status: 200, body: HIDDEN },
  { name: 'Content-Length twice with the same value', raw: post(`Content-Length: ${HIDDEN.length}\r\nContent-Length: ${HIDDEN.length}\r\n`, HIDDEN), status: 200, body: HIDDEN },
  { name: 'GET with a body by Content-Length', raw: `GET /up HTTP/1.1\r\nHost: x\r\nContent-Length: ${HIDDEN.length}\r\n\r\n${HIDDEN}`, status: 200, body: HIDDEN },
  { name: 'chunked body holding a request', raw: post(`Transfer-Encoding: chunked\r\n`, `${HIDDEN.length.toString(16)}\r\n${HIDDEN}\r\n0\r\n\r\n`), status: 200, body: HIDDEN },
  // Bare LF is refused, never read as a line end a proxy in front might not see.
  { name: 'LF-only line endings with Content-Length', raw: post(`Content-Length: ${HIDDEN.length}\n`, HIDDEN, '\n'), status: 400 },
  { name: 'one bare LF line ending a field', raw: post(`Content-Length: 0\nX: y\r\n`, HIDDEN), status: 400 },
  { name: 'a bare CR ending a field line', raw: post(`Content-Length: 5\rX: y\r\n`, `hello${HIDDEN}`), status: 400 },
  { name: 'chunked in an HTTP/1.0 request', raw: `POST /up HTTP/1.0\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n${CHUNKED}`, status: 400 },
  { name: 'NUL in the Content-Length value', raw: post(`Content-Length: 5\0\r\n`, `hello${HIDDEN}`), status: 400 },
];

describe('request smuggling vectors', () => {
  for (const [v, split] of vectors.flatMap(
    (v) =>
      [
        [v, false],
        [v, true],
      ] as const,
  )) {
    const how = split ? ' (sent in 3-byte writes)' : '';
    it(`${v.name}${how}: ${v.status === 200 ? 'accepted, body framed as declared' : `${v.status} and a close`}; the hidden request is never answered`, async () => {
      const seen: { target: string; body: string }[] = [];
      const server = forceCloseAfter(
        await serve(
          (req: Request) => {
            const body = req.body instanceof Uint8Array ? Buffer.from(req.body).toString('latin1') : '';
            seen.push({ target: req.target, body });
            return new Response(200, 'ok');
          },
          { host: '127.0.0.1', port: 0, onError: () => {} },
        ),
      );
      const parts = split ? (v.raw.match(/[\s\S]{1,3}/g) ?? []) : [v.raw];
      const r = await sendBatch(server.port, parts, 5000);
      const text = r.bytes.toString('latin1');
      expect(r.hung, 'connection neither answered nor closed').toBe(false);
      expect(r.garbage, text).toBeNull();
      expect(r.statuses, text).toEqual([v.status]);
      expect(seen.map((s) => s.target)).not.toContain('/smuggled');
      if (v.status === 200) {
        expect(seen).toEqual([{ target: '/up', body: v.body }]);
      } else {
        expect(seen).toEqual([]);
        expect(text).toContain('Connection: close');
      }
      await expectServing(server.port);
    });
  }
});
