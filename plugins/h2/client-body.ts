/**
 * The body of an HTTP/2 client response, read as it arrives. Past a high-water mark the stream
 * is paused, so node:http2 stops returning window to the server (flow control holds the rest);
 * closing the body before its end resets the stream (CANCEL), leaving the connection to the
 * other streams.
 */
import { AbstractBody, Headers, ProtocolError } from '../../kernel/index.js';

/** Queued bytes above which the stream is paused until the reader catches up. */
const HIGH_WATER = 262144;
const EMPTY = Buffer.alloc(0);
/** The queue of a body holding nothing, shared: `push` replaces it, never grows it (a push onto an empty array reserves 17 slots). */
const NO_CHUNKS: Buffer[] = [];

/** What the body needs from its exchange. */
export interface BodySource {
  pause(): void;
  resume(): void;
  /** The reader closed the body before its end. */
  abandon(): void;
}

/** A streamed HTTP/2 response body (single use). */
export class H2ResponseBody extends AbstractBody {
  private readonly source: BodySource;
  private readonly declared: number;
  private queue: Buffer[] = NO_CHUNKS;
  private queued = 0;
  private ended = false;
  private failure: Error | null = null;
  private isClosed = false;
  private paused = false;
  private collecting = false;
  private waiter: { resolve(): void; reject(e: Error): void } | null = null;
  /** A pending {@link H2ResponseBody.readRest}: settled from the events, not by a loop of promises. */
  private rest: { resolve(b: Uint8Array): void; reject(e: unknown): void; limit: number } | null = null;
  /** @internal Trailers, once they arrived. */
  trailerFields: Headers | null = null;

  /** @internal `collect`: the whole body is wanted at once (never paused: the client buffers it anyway). */
  constructor(source: BodySource, declared: number, collect = false) {
    super();
    this.source = source;
    this.declared = declared;
    this.collecting = collect;
  }

  /** Content-Length of the response, or -1. */
  override get length(): number {
    return this.declared;
  }

  /** @internal */
  push(data: Buffer): void {
    if (data.length === 0 || this.isClosed) return;
    if (this.queue.length === 0) this.queue = [data];
    else this.queue.push(data);
    this.queued += data.length;
    if (this.rest !== null && this.queued > this.rest.limit) {
      this.settleRest();
      return;
    }
    if (this.queued > HIGH_WATER && !this.paused && !this.collecting) {
      this.paused = true;
      this.source.pause();
    }
    this.wake();
  }

  /** @internal */
  end(): void {
    this.ended = true;
    if (this.rest !== null) this.settleRest();
    this.wake();
  }

  /** @internal */
  error(err: Error): void {
    if (this.ended) return;
    this.failure = err;
    if (this.rest !== null) this.settleRest();
    const w = this.waiter;
    this.waiter = null;
    w?.reject(err);
  }

  private wake(): void {
    const w = this.waiter;
    if (w !== null) {
      this.waiter = null;
      w.resolve();
    }
  }

  private wait(): Promise<void> {
    return new Promise((resolve, reject) => {
      this.waiter = { resolve, reject };
    });
  }

  /** See {@link AbstractBody.read}. */
  async read(dst: Uint8Array): Promise<number> {
    for (;;) {
      if (this.isClosed) return 0;
      if (this.queue.length > 0) {
        let n = 0;
        while (n < dst.length && this.queue.length > 0) {
          const head = this.queue[0]!;
          const take = Math.min(head.length, dst.length - n);
          dst.set(take === head.length ? head : head.subarray(0, take), n);
          n += take;
          if (take === head.length) this.queue.shift();
          else this.queue[0] = head.subarray(take);
        }
        this.queued -= n;
        this.maybeResume();
        return n;
      }
      if (this.failure !== null) throw this.failure;
      if (this.ended) return 0;
      await this.wait();
    }
  }

  /** Reads the rest at once: one buffer and one promise, no per-chunk promises (the client's buffered path). */
  readRest(limit = Infinity): Promise<Uint8Array> {
    this.collecting = true;
    if (this.paused) {
      this.paused = false;
      this.source.resume();
    }
    if (this.rest !== null) return Promise.reject(new ProtocolError('the response body is already being read'));
    if (this.ended || this.failure !== null || this.isClosed || this.queued > limit) {
      try {
        return Promise.resolve(this.restNow(limit));
      } catch (err) {
        return Promise.reject(err);
      }
    }
    return new Promise((resolve, reject) => {
      this.rest = { resolve, reject, limit };
    });
  }

  /** What readRest gives now that the body ended, failed, closed or passed its limit. */
  private restNow(limit: number): Uint8Array {
    if (this.failure !== null) throw this.failure;
    if (this.queued > limit) throw new ProtocolError(`response body exceeds ${limit} bytes`);
    const q = this.queue;
    const out = q.length === 0 ? EMPTY : q.length === 1 ? q[0]! : Buffer.concat(q, this.queued);
    this.queue = NO_CHUNKS;
    this.queued = 0;
    return out;
  }

  private settleRest(): void {
    const r = this.rest!;
    this.rest = null;
    try {
      r.resolve(this.restNow(r.limit));
    } catch (err) {
      r.reject(err);
    }
  }

  /**
   * The whole body when it has already arrived (else null), taken at once: the client's
   * buffered path then needs no promise for it.
   */
  takeComplete(): Uint8Array | null {
    if (!this.ended || this.failure !== null || this.isClosed) return null;
    const q = this.queue;
    const out = q.length === 0 ? EMPTY : q.length === 1 ? q[0]! : Buffer.concat(q, this.queued);
    this.queue = NO_CHUNKS;
    this.queued = 0;
    return out;
  }

  private maybeResume(): void {
    if (this.paused && this.queued < HIGH_WATER / 2) {
      this.paused = false;
      this.source.resume();
    }
  }

  /** Closes the body; before its end this resets the stream. */
  close(): void {
    if (this.isClosed) return;
    this.isClosed = true;
    this.queue = NO_CHUNKS;
    this.queued = 0;
    if (!this.ended) this.source.abandon();
    if (this.rest !== null) this.settleRest();
    this.wake();
  }

  /** See {@link AbstractBody.closed}. */
  get closed(): boolean {
    return this.isClosed;
  }

  /** True once the whole body arrived. */
  get complete(): boolean {
    return this.ended;
  }

  /** See {@link AbstractBody.trailers}. */
  override trailers(): Headers {
    return this.trailerFields ?? new Headers();
  }
}
