/**
 * `serveContent(req, source, options)`: a representation with validators answered the way
 * RFC 9110 says: preconditions (304/412), one byte range (206/416), `Content-Type` by name or
 * by sniffing, `Last-Modified`, `ETag`, `Accept-Ranges`; HEAD gets the head a GET would.
 * `serveFile` runs through the same core with an open file as the source.
 */
import { Buffer } from 'node:buffer';
import fs from 'node:fs';
import type { FileHandle } from 'node:fs/promises';
import { checkOptionKeys, AbstractBody, ArgumentError, BytesBody, Headers, Request, Response, checkFieldValue, type HeadersInit } from '../../kernel/index.js';
import { evaluatePreconditions, ifRangeAllows, type Validators } from './conditional.js';
import { contentTypeByName } from './content-type.js';
import { normalizeEtag } from './etag.js';
import { FileBody } from './file-body.js';
import { formatHttpDate } from './http-date.js';
import { parseRange } from './range.js';
import { SNIFF_LENGTH, sniffContentType } from './sniff.js';

/**
 * What `serveContent` serves: bytes, a string (its UTF-8 bytes), or an open file
 * (`fs.promises.FileHandle`, read with positional reads). The response owns a FileHandle:
 * it is closed when the response body is closed, or at once when the answer has no body.
 */
export type ContentSource = Uint8Array | string | FileHandle;

/** Options of {@link serveContent} (all optional). */
export interface ServeContentOptions {
  /** A file name whose extension sets `Content-Type` when `contentType` is absent; else the type is sniffed. */
  name?: string;
  /** Source length in bytes; for a FileHandle it defaults to its size (`stat`). Ignored for bytes. */
  size?: number;
  /** Modification time, sent as `Last-Modified` (whole seconds) and used by the date conditionals. */
  modtime?: Date | number | null;
  /** The `Content-Type` to send. */
  contentType?: string | null;
  /** Entity tag, sent as `ETag`: `"x"`, `W/"x"`, or a bare `x` (quoted as a strong tag). */
  etag?: string | null;
  /** Headers added to the response (a `Content-Type` here wins over name and sniffing). */
  headers?: HeadersInit | null;
  /** Honour `Range` (and send `Accept-Ranges: bytes`). Default true. */
  allowRanges?: boolean;
}

const SERVE_CONTENT_OPTIONS: ReadonlySet<string> = new Set(['name', 'size', 'modtime', 'contentType', 'etag', 'headers', 'allowRanges'] satisfies (keyof ServeContentOptions)[]);

/** @internal A source the core can size, peek at and stream. */
export interface Source {
  readonly size: number;
  /** The first `n` bytes (fewer at the end). */
  head(n: number): Promise<Uint8Array>;
  /** A body over `length` bytes from `start`; the body then owns the source. */
  body(start: number, length: number): AbstractBody;
  /** Releases the source when no body takes it. */
  release(): void;
}

/** @internal What the core needs besides the source. */
export interface ContentMeta {
  name: string;
  /** Milliseconds since the epoch, or null. */
  modtime: number | null;
  contentType: string | null;
  /** Normalized tag, or null. */
  etag: string | null;
  /** A fresh Headers the response takes over. */
  headers: Headers;
  allowRanges: boolean;
}

/** @internal A source over bytes in memory. */
export function bytesSource(data: Uint8Array): Source {
  return {
    size: data.length,
    head: (n) => Promise.resolve(data.subarray(0, n)),
    body: (start, length) => new BytesBody(data.subarray(start, start + length)),
    release: () => {},
  };
}

/** @internal A source over an open file descriptor; `release` closes it. */
export function fdSource(fd: number, size: number, release: () => void): Source {
  return {
    size,
    head: (n) =>
      new Promise<Uint8Array>((resolve, reject) => {
        const buf = Buffer.allocUnsafe(Math.min(n, size));
        if (buf.length === 0) {
          resolve(buf);
          return;
        }
        fs.read(fd, buf, 0, buf.length, 0, (err, got) => (err !== null ? reject(err) : resolve(buf.subarray(0, got))));
      }),
    body: (start, length) => new FileBody(fd, start, length, release),
    release,
  };
}

// Headers a 304 must not carry (RFC 9110 §15.4.5: it describes the stored representation,
// it does not replace its content metadata).
const NOT_ON_304 = ['Content-Type', 'Content-Length', 'Content-Encoding', 'Content-Range', 'Transfer-Encoding'];

/** @internal The core of serveContent and serveFile. Never throws after taking the source without releasing it. */
export async function respondWithContent(req: Request, src: Source, m: ContentMeta): Promise<Response> {
  let owned = true;
  try {
    const headers = m.headers;
    const lastModified = m.modtime !== null && Number.isFinite(m.modtime) && m.modtime > 0 ? Math.floor(m.modtime / 1000) * 1000 : null;
    if (lastModified !== null) headers.set('Last-Modified', formatHttpDate(lastModified));
    let etag = m.etag;
    if (etag !== null) headers.set('ETag', etag);
    else {
      // An ETag the caller put in `headers` is the validator too (as Go's ServeContent reads it).
      const h = headers.get('ETag');
      if (h !== undefined) etag = normalizeEtag(h, 'the ETag header');
    }
    const v: Validators = { etag, lastModified };
    const pre = evaluatePreconditions(req.method, req.headers, v);
    if (pre === 304) {
      for (const n of NOT_ON_304) headers.delete(n);
      // With a tag the date adds nothing (Go does the same).
      if (etag !== null) headers.delete('Last-Modified');
      return new Response(304, null, { headers, copyHeaders: false });
    }
    if (pre === 412) return new Response(412, null, { headers: preconditionHeaders(headers), copyHeaders: false });

    if (!headers.has('Content-Type')) {
      const ct = m.contentType ?? contentTypeByName(m.name) ?? sniffContentType(await src.head(SNIFF_LENGTH));
      headers.set('Content-Type', ct);
    }
    const size = src.size;
    let status = 200;
    let start = 0;
    let length = size;
    if (m.allowRanges) {
      headers.set('Accept-Ranges', 'bytes');
      const range = req.headers.get('Range');
      if (range !== undefined && (req.method === 'GET' || req.method === 'HEAD') && ifRangeAllows(req.headers, v)) {
        const r = parseRange(range, size);
        if (r.kind === 'unsatisfiable') {
          headers.set('Content-Range', `bytes */${size}`);
          return new Response(416, null, { headers, copyHeaders: false });
        }
        if (r.kind === 'range') {
          status = 206;
          start = r.start;
          length = r.end - r.start + 1;
          headers.set('Content-Range', `bytes ${r.start}-${r.end}/${size}`);
        }
      }
    }
    headers.delete('Content-Length');
    headers.delete('Transfer-Encoding');
    if (req.method === 'HEAD') {
      // The head a GET would get, without touching the content.
      headers.set('Content-Length', String(length));
      return new Response(status, null, { headers, copyHeaders: false });
    }
    if (length === 0) return new Response(status, new Uint8Array(0), { headers, copyHeaders: false });
    const body = src.body(start, length);
    owned = false;
    return new Response(status, body, { headers, copyHeaders: false, contentLength: length });
  } finally {
    if (owned) src.release();
  }
}

function preconditionHeaders(h: Headers): Headers {
  for (const n of NOT_ON_304) h.delete(n);
  return h;
}

function isFileHandle(x: unknown): x is FileHandle {
  return typeof x === 'object' && x !== null && typeof (x as FileHandle).fd === 'number' && typeof (x as FileHandle).close === 'function' && typeof (x as FileHandle).stat === 'function';
}

/** @internal Milliseconds of a `modtime` option, or null; throws on a wrong type. */
export function modtimeMs(x: unknown, fn: string): number | null {
  if (x === undefined || x === null) return null;
  if (x instanceof Date) {
    const t = x.getTime();
    if (Number.isNaN(t)) throw new ArgumentError(`${fn}: modtime is an invalid Date`);
    return t;
  }
  if (typeof x === 'number' && Number.isFinite(x)) return x;
  throw new ArgumentError(`${fn}: modtime must be a Date or milliseconds since the epoch, got ${typeof x}`);
}

function optString(x: unknown, what: string): string | null {
  if (x === undefined || x === null) return null;
  if (typeof x !== 'string') throw new ArgumentError(`serveContent: ${what} must be a string, got ${typeof x}`);
  return x;
}

/**
 * Answers `req` with `source` (bytes, a string, or an open FileHandle) per the rules of
 * conditional and range requests: 304 or 412 when a precondition says so, 206 for one
 * satisfiable byte range, 416 (with `Content-Range: bytes *\/size`) for an unsatisfiable one,
 * and the whole content (200) otherwise, including for several ranges or another unit.
 * Sets `Content-Type` (option, else by `name`, else sniffed), `Content-Length`,
 * `Last-Modified`, `ETag`, `Accept-Ranges` and `Content-Range` as they apply. Any method is
 * served (a precondition that fails on a non-GET gives 412); `serveFile` is the one that
 * limits methods.
 */
export async function serveContent(req: Request, source: ContentSource, options: ServeContentOptions = {}): Promise<Response> {
  if (!(req instanceof Request)) throw new ArgumentError('serveContent(req, source, options): req must be a Request');
  if (typeof options !== 'object' || options === null) throw new ArgumentError('serveContent: options must be an object');
  checkOptionKeys(options, SERVE_CONTENT_OPTIONS, 'serveContent');
  const name = optString(options.name, 'name') ?? '';
  const contentType = optString(options.contentType, 'contentType');
  // Refused now, with the caller on the stack, rather than by the serializer when the response goes out.
  if (contentType !== null) checkFieldValue('Content-Type', contentType);
  const etagOpt = optString(options.etag, 'etag');
  const etag = etagOpt === null ? null : normalizeEtag(etagOpt, 'serveContent: etag');
  const modtime = modtimeMs(options.modtime, 'serveContent');
  if (options.allowRanges !== undefined && typeof options.allowRanges !== 'boolean') throw new ArgumentError('serveContent: allowRanges must be a boolean');
  if (options.size !== undefined && options.size !== null && (!Number.isSafeInteger(options.size) || options.size < 0)) {
    throw new ArgumentError(`serveContent: size must be a non-negative integer, got ${String(options.size)}`);
  }
  const headers = new Headers(options.headers ?? undefined);
  let src: Source;
  if (typeof source === 'string') src = bytesSource(Buffer.from(source, 'utf8'));
  else if (source instanceof Uint8Array) src = bytesSource(source);
  else if (isFileHandle(source)) {
    const release = (): void => {
      source.close().catch(() => {});
    };
    let size: number;
    try {
      size = options.size ?? (await source.stat()).size;
    } catch (err) {
      release();
      throw err;
    }
    src = fdSource(source.fd, size, release);
  } else {
    throw new ArgumentError(`serveContent: source must be a Uint8Array, a string or a FileHandle, got ${source === null ? 'null' : typeof source}`);
  }
  return respondWithContent(req, src, { name, modtime, contentType, etag, headers, allowRanges: options.allowRanges ?? true });
}
