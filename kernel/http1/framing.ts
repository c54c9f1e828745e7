/**
 * Message body framing (RFC 9112 §6.3): how the body of a parsed head is delimited.
 */
import type { HeadParser } from './head-parser.js';

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
