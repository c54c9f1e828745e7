/**
 * One HTTP/1.1 server connection: parses request heads as bytes arrive, decodes bodies, hands
 * each exchange to the server's pipeline on the connection's {@link H1Wire}, writes responses
 * in request order, and enforces keep-alive, limits and timeouts.
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
import type { ServerHooks, ServerInfo, Tapped, UpgradeInfo } from '../hooks.js';
import { nobody } from '../message/body.js';
import { Headers } from '../message/headers.js';
import { type Request, requestFromWire } from '../message/request.js';
import { ChunkedDecoder } from '../http1/chunked.js';
import { buildResponseHead } from '../http1/framing.js';
import { CONN_UPGRADE, type HeadParser } from '../http1/head-parser.js';
import { encodeMessage } from '../http1/serialize.js';
import { dateField } from './date.js';
import type { ResolvedServerOptions } from './options.js';
import { PeerAddr, socketPeer } from './peer.js';
import { statusFor } from './error-status.js';
import type { ExchangePipeline, StreamHandler } from './exchange.js';
import { H1Wire, type H1WireConnection } from './h1-wire.js';
import { OutBatch } from './out-batch.js';
import { readDirect, unboundReads } from '../socket-reads.js';
import type { HeadParserPool } from './parser-pool.js';
import type { Timed, TimerHeap } from './timer-heap.js';
import { bytesSent } from '../socket-progress.js';
import { publishUpgrade } from '../diagnostics.js';

/** @internal What a connection needs from its server. */
export interface ConnectionHost {
  readonly opts: ResolvedServerOptions;
  readonly info: ServerInfo;
  readonly hooks: Tapped<ServerHooks> | null;
  readonly streamHandler: StreamHandler | null;
  /** True once a close began and the listener is closed: finish the exchange in flight (its response says `Connection: close`), then close. */
  readonly connectionsClose: boolean;
  /** How long a kept-alive connection idle while the server closes stays open for a request on its way (0: it closes at once). */
  readonly idleGrace: number;
  removeConnection(conn: H1Connection): void;
  /** The connection handed its socket over (`Upgrade`): the server keeps counting the socket until it closes. */
  adoptUpgraded(socket: Duplex): void;
  reportError(err: unknown, request: Request | null): void;
  /** The server's exchange pipeline (also the host protocol plugins see, handed on with an upgraded socket: `Upgrade: h2c`). */
  readonly pipeline: ExchangePipeline;
  /** Where a connection takes its head parser from when a request begins, and gives it back to when the exchange ends. */
  readonly parsers: HeadParserPool;
  /** The deadlines of the server's connections (head, body and idle waits). */
  readonly timers: TimerHeap;
}

const P_HEAD = 0;
const P_BODY = 1;
const P_BUSY = 2;
const P_CLOSED = 3;
const P_UPGRADED = 4;

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
/**
 * @internal How long a head still arriving when the server closes may take, and the first
 * request of a connection accepted but not used yet (Go's `Shutdown` allows a new connection 5 s).
 */
export const HEAD_AT_CLOSE_MS = 5000;
/** How long a closing connection keeps draining what the peer still sends. */
const LINGER_MS = 2000;

const CONTINUE = 'HTTP/1.1 100 Continue\r\n\r\n';

/** The connection a socket's events go to (see H1Connection.onSocketData). */
const kConnection = Symbol('h1Connection');
type ConnSocket = Socket & { [kConnection]?: H1Connection | undefined };

/** @internal */
export class H1Connection implements H1WireConnection, Timed {
  readonly socket: Socket;
  private readonly host: ConnectionHost;
  /** Held from a request's first byte until its exchange ends (see HeadParserPool); null while idle. */
  private parser: HeadParser | null = null;
  /** Bytes of the current request's head (the chunked decoder's limits count them). */
  private headBytes = 0;
  private phase = P_HEAD;
  /** Waiting for the first byte of a request (a graceful close may drop the connection now, once it was used). */
  private idle = true;
  /**
   * A response went out and the connection was kept alive. Until then an idle connection is
   * one whose client just connected to send a request: closing it would lose that request.
   */
  private used = false;
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
  private readonly out = new OutBatch();
  /**
   * The clock when this read's first timer was armed (-1: none yet). The timers armed while a
   * read is handled share one clock reading (pipelined requests arm two each), so a wait may
   * end early by at most the time that read took to handle.
   */
  private readAt = -1;
  // Deadlines exist only when the server has timeouts. One deadline in the server's timer heap
  // times the head, body and idle waits: it is left set between them and fires by the earliest
  // (see arm).
  private timerKind = T_NONE;
  /** When the wait being timed ends (`performance.now()`). */
  private due = 0;
  /** @internal {@link Timed.timerIndex}: this connection's place in the server's timer heap (-1: none). */
  timerIndex = -1;
  /** @internal {@link Timed.timerDue}: when this connection's deadline fires. */
  timerDue = 0;
  /** Runs while written bytes wait for the peer to read them (writeTimeout). */
  private writeTimer: NodeJS.Timeout | null = null;
  /** Bytes the peer had taken when the write timer was armed. */
  private sentAtArm = 0;
  private peer: PeerAddr | null = null;
  /** The wire every exchange of this connection runs on, one at a time. */
  private readonly wire: H1Wire;

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
  /** The request body was read to its end (or there was none). */
  private bodyEnded = false;
  // Stream handlers: the body queue and its reader.
  /** Request-body bytes not yet read; a stream handler's connections only (the rest share an empty list never added to). */
  private readonly queue: Uint8Array[];
  private queued = 0;
  private bodyErr: Error | null = null;
  private waiter: { resolve(v: Uint8Array | null): void; reject(e: Error): void } | null = null;
  private discarding = false;
  /** A stream handler finished without reading the whole body: drain it (bounded), then reuse the connection. */
  private drainAfter = false;
  private discarded = 0;
  /** The connection answers by itself (413, 408, …): the exchange ends with that answer. */
  private answering = false;
  /** The response asked the connection to close after it. */
  private closeAfter = false;

  /** The read being processed and where its bytes after the current head begin and end (while the head is handled). */
  private restBuf: Buffer | null = null;
  private restOff = 0;
  private restEnd = 0;
  /** The request asks to change protocol (Upgrade, CONNECT): its stream handler runs after the read is taken in. */
  private mayUpgrade = false;
  /** Reads come straight from the socket's handle (`readDirect`), not as 'data' events. */
  private direct = false;
  /** The bytes being processed are a view valid only during this read: copy what is kept. */
  private transient = false;

  /** `parseStash` bound, made the first time this connection needs it. */
  private parseStashFn: (() => void) | null = null;

  // Socket listeners and timer callbacks are shared by every connection (the socket, or the
  // timer's argument, says which), not bound per connection: an idle connection keeps no
  // function objects of its own.
  private static onSocketData(this: ConnSocket, chunk: Buffer): void {
    this[kConnection]!.onData(chunk);
  }

  private static onSocketRead(this: ConnSocket, nread: number, buf: Buffer): boolean {
    const conn = this[kConnection]!;
    conn.transient = true;
    try {
      // The whole shared buffer with an end, not a view per read: the head parser's word view
      // of it is then made once.
      conn.onData(buf, nread);
    } finally {
      conn.transient = false;
    }
    return true;
  }

  private static onSocketClose(this: ConnSocket): void {
    this[kConnection]!.onClose();
  }

  private static onSocketDrain(this: ConnSocket): void {
    this[kConnection]!.onDrain();
  }

  private static onWriteTimer(conn: H1Connection): void {
    conn.onWriteTimeout();
  }

  constructor(host: ConnectionHost, socket: Socket) {
    this.host = host;
    this.socket = socket;
    this.queue = host.streamHandler !== null ? [] : NO_QUEUE;
    this.wire = new H1Wire(this);
    (socket as ConnSocket)[kConnection] = this;
    socket.on('data', H1Connection.onSocketData);
    socket.on('error', onSocketError);
    socket.on('close', H1Connection.onSocketClose);
    socket.on('drain', H1Connection.onSocketDrain);
    // 'data' stays subscribed: it keeps the socket flowing (so 'end' comes), and carries the
    // reads of a socket that cannot be read directly (TLS).
    this.direct = readDirect(socket, H1Connection.onSocketRead);
    if (host.opts.timeouts) this.arm(host.opts.readHeaderTimeout, T_HEADER);
  }

  /** The listener. */
  get info(): ServerInfo {
    return this.host.info;
  }

  /** True while the socket can still be written (and was not handed over). */
  get writable(): boolean {
    return this.phase < P_CLOSED && !this.socket.destroyed && this.socket.writable;
  }

  /** Why the request body could not be read, or null. */
  get bodyError(): unknown {
    return this.bodyErr;
  }

  /** The client's address (one object per connection). */
  peerAddr(): PeerAddr {
    return (this.peer ??= socketPeer(this.socket) ?? new PeerAddr('', 0));
  }

  /** Feeds bytes that were read before the connection was made (protocol detection). */
  start(head: Uint8Array | null): void {
    if (head !== null && head.length > 0) this.onData(Buffer.from(head.buffer, head.byteOffset, head.length));
  }

  /**
   * Graceful close: close the connection when it is kept alive with no request in progress,
   * now, or once it stayed idle the server's `idleGrace` more. A head still arriving is no
   * request in flight yet, and a connection never used is one whose client is sending its first
   * request: they get at most {@link HEAD_AT_CLOSE_MS} more. A request that comes meanwhile is
   * answered with `Connection: close`.
   */
  closeIfIdle(): void {
    if (this.phase !== P_HEAD) return;
    if (this.idle && this.used && this.stash === null) {
      const idleGrace = this.host.idleGrace;
      if (idleGrace > 0) this.arm(idleGrace, T_IDLE);
      else this.closeSocket();
    } else this.arm(Math.min(this.host.opts.readHeaderTimeout || HEAD_AT_CLOSE_MS, HEAD_AT_CLOSE_MS), T_HEADER);
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
    if (!this.host.pipeline.closeStreamedBody(this.wire)) this.destroy();
  }

  // ---- reading ---------------------------------------------------------------------------

  private onData(chunk: Buffer, end: number = chunk.length): void {
    const phase = this.phase;
    if (phase === P_BUSY || this.writeBlocked) {
      this.stashBytes(chunk, 0, end);
      return;
    }
    if (phase >= P_CLOSED) return;
    this.batching = true;
    this.readAt = -1;
    try {
      this.process(chunk, 0, end);
    } finally {
      this.batching = false;
      this.flush();
    }
  }

  private process(buf: Buffer, off: number, end: number): void {
    while (off < end) {
      const phase = this.phase;
      if (phase === P_HEAD) {
        if (this.idle) {
          if (this.out.bytes > BATCH_HIGH_WATER) this.flush();
          if (this.socket.writableNeedDrain) {
            this.blockReads(buf, off, end);
            return;
          }
          this.idle = false;
          this.parser ??= this.host.parsers.take();
          // The first byte of a request: the idle wait is over, the head's own limit starts
          // (none when timeouts are off: a close's idle grace must not cut the request).
          if (this.host.opts.timeouts) this.arm(this.host.opts.readHeaderTimeout, T_HEADER);
          else if (this.timerKind !== T_NONE) this.disarm();
        }
        const parser = this.parser!;
        let n: number;
        try {
          n = parser.execute(buf, off, end);
        } catch (err) {
          this.headError(err);
          return;
        }
        off += n;
        if (!parser.complete) return;
        // What follows the head in this read, for a stream handler that takes the socket
        // before it is read (see takeSocket).
        this.restBuf = buf;
        this.restOff = off;
        this.restEnd = end;
        this.onHead(parser);
        this.restBuf = null;
      } else if (phase === P_BODY) {
        off = this.feedBody(buf, off, end);
      } else if (phase === P_BUSY) {
        this.stashBytes(buf, off, end);
        return;
      } else {
        return;
      }
    }
  }

  private stashBytes(buf: Buffer, off: number, end: number): void {
    let rest = off === 0 && end === buf.length ? buf : buf.subarray(off, end);
    // A small rest of a large read is copied out, so it does not keep the whole read alive; a
    // direct read's bytes are the shared read buffer's, so they are always copied.
    if (this.transient || rest.length <= buf.buffer.byteLength >> 2) rest = Buffer.from(rest);
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
  private blockReads(buf: Buffer, off: number, end: number): void {
    this.writeBlocked = true;
    this.stashBytes(buf, off, end);
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

  private onHead(p: HeadParser): void {
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
    this.headBytes = p.headBytes;
    this.keepAlive = p.keepAlive;
    this.mayUpgrade = p.upgrade || p.method === 'CONNECT';
    this.expectContinue = p.expectContinue && p.versionMinor === 1 && kind !== B_NONE;
    this.continueSent = false;
    const req = requestFromWire(p.method, p.target, p.headers, null, kind === B_LENGTH ? length : kind === B_NONE ? 0 : -1, p.versionMinor);
    this.req = req;
    this.bodyEnded = kind === B_NONE;
    this.wire.begin(p.method, p.versionMinor, this.host.streamHandler !== null);

    if (!p.expectContinue && p.headers.has('Expect')) {
      // RFC 9110 §10.1.1: an expectation the server cannot meet gets 417.
      this.answer(417, 'unsupported Expect');
      return;
    }
    const hooks = this.host.hooks;
    // RFC 9110 §7.8: a server MUST ignore Upgrade in an HTTP/1.0 request.
    if (hooks !== null && hooks.onUpgrade !== null && p.upgrade && (p.connection & CONN_UPGRADE) !== 0 && p.versionMinor >= 1) {
      this.phase = P_BUSY;
      void Promise.resolve().then(() => this.offerUpgrade(req));
      return;
    }
    this.beginExchange(req, opts);
  }

  private beginExchange(req: Request, opts: ResolvedServerOptions): void {
    const kind = this.bodyKind;
    if (this.host.streamHandler !== null) {
      if (this.queue.length !== 0) this.queue.length = 0;
      this.queued = 0;
      this.bodyErr = null;
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
      this.answer(413, `request body of ${this.bodyRemaining} bytes exceeds maxBodyBytes (${max})`);
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
    return new ChunkedDecoder({ maxLineBytes: this.host.opts.maxLineBytes, maxHeaderBytes: this.host.opts.maxHeaderBytes, headBytes: this.headBytes });
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
      this.queue.push(this.transient ? Buffer.from(data) : data);
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
      this.answer(413, `request body exceeds maxBodyBytes (${max})`);
      return;
    }
    this.collected!.push(this.transient ? Buffer.from(data) : data);
  }

  private bodyDone(): void {
    if (this.timerKind === T_BODY) this.disarm();
    const req = this.req!;
    this.decoder = null;
    this.bodyEnded = true;
    if (this.host.streamHandler !== null) {
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
    this.dispatch(req);
  }

  private bodyFailed(err: Error): void {
    if (this.host.streamHandler !== null) {
      this.bodyErr = err;
      const w = this.waiter;
      if (w !== null) {
        this.waiter = null;
        w.reject(err);
      }
      this.phase = P_BUSY;
      this.keepAlive = false;
      return;
    }
    this.answer(statusFor(err), err.message);
  }

  /** Next chunk of the request body for a stream handler, or null at its end. */
  readBody(): Promise<Uint8Array | null> {
    if (this.queued > 0) return Promise.resolve(this.takeQueued());
    if (this.bodyErr !== null) return Promise.reject(this.bodyErr);
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
    socket.removeListener('data', H1Connection.onSocketData);
    // A tap that takes the socket reads it as a stream.
    if (this.direct) unboundReads(socket);
    const head = this.takeStash() ?? EMPTY;
    hook.promise(req, socket, { head, server: this.host.info, host: this.host.pipeline }).then(
      (claimed) => {
        if (claimed === true) {
          this.phase = P_UPGRADED;
          this.detach();
          publishUpgrade(req);
          return;
        }
        // Unclaimed: an ordinary request (RFC 9110 §7.8 lets a server ignore Upgrade).
        socket.on('data', H1Connection.onSocketData);
        if (this.direct) readDirect(socket, H1Connection.onSocketRead);
        this.phase = P_HEAD;
        this.beginExchange(req, this.host.opts);
        if (head.length > 0) this.onData(Buffer.from(head.buffer, head.byteOffset, head.length));
        if (!this.paused) socket.resume();
      },
      (err: unknown) => {
        this.host.reportError(err, req);
        socket.on('data', H1Connection.onSocketData);
        if (this.direct) readDirect(socket, H1Connection.onSocketRead);
        socket.resume();
        this.answer(500, 'upgrade failed');
      },
    );
  }

  /** Runs a request handler's exchange; the wire's last write tells when its response is out ({@link H1Connection.responseDone}). */
  private dispatch(req: Request): void {
    this.phase = P_BUSY;
    try {
      // The Promise (when the exchange goes on) is not needed: it never rejects, and the wire
      // reports the end of the response.
      void this.host.pipeline.run(req, this.wire);
    } catch (err) {
      this.host.reportError(err, req);
      this.responseFailed();
    }
  }

  private runStream(req: Request): void {
    // A request without a body that asks for no other protocol runs now, as a request handler
    // does (its answer joins the read's batch of responses); any other a microtask later, so the
    // rest of this read is queued as body (or stashed for the protocol's new owner) first.
    if (this.bodyKind === B_NONE && !this.mayUpgrade) this.startStream(req);
    else queueMicrotask(() => this.startStream(req));
  }

  private startStream(req: Request): void {
    let p: Promise<void> | undefined;
    try {
      p = this.host.pipeline.run(req, this.wire);
    } catch (err) {
      this.host.reportError(err, req);
      this.responseFailed();
      return;
    }
    // Over already (the usual short answer): no Promise to wait on.
    if (p === undefined) this.streamDone(req);
    else void p.then(() => this.streamDone(req));
  }

  /** {@link H1WireConnection.takeSocket}: see `Stream.upgrade`. */
  takeSocket(): { socket: Duplex } & UpgradeInfo {
    if (this.phase === P_CLOSED || this.socket.destroyed) throw new ProtocolError('cannot upgrade: the client closed the connection');
    if (this.bodyKind !== B_NONE && !this.bodyEnded) throw new ArgumentError('cannot upgrade a request that has an unread body');
    const socket = this.socket;
    socket.pause();
    this.paused = true;
    // Taken while its head is handled: the rest of that read is the new owner's too.
    const rest = this.restBuf;
    if (rest !== null) {
      this.restBuf = null;
      if (this.restEnd > this.restOff) this.stashBytes(rest, this.restOff, this.restEnd);
    }
    const head = this.takeStash() ?? EMPTY;
    this.phase = P_UPGRADED;
    this.detach();
    return { socket, head, server: this.host.info, host: this.host.pipeline };
  }

  /** A stream handler's exchange is over (its response was answered, or abandoned). */
  private streamDone(req: Request): void {
    if (this.phase === P_UPGRADED || this.req !== req) return;
    if (this.waiter !== null) {
      this.waiter.reject(new ProtocolError('the stream handler returned'));
      this.waiter = null;
    }
    if (this.phase === P_CLOSED) return;
    const close = this.closeAfter || !this.keepAlive || !this.wire.finished;
    if (close || this.bodyEnded) {
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

  /**
   * The connection answers by itself (an unmet expectation, a body too large, too slow or
   * malformed, a failed upgrade) through the pipeline, as every answer goes, and closes after it.
   */
  private answer(status: number, message: string): void {
    if (this.phase === P_CLOSED) return;
    this.keepAlive = false;
    const req = this.req;
    if (req === null) {
      this.answerBare(status, message);
      return;
    }
    this.answering = true;
    this.host.pipeline.answer(req, this.wire, status, message);
    // The wire had already finished the exchange's response (or the answer did not go out).
    if (this.answering && this.phase < P_CLOSED) this.closeSocket();
  }

  /** An answer before any request is known (a head that cannot be parsed, or never came): no hooks see it. */
  private answerBare(status: number, message: string): void {
    const body = message === '' ? '' : `${message}\n`;
    const headers = new Headers(1);
    headers.push('Content-Type', 'text/plain; charset=utf-8');
    this.send(encodeMessage(buildResponseHead(status, '', headers, 'length', Buffer.byteLength(body), dateField() + 'Connection: close\r\n'), body));
    this.finishExchange(true);
  }

  private headError(err: unknown): void {
    this.keepAlive = false;
    if (this.timerKind !== T_NONE) this.disarm();
    this.answer(statusFor(err), err instanceof Error ? err.message : 'bad request');
  }

  /** The exchange is over: reset for the next request, or close. */
  private finishExchange(close: boolean): void {
    this.req = null;
    this.answering = false;
    this.closeAfter = false;
    this.discarding = false;
    this.drainAfter = false;
    this.bodyKind = B_NONE;
    this.collected = null;
    this.decoder = null;
    if (this.timerKind === T_BODY) this.disarm();
    this.releaseParser();
    // A response that began before the server closed told the client the connection stays:
    // it is closed as an idle one is, at once or after the server's idle grace.
    const closing = this.host.connectionsClose;
    const grace = closing && !close ? this.host.idleGrace : 0;
    if (close || (closing && grace === 0)) {
      this.closeSocket();
      return;
    }
    this.phase = P_HEAD;
    this.idle = true;
    this.used = true;
    const opts = this.host.opts;
    const idleMs = grace > 0 ? grace : opts.idleTimeout;
    // The idle wait starts once the response has left; until then writeTimeout guards it.
    if (idleMs > 0 && !this.socket.writableNeedDrain) this.arm(idleMs, T_IDLE);
    if (this.stash !== null) {
      if (this.paused) {
        this.paused = false;
        this.socket.resume();
      }
      if (this.batching) {
        const s = this.takeStash()!;
        this.process(s, 0, s.length);
      }
      // Outside a read (a response that finished later): the next request starts once the call
      // that ended this one has returned, so the wire is never reused beneath its caller.
      else queueMicrotask((this.parseStashFn ??= () => this.parseStash()));
    }
  }

  /** Parses what arrived while the last exchange ran (see finishExchange). */
  private parseStash(): void {
    if (this.phase !== P_HEAD || this.writeBlocked) return;
    const s = this.takeStash();
    if (s !== null) this.onData(s);
  }

  // ---- writing -----------------------------------------------------------------------------

  /** {@link H1WireConnection.flushed}: nothing waits in this read's batch nor in the socket. */
  get flushed(): boolean {
    return !this.batching && this.socket.writableLength === 0;
  }

  /** Queues bytes; a Promise when the socket asks to wait ('drain'). */
  send(data: Uint8Array | string): Promise<void> | undefined {
    if (this.phase === P_CLOSED || this.socket.destroyed) return undefined;
    if (this.batching) {
      this.out.add(data);
      return undefined;
    }
    const ok = typeof data === 'string' ? this.socket.write(data, 'latin1') : this.socket.write(data);
    if (ok) return undefined;
    return this.waitDrain();
  }

  /** {@link H1WireConnection.sendMessage}. */
  sendMessage(head: string, body: Uint8Array | string): Promise<void> | undefined {
    if (this.phase === P_CLOSED || this.socket.destroyed) return undefined;
    if (this.batching) {
      this.out.addMessage(head, body);
      return undefined;
    }
    return this.send(encodeMessage(head, body));
  }

  /** Who waits for 'drain' (null: nobody yet). */
  private drainWaiters: (() => void)[] | null = null;

  private waitDrain(): Promise<void> {
    this.armWrite();
    return new Promise((resolve) => (this.drainWaiters ??= []).push(resolve));
  }

  private armWrite(): void {
    const ms = this.host.opts.writeTimeout;
    if (ms > 0 && this.writeTimer === null) {
      this.sentAtArm = bytesSent(this.socket);
      this.writeTimer = setTimeout(H1Connection.onWriteTimer, ms, this);
      this.writeTimer.unref();
    }
  }

  private onWriteTimeout(): void {
    this.writeTimer = null;
    // The verdict waits for this turn's I/O: a loop held up as long as the timeout (a busy
    // handler, a long GC) runs its timers before the socket writes it missed, and would take a
    // peer that read all along for one that stopped.
    setImmediate(H1Connection.onWriteVerdict, this);
  }

  private static onWriteVerdict(conn: H1Connection): void {
    conn.writeVerdict();
  }

  private writeVerdict(): void {
    // Closed, drained or waiting anew meanwhile: nothing to judge.
    if (this.phase === P_CLOSED || this.socket.destroyed || this.writeTimer !== null || !this.socket.writableNeedDrain) return;
    // Bytes taken since: the peer reads, only slowly (a large write drains only at its end).
    if (bytesSent(this.socket) > this.sentAtArm) {
      this.armWrite();
      return;
    }
    // The peer stopped reading: nothing more can be said to it.
    this.phase = P_CLOSED;
    this.socket.destroy();
  }

  private onDrain(): void {
    if (this.writeTimer !== null) {
      clearTimeout(this.writeTimer);
      this.writeTimer = null;
    }
    if (this.writeBlocked) this.unblockReads();
    const opts = this.host.opts;
    if (this.phase === P_HEAD && this.idle && opts.idleTimeout > 0 && this.timerKind === T_NONE) this.arm(opts.idleTimeout, T_IDLE);
    const w = this.drainWaiters;
    if (w === null) return;
    this.drainWaiters = null;
    for (const fn of w) fn();
  }

  private flush(): void {
    if (this.out.bytes === 0) return;
    const out = this.out.take();
    const n = out.length;
    const sock = this.socket;
    if (sock.destroyed) {
      out.length = 0;
      return;
    }
    let ok: boolean;
    if (n === 1) {
      // pop() empties the list without setting its length (a runtime call per flush).
      ok = sock.write(out.pop()!);
    } else {
      let total = 0;
      for (let i = 0; i < n; i++) total += out[i]!.length;
      if (total <= COALESCE_BYTES) {
        // Small pieces around a large one: one copy into one buffer beats a writev of many.
        ok = sock.write(Buffer.concat(out, total));
      } else {
        // Large bodies: hand the pieces to one writev instead of copying them together.
        sock.cork();
        ok = true;
        for (let i = 0; i < n; i++) ok = sock.write(out[i]!) && ok;
        sock.uncork();
      }
      out.length = 0;
    }
    if (!ok) this.armWrite();
    if (this.phase === P_CLOSED) this.endSocket();
  }

  /** {@link H1WireConnection.closesAfter}: whether the connection closes after this exchange's response. */
  closesAfter(close: boolean): boolean {
    if (close || !this.keepAlive || this.host.connectionsClose) return true;
    // The head goes out before the body was read: if the client was told to wait (Expect)
    // it will never send the body, and a large or unsized rest may be too much to drain.
    return !this.bodyEnded && ((this.expectContinue && !this.continueSent) || this.bodyKind === B_CHUNKED || this.bodyRemaining > DRAIN_LIMIT);
  }

  /**
   * {@link H1WireConnection.responseDone}: a request handler's exchange (or the connection's own
   * answer) is over with its response; a stream handler's is over when the handler returns.
   */
  responseDone(close: boolean): void {
    if (this.host.streamHandler !== null && !this.answering) {
      this.closeAfter = close;
      return;
    }
    this.finishExchange(close);
  }

  /** {@link H1WireConnection.responseFailed}: the response cannot be completed, so the connection ends (a stream handler's: at once). */
  responseFailed(): void {
    if (this.host.streamHandler === null) {
      this.closeSocket();
      return;
    }
    this.phase = P_CLOSED;
    this.socket.destroy();
  }

  // ---- closing -----------------------------------------------------------------------------

  private closeSocket(): void {
    if (this.phase === P_CLOSED) return;
    this.phase = P_CLOSED;
    if (this.timerIndex >= 0) this.stopTimer();
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

  private onClose(): void {
    const wasClosed = this.phase === P_CLOSED;
    this.phase = P_CLOSED;
    // Drop what was read or queued for this connection now, not when the object goes.
    this.stash = null;
    this.stashed = 0;
    this.out.take().length = 0;
    this.queue.length = 0;
    this.releaseParser();
    if (this.timerIndex >= 0) this.stopTimer();
    if (this.writeTimer !== null) {
      clearTimeout(this.writeTimer);
      this.writeTimer = null;
    }
    const w = this.waiter;
    if (w !== null) {
      this.waiter = null;
      w.reject(new ParseError('client closed the connection before the request body ended'));
    }
    const drained = this.drainWaiters;
    this.drainWaiters = null;
    if (drained !== null) for (const fn of drained) fn();
    const req = this.req;
    if (req !== null && !wasClosed) req.ctx.cancel('client closed the connection');
    // A producer behind a streamed body (SSE, a file) stops now, not at its next write; after
    // the cancel, so a body that follows the context reports why.
    this.host.pipeline.closeStreamedBody(this.wire);
    this.host.removeConnection(this);
  }

  private detach(): void {
    const s = this.socket;
    s.removeListener('data', H1Connection.onSocketData);
    s.removeListener('close', H1Connection.onSocketClose);
    s.removeListener('drain', H1Connection.onSocketDrain);
    (s as ConnSocket)[kConnection] = undefined;
    // The new owner reads the socket as a stream.
    if (this.direct) unboundReads(s);
    s.removeListener('error', onSocketError);
    this.releaseParser();
    if (this.timerIndex >= 0) this.stopTimer();
    // A write still waiting is the new owner's now (its 'drain' no longer reaches us).
    if (this.writeTimer !== null) {
      clearTimeout(this.writeTimer);
      this.writeTimer = null;
    }
    this.host.adoptUpgraded(s);
    this.host.removeConnection(this);
  }

  /** Gives the head parser back to the server's pool (the connection is idle, closed or handed over). */
  private releaseParser(): void {
    const p = this.parser;
    if (p === null) return;
    this.parser = null;
    this.host.parsers.give(p);
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
    let now: number;
    if (!this.batching) now = performance.now();
    else if (this.readAt < 0) now = this.readAt = performance.now();
    else now = this.readAt;
    const due = now + ms;
    this.timerKind = kind;
    this.due = due;
    if (this.timerIndex >= 0 && this.timerDue <= due) return;
    this.host.timers.schedule(this, due);
  }

  /** Nothing is timed now; a running timer stays for the next wait (it finds nothing to do). */
  private disarm(): void {
    this.timerKind = T_NONE;
  }

  /** The connection is done with timers. */
  private stopTimer(): void {
    this.host.timers.cancel(this);
    this.timerKind = T_NONE;
  }

  /** @internal {@link Timed.onTimer}: the deadline came (the heap already let it go). */
  onTimer(): void {
    const kind = this.timerKind;
    if (kind === T_NONE) return;
    const left = this.due - performance.now();
    if (left > 1) {
      // Fired for an earlier wait: time the rest of this one.
      this.host.timers.schedule(this, this.due);
      return;
    }
    this.timerKind = T_NONE;
    if (this.phase === P_CLOSED) return;
    if (kind === T_IDLE || (kind === T_HEADER && this.idle && (this.parser === null || this.parser.bytesSeen === 0))) {
      this.closeSocket();
      return;
    }
    if (kind === T_HEADER || kind === T_BODY) {
      const committed = this.req !== null && this.wire.committed;
      if (committed || (this.phase !== P_HEAD && this.phase !== P_BODY)) {
        this.socket.destroy();
        return;
      }
      this.keepAlive = false;
      this.bodyErr = new ProtocolError('request body timed out');
      // A stream handler sees the failure on its read; the connection answers 408.
      const w = this.waiter;
      this.waiter = null;
      w?.reject(this.bodyErr);
      this.answer(408, 'request timed out');
    }
  }
}

const EMPTY: Uint8Array = Buffer.alloc(0);
/** The body queue of connections whose server has a request handler: always empty. */
const NO_QUEUE: Uint8Array[] = [];

function onSocketError(): void {
  // Errors end in 'close', where the connection cleans up; nothing to add here.
}
