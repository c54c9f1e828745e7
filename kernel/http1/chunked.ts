/**
 * Incremental decoder for the chunked transfer coding (RFC 9112 §7.1), push style and
 * synchronous like the head parser: feed it bytes, it reports where the body data is.
 *
 * `execute` stops after each span of chunk data so the caller can copy or forward it without
 * the decoder allocating or holding on to anything; data spans are reported as offsets into
 * the caller's buffer.
 */
import { ArgumentError, ParseError, ProtocolError } from '../errors.js';
import { Headers } from '../message/headers.js';
import { DEFAULT_MAX_HEADER_BYTES, DEFAULT_MAX_LINE_BYTES, HeadParser, type HeadLimits } from './head-parser.js';
import * as tables from './tables.js';

const CR = 13;
const LF = 10;
const SP = 32;
const HTAB = 9;
const SEMI = 59;
const HEX: Int8Array = tables.HEX;
const VALUE: Uint8Array = tables.VALUE;

/** Most hex digits accepted in a chunk size (16 digits already reach 2^64). */
const MAX_HEX_DIGITS = 16;

const S_SIZE_START = 0;
const S_SIZE = 1;
const S_SIZE_WS = 2;
const S_EXT = 3;
const S_SIZE_LF = 4;
const S_DATA = 5;
const S_DATA_CR = 6;
const S_DATA_LF = 7;
const S_TRAILER_START = 8;
const S_END_LF = 9;
const S_TRAILERS = 10;
const S_DONE = 11;

/** Options of {@link ChunkedDecoder}. */
export interface ChunkedDecoderOptions extends HeadLimits {
  /** Bytes of the message head already counted against `maxHeaderBytes` (trailers share the budget). */
  headBytes?: number;
}

/**
 * Decodes a chunked body. Call {@link ChunkedDecoder.execute} with the bytes that follow the
 * head; after each call, `buf[dataStart..dataEnd)` is body data when `dataEnd > dataStart`, and
 * {@link ChunkedDecoder.done} tells when the last chunk and the trailer section have been
 * consumed (bytes after that belong to the next message).
 *
 * Errors: a malformed chunk-size line (empty, non-hex, more than 16 hex digits or above 2^53-1,
 * whitespace not followed by `;`, CTLs in extensions), a missing CRLF after chunk data, or
 * malformed trailers throw `ParseError`; a chunk-size line longer than `maxLineBytes` or
 * trailers pushing past `maxHeaderBytes` throw `ProtocolError`.
 */
export class ChunkedDecoder {
  /** Start of the data span found by the last `execute` (index into its buffer). */
  dataStart = 0;
  /** End of that span; equal to `dataStart` when the call found no data. */
  dataEnd = 0;
  /** True once the terminating chunk and trailers are consumed. */
  done = false;
  /** Total body bytes decoded so far. */
  bodyBytes = 0;

  private state = S_SIZE_START;
  private size = 0;
  private digits = 0;
  private lineBytes = 0;
  private remaining = 0;
  private trailerParser: HeadParser | null = null;
  private trailerHeaders: Headers | null = null;
  private readonly maxLineBytes: number;
  private readonly maxHeaderBytes: number;
  private readonly headBytes: number;

  /** `options` carries the codec limits and the head size already used (see {@link ChunkedDecoderOptions}). */
  constructor(options: ChunkedDecoderOptions = {}) {
    this.maxLineBytes = options.maxLineBytes ?? DEFAULT_MAX_LINE_BYTES;
    this.maxHeaderBytes = options.maxHeaderBytes ?? DEFAULT_MAX_HEADER_BYTES;
    this.headBytes = options.headBytes ?? 0;
    if (!Number.isSafeInteger(this.maxLineBytes) || this.maxLineBytes < 1) throw new ArgumentError(`maxLineBytes must be a positive integer, got ${this.maxLineBytes}`);
    if (!Number.isSafeInteger(this.maxHeaderBytes) || this.maxHeaderBytes < 1) throw new ArgumentError(`maxHeaderBytes must be a positive integer, got ${this.maxHeaderBytes}`);
  }

  /** Trailers that ended the body (canonical names); empty until {@link ChunkedDecoder.done}, and when there were none. */
  get trailers(): Headers {
    return (this.trailerHeaders ??= new Headers());
  }

  /**
   * Consumes bytes of `buf[start..end)` and returns how many. Stops early after a span of chunk
   * data (at most `maxData` bytes) or when the body is done; call again with the rest.
   */
  execute(buf: Uint8Array, start: number, end: number, maxData = Number.MAX_SAFE_INTEGER): number {
    this.dataStart = this.dataEnd = start;
    let p = start;
    while (p < end) {
      const b = buf[p]!;
      switch (this.state) {
        case S_SIZE_START: {
          const d = HEX[b]!;
          if (d < 0) {
            throw new ParseError(b === CR || b === SEMI || b === LF ? 'empty chunk size' : `invalid byte 0x${b.toString(16).padStart(2, '0')} in chunk size`);
          }
          this.size = d;
          this.digits = 1;
          this.lineBytes = 1;
          this.state = S_SIZE;
          p++;
          break;
        }
        case S_SIZE: {
          const d = HEX[b]!;
          if (d >= 0) {
            if (++this.digits > MAX_HEX_DIGITS) throw new ParseError(`chunk size has more than ${MAX_HEX_DIGITS} hex digits`);
            this.size = this.size * 16 + d;
            if (this.size > Number.MAX_SAFE_INTEGER) throw new ParseError('chunk size exceeds 2^53-1');
            this.line();
          } else if (b === CR) {
            this.state = S_SIZE_LF;
          } else if (b === SEMI) {
            this.state = S_EXT;
            this.line();
          } else if (b === SP || b === HTAB) {
            this.state = S_SIZE_WS;
            this.line();
          } else {
            throw new ParseError(`invalid byte 0x${b.toString(16).padStart(2, '0')} in chunk size`);
          }
          p++;
          break;
        }
        case S_SIZE_WS:
          // BWS is allowed only before a chunk extension (RFC 9112 §7.1.1).
          if (b === SEMI) this.state = S_EXT;
          else if (b !== SP && b !== HTAB) throw new ParseError('whitespace after chunk size not followed by a chunk extension');
          this.line();
          p++;
          break;
        case S_EXT:
          // Extensions are ignored; reject only bytes no extension may contain (CTLs other than
          // HTAB, bare LF), so a CR can only end the line.
          if (b === CR) this.state = S_SIZE_LF;
          else if (VALUE[b] === 0) throw new ParseError(`invalid byte 0x${b.toString(16).padStart(2, '0')} in chunk extension`);
          else this.line();
          p++;
          break;
        case S_SIZE_LF:
          if (b !== LF) throw new ParseError('bare CR in chunk-size line');
          p++;
          if (this.size === 0) {
            this.state = S_TRAILER_START;
          } else {
            this.remaining = this.size;
            this.state = S_DATA;
          }
          break;
        case S_DATA: {
          let n = end - p;
          if (n > this.remaining) n = this.remaining;
          if (n > maxData) n = maxData;
          this.dataStart = p;
          this.dataEnd = p + n;
          this.remaining -= n;
          this.bodyBytes += n;
          if (this.remaining === 0) this.state = S_DATA_CR;
          return p + n - start;
        }
        case S_DATA_CR:
          if (b !== CR) throw new ParseError('missing CRLF after chunk data');
          this.state = S_DATA_LF;
          p++;
          break;
        case S_DATA_LF:
          if (b !== LF) throw new ParseError('missing CRLF after chunk data (bare CR)');
          this.state = S_SIZE_START;
          p++;
          break;
        case S_TRAILER_START:
          if (b === CR) {
            this.state = S_END_LF;
            p++;
          } else {
            const tp = new HeadParser('trailers', { maxLineBytes: this.maxLineBytes, maxHeaderBytes: this.maxHeaderBytes });
            tp.headBytes = this.headBytes;
            this.trailerParser = tp;
            this.state = S_TRAILERS;
          }
          break;
        case S_END_LF:
          if (b !== LF) throw new ParseError('bare CR after the last chunk');
          p++;
          this.finish();
          return p - start;
        case S_TRAILERS: {
          const tp = this.trailerParser!;
          p += tp.execute(buf, p, end);
          if (tp.complete) {
            this.trailerHeaders = tp.headers;
            this.trailerParser = null;
            this.finish();
            return p - start;
          }
          break;
        }
        default:
          return p - start;
      }
    }
    return p - start;
  }

  private line(): void {
    if (++this.lineBytes > this.maxLineBytes) throw new ProtocolError(`chunk-size line exceeds maxLineBytes (${this.maxLineBytes} bytes)`, { limit: 'maxLineBytes', line: 'chunk-size line' });
  }

  private finish(): void {
    this.state = S_DONE;
    this.done = true;
  }
}
