/**
 * sseStream(): a Response whose body is an SSEStream, optionally with a producer function
 * that runs on its own task and ends the response when it returns.
 */
import { ArgumentError, checkOptionKeys, Response, type ResponseOptions } from '../../kernel/index.js';
import { describe, SSEStream } from './stream.js';

/** Writes events to a stream; the response ends when it returns (or its promise settles). */
export type SSEProducer = (stream: SSEStream) => unknown;

/** Options of {@link sseStream}: those of `Response` (not `body`), plus `maxLen`. */
export interface SSEResponseOptions extends Omit<ResponseOptions, 'body' | 'contentLength'> {
  /** Largest event in bytes. Default 16 MiB. */
  maxLen?: number;
}

/** A Response whose body is an {@link SSEStream}. */
export type SSEResponse = Response & { body: SSEStream };

/**
 * Server-sent events (the reference's `sse_stream`):
 * - `sseStream(status = 200, { maxLen, ...responseOptions })` → a Response whose body is an
 *   `SSEStream` (`response.body`), with `Content-Type: text/event-stream` and
 *   `Cache-Control: no-cache`;
 * - `sseStream(fn, status = 200, options)` → the same, and `fn(stream)` runs on its own task;
 *   the response ends when it returns. If it throws (other than because the stream ended),
 *   the server reports the error and closes the connection without ending the body cleanly;
 * - `sseStream(response, fn?)` (or `sseStream(fn, response)`) → the `SSEStream` of a Response
 *   whose body is one (an empty body gets a new one): sets the headers, starts `fn` if given.
 *
 * Pass the handler's request as `request` (a Response option) so that a client disconnect
 * cancels the stream at once: writes reject, `stream.ctx` is canceled. Without it the stream
 * ends when the server notices, at the latest on the write after the disconnect.
 */
export function sseStream(status?: number, options?: SSEResponseOptions): SSEResponse;
export function sseStream(options: SSEResponseOptions): SSEResponse;
export function sseStream(fn: SSEProducer, status?: number, options?: SSEResponseOptions): SSEResponse;
export function sseStream(fn: SSEProducer, options: SSEResponseOptions): SSEResponse;
export function sseStream(response: Response, fn?: SSEProducer): SSEStream;
export function sseStream(fn: SSEProducer, response: Response): SSEStream;
export function sseStream(a?: unknown, b?: unknown, c?: unknown): SSEResponse | SSEStream {
  if (a instanceof Response) {
    if (c !== undefined) throw new ArgumentError('sseStream(response, fn?) takes at most two arguments');
    if (b !== undefined && typeof b !== 'function') throw new ArgumentError(`sseStream(response, fn): fn must be a function, got ${describe(b)}`);
    return forResponse(a, b as SSEProducer | undefined);
  }
  if (typeof a === 'function') {
    if (b instanceof Response) {
      if (c !== undefined) throw new ArgumentError('sseStream(fn, response) takes two arguments');
      return forResponse(b, a as SSEProducer);
    }
    const res = build(b, c);
    start(res.body, a as SSEProducer);
    return res;
  }
  return build(a, b);
}

/** (status?, options?) or (options): the Response with a fresh stream. */
/** The names {@link SSEResponseOptions} takes (and `body`/`contentLength`, refused below with a reason). */
const OPTIONS: ReadonlySet<string> = new Set([
  ...(['headers', 'reason', 'trailers', 'protoMajor', 'protoMinor', 'close', 'request', 'copyHeaders', 'maxLen'] satisfies (keyof SSEResponseOptions)[]),
  'body',
  'contentLength',
]);

function build(a: unknown, b: unknown): SSEResponse {
  let status = 200;
  let options: SSEResponseOptions = {};
  if (typeof a === 'number') {
    status = a;
    if (b !== undefined) options = b as SSEResponseOptions;
  } else if (a !== undefined) {
    if (b !== undefined) throw new ArgumentError(`sseStream: status must be a number, got ${describe(a)}`);
    options = a as SSEResponseOptions;
  }
  if (typeof options !== 'object' || options === null) throw new ArgumentError(`sseStream: options must be an object, got ${describe(options)}`);
  checkOptionKeys(options, OPTIONS, 'sseStream');
  const { maxLen, body, contentLength, ...rest } = options as SSEResponseOptions & { body?: unknown; contentLength?: unknown };
  if (body !== undefined) throw new ArgumentError('sseStream: the body is the SSEStream; do not pass body');
  if (contentLength !== undefined) throw new ArgumentError('sseStream: an event stream has no content length; do not pass contentLength');
  const stream = new SSEStream({ maxLen });
  const res = new Response(status, stream, rest) as SSEResponse;
  prepare(res, stream);
  return res;
}

function forResponse(res: Response, fn: SSEProducer | undefined): SSEStream {
  let stream: SSEStream;
  const body = res.body;
  if (body instanceof SSEStream) stream = body;
  else if (body === null || ((typeof body === 'string' || body instanceof Uint8Array) && body.length === 0)) {
    stream = new SSEStream();
    res.setBody(stream);
  } else {
    throw new ArgumentError('sseStream(response): the response already has a body that is not an SSEStream');
  }
  prepare(res, stream);
  if (fn !== undefined) start(stream, fn);
  return stream;
}

/** Headers, unknown length, and the link to the request's context. */
function prepare(res: Response, stream: SSEStream): void {
  const h = res.headers;
  const ct = h.get('Content-Type');
  if (ct === undefined || !isEventStream(ct)) h.set('Content-Type', 'text/event-stream');
  if (!h.has('Cache-Control')) h.set('Cache-Control', 'no-cache');
  h.delete('Content-Length');
  res.contentLength = -1;
  if (res.request !== null) stream.follow(res.request.ctx);
}

/** Runs the producer on its own task; the stream ends when it returns. */
function start(stream: SSEStream, fn: SSEProducer): void {
  setImmediate(() => {
    let r: unknown;
    try {
      r = fn(stream);
    } catch (err) {
      done(stream, err);
      return;
    }
    Promise.resolve(r).then(
      () => stream.close(),
      (err: unknown) => done(stream, err),
    );
  });
}

function done(stream: SSEStream, err: unknown): void {
  // A producer that stopped because the stream ended (its write rejected) ended normally.
  if (stream.closed) return;
  stream.fail(err instanceof Error ? err : new Error(`SSE producer failed: ${String(err)}`));
}

/** True when a Content-Type value is `text/event-stream` (any case, any parameters). */
export function isEventStream(contentType: string): boolean {
  const semi = contentType.indexOf(';');
  const media = (semi < 0 ? contentType : contentType.slice(0, semi)).trim();
  return media.length === 17 && media.toLowerCase() === 'text/event-stream';
}
