/**
 * The request body of one HTTP/2 server stream, read with flow control: past a high-water mark
 * of queued bytes the stream is paused, so nghttp2 stops granting window and the client must
 * wait (memory stays bounded). Made only for a request that has a body: most have none, and
 * their stream's wire then carries none of this state.
 */
import { Buffer } from 'node:buffer';
import type { ServerHttp2Stream } from 'node:http2';
import { ParseError, TimeoutError } from '../../kernel/index.js';

/** Queued request-body bytes above which the stream is paused (no more window for the client). */
const BODY_HIGH_WATER = 65536;
/** Unread request-body bytes dropped after the response before the client is told to stop (as HTTP/1 drains). */
const DRAIN_LIMIT = 256 * 1024;
const NGHTTP2_NO_ERROR = 0;

/** @internal The body half of an HTTP/2 server stream's wire. */
export class H2RequestBody {
  /** Why the body cannot be read (a read timeout, a reset), or null. */
  error: unknown = null;
  /** True once the client ended the body (END_STREAM). */
  ended = false;
  /** True once the rest is read and dropped (nobody wants it). */
  discarding = false;
  /** The response is complete (set by the wire): a discarded body past the limit stops the client. */
  responseDone = false;
  private readonly stream: ServerHttp2Stream;
  /** Body chunks not read yet; the array is made on first need. */
  private queue: Buffer[] | null = null;
  private queued = 0;
  private paused = false;
  private discarded = 0;
  private waiter: { resolve(v: Uint8Array | null): void; reject(e: unknown): void } | null = null;
  private closed = false;
  private continueSent = false;
  private readTimer: NodeJS.Timeout | null = null;

  constructor(stream: ServerHttp2Stream, readTimeout: number) {
    this.stream = stream;
    if (readTimeout > 0) {
      this.readTimer = setTimeout(() => this.onReadTimeout(readTimeout), readTimeout);
      this.readTimer.unref();
    }
  }

  /** A DATA chunk arrived. */
  onData(chunk: Buffer): void {
    if (this.discarding) {
      this.discarded += chunk.length;
      if (this.responseDone && this.discarded > DRAIN_LIMIT && !this.stream.destroyed) this.stream.close(NGHTTP2_NO_ERROR);
      return;
    }
    const w = this.waiter;
    if (w !== null && this.queued === 0) {
      this.waiter = null;
      w.resolve(chunk);
      return;
    }
    (this.queue ??= []).push(chunk);
    this.queued += chunk.length;
    if (this.queued > BODY_HIGH_WATER && !this.paused) {
      this.paused = true;
      this.stream.pause();
    }
  }

  /** The client ended the body. */
  onEnd(): void {
    this.ended = true;
    this.clearReadTimer();
    const w = this.waiter;
    if (w !== null && this.queued === 0) {
      this.waiter = null;
      w.resolve(null);
    }
  }

  /** The stream closed: a read still waiting ends (or fails, when the body did not). */
  onClose(): void {
    this.closed = true;
    this.clearReadTimer();
    const w = this.waiter;
    this.waiter = null;
    if (w !== null) {
      if (this.ended) w.resolve(null);
      else w.reject((this.error ??= new ParseError('the client reset the stream before the request body ended')));
    }
  }

  private onReadTimeout(ms: number): void {
    this.readTimer = null;
    if (this.ended || this.closed) return;
    this.error = new TimeoutError('request', ms, ms, `request body not received within readTimeout (${ms} ms)`);
    const w = this.waiter;
    this.waiter = null;
    w?.reject(this.error);
  }

  private clearReadTimer(): void {
    if (this.readTimer !== null) clearTimeout(this.readTimer);
    this.readTimer = null;
  }

  /** The next bytes of the body, null at its end. */
  read(): Promise<Uint8Array | null> {
    if (this.queued > 0) {
      const q = this.queue!;
      const out = q.length === 1 ? q[0]! : Buffer.concat(q, this.queued);
      this.queue = null;
      this.queued = 0;
      if (this.paused) {
        this.paused = false;
        this.stream.resume();
      }
      return Promise.resolve(out);
    }
    if (this.error !== null) return Promise.reject(this.error);
    if (this.ended || this.discarding) return Promise.resolve(null);
    if (this.closed) return Promise.reject(new ParseError('the client reset the stream before the request body ended'));
    if (this.waiter !== null) return Promise.reject(new ParseError('a read of this stream is already waiting'));
    return new Promise((resolve, reject) => {
      this.waiter = { resolve, reject };
    });
  }

  /** Reads the rest and drops it (see DRAIN_LIMIT). */
  discard(): void {
    if (this.discarding || this.ended) return;
    this.discarding = true;
    this.queue = null;
    this.queued = 0;
    this.clearReadTimer();
    if (this.paused) {
      this.paused = false;
      this.stream.resume();
    }
  }

  /** `100 Continue` once, for a client that asked to wait (`expect`: its Expect header). */
  sendContinue(expect: string | undefined): void {
    if (this.continueSent || this.ended || this.closed) return;
    this.continueSent = true;
    if (expect === undefined || expect.toLowerCase() !== '100-continue') return;
    try {
      this.stream.additionalHeaders({ ':status': 100 });
    } catch {
      // The head already went out or the stream closed: nothing to continue.
    }
  }
}
