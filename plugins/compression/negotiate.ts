/**
 * Content-coding negotiation from `Accept-Encoding` (RFC 9110 §12.5.3), shared by the
 * compression plugin and the fileserver's precompressed files.
 */
import type { Headers } from '../../kernel/index.js';

/** A content coding switchyard can produce. */
export type CompressionCoding = 'br' | 'zstd' | 'gzip';

/** The codings a server may offer, most preferred first when the client weighs them alike. */
export const CODINGS: readonly CompressionCoding[] = Object.freeze(['br', 'zstd', 'gzip'] as CompressionCoding[]);

/** What a client accepts: a weight (0 to 1000, thousandths) per coding it named, and for `*` and `identity`. */
interface Weights {
  /** Weight of each coding named, lowercase (`x-gzip` counted as `gzip`). */
  readonly named: Map<string, number>;
  /** Weight of `*`, or -1 when absent. */
  readonly star: number;
  /** Weight of `identity` when named, else -1. */
  readonly identity: number;
  /** The lowest weight of an element that parsed (1000 when none did). */
  readonly lowest: number;
}

/** Elements read from one header at most: a longer list is cut there (each one costs a little). */
export const MAX_ELEMENTS = 64;

/**
 * A qvalue (RFC 9110 §12.4.2: `0[.ddd]` or `1[.000]`) in thousandths; -1 when the text is not
 * one (`q=abc`, `q=1.5`, `q=-1`, `q=0.0001`): such an element is ignored.
 */
function qvalue(s: string): number {
  const n = s.length;
  if (n === 0 || n > 5) return -1;
  const first = s.charCodeAt(0);
  if (first !== 0x30 && first !== 0x31) return -1;
  if (n === 1) return first === 0x31 ? 1000 : 0;
  if (s.charCodeAt(1) !== 0x2e) return -1;
  let v = 0;
  let scale = 100;
  for (let i = 2; i < n; i++) {
    const d = s.charCodeAt(i) - 0x30;
    if (d < 0 || d > 9) return -1;
    v += d * scale;
    scale /= 10;
  }
  if (first === 0x31) return v === 0 ? 1000 : -1;
  return v;
}

/** The weight of one element's parameters (`;q=0.5`): 1000 without `q`, -1 when `q` is malformed. */
function weightOf(params: string): number {
  let w = 1000;
  let from = 0;
  while (from < params.length) {
    let end = params.indexOf(';', from);
    if (end < 0) end = params.length;
    const p = params.slice(from, end).trim();
    from = end + 1;
    if (p.length < 2 || (p.charCodeAt(0) | 0x20) !== 0x71 || p.charCodeAt(1) !== 0x3d) continue; // not `q=` (other parameters are ignored)
    w = qvalue(p.slice(2).trim());
    if (w < 0) return -1;
  }
  return w;
}

/** Reads an `Accept-Encoding` value; linear in its length, at most {@link MAX_ELEMENTS} elements. */
function parse(value: string): Weights {
  const named = new Map<string, number>();
  let star = -1;
  let identity = -1;
  let lowest = 1000;
  let from = 0;
  let count = 0;
  while (from <= value.length && count < MAX_ELEMENTS) {
    let end = value.indexOf(',', from);
    if (end < 0) end = value.length;
    const el = value.slice(from, end);
    from = end + 1;
    const semi = el.indexOf(';');
    const name = (semi < 0 ? el : el.slice(0, semi)).trim().toLowerCase();
    if (name === '') continue;
    count++;
    const w = semi < 0 ? 1000 : weightOf(el.slice(semi + 1));
    if (w < 0) continue;
    if (w < lowest) lowest = w;
    if (name === '*') star = w;
    else if (name === 'identity') identity = w;
    else named.set(name === 'x-gzip' ? 'gzip' : name, w);
  }
  return { named, star, identity, lowest };
}

/**
 * The coding to answer with, among `offered` (most preferred first), for the request's
 * `Accept-Encoding`; `'identity'` for none. No header: identity (the client said nothing, and
 * an old client may not decode). An empty value: identity. A coding the client weighs 0, or
 * does not name when it sends no `*`, is never chosen. Between codings of equal weight the
 * first offered wins; a coding wins over identity when identity is not named with a greater
 * weight (identity implicitly weighs as `*`, else as the lowest weight the client gave).
 * `identity;q=0` or `*;q=0` with nothing acceptable offered still gets identity: an
 * unencoded answer is better than none (RFC 9110 §12.5.3 leaves it to the server).
 */
export function chooseCoding(value: string | undefined, offered: readonly CompressionCoding[]): CompressionCoding | 'identity' {
  if (value === undefined || value === '') return 'identity';
  const w = parse(value);
  let best: CompressionCoding | 'identity' = 'identity';
  let bestW = 0;
  for (const c of offered) {
    const n = w.named.get(c);
    const q = n !== undefined ? n : w.star >= 0 ? w.star : 0;
    if (q > bestW) {
      best = c;
      bestW = q;
    }
  }
  if (best === 'identity') return best;
  const idW = w.identity >= 0 ? w.identity : w.star >= 0 ? w.star : w.lowest;
  return idW > bestW ? 'identity' : best;
}

/**
 * A cache of {@link chooseCoding} results by header value for one offer: browsers send a few
 * values over and over. Bounded (cleared when full), so distinct values cost only the parse.
 */
export class CodingChooser {
  private readonly offered: readonly CompressionCoding[];
  private readonly cache = new Map<string, CompressionCoding | 'identity'>();

  /** Chooses among `offered`, most preferred first. */
  constructor(offered: readonly CompressionCoding[]) {
    this.offered = offered;
  }

  /** The coding for `headers`' `Accept-Encoding` (several fields read as one list). */
  choose(headers: Headers): CompressionCoding | 'identity' {
    const first = headers.indexOf('Accept-Encoding');
    if (first < 0) return 'identity';
    // One field, as a rule: its value as it is; several are read as one list.
    const value = headers.indexOf('Accept-Encoding', first + 1) < 0 ? headers.valueAt(first) : headers.getAll('Accept-Encoding').join(',');
    let c = this.cache.get(value);
    if (c !== undefined) return c;
    c = chooseCoding(value, this.offered);
    // Long values are not kept: a client making each one unique would only fill the cache.
    if (value.length <= 256) {
      if (this.cache.size >= 256) this.cache.clear();
      this.cache.set(value, c);
    }
    return c;
  }
}
