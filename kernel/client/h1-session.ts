/**
 * The kernel's HTTP/1.1 client driver: one exchange at a time on one connection. Writes the
 * request, parses the response head from socket chunks with the kernel's push parser, and
 * hands the body out as a streamed {@link ResponseBody} that returns the connection to its
 * pool once read to the end.
 */
import { Buffer } from 'node:buffer';
import { performance } from 'node:perf_hooks';
import type { Socket } from 'node:net';
import type { Duplex } from 'node:stream';
import { ParseError, ProtocolError, TimeoutError, TLSTransportError } from '../errors.js';
import type { ClientSession, ExchangeOptions } from '../hooks.js';

export type { ExchangeOptions } from '../hooks.js';
import { AbstractBody, nobody, type Body } from '../message/body.js';
import { FlowBody, type FlowSource } from './flow-body.js';
import { DueTimer } from './due-timer.js';
import { stopUpload } from './request-body.js';
import { nodeTls } from '../builtins.js';
import { bytesSent } from '../socket-progress.js';
import type { CancelListener, RequestContext } from '../message/context.js';
import type { Request } from '../message/request.js';
import { protocolResponse, type Response } from '../message/response.js';
import { ChunkedDecoder } from '../http1/chunked.js';
import { framingPlan, requestFraming, responseBodyKind, type FramingPlan } from '../http1/framing.js';
import { MAX_INTERIM_RESPONSES } from '../http1/head-exchange.js';
import { CONN_CLOSE, connectionFlags, HeadParser, type HeadLimits } from '../http1/head-parser.js';
import { readDirect, unboundReads } from '../socket-reads.js';
import { CHUNK_ROOM, checkTrailers, encodeMessage, frameChunkInPlace, serializeLastChunk, serializeRequestHead } from '../http1/serialize.js';

/** @internal Called when a session can take another exchange, or is gone. */
export interface SessionOwner {
  release(session: H1ClientSession): void;
  discard(session: H1ClientSession): void;
}

const B_NONE = 0;
const B_LENGTH = 1;
const B_CHUNKED = 2;
const B_CLOSE = 3;

/** Bytes read from a streamed request body per write. */
const BODY_CHUNK = 65536;

/**
 * Marks exchange options (`ExchangeOptions[kHoldConnection] === true`) of an exchange whose
 * reader decides the connection's fate (`open`): once the body arrived, the connection waits
 * for the reader to consume it (then reused) or discard it with `closeRead` (then closed).
 */
export const kHoldConnection = Symbol('switchyard.holdConnection');

/** Marks an error that happened before any response byte on a reused connection: safe to retry once. */
export const kStale = Symbol.for('switchyard.staleConnection');

/** The session a socket's direct reads go to (see H1ClientSession.onSocketRead). */
const kSession = Symbol('h1ClientSession');
type SessionSocket = Socket & { [kSession]?: H1ClientSession };

/** @internal */
export class H1ClientSession implements ClientSession {
  readonly protocol = 'http/1.1';
  readonly multiplexed = false;
  readonly socket: Duplex;
  private readonly owner: SessionOwner;
  private parser: HeadParser;
  private readonly limits: HeadLimits;
  private busy = false;
  private dead = false;
  /** Exchanges completed on this connection (0: a fresh connection). */
  uses = 0;
  /** When this session last became idle (`performance.now()`), for the pool's idle timeout. */
  idleSince = 0;
  private exchange: Exchange | null = null;
  /** @internal Refilled by each exchange as it starts writing (one exchange at a time). */
  readonly framing: FramingPlan = framingPlan();
  /**
   * The socket's `ref`/`unref` (net and TLS sockets have them; a tap's own Duplex may not):
   * an idle pooled connection must not keep the process alive, one in use must.
   */
  private readonly refSocket: { ref(): unknown; unref(): unknown } | null;
  /** True while the socket is unref'd (idle in the pool). */
  private unrefd = false;
  /**
   * The exchange waiting for its head under a `responseHeaderTimeout`, and the connection's one
   * timer for it: kept armed from exchange to exchange (it moves only for a sooner head) instead
   * of a Timeout armed and cleared per request.
   */
  private headWaiter: Exchange | null = null;
  private readonly headTimer = new DueTimer((now) => this.onHeadTimer(now));
  /** Reads come straight from the socket's handle (`readDirect`), not as 'data' events. */
  private direct = false;
  /** @internal The bytes being processed are a view valid only during this read: copy what is kept. */
  transient = false;

  /** A direct read (shared by every session: `this` is the socket). */
  private static onSocketRead(this: SessionSocket, nread: number, buf: Buffer): boolean {
    const session = this[kSession]!;
    session.transient = true;
    try {
      session.read(buf, nread);
    } finally {
      session.transient = false;
    }
    return true;
  }

  constructor(socket: Duplex, owner: SessionOwner, limits: HeadLimits) {
    this.socket = socket;
    const r = socket as Partial<{ ref(): unknown; unref(): unknown }>;
    this.refSocket = typeof r.ref === 'function' && typeof r.unref === 'function' ? (r as { ref(): unknown; unref(): unknown }) : null;
    this.owner = owner;
    this.limits = limits;
    this.parser = new HeadParser('response', limits);
    socket.on('data', this.onData);
    socket.on('end', this.onEnd);
    socket.on('close', this.onClose);
    socket.on('error', this.onError);
    socket.on('drain', this.onDrain);
    // 'data' stays subscribed: it keeps the socket flowing (so 'end' comes), and carries the
    // reads of a stream that cannot be read directly (TLS, a tap's own Duplex).
    (socket as SessionSocket)[kSession] = this;
    this.direct = readDirect(socket as Socket, H1ClientSession.onSocketRead);
  }

  get closed(): boolean {
    return this.dead;
  }

  capacity(): number {
    return this.dead || this.busy ? 0 : 1;
  }

  isIdle(): boolean {
    return !this.busy;
  }

  close(): Promise<void> {
    if (!this.busy) this.destroy();
    return Promise.resolve();
  }

  destroy(error?: Error): void {
    if (this.dead) return;
    this.dead = true;
    const ex = this.exchange;
    if (ex !== null) ex.fail(error ?? new ProtocolError('connection closed'));
    this.socket.destroy();
  }

  /** Sends one exchange; resolves with the response head and a streamed body. */
  dispatch(request: Request, ctx: RequestContext, timeouts?: ExchangeOptions): Promise<Response> {
    if (this.busy || this.dead) return Promise.reject(new ProtocolError('HTTP/1 session is busy or closed'));
    if (request.hasTrailers) {
      // Trailers that may not be sent (RFC 9110 §6.5.1) are refused before the head, not after
      // the body is out; the connection stays as it was.
      try {
        checkTrailers(request.trailers);
      } catch (err) {
        if (request.body instanceof AbstractBody) stopUpload(request.body, null);
        // The pool handed this session over for the exchange: it goes back unused.
        this.idleSince = performance.now();
        this.owner.release(this);
        return Promise.reject(err);
      }
    }
    this.busy = true;
    if (this.unrefd) {
      this.unrefd = false;
      this.refSocket!.ref();
    }
    const t = timeouts ?? NO_TIMEOUTS;
    let limits = this.limits;
    if ((t.maxLineBytes !== undefined && t.maxLineBytes !== this.parser.maxLineBytes) || (t.maxHeaderBytes !== undefined && t.maxHeaderBytes !== this.parser.maxHeaderBytes)) {
      // The call sets its own head limits: a parser for them (rare; the pool's limits are the rule).
      limits = { maxLineBytes: t.maxLineBytes ?? this.limits.maxLineBytes, maxHeaderBytes: t.maxHeaderBytes ?? this.limits.maxHeaderBytes };
      this.parser = new HeadParser('response', limits);
    } else if (this.parser.maxLineBytes !== this.limits.maxLineBytes || this.parser.maxHeaderBytes !== this.limits.maxHeaderBytes) {
      this.parser = new HeadParser('response', this.limits);
    }
    const ex = new Exchange(this, request, ctx, t, limits);
    this.exchange = ex;
    this.parser.reset();
    ex.start();
    return ex.promise;
  }

  // ---- socket events -------------------------------------------------------------------------

  private readonly onData = (chunk: Buffer): void => {
    this.read(chunk, chunk.length);
  };

  private read(chunk: Buffer, end: number): void {
    const ex = this.exchange;
    if (ex === null) {
      // Bytes while idle: the server broke framing or is closing; the connection is unusable.
      this.destroy();
      return;
    }
    ex.onData(chunk, this.parser, end);
  }

  /** @internal The socket now speaks another protocol (a 101): whoever takes it reads it as a stream. */
  handOver(): void {
    if (!this.direct) return;
    this.direct = false;
    unboundReads(this.socket as Socket);
  }

  private readonly onEnd = (): void => {
    const ex = this.exchange;
    if (ex !== null) ex.onEnd();
    this.dead = true;
    if (ex === null) this.owner.discard(this);
  };

  private readonly onClose = (): void => {
    const wasDead = this.dead;
    this.dead = true;
    this.headTimer.clear();
    const ex = this.exchange;
    if (ex !== null) ex.onEnd();
    if (!wasDead || ex === null) this.owner.discard(this);
  };

  /** @internal Fails `ex` with its `responseHeaderTimeout` unless its head arrives by `ex.headDue`. */
  watchHead(ex: Exchange): void {
    this.headWaiter = ex;
    if (!this.headTimer.armed || ex.headDue < this.headTimer.due) this.headTimer.arm(ex.headDue);
  }

  /** @internal `ex` got its head, or ended. */
  unwatchHead(ex: Exchange): void {
    if (this.headWaiter === ex) this.headWaiter = null;
  }

  /** The head timer reached `now` (see {@link DueTimer}): the watched head is late, or due later. */
  private onHeadTimer(now: number): void {
    const ex = this.headWaiter;
    if (ex === null || this.dead) return;
    if (ex.headDue - now < 1) {
      this.headWaiter = null;
      ex.onHeadTimeout();
    } else this.headTimer.arm(ex.headDue, now);
  }

  private readonly onError = (err: Error): void => {
    const ex = this.exchange;
    if (ex !== null) ex.onSocketError(err);
  };

  private readonly onDrain = (): void => {
    this.exchange?.onDrain();
  };

  /** @internal The exchange finished cleanly: reuse or close. */
  done(ex: Exchange, reusable: boolean): void {
    if (this.exchange !== ex) return;
    this.exchange = null;
    this.busy = false;
    this.uses++;
    if (!reusable || this.dead) {
      this.dead = true;
      this.socket.destroy();
      this.owner.discard(this);
      return;
    }
    this.idleSince = performance.now();
    // Idle in the pool: like fetch's, it lets the process exit (the server's keep-alive may last minutes).
    if (this.refSocket !== null) {
      this.unrefd = true;
      this.refSocket.unref();
    }
    this.owner.release(this);
  }

  /** @internal The exchange failed: the connection cannot be trusted any more. */
  failed(ex: Exchange): void {
    if (this.exchange !== ex) return;
    this.exchange = null;
    this.busy = false;
    this.dead = true;
    this.socket.destroy();
    this.owner.discard(this);
  }
}

const NO_TIMEOUTS: ExchangeOptions = Object.freeze({ responseHeaderTimeout: 0, readIdleTimeout: 0, writeIdleTimeout: 0, expectContinueTimeout: 0 });

/** One request/response on an {@link H1ClientSession}. */
class Exchange implements FlowSource, CancelListener {
  readonly promise: Promise<Response>;
  private resolveHead!: (r: Response) => void;
  private rejectHead!: (e: unknown) => void;
  private readonly session: H1ClientSession;
  private readonly req: Request;
  private readonly ctx: RequestContext;
  private readonly t: ExchangeOptions;
  private readonly limits: HeadLimits;
  private headDone = false;
  /** Interim (1xx) responses read before the final one. */
  private interim = 0;
  private finished = false;
  private gotBytes = false;
  private body: ResponseBody | null = null;
  private bodyKind = B_NONE;
  private remaining = 0;
  private decoder: ChunkedDecoder | null = null;
  private keepAlive = false;
  private timer: NodeJS.Timeout | null = null;
  private timerOp = '';
  private timerMs = 0;
  /** @internal When the head is due under `responseHeaderTimeout` (0: not watched); see {@link H1ClientSession.watchHead}. */
  headDue = 0;
  private readonly started = performance.now();
  /** The exchange listens for its context's cancellation (see {@link Exchange.onContextCanceled}). */
  private listening = false;
  /** The streamed request body until the write loop is done with it; stopped when the exchange ends first. */
  private upload: AbstractBody | null = null;
  private drainWait: (() => void) | null = null;
  private continueWait: ((go: boolean) => void) | null = null;

  constructor(session: H1ClientSession, req: Request, ctx: RequestContext, t: ExchangeOptions, limits: HeadLimits) {
    this.session = session;
    this.req = req;
    this.ctx = ctx;
    this.t = t;
    this.limits = limits;
    this.promise = new Promise<Response>((resolve, reject) => {
      this.resolveHead = resolve;
      this.rejectHead = reject;
    });
  }

  start(): void {
    const b = this.req.body;
    if (b instanceof AbstractBody) this.upload = b;
    if (this.ctx.canceled || this.ctx.expired()) {
      this.fail(this.ctx.error()!);
      return;
    }
    this.ctx.addCancelListener(this);
    this.listening = !this.finished;
    if (this.ctx.deadline > 0) this.armDeadline();
    this.write().catch((err: unknown) => this.fail(err));
  }

  // ---- writing ---------------------------------------------------------------------------

  private async write(): Promise<void> {
    const req = this.req;
    const sock = this.session.socket;
    const body: Body = req.body;
    const streamed = body instanceof AbstractBody;
    const hasBody = body !== null && (streamed || body.length > 0);
    const expect = hasBody && req.headers.has('Expect');
    const p = requestFraming(req.method, req.headers, req.contentLength >= 0 ? req.contentLength : streamed ? (body as AbstractBody).length : -1, this.session.framing);
    const head = serializeRequestHead(req.method, req.target, req.headers, req.host, p.field, req.close);
    // Read before the first await: the plan is the session's, refilled by its next exchange.
    const chunked = p.kind === 'chunked';
    const length = p.length;
    if (!streamed) {
      if (expect) {
        sock.write(Buffer.from(head, 'latin1'));
        this.afterWrite();
        if (!(await this.waitContinue())) return;
        this.uploaded = true;
        this.sent(sock.write(typeof body === 'string' ? Buffer.from(body, 'utf8') : (body as Uint8Array)));
      } else {
        this.uploaded = true;
        this.sent(sock.write(encodeMessage(head, body as string | Uint8Array | null)));
      }
      this.afterWrite();
      return;
    }
    const b = body as AbstractBody;
    try {
      await this.flushed(sock.write(Buffer.from(head, 'latin1')));
      if (expect && !(await this.waitContinue())) return;
      // The body is read into `frame` behind room for the chunk-size line, framed in place and
      // written from there. The buffer is reused only when the socket took the bytes at once
      // (writableLength back to 0); while the socket still holds it, the next read gets a new
      // one. A fast peer thus costs no allocation per chunk, a slow one one per 'drain'.
      const room = chunked ? CHUNK_ROOM : 0;
      let frame = Buffer.allocUnsafe(room + BODY_CHUNK + 2);
      let total = 0;
      for (;;) {
        const n = await b.read(frame.subarray(room, room + BODY_CHUNK));
        if (this.finished) return; // a body stopped by the exchange's end reads as ended too
        if (n === 0) break;
        total += n;
        if (!chunked && total > length) throw new ProtocolError(`request body is longer than its length ${length}`);
        const piece = chunked ? frameChunkInPlace(frame, n) : frame.subarray(0, n);
        const ok = sock.write(piece);
        if (total === length) this.uploaded = true;
        if (sock.writableLength !== 0) frame = Buffer.allocUnsafe(room + BODY_CHUNK + 2);
        await this.flushed(ok);
      }
      if (chunked) {
        const ok = sock.write(Buffer.from(serializeLastChunk(req.hasTrailers ? req.trailers : null), 'latin1'));
        this.uploaded = true;
        await this.flushed(ok);
      } else if (total !== length) throw new ProtocolError(`request body has ${total} bytes but its length is ${length}`);
      else this.uploaded = true;
    } finally {
      this.upload = null;
      b.close();
    }
    this.afterWrite();
  }

  /** An in-memory body was queued: until the socket drains, writeIdleTimeout watches progress. */
  private sent(ok: boolean): void {
    if (!ok) void this.flushed(false);
  }

  /** Waits for 'drain' when the socket asked for it, bounded by writeIdleTimeout. */
  private flushed(ok: boolean): Promise<void> | undefined {
    if (ok) return undefined;
    this.armWrite();
    return new Promise((resolve) => {
      this.drainWait = resolve;
    });
  }

  onDrain(): void {
    const w = this.drainWait;
    if (w !== null) {
      this.drainWait = null;
      this.disarmWrite();
      w();
    }
  }

  private writeTimer: NodeJS.Timeout | null = null;
  private writtenAtArm = 0;

  private armWrite(): void {
    const ms = this.t.writeIdleTimeout;
    if (ms <= 0 || this.writeTimer !== null) return;
    this.writtenAtArm = bytesSent(this.session.socket);
    this.writeTimer = setTimeout(this.onWriteTimer, ms);
    this.writeTimer.unref();
  }

  private disarmWrite(): void {
    if (this.writeTimer !== null) clearTimeout(this.writeTimer);
    this.writeTimer = null;
  }

  private readonly onWriteTimer = (): void => {
    this.writeTimer = null;
    const now = bytesSent(this.session.socket);
    if (now > this.writtenAtArm) {
      // Progress since the last check: the peer is reading, only slowly. Idle means no progress.
      this.armWrite();
      return;
    }
    const ms = this.t.writeIdleTimeout;
    this.fail(new TimeoutError('request', ms, Math.round(performance.now() - this.started), `writeIdleTimeout of ${ms} ms passed (${this.req.method} ${this.req.url || this.req.target})`));
  };

  private waitContinue(): Promise<boolean> {
    return new Promise((resolve) => {
      this.continueWait = resolve;
      const ms = this.t.expectContinueTimeout > 0 ? this.t.expectContinueTimeout : 1000;
      const t = setTimeout(() => {
        if (this.continueWait === resolve) {
          this.continueWait = null;
          resolve(true);
        }
      }, ms);
      t.unref();
    });
  }

  /** The request is out: wait for the head under responseHeaderTimeout (or readIdleTimeout). */
  private afterWrite(): void {
    if (this.headDone || this.finished) return;
    const rht = this.t.responseHeaderTimeout;
    if (rht > 0) {
      this.headDue = this.started + rht;
      this.session.watchHead(this);
    } else if (this.t.readIdleTimeout > 0) this.arm(this.t.readIdleTimeout, 'head');
  }

  // ---- reading ---------------------------------------------------------------------------

  onData(chunk: Buffer, parser: HeadParser, end: number): void {
    if (this.finished) {
      // Bytes after a held exchange's response: the server broke framing.
      if (this.heldReuse === true) this.heldReuse = false;
      return;
    }
    this.gotBytes = true;
    let off = 0;
    if (!this.headDone) {
      for (;;) {
        let n: number;
        try {
          n = parser.execute(chunk, off, end);
        } catch (err) {
          this.fail(err);
          return;
        }
        off += n;
        if (!parser.complete) {
          if (this.timerOp === 'idle' || (this.timerOp === 'head' && this.t.responseHeaderTimeout === 0)) this.rearm();
          return;
        }
        if (parser.status >= 100 && parser.status < 200 && parser.status !== 101) {
          if (++this.interim > MAX_INTERIM_RESPONSES) {
            this.fail(new ProtocolError(`the server sent more than ${MAX_INTERIM_RESPONSES} informational (1xx) responses before a final one`));
            return;
          }
          // Interim response: 100 Continue releases an upload that waits for it.
          if (parser.status === 100 && this.continueWait !== null) {
            const w = this.continueWait;
            this.continueWait = null;
            w(true);
          }
          parser.reset();
          if (off >= end) return;
          continue;
        }
        break;
      }
      this.onHead(parser, off < end);
      if (this.finished || off >= end) return;
    }
    this.feed(chunk, off, end);
  }

  /** The final (or 101) head is parsed; `trailing`: more bytes came in the same read. */
  private onHead(p: HeadParser, trailing: boolean): void {
    if (p.status === 101 && !this.req.headers.has('Upgrade')) {
      // RFC 9110 §15.2.2: a server switches only to a protocol the request's Upgrade offered.
      this.fail(new ProtocolError(`the server answered 101 Switching Protocols to ${this.req.method} ${this.req.url || this.req.target}, which did not ask to upgrade (no Upgrade header)`));
      return;
    }
    this.headDone = true;
    if (this.timerOp === 'head' || this.headDue !== 0) this.disarm();
    const req = this.req;
    // A final answer while an upload waits for 100: the server does not want the body.
    if (this.continueWait !== null) {
      const w = this.continueWait;
      this.continueWait = null;
      w(false);
      this.keepAliveOverride = false;
    }
    const kind = responseBodyKind(p, req.method);
    this.keepAlive = this.keepAliveOverride && p.keepAlive && !requestCloses(req) && kind !== 'close' && p.status !== 101;
    let body: Body;
    if (kind === 'none' || (kind === 'length' && p.contentLength === 0)) {
      this.bodyKind = B_NONE;
      body = nobody;
    } else {
      this.bodyKind = kind === 'length' ? B_LENGTH : kind === 'chunked' ? B_CHUNKED : B_CLOSE;
      this.remaining = p.contentLength;
      if (kind === 'chunked') this.decoder = new ChunkedDecoder({ ...this.limits, headBytes: p.headBytes });
      this.body = new ResponseBody(this, kind === 'length' ? p.contentLength : -1);
      body = this.body;
    }
    const res = protocolResponse(p.status, p.reason, p.headers, body, kind === 'length' ? p.contentLength : kind === 'none' ? 0 : -1, 1, p.versionMinor, req);
    if (!this.keepAlive) res.close = true;
    if (p.status === 101) {
      // The socket now speaks another protocol; the caller that asked for it takes it.
      this.session.handOver();
      this.finished = true;
      this.cleanup();
      this.resolveHead(res);
      return;
    }
    if (this.bodyKind === B_NONE) {
      // Bytes after a response without a body (HEAD, 204, 304, Content-Length: 0) belong to no
      // response: the server broke framing, so the connection is not reused.
      if (trailing) this.keepAlive = false;
      this.complete();
    } else if (this.t.readIdleTimeout > 0) this.arm(this.t.readIdleTimeout, 'idle');
    this.resolveHead(res);
  }

  private keepAliveOverride = true;

  /** Bytes `chunk[a..b)` for the body to keep: a copy of a direct read's (the shared buffer is read into again), else a view. */
  private kept(chunk: Buffer, a: number, b: number): Buffer {
    if (this.session.transient) {
      const copy = Buffer.allocUnsafe(b - a);
      chunk.copy(copy, 0, a, b);
      return copy;
    }
    return a === 0 && b === chunk.length ? chunk : chunk.subarray(a, b);
  }

  private feed(chunk: Buffer, off: number, end: number): void {
    if (this.timerOp === 'idle') this.rearm();
    const body = this.body!;
    switch (this.bodyKind) {
      case B_LENGTH: {
        const n = Math.min(end - off, this.remaining);
        this.remaining -= n;
        body.push(this.kept(chunk, off, off + n));
        if (off + n < end) this.keepAlive = false; // bytes after the body: the server broke framing
        if (this.remaining === 0) this.complete();
        return;
      }
      case B_CHUNKED: {
        const d = this.decoder!;
        while (off < end) {
          let n: number;
          try {
            n = d.execute(chunk, off, end);
          } catch (err) {
            this.fail(err);
            return;
          }
          if (d.dataEnd > d.dataStart) body.push(this.kept(chunk, d.dataStart, d.dataEnd));
          off += n;
          if (d.done) {
            body.trailerFields = d.trailers;
            if (off < end) this.keepAlive = false;
            this.complete();
            return;
          }
        }
        return;
      }
      case B_CLOSE:
        body.push(this.kept(chunk, off, end));
        return;
      default:
        // Bytes after a body-less response on an exchange that is over.
        this.keepAlive = false;
    }
  }

  /**
   * A socket error: a reset before any response byte on a reused connection is stale (retry
   * once). On a TLS connection it is a {@link TLSTransportError} (the socket's error its cause).
   */
  onSocketError(err: Error): void {
    const code = (err as NodeJS.ErrnoException).code;
    const e = this.session.socket instanceof nodeTls().TLSSocket ? new TLSTransportError(err) : err;
    if (!this.headDone && !this.gotBytes && this.session.uses > 0 && (code === 'ECONNRESET' || code === 'EPIPE')) {
      (e as unknown as Record<symbol, boolean>)[kStale] = true;
    }
    this.fail(e);
  }

  onEnd(): void {
    if (this.finished) return;
    if (this.headDone && this.bodyKind === B_CLOSE) {
      this.keepAlive = false;
      this.complete();
      return;
    }
    const err = this.headDone
      ? new ParseError('connection closed before the response body ended (truncated body)')
      : new ParseError(this.gotBytes ? 'connection closed inside the response head' : 'connection closed before any response byte arrived');
    if (!this.headDone && !this.gotBytes && this.session.uses > 0) (err as unknown as Record<symbol, boolean>)[kStale] = true;
    this.fail(err);
  }

  /** The whole response was read: the connection may carry the next exchange. */
  private complete(): void {
    if (this.finished) return;
    this.finished = true;
    this.cleanup();
    const reusable = this.keepAlive && this.writeDone();
    // Held before the body ends: a reader waiting on the end may consume it at once.
    const held = this.body !== null && (this.t as unknown as Record<symbol, unknown>)[kHoldConnection] === true;
    if (held) this.heldReuse = reusable;
    this.body?.end();
    // A body-less response may complete before anyone holds a body: the session is free now.
    if (!held) this.session.done(this, reusable);
  }

  /** A held exchange's whole response arrived: whether its connection may be reused once the reader is done (null: not held, or settled). */
  private heldReuse: boolean | null = null;

  /** The reader took the body to its end: a held connection goes back to its pool (or closes, as the response said). */
  consumed(): void {
    const reuse = this.heldReuse;
    if (reuse === null) return;
    this.heldReuse = null;
    this.session.done(this, reuse);
  }

  private writeDone(): boolean {
    // An upload still in progress (a server answered early) is cut short: the connection must
    // not carry another request, whose bytes the server would read as the rest of this body.
    return this.uploaded;
  }

  /** The whole request is in the socket (written, if not yet flushed). */
  private uploaded = false;

  fail(err: unknown): void {
    if (this.finished) return;
    this.finished = true;
    const e = err instanceof Error ? err : new ProtocolError(String(err));
    this.cleanup(e);
    if (!this.headDone) this.rejectHead(e);
    else this.body?.error(e);
    this.session.failed(this);
  }

  /** The body reader closed the body before its end, or discarded a held one: the connection cannot be reused. */
  abandon(): void {
    if (this.heldReuse !== null) {
      this.heldReuse = null;
      this.session.done(this, false);
      return;
    }
    if (this.finished) return;
    this.finished = true;
    this.cleanup();
    this.session.failed(this);
  }

  /** The body reader caught up: let the socket flow again. */
  resume(): void {
    this.session.socket.resume();
  }

  /** The body reader is behind: stop reading the socket. */
  pause(): void {
    this.session.socket.pause();
  }

  /**
   * The exchange is over: timers and listeners go, and a streamed request body not sent in full
   * is stopped (`err`: why the exchange failed), as the write loop may wait on it forever.
   */
  private cleanup(err: Error | null = null): void {
    const b = this.upload;
    if (b !== null) {
      this.upload = null;
      stopUpload(b, err);
    }
    this.disarm();
    this.disarmWrite();
    if (this.deadlineTimer !== null) {
      clearTimeout(this.deadlineTimer);
      this.deadlineTimer = null;
    }
    if (this.listening) {
      this.listening = false;
      this.ctx.removeCancelListener(this);
    }
    const w = this.drainWait;
    this.drainWait = null;
    if (w !== null) w();
  }

  // ---- timers ----------------------------------------------------------------------------

  private deadlineTimer: NodeJS.Timeout | null = null;

  private armDeadline(): void {
    const ms = Math.max(0, this.ctx.deadline - performance.now());
    this.deadlineTimer = setTimeout(() => {
      this.deadlineTimer = null;
      const ms = Math.round(performance.now() - this.started);
      const limit = this.t.requestTimeout ?? 0;
      this.fail(new TimeoutError('request', limit, ms, limit > 0 ? `requestTimeout of ${limit} ms passed` : 'request deadline expired'));
    }, ms);
    this.deadlineTimer.unref();
  }

  private arm(ms: number, op: string): void {
    this.disarm();
    this.timerOp = op;
    this.timerMs = ms;
    this.timer = setTimeout(this.onTimer, ms);
    this.timer.unref();
  }

  private rearm(): void {
    this.timer?.refresh();
  }

  private disarm(): void {
    if (this.headDue !== 0) {
      this.headDue = 0;
      this.session.unwatchHead(this);
    }
    if (this.timer !== null) clearTimeout(this.timer);
    this.timer = null;
    this.timerOp = '';
  }

  /** @internal The context was canceled (see RequestContext.addCancelListener). */
  onContextCanceled(err: Error): void {
    this.fail(err);
  }

  /** @internal The head did not come within `responseHeaderTimeout` (the session's watch). */
  onHeadTimeout(): void {
    const ms = this.t.responseHeaderTimeout;
    this.headDue = 0;
    this.fail(new TimeoutError('request', ms, Math.round(performance.now() - this.started), `responseHeaderTimeout of ${ms} ms passed (${this.req.method} ${this.req.url || this.req.target})`));
  }

  private readonly onTimer = (): void => {
    const op = this.timerOp;
    const ms = this.timerMs;
    this.timer = null;
    this.timerOp = '';
    const elapsed = Math.round(performance.now() - this.started);
    const what = op === 'head' ? (this.t.responseHeaderTimeout > 0 ? 'responseHeaderTimeout' : 'readIdleTimeout') : op === 'idle' ? 'readIdleTimeout' : 'writeIdleTimeout';
    this.fail(new TimeoutError('request', ms, elapsed, `${what} of ${ms} ms passed (${this.req.method} ${this.req.url || this.req.target})`));
  };
}

/**
 * True when the request ends its connection: `request.close`, or a `close` token in any of its
 * Connection fields (RFC 9112 §9.6: after sending close, no further request on the connection).
 */
function requestCloses(req: Request): boolean {
  if (req.close) return true;
  const h = req.headers;
  for (let i = h.indexOf('Connection'); i >= 0; i = h.indexOf('Connection', i + 1)) {
    if ((connectionFlags(h.valueAt(i)) & CONN_CLOSE) !== 0) return true;
  }
  return false;
}

/**
 * A response body read from an HTTP/1 connection as it arrives. Single-use; reading it to
 * the end returns the connection to its pool, closing it early closes the connection.
 */
export class ResponseBody extends FlowBody {
  /** @internal */
  constructor(exchange: Exchange, declared: number) {
    super(exchange, declared);
  }
}
