/**
 * Multipart helpers (not a hook plugin): {@link Form} builds a streamed multipart body
 * (`multipart/form-data` or `multipart/mixed`), {@link Multipart} is one part, {@link Batch}
 * a mixed form, and {@link parseMultipart} and friends parse a complete multipart body.
 *
 * A part's user strings cannot change the part's header block: a name or file name is sent
 * quoted with `"`, CR, LF and the other control characters percent-encoded (`%22`, `%0D`,
 * `%0A`, …, as browsers encode form-data names), and a content type or transfer encoding
 * with a control character is refused with `ArgumentError`.
 *
 * An empty part content type is detected when the form is built: from the file name's
 * extension when it names a type, else by sniffing the data (the fileserver's WHATWG MIME
 * sniffing, one implementation for both): the bytes of a string or Uint8Array part, the first
 * 512 bytes of an unread `fs` read stream (read synchronously, as its size is, so the form
 * still knows its length), and for any other stream its first 512 bytes when the form is sent.
 */
import { Buffer } from 'node:buffer';
import { createRequire } from 'node:module';
import path from 'node:path';
import { Readable } from 'node:stream';
import { ArgumentError, ChunkBody, Headers, ParseError, adoptStreamErrors, checkFieldValue, checkOptionKeys, isToken, nodeCrypto } from '../../kernel/index.js';
import { SNIFF_LENGTH, sniffContentType } from '../fileserver/index.js';
import { FileSource } from './file-source.js';

/** The data a {@link Multipart} can carry. */
export type MultipartData = Uint8Array | string | Readable | AsyncIterable<Uint8Array | string>;

/** The two multipart subtypes this module builds and can require when parsing. */
export type MultipartType = 'formdata' | 'mixed';

/** One part of a {@link Form}: data with an optional file name and content type. */
export class Multipart {
  /** File name sent in Content-Disposition, or null for none. */
  readonly filename: string | null;
  /** The part's data; a stream is read once when the form is sent. */
  readonly data: MultipartData;
  /** Content-Type of the part; empty means detected when sent (see {@link detectContentType}). */
  readonly contentType: string;
  /** Content-Transfer-Encoding header value, or empty for none. */
  readonly contentTransferEncoding: string;
  /** Part name; a Form uses its own key when this is empty. */
  readonly name: string;

  /** Throws `ArgumentError` when `contentType` or `contentTransferEncoding` holds a control character (CR, LF, NUL, …). */
  constructor(filename: string | null, data: MultipartData, contentType = '', contentTransferEncoding = '', name = '') {
    if (filename !== null && typeof filename !== 'string') throw new ArgumentError('Multipart filename must be a string or null');
    if (!(typeof data === 'string' || data instanceof Uint8Array || isAsyncIterable(data))) {
      throw new ArgumentError(`Multipart data must be a Uint8Array, string, Readable or async iterable, got ${typeof data}`);
    }
    if (typeof contentType !== 'string') throw new ArgumentError(`Multipart contentType must be a string, got ${typeof contentType}`);
    if (typeof contentTransferEncoding !== 'string') throw new ArgumentError(`Multipart contentTransferEncoding must be a string, got ${typeof contentTransferEncoding}`);
    if (typeof name !== 'string') throw new ArgumentError(`Multipart name must be a string, got ${typeof name}`);
    checkFieldValue('Content-Type', contentType);
    checkFieldValue('Content-Transfer-Encoding', contentTransferEncoding);
    this.filename = filename;
    this.data = data;
    this.contentType = contentType;
    this.contentTransferEncoding = contentTransferEncoding;
    this.name = name;
  }
}

type MimeTypes = typeof import('mime-types');

let mime: MimeTypes | null = null;

/** `mime-types`, loaded on the first part typed by its file name: its database is large. */
function mimeTypes(): MimeTypes {
  return (mime ??= createRequire(import.meta.url)('mime-types') as MimeTypes);
}

/** The type a file name's extension names, or null when it names none or only `application/octet-stream`. */
function typeByName(filename: string | null): string | null {
  if (filename === null) return null;
  const ext = path.extname(filename);
  if (ext === '' || ext === '.') return null;
  const t = mimeTypes().lookup(ext);
  return t === false || t === 'application/octet-stream' ? null : t;
}

/**
 * The content type used for a part whose type was left empty: the type the file name's
 * extension names (`application/octet-stream` counts as none), else the data's sniffed type
 * ({@link sniffContentType}): `image/png`, `application/pdf`, `text/plain; charset=utf-8`, …
 * Empty bytes, and a stream (whose bytes are not known yet; a {@link Form} sniffs its first
 * bytes when sending), give `application/octet-stream`.
 */
export function detectContentType(data: MultipartData, filename: string | null = null): string {
  const byName = typeByName(filename);
  if (byName !== null) return byName;
  if (typeof data === 'string') return sniffContentType(Buffer.from(data.length > SNIFF_LENGTH ? data.slice(0, SNIFF_LENGTH) : data, 'utf8'));
  return data instanceof Uint8Array ? sniffBytes(data) : 'application/octet-stream';
}

/** The sniffed type of bytes; empty bytes say nothing, so `application/octet-stream`. */
function sniffBytes(b: Uint8Array): string {
  return b.length === 0 ? 'application/octet-stream' : sniffContentType(b);
}

function isAsyncIterable(x: unknown): x is AsyncIterable<Uint8Array | string> {
  return typeof x === 'object' && x !== null && Symbol.asyncIterator in x;
}

/** Options of {@link Form}. */
export interface FormOptions {
  /** The boundary (1–70 characters of RFC 2046 bchars); random by default. */
  boundary?: string;
  /** `formdata` (default) or `mixed`. */
  type?: MultipartType;
}

const FORM_OPTIONS: ReadonlySet<string> = new Set(['boundary', 'type'] satisfies (keyof FormOptions)[]);

/** What a {@link Form} accepts as its parts. */
export type FormParts = Iterable<readonly [string, unknown]> | Record<string, unknown>;

/**
 * The header block of a stream part whose type is sniffed when sent: it is rendered once the
 * first bytes of the stream (the segment after it) are in.
 */
class SniffedHead {
  constructor(readonly render: (type: string) => Uint8Array) {}
}

type Segment = Uint8Array | FileSource | SniffedHead | AsyncIterable<Uint8Array | string>;

/** Bytes of a file part read at a time where no reader's buffer is at hand. */
const FILE_CHUNK = 65536;

const BCHARS = /^[0-9A-Za-z'()+_,\-./:=? ]{0,69}[0-9A-Za-z'()+_,\-./:=?]$/;

/** A random boundary: 48 characters. */
export function randomBoundary(): string {
  return `----------------switchyard${nodeCrypto().randomBytes(11).toString('hex')}`;
}

/**
 * A quoted Content-Disposition parameter value: `"`, CR and LF percent-encoded as the WHATWG
 * form-data encoding does (`%22`, `%0D`, `%0A`), and so are the other control characters,
 * which no header value may hold. Other characters, `%` included, go as they are (UTF-8).
 */
function quoteParam(s: string): string {
  return `"${s.replace(/[\x00-\x1f\x7f"]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase().padStart(2, '0')}`)}"`;
}

function chunkBytes(v: unknown): Uint8Array {
  if (typeof v === 'string') return Buffer.from(v, 'utf8');
  if (v instanceof Uint8Array) return v;
  throw new ArgumentError(`multipart part stream produced ${typeof v}, expected Uint8Array or string chunks`);
}

/**
 * A multipart body (`multipart/form-data` or `multipart/mixed`), streamed part by part:
 * a stream part is read chunk by chunk when the body is read, never buffered whole.
 * Single-use, like every streamed body.
 */
export class Form extends ChunkBody {
  /** The boundary between parts. */
  readonly boundary: string;
  /** `formdata` or `mixed`. */
  readonly type: MultipartType;
  private readonly segments: Segment[] = [];
  private readonly total: number;
  private index = 0;
  private iterator: AsyncIterator<Uint8Array | string> | null = null;
  private isClosed = false;

  /**
   * `parts` is an iterable of `[name, value]` pairs or an object. A value is a string or number
   * (its string form), a Uint8Array, a {@link Multipart}, a Node Readable (an `fs` read stream is
   * sent with its file's base name), or anything else (its string form).
   */
  constructor(parts: FormParts, options: FormOptions = {}) {
    super();
    if (typeof options !== 'object' || options === null)
      throw new ArgumentError(`new Form(parts, options): options must be an object such as { boundary }, got ${options === null ? 'null' : typeof options}`);
    checkOptionKeys(options, FORM_OPTIONS, 'new Form()');
    const type = options.type ?? 'formdata';
    if (type !== 'formdata' && type !== 'mixed') throw new ArgumentError(`Form type must be 'formdata' or 'mixed', got ${String(type)}`);
    const boundary = options.boundary ?? randomBoundary();
    if (typeof boundary !== 'string' || !BCHARS.test(boundary)) {
      throw new ArgumentError(`invalid multipart boundary ${JSON.stringify(boundary)}: 1-70 characters of RFC 2046 bchars, not ending in a space`);
    }
    this.type = type;
    this.boundary = boundary;
    const pairs: Iterable<readonly [string, unknown]> =
      typeof parts === 'object' && parts !== null && Symbol.iterator in parts ? (parts as Iterable<readonly [string, unknown]>) : Object.entries(parts as Record<string, unknown>);
    let total = 0;
    const headOf = (part: Multipart, type: string | null): Uint8Array => Buffer.from(`--${boundary}\r\n${this.partHeaders(part, type)}\r\n`, 'utf8');
    for (const pair of pairs) {
      if (!Array.isArray(pair) || pair.length !== 2) throw new ArgumentError('Form parts must be [name, value] pairs');
      const [key, value] = pair as [unknown, unknown];
      const part = toMultipart(String(key), value);
      const d = part.data;
      // A plain form field (a value that is not a Multipart, sent as text) carries no Content-Type, as browsers and curl send it.
      const plainField = type === 'formdata' && !(value instanceof Multipart) && typeof d === 'string';
      const given = plainField ? null : part.contentType || typeByName(part.filename);
      if (typeof d === 'string' || d instanceof Uint8Array) {
        const b = typeof d === 'string' ? Buffer.from(d, 'utf8') : d;
        const head = headOf(part, plainField ? null : (given ?? (typeof d === 'string' ? sniffContentType(b) : sniffBytes(b))));
        this.segments.push(head, b);
        total += head.length + b.length;
      } else {
        // Its errors surface when the form reads it, not as an unhandled 'error' event before
        // (a missing file fails at once; a replaced ReadStream may still fail to open).
        adoptStreamErrors(d);
        // An unread fs.ReadStream becomes a sized file part; any other stream keeps the length unknown.
        const file = FileSource.from(d);
        if (file !== null) {
          const head = headOf(part, given ?? sniffFile(file));
          this.segments.push(head, file);
          total += head.length + file.size;
        } else {
          this.segments.push(given !== null ? headOf(part, given) : new SniffedHead((t) => headOf(part, t)), d);
          total = -Infinity;
        }
      }
      const crlf = Buffer.from('\r\n');
      this.segments.push(crlf);
      total += 2;
    }
    const tail = Buffer.from(`--${boundary}--\r\n`);
    this.segments.push(tail);
    total += tail.length;
    this.total = total < 0 ? -1 : total;
  }

  /** A part's header lines; `type` null for none. The Multipart checked its type and transfer encoding. */
  private partHeaders(part: Multipart, type: string | null): string {
    let disp = this.type === 'formdata' ? 'form-data' : 'attachment';
    if (part.name !== '' || this.type === 'formdata') disp += `; name=${quoteParam(part.name)}`;
    if (part.filename !== null) disp += `; filename=${quoteParam(part.filename)}`;
    let h = `Content-Disposition: ${disp}\r\n`;
    if (type !== null) h += `Content-Type: ${type}\r\n`;
    if (part.contentTransferEncoding !== '') h += `Content-Transfer-Encoding: ${part.contentTransferEncoding}\r\n`;
    return h;
  }

  /** `multipart/form-data; boundary=…` or `multipart/mixed; boundary=…`. */
  get contentType(): string {
    return contentType(this);
  }

  /** See {@link ChunkBody.length}: known when every part's size is (strings, bytes, unread `fs` read streams), else -1. */
  override get length(): number {
    return this.total;
  }

  /** See {@link ChunkBody.read}. */
  override read(dst: Uint8Array): Promise<number> {
    if (!this.isClosed && dst.length > 0 && !this.hasWaiting && this.segments[this.index] instanceof FileSource) return this.readFile(dst);
    return super.read(dst);
  }

  /** A file part goes straight into the caller's buffer: no chunk of the file is allocated or copied here. */
  private async readFile(dst: Uint8Array): Promise<number> {
    const n = await (this.segments[this.index] as FileSource).read(dst);
    if (this.isClosed) return 0;
    if (n > 0) return n;
    this.index++;
    return this.read(dst);
  }

  /** The next part's head, bytes or stream chunk; null at the end. */
  protected async nextChunk(): Promise<Uint8Array | null> {
    for (;;) {
      if (this.isClosed || this.index >= this.segments.length) return null;
      const seg = this.segments[this.index]!;
      if (seg instanceof Uint8Array) {
        this.index++;
        return seg;
      }
      if (seg instanceof FileSource) {
        // Only after an empty chunk in the same read (a file part's head never is one): read reads files itself.
        const buf = Buffer.allocUnsafe(FILE_CHUNK);
        const n = await seg.read(buf);
        if (this.isClosed) return null;
        if (n > 0) return buf.subarray(0, n);
        this.index++;
        continue;
      }
      if (seg instanceof SniffedHead) {
        // Gather the stream's first bytes (up to the sniffer's 512, or its end), then send the head and them.
        const stream = this.segments[this.index + 1] as AsyncIterable<Uint8Array | string>;
        this.iterator ??= stream[Symbol.asyncIterator]();
        const first: Uint8Array[] = [];
        let size = 0;
        let done = false;
        while (size < SNIFF_LENGTH) {
          const r = await this.iterator.next();
          if (this.isClosed) return null;
          if (r.done === true) {
            done = true;
            break;
          }
          const b = chunkBytes(r.value);
          first.push(b);
          size += b.length;
        }
        const data = first.length === 1 ? first[0]! : Buffer.concat(first, size);
        if (done) {
          this.iterator = null;
          this.index += 2;
        } else {
          this.index++;
        }
        return Buffer.concat([seg.render(sniffBytes(data)), data]);
      }
      this.iterator ??= seg[Symbol.asyncIterator]();
      const r = await this.iterator.next();
      if (this.isClosed) return null;
      if (r.done === true) {
        this.iterator = null;
        this.index++;
        continue;
      }
      return chunkBytes(r.value);
    }
  }

  /** Stops reading; every stream part not yet finished is destroyed. */
  close(): void {
    if (this.isClosed) return;
    this.isClosed = true;
    this.dropWaiting();
    const it = this.iterator;
    this.iterator = null;
    if (it !== null && typeof it.return === 'function') void Promise.resolve(it.return()).catch(() => undefined);
    for (let i = this.index; i < this.segments.length; i++) {
      const s = this.segments[i];
      if (s instanceof FileSource) void s.close();
      else if (!(s instanceof Uint8Array) && !(s instanceof SniffedHead) && typeof (s as { destroy?: unknown }).destroy === 'function') (s as unknown as { destroy(): void }).destroy();
    }
  }

  /** See {@link ChunkBody.closed}. */
  get closed(): boolean {
    return this.isClosed;
  }
}

/** The sniffed type of a file part's first bytes; `application/octet-stream` when they cannot be read. */
function sniffFile(file: FileSource): string {
  const head = file.head(SNIFF_LENGTH);
  return head === null ? 'application/octet-stream' : sniffBytes(head);
}

function toMultipart(key: string, value: unknown): Multipart {
  if (value instanceof Multipart) {
    return value.name === '' ? new Multipart(value.filename, value.data, value.contentType, value.contentTransferEncoding, key) : value;
  }
  if (typeof value === 'string') return new Multipart(null, value, '', '', key);
  if (value instanceof Uint8Array) return new Multipart(null, value, '', '', key);
  if (value instanceof Readable || isAsyncIterable(value)) {
    const p = (value as { path?: unknown }).path;
    const filename = typeof p === 'string' ? path.basename(p) : Buffer.isBuffer(p) ? path.basename(p.toString()) : null;
    return new Multipart(filename, value, '', '', key);
  }
  return new Multipart(null, String(value), '', '', key);
}

/** The Content-Type of a form: `multipart/form-data; boundary=…` or `multipart/mixed; boundary=…`. */
export function contentType(form: Form): string {
  const b = /^[0-9A-Za-z'+_\-.]+$/.test(form.boundary) ? form.boundary : `"${form.boundary}"`;
  return `multipart/${form.type === 'formdata' ? 'form-data' : 'mixed'}; boundary=${b}`;
}

/** A `multipart/mixed` {@link Form}. `parts` is a list of Multiparts or `[name, value]` pairs. */
export function Batch(parts: Iterable<Multipart | readonly [string, unknown]> | Record<string, unknown>, options: { boundary?: string } = {}): Form {
  const list: (readonly [string, unknown])[] = [];
  if (typeof parts === 'object' && parts !== null && Symbol.iterator in parts) {
    for (const p of parts as Iterable<Multipart | readonly [string, unknown]>) list.push(p instanceof Multipart ? [p.name, p] : p);
  } else {
    list.push(...Object.entries(parts));
  }
  return new Form(list, { ...options, type: 'mixed' });
}

// ---- parsing ---------------------------------------------------------------------------------

/** One parsed part. */
export interface ParsedPart {
  /** The Content-Disposition `name` (every form-data part has one, possibly empty), or empty. */
  name: string;
  /** The Content-Disposition `filename`, or null. */
  filename: string | null;
  /** The part's Content-Type, `text/plain` when it has none. */
  contentType: string;
  /** The part's bytes (a view into the parsed body). */
  data: Uint8Array;
  /** The part's headers. */
  headers: Headers;
}

/** The most bytes a part's header block may take. */
export const MAX_PART_HEADER_BYTES = 64 * 1024;

interface MessageLike {
  headers: Headers;
  body: unknown;
}

const CRLFCRLF = Buffer.from('\r\n\r\n');

/** Splits `type/subtype; k=v; k="q"` into the lowercased media type and its parameters. */
function parseMediaType(s: string): { type: string; params: Map<string, string> } {
  const semi = s.indexOf(';');
  const type = (semi < 0 ? s : s.slice(0, semi)).trim().toLowerCase();
  return { type, params: semi < 0 ? new Map() : parseParams(s.slice(semi + 1)) };
}

/** Parses `; k=v; k="quoted \" value"` parameters; names lowercased. */
function parseParams(s: string): Map<string, string> {
  const out = new Map<string, string>();
  let i = 0;
  while (i < s.length) {
    while (i < s.length && (s[i] === ';' || s[i] === ' ' || s[i] === '\t')) i++;
    const eq = s.indexOf('=', i);
    const nextSemi = s.indexOf(';', i);
    if (eq < 0 || (nextSemi >= 0 && nextSemi < eq)) {
      if (nextSemi < 0) break;
      i = nextSemi + 1;
      continue;
    }
    const key = s.slice(i, eq).trim().toLowerCase();
    i = eq + 1;
    while (i < s.length && (s[i] === ' ' || s[i] === '\t')) i++;
    let value = '';
    if (s[i] === '"') {
      i++;
      while (i < s.length && s[i] !== '"') {
        if (s[i] === '\\' && i + 1 < s.length) i++;
        value += s[i];
        i++;
      }
      i++;
    } else {
      const end = s.indexOf(';', i);
      value = (end < 0 ? s.slice(i) : s.slice(i, end)).trim();
      i = end < 0 ? s.length : end;
    }
    if (key !== '' && !out.has(key)) out.set(key, value);
  }
  return out;
}

function decodeExtValue(v: string): string | undefined {
  const m = /^([^']*)'[^']*'(.*)$/.exec(v);
  if (m === null) return undefined;
  try {
    return decodeURIComponent(m[2]!);
  } catch {
    return undefined;
  }
}

function parseArgs(a: string | MessageLike, b: unknown, c: unknown): { ct: string; body: Uint8Array | null; required: MultipartType | undefined } {
  let ct: string;
  let body: unknown;
  let required: unknown;
  if (typeof a === 'string') {
    ct = a;
    body = b;
    required = c;
  } else if (typeof a === 'object' && a !== null && a.headers instanceof Headers) {
    ct = a.headers.get('Content-Type') ?? '';
    body = a.body;
    required = b;
  } else {
    throw new ArgumentError('parseMultipart takes (contentType, body) or (message)');
  }
  if (required !== undefined && required !== 'formdata' && required !== 'mixed') {
    throw new ArgumentError(`required multipart type must be 'formdata' or 'mixed', got ${String(required)}`);
  }
  if (body === null || body === undefined) return { ct, body: null, required };
  if (typeof body === 'string') return { ct, body: Buffer.from(body, 'utf8'), required };
  if (body instanceof Uint8Array) return { ct, body, required };
  throw new ArgumentError('parseMultipart needs a complete body (Uint8Array or string); read a streamed body with readAll first');
}

/**
 * Parses a complete multipart body. Call as `(contentTypeHeader, body, requiredType?)` or
 * `(message, requiredType?)`. Resolves to `undefined` when the content type is not multipart
 * (or not the required subtype) or there is no body; throws {@link ParseError} on malformed input.
 * In a `multipart/form-data` body, a part without `Content-Disposition: form-data` and a
 * `name` parameter is skipped (RFC 7578 §4.2; `name=""` is a name).
 */
export function parseMultipart(contentTypeHeader: string, body: Uint8Array | string | null | undefined, requiredType?: MultipartType): ParsedPart[] | undefined;
export function parseMultipart(message: MessageLike, requiredType?: MultipartType): ParsedPart[] | undefined;
export function parseMultipart(a: string | MessageLike, b?: unknown, c?: unknown): ParsedPart[] | undefined {
  const { ct, body, required } = parseArgs(a, b, c);
  const { type, params } = parseMediaType(ct);
  if (!type.startsWith('multipart/')) return undefined;
  if (required === 'formdata' && type !== 'multipart/form-data') return undefined;
  if (required === 'mixed' && type !== 'multipart/mixed') return undefined;
  if (body === null || body.length === 0) return undefined;
  const boundary = params.get('boundary');
  if (boundary === undefined || boundary === '') throw new ParseError('multipart Content-Type has no boundary');
  if (boundary.length > 70) throw new ParseError(`multipart boundary is longer than 70 characters (${boundary.length})`);
  return parseBody(Buffer.from(body.buffer, body.byteOffset, body.byteLength), boundary, type === 'multipart/form-data');
}

/** {@link parseMultipart} for `multipart/form-data` only. */
export function parseMultipartForm(contentTypeHeader: string, body: Uint8Array | string | null | undefined): ParsedPart[] | undefined;
export function parseMultipartForm(message: MessageLike): ParsedPart[] | undefined;
export function parseMultipartForm(a: string | MessageLike, b?: Uint8Array | string | null): ParsedPart[] | undefined {
  return typeof a === 'string' ? parseMultipart(a, b, 'formdata') : parseMultipart(a, 'formdata');
}

/** {@link parseMultipart} for `multipart/mixed` only. */
export function parseMultipartMixed(contentTypeHeader: string, body: Uint8Array | string | null | undefined): ParsedPart[] | undefined;
export function parseMultipartMixed(message: MessageLike): ParsedPart[] | undefined;
export function parseMultipartMixed(a: string | MessageLike, b?: Uint8Array | string | null): ParsedPart[] | undefined {
  return typeof a === 'string' ? parseMultipart(a, b, 'mixed') : parseMultipart(a, 'mixed');
}

/** The parts of `buf`; with `formData`, parts that are not named form-data parts are left out (RFC 7578 §4.2). */
function parseBody(buf: Buffer, boundary: string, formData: boolean): ParsedPart[] {
  const dash = Buffer.from(`--${boundary}`, 'latin1');
  const delim = Buffer.from(`\r\n--${boundary}`, 'latin1');
  // The first delimiter: at the start, or after a preamble ending in CRLF.
  let pos: number;
  if (buf.subarray(0, dash.length).equals(dash)) pos = dash.length;
  else {
    const i = buf.indexOf(delim);
    if (i < 0) throw new ParseError('multipart body has no boundary delimiter');
    pos = i + delim.length;
  }
  const parts: ParsedPart[] = [];
  for (;;) {
    // After a delimiter: `--` ends the body; else optional transport padding and CRLF.
    if (buf[pos] === 0x2d && buf[pos + 1] === 0x2d) return parts;
    while (buf[pos] === 0x20 || buf[pos] === 0x09) pos++;
    if (buf[pos] !== 0x0d || buf[pos + 1] !== 0x0a) {
      if (pos >= buf.length) throw new ParseError('multipart body ends without the final boundary');
      throw new ParseError('multipart boundary delimiter is not followed by CRLF');
    }
    pos += 2;
    let headers: Headers;
    let dataStart: number;
    if (buf[pos] === 0x0d && buf[pos + 1] === 0x0a) {
      headers = new Headers();
      dataStart = pos + 2;
    } else {
      const window = buf.subarray(pos, Math.min(buf.length, pos + MAX_PART_HEADER_BYTES + 4));
      const end = window.indexOf(CRLFCRLF);
      if (end < 0) {
        if (buf.length - pos > MAX_PART_HEADER_BYTES) throw new ParseError(`multipart part header block is over ${MAX_PART_HEADER_BYTES} bytes`);
        throw new ParseError('multipart part header block is not terminated');
      }
      headers = parsePartHeaders(buf.subarray(pos, pos + end));
      dataStart = pos + end + 4;
    }
    const next = buf.indexOf(delim, dataStart);
    if (next < 0) throw new ParseError('multipart body ends without the final boundary');
    const part = makePart(headers, buf.subarray(dataStart, next), formData);
    if (part !== null) parts.push(part);
    pos = next + delim.length;
  }
}

function parsePartHeaders(block: Buffer): Headers {
  const pairs: [string, string][] = [];
  for (const line of block.toString('utf8').split('\r\n')) {
    if ((line.startsWith(' ') || line.startsWith('\t')) && pairs.length > 0) {
      pairs[pairs.length - 1]![1] += ` ${line.trim()}`;
      continue;
    }
    const colon = line.indexOf(':');
    if (colon <= 0) throw new ParseError(`malformed multipart part header line ${JSON.stringify(line.slice(0, 100))}`);
    const name = line.slice(0, colon).trim();
    if (!isToken(name)) throw new ParseError(`invalid multipart part header name ${JSON.stringify(name.slice(0, 100))}`);
    pairs.push([name, line.slice(colon + 1).trim()]);
  }
  try {
    return new Headers(pairs);
  } catch (err) {
    throw new ParseError(`invalid multipart part header: ${(err as Error).message}`);
  }
}

/**
 * One part, or null for a form-data part without a `Content-Disposition: form-data` that has a
 * `name`: RFC 7578 §4.2 requires both, and such a part is skipped, as the reference does.
 */
function makePart(headers: Headers, data: Uint8Array, formData: boolean): ParsedPart | null {
  const disp = headers.get('Content-Disposition');
  let name = '';
  let filename: string | null = null;
  if (formData && disp === undefined) return null;
  if (disp !== undefined) {
    const { type, params } = parseMediaType(disp);
    const n = params.get('name');
    if (formData && (type !== 'form-data' || n === undefined)) return null;
    name = n ?? '';
    const ext = params.get('filename*');
    const decoded = ext !== undefined ? decodeExtValue(ext) : undefined;
    filename = decoded ?? params.get('filename') ?? null;
  }
  return { name, filename, contentType: headers.get('Content-Type') ?? 'text/plain', data, headers };
}
