/**
 * Entity tags (RFC 9110 §8.8.3): making them, checking them, and comparing them with the
 * lists of `If-Match` / `If-None-Match` (strong and weak comparison, §8.8.3.2).
 */
import type { Stats } from 'node:fs';
import { ArgumentError } from '../../kernel/index.js';

/** `W/"<size hex>-<mtime ms hex>"`: the `etag: 'weak_stat'` tag, from size and modification time. */
export function weakStatEtag(stat: Pick<Stats, 'size' | 'mtimeMs'>): string {
  return `W/"${stat.size.toString(16)}-${Math.floor(stat.mtimeMs).toString(16)}"`;
}

function validOpaque(s: string): boolean {
  // etagc = %x21 / %x23-7E / obs-text
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c === 0x22 || c < 0x21 || c === 0x7f || c > 0xff) return false;
  }
  return true;
}

/**
 * A tag as sent in `ETag`: `"x"` and `W/"x"` are kept; a bare `x` is quoted (a strong tag).
 * Throws `ArgumentError` for characters a tag cannot hold (`"`, spaces, controls).
 */
export function normalizeEtag(tag: string, what = 'etag'): string {
  if (typeof tag !== 'string') throw new ArgumentError(`${what} must be a string, got ${typeof tag}`);
  let weak = false;
  let s = tag;
  if (s.startsWith('W/"')) {
    weak = true;
    s = s.slice(2);
  }
  if (s.length >= 2 && s.startsWith('"') && s.endsWith('"')) s = s.slice(1, -1);
  else if (weak || s.startsWith('W/')) throw new ArgumentError(`${what} ${JSON.stringify(tag)} is not a valid entity tag`);
  if (!validOpaque(s)) throw new ArgumentError(`${what} ${JSON.stringify(tag)} holds a character an entity tag cannot (", space or control)`);
  return `${weak ? 'W/' : ''}"${s}"`;
}

/** True when a (normalized) tag is weak. */
export function isWeak(tag: string): boolean {
  return tag.startsWith('W/');
}

function opaque(tag: string): string {
  return isWeak(tag) ? tag.slice(2) : tag;
}

/**
 * Parses an `If-Match` / `If-None-Match` value: `'*'`, or the list of tags (a tag may hold
 * commas inside its quotes). Malformed members are skipped.
 */
export function parseEtagList(value: string): '*' | string[] {
  const v = value.trim();
  if (v === '*') return '*';
  const out: string[] = [];
  let i = 0;
  const n = v.length;
  while (i < n) {
    const c = v.charCodeAt(i);
    if (c === 0x20 || c === 0x09 || c === 0x2c) {
      i++;
      continue;
    }
    let weak = false;
    if (v.startsWith('W/', i)) {
      weak = true;
      i += 2;
    }
    if (v.charCodeAt(i) !== 0x22) {
      // Not a tag: skip to the next comma.
      while (i < n && v.charCodeAt(i) !== 0x2c) i++;
      continue;
    }
    const close = v.indexOf('"', i + 1);
    if (close < 0) break;
    const tag = v.slice(i, close + 1);
    i = close + 1;
    if (validOpaque(tag.slice(1, -1))) out.push(weak ? `W/${tag}` : tag);
  }
  return out;
}

/** Strong comparison: both tags strong and their opaque parts equal. */
export function strongMatch(a: string, b: string): boolean {
  return !isWeak(a) && !isWeak(b) && a === b;
}

/** Weak comparison: opaque parts equal, weakness ignored. */
export function weakMatch(a: string, b: string): boolean {
  return opaque(a) === opaque(b);
}

/** True when `header` (an If-Match or If-None-Match value) names `current`; `*` names any existing representation. */
export function listMatches(header: string, current: string | null, strong: boolean): boolean {
  const list = parseEtagList(header);
  if (list === '*') return true;
  if (current === null) return false;
  for (const t of list) if (strong ? strongMatch(t, current) : weakMatch(t, current)) return true;
  return false;
}
