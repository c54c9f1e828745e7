/**
 * Writing whole HTTP/1.1 messages to a sink, with backpressure: `writeRequest` and
 * `writeResponse` frame the body as the framing rules decide, serialize the head, and send the
 * head and the body (a streamed one read piece by piece) in as few writes as they can.
 */
import { Buffer } from 'node:buffer';
import { ArgumentError } from '../errors.js';
import { AbstractBody, type Body } from '../message/body.js';
import type { Headers } from '../message/headers.js';
import type { Request } from '../message/request.js';
import type { Response } from '../message/response.js';
import { buildResponseHead, framingPlan, h1ResponseHasNoBody, requestFraming, responseFraming, type FramingPlan } from './framing.js';
import { CHUNK_ROOM, encodeChunk, encodeMessage, frameChunkInPlace, serializeLastChunk, serializeRequestHead } from './serialize.js';

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

function fail(message: string): never {
  throw new ArgumentError(message);
}

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

/** The length a message declares, unchecked: explicit `contentLength`, else a streamed body's `length` (-1 unknown). */
function declaredLength(contentLength: number, body: Body): number {
  return contentLength >= 0 ? contentLength : body instanceof AbstractBody ? body.length : -1;
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
    const tail = p.kind === 'chunked' ? serializeLastChunk(request.trailers) : null;
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
 * - Framing and head as the server sends them ({@link responseFraming},
 *   {@link buildResponseHead}), except that framing headers already in `response.headers` are
 *   honored when consistent with the body. No body for 1xx, 204, 304, a HEAD request, or a 2xx
 *   answer to CONNECT. 1xx, 204 and a 2xx answer to CONNECT never carry Content-Length or
 *   Transfer-Encoding (such headers are left out); 304 and HEAD responses keep the framing
 *   headers as given, and a HEAD response whose body length is known gets the Content-Length a
 *   GET would have had.
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
    const minor = request !== null && request.protoMajor === 1 && request.protoMinor === 0 ? 0 : 1;
    // An answer without a body only states a length (HEAD: the GET's), so it is taken as declared.
    const length = h1ResponseHasNoBody(status, method) ? declaredLength(response.contentLength, body) : knownLength(response.contentLength, body);
    const p = framingPlan();
    const kind = responseFraming(status, method, length, minor, headers, p);
    let fields = '';
    if (!headers.has('Connection')) {
      if (response.close || (request !== null && request.close) || kind === 'close') fields = 'Connection: close\r\n';
      else if (minor === 0 && status >= 200) fields = 'Connection: keep-alive\r\n';
    }
    const head = buildResponseHead(status, response.reason, headers, kind, length, fields, method, true);
    const tail = kind === 'chunked' ? serializeLastChunk(response.trailers) : null;
    await writeBody(sink, head, body, p, tail, response.trailers);
  } finally {
    if (body instanceof AbstractBody) body.close();
  }
}

/** Writes the head and the body per `p`; `tail` is the last chunk plus trailers for chunked bodies. */
async function writeBody(sink: ByteSink, head: string, body: Body, p: FramingPlan, tail: string | null, trailers: Headers): Promise<void> {
  if (p.kind === 'none' || body === null || (!(body instanceof AbstractBody) && body.length === 0)) {
    // Nothing to stream: the head (and for chunked, the last chunk) in one write.
    const w = put(sink, Buffer.from(tail === null || p.kind !== 'chunked' ? head : head + tail, 'latin1'));
    if (w !== undefined) await w;
    return;
  }
  if (!(body instanceof AbstractBody)) {
    const bytes = typeof body === 'string' ? Buffer.from(body, 'utf8') : body;
    let out: Uint8Array;
    if (p.kind === 'chunked') {
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
  if (p.kind === 'chunked') {
    await streamChunked(sink, body);
    // Serialized (and validated) again at the end: a body may fill trailers in while it streams.
    const end = trailers.size > 0 ? serializeLastChunk(trailers) : tail!;
    const e = put(sink, Buffer.from(end, 'latin1'));
    if (e !== undefined) await e;
  } else {
    await streamRaw(sink, body, p.kind === 'length' ? p.length : -1);
  }
}

async function streamChunked(sink: ByteSink, body: AbstractBody): Promise<void> {
  for (;;) {
    // A fresh buffer per chunk: the sink may hold on to what it was given until it is flushed.
    const buf = Buffer.allocUnsafe(CHUNK_ROOM + STREAM_CHUNK + 2);
    const n = await body.read(buf.subarray(CHUNK_ROOM, CHUNK_ROOM + STREAM_CHUNK));
    if (n === 0) return;
    if (!Number.isInteger(n) || n < 0 || n > STREAM_CHUNK) fail(`body read returned ${String(n)}, expected 0..${STREAM_CHUNK}`);
    const w = put(sink, frameChunkInPlace(buf, n));
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
