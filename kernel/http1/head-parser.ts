/**
 * Incremental, synchronous HTTP/1 head parser (request heads, response heads, and the trailer
 * section of a chunked body).
 *
 * Design, because this is the hot path of every server and client connection:
 * - push style: `execute(chunk)` consumes bytes and says how many; whatever follows a complete
 *   head is left to the caller (body bytes, a pipelined request);
 * - a line that lies entirely inside the chunk is parsed in place, in one pass that validates
 *   bytes through lookup tables and finds the line end at the same time;
 * - a head split across chunks: its bytes are copied once into one growing per-parser buffer,
 *   where line ends (and CTLs) are found four bytes at a time and each line is parsed by the
 *   same code when its LF arrives, its strings deferred to one latin1 decode of the buffer at
 *   the end. Past its first few lines a line is only checked, recording nothing, so an
 *   unfinished head costs its bytes alone; such a head is parsed once more from the buffer as a
 *   whole head when it completes. A line still arriving is checked as far as it goes, as one
 *   parsed in place is, so a split head fails as early and with the same messages;
 * - field values (most of a head's bytes) are validated four bytes at a time through an
 *   Int32Array view of the chunk; well-known field names are found by locating the colon and
 *   comparing whole words against a table (a match also proves the name valid, so only unknown
 *   names take the byte-wise token scan), and methods are matched by bytes: known names and
 *   methods are interned strings, never built;
 * - strings are cut from one latin1 decode of the head region (a "text window") as substrings,
 *   instead of one native call per name and value;
 * - limits are enforced while scanning: a line or head that passes `maxLineBytes` /
 *   `maxHeaderBytes` fails as soon as the byte that breaks the limit arrives.
 *
 * Strictness (each is a `ParseError`): obs-fold, bare CR, bare LF (lines must end in CRLF), NUL
 * and other CTLs (HTAB excepted) in the head, whitespace between a field name and its colon,
 * invalid token bytes in a method or field name, empty field names, malformed request or status
 * lines, versions other than HTTP/1.0 and HTTP/1.1, a request target in a form its method may
 * not use and an invalid Host value (see `target.ts`). Framing conflicts found in the fields
 * (Content-Length with Transfer-Encoding, differing or malformed Content-Length values, a
 * malformed Transfer-Encoding, one whose final coding is not a single chunked, one naming a
 * coding other than chunked, which has `notImplemented` set) and a missing (HTTP/1.1) or
 * repeated Host are `ProtocolError`s. A request whose target is in absolute-form gets the target's authority
 * as its Host value (RFC 9112 §3.2.2). A trailer section drops the fields that may not trail
 * (`FORBIDDEN_TRAILERS` in `tables.ts`).
 */
import { Buffer } from 'node:buffer';
import { ArgumentError, ParseError, ProtocolError } from '../errors.js';
import { eqIgnoreCase, Headers } from '../message/headers.js';
import * as tables from './tables.js';
import { absoluteTargetAuthority, isValidHost, requestTargetError } from './target.js';

// Module-local copies of the tables and constants. Reading an imported binding can compile to a
// getter call under some loaders (tsx, vite-node); locals keep the hot loops free of that.
const CR = 13;
const LF = 10;
const SP = 32;
const HTAB = 9;
const COLON = 58;
const TOKEN: Uint8Array = tables.TOKEN;
const VALUE: Uint8Array = tables.VALUE;
const TARGET: Uint8Array = tables.TARGET;
const KNOWN_BYTES: Uint8Array = tables.KNOWN_BYTES;
const KNOWN_LENGTH: Uint8Array = tables.KNOWN_LENGTH;
const KNOWN_OFFSET: Uint32Array = tables.KNOWN_OFFSET;
const KNOWN_ROLE: Uint8Array = tables.KNOWN_ROLE;
const KNOWN_SLOTS: Uint16Array = tables.KNOWN_SLOTS;
const KNOWN_NAMES: readonly string[] = tables.KNOWN_NAMES;
const KNOWN_WORDS: Int32Array = tables.KNOWN_WORDS;
const KNOWN_CASE: Int32Array = tables.KNOWN_CASE;
const KNOWN_WORD_OFFSET: Uint16Array = tables.KNOWN_WORD_OFFSET;
const KNOWN_LAST_MASK: Int32Array = tables.KNOWN_LAST_MASK;
const KNOWN_NO_TRAILER: Uint8Array = tables.KNOWN_NO_TRAILER;
const REG_NAME: Uint8Array = tables.REG_NAME;
const KNOWN_MASK = 1023;
const KNOWN_MAX_LENGTH: number = tables.KNOWN_MAX_LENGTH;
const H_CONTENT_LENGTH = 1;
const H_TRANSFER_ENCODING = 2;
const H_CONNECTION = 3;
const H_HOST = 4;
const H_UPGRADE = 5;
const H_EXPECT = 6;
if (tables.KNOWN_MASK !== KNOWN_MASK || tables.H_EXPECT !== H_EXPECT) throw new Error('http1 tables out of sync');

/** Same as `tables.knownSlot`, local so it inlines. */
function knownSlot(first: number, last: number, mid: number, len: number): number {
  return (((first | 0x20) << 5) ^ ((last | 0x20) << 2) ^ (mid | 0x20) ^ (len * 37)) & KNOWN_MASK;
}

/** Default of `maxLineBytes`: 64 KiB per request, status, header or chunk-size line. */
export const DEFAULT_MAX_LINE_BYTES = 65536;
/** Default of `maxHeaderBytes`: 1 MiB for a whole head (and, for chunked bodies, head plus trailers). */
export const DEFAULT_MAX_HEADER_BYTES = 1048576;

/** What a {@link HeadParser} parses. */
export type HeadKind = 'request' | 'response' | 'trailers';

/** Size limits of the HTTP/1 codec. */
export interface HeadLimits {
  /**
   * Longest request line, status line, header line or chunk-size line, in bytes, not counting
   * the CRLF. Default {@link DEFAULT_MAX_LINE_BYTES}.
   */
  maxLineBytes?: number;
  /**
   * Largest head in bytes, start line and final empty line included; trailers of a chunked
   * body count against the same budget. Default {@link DEFAULT_MAX_HEADER_BYTES}.
   */
  maxHeaderBytes?: number;
}

/** Connection tokens, as bit flags in {@link HeadParser.connection}. */
export const CONN_CLOSE = 1;
/** `Connection: keep-alive` was present. */
export const CONN_KEEP_ALIVE = 2;
/** `Connection: upgrade` was present. */
export const CONN_UPGRADE = 4;

/** The HTTP/2 client connection preface (RFC 9113 §3.4). */
export const H2_PREFACE: Buffer = Buffer.from('PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n', 'latin1');

/**
 * Compares the start of `buf[start..end)` with the HTTP/2 connection preface: 1 when the whole
 * 24-byte preface is there, 0 when the bytes so far are a prefix of it (wait for more), -1 when
 * they are not. A plain-text server uses this on the first bytes of a connection to hand it to
 * h2c or answer 400.
 */
export function matchH2Preface(buf: Uint8Array, start = 0, end: number = buf.length): -1 | 0 | 1 {
  const n = Math.min(end - start, H2_PREFACE.length);
  for (let i = 0; i < n; i++) if (buf[start + i] !== H2_PREFACE[i]) return -1;
  return n === H2_PREFACE.length ? 1 : 0;
}

/** True when `buf` starts with the whole HTTP/2 connection preface. */
export function isH2Preface(buf: Uint8Array): boolean {
  return matchH2Preface(buf) === 1;
}

interface Latin1Buffer extends Buffer {
  latin1Slice(start: number, end: number): string;
}

// `latin1Slice` is the undocumented fast path behind `toString('latin1', a, b)`; it skips the
// encoding dispatch. Fall back if a runtime lacks it.
const HAS_LATIN1_SLICE = typeof (Buffer.prototype as Partial<Latin1Buffer>).latin1Slice === 'function';

/** Bytes `[start, end)` of `buf` as a latin1 string (one byte, one UTF-16 unit). */
export function latin1(buf: Buffer, start: number, end: number): string {
  return HAS_LATIN1_SLICE ? (buf as Latin1Buffer).latin1Slice(start, end) : buf.toString('latin1', start, end);
}

// Node's Buffers are instances of an internal FastBuffer class; comparing the constructor is a
// cached property load, cheaper than walking the prototype chain for `instanceof Buffer`.
const FAST_BUFFER: unknown = Buffer.allocUnsafe(0).constructor;

/** `u8` as a Buffer over the same memory (no copy). */
export function asBuffer(u8: Uint8Array): Buffer {
  if (u8.constructor === FAST_BUFFER || u8 instanceof Buffer) return u8 as Buffer;
  return Buffer.from(u8.buffer, u8.byteOffset, u8.byteLength);
}

function checkLimit(v: unknown, name: string, dflt: number): number {
  if (v === undefined) return dflt;
  if (typeof v !== 'number' || !Number.isSafeInteger(v) || v < 1) {
    throw new ArgumentError(`${name} must be a positive integer, got ${String(v)}`);
  }
  return v;
}

/** Describes a byte for error messages: printable as itself, others in hex. */
function showByte(b: number): string {
  return b > 0x20 && b < 0x7f ? `'${String.fromCharCode(b)}'` : `0x${b.toString(16).padStart(2, '0')}`;
}

/** Printable excerpt of bytes for error messages (at most 40 bytes, escaped). */
function excerpt(buf: Uint8Array, start: number, end: number): string {
  let s = '';
  const stop = Math.min(end, start + 40);
  for (let i = start; i < stop; i++) {
    const b = buf[i]!;
    s += b >= 0x20 && b < 0x7f && b !== 0x5c ? String.fromCharCode(b) : `\\x${b.toString(16).padStart(2, '0')}`;
  }
  return end > stop ? `${s}...` : s;
}

/**
 * Placeholder for a string of a split head until `flush` builds it. NUL can be in no name,
 * value, target or reason phrase the parser accepts, so it cannot be mistaken for one.
 */
const DEFERRED = '\0';

/**
 * Strings a held head records before it goes dry (`goDry`): the records of a usual head (about
 * 30 strings) within the first `pend`, so a split head of that size is parsed once.
 */
const HELD_RECORDS = 60;

// The Int32 view of the last chunk any parser scanned: the heads of one read (pipelined
// requests, each parsed after a reset, by whichever pooled parser) share it, where each would
// make its own. A view aliases the chunk's memory, so it stays right if the memory is reused.
let lastChunk: Buffer | null = null;
let lastWords: Int32Array | null = null;
let lastI0 = 0;

const S_START = 0;
const S_HEADERS = 1;
const S_DONE = 2;

// Part of an unfinished line of a split head, for the check of its bytes as they arrive
// (`checkLineSoFar`): which bytes the part allows beyond those of a field value.
/** Only CTLs can be wrong from here on (a field value, a reason phrase, the CRLF). */
const L_REST = 0;
/** A field name: token bytes up to the colon. */
const L_NAME = 1;
/** A method: token bytes up to a space. */
const L_METHOD = 2;
/** A request target: target bytes up to a space. */
const L_TARGET = 3;
/** An HTTP version: visible ASCII up to the CR. */
const L_VERSION = 4;

const METHOD_GET = 'GET';
const METHOD_PUT = 'PUT';
const METHOD_POST = 'POST';
const METHOD_HEAD = 'HEAD';
const METHOD_PATCH = 'PATCH';
const METHOD_TRACE = 'TRACE';
const METHOD_DELETE = 'DELETE';
const METHOD_OPTIONS = 'OPTIONS';
const METHOD_CONNECT = 'CONNECT';

/**
 * Parses one HTTP/1 head from chunks pushed into {@link HeadParser.execute}. Reuse one parser
 * per connection: after a complete head, read the result fields, then {@link HeadParser.reset}.
 *
 * Limits throw `ProtocolError`: the bytes are valid HTTP, they only break a configured rule (and
 * a server answers them with 431 or 414 rather than 400). The message names the limit and its
 * value.
 */
export class HeadParser {
  /** What this parser parses. */
  readonly kind: HeadKind;
  /** See {@link HeadLimits.maxLineBytes}. */
  readonly maxLineBytes: number;
  /** See {@link HeadLimits.maxHeaderBytes}. */
  readonly maxHeaderBytes: number;

  /** True once the head (or trailer section) is complete. */
  complete = false;
  /** Bytes of this head consumed so far in complete lines (start line through final CRLF once complete). */
  headBytes = 0;

  /** Request method (requests). */
  method = '';
  /** Request target as sent (requests). */
  target = '';
  /** HTTP major version: always 1 after a successful parse. */
  versionMajor = 1;
  /** HTTP minor version: 0 or 1. */
  versionMinor = 1;
  /** Status code (responses). */
  status = 0;
  /** Reason phrase as sent, possibly empty (responses). */
  reason = '';
  /**
   * Fields in arrival order, names canonical, values trimmed of OWS. A new object per head.
   * Complete once the head is (or once an error is thrown): while a head split across chunks is
   * still arriving, strings of its lines are filled in only at the end.
   */
  headers: Headers;

  /** Content-Length value, or -1 when the header is absent. */
  contentLength = -1;
  /** A Transfer-Encoding header was present. */
  hasTransferEncoding = false;
  /** The final transfer coding is `chunked` (and chunked appears exactly once, last). */
  chunked = false;
  /** `chunked` appeared before another coding, or twice. */
  chunkedNotLast = false;
  /**
   * The first transfer coding other than `chunked` (as sent), or `''`. Such a coding is never
   * decoded: the parser refuses the head (a request with it gets 501, a response fails).
   */
  otherCoding = '';
  /** `CONN_*` flags from the Connection header(s). */
  connection = 0;
  /** An Upgrade header was present. */
  upgrade = false;
  /** `Expect: 100-continue` was present. */
  expectContinue = false;
  /** Number of Host headers seen. */
  hostCount = 0;
  /** `headers` index of the (last) Host field. */
  private hostIndex = -1;
  /** The (last) Host value has the common shape {@link isPlainHost} vouches for. */
  private plainHost = false;
  /**
   * Set when the request line was `PRI * HTTP/2.0` (the HTTP/2 connection preface); the parse
   * then fails with a `ParseError` and the server can answer 400 or hand over to h2c.
   */
  h2Preface = false;

  private state: number;
  private error: Error | null = null;
  // Split heads. A head that does not end in the chunk it begins in is held in `acc`, one
  // growing per-parser buffer, from its first byte until it completes (`holdAsBytes`), and each
  // line is parsed there, by the same code, when its LF arrives. Strings of those lines are not
  // built per line: `text` records their offsets in `pend` and returns the DEFERRED
  // placeholder, and `flush` cuts them from one latin1 decode of `acc` at the end; past its
  // first few lines a head records nothing (`goDry`). `acc[lineStart..accLen)` is the partial
  // line; `accLen > 0` means the head is in split mode.
  private acc: Buffer | null = null;
  private accWords: Int32Array | null = null;
  /** The held head's lines are checked but no longer recorded: its bytes are all it holds (`goDry`). */
  private dry = false;
  /** `headBytes` where the held head begins in `acc`: 0, or for a trailer section the bytes of the head before it. */
  private heldBase = 0;
  private accLen = 0;
  private lineStart = 0;
  /**
   * Deferred strings: [start, end) in `acc`, in the order `text` was asked for them. Room for
   * the strings of the lines before `goDry` (a line adds at most two).
   */
  private readonly pend: Int32Array = new Int32Array((HELD_RECORDS + 2) * 2);
  private pendN = 0;
  /** The unfinished line in `acc` is checked up to here (see `checkLineSoFar`)... */
  private lineAt = 0;
  /** ...and that byte is in this part of it (`L_*`)... */
  private linePart = L_REST;
  /** ...which begins here. */
  private partAt = 0;
  // Decoded text window: one latin1 decode of `sBuf[sBase..sEnd)` serves many names and values
  // as cheap substrings, instead of one native call per string (which dominated profiles).
  private sBuf: Buffer | null = null;
  private sStr = '';
  private sBase = 0;
  private sEnd = 0;
  /** End of the bytes the current `execute` may look at (the text window never passes it). */
  private cEnd = 0;
  // Int32 view over the current chunk for word-at-a-time value scanning; `wI0` is the index in
  // `wBuf` where word 0 starts (the first 4-byte-aligned address).
  private wBuf: Buffer | null = null;
  private words: Int32Array | null = null;
  private wI0 = 0;

  /** `kind` chooses the start line; `'trailers'` parses only field lines and the final CRLF. */
  constructor(kind: HeadKind, limits: HeadLimits = {}) {
    if (kind !== 'request' && kind !== 'response' && kind !== 'trailers') {
      throw new ArgumentError(`HeadParser kind must be 'request', 'response' or 'trailers', got ${String(kind)}`);
    }
    this.kind = kind;
    this.maxLineBytes = checkLimit(limits.maxLineBytes, 'maxLineBytes', DEFAULT_MAX_LINE_BYTES);
    this.maxHeaderBytes = checkLimit(limits.maxHeaderBytes, 'maxHeaderBytes', DEFAULT_MAX_HEADER_BYTES);
    this.state = kind === 'trailers' ? S_HEADERS : S_START;
    this.headers = new Headers();
  }

  /** Prepares for the next head on the same connection (fresh `headers`, cleared results and error). */
  reset(): void {
    this.clearResults();
    this.accLen = 0;
    this.lineStart = 0;
    this.dry = false;
    this.pendN = 0;
    this.error = null;
    this.sBuf = null;
    this.sStr = '';
    this.wBuf = null;
    this.words = null;
    // Do not keep a large head buffer around on an idle keep-alive connection.
    if (this.acc !== null && this.acc.length > 8192) {
      this.acc = null;
      this.accWords = null;
    }
  }

  /** Clears what the parse of a head found, keeping the buffers. */
  private clearResults(): void {
    this.complete = false;
    this.headBytes = 0;
    this.method = '';
    this.target = '';
    this.versionMajor = 1;
    this.versionMinor = 1;
    this.status = 0;
    this.reason = '';
    this.headers = new Headers();
    this.contentLength = -1;
    this.hasTransferEncoding = false;
    this.chunked = false;
    this.chunkedNotLast = false;
    this.otherCoding = '';
    this.connection = 0;
    this.upgrade = false;
    this.expectContinue = false;
    this.hostCount = 0;
    this.hostIndex = -1;
    this.plainHost = false;
    this.h2Preface = false;
    this.state = this.kind === 'trailers' ? S_HEADERS : S_START;
  }

  /** Bytes received for this head so far, including a partial line held by the parser. */
  get bytesSeen(): number {
    return this.headBytes + this.accLen - this.lineStart;
  }

  /**
   * True when the connection may stay open after this message: HTTP/1.1 unless
   * `Connection: close`, HTTP/1.0 only with `Connection: keep-alive` and no Transfer-Encoding.
   */
  get keepAlive(): boolean {
    if ((this.connection & CONN_CLOSE) !== 0) return false;
    // RFC 9112 §6.1: after an HTTP/1.0 message with Transfer-Encoding the connection closes.
    return this.versionMinor === 1 || ((this.connection & CONN_KEEP_ALIVE) !== 0 && !this.hasTransferEncoding);
  }

  /**
   * Consumes bytes of `chunk[start..end)` and returns how many. When {@link HeadParser.complete}
   * becomes true the rest of the chunk was not consumed: it is the body or the next message.
   * Otherwise every byte was consumed and the parser waits for more. Throws `ParseError` or
   * `ProtocolError`; after an error the parser keeps throwing it until {@link HeadParser.reset}.
   */
  execute(chunk: Uint8Array, start = 0, end: number = chunk.length): number {
    if (this.error !== null) throw this.error;
    if (this.state === S_DONE) return 0;
    // The caller may reuse a chunk's memory: never keep a text window across calls.
    this.sBuf = null;
    this.cEnd = end;
    try {
      return this.run(asBuffer(chunk), start, end);
    } catch (err) {
      this.error = err as Error;
      // Fields parsed before the error stay visible, as for a head in one chunk.
      if (this.dry) this.recordHeld();
      else if (this.accLen > 0) this.flush();
      throw err;
    }
  }

  private run(buf: Buffer, start: number, end: number): number {
    let pos = start;
    if (this.accLen > 0) {
      pos = this.continueSplit(buf, pos, end);
      if (pos < 0 || this.state === S_DONE) return (pos < 0 ? end : pos) - start;
    }
    // Not in split mode: the head (or trailer section) begins at `start`, after `base` bytes.
    const base = this.headBytes;
    const maxLine = this.maxLineBytes + 2;
    while (pos < end) {
      const headRoom = this.maxHeaderBytes - this.headBytes;
      let lim = pos + maxLine;
      if (headRoom < maxLine) lim = pos + headRoom;
      if (end < lim) lim = end;
      if (lim <= pos) throw this.limitError(true);
      const next = this.state === S_HEADERS ? this.headerLine(buf, pos, lim) : this.startLine(buf, pos, lim);
      if (next < 0) {
        if (lim < end) throw this.limitError(headRoom < maxLine);
        this.holdAsBytes(buf, start, end, base);
        return end - start;
      }
      this.headBytes += next - pos;
      pos = next;
      if (this.state === S_DONE) {
        // Drop the window so an idle parser does not pin the chunk or its text.
        this.sBuf = null;
        this.sStr = '';
        this.wBuf = null;
        this.words = null;
        break;
      }
    }
    if (this.state !== S_DONE && pos > start) this.holdAsBytes(buf, start, end, base);
    return pos - start;
  }

  /**
   * The head that began at `buf[start]` did not end in this chunk. The strings cut from it so
   * far (each a string object, many of them slices pinning decoded text) would be held until it
   * does, several times the head's size; a peer can keep many heads unfinished. So the head is
   * parsed again as a split head instead, held as its bytes in `acc`, and it stays so until it
   * completes, whatever the size of the later chunks. Its lines are checked as they arrive
   * (every error comes where it comes for a whole head); past its first few lines nothing is
   * recorded per line, not even offsets (`goDry`): the held bytes are all it costs, and
   * `parseHeld` parses them once more, whole, when the last one arrives. A head that arrives
   * whole never comes here.
   */
  private holdAsBytes(buf: Buffer, start: number, end: number, base: number): void {
    const acc = this.acc;
    const accWords = this.accWords;
    this.reset();
    this.headBytes = this.heldBase = base;
    if (this.acc === null && acc !== null && acc.length >= end - start) {
      this.acc = acc;
      this.accWords = accWords;
    }
    if (this.acc === null) this.reserve(end - start);
    this.newLine(0);
    // The same bytes parse the same way again: the head stays unfinished (-1).
    this.continueSplit(buf, start, end);
  }

  /**
   * The held head `acc[0..end)` is complete: parses it again in place, as a head that arrived
   * whole, so its strings come from one decode of its bytes. Its lines were checked as they
   * arrived; the end-of-head checks run here. Returns `end`.
   */
  private parseHeld(end: number): number {
    this.clearResults();
    this.headBytes = this.heldBase;
    this.dry = false;
    this.parseLines(end);
    return end;
  }

  /**
   * A held head has more lines than its first few: drops what its lines recorded (the fields
   * and the offsets of their strings, about 32 bytes a line, twice the bytes of a short line),
   * and records nothing from here on; `parseHeld` parses the whole head again when it completes.
   * The framing facts read so far stay, for the checks of the lines still to come.
   */
  private goDry(): void {
    this.headers = new Headers();
    this.pendN = 0;
    this.dry = true;
  }

  /**
   * After an error in a held head: parses its complete lines again in place so the fields
   * before the error are in `headers`, as they are for a head in one chunk (a complete line
   * that failed fails again, after recording what a whole head records).
   */
  private recordHeld(): void {
    const acc = this.acc!;
    const end = this.accLen > this.lineStart && acc[this.accLen - 1] === LF ? this.accLen : this.lineStart;
    const error = this.error;
    this.clearResults();
    this.headBytes = this.heldBase;
    this.dry = false;
    try {
      this.parseLines(end);
    } catch {
      // The error already thrown is the one that counts.
    }
    this.error = error;
  }

  /** Parses the lines of `acc[0..end)` in place; they were checked as they arrived. */
  private parseLines(end: number): void {
    const acc = this.acc!;
    this.accLen = 0;
    this.lineStart = 0;
    this.pendN = 0;
    this.sBuf = null;
    this.cEnd = end;
    let pos = 0;
    while (pos < end && this.state !== S_DONE) {
      const next = this.state === S_HEADERS ? this.headerLine(acc, pos, end) : this.startLine(acc, pos, end);
      if (next < 0) break;
      this.headBytes += next - pos;
      pos = next;
    }
    // Drop the window so an idle parser does not pin the head's text.
    this.sBuf = null;
    this.sStr = '';
    this.wBuf = null;
    this.words = null;
  }

  /** A line starts at `acc[at]`: its check starts at its first part. */
  private newLine(at: number): void {
    this.lineAt = at;
    this.partAt = at;
    this.linePart = this.state === S_HEADERS ? L_NAME : this.kind === 'request' ? L_METHOD : L_REST;
  }

  /**
   * Checks the unfinished line `acc[ls..lim)`, from where the last check stopped, against what
   * its part allows (token bytes in a method or field name, target bytes, version bytes): the
   * arrival scan of `continueSplit` stops only at CTLs, and without this a bad byte on a line
   * still arriving would be found only at its end, or never when a limit is reached first. At a
   * byte its part does not allow, the line parser runs up to that byte: it throws what a whole
   * head gets, or (for the space or colon that ends the part) returns, and the next part starts.
   * Each byte is looked at once; the parser runs at most three times per line.
   */
  private checkLineSoFar(acc: Buffer, ls: number, lim: number): void {
    let part = this.linePart;
    let i = this.lineAt;
    while (i < lim && part !== L_REST) {
      const c = acc[i]!;
      if (part === L_TARGET ? TARGET[c] === 0 : part === L_VERSION ? c <= 0x20 || c >= 0x7f : TOKEN[c] === 0) {
        // The byte that ends a part that is not empty (the usual stop) needs no parser run.
        const stop = part === L_NAME ? c === COLON : part === L_VERSION ? c === CR : c === SP;
        if (!stop || i === this.partAt) this.probeLine(acc, ls, i + 1);
        part = c !== SP ? L_REST : part === L_METHOD ? L_TARGET : part === L_TARGET ? L_VERSION : L_REST;
        this.partAt = i + 1;
      }
      i++;
    }
    this.linePart = part;
    this.lineAt = i;
  }

  private checkPartial(len: number, last: number): void {
    const max = this.maxLineBytes;
    // A partial line of max+1 bytes ending in CR may still be exactly max bytes + CRLF.
    if (len > max + 1 || (len === max + 1 && last !== CR)) throw this.limitError(false);
    // The line is unfinished, so the head needs at least one more byte.
    if (this.headBytes + len >= this.maxHeaderBytes) throw this.limitError(true);
  }

  /** Makes `acc` hold at least `need` bytes, keeping its content. */
  private reserve(need: number): Buffer {
    const old = this.acc;
    if (old !== null && old.length >= need) return old;
    // Doubling while small; then steps of 4 KiB or an eighth, so an unfinished head is held in
    // little more than its size (doubling would hold up to twice it) at a bounded copying cost.
    let size = old === null ? 512 : old.length;
    while (size < need && size < 4096) size *= 2;
    if (size < need) size = Math.ceil(Math.max(need, size + Math.max(4096, size >> 3)) / 4096) * 4096;
    // `acc` never holds more than one head (the limits stop it first).
    const cap = this.maxHeaderBytes + 4;
    if (size > cap) size = Math.max(cap, need);
    // Its own ArrayBuffer, so the Int32 view for word scans starts aligned at byte 0.
    const nb = Buffer.allocUnsafeSlow(size);
    if (old !== null && this.accLen > 0) old.copy(nb, 0, 0, this.accLen);
    if (this.wBuf === old) this.wBuf = null;
    this.acc = nb;
    this.accWords = new Int32Array(nb.buffer, nb.byteOffset, size >> 2);
    return nb;
  }

  /**
   * Continues a split head. Only LF is searched for; a line is parsed (in `acc`, strings
   * deferred to `flush`) when its LF arrives, but bare CRs and CTLs are caught on arrival so a
   * split head fails as early as a whole one, and the limits are checked against every byte.
   * Returns the position after the head when it completes, or -1 when the whole chunk was
   * consumed.
   */
  private continueSplit(buf: Buffer, pos: number, end: number): number {
    if (pos >= end) return -1;
    const w0 = this.accLen;
    if (w0 > this.lineStart && this.acc![w0 - 1] === CR && buf[pos] !== LF) {
      // The byte after the CR, so the line is judged with it, as a whole head would be.
      this.reserve(w0 + 1)[w0] = buf[pos]!;
      this.accLen = w0 + 1;
      this.probeLine(this.acc!, this.lineStart, this.accLen);
      throw new ParseError('bare CR (not followed by LF) in the head');
    }
    // Copy what the head may still hold once, then find the line ends in `acc`, four bytes at a
    // time through its aligned Int32 view.
    const maxLine = this.maxLineBytes + 2;
    // Where the head would pass maxHeaderBytes, in `acc` coordinates (fixed for this head).
    const headEnd = this.lineStart + this.maxHeaderBytes - this.headBytes;
    let n = end - pos;
    if (w0 + n > headEnd) n = headEnd - w0;
    const dEnd = w0 + n;
    let acc = this.acc!;
    if (acc.length < dEnd) acc = this.reserve(dEnd);
    if (n >= 16 && pos === 0 && n === buf.length) {
      // A whole chunk: one native copy, no subarray; a JS loop is faster only below this size.
      acc.set(buf, w0);
    } else if (n <= 32) {
      for (let i = pos, o = w0; o < dEnd; i++, o++) acc[o] = buf[i]!;
    } else {
      acc.set(buf.subarray(pos, pos + n), w0);
    }
    const delta = pos - w0; // chunk index = acc index + delta
    let q = w0;
    for (;;) {
      const ls = this.lineStart;
      let lim = ls + maxLine;
      if (lim > dEnd) lim = dEnd;
      let c: number;
      for (;;) {
        if (lim - q < 8) {
          while (q < lim && VALUE[acc[q]!] !== 0) q++;
        } else {
          q = this.findCtl(acc, q, lim);
        }
        if (q >= lim) break;
        c = acc[q]!;
        if (c === LF) break;
        if (c === CR) {
          if (q + delta + 1 < end && buf[q + delta + 1] !== LF) {
            // Beyond a limit the in-place parse would stop at the CR: the limit error comes first.
            if (q + 1 >= lim) {
              q = lim;
              break;
            }
            // The line parser says what a whole head gets (an earlier byte may be the culprit).
            this.probeLine(acc, ls, q + 2);
            throw new ParseError('bare CR (not followed by LF) in the head');
          }
        } else if (c !== HTAB) {
          this.probeLine(acc, ls, q + 1);
          throw new ParseError(`invalid byte ${showByte(c)} in the head`);
        }
        q++;
      }
      if (q >= lim) {
        // The line is checked as far as it goes, as a line parsed in place is (so it fails as
        // early and with the same message, whatever the split), before any limit error.
        if (this.linePart !== L_REST) this.checkLineSoFar(acc, ls, lim);
        // No line end: more bytes than a limit allows fail now, else wait for more.
        const lineEnd = ls + maxLine;
        if ((lineEnd < headEnd ? lineEnd : headEnd) < end - delta) throw this.limitError(headEnd < lineEnd);
        this.accLen = dEnd;
        if (dEnd > ls) this.checkPartial(dEnd - ls, buf[end - 1]!);
        return -1;
      }
      const le = q + 1;
      this.accLen = le;
      // Before what may be the final empty line (any other 2-byte line is an error), build the
      // pending strings: the end-of-head checks read the fields. This also ends split mode. A
      // held head is parsed once more, now whole, with its strings.
      if (le - ls === 2 && this.state === S_HEADERS) {
        if (this.dry) return this.parseHeld(le) + delta;
        this.flush();
      }
      if (this.pendN >= HELD_RECORDS && !this.dry) this.goDry();
      const next = this.state === S_HEADERS ? this.headerLine(acc, ls, le) : this.startLine(acc, ls, le);
      if (next !== le) throw new ParseError('malformed line in the head');
      this.headBytes += le - ls;
      if (this.state === S_DONE) return le + delta;
      this.lineStart = le;
      this.newLine(le);
      q = le;
    }
  }

  /**
   * Runs the line parser over the unfinished line `acc[ls..lim)`: throws what it finds wrong so
   * far, else returns (the parser stops at `lim` without a line end; nothing is recorded).
   */
  private probeLine(acc: Buffer, ls: number, lim: number): void {
    if (this.state === S_HEADERS) this.headerLine(acc, ls, lim);
    else this.startLine(acc, ls, lim);
  }

  /**
   * Index of the first byte of `acc[q..lim)` that is not a field-value byte (a CTL, including
   * HTAB, CR and LF, or DEL), or `lim`. Whole words are tested as in `skipValueWords`.
   */
  private findCtl(acc: Buffer, q: number, lim: number): number {
    while ((q & 3) !== 0) {
      if (q >= lim || VALUE[acc[q]!] === 0) return q;
      q++;
    }
    const words = this.accWords!;
    let w = q >> 2;
    const wEnd = lim >> 2;
    while (w < wEnd) {
      const x = words[w]!;
      const y = x ^ 0x7f7f7f7f;
      if ((((x - 0x20202020) & ~x) | ((y - 0x01010101) & ~y)) & 0x80808080) break;
      w++;
    }
    q = w << 2;
    while (q < lim && VALUE[acc[q]!] !== 0) q++;
    return q;
  }

  /**
   * Builds the strings of the lines parsed in `acc` from one latin1 decode of it, puts them in
   * place of their DEFERRED placeholders (in the order they were recorded: start line, then each
   * field's name if it was cut, then its value), and ends split mode.
   */
  private flush(): void {
    const n = this.pendN * 2;
    if (n > 0) {
      const s = latin1(this.acc!, 0, this.accLen);
      const pend = this.pend;
      let k = 0;
      if (this.target === DEFERRED) {
        this.target = s.slice(pend[0], pend[1]);
        k = 2;
      } else if (this.reason === DEFERRED) {
        this.reason = s.slice(pend[0], pend[1]);
        k = 2;
      }
      const names = this.headers._names;
      const values = this.headers._values;
      for (let i = 0; k < n && i < names.length; i++) {
        if (names[i] === DEFERRED) {
          names[i] = s.slice(pend[k], pend[k + 1]);
          k += 2;
        }
        if (values[i] === DEFERRED) {
          values[i] = s.slice(pend[k], pend[k + 1]);
          k += 2;
        }
      }
      this.pendN = 0;
    }
    this.accLen = 0;
    this.lineStart = 0;
  }

  /** `buf[a..b)` as a string, a substring of the decoded window when possible. */
  private text(buf: Buffer, a: number, b: number): string {
    if (buf !== this.sBuf || a < this.sBase || b > this.sEnd) {
      if (buf === this.acc && this.accLen > 0) {
        // A line of a split head: record the range, `flush` builds the string.
        const k = this.pendN * 2;
        const pend = this.pend;
        pend[k] = a;
        pend[k + 1] = b;
        this.pendN++;
        return DEFERRED;
      }
      // Decode from `a` to a little past the likely end of the head: at least 1 KiB, growing
      // with the head, never past the bytes of this call.
      let e = a + (this.headBytes > 512 ? this.headBytes * 2 : 1024);
      if (e > this.cEnd) e = this.cEnd;
      if (e < b) e = b;
      this.sStr = latin1(buf, a, e);
      this.sBuf = buf;
      this.sBase = a;
      this.sEnd = e;
    }
    return this.sStr.slice(a - this.sBase, b - this.sBase);
  }

  private limitError(head: boolean): ProtocolError {
    if (head) {
      const what = this.kind === 'trailers' ? 'head plus trailers exceed' : 'head exceeds';
      return new ProtocolError(`${what} maxHeaderBytes (${this.maxHeaderBytes} bytes)`, { limit: 'maxHeaderBytes' });
    }
    const line = this.state === S_HEADERS ? (this.kind === 'trailers' ? 'trailer line' : 'header line') : this.kind === 'request' ? 'request line' : 'status line';
    return new ProtocolError(`${line} exceeds maxLineBytes (${this.maxLineBytes} bytes)`, { limit: 'maxLineBytes', line });
  }

  private startLine(buf: Buffer, p: number, lim: number): number {
    return this.kind === 'request' ? this.requestLine(buf, p, lim) : this.statusLine(buf, p, lim);
  }

  /** `method SP target SP HTTP/1.x CRLF`; empty lines before it are skipped (RFC 9112 §2.2). */
  private requestLine(buf: Buffer, p: number, lim: number): number {
    const start = p;
    let b = buf[p]!;
    if (b === CR) {
      if (p + 1 >= lim) return -1;
      if (buf[p + 1] !== LF) throw new ParseError('bare CR (not followed by LF) before the request line');
      return p + 2;
    }
    while (TOKEN[b] !== 0) {
      if (++p >= lim) return -1;
      b = buf[p]!;
    }
    if (p === start) throw new ParseError(`invalid request line: starts with ${showByte(b)}, expected a method`);
    if (b !== SP) {
      if (b === CR || b === LF) throw new ParseError(`invalid request line "${excerpt(buf, start, p)}": missing request target and version`);
      throw new ParseError(`invalid byte ${showByte(b)} in request method`);
    }
    const method = methodString(buf, start, p);
    const tStart = ++p;
    if (p >= lim) return -1;
    b = buf[p]!;
    while (TARGET[b] !== 0) {
      if (++p >= lim) return -1;
      b = buf[p]!;
    }
    if (p === tStart) throw new ParseError(`invalid request line: ${showByte(b)} where the request target should start`);
    if (b !== SP) {
      if (b === CR || b === LF) throw new ParseError('invalid request line: missing HTTP version (HTTP/0.9 is not supported)');
      throw new ParseError(`invalid byte ${showByte(b)} in request target`);
    }
    const tEnd = p;
    const vStart = ++p;
    if (p >= lim) return -1;
    b = buf[p]!;
    while (b > 0x20 && b < 0x7f) {
      if (++p >= lim) return -1;
      b = buf[p]!;
    }
    if (b !== CR) {
      if (b === LF) throw new ParseError('bare LF: request line must end with CRLF');
      throw new ParseError(`invalid byte ${showByte(b)} after the HTTP version in the request line`);
    }
    if (p + 1 >= lim) return -1;
    if (buf[p + 1] !== LF) throw new ParseError('bare CR (not followed by LF) in the request line');
    if (p - vStart !== 8 || buf[vStart] !== 0x48 || buf[vStart + 1] !== 0x54 || buf[vStart + 2] !== 0x54 || buf[vStart + 3] !== 0x50 || buf[vStart + 4] !== 0x2f || buf[vStart + 6] !== 0x2e) {
      throw new ParseError(`invalid HTTP version "${excerpt(buf, vStart, p)}" in the request line`);
    }
    const major = buf[vStart + 5]!;
    const minor = buf[vStart + 7]!;
    if (major !== 0x31 || (minor !== 0x30 && minor !== 0x31)) {
      if (major === 0x32 && minor === 0x30 && method === 'PRI' && tEnd - tStart === 1 && buf[tStart] === 0x2a) {
        this.h2Preface = true;
        throw new ParseError('HTTP/2 connection preface (PRI * HTTP/2.0) received on an HTTP/1 connection');
      }
      throw new ParseError(`unsupported HTTP version "${excerpt(buf, vStart, p)}": only HTTP/1.0 and HTTP/1.1 are accepted`);
    }
    this.method = method;
    this.target = this.text(buf, tStart, tEnd);
    this.versionMinor = minor - 0x30;
    this.state = S_HEADERS;
    return p + 2;
  }

  /** `HTTP/1.x SP 3DIGIT [SP reason] CRLF`. */
  private statusLine(buf: Buffer, p: number, lim: number): number {
    const start = p;
    let b = buf[p]!;
    while (VALUE[b] !== 0) {
      if (++p >= lim) return -1;
      b = buf[p]!;
    }
    if (b !== CR) {
      if (b === LF) throw new ParseError('bare LF: status line must end with CRLF');
      throw new ParseError(`invalid byte ${showByte(b)} in the status line`);
    }
    if (p + 1 >= lim) return -1;
    if (buf[p + 1] !== LF) throw new ParseError('bare CR (not followed by LF) in the status line');
    const len = p - start;
    if (
      len < 12 ||
      buf[start] !== 0x48 ||
      buf[start + 1] !== 0x54 ||
      buf[start + 2] !== 0x54 ||
      buf[start + 3] !== 0x50 ||
      buf[start + 4] !== 0x2f ||
      buf[start + 6] !== 0x2e ||
      buf[start + 8] !== SP
    ) {
      throw new ParseError(`invalid status line "${excerpt(buf, start, p)}"`);
    }
    const major = buf[start + 5]!;
    const minor = buf[start + 7]!;
    if (major !== 0x31 || (minor !== 0x30 && minor !== 0x31)) {
      throw new ParseError(`unsupported HTTP version "${excerpt(buf, start, start + 8)}" in the status line`);
    }
    const d0 = buf[start + 9]! - 0x30;
    const d1 = buf[start + 10]! - 0x30;
    const d2 = buf[start + 11]! - 0x30;
    if (d0 < 1 || d0 > 9 || d1 < 0 || d1 > 9 || d2 < 0 || d2 > 9) {
      throw new ParseError(`invalid status code in status line "${excerpt(buf, start, p)}"`);
    }
    if (len > 12 && buf[start + 12] !== SP) throw new ParseError(`invalid status line "${excerpt(buf, start, p)}": status code must be 3 digits`);
    this.versionMinor = minor - 0x30;
    this.status = d0 * 100 + d1 * 10 + d2;
    this.reason = len > 13 ? this.text(buf, start + 13, p) : '';
    this.state = S_HEADERS;
    return p + 2;
  }

  /** One field line, or the empty line that ends the head. */
  private headerLine(buf: Buffer, p: number, lim: number): number {
    let b = buf[p]!;
    if (b === CR) {
      if (p + 1 >= lim) return -1;
      if (buf[p + 1] !== LF) throw new ParseError('bare CR (not followed by LF) at the end of the head');
      this.finish();
      return p + 2;
    }
    const nameStart = p;
    // Known names: find the colon, then match the bytes before it against the table four at a
    // time. A match proves the name valid, so the byte-wise token scan is only for the rest.
    let id = -1;
    let c = p + 1;
    const cLim = lim - p > KNOWN_MAX_LENGTH ? p + KNOWN_MAX_LENGTH + 1 : lim;
    while (c < cLim && buf[c] !== COLON) c++;
    if (c < cLim) id = this.knownName(buf, p, c - p);
    if (id >= 0) {
      p = c;
    } else {
      while (TOKEN[b] !== 0) {
        if (++p >= lim) return -1;
        b = buf[p]!;
      }
      if (b !== COLON || p === nameStart) throw this.nameError(buf, nameStart, p, b);
    }
    const nameEnd = p;
    if (++p >= lim) return -1;
    b = buf[p]!;
    while (b === SP || b === HTAB) {
      if (++p >= lim) return -1;
      b = buf[p]!;
    }
    const valStart = p;
    if (lim - p >= 24) {
      p = this.skipValueWords(buf, p, lim);
      // All valid up to `lim`: the byte there is not ours to judge.
      if (p >= lim) return -1;
      b = buf[p]!;
    }
    while (VALUE[b] !== 0) {
      if (++p >= lim) return -1;
      b = buf[p]!;
    }
    if (b !== CR) {
      if (b === LF) throw new ParseError('bare LF: header lines must end with CRLF');
      throw new ParseError(`invalid byte ${showByte(b)} in the value of header ${latin1(buf, nameStart, nameEnd)}`);
    }
    if (p + 1 >= lim) return -1;
    if (buf[p + 1] !== LF) throw new ParseError(`bare CR (not followed by LF) in header ${latin1(buf, nameStart, nameEnd)}`);
    let valEnd = p;
    // Trailing OWS is rare; trim it here instead of tracking it in the scan loop above.
    while (valEnd > valStart && ((b = buf[valEnd - 1]!) === SP || b === HTAB)) valEnd--;

    // Before any string is built or deferred: a dropped trailer leaves no trace.
    if (id >= 0 && KNOWN_NO_TRAILER[id] !== 0 && this.kind === 'trailers') return p + 2;
    if (buf === this.acc && this.dry) {
      // A line of a held head: checked, not recorded (`parseHeld` records it). The framing
      // fields are read now, so their errors come where a whole head's do; Host and Upgrade
      // only count at the end.
      const role = id >= 0 && this.kind !== 'trailers' ? KNOWN_ROLE[id]! : 0;
      if (role !== 0 && role !== H_HOST && role !== H_UPGRADE) this.field(role, latin1(buf, valStart, valEnd));
      return p + 2;
    }
    const name = id >= 0 ? KNOWN_NAMES[id]! : this.fieldName(buf, nameStart, nameEnd);
    const value = valEnd > valStart ? this.text(buf, valStart, valEnd) : '';
    this.headers.push(name, value);
    if (id >= 0 && KNOWN_ROLE[id] !== 0 && this.kind !== 'trailers') {
      const role = KNOWN_ROLE[id]!;
      // The bytes are at hand here (the string may still be deferred): most Host values pass
      // this scan, and only the others take the full grammar when the head is complete.
      if (role === H_HOST) this.plainHost = isPlainHost(buf, valStart, valEnd);
      // In a split head the value is still DEFERRED, and the framing fields that read it need
      // it now (so errors come in the same order as for a whole head); Host and Upgrade only count.
      this.field(role, buf === this.acc && valEnd > valStart && role !== H_HOST && role !== H_UPGRADE ? latin1(buf, valStart, valEnd) : value);
    }
    return p + 2;
  }

  /** Index of the known name equal (up to letter case) to `buf[p..p+len)`, or -1. */
  private knownName(buf: Buffer, p: number, len: number): number {
    let slot = knownSlot(buf[p]!, buf[p + len - 1]!, buf[p + (len >> 1)]!, len);
    let e = KNOWN_SLOTS[slot]!;
    while (e !== 0) {
      const k = e - 1;
      if (KNOWN_LENGTH[k] === len && this.sameName(buf, p, len, k)) return k;
      slot = (slot + 1) & KNOWN_MASK;
      e = KNOWN_SLOTS[slot]!;
    }
    return -1;
  }

  /**
   * The Int32 view of `buf` used by the word-at-a-time scans, or null for a small chunk, where
   * making the view would cost more than it saves (views alias memory, so a cached one stays
   * valid while its buffer is the same object).
   */
  private wordsOf(buf: Buffer): Int32Array | null {
    if (buf !== this.wBuf) {
      if (buf === this.acc) {
        // Our own buffer: its view is made once, with the buffer (aligned at byte 0).
        this.wBuf = buf;
        this.wI0 = 0;
        return (this.words = this.accWords);
      }
      if (buf.length < 64) return null;
      if (buf !== lastChunk) {
        const i0 = ((buf.byteOffset + 3) & ~3) - buf.byteOffset;
        const n = (buf.length - i0) >> 2;
        lastWords = new Int32Array(buf.buffer, buf.byteOffset + i0, n > 0 ? n : 0);
        lastChunk = buf;
        lastI0 = i0;
      }
      this.words = lastWords;
      this.wBuf = buf;
      this.wI0 = lastI0;
    }
    return this.words!;
  }

  /**
   * True when `buf[p..p+len)` is known name `k` up to letter case. Compares four bytes at a
   * time: unaligned words are assembled from two aligned ones; near the chunk edges it falls
   * back to bytes.
   */
  private sameName(buf: Buffer, p: number, len: number, k: number): boolean {
    const words = this.wordsOf(buf);
    const a = p - this.wI0;
    const nw = (len + 3) >> 2;
    let w = a >> 2;
    if (words === null || a < 0 || w + nw >= words.length) {
      // Near the chunk edges: bytes. `| 0x20` folds case; requiring a byte above 0x20 keeps CR
      // and other CTLs from aliasing '-' and digits, since no token check has run yet.
      const off = KNOWN_OFFSET[k]!;
      let i = 0;
      for (; i < len; i++) {
        const x = buf[p + i]!;
        if ((x | 0x20) !== KNOWN_BYTES[off + i] || x <= 0x20) break;
      }
      return i === len;
    }
    const sh = (a & 3) << 3;
    let o = KNOWN_WORD_OFFSET[k]!;
    const last = o + nw - 1;
    for (; o <= last; o++, w++) {
      let x = sh === 0 ? words[w]! : (words[w]! >>> sh) | (words[w + 1]! << (32 - sh));
      x |= KNOWN_CASE[o]!;
      if (o === last) x &= KNOWN_LAST_MASK[k]!;
      if (x !== KNOWN_WORDS[o]) return false;
    }
    return true;
  }

  /**
   * Skips the valid field-value bytes from `p`, four at a time through an Int32Array view of
   * the chunk (SWAR): a word passes when none of its bytes is below 0x20 or equal to 0x7F. Stops
   * at the first word that does not pass (which holds the CR, a HTAB or an invalid byte) and
   * returns its first index; the byte loop takes it from there. Values are most of a head's
   * bytes, so this is where the parser spends its time.
   */
  private skipValueWords(buf: Buffer, p: number, lim: number): number {
    const words = this.wordsOf(buf);
    if (words === null) return p;
    const i0 = this.wI0;
    const q = p + ((i0 - p) & 3);
    for (let i = p; i < q; i++) if (VALUE[buf[i]!] === 0) return i;
    let w = (q - i0) >> 2;
    const wEnd = (lim - i0) >> 2;
    while (w < wEnd) {
      const x = words[w]!;
      const y = x ^ 0x7f7f7f7f;
      if ((((x - 0x20202020) & ~x) | ((y - 0x01010101) & ~y)) & 0x80808080) break;
      w++;
    }
    return i0 + (w << 2);
  }

  /** Canonical name for a field not in the known table. */
  private fieldName(buf: Buffer, s: number, e: number): string {
    return canonicalName(buf, s, e) ?? this.text(buf, s, e);
  }

  private nameError(buf: Buffer, nameStart: number, p: number, b: number): ParseError {
    if (p === nameStart) {
      if (b === SP || b === HTAB) return new ParseError('obsolete line folding (header line starting with whitespace) is not allowed');
      if (b === COLON) return new ParseError('empty header name');
      if (b === LF) return new ParseError('bare LF: header lines must end with CRLF');
      return new ParseError(`invalid byte ${showByte(b)} at the start of a header name`);
    }
    const name = latin1(buf, nameStart, p);
    if (b === SP || b === HTAB) return new ParseError(`whitespace between header name ${name} and the colon`);
    if (b === CR || b === LF) return new ParseError(`header line ${name} has no colon`);
    return new ParseError(`invalid byte ${showByte(b)} in header name ${name}`);
  }

  /** Records what a framing-relevant field says. */
  private field(role: number, value: string): void {
    switch (role) {
      case H_CONTENT_LENGTH: {
        const n = parseContentLength(value);
        if (n === -1) throw new ProtocolError(`invalid Content-Length "${value}"`);
        if (n === -2 || (this.contentLength >= 0 && n !== this.contentLength)) {
          throw new ProtocolError(`differing Content-Length values (${this.contentLength >= 0 ? `${this.contentLength}, ` : ''}${value})`);
        }
        this.contentLength = n;
        break;
      }
      case H_TRANSFER_ENCODING:
        this.transferEncoding(value);
        break;
      case H_CONNECTION:
        this.connection |= connectionFlags(value);
        break;
      case H_HOST:
        this.hostIndex = this.headers.size - 1;
        this.hostCount++;
        break;
      case H_UPGRADE:
        this.upgrade = true;
        break;
      case H_EXPECT:
        if (eqIgnoreCase(value, '100-continue')) this.expectContinue = true;
        break;
    }
  }

  /** Records what one Transfer-Encoding value says (see {@link readTransferCodings}). */
  private transferEncoding(v: string): void {
    this.hasTransferEncoding = true;
    readTransferCodings(v, this);
  }

  /** Called at the empty line: cross-field framing checks. */
  private finish(): void {
    this.state = S_DONE;
    this.complete = true;
    if (this.kind === 'trailers') return;
    if (this.hasTransferEncoding) {
      if (this.contentLength >= 0) throw new ProtocolError('message has both Content-Length and Transfer-Encoding');
      const request = this.kind === 'request';
      // RFC 9112 §6.1: an HTTP/1.0 request with Transfer-Encoding has faulty framing.
      if (request && this.versionMinor === 0) throw new ProtocolError('Transfer-Encoding in an HTTP/1.0 request');
      // RFC 9112 §6.3: a request whose final coding is not chunked cannot be delimited (400);
      // chunked is applied at most once (§7.1). A response like that would be read until close
      // and then still need decoding: refused as well, as is a coding neither side implements
      // (§6.1: 501 for a request), so no body is taken for what it was not declared to be.
      if (!this.chunked || this.chunkedNotLast) {
        throw new ProtocolError(`${this.kind} Transfer-Encoding "${this.headers.getAll('Transfer-Encoding').join(', ')}" does not end with a single chunked coding`);
      }
      if (this.otherCoding !== '') {
        throw new ProtocolError(`transfer coding ${this.otherCoding} (${this.kind} Transfer-Encoding "${this.headers.getAll('Transfer-Encoding').join(', ')}") is not implemented: only chunked is`, {
          notImplemented: true,
        });
      }
    }
    if (this.kind === 'request') this.checkTargetAndHost();
  }

  /**
   * RFC 9112 §3.2: an HTTP/1.1 request has exactly one Host and a valid one, every request a
   * target in a form its method may use; an absolute-form target replaces the Host value.
   */
  private checkTargetAndHost(): void {
    if (this.hostCount !== 1) {
      if (this.hostCount > 1) throw new ProtocolError('request has more than one Host header');
      if (this.versionMinor === 1) throw new ProtocolError('HTTP/1.1 request has no Host header');
    } else if (!this.plainHost) {
      const host = this.headers._values[this.hostIndex]!;
      if (!isValidHost(host)) {
        throw new ParseError(`invalid Host header ${JSON.stringify(host.length > 60 ? `${host.slice(0, 60)}...` : host)}: expected host[:port]`);
      }
    }
    const target = this.target;
    // Origin-form, the usual case, needs nothing more.
    if (target.charCodeAt(0) === 0x2f && this.method !== METHOD_CONNECT) return;
    const err = requestTargetError(this.method, target);
    if (err !== null) throw new ParseError(err);
    const authority = absoluteTargetAuthority(target);
    if (authority !== null) this.headers.set('Host', authority);
  }
}

/**
 * True when `buf[s..e)` is a non-empty reg-name without percent-encoding, optionally followed by
 * `:` and digits: the shape of nearly every Host value, all of it valid. False says only that
 * the full grammar (`isValidHost`) must decide.
 */
function isPlainHost(buf: Buffer, s: number, e: number): boolean {
  let i = s;
  while (i < e && REG_NAME[buf[i]!] === 1) i++;
  if (i === s) return false;
  if (i === e) return true;
  if (buf[i] !== COLON) return false;
  for (i++; i < e; i++) {
    const c = buf[i]!;
    if (c < 0x30 || c > 0x39) return false;
  }
  return true;
}

/** Matches the common methods by bytes so no string is built for them. */
function methodString(buf: Buffer, s: number, e: number): string {
  const b0 = buf[s]!;
  switch (e - s) {
    case 3:
      if (b0 === 0x47 && buf[s + 1] === 0x45 && buf[s + 2] === 0x54) return METHOD_GET;
      if (b0 === 0x50 && buf[s + 1] === 0x55 && buf[s + 2] === 0x54) return METHOD_PUT;
      break;
    case 4:
      if (b0 === 0x50 && buf[s + 1] === 0x4f && buf[s + 2] === 0x53 && buf[s + 3] === 0x54) return METHOD_POST;
      if (b0 === 0x48 && buf[s + 1] === 0x45 && buf[s + 2] === 0x41 && buf[s + 3] === 0x44) return METHOD_HEAD;
      break;
    case 5:
      if (b0 === 0x50 && matchAt(buf, s, METHOD_PATCH)) return METHOD_PATCH;
      if (b0 === 0x54 && matchAt(buf, s, METHOD_TRACE)) return METHOD_TRACE;
      break;
    case 6:
      if (b0 === 0x44 && matchAt(buf, s, METHOD_DELETE)) return METHOD_DELETE;
      break;
    case 7:
      if (b0 === 0x4f && matchAt(buf, s, METHOD_OPTIONS)) return METHOD_OPTIONS;
      if (b0 === 0x43 && matchAt(buf, s, METHOD_CONNECT)) return METHOD_CONNECT;
      break;
  }
  return latin1(buf, s, e);
}

function matchAt(buf: Buffer, s: number, str: string): boolean {
  for (let i = 1; i < str.length; i++) if (buf[s + i] !== str.charCodeAt(i)) return false;
  return true;
}

let scratch = Buffer.allocUnsafe(256);

/**
 * Canonical spelling of a field name that is not in the known table, or `null` when the raw
 * bytes already are canonical (the usual case; the caller then takes them as they are). A name
 * needing case changes is rebuilt in a scratch buffer.
 */
function canonicalName(buf: Buffer, s: number, e: number): string | null {
  let upper = true;
  let i = s;
  for (; i < e; i++) {
    const c = buf[i]!;
    if (upper ? c >= 0x61 && c <= 0x7a : c >= 0x41 && c <= 0x5a) break;
    upper = c === 0x2d;
  }
  if (i === e) return null;
  const n = e - s;
  if (scratch.length < n) scratch = Buffer.allocUnsafe(Math.max(n, scratch.length * 2));
  const out = scratch;
  upper = true;
  for (let k = 0; k < n; k++) {
    let c = buf[s + k]!;
    if (upper) {
      if (c >= 0x61 && c <= 0x7a) c -= 0x20;
    } else if (c >= 0x41 && c <= 0x5a) {
      c += 0x20;
    }
    out[k] = c;
    upper = c === 0x2d;
  }
  return latin1(out, 0, n);
}

/**
 * Parses a Content-Length value: one non-negative decimal, or a comma list of identical ones
 * (RFC 9110 §8.6). Returns the length, -1 when malformed, -2 when the list values differ.
 */
export function parseContentLength(v: string): number {
  let result = -1;
  const n = v.length;
  let i = 0;
  for (;;) {
    while (i < n && (v.charCodeAt(i) === SP || v.charCodeAt(i) === HTAB)) i++;
    const digits = i;
    let x = 0;
    while (i < n) {
      const c = v.charCodeAt(i) - 0x30;
      if (c < 0 || c > 9) break;
      x = x * 10 + c;
      i++;
    }
    if (i === digits || i - digits > 15) return -1;
    while (i < n && (v.charCodeAt(i) === SP || v.charCodeAt(i) === HTAB)) i++;
    if (result >= 0 && x !== result) return -2;
    result = x;
    if (i === n) return result;
    if (v.charCodeAt(i) !== 44) return -1;
    i++;
  }
}

/** `CONN_*` flags for the tokens of one Connection value. */
export function connectionFlags(v: string): number {
  // Fast paths for the values browsers and clients actually send.
  if (v.length === 10 && eqIgnoreCase(v, 'keep-alive')) return CONN_KEEP_ALIVE;
  if (v.length === 5 && eqIgnoreCase(v, 'close')) return CONN_CLOSE;
  let flags = 0;
  const n = v.length;
  let i = 0;
  while (i <= n) {
    let j = i;
    while (j < n && v.charCodeAt(j) !== 44) j++;
    let a = i;
    let z = j;
    while (a < z && isWs(v.charCodeAt(a))) a++;
    while (z > a && isWs(v.charCodeAt(z - 1))) z--;
    const len = z - a;
    if (len === 5 && eqAsciiAt(v, a, 'close')) flags |= CONN_CLOSE;
    else if (len === 10 && eqAsciiAt(v, a, 'keep-alive')) flags |= CONN_KEEP_ALIVE;
    else if (len === 7 && eqAsciiAt(v, a, 'upgrade')) flags |= CONN_UPGRADE;
    i = j + 1;
  }
  return flags;
}

function isWs(c: number): boolean {
  return c === SP || c === HTAB;
}

/** What a Transfer-Encoding list says about framing; {@link HeadParser} has these fields too. */
export interface TransferCodings {
  /** The final coding so far is chunked. */
  chunked: boolean;
  /** chunked came before another coding, or twice. */
  chunkedNotLast: boolean;
  /** The first coding other than chunked, as sent, or `''`. */
  otherCoding: string;
}

/**
 * Walks one Transfer-Encoding value, a list of `token *( OWS ";" OWS name BWS "=" BWS
 * ( token / quoted-string ) )` (RFC 9112 §7, RFC 9110 §5.6.1: empty elements are skipped;
 * several fields make one list, so call this for each in order with the same `into`), and
 * records where chunked is and the first other coding. Throws `ProtocolError` for a value that
 * breaks the grammar, names no coding, or gives chunked a parameter (it has none): such a body
 * cannot be framed.
 */
export function readTransferCodings(v: string, into: TransferCodings): void {
  const n = v.length;
  let codings = 0;
  let i = 0;
  for (;;) {
    while (i < n && isWs(v.charCodeAt(i))) i++;
    if (i === n) break;
    if (v.charCodeAt(i) === 44) {
      i++;
      continue;
    }
    const a = i;
    while (i < n && TOKEN[v.charCodeAt(i)] === 1) i++;
    if (i === a) throw teError(v, `${showChar(v, i)} where a transfer coding should start`);
    const z = i;
    const isChunked = z - a === 7 && eqAsciiAt(v, a, 'chunked');
    while (i < n && isWs(v.charCodeAt(i))) i++;
    while (i < n && v.charCodeAt(i) === 59) {
      if (isChunked) throw teError(v, 'chunked takes no parameters');
      i = skipParameter(v, i + 1);
      if (i < 0) throw teError(v, `malformed parameter of transfer coding ${v.slice(a, z)}`);
    }
    if (i < n && v.charCodeAt(i) !== 44) throw teError(v, `${showChar(v, i)} after transfer coding ${v.slice(a, z)}`);
    codings++;
    if (into.chunked) into.chunkedNotLast = true;
    into.chunked = isChunked;
    if (!isChunked && into.otherCoding === '') into.otherCoding = v.slice(a, z);
  }
  if (codings === 0) throw teError(v, 'no transfer coding');
}

/** A malformed Transfer-Encoding value. */
function teError(v: string, why: string): ProtocolError {
  return new ProtocolError(`invalid Transfer-Encoding "${v.length > 60 ? `${v.slice(0, 60)}...` : v}": ${why}`);
}

/** The character at `i` of `v` for error messages, or "the end". */
function showChar(v: string, i: number): string {
  return i < v.length ? showByte(v.charCodeAt(i)) : 'the end';
}

/**
 * Skips one transfer parameter `OWS token BWS "=" BWS ( token / quoted-string ) OWS` of `v`
 * from `i` (just after its ";"). Returns the index after it, or -1 when it is malformed. The
 * value's bytes are already known to be field-value bytes.
 */
function skipParameter(v: string, i: number): number {
  const n = v.length;
  while (i < n && isWs(v.charCodeAt(i))) i++;
  const name = i;
  while (i < n && TOKEN[v.charCodeAt(i)] === 1) i++;
  if (i === name) return -1;
  while (i < n && isWs(v.charCodeAt(i))) i++;
  if (i === n || v.charCodeAt(i) !== 61) return -1;
  i++;
  while (i < n && isWs(v.charCodeAt(i))) i++;
  if (i < n && v.charCodeAt(i) === 34) {
    // quoted-string: field-value bytes but DQUOTE and backslash, or a backslash and any byte.
    for (i++; ; i++) {
      if (i >= n) return -1;
      const c = v.charCodeAt(i);
      if (c === 34) break;
      if (c === 92) i++;
    }
    i++;
  } else {
    const t = i;
    while (i < n && TOKEN[v.charCodeAt(i)] === 1) i++;
    if (i === t) return -1;
  }
  while (i < n && isWs(v.charCodeAt(i))) i++;
  return i;
}

/** True when `v` at `at` equals the lowercase ASCII word `lower`, ignoring case. */
function eqAsciiAt(v: string, at: number, lower: string): boolean {
  for (let i = 0; i < lower.length; i++) {
    const c = v.charCodeAt(at + i);
    const l = lower.charCodeAt(i);
    if (c !== l && (c | 0x20) !== l) return false;
  }
  return true;
}
