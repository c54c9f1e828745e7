/**
 * Request paths to file paths, safely. A request path is split into segments and
 * percent-decoded exactly once; anything that could step outside the served root, or that a
 * file system might read differently from us, makes the path invalid (400):
 *
 * - a `..` or `.` segment, before or after decoding (`%2e%2e`, `.%2E`);
 * - a backslash, raw or encoded (`%5c`): Windows reads it as a separator;
 * - NUL and other control characters, raw or encoded (`%00`);
 * - an empty segment (`//`): it would turn a canonical redirect into `//host/…`, a
 *   protocol-relative URL pointing at another site;
 * - a malformed escape (`%zz`, `%2`) or bytes that are not UTF-8;
 * - on Windows also `:` (drive letters, alternate data streams).
 *
 * Decoding once means a double-encoded `%252e%252e` becomes the literal name `%2e%2e`, which
 * names a file inside the root (normally missing: 404), never a parent directory.
 */
import { Buffer } from 'node:buffer';
import { sep } from 'node:path';

/** A request path split into decoded, safe segments. */
export interface DecodedPath {
  /** The path part of the target as sent (still encoded), without the query. */
  readonly rawPath: string;
  /** The query including its `?`, or `''`. */
  readonly query: string;
  /** Decoded segments after the leading `/`, without the empty one a trailing slash leaves. */
  readonly segments: readonly string[];
  /** True when the path ends with `/`. */
  readonly trailingSlash: boolean;
}

const utf8 = new TextDecoder('utf-8', { fatal: true });

/** Splits a request target into its raw path and query; absolute-form targets give their path. */
export function splitTarget(target: string): { rawPath: string; query: string } | null {
  let t = target;
  if (!t.startsWith('/')) {
    // Absolute form (`http://host/path`), as sent to proxies; anything else (`*`, authority form) has no file path.
    const m = /^[A-Za-z][A-Za-z0-9+.-]*:\/\/[^/?#]*/.exec(t);
    if (m === null) return null;
    t = t.slice(m[0].length);
    if (t === '' || t.startsWith('?')) t = '/' + t;
    if (!t.startsWith('/')) return null;
  }
  let end = t.length;
  const q = t.indexOf('?');
  const h = t.indexOf('#');
  if (h >= 0) end = h;
  if (q >= 0 && q < end) return { rawPath: t.slice(0, q), query: t.slice(q, end) };
  return { rawPath: t.slice(0, end), query: '' };
}

function isHex(c: number): boolean {
  return (c >= 0x30 && c <= 0x39) || (c >= 0x41 && c <= 0x46) || (c >= 0x61 && c <= 0x66);
}

/** Percent-decodes one segment strictly; null for a malformed escape or bytes that are not UTF-8. */
function decodeSegment(s: string): string | null {
  if (s.indexOf('%') < 0) return s;
  const bytes: number[] = [];
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c === 0x25) {
      if (i + 2 >= s.length) return null;
      const a = s.charCodeAt(i + 1);
      const b = s.charCodeAt(i + 2);
      if (!isHex(a) || !isHex(b)) return null;
      bytes.push(parseInt(s.slice(i + 1, i + 3), 16));
      i += 2;
    } else if (c < 0x80) {
      bytes.push(c);
    } else {
      // A raw non-ASCII character (not valid in a target, but be exact): its UTF-8 bytes.
      const cp = s.codePointAt(i)!;
      for (const byte of Buffer.from(String.fromCodePoint(cp), 'utf8')) bytes.push(byte);
      if (cp > 0xffff) i++;
    }
  }
  try {
    return utf8.decode(Uint8Array.from(bytes));
  } catch {
    return null;
  }
}

/** True when a decoded segment is unsafe to use as a file name component. */
export function isUnsafeSegment(seg: string, windows = sep === '\\'): boolean {
  if (seg === '' || seg === '.' || seg === '..') return true;
  for (let i = 0; i < seg.length; i++) {
    const c = seg.charCodeAt(i);
    // C0 controls (NUL included), DEL, `/` (from %2F: would change the segmentation), `\`.
    if (c < 0x20 || c === 0x7f || c === 0x2f || c === 0x5c) return true;
    if (windows && c === 0x3a) return true;
  }
  return false;
}

/**
 * Decodes a request target's path into safe segments, or returns `null` when the path is
 * unsafe or invalid (the file server answers 400).
 */
export function decodeRequestPath(target: string): DecodedPath | null {
  const split = splitTarget(target);
  if (split === null) return null;
  const { rawPath, query } = split;
  // Raw backslashes and controls are refused before decoding too.
  for (let i = 0; i < rawPath.length; i++) {
    const c = rawPath.charCodeAt(i);
    if (c < 0x20 || c === 0x7f || c === 0x5c) return null;
  }
  const trailingSlash = rawPath.length > 1 && rawPath.endsWith('/');
  const body = rawPath.slice(1, trailingSlash ? -1 : undefined);
  const segments: string[] = [];
  if (body !== '') {
    for (const raw of body.split('/')) {
      const seg = decodeSegment(raw);
      if (seg === null || isUnsafeSegment(seg)) return null;
      segments.push(seg);
    }
  }
  return { rawPath, query, segments, trailingSlash };
}

/**
 * True when decoded request path segments name a dotfile or something inside a
 * dot-directory (`.env`, `.git/config`): a segment starting with `.`, except `.well-known`
 * as the first one (RFC 8615's well-known URIs: ACME challenges, `security.txt`).
 */
export function isDotPath(segments: readonly string[]): boolean {
  for (let i = 0; i < segments.length; i++) {
    const seg = segments[i]!;
    if (seg.charCodeAt(0) === 0x2e && !(i === 0 && seg === '.well-known')) return true;
  }
  return false;
}

/**
 * True when a file-system path given to `serveFile` is unsafe: it contains NUL or a `..`
 * component (either separator is checked, so a Windows-style path cannot sneak one past).
 */
export function isUnsafeFsPath(p: string): boolean {
  if (p === '' || p.indexOf('\0') >= 0) return true;
  for (const part of p.split(/[\\/]/)) if (part === '..') return true;
  return false;
}

/** True when `real` is `root` or inside it (both absolute, resolved paths). */
export function isWithin(root: string, real: string): boolean {
  if (real === root) return true;
  const base = root.endsWith(sep) ? root : root + sep;
  return real.startsWith(base);
}
