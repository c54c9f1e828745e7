/**
 * `open`: one client exchange as a stream. Writes send the request body as the handler
 * produces it; `startRead` finishes the request and resolves to the response head; reads
 * read the response body.
 */
import { Buffer } from 'node:buffer';
import { ArgumentError, ResponseTooLargeError } from '../errors.js';
import { AbstractBody } from '../message/body.js';
import type { RequestContext } from '../message/context.js';
import type { Response } from '../message/response.js';
import { FlowBody } from './flow-body.js';

/** A request body fed by `ClientStream.write`: each write resolves once the connection took it. */
export class PushBody extends AbstractBody {
  private queue: Uint8Array[] = [];
  private ended = false;
  private isClosed = false;
  private failure: Error | null = null;
  private reader: (() => void) | null = null;
  private writers: { resolve(): void; reject(e: Error): void }[] = [];

  /** @internal Queues bytes; resolves when they were read (sent). */
  push(data: Uint8Array): Promise<void> {
    if (this.failure !== null) return Promise.reject(this.failure);
    if (this.ended || this.isClosed) return Promise.reject(new ArgumentError('write after closeWrite'));
    if (data.length === 0) return Promise.resolve();
    this.queue.push(data);
    this.wake();
    return new Promise((resolve, reject) => this.writers.push({ resolve, reject }));
  }

  /**
   * @internal The upload failed (the handler threw, the exchange was canceled): the reader
   * sees the error instead of an end, so a truncated body is never sent as a complete one,
   * and waiting writers reject.
   */
  abort(err: Error): void {
    if (this.failure !== null) return;
    this.failure = err;
    this.queue = [];
    for (const w of this.writers.splice(0)) w.reject(err);
    this.wake();
  }

  /** @internal No more bytes. */
  end(): void {
    this.ended = true;
    this.wake();
  }

  /** True once {@link PushBody.end} ran. */
  get isEnded(): boolean {
    return this.ended;
  }

  private wake(): void {
    const r = this.reader;
    this.reader = null;
    r?.();
  }

  /** See {@link AbstractBody.read}. */
  async read(dst: Uint8Array): Promise<number> {
    for (;;) {
      if (this.failure !== null) throw this.failure;
      if (this.isClosed) return 0;
      const head = this.queue[0];
      if (head !== undefined) {
        const n = Math.min(dst.length, head.length);
        dst.set(head.subarray(0, n), 0);
        if (n === head.length) {
          this.queue.shift();
          this.writers.shift()?.resolve();
        } else {
          this.queue[0] = head.subarray(n);
        }
        return n;
      }
      if (this.ended) return 0;
      await new Promise<void>((resolve) => {
        this.reader = resolve;
      });
    }
  }

  /** Stops the body; writes still waiting reject (their bytes were never sent). */
  close(): void {
    if (this.isClosed) return;
    this.isClosed = true;
    this.queue = [];
    const err = this.failure ?? new ArgumentError('the request body was closed before this write was sent');
    for (const w of this.writers.splice(0)) w.reject(err);
    this.wake();
  }

  /** See {@link AbstractBody.closed}. */
  get closed(): boolean {
    return this.isClosed;
  }
}

/** One client exchange read and written as a stream (the argument of `open`'s handler). */
export class ClientStream {
  private readonly body: PushBody | null;
  private readonly head: Promise<Response>;
  private response: Response | null = null;
  private leftover: Uint8Array | null = null;
  private readEnded = false;

  private readonly ctx: RequestContext;
  /** The call's `maxResponseBytes` for {@link ClientStream.readAll} (Infinity: none). */
  private readonly maxResponseBytes: number;

  /** @internal */
  constructor(body: PushBody | null, head: Promise<Response>, ctx: RequestContext, maxResponseBytes = Infinity) {
    this.body = body;
    this.head = head;
    this.ctx = ctx;
    this.maxResponseBytes = maxResponseBytes;
    // The handler may never read the head; its failure is reported by open() itself.
    head.catch(() => undefined);
  }

  /** Sends request body bytes (a string is UTF-8); resolves once the connection took them. */
  async write(data: Uint8Array | string): Promise<void> {
    if (this.body === null) throw new ArgumentError('this request has no body: set a Content-Length or Transfer-Encoding header, or use a method that carries one (POST, PUT, PATCH, …)');
    const bytes = typeof data === 'string' ? Buffer.from(data, 'utf8') : data;
    if (!(bytes instanceof Uint8Array)) throw new ArgumentError(`write takes a Uint8Array or string, got ${typeof data}`);
    try {
      await this.body.push(bytes);
    } catch (err) {
      // A canceled or expired exchange reports why, not the body's own state.
      throw this.ctx.error() ?? err;
    }
  }

  /** Ends the request body. */
  closeWrite(): void {
    this.body?.end();
  }

  /**
   * Finishes the request and resolves to the response head; the body stays on the stream.
   * With `{ closeWrite: false }` the request body stays open (full duplex: read the response
   * while still writing, then `closeWrite()`).
   */
  async startRead(options: { closeWrite?: boolean } = {}): Promise<Response> {
    if (options.closeWrite !== false) this.closeWrite();
    if (this.response === null) this.response = await this.head;
    return this.response;
  }

  /** The next chunk of the response body, or null at its end (after `startRead`, or it is called first). */
  async read(): Promise<Uint8Array | null> {
    const res = this.response ?? (await this.startRead());
    if (this.leftover !== null) {
      const l = this.leftover;
      this.leftover = null;
      return l;
    }
    const b = res.body;
    if (this.readEnded || !(b instanceof AbstractBody)) {
      this.readEnded = true;
      return null;
    }
    const buf = new Uint8Array(65536);
    const n = await b.read(buf);
    if (n === 0) {
      this.readEnded = true;
      return null;
    }
    return buf.subarray(0, n);
  }

  /** Reads up to `dst.length` bytes of the response body; resolves to the count, 0 at the end. */
  async readBytes(dst: Uint8Array): Promise<number> {
    const chunk = await this.read();
    if (chunk === null) return 0;
    const n = Math.min(dst.length, chunk.length);
    dst.set(chunk.subarray(0, n), 0);
    if (n < chunk.length) this.leftover = chunk.subarray(n);
    return n;
  }

  /**
   * Reads the rest of the response body into one buffer: at most the call's `maxResponseBytes`,
   * past it the read side is closed (`closeRead`) and `ResponseTooLargeError` thrown.
   */
  async readAll(): Promise<Uint8Array> {
    const parts: Uint8Array[] = [];
    const limit = this.maxResponseBytes;
    let total = 0;
    for (;;) {
      const c = await this.read();
      if (c === null) break;
      total += c.length;
      if (total > limit) {
        await this.closeRead().catch(() => undefined);
        throw new ResponseTooLargeError(limit, total);
      }
      parts.push(c);
    }
    return Buffer.concat(parts, total);
  }

  /** Iterates the response body. */
  async *[Symbol.asyncIterator](): AsyncGenerator<Uint8Array> {
    for (;;) {
      const c = await this.read();
      if (c === null) return;
      yield c;
    }
  }

  /** Discards the rest of the response body (the connection is closed, not reused); returns the response. */
  async closeRead(): Promise<Response> {
    const res = await this.startRead();
    const b = res.body;
    if (b instanceof FlowBody) b.closeRead();
    else if (b instanceof AbstractBody) b.close();
    this.readEnded = true;
    this.leftover = null;
    return res;
  }

  /** Client streams have no peer address to report: always `ArgumentError`, as the reference says. */
  peerAddr(): never {
    throw new ArgumentError('peerAddr is for server streams; a client stream has none');
  }

  /** @internal Reads and drops what the handler left unread, so the connection can be reused. */
  async finish(): Promise<Response> {
    const res = await this.startRead();
    const b = res.body;
    if (b instanceof AbstractBody) {
      if (!this.readEnded) {
        const buf = new Uint8Array(65536);
        let dropped = 0;
        while ((await b.read(buf)) > 0) {
          dropped += 1;
          if (dropped > 64) {
            b.close();
            break;
          }
        }
      }
      b.close();
    }
    res.body = null;
    return res;
  }
}

/** @internal Whether `open` should give the request a streamed body. */
export function opensBody(method: string, hasFraming: boolean): boolean {
  if (hasFraming) return true;
  return !(method === 'GET' || method === 'HEAD' || method === 'DELETE' || method === 'OPTIONS' || method === 'TRACE');
}
