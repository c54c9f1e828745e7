/**
 * The mock's connection: an in-memory stream the `client.connect` tap returns (nothing is
 * dialled) and the `ClientSession` the `client.session` tap drives it with. Each `dispatch`
 * is answered by the interceptors with a real `Response` whose body is a `FlowBody` fed a
 * chunk per tick, as a network body is, so every request-level hook above the session
 * (cookies, redirects, decompression, retries, trace) and the exchange's timeouts and
 * cancellation apply as against a server.
 */
import { Buffer } from 'node:buffer';
import { performance } from 'node:perf_hooks';
import { Duplex } from 'node:stream';
import { AbstractBody, ArgumentError, Headers, ProtocolError, readAll, statusText, TimeoutError, type CancelListener, type Request, type RequestContext, type Response } from '../../kernel/index.js';
import { FlowBody, kUnprocessed, protocolResponse, stopUpload, type ClientSession, type ExchangeOptions, type FlowSource, type SessionPool } from '../../kernel/protocol.js';
import { checkReply, errorFor, type Interceptor, type MockReplyData, type MockRequest } from './interceptor.js';

/** Bytes of a mocked body handed to the reader per tick, as a socket read would. */
const CHUNK = 16384;
/** Exchanges a mocked connection takes at once: the pool never needs a second one. */
const CAPACITY = 1_000_000;

/** @internal The in-memory connection of a mocked origin: reads nothing, discards writes. */
export class MockSocket extends Duplex {
  /** True for `https:` origins: the kernel layers no TLS over it (see `client.connect`). */
  readonly encrypted: boolean;
  /** The origin it stands for. */
  readonly origin: string;
  constructor(origin: string, secure: boolean) {
    super({ allowHalfOpen: false });
    this.origin = origin;
    this.encrypted = secure;
  }
  override _read(): void {}
  /** Its session never writes: bytes written come from a taker of the raw connection (an upgrade handshake), which the mock does not answer. */
  override _write(_chunk: unknown, _encoding: BufferEncoding, callback: (error?: Error | null) => void): void {
    callback(
      new ArgumentError(
        `the mock answers requests, not connections written to directly (a WebSocket or other upgrade handshake to ${this.origin}); let that origin use the network with allowNetwork and no interceptors`,
      ),
    );
  }
}

/** @internal What a mocked session asks of its agent. */
export interface MockAnswerer {
  /** The interceptor that answers `req` (its use counted), or throws `MockNotMatchedError`. */
  take(req: MockRequest): Interceptor;
  /** Marks a response as the mock's (the recorder leaves it alone). */
  mocked(res: Response): void;
  /** Whether `origin` is still the mock's (it has interceptors, or the network is not allowed for it). */
  answers(origin: string): boolean;
}

/** @internal The session of a {@link MockSocket}. */
export class MockSession implements ClientSession {
  readonly protocol: 'h2' | 'http/1.1';
  readonly multiplexed = true;
  closed = false;
  idleSince: number | undefined = performance.now();
  /** @internal */
  readonly exchanges = new Set<MockExchange>();

  constructor(
    /** The in-memory connection (diagnostics read its addresses: it has none). */
    readonly socket: MockSocket,
    private readonly pool: SessionPool | undefined,
    readonly answerer: MockAnswerer,
    h2: boolean,
  ) {
    this.protocol = h2 ? 'h2' : 'http/1.1';
    socket.once('close', () => this.destroy());
  }

  dispatch(request: Request, ctx: RequestContext, options?: ExchangeOptions): Promise<Response> {
    if (!this.closed && !this.answerer.answers(this.socket.origin)) {
      // Its interceptors are gone (clear()) and the network is allowed: the next connection is a real one.
      void this.close();
    }
    if (this.closed) {
      // The pool drops a closed session: a request it handed over anyway goes to a new one.
      const err = new ProtocolError('the mocked connection is closed; the request was not sent');
      (err as unknown as Record<symbol, unknown>)[kUnprocessed] = true;
      return Promise.reject(err);
    }
    const ex = new MockExchange(this, request, ctx, options ?? NO_TIMEOUTS);
    this.exchanges.add(ex);
    this.idleSince = undefined;
    return ex.start();
  }

  /** @internal */
  done(ex: MockExchange): void {
    if (!this.exchanges.delete(ex) || this.exchanges.size > 0) return;
    this.idleSince = performance.now();
    if (this.closed) this.socket.destroy();
  }

  capacity(): number {
    return this.closed ? 0 : CAPACITY;
  }

  isIdle(): boolean {
    return this.exchanges.size === 0;
  }

  close(): Promise<void> {
    this.closed = true;
    this.pool?.discard(this);
    if (this.exchanges.size === 0) this.socket.destroy();
    return Promise.resolve();
  }

  destroy(error?: Error): void {
    if (this.closed && this.exchanges.size === 0 && this.socket.destroyed) return;
    this.closed = true;
    this.pool?.discard(this);
    const err = error ?? new ProtocolError('the mocked connection was closed during the exchange');
    for (const ex of [...this.exchanges]) ex.fail(err);
    this.socket.destroy();
  }
}

const NO_TIMEOUTS: ExchangeOptions = Object.freeze({ responseHeaderTimeout: 0, readIdleTimeout: 0, writeIdleTimeout: 0, expectContinueTimeout: 0 });
const EMPTY = Buffer.alloc(0);

/** One mocked exchange: match, wait the delay, answer, stream the body. */
class MockExchange implements CancelListener, FlowSource {
  private resolveHead!: (r: Response) => void;
  private rejectHead!: (e: unknown) => void;
  private readonly started = performance.now();
  private headDone = false;
  private finished = false;
  private body: FlowBody | null = null;
  private bytes: Buffer = EMPTY;
  private trailers: Headers | null = null;
  private sent = 0;
  private paused = false;
  private pumping = false;
  private headTimer: NodeJS.Timeout | null = null;
  private delayTimer: NodeJS.Timeout | null = null;
  private deadlineTimer: NodeJS.Timeout | null = null;

  constructor(
    private readonly session: MockSession,
    private readonly req: Request,
    private readonly ctx: RequestContext,
    private readonly t: ExchangeOptions,
  ) {}

  start(): Promise<Response> {
    const head = new Promise<Response>((resolve, reject) => {
      this.resolveHead = resolve;
      this.rejectHead = reject;
    });
    this.ctx.addCancelListener(this);
    if (this.finished) return head;
    if (this.ctx.deadline > 0) {
      this.deadlineTimer = setTimeout(() => this.onDeadline(), Math.max(0, this.ctx.deadline - performance.now()));
      this.deadlineTimer.unref();
    }
    const headMs = this.t.responseHeaderTimeout > 0 ? this.t.responseHeaderTimeout : this.t.readIdleTimeout;
    if (headMs > 0) {
      this.headTimer = setTimeout(() => this.onHeadTimeout(headMs), headMs);
      this.headTimer.unref();
    }
    void this.answer();
    return head;
  }

  private async answer(): Promise<void> {
    try {
      const mreq = await this.mockRequest();
      if (this.finished) return;
      const i = this.session.answerer.take(mreq);
      if (i.delayMs > 0) {
        await new Promise<void>((resolve) => {
          // Ref'd, as a socket waiting for a slow server keeps the process alive.
          this.delayTimer = setTimeout(resolve, i.delayMs);
        });
        this.delayTimer = null;
        if (this.finished) return;
      }
      const a = i.answer!;
      if (a.kind === 'error') {
        throw typeof a.error === 'string' ? errorFor(a.error, mreq.origin) : typeof a.error === 'function' ? a.error(mreq) : a.error;
      }
      const data = a.kind === 'reply' ? a.data : await a.fn(mreq);
      if (this.finished) return;
      if (a.kind === 'function') checkReply(data, `the reply function of ${i.describe()}`);
      this.respond(data);
    } catch (err) {
      this.fail(err instanceof Error ? err : new ArgumentError(`a mock reply threw a non-Error: ${String(err)}`));
    }
  }

  /** The request as interceptors see it, its body read. */
  private async mockRequest(): Promise<MockRequest> {
    const r = this.req;
    const b = r.body;
    let body: Uint8Array;
    if (b === null) body = EMPTY;
    else if (typeof b === 'string') body = Buffer.from(b, 'utf8');
    else if (b instanceof AbstractBody) body = await readAll(b);
    else body = b;
    const u = new URL(r.url);
    return {
      method: r.method,
      url: r.url,
      origin: u.origin,
      path: u.pathname + u.search,
      headers: r.headers,
      body,
      text: () => Buffer.from(body.buffer, body.byteOffset, body.byteLength).toString('utf8'),
      json: () => JSON.parse(Buffer.from(body.buffer, body.byteOffset, body.byteLength).toString('utf8')) as unknown,
    };
  }

  private respond(data: MockReplyData): void {
    const headers = new Headers(data.headers ?? undefined);
    const b = data.body;
    let bytes: Buffer;
    if (b === undefined || b === null) bytes = EMPTY;
    else if (typeof b === 'string') bytes = Buffer.from(b, 'utf8');
    else if (b instanceof Uint8Array) bytes = Buffer.from(b.buffer, b.byteOffset, b.byteLength);
    else {
      bytes = Buffer.from(JSON.stringify(b), 'utf8');
      if (!headers.has('Content-Type')) headers.set('Content-Type', 'application/json');
    }
    const status = data.status;
    const noBody = this.req.method === 'HEAD' || status === 204 || status === 304 || status < 200;
    if (!noBody && !headers.has('Content-Length') && !headers.has('Transfer-Encoding')) headers.set('Content-Length', String(bytes.length));
    this.bytes = noBody ? EMPTY : bytes;
    const h2 = this.session.protocol === 'h2';
    const length = noBody ? 0 : bytes.length;
    const trailers = (this.trailers = noBody || data.trailers === undefined ? null : new Headers(data.trailers));
    const body = length === 0 && trailers === null ? null : (this.body = new FlowBody(this, length));
    const res = protocolResponse(status, h2 ? '' : statusText(status), headers, body ?? EMPTY, length, h2 ? 2 : 1, h2 ? 0 : 1, this.req);
    this.session.answerer.mocked(res);
    this.headDone = true;
    this.clearHeadTimer();
    this.resolveHead(res);
    if (body === null) this.finish();
    else this.schedule();
  }

  private schedule(): void {
    if (this.pumping || this.paused || this.finished) return;
    this.pumping = true;
    setImmediate(() => this.pump());
  }

  /** One chunk per tick, as the bytes of a socket come in reads. */
  private pump(): void {
    this.pumping = false;
    const body = this.body;
    if (body === null || this.finished || this.paused) return;
    const n = Math.min(CHUNK, this.bytes.length - this.sent);
    body.push(this.bytes.subarray(this.sent, this.sent + n));
    this.sent += n;
    if (this.sent >= this.bytes.length) {
      if (this.trailers !== null) body.trailerFields = this.trailers;
      body.end();
      this.finish();
      return;
    }
    this.schedule();
  }

  pause(): void {
    this.paused = true;
  }

  resume(): void {
    this.paused = false;
    this.schedule();
  }

  abandon(): void {
    this.finish();
  }

  /** @internal The call's context was canceled. */
  onContextCanceled(err: Error): void {
    this.fail(err);
  }

  private onDeadline(): void {
    this.deadlineTimer = null;
    const limit = this.t.requestTimeout ?? 0;
    this.fail(new TimeoutError('request', limit, Math.round(performance.now() - this.started), limit > 0 ? `requestTimeout of ${limit} ms passed` : 'request deadline expired'));
  }

  private onHeadTimeout(ms: number): void {
    this.headTimer = null;
    const what = this.t.responseHeaderTimeout > 0 ? 'responseHeaderTimeout' : 'readIdleTimeout';
    this.fail(new TimeoutError('request', ms, Math.round(performance.now() - this.started), `${what} of ${ms} ms passed (${this.req.method} ${this.req.url})`));
  }

  /** @internal Ends the exchange with `err`: the head rejects, or the body fails. */
  fail(err: unknown): void {
    if (this.finished) return;
    if (!this.headDone) {
      const b = this.req.body;
      if (b instanceof AbstractBody) stopUpload(b, err instanceof Error ? err : null);
      this.finish();
      this.rejectHead(err);
      return;
    }
    this.finish();
    this.body?.error(err instanceof Error ? err : new ProtocolError(String(err)));
  }

  private clearHeadTimer(): void {
    if (this.headTimer !== null) clearTimeout(this.headTimer);
    this.headTimer = null;
  }

  private finish(): void {
    if (this.finished) return;
    this.finished = true;
    this.clearHeadTimer();
    if (this.delayTimer !== null) clearTimeout(this.delayTimer);
    this.delayTimer = null;
    if (this.deadlineTimer !== null) clearTimeout(this.deadlineTimer);
    this.deadlineTimer = null;
    this.ctx.removeCancelListener(this);
    this.session.done(this);
  }
}
