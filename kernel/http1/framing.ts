/**
 * Message body framing (RFC 9112 §6): how the body of a parsed head is delimited, and how an
 * outgoing message's head announces its body and the body bytes then go out.
 */
import { ArgumentError } from '../errors.js';
import type { Headers } from '../message/headers.js';
import { parseContentLength, readTransferCodings, type HeadParser, type TransferCodings } from './head-parser.js';
import { serializeFields, serializeStatusLine, type OutgoingFraming } from './serialize.js';

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
  if (h1ResponseHasNoBody(head.status, requestMethod ?? '')) return 'none';
  if (head.hasTransferEncoding) return 'chunked';
  if (head.contentLength >= 0) return 'length';
  return 'close';
}

/** True when a response with this status never has a body, whatever its headers say. */
export function statusHasNoBody(status: number): boolean {
  return status < 200 || status === 204 || status === 304;
}

// ---------------------------------------------------------------------------------------------
// Outgoing messages: what a head says about its body, and how the body bytes follow.

/**
 * One framing decision for an outgoing message, as {@link requestFraming} (or
 * {@link responseFraming}) makes it: the field its head carries and how its body goes out. A
 * plain record with no methods, so a connection can keep one and have it refilled for every
 * message it sends.
 */
export interface FramingPlan {
  /** The framing field for the head serializer (`serializeRequestHead`, `serializeResponseHead`). */
  field: OutgoingFraming;
  /** How the body bytes go out after the head (`close`: as they come, until the connection closes). */
  kind: BodyKind;
  /** Exact byte count of a `length` body; -1 for the other kinds. */
  length: number;
}

/** A plan to fill in (framing `none`, no body). */
export function framingPlan(): FramingPlan {
  return { field: 'none', kind: 'none', length: -1 };
}

/** Methods whose requests normally carry a body, so an empty one still gets `Content-Length: 0`. */
export function expectsBody(method: string): boolean {
  return method === 'POST' || method === 'PUT' || method === 'PATCH';
}

/**
 * Frames an outgoing request (RFC 9112 §6): given its method, its headers and the byte length of
 * its body (-1 when unknown until it is read, 0 for none), fills `into` and returns it.
 *
 * - Framing headers the caller set are honored when consistent, and the head builder then adds
 *   none: a Transfer-Encoding must end in a single chunked (the writer applies it), a
 *   Content-Length must be one valid number that matches a known length, and never both.
 * - Otherwise a known length gets Content-Length, except an empty body on a method that does not
 *   expect one (RFC 9110 §8.6: no Content-Length when the method anticipates no content);
 *   an unknown length gets the chunked coding, the only framing that carries trailers.
 *
 * Throws `ArgumentError` for inconsistent framing headers, before any byte is written.
 */
export function requestFraming(method: string, headers: Headers, length: number, into: FramingPlan = framingPlan()): FramingPlan {
  frameBody(headers, length, !expectsBody(method), false, into);
  return into;
}

/**
 * The framing of a message that has a body, in both directions: the framing fields of `own`
 * when it carries any (checked by {@link ownFraming}), else a known length (no field for an
 * empty body when `omitZero`), else chunked, or bytes delimited by close when `rawIfUnknown`.
 * Fills `into` when given; without `own` and `into` it allocates nothing.
 */
function frameBody(own: Headers | null, length: number, omitZero: boolean, rawIfUnknown: boolean, into: FramingPlan | null): BodyKind {
  if (own !== null) {
    const cli = own.indexOf('Content-Length');
    const tei = own.indexOf('Transfer-Encoding');
    if (cli >= 0 || tei >= 0) return ownFraming(own, cli, tei, length, into ?? framingPlan()).kind;
  }
  const kind: BodyKind = length >= 0 ? 'length' : rawIfUnknown ? 'close' : 'chunked';
  if (into !== null) {
    into.field = kind === 'length' ? (length === 0 && omitZero ? 'none' : length) : kind === 'chunked' ? 'chunked' : 'none';
    into.kind = kind;
    into.length = kind === 'length' ? length : -1;
  }
  return kind;
}

/** The caller's own framing headers, checked by the rules the parser reads them with. */
function ownFraming(headers: Headers, cli: number, tei: number, length: number, into: FramingPlan): FramingPlan {
  if (cli >= 0 && tei >= 0) fail('headers contain both Content-Length and Transfer-Encoding');
  into.field = 'none';
  if (tei >= 0) {
    checkTransferEncoding(headers);
    into.kind = 'chunked';
    into.length = -1;
    return into;
  }
  const declared = parseContentLength(headers.getAll('Content-Length').join(', '));
  if (declared < 0) fail(`invalid Content-Length header "${headers.getAll('Content-Length').join(', ')}"`);
  if (length >= 0 && length !== declared) fail(`Content-Length header ${declared} does not match the body length ${length}`);
  into.kind = 'length';
  into.length = declared;
  return into;
}

/**
 * The caller's Transfer-Encoding fields: the writer applies chunked itself, once, so the list
 * must end in a single chunked; codings before it are the caller's, applied to the body it gives.
 */
function checkTransferEncoding(headers: Headers): void {
  const all = headers.getAll('Transfer-Encoding');
  const tc: TransferCodings = { chunked: false, chunkedNotLast: false, otherCoding: '' };
  try {
    for (const v of all) readTransferCodings(v, tc);
  } catch (err) {
    fail((err as Error).message);
  }
  if (!tc.chunked || tc.chunkedNotLast) fail(`Transfer-Encoding "${all.join(', ')}" must end with chunked, once (the serializer frames bodies itself)`);
}

function fail(message: string): never {
  throw new ArgumentError(message);
}

/** True when a response with this status, to a request with this method, has no body (a HEAD answer; 1xx, 204, 304), whatever its protocol. */
export function responseHasNoBody(status: number, method: string): boolean {
  return statusHasNoBody(status) || method === 'HEAD';
}

/**
 * True for a 2xx answer to CONNECT on HTTP/1.1: the connection becomes a tunnel right after its
 * head, so it has no body and no Content-Length or Transfer-Encoding (RFC 9110 §9.3.6).
 */
export function opensTunnel(status: number, method: string): boolean {
  return status >= 200 && status < 300 && method === 'CONNECT';
}

/** True when an HTTP/1.1 response has no body: {@link responseHasNoBody}, or {@link opensTunnel}; the one rule for reading and sending one. */
export function h1ResponseHasNoBody(status: number, method: string): boolean {
  return responseHasNoBody(status, method) || opensTunnel(status, method);
}

/**
 * How the body of a response is delimited on an HTTP/1.1 connection (RFC 9112 §6.1-6.3, RFC
 * 9110 §9.3.6), for the server's wire and `writeResponse` alike:
 * - `none` for an answer to HEAD, a status that never has a body (1xx, 204, 304) and a 2xx
 *   answer to CONNECT ({@link opensTunnel});
 * - with `own` (the response's headers, when their framing fields are the caller's to set and
 *   are honored), the Content-Length or Transfer-Encoding it carries, checked as for
 *   {@link requestFraming} (and chunked refused to an HTTP/1.0 client);
 * - else `length` (Content-Length) when the body's `length` is known (-1: unknown); else
 *   `chunked`, or `close` (bytes until the connection closes) for an HTTP/1.0 client (`minor`
 *   0), which cannot read chunked.
 *
 * `into`, when given, gets the decision with the body's byte count (the declared one for an
 * honored Content-Length). Without `own` and `into` this allocates nothing.
 * Throws `ArgumentError` for framing fields of `own` that cannot be honored.
 */
export function responseFraming(status: number, method: string, length: number, minor: number, own: Headers | null = null, into: FramingPlan | null = null): BodyKind {
  if (h1ResponseHasNoBody(status, method)) {
    if (into !== null) {
      into.field = 'none';
      into.kind = 'none';
      into.length = -1;
    }
    return 'none';
  }
  const kind = frameBody(own, length, false, minor === 0, into);
  if (kind === 'chunked' && minor === 0) fail('cannot send a chunked body to an HTTP/1.0 client; remove Transfer-Encoding or set a length');
  return kind;
}

/**
 * The head of a response framed as `kind` ({@link responseFraming}) answering a request with
 * `method`: the status line, the fields of `headers`, the framing field, then `fields` (whole
 * `Name: value\r\n` lines the connection adds, such as Date and Connection) and the empty line.
 * A latin1 string.
 *
 * The framing fields are this function's unless `own` is set and `headers` carries some: then
 * they were honored ({@link responseFraming} with `own`) and stay as they are, with none added.
 * Otherwise Content-Length and Transfer-Encoding in `headers` are left out and
 * `Content-Length: length` or `Transfer-Encoding: chunked` is added for `length` and `chunked`.
 * Without a body (`none`) the head says what a GET would have: for a HEAD answer or a 304 the
 * framing fields `headers` carries stay as they are; failing those, a HEAD answer says
 * `Content-Length: length` when `length` is known; 1xx, 204 and a 2xx to CONNECT carry none.
 * Throws `ArgumentError` for an invalid status, reason, field name or value.
 */
export function buildResponseHead(status: number, reason: string, headers: Headers, kind: BodyKind, length: number, fields: string, method = '', own = false): string {
  let head = serializeStatusLine(status, reason);
  if (kind === 'none') {
    const mayFrame = status >= 200 && status !== 204 && !opensTunnel(status, method);
    const keep = mayFrame && (headers.has('Content-Length') || headers.has('Transfer-Encoding'));
    head += serializeFields(headers, -1, !keep);
    if (!keep && mayFrame && length >= 0 && status !== 304) head += `Content-Length: ${length}\r\n`;
  } else if (own && (headers.has('Content-Length') || headers.has('Transfer-Encoding'))) {
    head += serializeFields(headers, -1, false);
  } else {
    head += serializeFields(headers, -1, true);
    if (kind === 'length') head += `Content-Length: ${length}\r\n`;
    else if (kind === 'chunked') head += 'Transfer-Encoding: chunked\r\n';
  }
  return head + fields + '\r\n';
}
