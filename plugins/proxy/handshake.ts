/**
 * The plumbing every proxy handshake shares: a TCP connection to the proxy, a reader that
 * takes exact byte counts off the socket (SOCKS5), and one bound — the connect
 * timeout, the request's deadline and its cancellation — around the whole handshake.
 *
 * The reader uses `'readable'`/`read()`, never `'data'`: when it lets go the socket is back in
 * its initial (not flowing, not explicitly paused) state, so the next owner (the kernel's
 * HTTP/1 session, or TLS) starts reading the usual way, and unread bytes are put back first.
 */
import { Buffer } from 'node:buffer';
import { performance } from 'node:perf_hooks';
import net from 'node:net';
import { CanceledError, TimeoutError, type RequestContext } from '../../kernel/index.js';
import { dialTcp } from '../../kernel/protocol.js';
import type { ProxyEndpoint } from './endpoint.js';
import { ProxyError } from './errors.js';

/** What bounds one proxied connect. */
export interface HandshakeBounds {
  /** The connect timeout in ms (0: none). */
  readonly timeoutMs: number;
  /** `performance.now()` when the connect started (the timeout counts from here). */
  readonly started: number;
  /** The request's context: its deadline and cancellation also bound the handshake. */
  readonly ctx?: RequestContext;
  /** Cancels the handshake (for callers without a context, such as a WebSocket client). */
  readonly signal?: AbortSignal;
}

/**
 * Runs `work` on `socket` under `bounds`: on timeout, deadline or cancellation the socket is
 * destroyed and the promise rejects with `TimeoutError('connect')`, the request's
 * `TimeoutError('request')` or the cancellation error. `what` names the step for messages.
 */
export function bounded<T>(socket: net.Socket, bounds: HandshakeBounds, what: () => string, work: Promise<T>): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    let done = false;
    let timer: NodeJS.Timeout | null = null;
    let removeCancel: (() => void) | null = null;
    const signal = bounds.signal;
    const finish = (): boolean => {
      if (done) return false;
      done = true;
      if (timer !== null) clearTimeout(timer);
      removeCancel?.();
      signal?.removeEventListener('abort', onAbort);
      return true;
    };
    const fail = (err: unknown): void => {
      if (!finish()) return;
      socket.destroy();
      reject(err);
    };
    const onAbort = (): void => {
      const r: unknown = signal?.reason;
      fail(r instanceof Error ? r : new CanceledError(typeof r === 'string' ? r : 'proxy connect aborted by its AbortSignal'));
    };
    work.then(
      (v) => {
        if (finish()) resolve(v);
      },
      (err: unknown) => fail(err),
    );
    if (done) return;
    const ctx = bounds.ctx;
    const own = bounds.timeoutMs > 0 ? bounds.started + bounds.timeoutMs : 0;
    const ctxDeadline = ctx?.deadline ?? 0;
    const requestFirst = ctxDeadline > 0 && (own === 0 || ctxDeadline < own);
    const at = requestFirst ? ctxDeadline : own;
    if (at > 0) {
      timer = setTimeout(
        () => {
          const elapsed = Math.round(performance.now() - bounds.started);
          fail(
            requestFirst
              ? new TimeoutError('request', 0, elapsed, `request deadline passed during ${what()}`)
              : new TimeoutError('connect', bounds.timeoutMs, elapsed, `connectTimeout of ${bounds.timeoutMs} ms passed during ${what()}`),
          );
        },
        Math.max(0, at - performance.now()),
      );
      timer.unref();
    }
    if (ctx !== undefined) removeCancel = ctx.onCancel(fail);
    if (signal !== undefined) {
      if (signal.aborted) onAbort();
      else signal.addEventListener('abort', onAbort, { once: true });
    }
  });
}

/** Opens TCP to the proxy: the socket at once, and a promise for its `connect` with the kernel's errors for the proxy's address (the kernel's own dial: `localAddr` binds the same way). */
export function dial(proxy: ProxyEndpoint, localAddress: string | undefined): { socket: net.Socket; connected: Promise<void> } {
  return dialTcp(proxy.host, proxy.port, localAddress, proxy.address);
}

/**
 * Reads a handshake's replies off a socket. Every failure (the proxy closing, a reset) rejects
 * the pending read with a `ProxyError` that says which step broke; `release()` hands the
 * socket on.
 */
export class SocketReader {
  private buf: Buffer = Buffer.alloc(0);
  private want: ((buf: Buffer) => number) | null = null;
  private settle: { resolve: (v: Buffer) => void; reject: (e: unknown) => void } | null = null;
  private failure: Error | null = null;
  private received = 0;
  private readonly socket: net.Socket;
  private readonly proxy: ProxyEndpoint;
  /** The step in progress, for messages ("the CONNECT handshake"). */
  step: string;

  constructor(socket: net.Socket, proxy: ProxyEndpoint, step: string) {
    this.socket = socket;
    this.proxy = proxy;
    this.step = step;
    socket.on('readable', this.onReadable);
    socket.on('end', this.onEnd);
    socket.on('close', this.onEnd);
    socket.on('error', this.onError);
  }

  /** Exactly `n` bytes. */
  read(n: number): Promise<Buffer> {
    return this.until((buf) => (buf.length >= n ? n : -1));
  }

  /** Stops reading and puts bytes read past the handshake back into the socket. */
  release(): void {
    const s = this.socket;
    s.removeListener('readable', this.onReadable);
    s.removeListener('end', this.onEnd);
    s.removeListener('close', this.onEnd);
    s.removeListener('error', this.onError);
    // Until its next owner attaches one, a late error must not crash the process.
    s.on('error', noop);
    if (this.buf.length > 0) s.unshift(this.buf);
    this.buf = Buffer.alloc(0);
  }

  /** Bytes received from the proxy so far. */
  get bytesReceived(): number {
    return this.received;
  }

  private until(take: (buf: Buffer) => number): Promise<Buffer> {
    if (this.failure !== null) return Promise.reject(this.failure);
    return new Promise<Buffer>((resolve, reject) => {
      this.want = take;
      this.settle = { resolve, reject };
      this.pump();
    });
  }

  private pump(): void {
    const take = this.want;
    if (take === null || this.settle === null) return;
    let n: number;
    try {
      n = take(this.buf);
    } catch (err) {
      this.reject(err);
      return;
    }
    if (n < 0) return;
    const out = this.buf.subarray(0, n);
    this.buf = this.buf.subarray(n);
    const s = this.settle;
    this.want = null;
    this.settle = null;
    s.resolve(out);
  }

  private reject(err: unknown): void {
    const s = this.settle;
    this.want = null;
    this.settle = null;
    s?.reject(err);
  }

  private readonly onReadable = (): void => {
    let chunk: Buffer | null;
    while ((chunk = this.socket.read() as Buffer | null) !== null) {
      this.received += chunk.length;
      this.buf = this.buf.length === 0 ? chunk : Buffer.concat([this.buf, chunk]);
    }
    this.pump();
  };

  private readonly onEnd = (): void => {
    if (this.failure !== null) return;
    this.failure = new ProxyError(
      this.proxy.href,
      `proxy ${this.proxy.href} closed the connection during ${this.step}${this.received > 0 ? ` (after ${this.received} bytes of reply)` : ' (before replying)'}`,
    );
    this.reject(this.failure);
  };

  private readonly onError = (err: Error): void => {
    if (this.failure !== null) return;
    this.failure = new ProxyError(this.proxy.href, `connection to proxy ${this.proxy.href} failed during ${this.step}: ${err.message}`, { cause: err });
    this.reject(this.failure);
  };
}

function noop(): void {}
