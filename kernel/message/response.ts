/**
 * Response: one HTTP response message, client or server side.
 */
import { Buffer } from 'node:buffer';
import { ArgumentError } from '../errors.js';
import { AbstractBody, bodyLength, type Body } from './body.js';
import { Headers, type HeadersInit } from './headers.js';
import { checkOptionKeys } from '../option-keys.js';
import { describeType, Message } from './message.js';
import { checkBody, checkLength, checkVersion, checkOptionsObject, makeHeaders, Request } from './request.js';

/** Options of {@link Response} (all optional). */
export interface ResponseOptions {
  /** Response headers; copied unless `copyHeaders` is false and the value is a Headers. */
  headers?: HeadersInit | null;
  /** Body, when not given positionally. */
  body?: Body;
  /** Reason phrase; empty means the standard one for the status. */
  reason?: string;
  /** Trailers, sent after a chunked body. */
  trailers?: HeadersInit | null;
  /** Body length; -1 (default) computes it for string, bytes and empty bodies. */
  contentLength?: number;
  /** HTTP major version, default 1. */
  protoMajor?: number;
  /** HTTP minor version, default 1. */
  protoMinor?: number;
  /** Close the connection after this response. */
  close?: boolean;
  /** The request that produced this response. */
  request?: Request | null;
  /** When false and `headers` is a Headers, it is used without copying. Default true. */
  copyHeaders?: boolean;
}

/** What {@link Response.json} takes besides the value: a status (default 200) and the other options but the body. */
export interface ResponseJSONInit extends Omit<ResponseOptions, 'body'> {
  /** Status code. Default 200. */
  status?: number;
}

const OPTION_KEYS = new Set<string>(['headers', 'body', 'reason', 'trailers', 'contentLength', 'protoMajor', 'protoMinor', 'close', 'request', 'copyHeaders']);

function isBodyValue(x: unknown): boolean {
  return x === undefined || x === null || typeof x === 'string' || x instanceof Uint8Array || x instanceof AbstractBody;
}

function checkStatus(status: unknown): number {
  if (typeof status !== 'number' || !Number.isInteger(status) || status < 100 || status > 999) {
    throw new ArgumentError(`status must be an integer 100..999, got ${String(status)}`);
  }
  return status;
}

const EMPTY_OPTIONS: ResponseOptions = Object.freeze({});

/** One HTTP response. */
export class Response extends Message {
  /** HTTP status code. */
  status: number;
  /** Reason phrase; empty means the standard one. */
  reason: string;
  /** Response headers. */
  headers: Headers;
  /** Body: string, bytes, a streamed body, or null. A client response holds bytes (null with `responseStream`). */
  body: Body;
  /** Body length in bytes; -1 when unknown. */
  contentLength: number;
  /** HTTP major version. */
  protoMajor: number;
  /** HTTP minor version. */
  protoMinor: number;
  /** Close the connection after this response. */
  close: boolean;
  /** The request that produced this response, or null. */
  request: Request | null;
  /** Final URL after redirects (client responses), else empty. */
  url: string;

  /**
   * Forms: `new Response(status, body?, options?)`, `new Response(status, headers, body, options?)`,
   * `new Response(body)` (status 200), `new Response(status, options)`.
   */
  constructor(status: number, body?: Body, options?: ResponseOptions);
  constructor(status: number, headers: HeadersInit | null, body: Body, options?: ResponseOptions);
  constructor(status: number, options: ResponseOptions);
  constructor(body: string | Uint8Array | AbstractBody);
  constructor(a: number | string | Uint8Array | AbstractBody, b?: unknown, c?: unknown, d?: unknown) {
    super();
    if (b === WIRE) {
      // Internal fast path for protocol drivers (see protocolResponse): values already parsed and checked.
      const w = wire;
      this.status = a as number;
      this.reason = w.reason;
      this.headers = w.headers!;
      this.body = w.body;
      this._trailers = null;
      this.contentLength = w.contentLength;
      this.protoMajor = w.protoMajor;
      this.protoMinor = w.protoMinor;
      this.close = false;
      this.request = w.request;
      this.url = '';
      w.headers = null;
      w.request = null;
      w.body = null;
      return;
    }
    let status: number;
    let opts: ResponseOptions;
    // A positional body, kept apart so the common (status, body, options) form copies nothing.
    let positional: Body | undefined;
    if (typeof a !== 'number') {
      if (!isBodyValue(a) || a == null) throw new ArgumentError(`Response takes a status number or a body, got ${describeType(a)}`);
      if (arguments.length > 1) throw new ArgumentError('new Response(body) takes one argument; use new Response(200, body, options)');
      status = 200;
      opts = { body: a };
    } else {
      status = checkStatus(a);
      if (arguments.length >= 3 && (!isBodyValue(b) || (b == null && c != null && isBodyValue(c)))) {
        // (status, headers, body, options?)
        checkOptionsObject(d, OPTION_KEYS, 'new Response()');
        opts = { ...((d as ResponseOptions | undefined) ?? {}), headers: b as HeadersInit, body: c as Body };
      } else if (arguments.length === 2 && !isBodyValue(b) && typeof b === 'object' && !(b instanceof Headers) && !(b instanceof Map) && !Array.isArray(b)) {
        // (status, options): no (status, headers) form, so every key must be an option's.
        checkOptionKeys(b as object, OPTION_KEYS, 'new Response()');
        opts = b as ResponseOptions;
      } else if (isBodyValue(b)) {
        const o = (c as ResponseOptions | undefined) ?? EMPTY_OPTIONS;
        if (typeof o !== 'object' || o === null) throw new ArgumentError(`Response options must be an object, got ${describeType(o)}`);
        if (o !== EMPTY_OPTIONS) checkOptionKeys(o, OPTION_KEYS, 'new Response()');
        opts = o;
        if (b !== undefined) positional = b as Body;
      } else {
        throw new ArgumentError(`Response body must be a string, Uint8Array, AbstractBody or null, got ${describeType(b)}`);
      }
    }
    this.status = status;
    if (opts.reason !== undefined && typeof opts.reason !== 'string') throw new ArgumentError(`reason must be a string, got ${describeType(opts.reason)}`);
    this.reason = opts.reason ?? '';
    this.headers = makeHeaders(opts.headers, opts.copyHeaders !== false);
    this.body = checkBody(positional !== undefined ? positional : opts.body, 'Response');
    if (typeof this.body === 'string') defaultTextType(this);
    this._trailers = opts.trailers == null ? null : makeHeaders(opts.trailers, true);
    const cl = checkLength(opts.contentLength);
    this.contentLength = cl >= 0 ? cl : bodyLength(this.body);
    this.protoMajor = checkVersion(opts.protoMajor, 'protoMajor', 1);
    this.protoMinor = checkVersion(opts.protoMinor, 'protoMinor', 1);
    this.close = opts.close === true;
    if (opts.request != null && !(opts.request instanceof Request)) throw new ArgumentError(`request must be a Request, got ${describeType(opts.request)}`);
    this.request = opts.request ?? null;
    this.url = '';
  }

  /**
   * A response whose body is `JSON.stringify(value)`: status 200 unless `init.status` says
   * otherwise, `Content-Type: application/json` unless `init.headers` set one. Throws
   * `ArgumentError` when the value has no JSON form (a function, a symbol, a BigInt, a cycle).
   * (The instance method {@link Response.json} parses a received body.)
   */
  static json(value: unknown, init: ResponseJSONInit = EMPTY_OPTIONS): Response {
    if (typeof init !== 'object' || init === null) throw new ArgumentError(`Response.json(value, init): init must be an object, got ${describeType(init)}`);
    const { status = 200, ...options } = init;
    if ('body' in options) throw new ArgumentError('Response.json(value, init): the body is the value; init takes no body');
    let text: string | undefined;
    try {
      text = JSON.stringify(value);
    } catch (err) {
      throw new ArgumentError(`Response.json: JSON.stringify failed (${(err as Error).message})`, { cause: err });
    }
    if (text === undefined) throw new ArgumentError(`Response.json: a ${typeof value} has no JSON form`);
    const headers = makeHeaders(options.headers, options.copyHeaders !== false);
    if (!headers.has('Content-Type')) headers.push('Content-Type', 'application/json');
    return new Response(status, text, { ...options, headers, copyHeaders: false });
  }

  /** Alias of {@link Response.status}. */
  get statusCode(): number {
    return this.status;
  }
  set statusCode(v: number) {
    this.status = checkStatus(v);
  }

  /** Replaces the body, recomputing the content length for string, bytes and empty bodies. */
  setBody(body: Body, contentLength = -1): void {
    this.body = checkBody(body, 'Response');
    if (typeof this.body === 'string') defaultTextType(this);
    this.contentLength = contentLength >= 0 ? contentLength : bodyLength(this.body);
  }

  /** The body decoded as UTF-8. Works on string and byte bodies; a streamed body must be read first. */
  text(): string {
    const b = this.body;
    if (b == null) return '';
    if (typeof b === 'string') return b;
    if (b instanceof Uint8Array) return Buffer.from(b.buffer, b.byteOffset, b.byteLength).toString('utf8');
    throw new ArgumentError('response.text() needs a buffered body; this response has a streamed body (read it with bodyRead or for await)');
  }

  /** The body parsed as JSON (see {@link Response.text}). */
  json<T = unknown>(): T {
    return JSON.parse(this.text()) as T;
  }

  /** `HTTP/1.1 200 OK` form, for logs and errors. */
  override toString(): string {
    return `HTTP/${this.protoMajor}.${this.protoMinor} ${this.status}${this.reason ? ` ${this.reason}` : ''}`;
  }
}

/**
 * A response with a text body and no Content-Type says `text/plain; charset=utf-8` (as
 * fastify does; bytes get none, as with node:http): set here, where the message is made, so
 * every protocol sends it. Not for an empty text, nor a status without content (1xx, 204,
 * 304: a 304's fields update a cache's stored ones).
 */
function defaultTextType(res: Response): void {
  const st = res.status;
  if (res.body === '' || st < 200 || st === 204 || st === 304 || res.headers.has('Content-Type')) return;
  res.headers.push('Content-Type', 'text/plain; charset=utf-8');
}

const WIRE = Object.freeze({}) as unknown as Body;
const wire: { reason: string; headers: Headers | null; body: Body; contentLength: number; protoMajor: number; protoMinor: number; request: Request | null } = {
  reason: '',
  headers: null,
  body: null,
  contentLength: -1,
  protoMajor: 1,
  protoMinor: 1,
  request: null,
};

/**
 * A client response from a protocol driver's parsed head, without the public constructor's
 * checks (the driver's codec validated it): `headers` is used as is (not copied), `body` is
 * `nobody` for a response without one, else the driver's streamed body, `contentLength` -1
 * when unknown. The HTTP/1 client session and the h2 plugin make their responses with it.
 */
export function protocolResponse(status: number, reason: string, headers: Headers, body: Body, contentLength: number, protoMajor: number, protoMinor: number, request: Request | null): Response {
  const w = wire;
  w.reason = reason;
  w.headers = headers;
  w.body = body;
  w.contentLength = contentLength;
  w.protoMajor = protoMajor;
  w.protoMinor = protoMinor;
  w.request = request;
  return new Response(status, WIRE);
}
