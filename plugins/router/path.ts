/** The path of a request target, and percent-decoding of its segments. */

/**
 * The path of a request target: origin form (`/a/b?q`) up to `?` or `#`; absolute form
 * (`http://h/a/b`, which RFC 9112 §3.2.2 says a server must accept) by its path; anything
 * else (`*`, authority form) has no path and matches no route.
 */
export function targetPath(target: string): string | null {
  if (target.charCodeAt(0) === 0x2f /* / */) {
    let end = target.indexOf('?');
    if (end < 0) end = target.length;
    const hash = target.indexOf('#');
    if (hash >= 0 && hash < end) end = hash;
    return end === target.length ? target : target.slice(0, end);
  }
  if (!target.includes('://')) return null;
  try {
    return new URL(target).pathname;
  } catch {
    return null;
  }
}

/**
 * Percent-decodes one segment (`%2F` stays inside the segment as `/`). A malformed escape
 * (`%zz`, a broken UTF-8 sequence) leaves the segment as it came, so it can still match a
 * literal spelled the same way but never turns into something else.
 */
export function decodeSegment(s: string): string {
  if (!s.includes('%')) return s;
  try {
    return decodeURIComponent(s);
  } catch {
    return s;
  }
}
