/**
 * FlowBody: a client response body fed by its protocol driver as bytes arrive, read by the
 * caller chunk by chunk or all at once. Past a high-water mark of unread bytes it asks its
 * source to pause (HTTP/1: stop reading the socket; HTTP/2: stop returning flow-control
 * window) and resumes below half of it. The kernel's HTTP/1 body and the h2 plugin's body
 * are both FlowBodies; only their source differs.
 */
import { Buffer } from 'node:buffer';
import { CanceledError, ProtocolError, ResponseTooLargeError } from '../errors.js';
import { AbstractBody } from '../message/body.js';
import { Headers } from '../message/headers.js';

/** What a {@link FlowBody} needs from the exchange that feeds it. */
export interface FlowSource {
  /** Stop delivering bytes for now. */
  pause(): void;
  /** Deliver bytes again. */
  resume(): void;
  /**
   * The reader closed the body before its end (HTTP/1 closes the connection, HTTP/2 resets the
   * stream), or discarded it with {@link FlowBody.closeRead} after its end arrived.
   */
  abandon(): void;
  /** The reader took the body to its end (read it out, or closed it after its end arrived). */
  consumed?(): void;
}

/** Unread bytes above which the source is paused until the reader catches up. */
export const FLOW_HIGH_WATER = 262144;
const EMPTY = Buffer.alloc(0);
/** The queue of a body holding nothing, shared: `push` replaces it, never grows it (a push onto an empty array reserves 17 slots). */
const NO_CHUNKS: Buffer[] = [];

/** A streamed client response body (single use); see the module notes. */
export class FlowBody extends AbstractBody {
  private readonly source: FlowSource;
  private readonly declared: number;
  private queue: Buffer[] = NO_CHUNKS;
  private queued = 0;
  /** @internal The whole body arrived. */
  protected ended = false;
  private failure: Error | null = null;
  private isClosed = false;
  private paused = false;
  private collecting: boolean;
  private waiter: { resolve(): void; reject(e: Error): void } | null = null;
  /** A pending {@link FlowBody.readRest}: settled from the events, not by a loop of promises. */
  private rest: { resolve(b: Uint8Array): void; reject(e: unknown): void; limit: number } | null = null;
  /** @internal Trailers, once they arrived. */
  trailerFields: Headers | null = null;
  /** @internal Body bytes delivered so far, as they came off the wire (before any decoding). */
  received = 0;
  /** @internal Told once when the body has arrived whole (null) or failed (its error): set only for a diagnostics subscriber. */
  onEnd: ((err: Error | null) => void) | null = null;

  /** @internal `collect`: the whole body is wanted at once, so the source is never paused. */
  constructor(source: FlowSource, declared: number, collect = false) {
    super();
    this.source = source;
    this.declared = declared;
    this.collecting = collect;
  }

  /** Content-Length of the response, or -1. */
  override get length(): number {
    return this.declared;
  }

  /** @internal Bytes from the wire. */
  push(data: Buffer): void {
    if (data.length === 0 || this.isClosed) return;
    this.received += data.length;
    if (this.queue.length === 0) this.queue = [data];
    else this.queue.push(data);
    this.queued += data.length;
    if (this.rest !== null && this.queued > this.rest.limit) {
      this.settleRest();
      return;
    }
    if (this.queued > FLOW_HIGH_WATER && !this.paused && !this.collecting) {
      this.paused = true;
      this.source.pause();
    }
    this.wake();
  }

  /** @internal The body ended. */
  end(): void {
    this.ended = true;
    if (this.rest !== null) this.settleRest();
    this.wake();
    this.told(null);
  }

  /** @internal The body failed; readers get `err` once the bytes before it are read. */
  error(err: Error): void {
    this.failure = err;
    if (this.rest !== null) this.settleRest();
    const w = this.waiter;
    this.waiter = null;
    w?.reject(err);
    this.told(err);
  }

  /** Closed before its end: whoever waits for the end (a diagnostics subscriber) hears it will not come. */
  private toldClosed(): void {
    if (this.onEnd !== null && this.failure === null) this.told(new CanceledError('response body closed before its end'));
  }

  private told(err: Error | null): void {
    const f = this.onEnd;
    if (f !== null) {
      this.onEnd = null;
      f(err);
    }
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
      if (this.ended) {
        this.source.consumed?.();
        return 0;
      }
      await this.wait();
    }
  }

  /**
   * Reads the rest at once: one buffer and one promise, no per-chunk promises (the client's
   * buffered path). A declared length or more bytes past `limit` is a
   * `ResponseTooLargeError`, and the body is closed (before its end, so is the connection).
   */
  readRest(limit = Infinity): Promise<Uint8Array> {
    this.collecting = true;
    if (this.paused) {
      this.paused = false;
      this.source.resume();
    }
    if (this.rest !== null) return Promise.reject(new ProtocolError('the response body is already being read'));
    if (this.ended || this.failure !== null || this.isClosed || this.queued > limit || this.declared > limit) {
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
    if (this.queued > limit || this.declared > limit) {
      // Stop here: what came is dropped and the rest is not read (an endless body ends now).
      const received = this.queued;
      this.close();
      throw new ResponseTooLargeError(limit, received, this.declared);
    }
    const all = this.drain();
    if (this.ended) this.source.consumed?.();
    return all;
  }

  private drain(): Uint8Array {
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
    const all = this.drain();
    this.source.consumed?.();
    return all;
  }

  private maybeResume(): void {
    if (this.paused && this.queued < FLOW_HIGH_WATER / 2) {
      this.paused = false;
      this.source.resume();
    }
  }

  /** Closes the body; before its end the source abandons the exchange. */
  close(): void {
    if (this.isClosed) return;
    this.isClosed = true;
    this.queue = NO_CHUNKS;
    this.queued = 0;
    if (!this.ended) {
      this.source.abandon();
      this.toldClosed();
    } else this.source.consumed?.();
    if (this.rest !== null) this.settleRest();
    this.wake();
  }

  /**
   * Discards the rest of the body and gives up its connection (HTTP/1: closed, never reused;
   * HTTP/2: the stream reset), even when the whole body already arrived: the Stream's
   * `closeRead`.
   */
  closeRead(): void {
    if (this.isClosed) return;
    this.isClosed = true;
    this.queue = NO_CHUNKS;
    this.queued = 0;
    this.source.abandon();
    if (!this.ended) this.toldClosed();
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
