/**
 * Message body framing (RFC 9112 §6.3): how the body of a parsed head is delimited.
 */
import type { Headers } from '../message/headers.js';
import type { HeadParser } from './head-parser.js';
import { serializeFields, serializeStatusLine } from './serialize.js';

/**
 * How a body is delimited on the wire:
 * - `none`: no body (a request without Content-Length or Transfer-Encoding; a response to HEAD,
 *   a 1xx, 204 or 304, or a 2xx to CONNECT);
 * - `length`: exactly `contentLength` bytes;
 * - `chunked`: the chunked transfer coding, possibly with trailers;
 * - `close`: everything until the connection closes (responses only).
 */
export type BodyKind = 'none' | 'length' | 'chunked' | 'close';

/**
 * Framing of a parsed request head. The parser has already rejected the invalid combinations
 * (Content-Length with Transfer-Encoding, a Transfer-Encoding other than a single final chunked
 * after codings it implements, which are none), so this only picks the case.
 */
export function requestBodyKind(head: HeadParser): BodyKind {
  if (head.hasTransferEncoding) return 'chunked';
  if (head.contentLength >= 0) return 'length';
  return 'none';
}

/**
 * Framing of a parsed response head, given the method of the request it answers (pass
 * `undefined` when unknown; HEAD and CONNECT change the answer). The parser refuses a response
 * Transfer-Encoding that is not just chunked (RFC 9112 §6.3 would read a body whose final
 * coding is not chunked until close, but it then needs a decoding nothing here implements), so
 * a Transfer-Encoding means chunked.
 */
export function responseBodyKind(head: HeadParser, requestMethod?: string | null): BodyKind {
  const s = head.status;
  if (s < 200 || s === 204 || s === 304) return 'none';
  if (requestMethod === 'HEAD') return 'none';
  if (requestMethod === 'CONNECT' && s < 300) return 'none';
  if (head.hasTransferEncoding) return 'chunked';
  if (head.contentLength >= 0) return 'length';
  return 'close';
}

/** True when a response with this status never has a body, whatever its headers say. */
export function statusHasNoBody(status: number): boolean {
  return status < 200 || status === 204 || status === 304;
}

/** True when a response with this status, to a request with this method, has no body (a HEAD answer; 1xx, 204, 304), whatever its protocol. */
export function responseHasNoBody(status: number, method: string): boolean {
  return statusHasNoBody(status) || method === 'HEAD';
}

/**
 * How the body of a response the server sends is delimited (RFC 9112 §6.1-6.3): `none` for an
 * answer to HEAD and for a status that never has a body (1xx, 204, 304); `length`
 * (Content-Length) when the body's `length` is known (-1: unknown); else `chunked`, or `close`
 * (bytes until the connection closes) for an HTTP/1.0 client (`minor` 0), which cannot read
 * chunked.
 */
export function responseFraming(status: number, method: string, length: number, minor: number): BodyKind {
  if (responseHasNoBody(status, method)) return 'none';
  if (length >= 0) return 'length';
  return minor === 0 ? 'close' : 'chunked';
}

/**
 * The head of a response framed as `kind` ({@link responseFraming}): the status line, the
 * fields of `headers`, the framing field, then `fields` (whole `Name: value\r\n` lines the
 * connection adds, such as Date and Connection) and the empty line. A latin1 string.
 *
 * The framing fields are this function's: Content-Length and Transfer-Encoding in `headers`
 * are left out and `Content-Length: length` or `Transfer-Encoding: chunked` is added for
 * `length` and `chunked`. Without a body (`none`) the head says what a GET would have: for a
 * HEAD answer or a 304 the framing fields `headers` carries stay as they are; failing those, a
 * HEAD answer says `Content-Length: length` when `length` is known; 1xx and 204 carry none.
 * Throws `ArgumentError` for an invalid status, reason, field name or value.
 */
export function buildResponseHead(status: number, reason: string, headers: Headers, kind: BodyKind, length: number, fields: string): string {
  let head = serializeStatusLine(status, reason);
  if (kind === 'none') {
    const keep = status >= 200 && status !== 204 && (headers.has('Content-Length') || headers.has('Transfer-Encoding'));
    head += serializeFields(headers, -1, !keep);
    if (!keep && length >= 0 && status >= 200 && status !== 204 && status !== 304) head += `Content-Length: ${length}\r\n`;
  } else {
    head += serializeFields(headers, -1, true);
    if (kind === 'length') head += `Content-Length: ${length}\r\n`;
    else if (kind === 'chunked') head += 'Transfer-Encoding: chunked\r\n';
  }
  return head + fields + '\r\n';
}
