/**
 * The body of a message read with `readRequest`/`readResponse`: reads exactly the framed bytes
 * from the connection and leaves whatever follows (the next message) in the byte source.
 */
import { ArgumentError, ParseError } from '../errors.js';
import { AbstractBody } from '../message/body.js';
import { Headers } from '../message/headers.js';
import type { ByteReader } from './byte-reader.js';
import { ChunkedDecoder } from './chunked.js';
import type { HeadLimits } from './head-parser.js';

/** Framing of an {@link IncomingBody}. */
export type IncomingBodyKind = 'length' | 'chunked' | 'close';

/** Options of {@link IncomingBody}. */
export interface IncomingBodyOptions extends HeadLimits {
  /** Size of the head already read; chunked trailers share `maxHeaderBytes` with it. */
  headBytes?: number;
}

/**
 * A single-use streamed body over a {@link ByteReader}: `length` framing reads exactly
 * `contentLength` bytes, `chunked` decodes chunks and collects trailers, `close` reads to the
 * end of the stream. Reading stops exactly at the end of the body and puts any further bytes
 * back into the reader, so the next message can be read from it (keep-alive, pipelining).
 *
 * A source that ends before a `length` or `chunked` body is complete raises `ParseError`.
 * Closing the body before its end leaves the reader in the middle of the body: the connection
 * cannot carry another message then.
 */
export class IncomingBody extends AbstractBody {
  /** Framing of this body. */
  readonly kind: IncomingBodyKind;
  private readonly reader: ByteReader;
  private readonly contentLength: number;
  private remaining: number;
  private readonly decoder: ChunkedDecoder | null;
  private buf: Uint8Array | null = null;
  private pos = 0;
  private end = 0;
  private finished = false;
  private isClosed = false;
  private failure: Error | null = null;
  private reading = false;

  /** `contentLength` is required for `length` framing and ignored otherwise. */
  constructor(reader: ByteReader, kind: IncomingBodyKind, contentLength = -1, options: IncomingBodyOptions = {}) {
    super();
    if (kind !== 'length' && kind !== 'chunked' && kind !== 'close') throw new ArgumentError(`IncomingBody kind must be 'length', 'chunked' or 'close', got ${String(kind)}`);
    if (kind === 'length' && (!Number.isSafeInteger(contentLength) || contentLength < 0)) {
      throw new ArgumentError(`IncomingBody with length framing needs a contentLength >= 0, got ${contentLength}`);
    }
    this.kind = kind;
    this.reader = reader;
    this.contentLength = kind === 'length' ? contentLength : -1;
    this.remaining = kind === 'length' ? contentLength : Number.POSITIVE_INFINITY;
    this.decoder = kind === 'chunked' ? new ChunkedDecoder(options) : null;
    if (kind === 'length' && contentLength === 0) this.finished = true;
  }

  /** Content-Length for `length` framing, else -1. */
  override get length(): number {
    return this.contentLength;
  }

  /** True once the whole body has been read (the byte source is at the next message). */
  get complete(): boolean {
    return this.finished;
  }

  /** Trailers of a chunked body (canonical names); empty for other framings and before the end. */
  override trailers(): Headers {
    return this.decoder !== null && this.decoder.done ? this.decoder.trailers : new Headers();
  }

  /**
   * Reads up to `dst.length` bytes into `dst`; resolves to the count, 0 at the end of the body.
   * Rejects with `ParseError` when the source ends early or the chunked coding is malformed.
   */
  async read(dst: Uint8Array): Promise<number> {
    if (this.failure !== null) throw this.failure;
    if (this.finished || this.isClosed || dst.length === 0) return 0;
    if (this.reading) throw new ArgumentError('IncomingBody.read called again before the previous read finished');
    this.reading = true;
    try {
      return await this.readSome(dst);
    } catch (err) {
      this.failure = err as Error;
      throw err;
    } finally {
      this.reading = false;
    }
  }

  private async readSome(dst: Uint8Array): Promise<number> {
    for (;;) {
      if (this.pos >= this.end) {
        const chunk = await this.reader.read();
        if (this.isClosed) {
          if (chunk !== null) this.reader.unread(chunk);
          return 0;
        }
        if (chunk === null) {
          if (this.kind === 'close') {
            this.finished = true;
            return 0;
          }
          throw new ParseError(
            this.kind === 'length'
              ? `body truncated: the stream ended ${this.remaining} bytes short of Content-Length ${this.contentLength}`
              : 'body truncated: the stream ended inside a chunked body',
          );
        }
        this.buf = chunk;
        this.pos = 0;
        this.end = chunk.length;
      }
      const buf = this.buf!;
      const dec = this.decoder;
      if (dec === null) {
        let n = this.end - this.pos;
        if (n > dst.length) n = dst.length;
        if (n > this.remaining) n = this.remaining;
        dst.set(n === buf.length ? buf : buf.subarray(this.pos, this.pos + n), 0);
        this.pos += n;
        this.remaining -= n;
        if (this.remaining === 0) this.finish();
        return n;
      }
      this.pos += dec.execute(buf, this.pos, this.end, dst.length);
      const n = dec.dataEnd - dec.dataStart;
      if (n > 0) {
        dst.set(buf.subarray(dec.dataStart, dec.dataEnd), 0);
        return n;
      }
      if (dec.done) {
        this.finish();
        return 0;
      }
    }
  }

  /** Marks the end and gives the bytes after the body back to the reader. */
  private finish(): void {
    this.finished = true;
    if (this.buf !== null && this.pos < this.end) this.reader.unread(this.buf.subarray(this.pos, this.end));
    this.buf = null;
    this.pos = this.end = 0;
  }

  /** Stops reading. Bytes already pulled from the source but not read are given back to it. */
  close(): void {
    if (this.isClosed) return;
    this.isClosed = true;
    if (!this.finished && this.buf !== null && this.pos < this.end) this.reader.unread(this.buf.subarray(this.pos, this.end));
    this.buf = null;
    this.pos = this.end = 0;
  }

  /** See {@link AbstractBody.closed}. */
  get closed(): boolean {
    return this.isClosed;
  }
}
