/**
 * Message bodies. A body is a string, bytes, or a streamed {@link AbstractBody}; streamed
 * bodies and the bodies of incoming messages are single-use.
 */
import { Buffer } from 'node:buffer';
import { ArgumentError } from '../errors.js';
import { Headers } from './headers.js';

/** A request or response body as stored on a message. */
export type Body = string | Uint8Array | AbstractBody | null;

/**
 * Supertype of streamed bodies. A subclass implements {@link AbstractBody.read},
 * {@link AbstractBody.close} and {@link AbstractBody.closed}. A subclass that knows its media
 * type may expose it as a `contentType` string: the client then sets Content-Type from it
 * when the caller did not (multipart `Form` does).
 */
export abstract class AbstractBody implements AsyncIterable<Uint8Array> {
  /** Reads up to `dst.length` bytes into the start of `dst`; resolves to the count, 0 at the end. */
  abstract read(dst: Uint8Array): Promise<number>;
  /** Releases held resources; closing a closed body does nothing. Reading to the end does not close. */
  abstract close(): void;
  /** True once {@link AbstractBody.close} ran. */
  abstract get closed(): boolean;
  /** Body length in bytes when known, else -1. */
  get length(): number {
    return -1;
  }
  /** Trailers that ended the body (chunked HTTP/1, HTTP/2), else empty; read to the end first. */
  trailers(): Headers {
    return new Headers();
  }
  /** Iterates the rest of the body as chunks; each chunk is a fresh buffer the caller may keep. */
  async *[Symbol.asyncIterator](): AsyncIterator<Uint8Array> {
    for (;;) {
      const buf = new Uint8Array(16384);
      const n = await this.read(buf);
      if (n === 0) return;
      yield n === buf.length ? buf : buf.subarray(0, n);
    }
  }
}

/**
 * A streamed body that makes its bytes a chunk at a time (a decoder's output, a form's parts,
 * an iterator's values): a subclass implements {@link ChunkBody.nextChunk}, and
 * {@link ChunkBody.read} hands each chunk out in pieces of at most `dst.length`, what does not
 * fit waiting for the next read. Empty chunks are skipped (a read returns 0 only at the end).
 * A subclass whose chunks are fresh buffers may iterate them uncopied with
 * {@link ChunkBody.chunks}; otherwise iteration copies, as for any body.
 *
 * @example
 * ```ts
 * class Countdown extends ChunkBody {
 *   private n = 3;
 *   private done = false;
 *   protected async nextChunk() {
 *     return this.done || this.n === 0 ? null : Buffer.from(`${this.n--}\n`);
 *   }
 *   close() { this.done = true; this.dropWaiting(); }
 *   get closed() { return this.done; }
 * }
 * ```
 */
export abstract class ChunkBody extends AbstractBody {
  // The rest of a chunk a read took only part of.
  private waiting: Uint8Array | null = null;

  /** The next chunk, or null at the end (and once closed). */
  protected abstract nextChunk(): Promise<Uint8Array | null>;

  /** See {@link AbstractBody.read}. */
  async read(dst: Uint8Array): Promise<number> {
    if (this.closed || dst.length === 0) return 0;
    let chunk = this.waiting;
    this.waiting = null;
    while (chunk === null || chunk.length === 0) {
      chunk = await this.nextChunk();
      if (chunk === null) return 0;
    }
    const n = Math.min(dst.length, chunk.length);
    dst.set(n === chunk.length ? chunk : chunk.subarray(0, n), 0);
    if (n < chunk.length) this.waiting = chunk.subarray(n);
    return n;
  }

  /** True while part of a chunk waits for the next read. */
  protected get hasWaiting(): boolean {
    return this.waiting !== null;
  }

  /** Drops what waits (for `close()`). */
  protected dropWaiting(): void {
    this.waiting = null;
  }

  /** The rest of the body as its chunks, uncopied: what a read left waiting, then each new one. */
  protected async *chunks(): AsyncGenerator<Uint8Array> {
    const w = this.waiting;
    this.waiting = null;
    if (w !== null && w.length > 0) yield w;
    for (;;) {
      const c = await this.nextChunk();
      if (c === null) return;
      if (c.length > 0) yield c;
    }
  }
}

/**
 * Takes charge of the errors of a Node stream (an EventEmitter with `destroy`) that a body
 * reads later: a stream that fails before it is read (a `createReadStream` of a missing file
 * fails at once) would otherwise crash the process with an unhandled `'error'` event. Its
 * async iterator still throws the stored error when the body reads it, so the call that
 * sends the body fails with it. Anything that is not such a stream is left alone.
 */
export function adoptStreamErrors(source: unknown): void {
  const s = source as { on?: unknown; destroy?: unknown } | null;
  if (typeof s === 'object' && s !== null && typeof s.on === 'function' && typeof s.destroy === 'function') {
    (s as { on(event: 'error', listener: () => void): unknown }).on('error', ignoreError);
  }
}

function ignoreError(): void {}

/** Reads the rest of `body` into one buffer. */
export async function readAll(body: AbstractBody, limit = Infinity): Promise<Uint8Array> {
  const chunks: Uint8Array[] = [];
  let total = 0;
  for await (const c of body) {
    total += c.length;
    if (total > limit) throw new RangeError(`body larger than ${limit} bytes`);
    chunks.push(c);
  }
  return chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks, total);
}

/** A callback-driven body, readable once; `closeCb` runs once when the body is closed. */
export class CallbackBody extends AbstractBody {
  private readCb: ((dst: Uint8Array) => number | Promise<number>) | null;
  private closeCb: (() => void) | null;
  private done = false;
  private isClosed = false;

  /**
   * `readCb(dst)` fills the start of `dst` and returns the byte count, 0 at the end.
   * `closeCb()` runs once on {@link CallbackBody.close}.
   */
  constructor(readCb: (dst: Uint8Array) => number | Promise<number>, closeCb?: () => void) {
    super();
    if (typeof readCb !== 'function') throw new ArgumentError('CallbackBody needs a read callback function');
    if (closeCb !== undefined && typeof closeCb !== 'function') throw new ArgumentError('CallbackBody close callback must be a function');
    this.readCb = readCb;
    this.closeCb = closeCb ?? null;
  }

  /** See {@link AbstractBody.read}. After the end (or close) it keeps returning 0. */
  async read(dst: Uint8Array): Promise<number> {
    if (this.done || this.isClosed || this.readCb === null) return 0;
    if (dst.length === 0) return 0;
    const n = await this.readCb(dst);
    if (!Number.isInteger(n) || n < 0 || n > dst.length) {
      throw new ArgumentError(`CallbackBody read callback returned ${String(n)}, expected an integer 0..${dst.length}`);
    }
    if (n === 0) this.done = true;
    return n;
  }

  /** Runs the close callback once. */
  close(): void {
    if (this.isClosed) return;
    this.isClosed = true;
    this.readCb = null;
    const cb = this.closeCb;
    this.closeCb = null;
    if (cb) cb();
  }

  /** See {@link AbstractBody.closed}. */
  get closed(): boolean {
    return this.isClosed;
  }
}

/** A single-use streamed body over bytes already in memory. */
export class BytesBody extends AbstractBody {
  private data: Uint8Array;
  private pos = 0;
  private isClosed = false;

  /** Wraps `data` (a string is encoded as UTF-8); the bytes are not copied. */
  constructor(data: Uint8Array | string) {
    super();
    if (typeof data === 'string') this.data = Buffer.from(data, 'utf8');
    else if (data instanceof Uint8Array) this.data = data;
    else throw new ArgumentError(`BytesBody takes a Uint8Array or string, got ${typeof data}`);
  }

  /** See {@link AbstractBody.read}. */
  read(dst: Uint8Array): Promise<number> {
    if (this.isClosed) return Promise.resolve(0);
    const n = Math.min(dst.length, this.data.length - this.pos);
    if (n > 0) {
      dst.set(this.data.subarray(this.pos, this.pos + n), 0);
      this.pos += n;
    }
    return Promise.resolve(n);
  }

  /** Releases the bytes. */
  close(): void {
    this.isClosed = true;
    this.data = EMPTY;
  }

  /** See {@link AbstractBody.closed}. */
  get closed(): boolean {
    return this.isClosed;
  }

  /** Bytes not yet read. */
  override get length(): number {
    return this.data.length - this.pos;
  }
}

const EMPTY = new Uint8Array(0);

/** The shared empty body; frozen, must not be modified. */
export const nobody: Uint8Array = Object.freeze(new Uint8Array(0)) as Uint8Array;

function asBody(body: unknown, fn: string): AbstractBody {
  if (body instanceof AbstractBody) return body;
  throw new ArgumentError(`${fn} takes an AbstractBody, got ${body === null ? 'null' : typeof body}`);
}

/** Reads up to `dst.length` bytes of `body`; resolves to the count, 0 at the end. */
export function bodyRead(body: AbstractBody, dst: Uint8Array): Promise<number> {
  return asBody(body, 'bodyRead').read(dst);
}

/** Closes `body`, releasing what it holds; closing twice does nothing. */
export function bodyClose(body: AbstractBody): void {
  asBody(body, 'bodyClose').close();
}

/** True when `body` has been closed. */
export function bodyClosed(body: AbstractBody): boolean {
  return asBody(body, 'bodyClosed').closed;
}

/** A copy of the trailers that ended `body` (read it to the end first), else empty Headers. */
export function trailers(body: Body | undefined): Headers {
  if (body instanceof AbstractBody) return body.trailers().clone();
  return new Headers();
}

/** Byte length of a string, bytes or empty body; -1 for a streamed body. */
export function bodyLength(body: Body | undefined): number {
  if (body == null) return 0;
  if (typeof body === 'string') return Buffer.byteLength(body, 'utf8');
  if (body instanceof Uint8Array) return body.length;
  return -1;
}
