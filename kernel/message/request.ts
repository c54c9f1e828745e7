/**
 * Request: one HTTP request message, client or server side.
 */
import { ArgumentError } from '../errors.js';
import { checkOptionKeys, looksLikeHeader, suggestOption, unknownOptionError } from '../option-keys.js';
import { AbstractBody, bodyLength, type Body } from './body.js';
import { RequestContext } from './context.js';
import { Headers, headersFromFields, type HeadersInit } from './headers.js';
import { describeType, Message } from './message.js';

/** Options of {@link Request} (all optional). */
export interface RequestOptions {
  /** Request headers; copied unless `copyHeaders` is false and the value is a Headers. */
  headers?: HeadersInit | null;
  /** String, bytes, a streamed body, or null for none. */
  body?: Body;
  /** Trailers, sent after a chunked body. */
  trailers?: HeadersInit | null;
  /** Authority sent as the HTTP/1 Host header (when the headers have none) or HTTP/2 `:authority`. */
  host?: string | null;
  /** Body length in bytes; -1 (default) computes it for string, bytes and empty bodies. */
  contentLength?: number;
  /** HTTP major version, default 1. */
  protoMajor?: number;
  /** HTTP minor version, default 1. */
  protoMinor?: number;
  /** Close the connection after this request. */
  close?: boolean;
  /** The per-request context; a new one by default. */
  context?: RequestContext;
  /** When false and `headers` is a Headers, it is used without copying. Default true. */
  copyHeaders?: boolean;
}

const OPTION_KEYS = new Set<string>(['headers', 'body', 'trailers', 'host', 'contentLength', 'protoMajor', 'protoMinor', 'close', 'context', 'copyHeaders']);

/**
 * @internal Whether a plain object in a constructor's headers-or-options position
 * (`new Request(m, t, x)`) is the options: an object with an option's name among its keys is
 * options, and then every other key must be one too (an unknown one is an `ArgumentError`
 * with the nearest name, never a header nobody meant); an object with none is headers,
 * unless a key that does not look like a header name is a near miss of an option (`bdy`).
 */
export function isOptionsObject(x: unknown, keys: ReadonlySet<string>, where: string): boolean {
  if (typeof x !== 'object' || x === null || Array.isArray(x) || x instanceof Headers || x instanceof Map) return false;
  if (Symbol.iterator in x) return false;
  const names = Object.keys(x);
  let unknown: string | null = null;
  let known = false;
  for (const k of names) {
    if (keys.has(k)) known = true;
    else unknown ??= k;
  }
  if (unknown === null) return true;
  if (known) throw unknownOptionError(where, unknown, keys);
  for (const k of names) if (!looksLikeHeader(k) && suggestOption(k, keys).length > 0) throw unknownOptionError(where, k, keys);
  return false;
}

/** @internal Checks an options object given in the options position (only option names). */
export function checkOptionsObject(o: unknown, keys: ReadonlySet<string>, where: string): void {
  if (o === undefined) return;
  if (typeof o !== 'object' || o === null) throw new ArgumentError(`${where}: options must be an object, got ${describeType(o)}`);
  checkOptionKeys(o, keys, where);
}

/** @internal Validates a body value. */
export function checkBody(body: unknown, what: string): Body {
  if (body === undefined || body === null) return null;
  if (typeof body === 'string' || body instanceof Uint8Array || body instanceof AbstractBody) return body;
  throw new ArgumentError(`${what} body must be a string, Uint8Array, AbstractBody or null, got ${describeType(body)}`);
}

/** @internal Validates a content length option. */
export function checkLength(n: unknown): number {
  if (n === undefined) return -1;
  if (typeof n !== 'number' || !Number.isSafeInteger(n) || n < -1) {
    throw new ArgumentError(`contentLength must be an integer >= -1, got ${String(n)}`);
  }
  return n;
}

/** @internal Builds headers per the copy rule. */
export function makeHeaders(h: HeadersInit | null | undefined, copy: boolean): Headers {
  if (h == null) return new Headers();
  // A number would otherwise be taken as the capacity of an empty Headers.
  if (typeof h !== 'object') throw new ArgumentError(`headers must be a Headers, array of pairs, Map or object, got ${typeof h}`);
  if (h instanceof Headers && !copy) return h;
  return new Headers(h);
}

/** @internal Validates a protocol version number. */
export function checkVersion(n: unknown, what: string, dflt: number): number {
  if (n === undefined) return dflt;
  if (typeof n !== 'number' || !Number.isInteger(n) || n < 0 || n > 9) throw new ArgumentError(`${what} must be an integer 0..9, got ${String(n)}`);
  return n;
}

/** One HTTP request. */
export class Request extends Message {
  /** HTTP method, such as `GET`. */
  method: string;
  /** Request target: path plus query string (or absolute form for proxies). */
  target: string;
  // The headers, or null while they are still the wire's field list (`_fields`): an HTTP/2
  // request is read into Headers when something first asks (many handlers never do).
  private _headers: Headers | null;
  private _fields: readonly string[] | null;
  /** Body: string, bytes, a streamed body, or null. On a server (`serve`) it is the buffered bytes. */
  body: Body;
  // The context is made on first use (as the trailers are): a server request that never
  // touches them (most) allocates neither.
  private _ctx: RequestContext | null;
  /** Authority for the Host header or `:authority`, or null. */
  host: string | null;
  /** Body length in bytes; -1 when unknown. */
  contentLength: number;
  /** HTTP major version. */
  protoMajor: number;
  /** HTTP minor version. */
  protoMinor: number;
  /** Close the connection after this request. */
  close: boolean;
  /** Full URL of a client request (set by the client), else empty. */
  url: string;

  /**
   * `new Request(method, target, options?)` or `new Request(method, target, headers, body?, options?)`.
   * A plain object third argument is options when all its keys are option names, else headers.
   */
  constructor(method: string, target: string, options?: RequestOptions);
  constructor(method: string, target: string, headers: HeadersInit | null, body?: Body, options?: RequestOptions);
  constructor(method: string, target: string, a?: HeadersInit | RequestOptions | null, b?: Body, c?: RequestOptions) {
    super();
    if (a === WIRE) {
      // Internal fast path for the HTTP/1 server: values already parsed and validated.
      const w = wire;
      this.method = method;
      this.target = target;
      this._headers = w.headers;
      this._fields = w.fields;
      this.body = w.body;
      this._trailers = null;
      this.host = null;
      this.contentLength = w.contentLength;
      this.protoMajor = 1;
      this.protoMinor = w.protoMinor;
      this.close = false;
      this._ctx = null;
      this.url = '';
      w.headers = null;
      w.fields = null;
      return;
    }
    if (typeof method !== 'string' || method === '') throw new ArgumentError(`Request method must be a non-empty string, got ${describeType(method)}`);
    if (typeof target !== 'string') throw new ArgumentError(`Request target must be a string, got ${describeType(target)}`);
    let opts: RequestOptions;
    if (arguments.length <= 3 && (a === undefined || isOptionsObject(a, OPTION_KEYS, 'new Request()'))) {
      opts = (a as RequestOptions | undefined) ?? {};
    } else {
      checkOptionsObject(c, OPTION_KEYS, 'new Request()');
      opts = { ...(c ?? {}), headers: a as HeadersInit | null, body: b === undefined ? c?.body : b };
    }
    this.method = method;
    this.target = target;
    this._headers = makeHeaders(opts.headers, opts.copyHeaders !== false);
    this._fields = null;
    this.body = checkBody(opts.body, 'Request');
    this._trailers = opts.trailers == null ? null : makeHeaders(opts.trailers, true);
    if (opts.host != null && typeof opts.host !== 'string') throw new ArgumentError(`host must be a string, got ${describeType(opts.host)}`);
    this.host = opts.host ?? null;
    const cl = checkLength(opts.contentLength);
    this.contentLength = cl >= 0 ? cl : bodyLength(this.body);
    this.protoMajor = checkVersion(opts.protoMajor, 'protoMajor', 1);
    this.protoMinor = checkVersion(opts.protoMinor, 'protoMinor', 1);
    this.close = opts.close === true;
    if (opts.context !== undefined && !(opts.context instanceof RequestContext)) {
      throw new ArgumentError(`context must be a RequestContext, got ${describeType(opts.context)}`);
    }
    this._ctx = opts.context ?? null;
    this.url = '';
  }

  /** Request headers. */
  get headers(): Headers {
    return this._headers ?? this.readFields();
  }
  set headers(h: Headers) {
    if (!(h instanceof Headers)) throw new ArgumentError(`headers must be a Headers, got ${describeType(h)}`);
    this._headers = h;
    this._fields = null;
  }

  private readFields(): Headers {
    const h = headersFromFields(this._fields ?? [], true);
    this._headers = h;
    this._fields = null;
    return h;
  }

  /** The request context (cancellation, deadline, data); see {@link getRequestContext}. */
  get ctx(): RequestContext {
    return (this._ctx ??= new RequestContext());
  }
  set ctx(c: RequestContext) {
    if (!(c instanceof RequestContext)) throw new ArgumentError(`ctx must be a RequestContext, got ${describeType(c)}`);
    this._ctx = c;
  }

  /** The application data of the request's context (the reference's `req.context`). */
  get context(): Map<string | symbol, unknown> {
    return this.ctx.data;
  }

  /** Replaces the body, recomputing the content length for string, bytes and empty bodies. */
  setBody(body: Body, contentLength = -1): void {
    this.body = checkBody(body, 'Request');
    this.contentLength = contentLength >= 0 ? contentLength : bodyLength(this.body);
  }

  /** `GET /path HTTP/1.1` form, for logs and errors. */
  override toString(): string {
    return `${this.method} ${this.target} HTTP/${this.protoMajor}.${this.protoMinor}`;
  }
}

const WIRE: RequestOptions = Object.freeze({});
const wire: { headers: Headers | null; fields: readonly string[] | null; body: Body; contentLength: number; protoMinor: number } = {
  headers: null,
  fields: null,
  body: null,
  contentLength: 0,
  protoMinor: 1,
};

/**
 * @internal Builds a server request from a parsed HTTP/1 head without re-validating it:
 * the hot path of the server. Fields are the same as the public constructor's.
 */
export function requestFromWire(method: string, target: string, headers: Headers | readonly string[], body: Body, contentLength: number, protoMinor: number): Request {
  if (headers instanceof Headers) wire.headers = headers;
  else wire.fields = headers;
  wire.body = body;
  wire.contentLength = contentLength;
  wire.protoMinor = protoMinor;
  return new Request(method, target, WIRE);
}

/**
 * The request's context if one was made already, else null (without making one): a protocol
 * driver that cancels contexts on a client reset then does not make one nobody reads.
 */
export function peekRequestContext(req: Request): RequestContext | null {
  return (req as unknown as { _ctx: RequestContext | null })._ctx;
}

/** The {@link RequestContext} of a request. */
export function getRequestContext(req: Request): RequestContext {
  if (!(req instanceof Request)) throw new ArgumentError(`getRequestContext takes a Request, got ${describeType(req)}`);
  return req.ctx;
}
