/**
 * One HTTP/1.1 server connection: parses request heads as bytes arrive, frames bodies, runs
 * the handler, writes responses in request order, and enforces limits and timeouts.
 *
 * Phases:
 * - HEAD: bytes go to the head parser; a complete head starts an exchange;
 * - BODY: bytes go to the body decoder (buffered for request handlers, queued for streams);
 * - BUSY: the handler runs or the response is being written; bytes that arrive meanwhile
 *   (pipelined requests) are stashed and parsed when the exchange ends;
 * - CLOSED / UPGRADED: bytes are dropped / belong to someone else.
 *
 * Requests are handled one at a time per connection (as Go's net/http does); pipelined
 * requests answered synchronously in one read go out in one write.
 */
import { Buffer } from 'node:buffer';
import { performance } from 'node:perf_hooks';
import type { Socket } from 'node:net';
import type { Duplex } from 'node:stream';
import { ArgumentError, ParseError, ProtocolError } from '../errors.js';
import type { ServerExchange, ServerHooks, ServerInfo, Tapped, UpgradeInfo } from '../hooks.js';
import { AbstractBody, nobody } from '../message/body.js';
import { eqIgnoreCase, Headers } from '../message/headers.js';
import { Request, requestFromWire } from '../message/request.js';
import { Response } from '../message/response.js';
import { ChunkedDecoder } from '../http1/chunked.js';
import { statusHasNoBody } from '../http1/framing.js';
import { CONN_CLOSE, CONN_UPGRADE, connectionFlags, HeadParser } from '../http1/head-parser.js';
import { CHUNK_ROOM, checkTrailers, encodeMessage, frameChunkInPlace, serializeFields, serializeLastChunk, serializeStatusLine } from '../http1/serialize.js';
import { notAResponse } from './handler-result.js';
import { dateField } from './date.js';
import type { ResolvedServerOptions } from './options.js';
import { PeerAddr } from './peer.js';
import { Stream, type StreamConnection } from './stream.js';
import type { ProtocolHost } from './pipeline.js';
import { copyResponse } from './copy-response.js';
import { bytesSent } from '../socket-progress.js';

/** A request handler: maps a request (body buffered) to a response, sync or async. */
export type RequestHandler = (request: Request) => Response | Promise<Response>;
/** A stream handler: reads and writes one {@link Stream}. */
export type StreamHandler = (stream: Stream) => void | Promise<void>;

/** @internal What a connection needs from its server. */
export interface ConnectionHost {
  readonly opts: ResolvedServerOptions;
  readonly info: ServerInfo;
  readonly hooks: Tapped<ServerHooks> | null;
  readonly handler: RequestHandler | null;
  readonly streamHandler: StreamHandler | null;
  /** True once `close()` was called: finish the exchange in flight, then close. */
  readonly closing: boolean;
  removeConnection(conn: H1Connection): void;
  /** The connection handed its socket over (`Upgrade`): the server keeps counting the socket until it closes. */
  adoptUpgraded(socket: Duplex): void;
  reportError(err: unknown, request: Request | null): void;
  /** The server as protocol plugins see it (handed on with an upgraded socket: `Upgrade: h2c`). */
  readonly protocolHost: ProtocolHost;
}

const P_HEAD = 0;
const P_BODY = 1;
const P_BUSY = 2;
const P_CLOSED = 3;
const P_UPGRADED = 4;

/** Bytes read from a streamed response body per write. */
const STREAM_CHUNK = 65536;

const B_NONE = 0;
const B_LENGTH = 1;
const B_CHUNKED = 2;

const T_NONE = 0;
const T_HEADER = 1;
const T_BODY = 2;
const T_IDLE = 3;

/** Queued request-body bytes above which a stream handler's socket is paused. */
const BODY_HIGH_WATER = 65536;
/** Stashed pipelined bytes above which the socket is paused until the exchange ends. */
const STASH_HIGH_WATER = 65536;
/**
 * Responses batched from one read above which they are written before the next request is
 * parsed, so the socket's own high-water mark (and the pause below) can take effect mid-read.
 */
const BATCH_HIGH_WATER = 65536;
/** Batched output up to this size is copied into one buffer; larger goes out as a writev. */
const COALESCE_BYTES = 16384;
/** Unread request-body bytes the server drops to keep a connection reusable after a stream handler. */
const DRAIN_LIMIT = 256 * 1024;
/** How long a head still arriving when the server closes may take (Go's `Shutdown` allows a new connection 5 s). */
const HEAD_AT_CLOSE_MS = 5000;
/** How long a closing connection keeps draining what the peer still sends. */
const LINGER_MS = 2000;

const CONTINUE = 'HTTP/1.1 100 Continue\r\n\r\n';

// Flags from one pass over a response's header names (see scanHeaders).
const H_DATE = 1;
const H_CONN_CLOSE = 2;
const H_CONNECTION = 4;
const H_FRAMING = 8;

/** @internal */
export class H1Connection implements StreamConnection {
  readonly socket: Socket;
  private readonly host: ConnectionHost;
  private readonly parser: HeadParser;
  private phase = P_HEAD;
  /** Waiting for the first byte of a request (a graceful close may drop the connection now). */
  private idle = true;
  /** Bytes read while an exchange runs (or writes are backed up), in arrival order; joined once when taken. */
  private stash: Buffer[] | null = null;
  private stashed = 0;
  private paused = false;
  /**
   * Responses wait for the peer to read them (the socket asked for 'drain'): no further request
   * is parsed, and reading is paused, until they drain. A peer that pipelines without reading
   * would otherwise make the server run handlers and queue responses without bound.
   */
  private writeBlocked = false;
  // Batching: responses produced while processing one read go out in one write.
  private batching = false;
  private out: (Buffer | string)[] = [];
  private outBytes = 0;
  // Timers exist only when the server has timeouts. One timer times the head, body and idle
  // waits: it is left running between them and fires by the earliest deadline (see arm).
  private timer: NodeJS.Timeout | null = null;
  private timerKind = T_NONE;
  /** When the wait being timed ends (`performance.now()`), and when the running timer fires. */
  private due = 0;
  private timerDue = 0;
  /** Runs while written bytes wait for the peer to read them (writeTimeout). */
  private writeTimer: NodeJS.Timeout | null = null;
  /** Bytes the peer had taken when the write timer was armed. */
  private sentAtArm = 0;
  private peer: PeerAddr | null = null;

  // The exchange in flight.
  private req: Request | null = null;
  private keepAlive = true;
  private expectContinue = false;
  private continueSent = false;
  private bodyKind = B_NONE;
  private bodyRemaining = 0;
  private decoder: ChunkedDecoder | null = null;
  // Request handlers: the body being buffered.
  private collected: Buffer[] | null = null;
  private collectedBytes = 0;
  // Stream handlers: the body queue and its reader.
  private stream: Stream | null = null;
  private queue: Uint8Array[] = [];
  private queued = 0;
  private bodyEnded = false;
  private bodyError: Error | null = null;
  private waiter: { resolve(v: Uint8Array | null): void; reject(e: Error): void } | null = null;
  private discarding = false;
  /** A stream handler finished without reading the whole body: drain it (bounded), then reuse the connection. */
  private drainAfter = false;
  private discarded = 0;
  /** Headers set through `ServerExchange.setHeader` by `onRequest` taps in request-handler mode. */
  private extra: Headers | null = null;

  constructor(host: ConnectionHost, socket: Socket) {
    this.host = host;
    this.socket = socket;
    this.parser = new HeadParser('request', { maxLineBytes: host.opts.maxLineBytes, maxHeaderBytes: host.opts.maxHeaderBytes });
    socket.on('data', this.onData);
    socket.on('error', onSocketError);
    socket.on('close', this.onClose);
    socket.on('drain', this.onDrain);
    if (host.opts.timeouts) this.arm(host.opts.readHeaderTimeout, T_HEADER);
  }

  /** The listener. */
  get info(): ServerInfo {
    return this.host.info;
  }

  /** True while the socket can still be written. */
  get writable(): boolean {
    return this.phase !== P_CLOSED && !this.socket.destroyed && this.socket.writable;
  }

  /** The client's address (one object per connection). */
  peerAddr(): PeerAddr {
    return (this.peer ??= new PeerAddr(this.socket.remoteAddress ?? '', this.socket.remotePort ?? 0, this.socket.remoteFamily));
  }

  /** Feeds bytes that were read before the connection was made (protocol detection). */
  start(head: Uint8Array | null): void {
    if (head !== null && head.length > 0) this.onData(Buffer.from(head.buffer, head.byteOffset, head.length));
  }

  /**
   * Graceful close: drop the connection now when no request is in progress on it. A head still
   * arriving is no request in flight yet: it gets at most {@link HEAD_AT_CLOSE_MS} more.
   */
  closeIfIdle(): void {
    if (this.phase !== P_HEAD) return;
    if (this.idle && this.stash === null) this.closeSocket();
    else if (!this.idle) this.arm(Math.min(this.host.opts.readHeaderTimeout || HEAD_AT_CLOSE_MS, HEAD_AT_CLOSE_MS), T_HEADER);
  }

  /** Forced close. */
  destroy(): void {
    this.phase = P_CLOSED;
    this.socket.destroy();
  }

  /**
   * The server's close grace period is over with this connection still open: a response body
   * being streamed (SSE) ends where it is, so the response finishes cleanly and the connection
   * closes after it; anything else (a handler still running, a request still arriving) is dropped.
   */
  endForClose(): void {
    const out = this.outBody;
    if (out !== null) out.close();
    else this.destroy();
  }

  // ---- reading ---------------------------------------------------------------------------

  private readonly onData = (chunk: Buffer): void => {
    const phase = this.phase;
    if (phase === P_BUSY || this.writeBlocked) {
      this.stashBytes(chunk, 0);
      return;
    }
    if (phase >= P_CLOSED) return;
    this.batching = true;
    try {
      this.process(chunk, 0);
    } finally {
      this.batching = false;
      this.flush();
    }
  };

  private process(buf: Buffer, off: number): void {
    const end = buf.length;
    while (off < end) {
      const phase = this.phase;
      if (phase === P_HEAD) {
        if (this.idle) {
          if (this.outBytes > BATCH_HIGH_WATER) this.flush();
          if (this.socket.writableNeedDrain) {
            this.blockReads(buf, off);
            return;
          }
          this.idle = false;
          // The first byte of a request: the idle wait is over, the head's own limit starts.
          if (this.host.opts.timeouts) this.arm(this.host.opts.readHeaderTimeout, T_HEADER);
        }
        let n: number;
        try {
          n = this.parser.execute(buf, off, end);
        } catch (err) {
          this.headError(err);
          return;
        }
        off += n;
        if (!this.parser.complete) return;
        this.onHead();
      } else if (phase === P_BODY) {
        off = this.feedBody(buf, off, end);
      } else if (phase === P_BUSY) {
        this.stashBytes(buf, off);
        return;
      } else {
        return;
      }
    }
  }

  private stashBytes(buf: Buffer, off: number): void {
    let rest = off === 0 ? buf : buf.subarray(off);
    // A small rest of a large read is copied out, so it does not keep the whole read alive.
    if (rest.length <= buf.buffer.byteLength >> 2) rest = Buffer.from(rest);
    // Kept as a list: joining per read would copy the stash again for every small read.
    if (this.stash === null) this.stash = [rest];
    else this.stash.push(rest);
    this.stashed += rest.length;
    if (this.stashed > STASH_HIGH_WATER && !this.paused) {
      this.paused = true;
      this.socket.pause();
    }
  }

  /** The socket's writes are backed up: keep `buf[off..]` for later and stop reading until 'drain'. */
  private blockReads(buf: Buffer, off: number): void {
    this.writeBlocked = true;
    this.stashBytes(buf, off);
    if (!this.paused) {
      this.paused = true;
      this.socket.pause();
    }
  }

  /** The stashed bytes as one buffer (null when none), and the stash emptied. */
  private takeStash(): Buffer | null {
    const s = this.stash;
    if (s === null) return null;
    this.stash = null;
    const n = this.stashed;
    this.stashed = 0;
    return s.length === 1 ? s[0]! : Buffer.concat(s, n);
  }

  /** The responses drained: parse what was kept and read again. */
  private unblockReads(): void {
    this.writeBlocked = false;
    if (this.phase !== P_HEAD) return;
    const s = this.takeStash();
    if (this.paused) {
      this.paused = false;
      this.socket.resume();
    }
    if (s !== null) this.onData(s);
  }

  private onHead(): void {
    const p = this.parser;
    const opts = this.host.opts;
    if (this.timerKind !== T_NONE) this.disarm();
    // Framing. The parser already rejected CL+TE, differing CLs, and non-chunked request TE.
    let kind = B_NONE;
    let length = 0;
    if (p.chunked) kind = B_CHUNKED;
    else if (p.contentLength > 0) {
      kind = B_LENGTH;
      length = p.contentLength;
    }
    this.bodyKind = kind;
    this.bodyRemaining = length;
    this.keepAlive = p.keepAlive;
    this.expectContinue = p.expectContinue && p.versionMinor === 1 && kind !== B_NONE;
    this.continueSent = false;
    const req = requestFromWire(p.method, p.target, p.headers, null, kind === B_LENGTH ? length : kind === B_NONE ? 0 : -1, p.versionMinor);
    this.req = req;

    if (!p.expectContinue && p.headers.has('Expect')) {
      // RFC 9110 §10.1.1: an expectation the server cannot meet gets 417.
      this.errorResponse(417, 'unsupported Expect', true);
      return;
    }
    const hooks = this.host.hooks;
    if (hooks !== null && hooks.onUpgrade !== null && p.upgrade && (p.connection & CONN_UPGRADE) !== 0) {
      this.phase = P_BUSY;
      void Promise.resolve().then(() => this.offerUpgrade(req));
      return;
    }
    this.beginExchange(req, opts);
  }

  private beginExchange(req: Request, opts: ResolvedServerOptions): void {
    const kind = this.bodyKind;
    if (this.host.streamHandler !== null) {
      this.queue.length = 0;
      this.queued = 0;
      this.bodyEnded = kind === B_NONE;
      this.bodyError = null;
      this.discarding = false;
      req.body = null;
      if (kind === B_CHUNKED) this.decoder = this.newDecoder();
      if (kind !== B_NONE && opts.readTimeout > 0) this.arm(opts.readTimeout, T_BODY);
      this.phase = kind === B_NONE ? P_BUSY : P_BODY;
      this.runStream(req);
      return;
    }
    if (kind === B_NONE) {
      req.body = nobody;
      this.dispatch(req);
      return;
    }
    const max = opts.maxBodyBytes;
    if (kind === B_LENGTH && max > 0 && this.bodyRemaining > max) {
      this.errorResponse(413, `request body of ${this.bodyRemaining} bytes exceeds maxBodyBytes (${max})`, true);
      return;
    }
    if (this.expectContinue) this.sendContinue();
    this.collected = [];
    this.collectedBytes = 0;
    if (kind === B_CHUNKED) this.decoder = this.newDecoder();
    if (opts.readTimeout > 0) this.arm(opts.readTimeout, T_BODY);
    this.phase = P_BODY;
  }

  private newDecoder(): ChunkedDecoder {
    return new ChunkedDecoder({ maxLineBytes: this.host.opts.maxLineBytes, maxHeaderBytes: this.host.opts.maxHeaderBytes, headBytes: this.parser.headBytes });
  }

  /** Consumes body bytes of `buf[off..end)`; returns the new offset. */
  private feedBody(buf: Buffer, off: number, end: number): number {
    if (this.bodyKind === B_LENGTH) {
      const n = Math.min(end - off, this.bodyRemaining);
      this.bodyRemaining -= n;
      this.bodyData(buf.subarray(off, off + n));
      if (this.bodyRemaining === 0) this.bodyDone();
      return off + n;
    }
    const d = this.decoder!;
    while (off < end) {
      let n: number;
      try {
        n = d.execute(buf, off, end);
      } catch (err) {
        this.bodyFailed(err as Error);
        return end;
      }
      if (d.dataEnd > d.dataStart) this.bodyData(buf.subarray(d.dataStart, d.dataEnd));
      off += n;
      if (d.done) {
        this.req!.trailers = d.trailers;
        this.bodyDone();
        return off;
      }
      if (this.phase !== P_BODY) return end;
    }
    return off;
  }

  private bodyData(data: Buffer): void {
    if (data.length === 0) return;
    if (this.host.streamHandler !== null) {
      if (this.discarding) {
        this.discarded += data.length;
        if (this.drainAfter && this.discarded > DRAIN_LIMIT) this.closeSocket();
        return;
      }
      this.queue.push(data);
      this.queued += data.length;
      const w = this.waiter;
      if (w !== null) {
        this.waiter = null;
        w.resolve(this.takeQueued());
      } else if (this.queued > BODY_HIGH_WATER && !this.paused) {
        this.paused = true;
        this.socket.pause();
      }
      return;
    }
    this.collectedBytes += data.length;
    const max = this.host.opts.maxBodyBytes;
    if (max > 0 && this.collectedBytes > max) {
      this.collected = null;
      this.errorResponse(413, `request body exceeds maxBodyBytes (${max})`, true);
      return;
    }
    this.collected!.push(data);
  }

  private bodyDone(): void {
    if (this.timerKind === T_BODY) this.disarm();
    const req = this.req!;
    this.decoder = null;
    if (this.host.streamHandler !== null) {
      this.bodyEnded = true;
      this.phase = P_BUSY;
      const w = this.waiter;
      if (w !== null) {
        this.waiter = null;
        w.resolve(this.takeQueued());
      }
      if (this.drainAfter) {
        this.drainAfter = false;
        this.finishExchange(false);
      }
      return;
    }
    const parts = this.collected!;
    this.collected = null;
    const body = parts.length === 1 ? parts[0]! : Buffer.concat(parts, this.collectedBytes);
    req.body = body;
    req.contentLength = body.length;
    this.phase = P_BUSY;
    this.dispatch(req);
  }

  private bodyFailed(err: Error): void {
    if (this.host.streamHandler !== null) {
      this.bodyError = err;
      const w = this.waiter;
      if (w !== null) {
        this.waiter = null;
        w.reject(err);
      }
      this.phase = P_BUSY;
      this.keepAlive = false;
      return;
    }
    this.errorResponse(statusFor(err), err.message, true);
  }

  /** Next chunk of the request body for a stream handler, or null at its end. */
  readBody(): Promise<Uint8Array | null> {
    if (this.queued > 0) return Promise.resolve(this.takeQueued());
    if (this.bodyError !== null) return Promise.reject(this.bodyError);
    if (this.bodyEnded) return Promise.resolve(null);
    if (this.phase === P_CLOSED) return Promise.reject(new ParseError('client closed the connection before the request body ended'));
    if (this.waiter !== null) return Promise.reject(new ProtocolError('a read of this stream is already waiting'));
    return new Promise((resolve, reject) => {
      this.waiter = { resolve, reject };
    });
  }

  private takeQueued(): Uint8Array | null {
    const q = this.queue;
    if (q.length === 0) return this.bodyEnded ? null : EMPTY;
    const out = q.length === 1 ? q[0]! : Buffer.concat(q, this.queued);
    q.length = 0;
    this.queued = 0;
    if (this.paused && this.stash === null) {
      this.paused = false;
      this.socket.resume();
    }
    return out;
  }

  /** Stream `closeRead`: discard the rest of the body; the connection closes after the exchange. */
  discardBody(): void {
    this.discarding = true;
    this.keepAlive = false;
    this.queue.length = 0;
    this.queued = 0;
    if (this.paused) {
      this.paused = false;
      this.socket.resume();
    }
  }

  /** Sends `100 Continue` once, when the request asked for it. */
  sendContinue(): void {
    if (!this.expectContinue || this.continueSent) return;
    this.continueSent = true;
    this.send(CONTINUE);
  }

  // ---- dispatch ----------------------------------------------------------------------------

  /**
   * Offers an Upgrade request to the `onUpgrade` taps. The socket is handed over paused and
   * without our listeners, so no byte is read by anyone in between; `head` holds the bytes
   * already read past the request head. A claiming tap resumes the socket itself.
   */
  private offerUpgrade(req: Request): void {
    const hook = this.host.hooks!.onUpgrade!;
    const socket = this.socket;
    socket.pause();
    socket.removeListener('data', this.onData);
    const head = this.takeStash() ?? EMPTY;
    hook.promise(req, socket, { head, server: this.host.info, host: this.host.protocolHost }).then(
      (claimed) => {
        if (claimed === true) {
          this.phase = P_UPGRADED;
          this.detach();
          return;
        }
        // Unclaimed: an ordinary request (RFC 9110 §7.8 lets a server ignore Upgrade).
        socket.on('data', this.onData);
        this.phase = P_HEAD;
        this.beginExchange(req, this.host.opts);
        if (head.length > 0) this.onData(Buffer.from(head.buffer, head.byteOffset, head.length));
        if (!this.paused) socket.resume();
      },
      (err: unknown) => {
        this.host.reportError(err, req);
        socket.on('data', this.onData);
        socket.resume();
        this.errorResponse(500, 'upgrade failed', true);
      },
    );
  }

  private dispatch(req: Request): void {
    const hooks = this.host.hooks;
    if (hooks !== null && hooks.onRequest !== null) {
      const ex = new RequestExchange(req, this);
      // callAsync, not promise(): when every tap is synchronous (the router answering, or
      // passing on an unrouted path) the callback runs on this tick, with no Promise made,
      // exactly like the untapped path; only a tap that really waits makes this async.
      let sync = true;
      let done = false;
      hooks.onRequest.callAsync(req, ex, (err, res) => {
        done = true;
        if (err != null) this.handlerFailed(req, err);
        else if (res != null) {
          if (sync) this.respond(req, res);
          else this.respondLater(req, res);
        } else this.callHandler(req);
      });
      sync = false;
      if (!done) this.phase = P_BUSY;
      return;
    }
    this.callHandler(req);
  }

  private callHandler(req: Request): void {
    let res: Response | Promise<Response>;
    try {
      res = this.host.handler!(req);
    } catch (err) {
      this.handlerFailed(req, err);
      return;
    }
    if (res instanceof Response) {
      this.respond(req, res);
      return;
    }
    this.phase = P_BUSY;
    Promise.resolve(res).then(
      (r) => this.respondLater(req, r),
      (err: unknown) => this.handlerFailed(req, err),
    );
  }

  private respondLater(req: Request, res: unknown): void {
    if (this.phase === P_CLOSED) return;
    this.respond(req, res);
  }

  private handlerFailed(req: Request, err: unknown): void {
    this.host.reportError(err, req);
    if (this.phase === P_CLOSED) return;
    this.errorResponse(500, '', false);
  }

  /** Writes a request handler's response. */
  private respond(req: Request, res0: unknown): void {
    if (!(res0 instanceof Response)) {
      this.handlerFailed(req, notAResponse(res0));
      return;
    }
    let res: Response = res0;
    const hooks = this.host.hooks;
    let headers = res.headers;
    if (this.extra !== null) {
      headers = headers.clone();
      for (const [k, v] of this.extra) headers.set(k, v);
      this.extra = null;
    }
    if (hooks !== null && hooks.onResponseHead !== null) {
      // Taps see (and may change) a copy: a handler may return one Response for many requests.
      res = copyResponse(res, headers === res.headers ? res.headers.clone() : headers);
      try {
        hooks.onResponseHead.call(res, req);
      } catch (err) {
        this.handlerFailed(req, err);
        return;
      }
      headers = res.headers;
    }
    if (res.hasTrailers) {
      // Refused whatever the framing (a Content-Length response drops trailers): a handler that
      // sets a field that may not trail is wrong for every body, and is told before any byte.
      try {
        checkTrailers(res.trailers);
      } catch (err) {
        if (res.body instanceof AbstractBody) res.body.close();
        this.handlerFailed(req, err);
        return;
      }
    }
    const body = res.body;
    if (body instanceof AbstractBody) {
      this.phase = P_BUSY;
      this.respondStreamed(req, res, headers, body).then(
        (close) => this.finishExchange(close),
        (err: unknown) => {
          this.host.reportError(err, req);
          this.closeSocket();
        },
      );
      return;
    }
    const status = res.status;
    const flags = scanHeaders(headers);
    let close = !this.keepAlive || res.close || (flags & H_CONN_CLOSE) !== 0 || this.host.closing;
    let head: string;
    let payload: string | Uint8Array | null = null;
    try {
      head = serializeStatusLine(status, res.reason);
      const noBody = statusHasNoBody(status) || req.method === 'HEAD';
      const len = body === null ? 0 : typeof body === 'string' ? Buffer.byteLength(body, 'utf8') : body.length;
      if (noBody) {
        // A HEAD answer says what a GET would have; keep framing fields the handler set
        // itself (a HEAD for a streamed resource, a 304); 1xx and 204 carry none.
        const keep = (flags & H_FRAMING) !== 0 && status !== 204 && status >= 200;
        head += serializeFields(headers, -1, !keep);
        if (!keep && status >= 200 && status !== 204 && status !== 304) head += `Content-Length: ${len}\r\n`;
      } else {
        head += serializeFields(headers, -1, true) + `Content-Length: ${len}\r\n`;
        payload = body;
      }
    } catch (err) {
      this.handlerFailed(req, err);
      return;
    }
    if ((flags & H_DATE) === 0) head += dateField();
    head += connectionField(close, flags, req.protoMinor);
    head += '\r\n';
    if (status === 101) close = true;
    this.send(payload === null || payload.length < 65536 ? encodeMessage(head, payload) : head);
    if (payload !== null && payload.length >= 65536) this.send(typeof payload === 'string' ? Buffer.from(payload, 'utf8') : payload);
    this.finishExchange(close);
  }

  /** A response whose body is streamed: Content-Length when known, else chunked (HTTP/1.0: until close). */
  private async respondStreamed(req: Request, res: Response, headers: Headers, body: AbstractBody): Promise<boolean> {
    try {
      const status = res.status;
      const flags = scanHeaders(headers);
      let close = !this.keepAlive || res.close || (flags & H_CONN_CLOSE) !== 0 || this.host.closing;
      const noBody = statusHasNoBody(status) || req.method === 'HEAD';
      const known = res.contentLength >= 0 ? res.contentLength : body.length;
      let head = serializeStatusLine(status, res.reason) + serializeFields(headers, -1, true);
      let mode: 'none' | 'fixed' | 'chunked' | 'raw';
      if (noBody) {
        mode = 'none';
        if (known >= 0 && status !== 204 && status >= 200) head += `Content-Length: ${known}\r\n`;
      } else if (known >= 0) {
        mode = 'fixed';
        head += `Content-Length: ${known}\r\n`;
      } else if (req.protoMinor === 0) {
        mode = 'raw';
        close = true;
      } else {
        mode = 'chunked';
        head += 'Transfer-Encoding: chunked\r\n';
      }
      if ((flags & H_DATE) === 0) head += dateField();
      head += connectionField(close, flags, req.protoMinor) + '\r\n';
      if (mode === 'none') {
        await this.send(head);
        return close;
      }
      // A body of known length (a file) goes out with its head in one write; any other body
      // (SSE, a producer) gets its head at once, since its first bytes may be long in coming.
      let pendingHead: string | null = mode === 'fixed' ? head : null;
      if (pendingHead === null) await this.send(head);
      this.outBody = body;
      // Bytes are read into `frame` behind room for the chunk-size line and framed in place.
      // The frame is reused whenever the socket took the bytes at once (writableLength back to
      // 0); while it still holds them, the next read gets a fresh one.
      const room = mode === 'chunked' ? CHUNK_ROOM : 0;
      let frame = Buffer.allocUnsafe(room + STREAM_CHUNK + 2);
      let sent = 0;
      for (;;) {
        const n = await body.read(frame.subarray(room, room + STREAM_CHUNK));
        // The client went away (its request context is canceled): nothing to report, as with
        // node:http and Go; the body was closed, so its producer stops.
        if (this.phase === P_CLOSED) return true;
        if (n === 0) break;
        sent += n;
        if (mode === 'fixed' && sent > known) throw new ProtocolError(`response body is longer than its length ${known}`);
        let piece: Buffer;
        if (mode === 'chunked') piece = frameChunkInPlace(frame, n);
        else piece = frame.subarray(0, n);
        let wait: Promise<void> | undefined;
        if (pendingHead !== null) {
          wait = this.send(encodeMessage(pendingHead, piece));
          pendingHead = null;
        } else wait = this.send(piece);
        if (this.batching || this.socket.writableLength !== 0) frame = Buffer.allocUnsafe(room + STREAM_CHUNK + 2);
        if (wait !== undefined) await wait;
      }
      if (pendingHead !== null) await this.send(pendingHead);
      if (mode === 'fixed' && sent !== known) throw new ProtocolError(`response body has ${sent} bytes but its length is ${known}`);
      if (mode === 'chunked') await this.send(serializeLastChunk(res.hasTrailers ? res.trailers : null));
      return close;
    } finally {
      this.outBody = null;
      body.close();
    }
  }

  /** The streamed response body being written, closed when the client goes (stops its producer). */
  private outBody: AbstractBody | null = null;

  private runStream(req: Request): void {
    const stream = new Stream(req, this);
    this.stream = stream;
    const hooks = this.host.hooks;
    // A microtask later: the rest of this read is queued as body (or stashed) first.
    void Promise.resolve()
      .then(async () => {
        if (hooks !== null && hooks.onRequest !== null) {
          const res = await hooks.onRequest.promise(req, stream);
          if (res != null) {
            await writeResponseToStream(stream, res);
            return;
          }
        }
        await this.host.streamHandler!(stream);
        if (!stream.isWriteClosed) await stream.closeWrite();
      })
      .then(
        () => this.streamDone(stream, null),
        (err: unknown) => this.streamDone(stream, err),
      );
  }

  /** {@link StreamConnection.takeSocket}: see `Stream.upgrade`. */
  takeSocket(): { socket: Duplex } & UpgradeInfo {
    if (this.phase === P_CLOSED || this.socket.destroyed) throw new ProtocolError('cannot upgrade: the client closed the connection');
    if (this.bodyKind !== B_NONE && !this.bodyEnded) throw new ArgumentError('cannot upgrade a request that has an unread body');
    const socket = this.socket;
    socket.pause();
    this.paused = true;
    const head = this.takeStash() ?? EMPTY;
    this.phase = P_UPGRADED;
    this.detach();
    return { socket, head, server: this.host.info, host: this.host.protocolHost };
  }

  private streamDone(stream: Stream, err: unknown): void {
    this.stream = null;
    if (this.phase === P_UPGRADED) {
      // The socket belongs to whoever upgraded it; a late error is theirs to report.
      if (err !== null) this.host.reportError(err, stream.request);
      return;
    }
    if (this.waiter !== null) {
      this.waiter.reject(new ProtocolError('the stream handler returned'));
      this.waiter = null;
    }
    if (err !== null) {
      this.host.reportError(err, stream.request);
      if (this.phase === P_CLOSED) return;
      if (stream.isCommitted) {
        // Part of the response is out: the only honest signal left is closing.
        this.socket.destroy();
        return;
      }
      // A malformed request body the handler tripped over is the client's fault: 400 (or 413/431).
      const bodyErr = this.bodyError !== null && err === this.bodyError;
      this.errorResponse(bodyErr ? statusFor(err) : 500, bodyErr ? (err as Error).message : '', bodyErr || (!this.bodyEnded && !stream.bodyDone));
      return;
    }
    const close = stream.mustClose || !this.keepAlive;
    if (close || this.bodyEnded || this.phase === P_CLOSED) {
      this.finishExchange(close);
      return;
    }
    // The handler left body bytes unread. Like Go's net/http, read and drop a bounded amount
    // to keep the connection reusable; past the bound, close instead.
    const remaining = this.bodyKind === B_LENGTH ? this.bodyRemaining : -1;
    if (remaining > DRAIN_LIMIT) {
      this.finishExchange(true);
      return;
    }
    this.discarding = true;
    this.discarded = 0;
    this.drainAfter = true;
    this.queue.length = 0;
    this.queued = 0;
    if (this.paused && this.stash === null) {
      this.paused = false;
      this.socket.resume();
    }
  }

  /** Answers with a short server-generated response; `close` ends the connection after it. */
  private errorResponse(status: number, message: string, close: boolean): void {
    if (this.phase === P_CLOSED) return;
    close = close || !this.keepAlive || this.host.closing || (this.bodyKind !== B_NONE && this.phase === P_BODY);
    const body = message === '' ? '' : `${message}\n`;
    const headers = new Headers(4);
    headers.push('Content-Type', 'text/plain; charset=utf-8');
    if (this.extra !== null) {
      for (const [k, v] of this.extra) headers.set(k, v);
      this.extra = null;
    }
    const req = this.req;
    const hooks = this.host.hooks;
    let st = status;
    if (req !== null && hooks !== null && hooks.onResponseHead !== null) {
      const res = new Response(status, body, { headers, copyHeaders: false, request: req });
      try {
        hooks.onResponseHead.call(res, req);
        st = res.status;
      } catch (err) {
        this.host.reportError(err, req);
      }
    }
    let head: string;
    try {
      head = serializeStatusLine(st, '') + serializeFields(headers, -1, true);
    } catch {
      head = serializeStatusLine(status, '');
    }
    head += `Content-Length: ${Buffer.byteLength(body)}\r\n` + dateField();
    head += close ? 'Connection: close\r\n\r\n' : '\r\n';
    this.send(encodeMessage(head, body));
    this.finishExchange(close);
  }

  private headError(err: unknown): void {
    this.keepAlive = false;
    if (this.timerKind !== T_NONE) this.disarm();
    const status = statusFor(err);
    this.errorResponse(status, err instanceof Error ? err.message : 'bad request', true);
  }

  /** The exchange is over: reset for the next request, or close. */
  private finishExchange(close: boolean): void {
    this.req = null;
    this.extra = null;
    this.discarding = false;
    this.drainAfter = false;
    this.bodyKind = B_NONE;
    this.collected = null;
    this.decoder = null;
    if (this.timerKind === T_BODY) this.disarm();
    if (close || this.host.closing) {
      this.closeSocket();
      return;
    }
    this.parser.reset();
    this.phase = P_HEAD;
    this.idle = true;
    const opts = this.host.opts;
    // The idle wait starts once the response has left; until then writeTimeout guards it.
    if (opts.idleTimeout > 0 && !this.socket.writableNeedDrain) this.arm(opts.idleTimeout, T_IDLE);
    const s = this.takeStash();
    if (s !== null) {
      if (this.paused) {
        this.paused = false;
        this.socket.resume();
      }
      // Called from a promise callback, never from inside process(): safe to re-enter.
      if (!this.batching) this.onData(s);
      else this.process(s, 0);
    }
  }

  // ---- writing -----------------------------------------------------------------------------

  /** Queues bytes; a Promise when the socket asks to wait ('drain'). */
  send(data: Uint8Array | string): Promise<void> | undefined {
    if (this.phase === P_CLOSED || this.socket.destroyed) return undefined;
    if (this.batching) {
      const b = typeof data === 'string' ? Buffer.from(data, 'latin1') : (data as Buffer);
      this.out.push(b);
      this.outBytes += b.length;
      return undefined;
    }
    const ok = typeof data === 'string' ? this.socket.write(data, 'latin1') : this.socket.write(data);
    if (ok) return undefined;
    return this.waitDrain();
  }

  private drainWaiters: (() => void)[] = [];

  private waitDrain(): Promise<void> {
    this.armWrite();
    return new Promise((resolve) => this.drainWaiters.push(resolve));
  }

  private armWrite(): void {
    const ms = this.host.opts.writeTimeout;
    if (ms > 0 && this.writeTimer === null) {
      this.sentAtArm = bytesSent(this.socket);
      this.writeTimer = setTimeout(this.onWriteTimeout, ms);
      this.writeTimer.unref();
    }
  }

  private readonly onWriteTimeout = (): void => {
    this.writeTimer = null;
    // Bytes taken since: the peer reads, only slowly (a large write drains only at its end).
    if (bytesSent(this.socket) > this.sentAtArm) {
      this.armWrite();
      return;
    }
    // The peer stopped reading: nothing more can be said to it.
    this.phase = P_CLOSED;
    this.socket.destroy();
  };

  private readonly onDrain = (): void => {
    if (this.writeTimer !== null) {
      clearTimeout(this.writeTimer);
      this.writeTimer = null;
    }
    if (this.writeBlocked) this.unblockReads();
    const opts = this.host.opts;
    if (this.phase === P_HEAD && this.idle && opts.idleTimeout > 0 && this.timerKind === T_NONE) this.arm(opts.idleTimeout, T_IDLE);
    const w = this.drainWaiters;
    if (w.length === 0) return;
    this.drainWaiters = [];
    for (const fn of w) fn();
  };

  private flush(): void {
    const out = this.out;
    const n = out.length;
    if (n === 0) return;
    this.outBytes = 0;
    const sock = this.socket;
    if (sock.destroyed) {
      out.length = 0;
      return;
    }
    let ok: boolean;
    if (n === 1) {
      ok = sock.write(out[0]!);
    } else {
      let total = 0;
      for (let i = 0; i < n; i++) total += out[i]!.length;
      if (total <= COALESCE_BYTES) {
        // Many small responses (pipelining): one copy into one buffer beats a writev of many.
        ok = sock.write(Buffer.concat(out as Buffer[], total));
      } else {
        // Large bodies: hand the pieces to one writev instead of copying them together.
        sock.cork();
        ok = true;
        for (let i = 0; i < n; i++) ok = sock.write(out[i]!) && ok;
        sock.uncork();
      }
    }
    out.length = 0;
    if (!ok) this.armWrite();
    if (this.phase === P_CLOSED) this.endSocket();
  }

  /** `Date` and Connection fields `headers` lacks; decides whether the connection closes after this exchange. */
  connectionFields(close: boolean, headers: Headers): { fields: string; close: boolean } {
    const flags = scanHeaders(headers);
    let c = close || !this.keepAlive || this.host.closing || (flags & H_CONN_CLOSE) !== 0;
    if (!this.bodyEnded && !c) {
      // The head goes out before the body was read: if the client was told to wait (Expect)
      // it will never send the body, and a large or unsized rest may be too much to drain.
      if ((this.expectContinue && !this.continueSent) || this.bodyKind === B_CHUNKED || this.bodyRemaining > DRAIN_LIMIT) c = true;
    }
    const minor = this.req?.protoMinor ?? 1;
    return { fields: ((flags & H_DATE) === 0 ? dateField() : '') + connectionField(c, flags, minor), close: c };
  }

  /** Runs the `onResponseHead` taps for a stream's response. */
  responseHead(response: Response, request: Request): void {
    const h = this.host.hooks;
    if (h !== null && h.onResponseHead !== null) h.onResponseHead.call(response, request);
  }

  /** `ServerExchange.setHeader` in request-handler mode: applied to whatever response is written. */
  addExtraHeader(name: string, value: string): void {
    (this.extra ??= new Headers()).set(name, value);
  }

  // ---- closing -----------------------------------------------------------------------------

  private closeSocket(): void {
    if (this.phase === P_CLOSED) return;
    this.phase = P_CLOSED;
    if (this.timer !== null) this.stopTimer();
    if (!this.batching) this.endSocket();
  }

  private endSocket(): void {
    const s = this.socket;
    if (s.destroyed) return;
    s.end();
    // Keep reading (and dropping) what the peer still sends, so the kernel does not answer
    // unread data with a reset that could destroy our response; give up after a while.
    if (this.paused) s.resume();
    setTimeout(() => s.destroy(), LINGER_MS).unref();
  }

  private readonly onClose = (): void => {
    const wasClosed = this.phase === P_CLOSED;
    this.phase = P_CLOSED;
    // Drop what was read or queued for this connection now, not when the object goes.
    this.stash = null;
    this.stashed = 0;
    this.out.length = 0;
    this.queue.length = 0;
    if (this.timer !== null) this.stopTimer();
    if (this.writeTimer !== null) {
      clearTimeout(this.writeTimer);
      this.writeTimer = null;
    }
    const w = this.waiter;
    if (w !== null) {
      this.waiter = null;
      w.reject(new ParseError('client closed the connection before the request body ended'));
    }
    for (const fn of this.drainWaiters) fn();
    this.drainWaiters = [];
    const req = this.req;
    if (req !== null && !wasClosed) req.ctx.cancel('client closed the connection');
    // A producer behind a streamed body (SSE, a file) stops now, not at its next write; after
    // the cancel, so a body that follows the context reports why.
    const out = this.outBody;
    if (out !== null) {
      this.outBody = null;
      out.close();
    }
    this.host.removeConnection(this);
  };

  private detach(): void {
    const s = this.socket;
    s.removeListener('data', this.onData);
    s.removeListener('close', this.onClose);
    s.removeListener('drain', this.onDrain);
    s.removeListener('error', onSocketError);
    if (this.timer !== null) this.stopTimer();
    // A write still waiting is the new owner's now (its 'drain' no longer reaches us).
    if (this.writeTimer !== null) {
      clearTimeout(this.writeTimer);
      this.writeTimer = null;
    }
    this.host.adoptUpgraded(s);
    this.host.removeConnection(this);
  }

  // ---- timers ------------------------------------------------------------------------------

  /**
   * Times a wait of `ms` (0: none). A timer still running that fires no later than this wait
   * ends is kept (it re-arms for the rest when it fires early), so a kept-alive connection
   * moving from wait to wait sets no timer per request; only one due later is replaced.
   */
  private arm(ms: number, kind: number): void {
    if (ms <= 0) {
      this.timerKind = T_NONE;
      return;
    }
    const due = performance.now() + ms;
    this.timerKind = kind;
    this.due = due;
    if (this.timer !== null) {
      if (this.timerDue <= due) return;
      clearTimeout(this.timer);
    }
    this.timerDue = due;
    this.timer = setTimeout(this.onTimer, ms);
    this.timer.unref();
  }

  /** Nothing is timed now; a running timer stays for the next wait (it finds nothing to do). */
  private disarm(): void {
    this.timerKind = T_NONE;
  }

  /** The connection is done with timers. */
  private stopTimer(): void {
    if (this.timer !== null) clearTimeout(this.timer);
    this.timer = null;
    this.timerKind = T_NONE;
  }

  private readonly onTimer = (): void => {
    const kind = this.timerKind;
    this.timer = null;
    if (kind === T_NONE) return;
    const left = this.due - performance.now();
    if (left > 1) {
      // Fired for an earlier wait: time the rest of this one.
      this.timerDue = this.due;
      this.timer = setTimeout(this.onTimer, left);
      this.timer.unref();
      return;
    }
    this.timerKind = T_NONE;
    if (this.phase === P_CLOSED) return;
    if (kind === T_IDLE || (kind === T_HEADER && this.parser.bytesSeen === 0 && this.idle)) {
      this.closeSocket();
      return;
    }
    if (kind === T_HEADER || kind === T_BODY) {
      const committed = this.stream !== null && this.stream.isCommitted;
      if (committed || (this.phase !== P_HEAD && this.phase !== P_BODY)) {
        this.socket.destroy();
        return;
      }
      this.keepAlive = false;
      this.bodyError = new ProtocolError('request body timed out');
      if (this.stream !== null) {
        // The stream handler sees the failure on its read and the server answers 408.
        const w = this.waiter;
        this.waiter = null;
        w?.reject(this.bodyError);
      }
      this.errorResponse(408, 'request timed out', true);
    }
  };
}

const EMPTY: Uint8Array = Buffer.alloc(0);

function onSocketError(): void {
  // Errors end in 'close', where the connection cleans up; nothing to add here.
}

/** @internal Status for a head or body error: 431/414 for limits, 501 for a transfer coding not implemented, 400 otherwise. */
export function statusFor(err: unknown): number {
  if (err instanceof ProtocolError) {
    if (err.notImplemented) return 501;
    if (err.limit === 'maxHeaderBytes') return 431;
    if (err.limit === 'maxLineBytes') return err.line === 'request line' ? 414 : 431;
    if (err.limit === 'maxBodyBytes') return 413;
    return 400;
  }
  return 400;
}

/** One pass over the response's header names for the few the server must know about. */
function scanHeaders(h: Headers): number {
  const names = h._names;
  let flags = 0;
  for (let i = 0; i < names.length; i++) {
    const n = names[i]!;
    switch (n.length) {
      case 4:
        if (eqIgnoreCase(n, 'date')) flags |= H_DATE;
        break;
      case 10:
        if (eqIgnoreCase(n, 'connection')) {
          flags |= H_CONNECTION;
          // The close token, not the substring: `Connection: x-closed` keeps the connection.
          if ((connectionFlags(h._values[i]!) & CONN_CLOSE) !== 0) flags |= H_CONN_CLOSE;
        }
        break;
      case 14:
        if (eqIgnoreCase(n, 'content-length')) flags |= H_FRAMING;
        break;
      case 17:
        if (eqIgnoreCase(n, 'transfer-encoding')) flags |= H_FRAMING;
        break;
    }
  }
  return flags;
}

function connectionField(close: boolean, flags: number, minor: number): string {
  if ((flags & H_CONNECTION) !== 0) return '';
  if (close) return 'Connection: close\r\n';
  return minor === 0 ? 'Connection: keep-alive\r\n' : '';
}

/** The exchange `server.onRequest` taps see in request-handler mode. */
class RequestExchange implements ServerExchange {
  readonly request: Request;
  readonly protocol = 'http/1.1';
  private readonly conn: H1Connection;
  constructor(request: Request, conn: H1Connection) {
    this.request = request;
    this.conn = conn;
  }
  get server(): ServerInfo {
    return this.conn.info;
  }
  peerAddr(): PeerAddr {
    return this.conn.peerAddr();
  }
  setHeader(name: string, value: string): void {
    this.conn.addExtraHeader(name, value);
  }
}

/** Writes a whole Response through a stream (a hook's answer in stream-handler mode; `streamHandler`). */
export async function writeResponseToStream(stream: Stream, res: Response): Promise<void> {
  stream.setStatus(res.status, res.reason);
  if (res.close) stream.setHeader('Connection', 'close');
  for (const [k, v] of res.headers) {
    if (eqIgnoreCase(k, 'content-length') || eqIgnoreCase(k, 'transfer-encoding')) continue;
    stream.appendHeader(k, v);
  }
  // Before any byte: trailers that may not be sent are refused while a 500 can still go out.
  if (res.hasTrailers) stream.addTrailer(res.trailers);
  const body = res.body;
  if (body instanceof AbstractBody) {
    const known = res.contentLength >= 0 ? res.contentLength : body.length;
    if (known >= 0) stream.setHeader('Content-Length', String(known));
    else if (res.headers.has('Content-Length')) stream.setHeader('Content-Length', res.headers.get('Content-Length')!);
    try {
      for await (const chunk of body) await stream.write(chunk);
    } finally {
      body.close();
    }
  } else if (body !== null && body.length > 0) {
    const bytes = typeof body === 'string' ? Buffer.from(body, 'utf8') : body;
    stream.setHeader('Content-Length', String(bytes.length));
    await stream.write(bytes);
  } else if (res.headers.has('Content-Length') && (stream.request.method === 'HEAD' || res.status === 304)) {
    stream.setHeader('Content-Length', res.headers.get('Content-Length')!);
  }
  await stream.closeWrite();
}
