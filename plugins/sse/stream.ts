/**
 * SSEStream: the writable body of a server-sent-events response. The producer writes events;
 * the server reads them as response body bytes, each read returning what was written since
 * the last one, so every event goes out as soon as it is written (one chunk per read).
 */
import { Buffer } from 'node:buffer';
import { AbstractBody, ArgumentError, CanceledError, RequestContext } from '../../kernel/index.js';
import { SSEEventTooLargeError } from './errors.js';
import { DEFAULT_SSE_MAX_LEN, SSEEvent, checkMaxLen, encodeEvent } from './event.js';

/** Options of {@link SSEStream}. */
export interface SSEStreamOptions {
  /** Largest event in bytes (its lines with their line ends, not the closing blank line). Default 16 MiB. */
  maxLen?: number;
}

/** Queued bytes above which `write` waits until the server has taken them (Node's stream default). */
const HIGH_WATER = 16 * 1024;

const RESOLVED: Promise<void> = Promise.resolve();

interface Waiter {
  resolve(): void;
  reject(err: Error): void;
}

/**
 * A writable response body of server-sent events (also an {@link AbstractBody}, which the
 * server reads). `write(event)` queues the event whole and resolves once the queue is below
 * 16 KiB (backpressure from a slow client); `close()` ends the response after what is queued.
 *
 * When the response ends, early or not (the client went away, a HEAD request, the server
 * closing), `stream.ctx` is canceled and later writes reject with `CanceledError`: a producer
 * loop stops on its next write, or watches `stream.ctx.signal`. A stream made by `sseStream`
 * for a Response with `request` follows that request's context, so a client disconnect
 * cancels it at once. A server closing gracefully ends the stream (as `close()` does) once its
 * `closeGracePeriod` is over; `forceClose()` cuts it off at once.
 */
export class SSEStream extends AbstractBody {
  /** Largest event in bytes. */
  readonly maxLen: number;
  /** Canceled when the stream ends for any reason; its `signal` suits fetch-like producer work. */
  readonly ctx: RequestContext = new RequestContext();
  private queue: Buffer[] = [];
  /** Read offset into `queue[0]`. */
  private head = 0;
  private queued = 0;
  private ended = false;
  private failure: Error | null = null;
  /** A waiting read (`dst` null: the iterator, which takes the bytes itself). */
  private reader: { dst: Uint8Array | null; resolve(n: number): void; reject(err: Error): void } | null = null;
  private writers: Waiter[] = [];
  private unfollow: (() => void) | null = null;

  /** `new SSEStream({ maxLen })`; usually made by `sseStream(…)`. */
  constructor(options: SSEStreamOptions = {}) {
    super();
    if (typeof options !== 'object' || options === null) throw new ArgumentError('SSEStream options must be an object');
    this.maxLen = options.maxLen === undefined ? DEFAULT_SSE_MAX_LEN : checkMaxLen(options.maxLen, 'SSEStream: maxLen');
  }

  /**
   * Queues `event` whole and resolves when the producer may go on. Rejects with
   * `SSEEventTooLargeError` (nothing written) for an event over `maxLen`, with `CanceledError`
   * once the stream ended (closed, or the client went away).
   */
  write(event: SSEEvent): Promise<void> {
    if (!(event instanceof SSEEvent)) {
      return Promise.reject(new ArgumentError(`SSEStream.write takes an SSEEvent (new SSEEvent(data, { event, id, retry })), got ${describe(event)}`));
    }
    const wire = encodeEvent(event);
    // The closing blank line does not count: a client with the same maxLen accepts what we send.
    const size = wire.length - 1;
    if (size > this.maxLen) return Promise.reject(new SSEEventTooLargeError(this.maxLen, size, 'write'));
    return this.push(wire);
  }

  /** Sends a comment line (`: text`), which clients ignore: a heartbeat that keeps proxies from timing out. */
  comment(text = ''): Promise<void> {
    if (typeof text !== 'string' || text.includes('\n') || text.includes('\r')) {
      return Promise.reject(new ArgumentError('SSEStream.comment takes a string without CR or LF'));
    }
    return this.push(Buffer.from(text === '' ? ':\n' : `: ${text}\n`, 'utf8'));
  }

  /** Ends the response once what is queued has been sent; later writes reject. Closing twice does nothing. */
  close(): void {
    if (this.ended) return;
    this.ended = true;
    this.finish('SSE stream closed');
    // Queued writes were accepted; they are delivered if the server still reads.
    const ws = this.writers;
    this.writers = [];
    for (const w of ws) w.resolve();
    this.wakeReader();
  }

  /** True once the stream ended: closed, failed, or its client went away. */
  get closed(): boolean {
    return this.ended;
  }

  /**
   * Ends the stream when `ctx` is canceled (a client disconnect cancels the server request's
   * context): queued events are dropped, writes reject with `CanceledError`, `stream.ctx` is
   * canceled. `sseStream` does this for a Response that has a `request`.
   */
  follow(ctx: RequestContext): void {
    if (!(ctx instanceof RequestContext)) throw new ArgumentError('SSEStream.follow takes a RequestContext');
    this.unfollow?.();
    this.unfollow = ctx.onCancel((err) => this.abort(err.message));
  }

  /**
   * @internal The producer failed: what it queued still goes out, then the server's next read
   * throws `err` (it reports it and cuts the response off); later writes reject.
   */
  fail(err: Error): void {
    if (this.ended) return;
    this.ended = true;
    this.failure = err;
    this.finish(err.message);
    this.rejectWriters(new CanceledError(`cannot write: ${err.message}`));
    this.wakeReader();
  }

  /** See {@link AbstractBody.read}: what was written since the last read (up to `dst.length`), waiting for a write. */
  read(dst: Uint8Array): Promise<number> {
    if (this.queued > 0) return Promise.resolve(this.take(dst));
    if (this.failure !== null) return Promise.reject(this.failure);
    if (this.ended) return Promise.resolve(0);
    if (this.reader !== null) return Promise.reject(new ArgumentError('SSEStream: a read is already waiting'));
    return new Promise<number>((resolve, reject) => (this.reader = { dst, resolve, reject }));
  }

  /** Iterates what was written, one chunk per wake-up (all that was queued, copied once): no fixed-size buffer per event. */
  override async *[Symbol.asyncIterator](): AsyncIterator<Uint8Array> {
    for (;;) {
      if (this.queued === 0) {
        if (this.failure !== null) throw this.failure;
        if (this.ended) return;
        if (this.reader !== null) throw new ArgumentError('SSEStream: a read is already waiting');
        await new Promise<number>((resolve, reject) => (this.reader = { dst: null, resolve, reject }));
        continue;
      }
      const out = Buffer.allocUnsafe(this.queued);
      this.take(out);
      yield out;
    }
  }

  private push(wire: Buffer): Promise<void> {
    if (this.ended) return Promise.reject(new CanceledError(`cannot write: ${this.ctx.reason ?? 'the SSE stream is closed'}`));
    this.queue.push(wire);
    this.queued += wire.length;
    this.wakeReader();
    if (this.queued <= HIGH_WATER) return RESOLVED;
    return new Promise<void>((resolve, reject) => this.writers.push({ resolve, reject }));
  }

  /** Copies queued bytes into `dst`; releases waiting writers once the queue is low again. */
  private take(dst: Uint8Array): number {
    let n = 0;
    const q = this.queue;
    while (n < dst.length && q.length > 0) {
      const b = q[0]!;
      const k = Math.min(dst.length - n, b.length - this.head);
      dst.set(k === b.length ? b : b.subarray(this.head, this.head + k), n);
      n += k;
      this.head += k;
      if (this.head === b.length) {
        q.shift();
        this.head = 0;
      }
    }
    this.queued -= n;
    if (this.writers.length > 0 && this.queued <= HIGH_WATER) {
      const ws = this.writers;
      this.writers = [];
      for (const w of ws) w.resolve();
    }
    return n;
  }

  /** The response ended early: drop what is queued and fail the producer's writes. */
  private abort(reason: string): void {
    if (this.ended) return;
    this.ended = true;
    this.queue = [];
    this.head = 0;
    this.queued = 0;
    this.finish(reason);
    this.rejectWriters(new CanceledError(`cannot write: ${reason}`));
    this.wakeReader();
  }

  private rejectWriters(err: Error): void {
    const ws = this.writers;
    this.writers = [];
    for (const w of ws) w.reject(err);
  }

  private finish(reason: string): void {
    const u = this.unfollow;
    this.unfollow = null;
    u?.();
    this.ctx.cancel(reason);
  }

  /** Answers a waiting read: with queued bytes, the producer's failure, or the end. */
  private wakeReader(): void {
    const r = this.reader;
    if (r === null) return;
    this.reader = null;
    if (this.queued > 0) r.resolve(r.dst === null ? 0 : this.take(r.dst));
    else if (this.failure !== null) r.reject(this.failure);
    else r.resolve(0);
  }
}

/** @internal The type of a value for an error message: its class name, `null`, or `typeof`. */
export function describe(v: unknown): string {
  if (v === null) return 'null';
  if (typeof v === 'object') return (v as object).constructor?.name ?? 'object';
  return typeof v;
}
