/**
 * `fileServer(root, options)`: a request handler serving the files under `root`.
 */
import fs from 'node:fs';
import { extname, join } from 'node:path';
import { ArgumentError, Response, type Request, type RequestHandler } from '../../kernel/index.js';
import { decodeRequestPath, isDotPath, isUnsafeFsPath, splitTarget } from './path-safety.js';
import { MISSING, SERVE_FILE_OPTIONS, badPath, methodNotAllowed, resolveFileOptions, serveFileAt, type ServeFileOptions, type UrlInfo } from './serve-file.js';

/** @internal Marker: the request path is unsafe or invalid (the handler answers 400). */
export const INVALID: unique symbol = Symbol('invalid');

/**
 * What {@link fileServer} does with a request for a dotfile or for something inside a
 * dot-directory (`/.env`, `/.git/config`, `/%2eenv`): `'ignore'` answers as if it did not
 * exist (404; the plugin goes on to the router), `'deny'` answers 403, `'allow'` serves it.
 * `/.well-known/…` (RFC 8615) is served under every policy.
 */
export type DotfilesPolicy = 'ignore' | 'allow' | 'deny';

const DOTFILES: readonly DotfilesPolicy[] = ['ignore', 'allow', 'deny'];

/** Options of {@link fileServer} (all optional): those of `serveFile` plus the three below. */
export interface FileServerOptions extends ServeFileOptions {
  /**
   * Dotfiles and dot-directories (see {@link DotfilesPolicy}). Default `'ignore'`: a site's
   * `.env`, `.git/` or `.htpasswd` is not served by accident.
   */
  dotfiles?: DotfilesPolicy;
  /**
   * A file under `root` (such as `index.html`) answering a missing path whose last segment
   * does not look like a file name (no extension): client-side routes of a single-page app.
   * A missing asset-like path (`/app.js`) still gets 404.
   */
  spaFallback?: string | null;
  /**
   * A URL path prefix (such as `/static`) taken off the request path before it is mapped
   * under `root`; a request outside it gets 404. Default: none (the whole path maps).
   */
  prefix?: string;
}

/** @internal A compiled file server: the handler, and a variant telling "missing" apart for the plugin. */
export interface CompiledFileServer {
  readonly handler: RequestHandler;
  /** Like the handler, but `null` for a request outside the prefix, `MISSING` for a missing file, `INVALID` for an unsafe path. */
  readonly tryServe: (req: Request) => Promise<Response | typeof MISSING | typeof INVALID | null>;
}

const FILE_SERVER_OPTIONS: ReadonlySet<string> = new Set<string>([...SERVE_FILE_OPTIONS, 'spaFallback', 'prefix', 'dotfiles'] satisfies (keyof FileServerOptions)[]);

/** @internal Validates `dotfiles`. */
export function resolveDotfiles(v: unknown, fn: string): DotfilesPolicy {
  if (v === undefined) return 'ignore';
  if (!DOTFILES.includes(v as DotfilesPolicy)) {
    throw new ArgumentError(`${fn}: dotfiles must be 'ignore' (404, the default), 'deny' (403) or 'allow', got ${typeof v === 'string' ? JSON.stringify(v) : typeof v}`);
  }
  return v as DotfilesPolicy;
}

function normalizePrefix(p: unknown): string {
  if (p === undefined || p === null || p === '' || p === '/') return '';
  if (typeof p !== 'string' || !p.startsWith('/') || p.includes('?') || p.includes('#')) {
    throw new ArgumentError(`fileServer: prefix must be a URL path starting with '/', got ${JSON.stringify(p)}`);
  }
  return p.endsWith('/') ? p.slice(0, -1) : p;
}

/** @internal Builds a file server (shared by {@link fileServer} and the plugin). */
export function compileFileServer(root: string, options: FileServerOptions, fn = 'fileServer'): CompiledFileServer {
  if (typeof root !== 'string' || root === '') throw new ArgumentError(`${fn}(root, options): root must be a directory path string, got ${typeof root === 'string' ? 'an empty string' : typeof root}`);
  if (typeof options !== 'object' || options === null) throw new ArgumentError(`${fn}: options must be an object`);
  let rootReal: string;
  try {
    rootReal = fs.realpathSync.native(root);
    if (!fs.statSync(rootReal).isDirectory()) throw new Error('not a directory');
  } catch {
    throw new ArgumentError(`${fn}(root): ${JSON.stringify(root)} is not an existing directory`);
  }
  const o = resolveFileOptions(options, fn, FILE_SERVER_OPTIONS);
  const prefix = normalizePrefix(options.prefix);
  const dotfiles = resolveDotfiles(options.dotfiles, fn);
  const spa = options.spaFallback ?? null;
  if (spa !== null && (typeof spa !== 'string' || isUnsafeFsPath(spa) || spa.startsWith('/'))) {
    throw new ArgumentError(`${fn}: spaFallback must be a path relative to root without '..', got ${JSON.stringify(spa)}`);
  }
  const spaPath = spa === null ? null : join(rootReal, spa);
  const spaOptions = { ...o, redirectCanonical: false };

  async function tryServe(req: Request): Promise<Response | typeof MISSING | typeof INVALID | null> {
    let skip = 0;
    if (prefix !== '') {
      // Outside the prefix is not this server's business, whatever the method or path; the
      // prefix is compared on the raw path, segment-aligned.
      const split = splitTarget(req.target);
      if (split === null || !(split.rawPath === prefix || split.rawPath.startsWith(prefix + '/'))) return null;
      skip = prefix.split('/').length - 1;
    }
    if (req.method !== 'GET' && req.method !== 'HEAD') return methodNotAllowed();
    const d = decodeRequestPath(req.target);
    if (d === null) return INVALID;
    const segments = skip === 0 ? d.segments : d.segments.slice(skip);
    // On the decoded segments, so `%2eenv` and `%2Egit/config` are dotfiles too.
    if (dotfiles !== 'allow' && isDotPath(segments)) return dotfiles === 'deny' ? new Response(403, null) : MISSING;
    const fsPath = segments.length === 0 ? rootReal : join(rootReal, ...segments);
    const last = d.trailingSlash || segments.length === 0 ? '' : segments[segments.length - 1]!;
    const url: UrlInfo = { rawPath: d.rawPath, query: d.query, trailingSlash: d.trailingSlash || d.rawPath === '/', lastSegment: last };
    const res = await serveFileAt(req, fsPath, url, o, rootReal);
    if (res !== MISSING || spaPath === null) return res;
    // Client-side routes fall back to the app's page; asset-like names stay 404.
    if (last !== '' && extname(last) !== '') return MISSING;
    return serveFileAt(req, spaPath, url, spaOptions, rootReal);
  }

  const handler: RequestHandler = async (req) => {
    const res = await tryServe(req);
    if (res === INVALID) return badPath();
    return res === null || res === MISSING ? new Response(404, null) : res;
  };
  return { handler, tryServe };
}

/**
 * A request handler serving the files under the directory `root` through `serveFile`: the
 * request path is percent-decoded once and mapped under `root`; unsafe paths (`..`, encoded
 * `%2e%2e`, backslashes, NUL, empty segments) get 400, and a file whose real path (symlinks
 * resolved) is outside `root` is treated as missing (404). Dotfiles and dot-directories are
 * treated as missing too, unless `dotfiles` says otherwise. With `spaFallback`, a missing path
 * whose last segment has no extension gets that file instead. Throws `ArgumentError` when
 * `root` is not an existing directory. Works with `serve` directly and with stream servers
 * through `streamHandler`.
 */
export function fileServer(root: string, options: FileServerOptions = {}): RequestHandler {
  return compileFileServer(root, options).handler;
}
