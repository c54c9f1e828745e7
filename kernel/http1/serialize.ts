/**
 * HTTP/1.1 serializer: message heads as one latin1 string (one write), the chunked coding's
 * chunks and last chunk with its trailers, and a small message as head and body in one buffer.
 * The writers that send whole messages to a sink are in write.ts.
 *
 * Everything that ends up in a head is validated first (field names are tokens; values, the
 * reason phrase and the target carry no CR, LF, NUL or other CTLs), so a caller's data can never
 * split a message; a violation throws `ArgumentError` before any byte is written.
 */
import { Buffer } from 'node:buffer';
import { ArgumentError } from '../errors.js';
import { eqIgnoreCase, Headers } from '../message/headers.js';
import { isForbiddenTrailer, STATUS_TEXT } from './tables.js';
import * as tables from './tables.js';
import { absoluteTargetAuthority, isValidHost, requestTargetError } from './target.js';

const TOKEN: Uint8Array = tables.TOKEN;

/**
 * Framing header a head serializer adds: a number adds `Content-Length: n`, `'chunked'` adds
 * `Transfer-Encoding: chunked`, `'none'` adds nothing (no body, a body delimited by closing the
 * connection, or framing headers the caller put in `headers` itself).
 */
export type OutgoingFraming = number | 'chunked' | 'none';

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

const CHECKED_SLOTS = 32;
/** Fields that passed the checks lately, by a slot of their lengths (see serializeFields). */
const checkedNames: (string | null)[] = new Array<string | null>(CHECKED_SLOTS).fill(null);
const checkedValues: (string | null)[] = new Array<string | null>(CHECKED_SLOTS).fill(null);

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
    // Most heads repeat the names and values of the one before: a string checked once (they
    // cannot change) is not checked again while it is the last of its length.
    const slot = (name.length + value.length * 7) & (CHECKED_SLOTS - 1);
    if (checkedNames[slot] !== name || checkedValues[slot] !== value) {
      checkFieldName(name);
      checkFieldValue(name, value);
      checkedNames[slot] = name;
      checkedValues[slot] = value;
    }
    s += `${name}: ${value}\r\n`;
  }
  return s;
}

/** The framing field for `framing` as a head line (`Content-Length: n\r\n`, ...), '' for `none`; `ArgumentError` for a length that is not a non-negative integer. */
export function framingField(framing: OutgoingFraming): string {
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
 * Returns a latin1 string. `framing` is normally the `field` of the plan `requestFraming`
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
    if (value === '') value = method === 'CONNECT' ? target : (absoluteTargetAuthority(target) ?? '');
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
const RAW_WRITE = typeof (Buffer.prototype as Partial<RawWriteBuffer>).latin1Write === 'function' && typeof (Buffer.prototype as Partial<RawWriteBuffer>).utf8Write === 'function';

/** @internal Writes the latin1 string `s` into `buf` at `offset` (the caller made room). */
export function writeLatin1(buf: Buffer, s: string, offset: number): void {
  if (RAW_WRITE) (buf as RawWriteBuffer).latin1Write(s, offset);
  else buf.write(s, offset, 'latin1');
}

/**
 * `head` (a latin1 string from the serializers above) followed by `body` in one new Buffer, so
 * a small response goes out in a single write. A string body is encoded as UTF-8.
 */
export function encodeMessage(head: string, body: string | Uint8Array | null): Buffer {
  if (body === null || body.length === 0) return Buffer.from(head, 'latin1');
  const out = Buffer.allocUnsafe(messageLength(head, body));
  encodeMessageInto(out, 0, head, body);
  return out;
}

/** @internal The byte length of {@link encodeMessage}'s result. */
export function messageLength(head: string, body: string | Uint8Array): number {
  return head.length + (typeof body === 'string' ? Buffer.byteLength(body, 'utf8') : body.length);
}

/** @internal {@link encodeMessage} into `out` at `at`, which has room for {@link messageLength} bytes. */
export function encodeMessageInto(out: Buffer, at: number, head: string, body: string | Uint8Array): void {
  writeLatin1(out, head, at);
  const b = at + head.length;
  if (typeof body !== 'string') out.set(body, b);
  else if (RAW_WRITE) (out as RawWriteBuffer).utf8Write(body, b);
  else out.write(body, b, 'utf8');
}
