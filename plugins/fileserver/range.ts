/**
 * The `Range` header (RFC 9110 §14.2): one byte range is served as 206; an unsatisfiable one
 * gets 416; several ranges, another unit, or a malformed value are ignored (the whole
 * content, 200), as the reference says.
 */

/** What to do with a request's `Range`. */
export type RangeResult = { readonly kind: 'ignore' } | { readonly kind: 'unsatisfiable' } | { readonly kind: 'range'; readonly start: number; readonly end: number };

const IGNORE: RangeResult = Object.freeze({ kind: 'ignore' });
const UNSATISFIABLE: RangeResult = Object.freeze({ kind: 'unsatisfiable' });

const SPEC = /^(\d*)[ \t]*-[ \t]*(\d*)$/;

/** Parses `value` against a representation of `size` bytes; `end` is inclusive. */
export function parseRange(value: string, size: number): RangeResult {
  const eq = value.indexOf('=');
  if (eq < 0) return IGNORE;
  // Range units are case-insensitive (§14.1).
  if (value.slice(0, eq).trim().toLowerCase() !== 'bytes') return IGNORE;
  const specs: string[] = [];
  for (const part of value.slice(eq + 1).split(',')) {
    const p = part.trim();
    if (p !== '') specs.push(p);
  }
  if (specs.length !== 1) return IGNORE;
  const m = SPEC.exec(specs[0]!);
  if (m === null) return IGNORE;
  const first = m[1]!;
  const last = m[2]!;
  if (first === '' && last === '') return IGNORE;
  if (first === '') {
    // Suffix range: the last N bytes.
    const n = Number(last);
    if (n === 0 || size === 0) return UNSATISFIABLE;
    return { kind: 'range', start: Math.max(0, size - n), end: size - 1 };
  }
  const start = Number(first);
  if (last !== '') {
    const end = Number(last);
    if (end < start) return IGNORE; // invalid, not unsatisfiable
    if (start >= size) return UNSATISFIABLE;
    return { kind: 'range', start, end: Math.min(end, size - 1) };
  }
  if (start >= size) return UNSATISFIABLE;
  return { kind: 'range', start, end: size - 1 };
}
