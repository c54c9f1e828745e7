/**
 * Pull-style byte source for `readRequest`/`readResponse` and incoming bodies: wraps a Node
 * Readable (a socket), any async iterable of byte chunks, or bytes already in memory, and lets
 * a reader put back bytes it did not use (the start of the next message).
 */
import { Buffer } from 'node:buffer';
import { ArgumentError } from '../errors.js';

/** What {@link ByteReader.from} accepts. A Node `Readable` is an async iterable. */
export type ByteSourceInit = ByteReader | Uint8Array | AsyncIterable<Uint8Array | string>;

const EMPTY = new Uint8Array(0);

/** Readers made for streams, so reading the same stream twice continues where it stopped. */
const readers = new WeakMap<object, ByteReader>();

/**
 * Chunks of a byte stream, with put-back. Single consumer: do not call {@link ByteReader.read}
 * again before the previous call settled.
 */
export class ByteReader {
  private pending: Uint8Array[] = [];
  private iterator: AsyncIterator<Uint8Array | string> | null;
  private bytes: Uint8Array | null;
  private eof = false;

  /** Wraps `source`; prefer {@link ByteReader.from}, which reuses the reader of a stream. */
  constructor(source: Uint8Array | AsyncIterable<Uint8Array | string>) {
    if (source instanceof Uint8Array) {
      this.bytes = source;
      this.iterator = null;
    } else if (source != null && typeof (source as AsyncIterable<unknown>)[Symbol.asyncIterator] === 'function') {
      this.bytes = null;
      this.iterator = source[Symbol.asyncIterator]();
    } else {
      throw new ArgumentError(`byte source must be a Uint8Array, a Readable or an async iterable of Uint8Array, got ${source === null ? 'null' : typeof source}`);
    }
  }

  /**
   * The reader for `source`: the reader itself; a new reader over a Uint8Array (each call reads
   * the bytes from the start); for a stream or async iterable the one reader kept for it, so
   * bytes a previous read left over (a pipelined request) are not lost between calls.
   */
  static from(source: ByteSourceInit): ByteReader {
    if (source instanceof ByteReader) return source;
    if (source instanceof Uint8Array) return new ByteReader(source);
    if (source === null || typeof source !== 'object') return new ByteReader(source);
    let r = readers.get(source);
    if (r === undefined) {
      r = new ByteReader(source);
      readers.set(source, r);
    }
    return r;
  }

  /** True when put-back bytes are waiting, so the next {@link ByteReader.read} does not wait. */
  get buffered(): boolean {
    return this.pending.length > 0;
  }

  /** Next chunk of bytes, or `null` at the end of the stream. Chunks are never empty. */
  async read(): Promise<Uint8Array | null> {
    const p = this.pending.pop();
    if (p !== undefined) return p;
    if (this.eof) return null;
    if (this.bytes !== null) {
      const b = this.bytes;
      this.bytes = null;
      this.eof = true;
      return b.length > 0 ? b : null;
    }
    for (;;) {
      const r = await this.iterator!.next();
      if (r.done === true) {
        this.eof = true;
        this.iterator = null;
        return null;
      }
      const v = r.value;
      const chunk = typeof v === 'string' ? Buffer.from(v, 'utf8') : v;
      if (!(chunk instanceof Uint8Array)) throw new ArgumentError(`byte source yielded ${typeof chunk}, expected Uint8Array`);
      if (chunk.length > 0) return chunk;
    }
  }

  /** Puts `chunk` back in front: the next {@link ByteReader.read} returns it. Empty chunks are ignored. */
  unread(chunk: Uint8Array): void {
    if (chunk.length > 0) this.pending.push(chunk);
  }

  /** Resolves true when at least one more byte is available (it stays unread), false at the end. */
  async hasMore(): Promise<boolean> {
    const c = await this.read();
    if (c === null) return false;
    this.unread(c);
    return true;
  }

  /** Stops reading: drops put-back bytes and ends the underlying iterator (a Readable is destroyed). */
  async close(): Promise<void> {
    this.pending.length = 0;
    this.bytes = null;
    this.eof = true;
    const it = this.iterator;
    this.iterator = null;
    if (it !== null && typeof it.return === 'function') await it.return(EMPTY);
  }
}
