/**
 * The compression plugin: compresses server responses with gzip, br, or zstd (where the
 * running Node's zlib has it), as the client's `Accept-Encoding` asks.
 *
 * One `server.onResponseHead` tap (`Stage.COMPRESS`, after taps that set headers). For each
 * response it decides, in this order:
 * - left alone: a status without content (1xx, 204), 206 or a response with `Content-Range`, a
 *   request with `Range` (ranges are answered from the unencoded representation), a response
 *   that has `Content-Encoding` already, `Cache-Control: no-transform`, a CONNECT answer, a
 *   type that is compressed already or not said (see {@link isCompressibleType}), or a body
 *   whose length is known and below `threshold`;
 * - `Vary: Accept-Encoding` is added (merged with an existing `Vary`) to every other response,
 *   since its encoding now depends on that field; a 304 (unless its type is one left alone)
 *   gets it too, and its ETag in the form the client stored (weak when `If-None-Match` sent
 *   the weak form), and nothing else;
 * - the coding is negotiated ({@link chooseCoding}); identity leaves the body as it is.
 *   Otherwise `Content-Encoding` is set, `Content-Length` dropped (or set to the compressed
 *   length) and a strong `ETag` made weak (`"x"` → `W/"x"`): the encoded bytes differ from
 *   the representation the tag names, and `If-None-Match` (weak comparison) still matches
 *   what the handler checks, with or without the `W/`.
 * - A body in memory (string, bytes) up to {@link WHOLE_MAX} is compressed at once, in one
 *   zlib call, and keeps a `Content-Length`; HEAD gets the same head (its body compressed to
 *   learn the length, then dropped). A larger one, a streamed body (a file, SSE) and what a
 *   stream handler writes go through a zlib stream (`encodeResponseBody`), flushed at each
 *   event or write when the length is unknown, so nothing waits in the compressor: SSE events
 *   arrive one by one.
 */
import { Buffer } from 'node:buffer';
import { AbstractBody, ArgumentError, Stage, checkOptionKeys, definePlugin, encodeResponseBody, headerContains, type Headers, type Request, type Response } from '../../kernel/index.js';
import { CODINGS, CodingChooser, type CompressionCoding } from './negotiate.js';
import { DEFAULT_LEVELS, ZlibEncoder, compressWhole, hasZstd, type CompressionLevels, type Levels } from './encoders.js';

export { chooseCoding, CodingChooser, CODINGS, MAX_ELEMENTS, type CompressionCoding } from './negotiate.js';
export { ZlibEncoder, hasZstd, DEFAULT_LEVELS, type CompressionLevels } from './encoders.js';

const NAME = 'compression';

/** Options of the compression plugin (all optional). */
export interface CompressionOptions {
  /**
   * The codings to offer, most preferred first (a client weighing two alike gets the first).
   * Default `['br', 'zstd', 'gzip']`, zstd only when the running Node has it. Naming zstd on a
   * Node without it is an `ArgumentError`.
   */
  encodings?: CompressionCoding[];
  /** Bodies of a known length below this many bytes are sent as they are. Default 1024. */
  threshold?: number;
  /** Compression levels per coding. */
  levels?: CompressionLevels;
  /**
   * Decides by media type (the `Content-Type` value without parameters, lowercase) whether a
   * response may be compressed. Default {@link isCompressibleType}.
   */
  types?: (mediaType: string) => boolean;
}

const OPTION_KEYS: ReadonlySet<string> = new Set(['encodings', 'threshold', 'levels', 'types'] satisfies (keyof CompressionOptions)[]);

/**
 * Bodies in memory up to this size are compressed in one call on the event loop (cheapest,
 * and they keep a `Content-Length`); larger ones go through a zlib stream, whose work runs on
 * libuv's thread pool, so one large body does not stall every other connection.
 */
export const WHOLE_MAX = 1024 * 1024;

/** Default of {@link CompressionOptions.threshold}. */
export const DEFAULT_THRESHOLD = 1024;

// Application types that are compressed containers already (or not worth a pass).
const COMPRESSED_APPLICATION = new Set([
  'application/zip',
  'application/gzip',
  'application/x-gzip',
  'application/zstd',
  'application/x-bzip2',
  'application/x-xz',
  'application/x-7z-compressed',
  'application/x-rar-compressed',
  'application/vnd.rar',
  'application/x-compress',
  'application/x-brotli',
  'application/pdf',
  'application/octet-stream',
  'application/java-archive',
  'application/epub+zip',
  'application/vnd.openxmlformats-officedocument.wordprocessingml.document',
  'application/vnd.openxmlformats-officedocument.spreadsheetml.sheet',
  'application/vnd.openxmlformats-officedocument.presentationml.presentation',
]);

/**
 * The default type filter: true except for what is compressed already or opaque: images
 * (but SVG, BMP and icons), audio, video, WOFF fonts, archives and compressed files, PDF,
 * `application/octet-stream`, `multipart/*`.
 */
export function isCompressibleType(mediaType: string): boolean {
  const slash = mediaType.indexOf('/');
  if (slash <= 0) return false;
  const top = mediaType.slice(0, slash);
  if (top === 'text') return true;
  if (top === 'image') return mediaType === 'image/svg+xml' || mediaType === 'image/bmp' || mediaType === 'image/x-icon' || mediaType === 'image/vnd.microsoft.icon';
  if (top === 'audio' || top === 'video' || top === 'multipart') return false;
  if (top === 'font') return mediaType !== 'font/woff' && mediaType !== 'font/woff2';
  return !COMPRESSED_APPLICATION.has(mediaType);
}

/** The media type of a `Content-Type` value: before any parameter, trimmed, lowercase. */
function mediaTypeOf(value: string): string {
  const semi = value.indexOf(';');
  return (semi < 0 ? value : value.slice(0, semi)).trim().toLowerCase();
}

/** Adds `Accept-Encoding` to `Vary`, unless it is listed there or `Vary: *`. */
export function addVary(headers: Headers): void {
  if (!headers.has('Vary')) {
    headers.set('Vary', 'Accept-Encoding');
    return;
  }
  if (headerContains(headers, 'Vary', 'accept-encoding') || headerContains(headers, 'Vary', '*')) return;
  headers.push('Vary', 'Accept-Encoding');
}

/** Makes a strong `ETag` weak: the encoded bytes are not the ones a strong tag promises. */
function weakenEtag(headers: Headers): void {
  const tag = headers.get('ETag');
  if (tag !== undefined && tag.startsWith('"')) headers.set('ETag', `W/${tag}`);
}

function checkLevel(v: unknown, min: number, max: number, what: string): number {
  if (typeof v !== 'number' || !Number.isInteger(v) || v < min || v > max) {
    throw new ArgumentError(`register(compression, …): levels.${what} must be an integer ${min}..${max}, got ${String(v)}`);
  }
  return v;
}

interface Resolved {
  readonly chooser: CodingChooser;
  readonly threshold: number;
  readonly levels: Levels;
  readonly types: (mediaType: string) => boolean;
}

function resolve(o: CompressionOptions): Resolved {
  if (typeof o !== 'object' || o === null) throw new ArgumentError('register(compression, …): options must be an object');
  checkOptionKeys(o, OPTION_KEYS, 'register(compression, …)');
  const zstd = hasZstd();
  let encodings: CompressionCoding[];
  if (o.encodings === undefined) encodings = CODINGS.filter((c) => c !== 'zstd' || zstd);
  else {
    if (!Array.isArray(o.encodings) || o.encodings.length === 0) throw new ArgumentError("register(compression, …): encodings must be a non-empty array of 'br', 'zstd', 'gzip'");
    for (const c of o.encodings) {
      if (!CODINGS.includes(c)) throw new ArgumentError(`register(compression, …): unknown encoding ${JSON.stringify(c)} (one of 'br', 'zstd', 'gzip')`);
      if (c === 'zstd' && !zstd) throw new ArgumentError(`register(compression, …): zstd needs a Node whose zlib has it (22.15 or later); this is ${process.version}`);
    }
    encodings = [...new Set(o.encodings)];
  }
  const threshold = o.threshold ?? DEFAULT_THRESHOLD;
  if (typeof threshold !== 'number' || !Number.isSafeInteger(threshold) || threshold < 0) {
    throw new ArgumentError(`register(compression, …): threshold must be a whole number of bytes >= 0, got ${String(threshold)}`);
  }
  const l = o.levels ?? {};
  if (typeof l !== 'object' || l === null) throw new ArgumentError('register(compression, …): levels must be an object { gzip?, br?, zstd? }');
  checkOptionKeys(l, new Set(['gzip', 'br', 'zstd']), 'register(compression, …): levels');
  const levels: Levels = {
    gzip: l.gzip === undefined ? DEFAULT_LEVELS.gzip : checkLevel(l.gzip, 1, 9, 'gzip'),
    br: l.br === undefined ? DEFAULT_LEVELS.br : checkLevel(l.br, 0, 11, 'br'),
    zstd: l.zstd === undefined ? DEFAULT_LEVELS.zstd : checkLevel(l.zstd, 1, 22, 'zstd'),
  };
  const types = o.types ?? isCompressibleType;
  if (typeof types !== 'function') throw new ArgumentError('register(compression, …): types must be a function (mediaType) => boolean');
  return { chooser: new CodingChooser(encodings), threshold, levels, types };
}

/** The body length the response has when known: in memory, its `contentLength`, else its `Content-Length`; -1 when unknown. */
function knownLength(res: Response): number {
  const body = res.body;
  if (typeof body === 'string') return Buffer.byteLength(body, 'utf8');
  if (body instanceof Uint8Array) return body.length;
  if (body instanceof AbstractBody) return res.contentLength >= 0 ? res.contentLength : body.length;
  // No body on the Response: a HEAD answer, or a stream handler's head (its writes follow).
  const cl = res.headers.get('Content-Length');
  if (cl === undefined) return -1;
  const n = Number(cl);
  return Number.isSafeInteger(n) && n >= 0 ? n : -1;
}

/** The `compression` plugin (see the module comment). */
export const compression = definePlugin({
  name: NAME,
  register(kernel, options: CompressionOptions) {
    const o = resolve(options);
    kernel.hooks.server.onResponseHead.tap({ name: NAME, stage: Stage.COMPRESS }, (res: Response, req: Request) => {
      const status = res.status;
      if (status < 200 || status === 204 || status === 206 || req.method === 'CONNECT') return;
      const h = res.headers;
      if (h.has('Content-Encoding') || h.has('Content-Range') || headerContains(h, 'Cache-Control', 'no-transform')) return;
      const ct = h.get('Content-Type');
      if (status === 304) {
        // A 304 usually has no Content-Type (it describes the stored response): it may vary,
        // and its tag is the one the client stored, weak when that response was encoded.
        if (ct !== undefined && !o.types(mediaTypeOf(ct))) return;
        addVary(h);
        const tag = h.get('ETag');
        const inm = req.headers.get('If-None-Match');
        if (tag !== undefined && inm !== undefined && tag.startsWith('"') && inm.includes(`W/${tag}`)) weakenEtag(h);
        return;
      }
      if (ct === undefined || !o.types(mediaTypeOf(ct))) return;
      if (req.headers.has('Range')) return;
      const known = knownLength(res);
      if (known >= 0 && known < o.threshold) return;
      addVary(h);
      const coding = o.chooser.choose(req.headers);
      if (coding === 'identity') return;
      h.set('Content-Encoding', coding);
      weakenEtag(h);
      h.delete('Content-Length');
      const body = res.body;
      if ((typeof body === 'string' || body instanceof Uint8Array) && known <= WHOLE_MAX) {
        const out = compressWhole(coding, o.levels, typeof body === 'string' ? Buffer.from(body, 'utf8') : body);
        res.body = out;
        res.contentLength = out.length;
        return;
      }
      if (body === null && req.method === 'HEAD') return; // the head only: no length, as a streamed GET has none
      encodeResponseBody(res, new ZlibEncoder(coding, o.levels));
    });
  },
});
