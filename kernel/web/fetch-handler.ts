/**
 * Fetch-style handlers (`(request: Request) => Response`, as Hono's `app.fetch`, itty-router
 * or a Deno-style server export) served by switchyard: `fetchHandler` makes one a stream
 * handler, `serveFetch` starts a server for one.
 *
 * The request the handler gets is built lazily: method, URL, headers and signal are read
 * straight from the switchyard request, and only a handler that asks for more (the body's
 * mixins, `clone()`, `cache`, …) pays for a full web `Request`, made once and then answering
 * for it. It is an `instanceof Request`, and the platform's own code (`new Request(req)`,
 * `fetch(req)`) takes it as the full request.
 */
import { ArgumentError } from '../errors.js';
import { checkOptionKeys } from '../option-keys.js';
import type { Request } from '../message/request.js';
import { responseHasNoBody } from '../http1/framing.js';
import { listen, starting, type ServeOptions, type WorkerCount, type WorkerPool } from '../server/index.js';
import type { Server } from '../server/server.js';
import type { Stream } from '../server/stream.js';
import type { StreamHandler } from '../server/exchange.js';
import { notAWebResponse } from '../server/handler-result.js';
import { delegateToFull } from './delegate.js';
import { toWebHeaders } from './headers.js';
import { webBodySource } from './from-web-response.js';
import { installLightResponse, isLight, lightBody, lightHeaders, lightStatus, lightStatusText } from './light-response.js';
import { bodyOfStream, webRequest, webRequestUrl } from './to-web-request.js';

/** The second argument a fetch-style handler gets: the exchange it answers (peer address, protocol, the server). */
export interface FetchEnv {
  /** The server stream of this exchange (`stream.peerAddr()`, `stream.protocol`, `stream.server`). */
  readonly stream: Stream;
}

/** Options of {@link fetchHandler} (and, beside the server's, of {@link serveFetch}). */
export interface FetchHandlerOptions {
  /**
   * Put a light `Response` class in `globalThis.Response` (default true), process-wide and for
   * good, as Hono's own Node adapter does: an app's `new Response('hi')` then costs no stream
   * until something reads its body, and the server writes its string as it is. Its instances
   * are `instanceof Response` both ways and answer every member (see `light-response.ts`);
   * false leaves the platform's class alone.
   */
  lightResponse?: boolean;
}

const HANDLER_KEYS: ReadonlySet<string> = new Set(['lightResponse']);

/**
 * A fetch-style handler: takes the web's global `Request` (and {@link FetchEnv}, which Hono
 * exposes as `c.env`) and returns, or resolves to, a global `Response`.
 */
export type FetchHandler = (request: globalThis.Request, env: FetchEnv) => globalThis.Response | Promise<globalThis.Response>;

const STREAM = Symbol('stream');
const URL_ = Symbol('url');
const HEADERS = Symbol('headers');
const FULL = Symbol('full');

/** The lazily built web request of one server exchange (see the module notes). */
interface LightRequest {
  [STREAM]: Stream;
  [URL_]: string;
  [HEADERS]: globalThis.Headers | null;
  [FULL]: globalThis.Request | null;
}

/** The full web request behind `r`, made on first use. */
function full(r: LightRequest): globalThis.Request {
  let f = r[FULL];
  if (f === null) {
    const stream = r[STREAM];
    const req = stream.request;
    f = r[FULL] = webRequest(req, r[URL_], req.contentLength === 0 ? null : bodyOfStream(stream), r[HEADERS]);
  }
  return f;
}

/** Makes the light request of one exchange; its prototype is set on first use (see {@link lightRequest}). */
const LightRequest = function LightRequest(this: LightRequest, stream: Stream, url: string): void {
  this[STREAM] = stream;
  this[URL_] = url;
  this[HEADERS] = null;
  this[FULL] = null;
} as unknown as { new (stream: Stream, url: string): LightRequest; prototype: object };

// Set on first use: touching the platform's Request loads Node's fetch implementation.
let protoSet = false;

/** The prototype of the light requests: the platform's Request's, with the members below. */
function buildRequestProto(): object {
  const lightProto: object = Object.create(globalThis.Request.prototype, {
    method: {
      get(this: LightRequest): string {
        return this[STREAM].request.method;
      },
    },
    url: {
      get(this: LightRequest): string {
        return this[URL_];
      },
    },
    headers: {
      get(this: LightRequest): globalThis.Headers {
        return (this[HEADERS] ??= toWebHeaders(this[STREAM].request.headers));
      },
    },
    signal: {
      get(this: LightRequest): AbortSignal {
        return this[STREAM].request.ctx.signal;
      },
    },
    bodyUsed: {
      get(this: LightRequest): boolean {
        const f = this[FULL];
        return f !== null && f.bodyUsed;
      },
    },
  });

  // Every other member of the platform's Request answers from the full request, so undici's
  // own code given this object (`new Request(req)`, `fetch(req)`) reads the full request's state.
  delegateToFull<LightRequest>(lightProto, globalThis.Request.prototype, new globalThis.Request('http://localhost/'), full);
  Object.defineProperty(lightProto, Symbol.for('nodejs.util.inspect.custom'), {
    value(this: LightRequest): string {
      return `Request ${this[STREAM].request.method} ${this[URL_]}`;
    },
  });
  return lightProto;
}

/** The light request of `stream`, whose URL is `url`. */
function lightRequest(stream: Stream, url: string): globalThis.Request {
  if (!protoSet) {
    LightRequest.prototype = buildRequestProto();
    protoSet = true;
  }
  return new LightRequest(stream, url) as unknown as globalThis.Request;
}

/**
 * A stream handler running the fetch-style `handler` for each request: the handler gets a
 * global `Request` whose URL is absolute (scheme from the connection, host from the request),
 * whose body is a `ReadableStream` read from the connection as the handler reads it, and whose
 * `signal` aborts when the client goes away; its `Response` is written out as it comes (a
 * string or bytes body at once, a `ReadableStream` body chunk by chunk, each sent as it is
 * produced). The second argument is {@link FetchEnv}. A handler that throws, or returns
 * anything but a global `Response`, gets the server's 500 and error report, as with `serve`.
 * A request whose host or target does not make a URL is answered 400.
 */
export function fetchHandler(handler: FetchHandler, options: FetchHandlerOptions = {}): StreamHandler {
  if (typeof handler !== 'function') throw new ArgumentError(`fetchHandler(handler): handler must be a function, got ${typeof handler}`);
  if (typeof options !== 'object' || options === null) throw new ArgumentError(`fetchHandler(handler, options): options must be an object, got ${options === null ? 'null' : typeof options}`);
  checkOptionKeys(options, HANDLER_KEYS, 'fetchHandler(handler, options)');
  const light = options.lightResponse ?? true;
  if (typeof light !== 'boolean') throw new ArgumentError(`fetchHandler: lightResponse must be a boolean, got ${typeof light}`);
  if (light) installLightResponse();
  return (stream: Stream): Promise<void> | undefined => {
    let url: string;
    try {
      url = webRequestUrl(stream.request, stream.server.tls);
    } catch (err) {
      return badRequest(stream, err as Error);
    }
    const res = handler(lightRequest(stream, url), { stream });
    // A handler that answers synchronously (most routes of most apps) costs no extra turn, and
    // its string or bytes body no Promise at all.
    if (isLight(res)) return writeLightResponse(stream, res as globalThis.Response);
    if (res != null && typeof (res as Partial<PromiseLike<unknown>>).then === 'function') return Promise.resolve(res).then((r) => writeWebResponse(stream, r));
    return writeWebResponse(stream, res);
  };
}

/** Answers a request that makes no URL. */
async function badRequest(stream: Stream, err: Error): Promise<void> {
  stream.setStatus(400);
  stream.setHeader('Content-Type', 'text/plain; charset=utf-8');
  await stream.write(`${err.message}\n`);
}

/** Copies web headers onto the stream's response. */
function copyHeaders(stream: Stream, headers: globalThis.Headers): void {
  for (const [k, v] of headers) stream.appendHeader(k, v);
}

/**
 * Writes the web response `res` through `stream` (see {@link fetchHandler}): a string or bytes
 * body with its head in one go, undefined when the wire took it at once.
 */
function writeWebResponse(stream: Stream, res: unknown): Promise<void> | undefined {
  // The light response first: its class's instanceof test is a call.
  if (isLight(res)) return writeLightResponse(stream, res as globalThis.Response);
  if (!(res instanceof globalThis.Response)) throw notAWebResponse(res);
  const status = res.status;
  stream.setStatus(status, res.statusText);
  copyHeaders(stream, res.headers);
  const src = webBodySource(res);
  // A Content-Length the response carries is kept (and checked against the body); else the
  // stream declares the body's own.
  if (src !== undefined) return stream.finishWrite(src === null ? undefined : src);
  return writeWebStream(stream, res, status);
}

/** Writes a light response (see `light-response.ts`) whose platform response was not made: its body is in memory. */
function writeLightResponse(stream: Stream, res: globalThis.Response): Promise<void> | undefined {
  stream.setStatus(lightStatus(res), lightStatusText(res));
  const headers = lightHeaders(res);
  const body = lightBody(res);
  if (headers !== null) copyHeaders(stream, headers);
  else if (typeof body === 'string') stream.setHeader('Content-Type', 'text/plain;charset=UTF-8');
  return stream.finishWrite(body === null ? undefined : body);
}

/** Writes the `ReadableStream` body of `res` through `stream`, chunk by chunk as it comes. */
async function writeWebStream(stream: Stream, res: globalThis.Response, status: number): Promise<void> {
  const req: Request = stream.request;
  const body = res.body!;
  if (responseHasNoBody(status, req.method)) {
    await body.cancel();
    await stream.closeWrite();
    return;
  }
  const reader = body.getReader();
  // A client that goes away stops the producer now (an event stream may wait long for its next event).
  const stop = req.ctx.onCancel((err) => void reader.cancel(err).catch(() => undefined));
  // The head goes out with the first chunk when that is ready at once (one write, not two),
  // else as soon as this turn of the event loop is over: a client of an event stream whose
  // first event is late still gets the head without waiting for it.
  let headError: unknown = null;
  const head = setImmediate(() => {
    try {
      stream.startWrite();
    } catch (err) {
      headError = err;
    }
  });
  try {
    let chunk = await reader.read();
    clearImmediate(head);
    if (headError !== null) throw headError;
    while (chunk.done !== true) {
      await stream.write(chunk.value);
      chunk = await reader.read();
    }
    await stream.closeWrite();
  } catch (err) {
    clearImmediate(head);
    void reader.cancel(err).catch(() => undefined);
    throw err;
  } finally {
    stop();
  }
}

/** Options of {@link serveFetch}: those of `serve`, and `lightResponse` ({@link FetchHandlerOptions}). */
export type ServeFetchOptions = ServeOptions & FetchHandlerOptions;

/**
 * Starts a server for the fetch-style `handler` (see {@link fetchHandler}) and resolves once
 * it listens: `listen(fetchHandler(handler, { lightResponse }), options)`, with the options of
 * `serve` besides.
 */
export function serveFetch(handler: FetchHandler, options: ServeFetchOptions & { workers: WorkerCount }): Promise<Server | WorkerPool>;
export function serveFetch(handler: FetchHandler, options?: ServeFetchOptions): Promise<Server>;
export function serveFetch(handler: FetchHandler, options: ServeFetchOptions = {}): Promise<Server | WorkerPool> {
  return starting(() => {
    const { lightResponse, ...rest } = options;
    return listen(fetchHandler(handler, lightResponse === undefined ? {} : { lightResponse }), rest);
  });
}
