/**
 * SSEParser: the WHATWG `text/event-stream` interpretation (HTML §9.2.6), incremental, on bytes.
 *
 * - one leading UTF-8 BOM is dropped; lines end with CRLF, LF or CR (also split across chunks);
 * - a line starting with `:` is a comment; `name: value` loses one space after the colon; a
 *   line without a colon is a field with an empty value;
 * - `data` lines are joined with `\n`; `event` sets the type; `id` sets the last event id unless
 *   it holds NUL (it persists across events, and across streams of one parser: reconnects);
 *   `retry` counts only when all ASCII digits;
 * - a blank line dispatches the event, if it has data (the id still takes effect without);
 * - at the end of a stream an event without its blank line is dropped.
 *
 * Lines are split on bytes (CR and LF never occur inside a UTF-8 sequence) and decoded one by
 * one, invalid UTF-8 becoming U+FFFD. `maxLen` bounds what one event holds in memory: the
 * bytes of its field lines with line ends, counting a line still being read.
 */
import { Buffer } from 'node:buffer';
import { ArgumentError } from '../../kernel/index.js';
import { SSEEventTooLargeError } from './errors.js';
import { DEFAULT_SSE_MAX_LEN, SSEEvent, checkMaxLen } from './event.js';

/** Options of {@link SSEParser}. */
export interface SSEParserOptions {
  /** Largest event in bytes. Default 16 MiB. */
  maxLen?: number;
  /** Initial last event id (what a reconnecting client sent as `Last-Event-ID`). */
  lastEventId?: string;
}

const LF = 0x0a;
const CR = 0x0d;
const COLON = 0x3a;
const SPACE = 0x20;
const DIGITS = /^[0-9]+$/;

/** An incremental `text/event-stream` parser. Feed it chunks; it returns the events they complete. */
export class SSEParser {
  /** Largest event in bytes. */
  readonly maxLen: number;
  private committedId: string;
  /** The id of the last valid `id` field, taking effect at the next blank line (the spec's buffer). */
  private idBuffer: string;
  /** The last valid `retry` in ms, or null. Survives {@link SSEParser.reset}. */
  retry: number | null = null;
  // Per stream.
  private bomChecked = false;
  private skipLF = false;
  // A line still arriving: its pieces, joined once when the line ends (joining at every read
  // would copy a long line again per read).
  private partial: Buffer[] = [];
  private partialBytes = 0;
  // Per event.
  private data: string[] = [];
  private hasData = false;
  private eventType = '';
  private fields: Record<string, string> | null = null;
  private eventBytes = 0;

  /** `new SSEParser({ maxLen, lastEventId })`. */
  constructor(options: SSEParserOptions = {}) {
    this.maxLen = options.maxLen === undefined ? DEFAULT_SSE_MAX_LEN : checkMaxLen(options.maxLen, 'SSEParser: maxLen');
    const id = options.lastEventId ?? '';
    if (typeof id !== 'string') throw new ArgumentError('SSEParser: lastEventId must be a string');
    this.committedId = id;
    this.idBuffer = id;
  }

  /** The last event id in effect (`''`: none), set at each blank line. Survives {@link SSEParser.reset}. */
  get lastEventId(): string {
    return this.committedId;
  }

  /** Parses `chunk`, appending each event it completes to `out` (returned). Throws `SSEEventTooLargeError`. */
  push(chunk: Uint8Array, out: SSEEvent[] = []): SSEEvent[] {
    let buf = Buffer.isBuffer(chunk) ? chunk : Buffer.from(chunk.buffer, chunk.byteOffset, chunk.byteLength);
    const len0 = buf.length;
    if (len0 === 0) return out;
    if (!this.bomChecked) {
      // The BOM may arrive split: hold up to two bytes until it is decided.
      const joined = this.partialBytes > 0 ? Buffer.concat([...this.partial, buf]) : buf;
      if (joined.length < 3 && isBomPrefix(joined)) {
        this.partial = [Buffer.from(joined)];
        this.partialBytes = joined.length;
        return out;
      }
      this.bomChecked = true;
      this.partial = [];
      this.partialBytes = 0;
      buf = joined.length >= 3 && joined[0] === 0xef && joined[1] === 0xbb && joined[2] === 0xbf ? joined.subarray(3) : joined;
    }
    const len = buf.length;
    let i = 0;
    if (this.skipLF) {
      this.skipLF = false;
      if (len > 0 && buf[0] === LF) i = 1;
    }
    let nextLF = buf.indexOf(LF, i);
    let nextCR = buf.indexOf(CR, i);
    while (i < len) {
      if (nextLF >= 0 && nextLF < i) nextLF = buf.indexOf(LF, i);
      if (nextCR >= 0 && nextCR < i) nextCR = buf.indexOf(CR, i);
      let end: number;
      if (nextCR < 0) end = nextLF;
      else if (nextLF < 0) end = nextCR;
      else end = nextLF < nextCR ? nextLF : nextCR;
      if (end < 0) break;
      if (this.partialBytes > 0) {
        this.partial.push(buf.subarray(i, end));
        const line = Buffer.concat(this.partial, this.partialBytes + end - i);
        this.partial = [];
        this.partialBytes = 0;
        this.line(line, 0, line.length, out);
      } else {
        this.line(buf, i, end, out);
      }
      i = end + 1;
      if (buf[end] === CR) {
        if (i < len) {
          if (buf[i] === LF) i++;
        } else {
          this.skipLF = true;
        }
      }
    }
    if (i < len) {
      const rest = buf.subarray(i);
      const kept = this.partialBytes + rest.length;
      if (this.eventBytes + kept > this.maxLen) throw new SSEEventTooLargeError(this.maxLen, this.eventBytes + kept, 'parse');
      // Copy: the caller may reuse its chunk.
      this.partial.push(Buffer.from(rest));
      this.partialBytes = kept;
    }
    return out;
  }

  /**
   * The stream ended: an event without its closing blank line is dropped, and the per-stream
   * state (BOM, partial line) resets, so the parser can take the next stream of a reconnect.
   * `lastEventId` and `retry` are kept.
   */
  reset(): void {
    this.bomChecked = false;
    this.skipLF = false;
    this.partial = [];
    this.partialBytes = 0;
    this.clearEvent();
  }

  /** One line `buf[s..e)` (without its line end). */
  private line(buf: Buffer, s: number, e: number, out: SSEEvent[]): void {
    if (s === e) {
      this.dispatch(out);
      return;
    }
    if (buf[s] === COLON) return;
    const size = this.eventBytes + (e - s) + 1;
    if (size > this.maxLen) throw new SSEEventTooLargeError(this.maxLen, size, 'parse');
    this.eventBytes = size;
    const colon = buf.indexOf(COLON, s);
    let name: string;
    let value: string;
    if (colon < 0 || colon >= e) {
      name = buf.toString('utf8', s, e);
      value = '';
    } else {
      name = buf.toString('utf8', s, colon);
      let v = colon + 1;
      if (v < e && buf[v] === SPACE) v++;
      value = v < e ? buf.toString('utf8', v, e) : '';
    }
    switch (name) {
      case 'data':
        this.data.push(value);
        this.hasData = true;
        break;
      case 'event':
        this.eventType = value;
        break;
      case 'id':
        if (!value.includes('\0')) this.idBuffer = value;
        break;
      case 'retry':
        if (DIGITS.test(value)) this.retry = Math.min(Number(value), Number.MAX_SAFE_INTEGER);
        break;
    }
    const f = (this.fields ??= Object.create(null) as Record<string, string>);
    const prev = f[name];
    f[name] = prev === undefined ? value : `${prev}\n${value}`;
  }

  private dispatch(out: SSEEvent[]): void {
    // The id takes effect with the blank line, also for an event without data.
    const id = (this.committedId = this.idBuffer);
    if (this.hasData) {
      const d = this.data;
      out.push(
        new SSEEvent(d.length === 1 ? d[0]! : d.join('\n'), {
          event: this.eventType === '' ? null : this.eventType,
          id: id === '' ? null : id,
          retry: this.retry,
          fields: Object.freeze(this.fields ?? Object.create(null)) as Record<string, string>,
        }),
      );
    }
    this.clearEvent();
  }

  private clearEvent(): void {
    if (this.data.length > 0) this.data = [];
    this.hasData = false;
    this.eventType = '';
    this.fields = null;
    this.eventBytes = 0;
  }
}

/** True when `b` (shorter than 3 bytes) could still be the start of a UTF-8 BOM. */
function isBomPrefix(b: Buffer): boolean {
  return (b.length < 1 || b[0] === 0xef) && (b.length < 2 || b[1] === 0xbb);
}
