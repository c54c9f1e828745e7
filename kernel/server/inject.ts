/**
 * `server.inject(request)`: one exchange through the server's whole stack with no socket. The
 * request is written out as the HTTP/1.1 head a client would send (`serializeRequestHead`, so
 * it is checked as a client's is) and parsed back by the server's own head parser, so taps and
 * handlers see exactly what a connection would hand them. The exchange then runs on the
 * server's {@link ExchangePipeline} (`onRequest` taps, the request or stream handler,
 * `onResponseHead`, 413/500 answers, `onError`) through an in-memory {@link ExchangeWire},
 * which frames the response head with the HTTP/1.1 rules (`buildResponseHead`, parsed back as
 * a client parses it) and keeps the body bytes until the response ends.
 *
 * What only a socket has: a protocol change (an `Upgrade` request offered to `onUpgrade` taps,
 * a handler's `stream.upgrade()`) rejects with {@link NeedsSocketError}; `peerAddr()` is the
 * `remoteAddress` option (default 127.0.0.1) with port 0; the connection-level timeouts do not
 * run (there is nothing to wait for).
 */
import { Buffer } from 'node:buffer';
import { isIP } from 'node:net';
import type { Duplex } from 'node:stream';
import { ArgumentError, CanceledError, NeedsSocketError, ProtocolError } from '../errors.js';
import { checkOptionKeys } from '../option-keys.js';
import { buildResponseHead, responseFraming, type BodyKind } from '../http1/framing.js';
import { CONN_UPGRADE, HeadParser } from '../http1/head-parser.js';
import { serializeRequestHead } from '../http1/serialize.js';
import { isToken } from '../http1/tables.js';
import { describeType } from '../message/message.js';
import { Headers, type HeadersInit } from '../message/headers.js';
import { nobody } from '../message/body.js';
import { requestFromWire, type Request } from '../message/request.js';
import { protocolResponse, type Response } from '../message/response.js';
import { encodeQuery } from '../message/uri.js';
import type { ServerHooks, Tapped } from '../hooks.js';
import { dateField } from './date.js';
import type { ExchangePipeline } from './exchange.js';
import { HOLD_BYTES } from './h1-wire.js';
import type { HeadParserPool } from './parser-pool.js';
import { PeerAddr } from './peer.js';
import { statusFor } from './error-status.js';
import type { ExchangeWire, ProtocolConnection, UpgradeInfo } from './protocol-host.js';

/** A value of {@link InjectRequest.query}. */
export type InjectQueryValue = string | number | boolean;

/**
 * A request body for {@link InjectRequest}: text (sent as UTF-8), bytes, or a JSON value (an
 * object or array, sent as `JSON.stringify(value)` with `Content-Type: application/json` unless
 * the headers set one).
 */
export type InjectBody = string | Uint8Array | { readonly [key: string]: unknown } | readonly unknown[] | null;

/** What `server.inject()` and `kernel.inject()` send; only `url` is required. */
export interface InjectRequest {
  /** Request method; default `GET`. */
  method?: string;
  /** Path and query (`/users/1?full=1`), or an absolute URL whose host becomes the `Host` header. */
  url: string;
  /** Request headers. `Host` defaults to `localhost` (or the absolute URL's host); `Content-Length` is set from the body. */
  headers?: HeadersInit | null;
  /** The request body (see {@link InjectBody}). */
  body?: InjectBody;
  /** Same as `body` (light-my-request's name); give one or the other. */
  payload?: InjectBody;
  /** Query parameters appended to the url's query (`application/x-www-form-urlencoded`); an array value repeats the key. */
  query?: Readonly<Record<string, InjectQueryValue | readonly InjectQueryValue[]>> | null;
  /** Cookies sent in one `Cookie` header (after a `Cookie` header the headers hold); values are percent-encoded. */
  cookies?: Readonly<Record<string, string>> | null;
  /** The client address `peerAddr()` reports (an IPv4 or IPv6 address); default `127.0.0.1`. Its port is 0. */
  remoteAddress?: string;
}

const INJECT_KEYS = new Set<string>(['method', 'url', 'headers', 'body', 'payload', 'query', 'cookies', 'remoteAddress']);

/** @internal What inject needs from its server. */
export interface InjectHost {
  readonly pipeline: ExchangePipeline;
  readonly parsers: HeadParserPool;
  readonly hooks: Tapped<ServerHooks> | null;
  readonly streamHandler: unknown;
  readonly closing: boolean;
  /** Resolves the kernel's hooks when the server has not done so (not listening yet); null when done. */
  bindHooks(): Promise<void> | null;
  addInjected(conn: ProtocolConnection): boolean;
  removeProtocolConnection(conn: ProtocolConnection): void;
}

/** @internal Runs one injected exchange on `server`; see the module notes. */
export function inject(server: InjectHost, input: InjectRequest | string): Promise<Response> {
  let init: Checked;
  try {
    init = checkInject(input);
  } catch (err) {
    return Promise.reject(err);
  }
  const bound = server.bindHooks();
  if (bound !== null) return bound.then(() => run(server, init));
  return run(server, init);
}

function run(server: InjectHost, init: Checked): Promise<Response> {
  if (server.closing) return Promise.reject(closedError());
  let head: Buffer;
  try {
    head = Buffer.from(serializeRequestHead(init.method, init.target, init.headers, init.host, init.framing), 'latin1');
  } catch (err) {
    return Promise.reject(
      err instanceof ArgumentError ? err : new ArgumentError(`inject(): a client could not send this request: ${err instanceof Error ? err.message : String(err)}`, { cause: err }),
    );
  }
  const parser = server.parsers.take();
  let req: Request;
  let upgrade: boolean;
  try {
    parser.execute(head, 0, head.length);
    const body = init.body;
    const chunked = parser.chunked;
    req = requestFromWire(parser.method, parser.target, parser.headers, body === null && !chunked ? nobody : null, chunked ? -1 : body === null ? 0 : body.length, parser.versionMinor);
    // RFC 9110 §7.8: a request a connection would offer to the onUpgrade taps.
    upgrade = parser.upgrade && (parser.connection & CONN_UPGRADE) !== 0;
  } catch (err) {
    // A head the server refuses (past maxHeaderBytes, a transfer coding it does not know): the
    // bare answer a connection gives before any request is known, which no hook sees.
    return Promise.resolve(bareAnswer(statusFor(err), err instanceof Error ? err.message : 'bad request'));
  } finally {
    server.parsers.give(parser);
  }
  const hooks = server.hooks;
  if (upgrade && hooks !== null && hooks.onUpgrade !== null) {
    const to = req.headers.get('Upgrade') ?? 'another protocol';
    return Promise.reject(
      new NeedsSocketError(
        'upgrade',
        `inject(): the request asks to upgrade to ${to}, which needs a socket; test it against a listening server (await server.listen() or serve(), then a real client such as WebSockets.open)`,
      ),
    );
  }
  const wire = new InjectWire(req, init.body, init.remoteAddress, server);
  if (!server.addInjected(wire)) return Promise.reject(closedError());
  const done = wire.result();
  server.pipeline.runExchange(req, wire).then(
    () => wire.exchangeOver(),
    (err: unknown) => wire.fail(err),
  );
  return done;
}

function closedError(): ArgumentError {
  return new ArgumentError('inject(): the server is closing or closed; inject before close(), or make a new server');
}

/** An {@link InjectRequest} checked and in the form the head serializer takes. */
interface Checked {
  method: string;
  target: string;
  headers: Headers;
  host: string;
  body: Uint8Array | null;
  framing: number | 'none';
  remoteAddress: string;
}

/** Checks `input` and turns it into what the head serializer takes; `ArgumentError` for anything a client could not send. */
function checkInject(input: InjectRequest | string): Checked {
  const opts: InjectRequest = typeof input === 'string' ? { url: input } : input;
  if (typeof opts !== 'object' || opts === null) throw new ArgumentError(`inject(request): request must be an options object or a url string, got ${describeType(opts)}`);
  checkOptionKeys(opts, INJECT_KEYS, 'inject()');
  const method = opts.method ?? 'GET';
  if (typeof method !== 'string' || !isToken(method))
    throw new ArgumentError(`inject(): method must be a token such as 'GET', got ${typeof method === 'string' ? JSON.stringify(method) : describeType(method)}`);
  const url = opts.url;
  if (typeof url !== 'string' || url === '') throw new ArgumentError(`inject(): url must be a path such as '/users?id=1' or an absolute http(s) URL, got ${describeType(url)}`);
  let target = url;
  // The Host a client would send, unless the headers carry one.
  let host = 'localhost';
  if (!url.startsWith('/') && url !== '*') {
    let u: URL;
    try {
      u = new URL(url);
    } catch {
      throw new ArgumentError(`inject(): url must be a path such as '/users?id=1' or an absolute http(s) URL, got ${JSON.stringify(url)}`);
    }
    if (u.protocol !== 'http:' && u.protocol !== 'https:') throw new ArgumentError(`inject(): url must be http: or https:, got ${u.protocol}`);
    target = `${u.pathname}${u.search}`;
    host = u.host;
  } else {
    // A fragment never leaves a client.
    const hash = url.indexOf('#');
    if (hash >= 0) target = url.slice(0, hash);
  }
  if (opts.query != null) target = withQuery(target, opts.query);
  const headers = new Headers(opts.headers ?? null);
  if (opts.cookies != null) addCookies(headers, opts.cookies);
  if (opts.body !== undefined && opts.payload !== undefined) throw new ArgumentError('inject(): give the body as body or as payload, not both');
  const body = requestBody(opts.body !== undefined ? opts.body : opts.payload, headers);
  // The body goes with its own Content-Length; a Transfer-Encoding the headers set is sent as
  // given (the body then reads as that framing's content).
  headers.delete('Content-Length');
  const framing: Checked['framing'] = body === null || headers.has('Transfer-Encoding') ? 'none' : body.length;
  const remote = opts.remoteAddress ?? '127.0.0.1';
  if (typeof remote !== 'string' || isIP(remote) === 0) throw new ArgumentError(`inject(): remoteAddress must be an IPv4 or IPv6 address, got ${describeType(remote)}`);
  return { method, target, headers, host, body, framing, remoteAddress: remote };
}

function withQuery(target: string, query: NonNullable<InjectRequest['query']>): string {
  if (typeof query !== 'object') throw new ArgumentError(`inject(): query must be an object, got ${describeType(query)}`);
  const pairs: [string, string][] = [];
  for (const key of Object.keys(query)) {
    const v = query[key]!;
    for (const one of Array.isArray(v) ? (v as readonly InjectQueryValue[]) : [v as InjectQueryValue]) {
      if (typeof one !== 'string' && typeof one !== 'number' && typeof one !== 'boolean') {
        throw new ArgumentError(`inject(): query.${key} must be a string, number or boolean (or an array of them), got ${describeType(one)}`);
      }
      pairs.push([key, String(one)]);
    }
  }
  if (pairs.length === 0) return target;
  return `${target}${target.includes('?') ? '&' : '?'}${encodeQuery(pairs)}`;
}

function addCookies(headers: Headers, cookies: NonNullable<InjectRequest['cookies']>): void {
  if (typeof cookies !== 'object') throw new ArgumentError(`inject(): cookies must be an object, got ${describeType(cookies)}`);
  let s = '';
  for (const name of Object.keys(cookies)) {
    const value = cookies[name];
    if (!isToken(name)) throw new ArgumentError(`inject(): cookie name ${JSON.stringify(name)} is not a token (RFC 6265 §4.1.1)`);
    if (typeof value !== 'string') throw new ArgumentError(`inject(): cookies.${name} must be a string, got ${describeType(value)}`);
    s += `${s === '' ? '' : '; '}${name}=${encodeURIComponent(value)}`;
  }
  if (s === '') return;
  const given = headers.get('Cookie');
  headers.set('Cookie', given === undefined || given === '' ? s : `${given}; ${s}`);
}

function requestBody(body: InjectBody | undefined, headers: Headers): Uint8Array | null {
  if (body === undefined || body === null) return null;
  if (typeof body === 'string') return Buffer.from(body, 'utf8');
  if (body instanceof Uint8Array) return body;
  if (typeof body === 'object') {
    let text: string;
    try {
      text = JSON.stringify(body);
    } catch (err) {
      throw new ArgumentError(`inject(): the body has no JSON form (${(err as Error).message})`, { cause: err });
    }
    if (!headers.has('Content-Type')) headers.set('Content-Type', 'application/json');
    return Buffer.from(text, 'utf8');
  }
  throw new ArgumentError(`inject(): body must be a string, Uint8Array, or an object or array (sent as JSON), got ${describeType(body)}`);
}

/** The response-head parser every injected response is read back with (used synchronously, so one does). */
let responseParser: HeadParser | null = null;

/** A response head as a client reads it off an HTTP/1.1 connection. */
interface ReadHead {
  status: number;
  reason: string;
  headers: Headers;
}

/**
 * The head as the HTTP/1.1 wire writes it (same checks, same framing fields, a Date unless
 * `headers` has one), read back as a client reads it: what the caller sees is what a
 * connection would have carried. Throws `ArgumentError` for what the wire would refuse.
 */
function readBackHead(status: number, reason: string, headers: Headers, kind: BodyKind, contentLength: number, method: string): ReadHead {
  const text = buildResponseHead(status, reason, headers, kind, contentLength, headers.has('Date') ? '' : dateField(), method);
  const p = (responseParser ??= new HeadParser('response'));
  const bytes = Buffer.from(text, 'latin1');
  try {
    p.execute(bytes, 0, bytes.length);
    return { status: p.status, reason: p.reason, headers: p.headers };
  } finally {
    // Ready for the next head (and its headers are this response's alone).
    p.reset();
  }
}

/** The answer a connection gives to a head it cannot take, before any request is known. */
function bareAnswer(status: number, message: string): Response {
  const text = message === '' ? '' : `${message}\n`;
  const body = Buffer.from(text, 'utf8');
  const given = new Headers(1);
  given.push('Content-Type', 'text/plain; charset=utf-8');
  const head = readBackHead(status, '', given, 'length', body.length, 'GET');
  return protocolResponse(head.status, head.reason, head.headers, body, body.length, 1, 1, null);
}

const EMPTY = Buffer.alloc(0);

/**
 * The wire of one injected exchange: the request body from memory, the response head framed
 * as HTTP/1.1 frames it and parsed back, the body kept until its end. Like the HTTP/1.1 wire,
 * a stream handler's fixed-length response is held (uncommitted) up to `HOLD_BYTES`, so a
 * handler that fails before then gets the same clean 500 it would get on a connection.
 */
class InjectWire implements ExchangeWire, ProtocolConnection {
  readonly protocol = 'http/1.1';
  readonly bodyChunk = 65536;
  readonly bodyError: unknown = null;
  private readonly req: Request;
  private body: Uint8Array | null;
  private readonly remote: string;
  private readonly host: InjectHost;
  private readonly hold: boolean;
  // The response.
  private kind: BodyKind = 'none';
  private status = 0;
  private reason = '';
  private headers: Headers | null = null;
  private trailers: Headers | null = null;
  private chunks: Uint8Array[] = [];
  private bytes = 0;
  private out = false;
  private done = false;
  private destroyed = false;
  /** Why the exchange cannot resolve to a response (the handler abandoned it, an upgrade, a forced close). */
  private failure: unknown = null;
  private resolve!: (res: Response) => void;
  private reject!: (err: unknown) => void;
  private settled = false;

  constructor(req: Request, body: Uint8Array | null, remote: string, host: InjectHost) {
    this.req = req;
    this.body = body;
    this.remote = remote;
    this.host = host;
    this.hold = host.streamHandler !== null;
  }

  /** What the inject resolves to. */
  result(): Promise<Response> {
    return new Promise<Response>((resolve, reject) => {
      this.resolve = resolve;
      this.reject = reject;
    });
  }

  get writable(): boolean {
    return !this.destroyed;
  }

  get committed(): boolean {
    return this.out;
  }

  peerAddr(): PeerAddr {
    return new PeerAddr(this.remote, 0);
  }

  readBody(): Promise<Uint8Array | null> {
    const b = this.body;
    this.body = null;
    return Promise.resolve(b);
  }

  discardBody(): void {
    this.body = null;
  }

  sendContinue(): void {}

  takeSocket(): { socket: Duplex } & UpgradeInfo {
    const err = new NeedsSocketError(
      'stream.upgrade()',
      'inject(): the handler called stream.upgrade(), which needs a socket; test the upgrade against a listening server (await server.listen() or listen(), then a real client such as WebSockets.open)',
    );
    this.failure ??= err;
    throw err;
  }

  // ---- the response ------------------------------------------------------------------------

  head(status: number, headers: Headers, contentLength: number, end: boolean, _trailers = true, reason = ''): void {
    if (this.done || this.out) return;
    const method = this.req.method;
    const kind = responseFraming(status, method, contentLength, 1);
    const read = readBackHead(status, reason, headers, kind, contentLength, method);
    this.status = read.status;
    this.reason = read.reason;
    this.headers = read.headers;
    this.kind = kind;
    this.chunks = [];
    this.bytes = 0;
    this.trailers = null;
    if (end || kind === 'none') {
      if (end && !this.hold) this.finish();
      return;
    }
    // A chunked head goes out at once on a connection: from here the response is committed.
    if (kind !== 'length') this.out = true;
  }

  data(bytes: Uint8Array | string, end: boolean, owned = false): Promise<void> | undefined {
    if (this.done) return undefined;
    if (this.kind === 'none') return end ? this.end(null) : undefined;
    const buf = typeof bytes === 'string' ? Buffer.from(bytes, 'utf8') : owned || end ? bytes : Buffer.from(bytes);
    if (buf.length > 0) {
      this.chunks.push(buf);
      this.bytes += buf.length;
    }
    if (!this.hold || this.bytes > HOLD_BYTES) this.out = true;
    if (end) this.finish();
    return undefined;
  }

  ready(): Promise<void> | undefined {
    return undefined;
  }

  end(trailers: Headers | null): Promise<void> | undefined {
    if (this.done) return undefined;
    // Only a chunked body carries trailers on HTTP/1.1.
    if (trailers !== null && this.kind === 'chunked') this.trailers = trailers.clone();
    this.finish();
    return undefined;
  }

  abort(error: unknown): void {
    if (this.done) return;
    this.done = true;
    this.out = true;
    // As a connection that closed: nothing more is written for this exchange.
    this.destroyed = true;
    this.failure ??= new ProtocolError(`inject(): the server abandoned the response after part of it was written${error instanceof Error ? `: ${error.message}` : ''}`, { cause: error });
  }

  private finish(): void {
    this.done = true;
    this.out = true;
  }

  // ---- the exchange's end ------------------------------------------------------------------

  /** The pipeline is done with the exchange: resolve with the response, or reject with why there is none. */
  exchangeOver(): void {
    if (this.settled) return;
    this.settled = true;
    this.host.removeProtocolConnection(this);
    if (this.failure !== null) {
      this.reject(this.failure);
      return;
    }
    if (!this.done || this.headers === null) {
      this.reject(new ProtocolError('inject(): the exchange ended without a complete response'));
      return;
    }
    const c = this.chunks;
    const body = c.length === 0 ? EMPTY : c.length === 1 ? c[0]! : Buffer.concat(c, this.bytes);
    const res = protocolResponse(this.status, this.reason, this.headers, body, body.length, 1, 1, this.req);
    if (this.trailers !== null) res.trailers = this.trailers;
    this.resolve(res);
  }

  /** The pipeline itself failed (it never should: it reports and answers errors). */
  fail(err: unknown): void {
    this.failure ??= err;
    this.exchangeOver();
  }

  // ---- ProtocolConnection: the server's close ------------------------------------------------

  /** A graceful close lets the exchange finish (its grace period then ends a streamed body). */
  shutdown(): void {}

  /** `forceClose()`, or a graceful close past its grace: the exchange is dropped and the inject rejects. */
  destroy(): void {
    if (this.destroyed || this.settled) return;
    this.destroyed = true;
    this.host.pipeline.closeStreamedBody(this);
    this.req.ctx.cancel('the server was closed');
    this.failure ??= new CanceledError('inject(): the server was closed before the response ended');
    this.exchangeOver();
  }
}
