/**
 * `serveFile(req, path, options)`: one file (or a directory's index file) from disk, streamed,
 * with the canonical-path redirects, 405/404/400, and the conditional and range handling of
 * {@link serveContent}.
 */
import type { Stats } from 'node:fs';
import { join } from 'node:path';
import { ArgumentError, Headers, Request, Response, checkFieldValue, checkOptionKeys } from '../../kernel/index.js';
import { normalizeEtag, weakStatEtag } from './etag.js';
import { closeFd, openServed, type Opened } from './open-file.js';
import { isUnsafeFsPath, splitTarget } from './path-safety.js';
import { fdSource, respondWithContent } from './serve-content.js';
import { contentTypeByName } from './content-type.js';
import { CODINGS, addVary, chooseCoding, type CompressionCoding } from '../compression/index.js';

/** How `ETag` is made: `'weak_stat'` (from size and modification time), a function of the path and stat, or a fixed tag. */
export type EtagOption = 'weak_stat' | ((path: string, stat: Stats) => string) | string;

/** Options of {@link serveFile} (all optional). */
export interface ServeFileOptions {
  /** The file that serves a directory. Default `index.html`. */
  indexFile?: string;
  /**
   * Redirect (301) to the canonical path: a directory without a trailing slash gets one, a
   * file with one loses it, a request for the index file itself goes to its directory. Default true.
   */
  redirectCanonical?: boolean;
  /** `ETag` policy; by default no ETag is sent. */
  etag?: EtagOption | null;
  /** The `Cache-Control` header to send, if any. */
  cacheControl?: string | null;
  /**
   * Serve files compressed ahead of time: for `file`, `file.br`, `file.zst` or `file.gz` when
   * it exists next to it (a regular file, inside the root) and the client's `Accept-Encoding`
   * takes that coding, with `Content-Encoding`, the original's `Content-Type`, and the
   * variant's own `ETag` and `Last-Modified` (its conditionals are answered against them).
   * `true` offers all three (br, then zstd, then gzip when the client weighs them alike); a
   * list offers those, in its order. Every answer for such a file gets `Vary: Accept-Encoding`.
   * A request with `Range` gets the original. Default false.
   */
  precompressed?: boolean | CompressionCoding[];
}

/** @internal Options checked once. */
export interface ResolvedFileOptions {
  indexFile: string;
  redirectCanonical: boolean;
  etag: 'weak_stat' | ((path: string, stat: Stats) => string) | string | null;
  cacheControl: string | null;
  /** The codings to look for variants of, most preferred first; empty when off. */
  precompressed: readonly CompressionCoding[];
}

/** @internal What the URL said, for the canonical redirects. */
export interface UrlInfo {
  /** The path as sent (encoded), without the query. */
  rawPath: string;
  /** `?…` or ''. */
  query: string;
  trailingSlash: boolean;
  /** The last segment, decoded ('' for `/` or a trailing slash). */
  lastSegment: string;
}

/** @internal Marker: the file does not exist (the caller decides between 404 and a fallback). */
export const MISSING: unique symbol = Symbol('missing');

const ALLOW = 'GET, HEAD';

/** @internal The names of {@link ServeFileOptions}. */
export const SERVE_FILE_OPTIONS: readonly (keyof ServeFileOptions)[] = ['indexFile', 'redirectCanonical', 'etag', 'cacheControl', 'precompressed'];
const SERVE_FILE_KEYS: ReadonlySet<string> = new Set(SERVE_FILE_OPTIONS);

/** @internal Validates {@link ServeFileOptions}; `known` are the names the caller takes (`fileServer` takes more). */
export function resolveFileOptions(o: ServeFileOptions, fn: string, known: ReadonlySet<string> = SERVE_FILE_KEYS): ResolvedFileOptions {
  if (typeof o !== 'object' || o === null) throw new ArgumentError(`${fn}: options must be an object`);
  checkOptionKeys(o, known, fn);
  const indexFile = o.indexFile ?? 'index.html';
  if (typeof indexFile !== 'string' || indexFile === '' || /[\\/\0]/.test(indexFile) || indexFile === '.' || indexFile === '..') {
    throw new ArgumentError(`${fn}: indexFile must be a plain file name (no slashes), got ${JSON.stringify(indexFile)}`);
  }
  if (o.redirectCanonical !== undefined && typeof o.redirectCanonical !== 'boolean') throw new ArgumentError(`${fn}: redirectCanonical must be a boolean`);
  let etag: ResolvedFileOptions['etag'] = null;
  if (o.etag !== undefined && o.etag !== null) {
    if (typeof o.etag === 'function') etag = o.etag;
    else if (o.etag === 'weak_stat') etag = 'weak_stat';
    else if (typeof o.etag === 'string') etag = normalizeEtag(o.etag, `${fn}: etag`);
    else throw new ArgumentError(`${fn}: etag must be 'weak_stat', a function (path, stat) => string, or a string`);
  }
  const cc = o.cacheControl ?? null;
  if (cc !== null) {
    if (typeof cc !== 'string') throw new ArgumentError(`${fn}: cacheControl must be a header value string, got ${typeof cc}`);
    checkFieldValue('Cache-Control', cc);
  }
  return { indexFile, redirectCanonical: o.redirectCanonical ?? true, etag, cacheControl: cc, precompressed: precompressedOption(o.precompressed, fn) };
}

function precompressedOption(v: unknown, fn: string): readonly CompressionCoding[] {
  if (v === undefined || v === false) return [];
  if (v === true) return CODINGS;
  if (Array.isArray(v) && v.every((c) => CODINGS.includes(c as CompressionCoding))) return Object.freeze([...new Set(v as CompressionCoding[])]);
  throw new ArgumentError(`${fn}: precompressed must be a boolean or a list of 'br', 'zstd', 'gzip'`);
}

/** The file name suffix of a precompressed variant. */
const VARIANT_SUFFIX: Readonly<Record<CompressionCoding, string>> = Object.freeze({ br: '.br', zstd: '.zst', gzip: '.gz' });

/** The 405 answer for methods other than GET and HEAD. */
export function methodNotAllowed(): Response {
  return new Response(405, null, { headers: { Allow: ALLOW } });
}

/** @internal 400 for an unsafe or invalid path. */
export function badPath(): Response {
  return new Response(400, 'invalid request path', { headers: { 'Content-Type': 'text/plain; charset=utf-8' } });
}

function notFound(): Response {
  return new Response(404, null);
}

function redirect(location: string): Response {
  // Never `//host` or `/\host`: browsers read those as another site.
  const loc = location.replace(/^[/\\]+/, '/');
  return new Response(301, null, { headers: { Location: loc } });
}

function urlInfoOf(target: string): UrlInfo {
  const split = splitTarget(target) ?? { rawPath: '/', query: '' };
  const rawPath = split.rawPath === '' ? '/' : split.rawPath;
  const trailingSlash = rawPath.endsWith('/');
  const rawLast = trailingSlash ? '' : rawPath.slice(rawPath.lastIndexOf('/') + 1);
  let lastSegment = rawLast;
  try {
    lastSegment = decodeURIComponent(rawLast);
  } catch {
    // keep it raw: it only decides whether this is a request for the index file
  }
  return { rawPath, query: split.query, trailingSlash, lastSegment };
}

/** The tag of the file at `path` (a variant's path for a variant); a fixed tag gets the coding as a suffix, so no two variants share it. */
function tagFor(o: ResolvedFileOptions, path: string, stat: Stats, coding: CompressionCoding | null): string | null {
  if (o.etag === null) return null;
  if (o.etag === 'weak_stat') return weakStatEtag(stat);
  if (typeof o.etag === 'function') return normalizeEtag(o.etag(path, stat), 'the etag function result');
  return coding === null ? o.etag : `${o.etag.slice(0, -1)}-${coding}"`;
}

/**
 * @internal Streams an opened regular file through the content core; the descriptor goes with
 * the response. `coding`: `f` is the precompressed variant of `path` in that coding.
 */
export function respondWithFile(req: Request, path: string, f: Opened, o: ResolvedFileOptions, coding: CompressionCoding | null = null): Promise<Response> {
  let etag: string | null;
  try {
    etag = tagFor(o, coding === null ? path : path + VARIANT_SUFFIX[coding], f.stat, coding);
  } catch (err) {
    closeFd(f.fd);
    throw err;
  }
  const headers = new Headers();
  if (o.cacheControl !== null) headers.set('Cache-Control', o.cacheControl);
  if (o.precompressed.length > 0) addVary(headers);
  if (coding !== null) headers.set('Content-Encoding', coding);
  return respondWithContent(
    req,
    fdSource(f.fd, f.stat.size, () => closeFd(f.fd)),
    {
      name: path,
      modtime: f.stat.mtimeMs,
      // The original's type: the variant's bytes would sniff as compressed data.
      contentType: coding === null ? null : (contentTypeByName(path) ?? 'application/octet-stream'),
      etag,
      headers,
      allowRanges: true,
    },
  );
}

/**
 * `f` (the file at `path`), or its precompressed variant in the best coding the client takes
 * that exists: each coding in the client's order is looked for until one is found.
 */
async function respondWithVariant(req: Request, path: string, f: Opened, o: ResolvedFileOptions, rootReal: string | null): Promise<Response> {
  if (o.precompressed.length > 0 && !req.headers.has('Range')) {
    const all = req.headers.getAll('Accept-Encoding');
    const ae = all.length === 0 ? undefined : all.join(',');
    let offered = o.precompressed;
    for (;;) {
      const coding = chooseCoding(ae, offered);
      if (coding === 'identity') break;
      let v: Opened | 'missing' | 'forbidden';
      try {
        v = await openServed(path + VARIANT_SUFFIX[coding], rootReal);
      } catch (err) {
        closeFd(f.fd);
        throw err;
      }
      if (typeof v !== 'string') {
        if (v.stat.isFile()) {
          closeFd(f.fd);
          return respondWithFile(req, path, v, o, coding);
        }
        closeFd(v.fd);
      }
      offered = offered.filter((c) => c !== coding);
    }
  }
  return respondWithFile(req, path, f, o);
}

/**
 * @internal The shared body of serveFile and fileServer: `path` is already known safe;
 * `rootReal` (when set) confines the real path of what is opened.
 */
export async function serveFileAt(req: Request, path: string, url: UrlInfo, o: ResolvedFileOptions, rootReal: string | null): Promise<Response | typeof MISSING> {
  const opened = await openServed(path, rootReal);
  if (opened === 'missing') return MISSING;
  if (opened === 'forbidden') return new Response(403, null);
  let f = opened;
  let servedPath = path;
  if (f.stat.isDirectory()) {
    closeFd(f.fd);
    if (o.redirectCanonical && !url.trailingSlash) return redirect(url.rawPath + '/' + url.query);
    servedPath = join(path, o.indexFile);
    const idx = await openServed(servedPath, rootReal);
    if (idx === 'missing') return MISSING;
    if (idx === 'forbidden') return new Response(403, null);
    f = idx;
  } else if (o.redirectCanonical) {
    if (url.trailingSlash) {
      closeFd(f.fd);
      return redirect(url.rawPath.slice(0, -1) + url.query);
    }
    if (url.lastSegment === o.indexFile) {
      closeFd(f.fd);
      return redirect(url.rawPath.slice(0, url.rawPath.lastIndexOf('/') + 1) + url.query);
    }
  }
  if (!f.stat.isFile()) {
    // A directory named like the index file, a FIFO, a device: nothing to serve.
    closeFd(f.fd);
    return MISSING;
  }
  return respondWithVariant(req, servedPath, f, o, rootReal);
}

/**
 * Serves the file at `path` (a file-system path) for `req`. A directory is served by its
 * index file; with `redirectCanonical` (default) a directory request without a trailing
 * slash, a file request with one, and a request for the index file itself get a 301 to the
 * canonical URL path. Methods other than GET and HEAD get 405 (with `Allow: GET, HEAD`); a
 * missing file 404; an unsafe path (NUL, a `..` component) 400. The file is streamed from
 * disk; conditionals and ranges follow {@link serveContent}.
 */
export async function serveFile(req: Request, path: string, options: ServeFileOptions = {}): Promise<Response> {
  if (!(req instanceof Request)) throw new ArgumentError('serveFile(req, path, options): req must be a Request');
  if (typeof path !== 'string') throw new ArgumentError(`serveFile: path must be a string, got ${typeof path}`);
  const o = resolveFileOptions(options, 'serveFile');
  if (req.method !== 'GET' && req.method !== 'HEAD') return methodNotAllowed();
  if (isUnsafeFsPath(path)) return badPath();
  const res = await serveFileAt(req, path, urlInfoOf(req.target), o, null);
  return res === MISSING ? notFound() : res;
}
