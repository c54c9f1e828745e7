/**
 * The HTTP/2 client session: one node:http2 session on a connection the kernel's pool opened
 * (TLS with ALPN `h2`, or plain TCP with h2c prior knowledge), implementing the kernel's
 * `ClientSession` so the pool multiplexes exchanges over it.
 *
 * - capacity: the server's SETTINGS_MAX_CONCURRENT_STREAMS (100 until its SETTINGS arrive, as
 *   Go assumes; capped at 1000) minus the streams in flight; 0 after GOAWAY or close;
 * - GOAWAY: the pool drops the session at once (new requests get a new connection); streams
 *   the server did not process (REFUSED_STREAM, or past GOAWAY's last stream id) fail with an
 *   error marked `kUnprocessed`, which the client sends again on another connection;
 * - an idle session is pinged every 30 s; a ping without an answer within 15 s closes it and
 *   drops it from the pool (both times are the h2 plugin's options `pingIntervalMs`, `pingTimeoutMs`);
 * - per exchange: `responseHeaderTimeout`, `readIdleTimeout`, `writeIdleTimeout`, the request's
 *   deadline and cancellation (which resets only that stream) apply as over HTTP/1.
 */
import { Buffer } from 'node:buffer';
import { performance } from 'node:perf_hooks';
import type { ClientHttp2Session, ClientHttp2Stream, IncomingHttpHeaders, OutgoingHttpHeaders } from 'node:http2';
import type { Duplex } from 'node:stream';
import {
  AbstractBody,
  getCallOptions,
  hostPort,
  nobody,
  ParseError,
  ProtocolError,
  type Response,
  ResponseTooLargeError,
  TimeoutError,
  TLSTransportError,
  type CancelListener,
  type Request,
  type RequestContext,
} from '../../kernel/index.js';
import {
  checkTrailers,
  DEFAULT_MAX_HEADER_BYTES,
  framingPlan,
  headersFromFields,
  kBufferBody,
  kHeadGate,
  DueTimer,
  kUnprocessed,
  protocolResponse,
  requestFraming,
  stopUpload,
  type ClientSession,
  type ExchangeOptions,
  type FramingPlan,
  type SessionInfo,
} from '../../kernel/protocol.js';
import { H2ResponseBody, type BodySource } from './client-body.js';
import { H2StreamResetError } from './errors.js';
import { addWireHeaders, headerListSize, headersFromObject, trailersFromObject, wireTrailers, type H2HeaderObject } from './headers.js';
import { listenQuietly, sinkErrors } from './error-sink.js';
import { loadHttp2 } from './server-connection.js';
import { HTTP2Settings } from './settings.js';

const NGHTTP2_CANCEL = 8;
const EMPTY = Buffer.alloc(0);
const NGHTTP2_REFUSED_STREAM = 7;
const NGHTTP2_NO_ERROR = 0;
/** Bytes of a streamed request body read at a time: HTTP/2's default frame size, node's write buffer mark. */
const UPLOAD_CHUNK = 16384;
/** Streams assumed before the server's SETTINGS arrive (Go's http2 transport assumes 100 too). */
const INITIAL_MAX_STREAMS = 100;
/** Upper bound on concurrent streams even when the server allows more. */
const MAX_STREAMS_CAP = 1000;
/** Default idle time before a session is pinged, and how long the answer may take. */
export const DEFAULT_PING_INTERVAL_MS = 30_000;
export const DEFAULT_PING_TIMEOUT_MS = 15_000;

/** What {@link connectH2Session} takes beyond the connection itself. */
export interface H2SessionOptions {
  /** Flow-control windows. */
  readonly settings: HTTP2Settings;
  /** Idle time (ms) before the session is pinged; default {@link DEFAULT_PING_INTERVAL_MS}. */
  readonly pingIntervalMs?: number;
  /** How long (ms) a ping may go unanswered before the session is closed; default {@link DEFAULT_PING_TIMEOUT_MS}. */
  readonly pingTimeoutMs?: number;
}

/** The idle-ping timing of client sessions (the h2 plugin's options). */
export interface H2PingOptions {
  /** Idle time (ms) before a session is pinged. */
  readonly pingIntervalMs?: number;
  /** How long (ms) a ping may go unanswered before the session is closed and leaves the pool. */
  readonly pingTimeoutMs?: number;
}

/** Starts an HTTP/2 client session on a connected socket (the `client.session` tap's answer). */
export function connectH2Session(socket: Duplex, info: SessionInfo, ping: H2PingOptions = {}): H2ClientSession {
  const o = info.ctx !== undefined ? getCallOptions(info.ctx) : {};
  const settings = HTTP2Settings.from((o as { http2Settings?: unknown }).http2Settings);
  return new H2ClientSession(socket, info, { settings, pingIntervalMs: ping.pingIntervalMs, pingTimeoutMs: ping.pingTimeoutMs });
}

/**
 * Fails a request nothing of which was sent: its streamed body is stopped (a body that cannot be
 * replayed is never sent again, so nothing else would release its source).
 */
function notSent(request: Request, err: Error): Promise<never> {
  const b = request.body;
  if (b instanceof AbstractBody) stopUpload(b, null);
  return Promise.reject(err);
}

function unprocessed(err: Error): Error {
  (err as unknown as Record<symbol, boolean>)[kUnprocessed] = true;
  return err;
}

/** @internal An HTTP/2 client connection as the kernel's pool sees it. */
export class H2ClientSession implements ClientSession {
  readonly protocol = 'h2';
  readonly multiplexed = true;
  readonly headGate = true;
  readonly session: ClientHttp2Session;
  /** @internal */
  idleSince = performance.now();
  /** The connection's socket (see ClientSession.socket). */
  readonly socket: Duplex;
  private readonly info: SessionInfo;
  private readonly scheme: string;
  private readonly authority: string;
  private dead = false;
  /** Refilled by each request's headers (made synchronously, so one serves the session). */
  private readonly framing: FramingPlan = framingPlan();
  private goingAway = false;
  /** Streams with a higher id were not processed by the server (GOAWAY). */
  private lastStreamId = 2 ** 31;
  private active = 0;
  private maxStreams = INITIAL_MAX_STREAMS;
  private pingTimer: NodeJS.Timeout | null = null;
  private readonly pingInterval: number;
  private readonly pingTimeout: number;
  private closedPromise: Promise<void>;
  /** What broke the connection (a socket or session error), once it did. */
  private failure: Error | null = null;
  /**
   * Exchanges waiting for their response head under a `responseHeaderTimeout`, soonest due
   * first (a list through the exchanges themselves), and the one timer for the soonest: a
   * Timeout per request, armed and cleared, was a visible part of each exchange's cost.
   */
  private headFirst: H2ClientExchange | null = null;
  private headLast: H2ClientExchange | null = null;
  private readonly headTimer = new DueTimer((now) => this.onHeadTimer(now));

  constructor(socket: Duplex, info: SessionInfo, options: H2SessionOptions) {
    this.socket = socket;
    this.info = info;
    this.pingInterval = options.pingIntervalMs ?? DEFAULT_PING_INTERVAL_MS;
    this.pingTimeout = options.pingTimeoutMs ?? DEFAULT_PING_TIMEOUT_MS;
    const c = info.connect;
    this.scheme = c.protocol === 'https:' ? 'https' : 'http';
    const dflt = c.protocol === 'https:' ? 443 : 80;
    this.authority = c.port === dflt ? hostPort(c.host, c.port).replace(/:\d+$/, '') : hostPort(c.host, c.port);
    const h2 = loadHttp2();
    this.session = h2.connect(`${c.protocol}//${hostPort(c.host, c.port)}`, {
      createConnection: () => socket,
      settings: { enablePush: false, initialWindowSize: options.settings.initialWindowSize },
      maxHeaderListPairs: 4096,
    });
    const s = this.session;
    s.on('error', (err: Error) => {
      this.failure ??= err;
    });
    s.on('remoteSettings', (settings) => {
      const m = settings.maxConcurrentStreams;
      this.maxStreams = m === undefined ? MAX_STREAMS_CAP : Math.min(m, MAX_STREAMS_CAP);
    });
    s.on('goaway', (_code: number, lastStreamId: number) => {
      this.goingAway = true;
      this.lastStreamId = lastStreamId;
      this.leavePool();
    });
    this.closedPromise = new Promise((resolve) => {
      s.once('close', () => {
        this.dead = true;
        this.clearPing();
        this.headTimer.clear();
        this.leavePool();
        resolve();
      });
    });
    const win = options.settings.connectionWindowSize;
    if (win > 65535) {
      try {
        s.setLocalWindowSize(win);
      } catch {
        // The session died during setup: 'close' follows.
      }
    }
    this.armPing();
  }

  get closed(): boolean {
    return this.dead || this.goingAway || this.session.closed || this.session.destroyed;
  }

  capacity(): number {
    if (this.closed) return 0;
    return Math.max(0, this.maxStreams - this.active);
  }

  isIdle(): boolean {
    return this.active === 0;
  }

  close(): Promise<void> {
    if (!this.session.closed && !this.session.destroyed) this.session.close();
    this.leavePool();
    return this.closedPromise;
  }

  destroy(error?: Error): void {
    this.dead = true;
    this.session.destroy(error);
    this.socket.destroy();
  }

  private leavePool(): void {
    this.info.pool?.discard(this);
  }

  dispatch(request: Request, ctx: RequestContext, options?: ExchangeOptions): Promise<Response> {
    if (this.closed) return notSent(request, unprocessed(new ProtocolError('the HTTP/2 connection is closing (GOAWAY); the request was not sent')));
    let headers: H2HeaderObject;
    try {
      headers = this.requestHeaders(request);
    } catch (err) {
      // Framing headers that contradict the body are refused before anything is sent.
      return notSent(request, err as Error);
    }
    const body = request.body;
    const streamed = body instanceof AbstractBody;
    const bytes = streamed || body === null ? null : typeof body === 'string' ? Buffer.from(body, 'utf8') : body;
    const hasBody = streamed || (bytes !== null && bytes.length > 0);
    const trailers = request.hasTrailers;
    if (trailers) {
      // Refused before anything is sent, as over HTTP/1 (RFC 9110 §6.5.1).
      try {
        checkTrailers(request.trailers);
      } catch (err) {
        return notSent(request, err as Error);
      }
    }
    let stream: ClientHttp2Stream;
    try {
      // No options object for the common body-less request: node:http2 copies and extends
      // whatever it gets (priority defaults), which costs microseconds per request when given.
      stream = this.session.request(headers as OutgoingHttpHeaders, hasBody || trailers ? (trailers ? TRAILER_OPTIONS : BODY_OPTIONS) : undefined);
      if (!hasBody && !trailers && !stream.writableEnded) stream.end();
    } catch (err) {
      // GOAWAY arrived or the session died between the pool's check and here: nothing was sent.
      return notSent(request, unprocessed(err instanceof Error ? err : new ProtocolError(String(err))));
    }
    // A session with streams in flight keeps the process alive; an idle one does not (streamClosed).
    if (this.active++ === 0) this.session.ref();
    this.clearPing();
    const t = options ?? NO_TIMEOUTS;
    const ex = new H2ClientExchange(this, stream, request, ctx, t, bufferBound(t), hasBody || trailers);
    if (streamed) ex.holdUpload(body);
    if (trailers) {
      stream.once('wantTrailers', () => {
        // Checked again: a streamed body may add trailers while it is read.
        let out: H2HeaderObject;
        try {
          out = wireTrailers(request.trailers);
        } catch (err) {
          ex.failWith(err);
          return;
        }
        stream.sendTrailers(out);
      });
    }
    if (hasBody) {
      const send = (): void => {
        if (streamed) ex.writeStreamed(body as AbstractBody);
        else stream.end(bytes);
      };
      // As over HTTP/1.1: with `Expect: 100-continue` the body waits for the server's 100
      // (node's 'continue'), at most expectContinueTimeout (default 1 s); a final response
      // first means it is not sent at all.
      if (request.headers.has('Expect')) ex.awaitContinue(t.expectContinueTimeout > 0 ? t.expectContinueTimeout : 1000, send);
      else send();
    }
    return ex.promise;
  }

  private requestHeaders(req: Request): H2HeaderObject {
    const host = req.headers.get('Host');
    const out: H2HeaderObject = {
      ':method': req.method,
      ':scheme': this.scheme,
      ':authority': host ?? req.host ?? this.authority,
      ':path': req.target === '' ? '/' : req.target,
    };
    addWireHeaders(req.headers, out);
    const body = req.body;
    const len = req.contentLength >= 0 ? req.contentLength : body instanceof AbstractBody ? body.length : -1;
    // HTTP/1.1's rules decide (and check the caller's framing headers); the field is the
    // content-length the DATA must add up to (RFC 9113 §8.1.1), never a coding.
    const p = requestFraming(req.method, req.headers, len, this.framing);
    if (typeof p.field === 'number') out['content-length'] = p.field;
    else if (p.kind === 'length' && req.headers.has('Content-Length')) out['content-length'] = p.length;
    return out;
  }

  /** @internal A stream of this session closed. */
  streamClosed(): void {
    this.active--;
    if (this.active === 0) {
      this.idleSince = performance.now();
      this.session.unref();
      this.armPing();
    }
  }

  /**
   * @internal The error a stream cut by a broken connection fails with: on TLS a
   * {@link TLSTransportError} (its cause what broke), else what broke; null while the
   * connection is whole (the stream was reset by the server itself).
   */
  transportError(): Error | null {
    const f = this.failure ?? (this.socket.destroyed && this.socket.errored !== null ? this.socket.errored : null);
    if (f === null) return null;
    return this.scheme === 'https' ? new TLSTransportError(f) : f;
  }

  /** @internal True when a stream with this id was never processed (past GOAWAY's last id). */
  wasRefused(id: number | undefined): boolean {
    return id === undefined || id > this.lastStreamId;
  }

  /** @internal Fails `ex` with its `responseHeaderTimeout` unless its head arrives by `ex.headDue` (see {@link H2ClientSession.unwatchHead}). */
  watchHead(ex: H2ClientExchange): void {
    // Most exchanges share one timeout, so the newest is due last: found from the end.
    let after = this.headLast;
    while (after !== null && after.headDue > ex.headDue) after = after.headPrev;
    const before = after === null ? this.headFirst : after.headNext;
    ex.headPrev = after;
    ex.headNext = before;
    if (after === null) this.headFirst = ex;
    else after.headNext = ex;
    if (before === null) this.headLast = ex;
    else before.headPrev = ex;
    // The timer stays armed while exchanges come and go; only a sooner head moves it.
    if (!this.headTimer.armed || (after === null && ex.headDue < this.headTimer.due)) this.headTimer.arm(ex.headDue);
  }

  /** @internal `ex` got its head, or ended: it is no longer watched. */
  unwatchHead(ex: H2ClientExchange): void {
    const prev = ex.headPrev;
    const next = ex.headNext;
    if (prev === null) this.headFirst = next;
    else prev.headNext = next;
    if (next === null) this.headLast = prev;
    else next.headPrev = prev;
    ex.headPrev = ex.headNext = null;
    ex.headDue = 0;
  }

  /** The head timer reached `now` (see DueTimer): fails each exchange whose time is up, and waits for the next one. */
  private onHeadTimer(now: number): void {
    let ex = this.headFirst;
    while (ex !== null && ex.headDue - now < 1) {
      this.unwatchHead(ex);
      ex.onHeadTimeout();
      ex = this.headFirst;
    }
    if (ex !== null && !this.dead) this.headTimer.arm(ex.headDue, now);
  }

  private armPing(): void {
    if (this.dead || this.pingTimer !== null) return;
    this.pingTimer = setTimeout(this.onPingTimer, this.pingInterval);
    this.pingTimer.unref();
  }

  private clearPing(): void {
    if (this.pingTimer !== null) clearTimeout(this.pingTimer);
    this.pingTimer = null;
  }

  private readonly onPingTimer = (): void => {
    this.pingTimer = null;
    if (this.closed || this.active > 0) return;
    // A dead peer (a NAT that dropped the mapping) is found here, not by the next request.
    const timeout = setTimeout(() => {
      // Out of the pool now: 'close' follows the destroy, but a request must not pick it meanwhile.
      this.dead = true;
      this.leavePool();
      this.destroy(new ProtocolError(`HTTP/2 ping not answered within ${this.pingTimeout} ms`));
    }, this.pingTimeout);
    timeout.unref();
    const sent = this.session.ping((err) => {
      clearTimeout(timeout);
      if (err !== null) {
        this.destroy(err);
        return;
      }
      this.armPing();
    });
    if (!sent) clearTimeout(timeout);
  };
}

// node:http2 copies these (`{ ...options }`) and only reads the copy. Not frozen: V8 clones a
// frozen object on a slow path (a runtime call per request).
const BODY_OPTIONS = { endStream: false };
const TRAILER_OPTIONS = { endStream: false, waitForTrailers: true };

/** The bound on a body the exchange gathers itself (see kBufferBody), or -1 when it hands out a streamed body. */
function bufferBound(t: ExchangeOptions): number {
  const b = (t as unknown as Record<symbol, unknown>)[kBufferBody];
  return typeof b === 'number' ? b : b === true ? Infinity : -1;
}

/** The client's head taps to run before gathering the body (see kHeadGate), or null. */
type HeadGate = (res: Response, ctx: RequestContext) => boolean;

function headGateOf(t: ExchangeOptions): HeadGate | null {
  const g = (t as unknown as Record<symbol, unknown>)[kHeadGate];
  return typeof g === 'function' ? (g as HeadGate) : null;
}

const NO_TIMEOUTS: ExchangeOptions = Object.freeze({ responseHeaderTimeout: 0, readIdleTimeout: 0, writeIdleTimeout: 0, expectContinueTimeout: 0 });

/** One request/response on an {@link H2ClientSession}. */
class H2ClientExchange implements BodySource, CancelListener {
  readonly promise: Promise<Response>;
  private resolveHead!: (r: Response) => void;
  private rejectHead!: (e: unknown) => void;
  private readonly owner: H2ClientSession;
  private readonly stream: ClientHttp2Stream;
  private readonly req: Request;
  private readonly t: ExchangeOptions;
  /** When the exchange began, for timeout messages: read only when a timer is armed (a clock read costs). */
  private started = 0;
  private headDone = false;
  private finished = false;
  private body: H2ResponseBody | null = null;
  private timer: NodeJS.Timeout | null = null;
  /** @internal When the response head is due under `responseHeaderTimeout` (0: not watched); see {@link H2ClientSession.watchHead}. */
  headDue = 0;
  /** @internal Neighbours in the session's list of exchanges waiting for their head. */
  headPrev: H2ClientExchange | null = null;
  /** @internal */
  headNext: H2ClientExchange | null = null;
  private timerWhat = '';
  private timerMs = 0;
  private deadlineTimer: NodeJS.Timeout | null = null;
  /** The call's context while this exchange listens for its cancellation. */
  private ctx: RequestContext | null = null;
  private writeTimer: NodeJS.Timeout | null = null;
  private drainWait: (() => void) | null = null;
  /** Buffering: `promise` resolves with the body complete (see kBufferBody). */
  private readonly whole: boolean;
  /** Buffering: the call's bound on the body (Infinity: none). */
  private readonly limit: number;
  /**
   * Buffering: the client's head taps (kHeadGate), run on the head with a streamed body; the
   * bytes are gathered here only when they leave that body alone.
   */
  private readonly gate: HeadGate | null;
  /** Buffering: the response whose body is still arriving (the head promise is not settled yet). */
  private pending: Response | null = null;
  /** Buffering: the body so far (one chunk, or several), gathered here instead of in a FlowBody. */
  private gathered: Buffer | Buffer[] | null = null;
  /** Sends the request body once the server says 100 (or the wait is over); null when not waiting. */
  private continueSend: (() => void) | null = null;
  private continueTimer: NodeJS.Timeout | null = null;
  private continueGo: (() => void) | null = null;
  /** A final response came before 100: the request body is never sent (the stream is closed with NO_ERROR at the end). */
  private bodySkipped = false;
  /** The streamed request body until it was sent in full: closed when the exchange ends first. */
  private upload: AbstractBody | null = null;
  /** The response's content-length (-1: none, or no body may follow), checked against the DATA received. */
  private declared = -1;
  /** Response body bytes received. */
  private received = 0;

  /** `bound`: see {@link bufferBound}. */
  constructor(owner: H2ClientSession, stream: ClientHttp2Stream, req: Request, ctx: RequestContext, t: ExchangeOptions, bound: number, upload: boolean) {
    this.owner = owner;
    this.whole = bound >= 0;
    this.limit = bound;
    this.gate = this.whole ? headGateOf(t) : null;
    this.stream = stream;
    this.req = req;
    this.t = t;
    this.promise = new Promise<Response>((resolve, reject) => {
      this.resolveHead = resolve;
      this.rejectHead = reject;
    });
    (stream as Tagged)[kExchange] = this;
    listenQuietly(stream, 'response', streamResponse);
    stream.on('data', streamData);
    listenQuietly(stream, 'trailers', streamTrailers);
    // Without a request body the stream closes as soon as the response ends: 'close' (after
    // 'end') finishes the exchange, one listener and one event fewer per request. With one,
    // the response can end while the upload goes on, so 'end' finishes it.
    if (upload) listenQuietly(stream, 'end', streamEnd);
    listenQuietly(stream, 'close', streamClose);
    sinkErrors(stream);
    if (ctx.canceled || ctx.expired()) {
      this.fail(ctx.error()!);
      return;
    }
    this.ctx = ctx;
    ctx.addCancelListener(this);
    if (ctx.deadline > 0 || t.responseHeaderTimeout > 0 || t.readIdleTimeout > 0 || t.writeIdleTimeout > 0) this.started = performance.now();
    if (ctx.deadline > 0) {
      this.deadlineTimer = setTimeout(() => this.onDeadline(), Math.max(0, ctx.deadline - performance.now()));
      this.deadlineTimer.unref();
    }
    if (t.responseHeaderTimeout > 0) {
      this.headDue = this.started + t.responseHeaderTimeout;
      this.owner.watchHead(this);
    } else if (t.readIdleTimeout > 0) this.arm(t.readIdleTimeout, 'readIdleTimeout');
  }

  /**
   * Holds the request body until the server's `100 Continue`, at most `ms`; `send` writes it.
   * A final response first drops it (see {@link H2ClientExchange.onResponse}).
   */
  awaitContinue(ms: number, send: () => void): void {
    if (this.finished) return;
    // Made here, not per exchange: most requests never wait for 100.
    const go = (): void => {
      const s = this.continueSend;
      this.stopContinue();
      if (s !== null && !this.finished && !this.stream.destroyed) s();
    };
    this.continueSend = send;
    this.continueGo = go;
    this.stream.once('continue', go);
    this.continueTimer = setTimeout(go, ms);
    this.continueTimer.unref();
  }

  private stopContinue(): void {
    this.continueSend = null;
    if (this.continueTimer !== null) clearTimeout(this.continueTimer);
    this.continueTimer = null;
    if (this.continueGo !== null) this.stream.removeListener('continue', this.continueGo);
    this.continueGo = null;
  }

  /**
   * Takes charge of the streamed request body: whatever ends the exchange before the body was
   * sent in full (a reset, a timeout, cancellation, the response first) closes it, so its
   * source is released and a read waiting on it ends.
   */
  holdUpload(body: AbstractBody): void {
    if (this.finished) body.close();
    else this.upload = body;
  }

  /** Closes the request body if it is still being sent; `err` is why the exchange failed (a writer waiting in `open()` gets it). */
  private dropUpload(err: Error | null): void {
    const b = this.upload;
    if (b === null) return;
    this.upload = null;
    stopUpload(b, err);
  }

  /** Sends a streamed request body with flow control; a failure resets the stream. */
  writeStreamed(body: AbstractBody): void {
    this.pump(body).catch((err: unknown) => this.fail(err));
  }

  private async pump(body: AbstractBody): Promise<void> {
    const s = this.stream;
    try {
      for (;;) {
        // One frame's worth at a time, in a buffer given to the stream (a short read is copied
        // to its size): a server that grants no window holds 16 KiB of the body, not a read
        // buffer and its copy.
        const buf = Buffer.allocUnsafe(UPLOAD_CHUNK);
        const n = await body.read(buf);
        if (n === 0) break;
        if (this.finished || s.destroyed) return;
        if (!s.write(n * 2 >= UPLOAD_CHUNK ? buf.subarray(0, n) : Buffer.from(buf.subarray(0, n)))) await this.waitDrain();
      }
      if (!this.finished && !s.destroyed) s.end();
    } finally {
      if (this.upload === body) this.upload = null;
      body.close();
    }
  }

  private waitDrain(): Promise<void> {
    const ms = this.t.writeIdleTimeout;
    if (ms > 0) {
      this.writeTimer = setTimeout(() => {
        this.writeTimer = null;
        this.fail(new TimeoutError('request', ms, Math.round(performance.now() - this.started), `writeIdleTimeout of ${ms} ms passed (${this.req.method} ${this.req.url || this.req.target})`));
      }, ms);
      this.writeTimer.unref();
    }
    return new Promise((resolve) => {
      this.drainWait = resolve;
      this.stream.once('drain', () => this.onDrain());
    });
  }

  /** @internal */
  onDrain(): void {
    if (this.writeTimer !== null) clearTimeout(this.writeTimer);
    this.writeTimer = null;
    const w = this.drainWait;
    this.drainWait = null;
    w?.();
  }

  /** @internal */
  onResponse(headers: IncomingHttpHeaders, flags: number, raw?: string[]): void {
    if (this.finished || this.headDone) return;
    this.headDone = true;
    this.disarm();
    if (this.continueSend !== null) {
      // The final answer came while the body waited for 100: it is not sent (RFC 9110 §10.1.1).
      this.stopContinue();
      this.bodySkipped = true;
    }
    const status = Number(headers[':status']);
    const max = this.t.maxHeaderBytes ?? DEFAULT_MAX_HEADER_BYTES;
    if (raw !== undefined && headerListSize(raw) > max) {
      this.headDone = false;
      this.fail(new ProtocolError(`response header block exceeds maxHeaderBytes (${max})`, { limit: 'maxHeaderBytes' }));
      return;
    }
    const h = raw !== undefined ? headersFromFields(raw, false) : headersFromObject(headers as Record<string, string | string[] | undefined>);
    const cl = h.get('Content-Length');
    const length = cl !== undefined && /^\d+$/.test(cl) ? Number(cl) : -1;
    const ended = (flags & 1) !== 0;
    // A HEAD or 304 response's length is the one a GET would have had: no DATA follows.
    if (!ended && length >= 0 && status !== 304 && this.req.method !== 'HEAD') this.declared = length;
    const gate = this.gate;
    if (this.whole && gate === null && !ended && length > this.limit) {
      // Refused at the head, as the client's own buffering does: the body is not read.
      this.headDone = false;
      this.fail(new ResponseTooLargeError(this.limit, 0, length));
      return;
    }
    let body: Response['body'];
    if (ended) body = nobody;
    else {
      // Buffering: the bytes are gathered here and become the body at the end (no stream body).
      body = this.whole && gate === null ? nobody : (this.body = new H2ResponseBody(this, length));
      if (this.t.readIdleTimeout > 0) this.arm(this.t.readIdleTimeout, 'readIdleTimeout');
    }
    const res = protocolResponse(status, '', h, body, ended ? 0 : length, 2, 0, this.req);
    if (gate !== null) {
      if (!this.gathers(gate, res, ended, length)) this.resolveHead(res);
    } else if (this.whole && !ended) this.pending = res;
    else this.resolveHead(res);
  }

  /**
   * Runs the client's head taps (kHeadGate) on `res` before any of its body is delivered. True:
   * they left the body alone, and it is gathered here (a declared length past the bound fails
   * the call now, as the client's buffering would, the taps having seen the head); false: `res`
   * is to be handed over as it is.
   */
  private gathers(gate: HeadGate, res: Response, ended: boolean, length: number): boolean {
    if (!gate(res, this.ctx!) || this.finished || ended) return false;
    this.pending = res;
    if (length > this.limit) this.fail(new ResponseTooLargeError(this.limit, 0, length));
    return true;
  }

  /** The body ended: a buffering exchange hands over its response now, with the body gathered. */
  private bodyEnded(): void {
    this.body?.end();
    const res = this.pending;
    if (res !== null) {
      this.pending = null;
      const g = this.gathered;
      this.gathered = null;
      res.body = g === null ? EMPTY : Array.isArray(g) ? Buffer.concat(g) : g;
      this.resolveHead(res);
    }
  }

  /** @internal */
  onData(chunk: Buffer): void {
    this.received += chunk.length;
    if (this.timer !== null && this.timerWhat === 'readIdleTimeout') this.timer.refresh();
    if (this.pending !== null) {
      if (chunk.length === 0) return;
      if (this.received > this.limit) {
        // Stop here: what came is dropped and the rest is not read (an endless body ends now).
        this.fail(new ResponseTooLargeError(this.limit, this.received, this.declared));
        return;
      }
      const g = this.gathered;
      if (g === null) this.gathered = chunk;
      else if (Array.isArray(g)) g.push(chunk);
      else this.gathered = [g, chunk];
    } else this.body?.push(chunk);
  }

  /** @internal */
  onTrailers(trailers: IncomingHttpHeaders): void {
    const t = trailersFromObject(trailers as Record<string, string | string[] | undefined>);
    // A buffered response carries its trailers itself (its body is bytes).
    if (this.pending !== null) this.pending.trailers = t;
    else if (this.body !== null) this.body.trailerFields = t;
  }

  /** @internal The request could not be finished (trailers that may not be sent): fails the exchange with `err`. */
  failWith(err: unknown): void {
    this.fail(err);
  }

  /** @internal The call's context was canceled (see RequestContext.addCancelListener). */
  onContextCanceled(err: Error): void {
    this.fail(err);
  }

  /**
   * @internal The readable side ended. node:http2 also ends it when the stream is reset (before
   * 'close', the code already set): that is no response, and 'close' reports it. (A reset that
   * arrives in the same read as the response's end is taken as the reset: an error, never a
   * truncated body taken as whole.)
   */
  onEnd(): void {
    if (this.finished || !this.headDone) return;
    const code = this.stream.rstCode;
    if (code !== undefined && code !== NGHTTP2_NO_ERROR) return;
    if (this.truncated()) return;
    this.finished = true;
    this.cleanup();
    // Our side never sent its body, or not all of it: end the stream without an error (RFC 9113 §8.1).
    const unsent = this.bodySkipped || this.upload !== null;
    this.dropUpload(null);
    if (unsent && !this.stream.destroyed) this.stream.close(NGHTTP2_NO_ERROR);
    this.bodyEnded();
  }

  /** @internal */
  onClose(): void {
    this.owner.streamClosed();
    if (this.finished) {
      this.cleanup();
      this.dropUpload(null);
      return;
    }
    const code = this.stream.rstCode ?? 0;
    let err: Error;
    if (!this.headDone && code === NGHTTP2_REFUSED_STREAM) {
      err = unprocessed(new H2StreamResetError(code, false));
    } else if (!this.headDone && this.owner.wasRefused(this.stream.id)) {
      err = unprocessed(new ProtocolError('the server did not process the request (HTTP/2 stream past GOAWAY)'));
    } else if (this.headDone && code === 0) {
      // Closed without an error after the head: the body ended (the 'end' event may follow 'close' on a destroyed stream).
      if (this.truncated()) return;
      this.finished = true;
      this.cleanup();
      this.dropUpload(null);
      this.bodyEnded();
      return;
    } else {
      err = this.owner.transportError() ?? new H2StreamResetError(code, this.headDone);
    }
    this.fail(err);
  }

  /**
   * True (and the exchange failed) when the body ended short of its content-length: a server's
   * RST_STREAM(NO_ERROR) ends the stream as END_STREAM does, and RFC 9113 §8.1.1 makes a
   * response whose DATA does not add up to its content-length malformed. (nghttp2 checks the
   * length itself at END_STREAM; a reset is this check's case.) The error is HTTP/1's for a
   * response cut short.
   */
  private truncated(): boolean {
    const n = this.declared;
    if (n < 0 || this.received === n) return false;
    this.fail(new ParseError(`the server ended the HTTP/2 stream ${n - this.received} bytes short of the response's content-length ${n} (truncated body)`));
    return true;
  }

  /** @internal See {@link BodySource}. */
  pause(): void {
    this.stream.pause();
  }

  /** @internal See {@link BodySource}. */
  resume(): void {
    this.stream.resume();
  }

  /** @internal The reader closed the body before its end: reset this stream only. */
  abandon(): void {
    if (this.finished) return;
    this.finished = true;
    this.cleanup();
    if (!this.stream.destroyed) this.stream.close(NGHTTP2_CANCEL);
  }

  private fail(err: unknown): void {
    if (this.finished) return;
    this.finished = true;
    this.cleanup();
    const e = err instanceof Error ? err : new ProtocolError(String(err));
    this.dropUpload(e);
    const pending = this.pending;
    const body = this.body;
    if (pending !== null && body !== null) {
      // Gathering after the head taps (kHeadGate): the response goes out with its streamed body
      // failed, as it would have failed to the client reading it.
      this.pending = null;
      this.gathered = null;
      pending.body = body;
      body.error(e);
      this.resolveHead(pending);
    } else if (!this.headDone || pending !== null) {
      this.pending = null;
      this.gathered = null;
      this.rejectHead(e);
    } else this.body?.error(e);
    if (!this.stream.destroyed) this.stream.close(NGHTTP2_CANCEL);
  }

  /** @internal */
  onDeadline(): void {
    this.deadlineTimer = null;
    const limit = this.t.requestTimeout ?? 0;
    const elapsed = Math.round(performance.now() - this.started);
    this.fail(new TimeoutError('request', limit, elapsed, limit > 0 ? `requestTimeout of ${limit} ms passed` : 'request deadline expired'));
  }

  private arm(ms: number, what: string): void {
    this.disarm();
    this.timerWhat = what;
    this.timerMs = ms;
    this.timer = setTimeout(() => this.onTimer(), ms);
    this.timer.unref();
  }

  private disarm(): void {
    if (this.headDue !== 0) this.owner.unwatchHead(this);
    if (this.timer !== null) clearTimeout(this.timer);
    this.timer = null;
  }

  /** @internal The response head did not come within `responseHeaderTimeout` (the session's watch). */
  onHeadTimeout(): void {
    const ms = this.t.responseHeaderTimeout;
    this.fail(new TimeoutError('request', ms, Math.round(performance.now() - this.started), `responseHeaderTimeout of ${ms} ms passed (${this.req.method} ${this.req.url || this.req.target})`));
  }

  /** @internal */
  onTimer(): void {
    this.timer = null;
    const ms = this.timerMs;
    this.fail(new TimeoutError('request', ms, Math.round(performance.now() - this.started), `${this.timerWhat} of ${ms} ms passed (${this.req.method} ${this.req.url || this.req.target})`));
  }

  private cleanup(): void {
    this.disarm();
    if (this.continueSend !== null) this.stopContinue();
    if (this.writeTimer !== null) clearTimeout(this.writeTimer);
    this.writeTimer = null;
    if (this.deadlineTimer !== null) clearTimeout(this.deadlineTimer);
    this.deadlineTimer = null;
    const ctx = this.ctx;
    if (ctx !== null) {
      this.ctx = null;
      ctx.removeCancelListener(this);
    }
    const w = this.drainWait;
    this.drainWait = null;
    w?.();
  }
}

// Stream listeners shared by every exchange (no closures per request): the exchange rides on the stream.
const kExchange = Symbol('switchyard.h2.exchange');
type Tagged = ClientHttp2Stream & { [kExchange]?: H2ClientExchange };
function streamResponse(this: Tagged, headers: IncomingHttpHeaders, flags: number, raw?: string[]): void {
  this[kExchange]!.onResponse(headers, flags, raw);
}
function streamData(this: Tagged, chunk: Buffer): void {
  this[kExchange]!.onData(chunk);
}
function streamTrailers(this: Tagged, trailers: IncomingHttpHeaders): void {
  this[kExchange]!.onTrailers(trailers);
}
function streamEnd(this: Tagged): void {
  this[kExchange]!.onEnd();
}
function streamClose(this: Tagged): void {
  this[kExchange]!.onClose();
}
