/**
 * HTTP/1.1 serializer: message heads as one latin1 string (one write), bodies framed by
 * Content-Length or the chunked coding, trailers after chunked bodies only.
 *
 * Everything that ends up in a head is validated first (field names are tokens; values, the
 * reason phrase and the target carry no CR, LF, NUL or other CTLs), so a caller's data can never
 * split a message; a violation throws `ArgumentError` before any byte is written.
 */
import { Buffer } from 'node:buffer';
import { ArgumentError } from '../errors.js';
import { AbstractBody, type Body } from '../message/body.js';
import { eqIgnoreCase, Headers } from '../message/headers.js';
import type { Request } from '../message/request.js';
import type { Response } from '../message/response.js';
import { framingPlan, planFraming, requestFraming, type FramingPlan, type OutgoingFraming } from './framing.js';
import { isForbiddenTrailer, STATUS_TEXT } from './tables.js';
import * as tables from './tables.js';
import { absoluteTargetAuthority, isValidHost, requestTargetError } from './target.js';

const TOKEN: Uint8Array = tables.TOKEN;

export type { OutgoingFraming } from './framing.js';

/**
 * Where serialized bytes go: a Node `Writable` (`net.Socket`, `tls.TLSSocket`, ...) or anything
 * with `write(chunk): boolean` that emits `'drain'` after returning false. Writers wait for
 * `'drain'` when `write` returns false, and give up when the sink emits `'close'` or `'error'`
 * first or is `destroyed`.
 */
export interface ByteSink {
  /** Queues `chunk`; false asks the writer to wait for `'drain'`. */
  write(chunk: Uint8Array): boolean;
  /** Subscribes once to `'drain'`, `'close'` or `'error'`. Without it, writers never wait. */
  once?(event: 'drain' | 'close' | 'error', listener: (...args: unknown[]) => void): unknown;
  /** Removes a listener added with `once`. */
  removeListener?(event: 'drain' | 'close' | 'error', listener: (...args: unknown[]) => void): unknown;
  /** True once the sink can no longer be written to. */
  readonly destroyed?: boolean;
}

/** Bodies this small are copied behind the head so head and body go out in one write. */
const COALESCE_BYTES = 65536;
/** Size of the pieces a streamed body is read in. */
const STREAM_CHUNK = 65536;
/** Room reserved before chunk data for its size line (up to 8 hex digits + CRLF). */
const CHUNK_HEAD_ROOM = 10;

function fail(message: string): never {
  throw new ArgumentError(message);
}

function show(s: string): string {
  return JSON.stringify(s.length > 60 ? `${s.slice(0, 60)}...` : s);
}

/** Throws `ArgumentError` unless `name` is a non-empty token. */
export function checkFieldName(name: string): void {
  const n = name.length;
  if (n === 0) fail('header name must not be empty');
  for (let i = 0; i < n; i++) {
    const c = name.charCodeAt(i);
    if (c > 0xff || TOKEN[c] === 0) fail(`invalid character ${describeChar(c)} in header name ${show(name)}`);
  }
}

/**
 * Throws `ArgumentError` unless `value` is a valid field value: HTAB, visible ASCII, space and
 * obs-text (0x80-0xFF) only, so no CR, LF, NUL or other CTL, and nothing latin1 cannot carry.
 */
export function checkFieldValue(name: string, value: string): void {
  const n = value.length;
  for (let i = 0; i < n; i++) {
    const c = value.charCodeAt(i);
    if ((c < 0x20 && c !== 9) || c === 0x7f || c > 0xff) {
      fail(`invalid character ${describeChar(c)} in the value of header ${show(name)}${c === 13 || c === 10 ? ' (CR/LF would split the message)' : ''}`);
    }
  }
}

function describeChar(c: number): string {
  return c > 0x20 && c < 0x7f ? `'${String.fromCharCode(c)}'` : `U+${c.toString(16).toUpperCase().padStart(4, '0')}`;
}

function checkTarget(target: string): void {
  if (target.length === 0) fail('request target must not be empty');
  for (let i = 0; i < target.length; i++) {
    const c = target.charCodeAt(i);
    if (c <= 0x20 || c === 0x7f || c > 0xff) fail(`invalid character ${describeChar(c)} in request target ${show(target)}`);
  }
}

function checkReason(reason: string): void {
  for (let i = 0; i < reason.length; i++) {
    const c = reason.charCodeAt(i);
    if ((c < 0x20 && c !== 9) || c === 0x7f || c > 0xff) fail(`invalid character ${describeChar(c)} in reason phrase ${show(reason)}`);
  }
}

function checkMethod(method: string): void {
  if (method.length === 0) fail('method must not be empty');
  for (let i = 0; i < method.length; i++) {
    const c = method.charCodeAt(i);
    if (c > 0xff || TOKEN[c] === 0) fail(`invalid character ${describeChar(c)} in method ${show(method)}`);
  }
}

/**
 * Appends `Name: value\r\n` for every field except index `skip`, validating each; with
 * `dropFraming`, Content-Length and Transfer-Encoding fields are left out.
 */
export function serializeFields(headers: Headers, skip: number, dropFraming: boolean): string {
  const names = headers._names;
  const values = headers._values;
  let s = '';
  for (let i = 0; i < names.length; i++) {
    if (i === skip) continue;
    const name = names[i]!;
    const value = values[i]!;
    if (dropFraming && (eqIgnoreCase(name, 'content-length') || eqIgnoreCase(name, 'transfer-encoding'))) continue;
    checkFieldName(name);
    checkFieldValue(name, value);
    s += `${name}: ${value}\r\n`;
  }
  return s;
}

function framingField(framing: OutgoingFraming): string {
  if (typeof framing === 'number') {
    if (!Number.isSafeInteger(framing) || framing < 0) fail(`Content-Length must be a non-negative integer, got ${framing}`);
    return `Content-Length: ${framing}\r\n`;
  }
  if (framing === 'chunked') return 'Transfer-Encoding: chunked\r\n';
  if (framing === 'none') return '';
  return fail(`framing must be a length, 'chunked' or 'none', got ${String(framing)}`);
}

const statusLines: string[] = [];

/** `HTTP/1.1 <status> <reason>\r\n`, cached for the standard reason phrases; validates both. */
export function serializeStatusLine(status: number, reason: string): string {
  if (!Number.isInteger(status) || status < 100 || status > 999) fail(`status must be an integer 100..999, got ${status}`);
  if (reason === '') {
    const cached = statusLines[status];
    if (cached !== undefined) return cached;
    const line = `HTTP/1.1 ${status} ${STATUS_TEXT[status] ?? ''}\r\n`;
    statusLines[status] = line;
    return line;
  }
  checkReason(reason);
  return `HTTP/1.1 ${status} ${reason}\r\n`;
}

/**
 * Serializes a response head: status line (the standard reason phrase when `reason` is empty),
 * the fields in stored spelling, the framing field for `framing`, `Connection: close` when
 * `close` is set and no Connection field is present, and the empty line. Returns a latin1
 * string: write it with `socket.write(head, 'latin1')` or `Buffer.from(head, 'latin1')`.
 *
 * The caller owns the framing decision: `headers` should not carry Content-Length or
 * Transfer-Encoding when `framing` adds one. Throws `ArgumentError` for invalid names, values,
 * reason or status.
 */
export function serializeResponseHead(status: number, reason: string, headers: Headers | null, framing: OutgoingFraming, close = false): string {
  let s = serializeStatusLine(status, reason);
  if (headers !== null) s += serializeFields(headers, -1, false);
  s += framingField(framing);
  if (close && (headers === null || !headers.has('Connection'))) s += 'Connection: close\r\n';
  return `${s}\r\n`;
}

function checkHost(value: string): void {
  if (!isValidHost(value)) fail(`invalid Host ${show(value)}: expected host[:port] (RFC 9110 §7.2), with no path, userinfo or spaces`);
}

/**
 * Serializes a request head: `METHOD target HTTP/1.1`, then the Host field first (the Host
 * header when `headers` has one, else `host` when given, else the authority of the target: its
 * host:port for absolute-form and CONNECT, empty for the other forms, as RFC 9110 §7.2 has a
 * client send), the other fields in stored spelling, the framing field for `framing`,
 * `Connection: close` when `close` is set and no Connection field is present, and the empty line.
 * Returns a latin1 string. `framing` is normally the `field` of the plan {@link requestFraming}
 * makes for the request. Framing ownership and errors as for {@link serializeResponseHead};
 * an `ArgumentError` also for more than one Host header, a Host that is not `host[:port]`, and a
 * target in a form the method may not use (RFC 9112 §3.2: origin-form `/path`, absolute-form for
 * proxies, `host:port` only and always for CONNECT, `*` only for OPTIONS).
 */
export function serializeRequestHead(method: string, target: string, headers: Headers | null, host: string | null, framing: OutgoingFraming, close = false): string {
  checkMethod(method);
  checkTarget(target);
  const targetError = requestTargetError(method, target);
  if (targetError !== null) fail(targetError);
  let s = `${method} ${target} HTTP/1.1\r\n`;
  let hostIndex = -1;
  if (headers !== null) {
    hostIndex = headers.indexOf('Host');
    if (hostIndex >= 0) {
      if (headers.indexOf('Host', hostIndex + 1) >= 0) fail('request has more than one Host header');
      const name = headers._names[hostIndex]!;
      const value = headers._values[hostIndex]!;
      checkFieldValue(name, value);
      checkHost(value);
      s += `${name}: ${value}\r\n`;
    }
  }
  if (hostIndex < 0) {
    let value = host ?? '';
    if (value === '') value = method === 'CONNECT' ? target : absoluteTargetAuthority(target) ?? '';
    else checkHost(value);
    s += `Host: ${value}\r\n`;
  }
  if (headers !== null) s += serializeFields(headers, hostIndex, false);
  s += framingField(framing);
  if (close && (headers === null || !headers.has('Connection'))) s += 'Connection: close\r\n';
  return `${s}\r\n`;
}

/**
 * Throws `ArgumentError` when `name` may not be sent as a trailer: the fields of
 * `FORBIDDEN_TRAILERS` (framing, routing, authentication, content format, controls) must be
 * known before the content, so RFC 9110 §6.5.1 keeps them out of trailer sections.
 */
export function checkTrailerName(name: string): void {
  if (isForbiddenTrailer(name)) {
    fail(`${show(name)} cannot be sent as a trailer (RFC 9110 §6.5.1: framing, routing, authentication, content-format and control fields must come before the content); send it as a header`);
  }
}

/**
 * Throws `ArgumentError` unless every field of `trailers` may be sent as a trailer: a valid name
 * and value ({@link checkFieldName}, {@link checkFieldValue}) and not a forbidden one
 * ({@link checkTrailerName}). Lets a writer refuse trailers before the head goes out.
 */
export function checkTrailers(trailers: Headers): void {
  const names = trailers._names;
  const values = trailers._values;
  for (let i = 0; i < names.length; i++) {
    checkFieldName(names[i]!);
    checkTrailerName(names[i]!);
    checkFieldValue(names[i]!, values[i]!);
  }
}

/**
 * Serializes the end of a chunked body: the last chunk `0\r\n`, the trailer fields in stored
 * spelling, and the empty line. Throws `ArgumentError` for invalid trailer names or values and
 * for fields that may not trail ({@link checkTrailerName}).
 */
export function serializeLastChunk(trailers: Headers | null): string {
  if (trailers === null || trailers.size === 0) return '0\r\n\r\n';
  checkTrailers(trailers);
  return `0\r\n${serializeFields(trailers, -1, false)}\r\n`;
}

/** Bytes a {@link frameChunkInPlace} frame keeps before its data for the size line ("ffffffff\r\n"). */
export const CHUNK_ROOM = 10;

/**
 * Frames `n` (> 0) bytes that sit at `frame[CHUNK_ROOM ..]` as one chunk of the chunked
 * coding, in place: the size line goes into the room before them, CRLF after them (the frame
 * needs 2 spare bytes there). Returns the framed view; no byte of data is copied.
 */
export function frameChunkInPlace(frame: Buffer, n: number): Buffer {
  const hex = n.toString(16);
  const start = CHUNK_ROOM - hex.length - 2;
  frame.write(hex, start, 'latin1');
  frame[CHUNK_ROOM - 2] = 13;
  frame[CHUNK_ROOM - 1] = 10;
  frame[CHUNK_ROOM + n] = 13;
  frame[CHUNK_ROOM + n + 1] = 10;
  return frame.subarray(start, CHUNK_ROOM + n + 2);
}

/** One chunk of the chunked coding (`size CRLF data CRLF`) as a new Buffer; empty data gives an empty Buffer (an empty chunk would end the body). */
export function encodeChunk(data: Uint8Array): Buffer {
  const n = data.length;
  if (n === 0) return Buffer.alloc(0);
  const hex = n.toString(16);
  const out = Buffer.allocUnsafe(hex.length + 4 + n);
  writeLatin1(out, hex, 0);
  let p = hex.length;
  out[p++] = 13;
  out[p++] = 10;
  out.set(data, p);
  p += n;
  out[p++] = 13;
  out[p] = 10;
  return out;
}

interface RawWriteBuffer extends Buffer {
  latin1Write(s: string, offset: number): number;
  utf8Write(s: string, offset: number): number;
}

// The encoding-specific writers behind `Buffer#write`; calling them directly skips its argument
// handling, which showed up as half the cost of encoding a small response.
const RAW_WRITE =
  typeof (Buffer.prototype as Partial<RawWriteBuffer>).latin1Write === 'function' &&
  typeof (Buffer.prototype as Partial<RawWriteBuffer>).utf8Write === 'function';

function writeLatin1(buf: Buffer, s: string, offset: number): void {
  if (RAW_WRITE) (buf as RawWriteBuffer).latin1Write(s, offset);
  else buf.write(s, offset, 'latin1');
}

/**
 * `head` (a latin1 string from the serializers above) followed by `body` in one new Buffer, so
 * a small response goes out in a single write. A string body is encoded as UTF-8.
 */
export function encodeMessage(head: string, body: string | Uint8Array | null): Buffer {
  const headLen = head.length;
  if (body === null || body.length === 0) return Buffer.from(head, 'latin1');
  const bodyLen = typeof body === 'string' ? Buffer.byteLength(body, 'utf8') : body.length;
  const out = Buffer.allocUnsafe(headLen + bodyLen);
  writeLatin1(out, head, 0);
  if (typeof body !== 'string') out.set(body, headLen);
  else if (RAW_WRITE) (out as RawWriteBuffer).utf8Write(body, headLen);
  else out.write(body, headLen, 'utf8');
  return out;
}

// ---------------------------------------------------------------------------------------------
// Writing to a sink with backpressure.

function destroyedError(): Error {
  return Object.assign(new Error('cannot write: the connection is closed'), { code: 'ERR_STREAM_DESTROYED' });
}

function waitDrain(sink: ByteSink): Promise<void> {
  if (typeof sink.once !== 'function') return Promise.resolve();
  if (sink.destroyed === true) return Promise.reject(destroyedError());
  return new Promise<void>((resolve, reject) => {
    const cleanup = (): void => {
      sink.removeListener?.('drain', onDrain);
      sink.removeListener?.('close', onClose);
      sink.removeListener?.('error', onError);
    };
    const onDrain = (): void => {
      cleanup();
      resolve();
    };
    const onClose = (): void => {
      cleanup();
      reject(destroyedError());
    };
    const onError = (err: unknown): void => {
      cleanup();
      reject(err instanceof Error ? err : destroyedError());
    };
    sink.once!('drain', onDrain);
    sink.once!('close', onClose);
    sink.once!('error', onError);
  });
}

/** Writes `chunk`, waiting for `'drain'` when the sink asks for it. */
function put(sink: ByteSink, chunk: Uint8Array): Promise<void> | undefined {
  if (sink.destroyed === true) return Promise.reject(destroyedError());
  if (sink.write(chunk)) return undefined;
  return waitDrain(sink);
}

/** Known byte length of a body to send: explicit `contentLength`, else string/bytes/null size, else `body.length` (-1 unknown). */
function knownLength(contentLength: number, body: Body): number {
  if (body instanceof AbstractBody) return contentLength >= 0 ? contentLength : body.length;
  const actual = body === null ? 0 : typeof body === 'string' ? Buffer.byteLength(body, 'utf8') : body.length;
  if (contentLength >= 0 && contentLength !== actual) {
    fail(`contentLength ${contentLength} does not match the ${actual}-byte ${typeof body === 'string' ? 'string' : 'byte'} body`);
  }
  return actual;
}

/**
 * Writes `request` to `sink` in HTTP/1.1 format and resolves once every byte has been handed to
 * the sink (respecting backpressure).
 *
 * - Request line `METHOD target HTTP/1.1`; the Host field first (the Host header, else
 *   `request.host`); other headers in stored spelling; `Connection: close` when `request.close`.
 * - Framing as {@link requestFraming} decides it: a body of known length (`contentLength >= 0`,
 *   a string, bytes, or an AbstractBody with a known `length`) is sent with Content-Length
 *   (omitted for an empty body unless the method is POST, PUT or PATCH); any other body with
 *   the chunked coding followed by `request.trailers`, the only framing that carries trailers.
 *   Framing headers already in `request.headers` are honored when consistent with the body.
 * - A streamed body is read to its end and then closed.
 *
 * Throws `ArgumentError` before writing anything for invalid names, values, method or target, or
 * inconsistent framing; also when a streamed body produces a different byte count than its
 * declared length (the connection is then unusable).
 */
export async function writeRequest(sink: ByteSink, request: Request): Promise<void> {
  const body = request.body;
  try {
    const p = requestFraming(request.method, request.headers, knownLength(request.contentLength, body));
    const head = serializeRequestHead(request.method, request.target, request.headers, request.host, p.field, request.close);
    const tail = p.mode === 'chunked' ? serializeLastChunk(request.trailers) : null;
    await writeBody(sink, head, body, p, tail, request.trailers);
  } finally {
    if (body instanceof AbstractBody) body.close();
  }
}

/**
 * Writes `response` to `sink` in HTTP/1.1 format (the request it answers defaults to
 * `response.request`) and resolves once every byte has been handed to the sink.
 *
 * - Status line with `response.reason`, or the standard reason phrase when it is empty.
 * - No body for 1xx, 204, 304, a HEAD request, or a 2xx answer to CONNECT. 1xx and 204 never
 *   carry Content-Length or Transfer-Encoding (such headers are left out); 304 and HEAD
 *   responses keep the framing headers as given, and a HEAD response whose body length is known
 *   gets the Content-Length a GET would have had.
 * - Otherwise framing as in {@link writeRequest} (Content-Length 0 is always sent), except that
 *   an unknown-length body to an HTTP/1.0 request is sent raw and delimited by closing the
 *   connection (`Connection: close` is added; the caller must close after writing).
 * - `Connection: close` is added when `response.close` (or the request's `close`) is set and no
 *   Connection header is present; `Connection: keep-alive` for a persistent HTTP/1.0 exchange.
 * - A streamed body is read to its end (or not at all when no body is sent) and then closed.
 *
 * Errors as for {@link writeRequest}.
 */
export async function writeResponse(sink: ByteSink, response: Response, request: Request | null = response.request): Promise<void> {
  const body = response.body;
  try {
    const status = response.status;
    const method = request !== null ? request.method : '';
    const headers = response.headers;
    const http10 = request !== null && request.protoMajor === 1 && request.protoMinor === 0;
    let close = response.close || (request !== null && request.close);
    let p: FramingPlan;
    let dropFraming = false;
    if (status < 200 || status === 204) {
      p = framingPlan();
      dropFraming = true;
    } else if (status === 304 || (method === 'CONNECT' && status < 300)) {
      p = framingPlan();
    } else if (method === 'HEAD') {
      const hasFraming = headers.has('Content-Length') || headers.has('Transfer-Encoding');
      const len = response.contentLength >= 0 ? response.contentLength : body instanceof AbstractBody ? body.length : -1;
      p = framingPlan();
      if (!hasFraming && len >= 0) p.field = len;
    } else {
      p = planFraming(headers, knownLength(response.contentLength, body), false, http10, framingPlan());
      if (p.mode === 'chunked' && http10) fail('cannot send a chunked body to an HTTP/1.0 client; remove Transfer-Encoding or set a length');
      if (p.mode === 'raw') close = true;
    }
    let head = serializeStatusLine(status, response.reason) + serializeFields(headers, -1, dropFraming) + framingField(p.field);
    if (!headers.has('Connection')) {
      if (close) head += 'Connection: close\r\n';
      else if (http10 && status >= 200) head += 'Connection: keep-alive\r\n';
    }
    head += '\r\n';
    const tail = p.mode === 'chunked' ? serializeLastChunk(response.trailers) : null;
    await writeBody(sink, head, body, p, tail, response.trailers);
  } finally {
    if (body instanceof AbstractBody) body.close();
  }
}

/** Writes the head and the body per `p`; `tail` is the last chunk plus trailers for chunked bodies. */
async function writeBody(sink: ByteSink, head: string, body: Body, p: FramingPlan, tail: string | null, trailers: Headers): Promise<void> {
  if (p.mode === 'none' || body === null || (!(body instanceof AbstractBody) && body.length === 0)) {
    // Nothing to stream: the head (and for chunked, the last chunk) in one write.
    const w = put(sink, Buffer.from(tail === null || p.mode !== 'chunked' ? head : head + tail, 'latin1'));
    if (w !== undefined) await w;
    return;
  }
  if (!(body instanceof AbstractBody)) {
    const bytes = typeof body === 'string' ? Buffer.from(body, 'utf8') : body;
    let out: Uint8Array;
    if (p.mode === 'chunked') {
      out = encodeMessage(head, Buffer.concat([encodeChunk(bytes), Buffer.from(tail!, 'latin1')]));
    } else if (head.length + bytes.length <= COALESCE_BYTES) {
      out = encodeMessage(head, bytes);
    } else {
      const w = put(sink, Buffer.from(head, 'latin1'));
      if (w !== undefined) await w;
      out = bytes;
    }
    const w = put(sink, out);
    if (w !== undefined) await w;
    return;
  }
  const w = put(sink, Buffer.from(head, 'latin1'));
  if (w !== undefined) await w;
  if (p.mode === 'chunked') {
    await streamChunked(sink, body);
    // Serialized (and validated) again at the end: a body may fill trailers in while it streams.
    const end = trailers.size > 0 ? serializeLastChunk(trailers) : tail!;
    const e = put(sink, Buffer.from(end, 'latin1'));
    if (e !== undefined) await e;
  } else {
    await streamRaw(sink, body, p.mode === 'fixed' ? p.length : -1);
  }
}

async function streamChunked(sink: ByteSink, body: AbstractBody): Promise<void> {
  for (;;) {
    // A fresh buffer per chunk: the sink may hold on to what it was given until it is flushed.
    const buf = Buffer.allocUnsafe(CHUNK_HEAD_ROOM + STREAM_CHUNK + 2);
    const n = await body.read(buf.subarray(CHUNK_HEAD_ROOM, CHUNK_HEAD_ROOM + STREAM_CHUNK));
    if (n === 0) return;
    if (!Number.isInteger(n) || n < 0 || n > STREAM_CHUNK) fail(`body read returned ${String(n)}, expected 0..${STREAM_CHUNK}`);
    const hex = n.toString(16);
    const start = CHUNK_HEAD_ROOM - hex.length - 2;
    writeLatin1(buf, hex, start);
    buf[CHUNK_HEAD_ROOM - 2] = 13;
    buf[CHUNK_HEAD_ROOM - 1] = 10;
    buf[CHUNK_HEAD_ROOM + n] = 13;
    buf[CHUNK_HEAD_ROOM + n + 1] = 10;
    const w = put(sink, buf.subarray(start, CHUNK_HEAD_ROOM + n + 2));
    if (w !== undefined) await w;
  }
}

/** Streams a body as is; with `length >= 0`, exactly that many bytes or an error. */
async function streamRaw(sink: ByteSink, body: AbstractBody, length: number): Promise<void> {
  let sent = 0;
  for (;;) {
    let size = STREAM_CHUNK;
    if (length >= 0 && length - sent < size) size = Math.max(length - sent, 1);
    const buf = Buffer.allocUnsafe(size);
    const n = await body.read(buf);
    if (n === 0) break;
    if (!Number.isInteger(n) || n < 0 || n > size) fail(`body read returned ${String(n)}, expected 0..${size}`);
    if (length >= 0 && sent + n > length) fail(`body is longer than its Content-Length ${length}`);
    sent += n;
    const w = put(sink, n === size ? buf : buf.subarray(0, n));
    if (w !== undefined) await w;
  }
  if (length >= 0 && sent !== length) fail(`body ended after ${sent} of its ${length}-byte Content-Length`);
}
