/**
 * One HTTP/2 server stream as the kernel's pipeline drives it (`ExchangeWire`): the request
 * body, when there is one, is read through an {@link H2RequestBody}; the response head, body
 * and trailers go out through `respond`/`write`/`sendTrailers`.
 */
import { Buffer } from 'node:buffer';
import type { ServerHttp2Stream } from 'node:http2';
import { httpDate, type Headers, type PeerAddr, type Request, type RequestContext } from '../../kernel/index.js';
import { peekRequestContext, type ExchangeWire } from '../../kernel/protocol.js';
import { addWireHeaders, trailersFromObject, wireTrailers, type H2HeaderObject } from './headers.js';
import { H2RequestBody } from './server-body.js';
import { sinkErrors } from './error-sink.js';
import type { SendBudget } from './send-budget.js';

// node:http2 constants, inlined so this module does not load node:http2 by itself.
const NGHTTP2_NO_ERROR = 0;
const NGHTTP2_INTERNAL_ERROR = 2;
const NGHTTP2_CANCEL = 8;

/** What a stream needs from its connection. */
export interface StreamOwner {
  peerAddr(): PeerAddr;
  readonly readTimeout: number;
  readonly writeTimeout: number;
  /** The connection's room for response bytes handed to node:http2 and not sent yet. */
  readonly sendBudget: SendBudget;
  /** The stream closed; `aborted` when the client reset it before the response ended. */
  streamClosed(aborted: boolean): void;
}

const NO_BODY: Promise<Uint8Array | null> = Promise.resolve(null);

/** @internal The {@link ExchangeWire} of one server stream. */
export class H2ServerStream implements ExchangeWire {
  /** On the prototype, not a field per stream. */
  get protocol(): string {
    return 'h2';
  }
  // Six fields, as a stream answered at once (most of them) is made and dropped per request:
  // the flags share one number, and what only a streamed response needs waits in `slow`.
  private readonly stream: ServerHttp2Stream;
  private readonly owner: StreamOwner;
  /**
   * The request, until its response is complete with no body left to read; then only its
   * context (or null when none was made), for a reset that comes later (see afterEnd).
   */
  private held: Request | RequestContext | null;
  /** The request body, or null for a request without one (END_STREAM on its HEADERS). */
  private readonly body: H2RequestBody | null;
  /** CLOSED | FINISHED | WATCHING | RELEASED. */
  private flags: number;
  /** Trailers to send and the write back-pressure state, made on first need (see SlowState). */
  private slow: SlowState | null = null;

  constructor(stream: ServerHttp2Stream, owner: StreamOwner, request: Request, bodyEnded: boolean) {
    this.stream = stream;
    this.owner = owner;
    this.held = request;
    // A request with a body is watched from the start ('close' included); one without, only
    // when its exchange goes on past onStream (see watchClose).
    this.flags = bodyEnded ? 0 : WATCHING;
    if (bodyEnded) this.body = null;
    else {
      this.body = new H2RequestBody(stream, owner.readTimeout);
      this.listen('data', streamData);
      this.listen('end', streamEnd);
      this.listen('close', streamClose);
    }
    sinkErrors(stream);
  }

  /**
   * Listens to `event` with one of the shared listeners, which find this wire on the stream:
   * the stream carries it only once a listener needs it (a stream answered at once has none,
   * and no property is added to node's object).
   */
  private listen(event: string, fn: (this: Tagged, ...args: never[]) => void): void {
    (this.stream as Tagged)[kWire] = this;
    this.stream.on(event, fn as (...args: unknown[]) => void);
  }

  /**
   * True when nothing is left to do for this stream: the request had no body, the response was
   * written in full, and 'close' is not listened to. Its connection then neither counts nor
   * watches it: node:http2 sends the queued bytes and closes it. (A stream with a body is
   * watched from the start and never settled, so each 'close' that reaches the connection was
   * counted.)
   */
  get settled(): boolean {
    return (this.flags & (WATCHING | FINISHED | CLOSED)) === FINISHED;
  }

  /**
   * Watches a stream whose exchange goes on: 'close' then tells the connection (its count of
   * streams going) and whoever waits on the stream. Called once, by the connection, for a
   * stream without a request body that is not {@link H2ServerStream.settled}; a stream with
   * one is watched from the start.
   */
  watchClose(): void {
    // 'on', not 'once': 'close' comes once anyway, and once() costs a wrapper per stream.
    if ((this.flags & WATCHING) === 0) {
      this.flags |= WATCHING;
      this.listen('close', streamClose);
    }
  }

  /** False from the moment the stream is reset (by us too: `writeTimeout`, an abort), not only once it closed. */
  get writable(): boolean {
    const s = this.stream;
    return (this.flags & CLOSED) === 0 && !s.destroyed && !s.closed;
  }

  private get finished(): boolean {
    return (this.flags & FINISHED) !== 0;
  }

  /** The request while it is held (null once let go). */
  private get request(): Request | null {
    return (this.flags & RELEASED) === 0 ? (this.held as Request | null) : null;
  }

  /** Why the request body cannot be read, or null. */
  get bodyError(): unknown {
    return this.body === null ? null : this.body.error;
  }

  /** True once the request body ended or was discarded. */
  get bodyDone(): boolean {
    const b = this.body;
    return b === null || b.ended || b.discarding;
  }

  peerAddr(): PeerAddr {
    return this.owner.peerAddr();
  }

  // ---- the request body ------------------------------------------------------------------

  readBody(): Promise<Uint8Array | null> {
    return this.body === null ? NO_BODY : this.body.read();
  }

  discardBody(): void {
    this.body?.discard();
  }

  sendContinue(): void {
    const b = this.body;
    if (b !== null && this.request !== null) b.sendContinue(this.request.headers.get('Expect'));
  }

  /** @internal */
  onData(chunk: Buffer): void {
    this.body!.onData(chunk);
  }

  /**
   * @internal The readable side ended. node:http2 also ends it when the client resets the stream
   * (closed first, with the code): that is no end of the body, and 'close' fails a read still
   * waiting. A stream closes without a reset only once the response ended too.
   */
  onEnd(): void {
    const s = this.stream;
    if (s.closed && (s.rstCode !== NGHTTP2_NO_ERROR || !this.finished)) return;
    this.body!.onEnd();
  }

  // ---- the response ----------------------------------------------------------------------

  head(status: number, headers: Headers, contentLength: number, end: boolean, trailers = true): void {
    if (!this.writable) return;
    // `{}` has room for 4 properties in the object itself; a literal with one would need a
    // separate property store for the usual :status + content-type + content-length.
    const out: H2HeaderObject = {};
    out[':status'] = status;
    addWireHeaders(headers, out);
    if (contentLength >= 0 && status !== 204 && status >= 200) out['content-length'] = contentLength;
    // node:http2 adds `date` itself when it is missing, by a store into its null-prototype copy
    // of the block that costs more than the field (profiled: ~1 µs per response); given here,
    // it is copied with the rest.
    if (out.date === undefined) out.date = httpDate();
    // node:http2 ends these itself (no body may follow).
    if (status === 204 || status === 205 || status === 304) end = true;
    if (end) this.flags |= FINISHED;
    try {
      this.stream.respond(out, end ? END_OPTIONS : trailers ? TRAILER_OPTIONS : BODY_OPTIONS);
    } catch (err) {
      // Invalid header names or values (node validates them): the stream cannot be answered.
      this.abort(err);
      throw err;
    }
    if (!end && trailers) {
      this.listen('wantTrailers', streamWantTrailers);
    }
    if (end) this.afterEnd();
  }

  /**
   * Body bytes. A write that is not the last one goes to node:http2 in slices of at most
   * {@link SLICE} bytes, each copied when handed over (the caller may reuse `bytes` once the
   * Promise resolves) and only when the connection's {@link SendBudget} has room and the
   * stream's own queue drained: a client that grants no window holds the handler, not memory.
   * The last bytes (`end`, a response's own body) and bytes the caller gives away (`owned`)
   * are handed over as they are.
   */
  data(bytes: Uint8Array | string, end: boolean, owned = false): Promise<void> | undefined {
    if (!this.writable || this.finished) return undefined;
    const st = this.slow;
    if (end) {
      this.flags |= FINISHED;
      if (st !== null && st.sending !== null) return this.after(st, () => this.endWith(bytes));
      this.endWith(bytes);
      return undefined;
    }
    if (st === null || (st.sending === null && !this.stream.writableNeedDrain)) {
      // One slice with room: straight to node.
      if (bytes.length <= SLICE && this.takeRoom(bytes.length)) {
        if (this.handOver(owned || typeof bytes === 'string' ? bytes : Buffer.from(bytes))) return undefined;
        return this.waitDrain();
      }
      return this.sending(this.sendSlices(bytes, owned));
    }
    if (st.sending === null) return this.sending(this.sendSlices(bytes, owned));
    // Writes not awaited: queued behind the one going, on a copy (nothing is handed over yet).
    const copy = owned || typeof bytes === 'string' ? bytes : Buffer.from(bytes);
    return this.after(st, () => this.sendSlices(copy, true));
  }

  end(trailers: Headers | null): Promise<void> | undefined {
    if (!this.writable || this.finished) return undefined;
    this.flags |= FINISHED;
    if (trailers !== null) this.slowState().trailers = trailers;
    const st = this.slow;
    if (st !== null && st.sending !== null) return this.after(st, () => this.endWith(null));
    this.endWith(null);
    return undefined;
  }

  /**
   * Resolves once this stream may take {@link SLICE} more bytes without waiting (its queue
   * drained, room in the connection's budget, which is then held for it): a producer waits
   * here before it reads or makes bytes, so a stream without window holds none of them.
   */
  ready(): Promise<void> | undefined {
    if (!this.writable || this.finished) return undefined;
    const st = this.slowState();
    if (st.sending !== null) return st.sending;
    if (this.stream.writableNeedDrain) return this.waitDrain();
    if (st.reserved > 0) return undefined;
    this.watchClose();
    if (this.owner.sendBudget.tryTake(SLICE)) {
      st.reserved += SLICE;
      st.charged += SLICE;
      return undefined;
    }
    return this.waitRoom(st, SLICE, true);
  }

  private endWith(bytes: Uint8Array | string | null): void {
    if (!this.writable) return;
    this.giveBackReserved();
    if (bytes === null) this.stream.end();
    else this.stream.end(bytes);
    this.afterEnd();
  }

  /** Runs `next` once the sends going are done; what `data`/`end` return meanwhile. */
  private after(st: SlowState, next: () => Promise<void> | void): Promise<void> {
    return this.sending(st.sending!.then(next));
  }

  /** Records `p` as the send going until it settles. */
  private sending(p: Promise<void>): Promise<void> {
    const st = this.slowState();
    st.sending = p;
    const clear = (): void => {
      if (st.sending === p) st.sending = null;
    };
    p.then(clear, clear);
    return p;
  }

  /** Hands `bytes` over slice by slice, each with room and once the stream's queue drained. */
  private async sendSlices(bytes: Uint8Array | string, owned: boolean): Promise<void> {
    const st = this.slowState();
    for (let off = 0; off < bytes.length;) {
      if (this.stream.writableNeedDrain) await this.waitDrain();
      if (!this.writable) return;
      const n = Math.min(SLICE, bytes.length - off);
      if (!this.takeRoom(n)) {
        // The write timer runs on until the peer takes bytes ('drain'), not only until room is found.
        await this.waitRoom(st, n, false);
        if (!this.writable) return;
        this.takeRoom(n);
      }
      // A copy: node keeps the slice until it is sent, and the caller may reuse its buffer.
      const piece = typeof bytes === 'string' ? bytes.slice(off, off + n) : owned ? bytes.subarray(off, off + n) : Buffer.from(bytes.subarray(off, off + n));
      off += n;
      this.handOver(piece);
    }
    if (this.stream.writableNeedDrain) await this.waitDrain();
    // Handed over is not sent: while bytes of this stream wait in node, the timer runs on (see sent).
    if (st.charged === st.reserved) this.clearWriteTimer(st);
  }

  /** Takes room for `n` bytes: from what {@link H2ServerStream.ready} holds, else from the budget when it has room. */
  private takeRoom(n: number): boolean {
    const st = this.slowState();
    if (st.reserved > 0) {
      const extra = n > st.reserved ? n - st.reserved : 0;
      st.reserved -= n - extra;
      if (extra > 0) this.owner.sendBudget.force(extra);
      st.charged += extra;
      return true;
    }
    this.watchClose();
    if (!this.owner.sendBudget.tryTake(n)) return false;
    st.charged += n;
    return true;
  }

  /** Writes bytes room was taken for; false when the stream's queue is full (wait for 'drain'). */
  private handOver(piece: Uint8Array | string): boolean {
    const n = piece.length;
    return this.stream.write(piece, () => this.sent(n));
  }

  /** node sent `n` bytes (or dropped them): their room goes back, unless 'close' gave all of it back already. */
  private sent(n: number): void {
    const st = this.slow!;
    if (st.charged < n) return;
    st.charged -= n;
    this.owner.sendBudget.give(n);
    // All of this stream's bytes went out and no write waits: the peer is reading.
    if (st.writeTimer !== null && st.charged === st.reserved && st.roomWait === null && st.drainWaiters === null) this.clearWriteTimer(st);
  }

  private giveBackReserved(): void {
    const st = this.slow;
    if (st === null || st.reserved === 0) return;
    const r = st.reserved;
    st.reserved = 0;
    st.charged -= r;
    this.owner.sendBudget.give(r);
  }

  /** @internal */
  onWantTrailers(): void {
    const t = this.slow === null ? null : this.slow.trailers;
    try {
      // Empty trailers end the stream with an empty DATA frame (node's way). A field that may
      // not trail resets the stream: the body is out, so no 500 can replace it any more (the
      // pipeline and Stream.addTrailer refuse them before the head; this holds without them).
      this.stream.sendTrailers(t === null ? {} : wireTrailers(t));
    } catch {
      this.stream.close(NGHTTP2_INTERNAL_ERROR);
    }
  }

  /**
   * The response is complete: an unread request body is not wanted any more. The rest is read
   * and dropped; past its drain limit the client is asked to stop with RST_STREAM(NO_ERROR)
   * (RFC 9113 §8.1). Not at once: nghttp2 sends RST_STREAM ahead of queued DATA, so an early
   * reset could cut off the response it follows.
   */
  private afterEnd(): void {
    const b = this.body;
    if (b === null || b.ended) {
      if ((this.flags & RELEASED) !== 0) return;
      // Nothing here reads the request any more: let it go (node keeps this stream until its
      // bytes are out, and a request kept that long is copied out of the young generation).
      this.flags |= RELEASED;
      this.held = this.held === null ? null : peekRequestContext(this.held as Request);
    } else {
      b.responseDone = true;
      if ((this.flags & CLOSED) === 0) b.discard();
    }
  }

  abort(_error: unknown): void {
    if ((this.flags & CLOSED) !== 0 || this.stream.destroyed) return;
    this.flags |= FINISHED;
    this.stream.close(NGHTTP2_INTERNAL_ERROR);
  }

  private slowState(): SlowState {
    return (this.slow ??= { trailers: null, drainWaiters: null, writeTimer: null, sending: null, charged: 0, reserved: 0, roomWait: null });
  }

  /** `writeTimeout` runs while a write waits, for window or for room. */
  private armWriteTimer(st: SlowState): void {
    const ms = this.owner.writeTimeout;
    if (ms > 0 && st.writeTimer === null) {
      st.writeTimer = setTimeout(() => this.onWriteTimeout(), ms);
      st.writeTimer.unref();
    }
  }

  private clearWriteTimer(st: SlowState): void {
    if (st.writeTimer !== null) clearTimeout(st.writeTimer);
    st.writeTimer = null;
  }

  /**
   * Waits for room for `n` bytes in the connection's budget; they are held for this stream
   * when it resolves. `clearTimer`: the wait is all there is to the call (the write timer stops).
   */
  private waitRoom(st: SlowState, n: number, clearTimer: boolean): Promise<void> {
    this.armWriteTimer(st);
    return new Promise((resolve) => {
      const done = (): void => {
        st.roomWait = null;
        if (clearTimer) this.clearWriteTimer(st);
        resolve();
      };
      const handle = this.owner.sendBudget.wait(n, () => {
        st.reserved += n;
        st.charged += n;
        done();
      });
      st.roomWait = { handle, resolve: done };
    });
  }

  private waitDrain(): Promise<void> {
    const st = this.slowState();
    this.armWriteTimer(st);
    if (st.drainWaiters === null) {
      st.drainWaiters = [];
      this.stream.once('drain', () => this.onDrain());
    }
    const waiters = st.drainWaiters;
    return new Promise((resolve) => waiters.push(resolve));
  }

  /** @internal */
  onDrain(): void {
    const st = this.slow;
    if (st === null) return;
    if (st.writeTimer !== null) clearTimeout(st.writeTimer);
    st.writeTimer = null;
    const w = st.drainWaiters;
    if (w === null) return;
    st.drainWaiters = null;
    for (const fn of w) fn();
  }

  /** @internal */
  onWriteTimeout(): void {
    // The client stopped reading (no window for writeTimeout ms): reset only this stream.
    if (this.slow !== null) this.slow.writeTimer = null;
    this.flags |= FINISHED;
    this.stream.close(NGHTTP2_CANCEL);
  }

  /** @internal */
  onClose(): void {
    this.flags |= CLOSED;
    this.body?.onClose();
    this.onDrain();
    const st = this.slow;
    if (st !== null) {
      // What node still holds of this stream is dropped with it: all its room goes back.
      const w = st.roomWait;
      if (w !== null) {
        this.owner.sendBudget.cancel(w.handle);
        w.resolve();
      }
      const c = st.charged;
      st.charged = 0;
      st.reserved = 0;
      if (c > 0) this.owner.sendBudget.give(c);
    }
    // A stream closed before its response ended was reset by the client (or by us): whatever
    // still works on it learns through the request's context.
    const aborted = !this.finished;
    if (aborted || this.stream.rstCode !== NGHTTP2_NO_ERROR) {
      const req = this.request;
      const ctx = req !== null ? req.ctx : (this.held as RequestContext | null);
      ctx?.cancel('the client reset the HTTP/2 stream');
    }
    this.owner.streamClosed(aborted);
  }
}

// H2ServerStream.flags
const CLOSED = 1;
const FINISHED = 2;
/** 'close' is listened to (from the start for a request with a body). */
const WATCHING = 4;
/** The request was let go; `held` is its context (or null). */
const RELEASED = 8;

/**
 * Bytes handed to node:http2 per write at most: node's write buffer mark (16 KiB), which is
 * also HTTP/2's default frame size. A stream never has more than two of them in node.
 */
const SLICE = 16384;

/** What only a response with trailers or a streamed body needs. */
interface SlowState {
  trailers: Headers | null;
  drainWaiters: (() => void)[] | null;
  writeTimer: NodeJS.Timeout | null;
  /** The write going (slices waiting for window or room), which later writes and the end wait for. */
  sending: Promise<void> | null;
  /** Bytes of the connection's budget this stream holds: in node and not sent, plus `reserved`. */
  charged: number;
  /** Room taken by `ready()` and not used yet. */
  reserved: number;
  /** A wait for room, ended early when the stream closes. */
  roomWait: { handle: object; resolve: () => void } | null;
}

// Stream listeners shared by every stream (no closures per stream): the wire rides on the stream.
const kWire = Symbol('switchyard.h2.wire');
type Tagged = ServerHttp2Stream & { [kWire]?: H2ServerStream };
function streamData(this: Tagged, chunk: Buffer): void {
  this[kWire]!.onData(chunk);
}
function streamEnd(this: Tagged): void {
  this[kWire]!.onEnd();
}
function streamClose(this: Tagged): void {
  this[kWire]!.onClose();
}
function streamWantTrailers(this: Tagged): void {
  this[kWire]!.onWantTrailers();
}

// node:http2 copies the options of respond() (`{ ...options }`) and only reads the copy:
// shared constants save an object per stream. Not frozen: V8 clones a frozen object on a slow
// path (a runtime call and a dictionary-mode copy per respond()). A response with a body and
// no trailers passes none, as node's defaults are those.
const END_OPTIONS = { endStream: true };
const TRAILER_OPTIONS = { endStream: false, waitForTrailers: true };
const BODY_OPTIONS = undefined;

/** Trailers received with a request (node's 'trailers' event), as kernel Headers, less those that may not trail. */
export function trailersOf(obj: Record<string, string | string[] | undefined>): Headers {
  return trailersFromObject(obj);
}
