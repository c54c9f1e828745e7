/**
 * HTTP caching rules (RFC 9111, and RFC 5861's stale-while-revalidate and stale-if-error) as
 * pure functions on heads: no I/O, no clock of their own (`now` is an argument).
 */
import { Headers } from '../../kernel/index.js';
import { parseHttpDate } from '../fileserver/index.js';
import type { StoredHead } from './store.js';

/** Cache-Control directives: name (lowercase) → argument, or `true` for none. */
export type Directives = ReadonlyMap<string, string | true>;

/** Parses every `Cache-Control` field of `headers` (RFC 9111 §5.2); the first occurrence of a directive wins. */
export function cacheControl(headers: Headers): Directives {
  const out = new Map<string, string | true>();
  for (const field of headers.getAll('Cache-Control')) {
    for (const part of splitList(field)) {
      const eq = part.indexOf('=');
      const name = (eq < 0 ? part : part.slice(0, eq)).trim().toLowerCase();
      if (name === '' || out.has(name)) continue;
      let arg: string | true = true;
      if (eq >= 0) {
        arg = part.slice(eq + 1).trim();
        if (arg.length >= 2 && arg.startsWith('"') && arg.endsWith('"')) arg = arg.slice(1, -1);
      }
      out.set(name, arg);
    }
  }
  return out;
}

// Splits a comma-separated list, not inside quoted strings (no-cache="a, b").
function splitList(value: string): string[] {
  const parts: string[] = [];
  let start = 0;
  let quoted = false;
  for (let i = 0; i < value.length; i++) {
    const c = value.charCodeAt(i);
    if (c === 0x22) quoted = !quoted;
    else if (c === 0x5c && quoted) i++;
    else if (c === 0x2c && !quoted) {
      parts.push(value.slice(start, i));
      start = i + 1;
    }
  }
  parts.push(value.slice(start));
  return parts.map((p) => p.trim()).filter((p) => p !== '');
}

/** A delta-seconds argument (RFC 9111 §1.2.2), or null when absent or malformed; too large saturates. */
export function seconds(d: Directives, name: string): number | null {
  const v = d.get(name);
  if (typeof v !== 'string' || !/^[0-9]+$/.test(v)) return null;
  return Math.min(Number(v), 2 ** 31);
}

/** Status codes heuristically cacheable (RFC 9110 §15.1). */
const HEURISTIC = new Set([200, 203, 204, 206, 300, 301, 308, 404, 405, 410, 414, 501]);
/** Status codes this cache understands (for `must-understand`, RFC 9111 §5.2.2.3). */
const UNDERSTOOD = new Set([200, 203, 204, 300, 301, 302, 303, 307, 308, 404, 405, 410, 414, 501]);
/** Methods whose responses are stored. */
const CACHEABLE_METHODS = new Set(['GET', 'HEAD']);
/** Methods that do not invalidate (RFC 9110 §9.2.1 safe methods). */
const SAFE_METHODS = new Set(['GET', 'HEAD', 'OPTIONS', 'TRACE']);

/** Whether the cache is private (one user's) or shared (RFC 9111 §1). */
export type CacheMode = 'private' | 'shared';

/**
 * RFC 9111 §3 (with §3.5): may this response to this request be stored? `206` and `304` are
 * not stored (this cache does not combine ranges; a 304 only updates, §4.3.4).
 */
export function isStorable(method: string, reqHeaders: Headers, status: number, resHeaders: Headers, mode: CacheMode): boolean {
  if (!CACHEABLE_METHODS.has(method)) return false;
  if (status < 200 || status === 206 || status === 304) return false;
  const res = cacheControl(resHeaders);
  const req = cacheControl(reqHeaders);
  if (res.has('must-understand')) {
    if (!UNDERSTOOD.has(status)) return false;
  } else if (res.has('no-store')) {
    return false;
  }
  if (req.has('no-store')) return false;
  const shared = mode === 'shared';
  if (shared && res.has('private')) return false;
  // RFC 9111 lets a cache store Set-Cookie and replay it; a cache shared by several users would
  // then hand one user's cookie (a session) to the others. A shared cache stores no such
  // response, as CDNs do by default; a private one stores it for its one user.
  if (shared && resHeaders.has('Set-Cookie')) return false;
  if (shared && reqHeaders.has('Authorization') && !res.has('must-revalidate') && !res.has('public') && !res.has('s-maxage')) return false;
  if (res.has('public') || (!shared && res.has('private'))) return true;
  if (resHeaders.has('Expires') || res.has('max-age') || (shared && res.has('s-maxage'))) return true;
  return HEURISTIC.has(status);
}

/** Header fields of a head as a Headers. */
export function headHeaders(head: StoredHead): Headers {
  const h = new Headers();
  for (const [n, v] of head.headers) h.push(n, v);
  return h;
}

/**
 * Freshness lifetime in seconds (RFC 9111 §4.2.1): `s-maxage` (shared), `max-age`, `Expires`
 * minus `Date`, else the heuristic of §4.2.2 (a tenth of the time since `Last-Modified`) where
 * the status is heuristically cacheable or the response is `public`; else 0.
 */
export function freshnessLifetime(head: StoredHead, headers: Headers, mode: CacheMode): number {
  const cc = cacheControl(headers);
  if (mode === 'shared') {
    const s = seconds(cc, 's-maxage');
    if (s !== null) return s;
  }
  const ma = seconds(cc, 'max-age');
  if (ma !== null) return ma;
  const expires = headers.get('Expires');
  if (expires !== undefined) {
    // An invalid Expires (e.g. "0") means already expired (§5.3).
    const exp = parseHttpDate(expires);
    if (exp === null) return 0;
    const date = dateValue(head, headers);
    return Math.max(0, Math.floor((exp - date) / 1000));
  }
  if (!HEURISTIC.has(head.status) && !cc.has('public')) return 0;
  const lm = headers.get('Last-Modified');
  const lmt = lm === undefined ? null : parseHttpDate(lm);
  if (lmt === null) return 0;
  const date = dateValue(head, headers);
  return Math.max(0, Math.floor((date - lmt) / 10000));
}

// The Date field, or the response time when it is absent or invalid (§4.2.3 "date_value").
function dateValue(head: StoredHead, headers: Headers): number {
  const d = headers.get('Date');
  const t = d === undefined ? null : parseHttpDate(d);
  return t ?? head.responseTime;
}

/** Current age in seconds (RFC 9111 §4.2.3), with its fraction (the `Age` field sends it floored). */
export function currentAge(head: StoredHead, headers: Headers, now: number): number {
  const ageField = headers.get('Age');
  const ageValue = ageField !== undefined && /^[0-9]+$/.test(ageField.trim()) ? Number(ageField.trim()) : 0;
  const apparent = Math.max(0, head.responseTime - dateValue(head, headers)) / 1000;
  const delay = Math.max(0, head.responseTime - head.requestTime) / 1000;
  const correctedInitial = Math.max(apparent, ageValue + delay);
  const resident = Math.max(0, now - head.responseTime) / 1000;
  return correctedInitial + resident;
}

/** What the cache may do with a stored response for a request (RFC 9111 §4, RFC 5861). */
export type Usability =
  /** Serve it as is. */
  | 'fresh'
  /** Serve it and revalidate in the background (stale-while-revalidate, or the request's max-stale). */
  | 'stale-while-revalidate'
  /** Stale, or `no-cache`: revalidate before use; on error it may still serve if {@link staleIfError} allows. */
  | 'revalidate';

/** The evaluation of a stored response against a request. */
export interface Evaluation {
  /** See {@link Usability}. */
  readonly use: Usability;
  /** Current age in seconds, with its fraction. */
  readonly age: number;
  /** Freshness lifetime in seconds. */
  readonly lifetime: number;
}

/**
 * May the stored response answer this request without contacting the origin? Applies the
 * response's `no-cache`, `must-revalidate`, `proxy-revalidate` and `s-maxage` (shared), its
 * `stale-while-revalidate`, and the request's `no-cache` (or `Pragma: no-cache` without
 * Cache-Control), `max-age`, `min-fresh` and `max-stale` (RFC 9111 §4.2, §5.2.1).
 */
export function evaluate(head: StoredHead, reqHeaders: Headers, now: number, mode: CacheMode): Evaluation {
  const headers = headHeaders(head);
  const res = cacheControl(headers);
  const req = cacheControl(reqHeaders);
  const lifetime = freshnessLifetime(head, headers, mode);
  const age = currentAge(head, headers, now);
  const revalidate = { use: 'revalidate' as const, age, lifetime };
  if (res.has('no-cache') || req.has('no-cache')) return revalidate;
  if (!reqHeaders.has('Cache-Control') && /(^|,)\s*no-cache\s*(,|$)/i.test(reqHeaders.get('Pragma') ?? '')) return revalidate;
  const reqMaxAge = seconds(req, 'max-age');
  if (reqMaxAge !== null && age > reqMaxAge) return revalidate;
  const minFresh = seconds(req, 'min-fresh');
  if (minFresh !== null && lifetime - age < minFresh) return revalidate;
  if (age < lifetime) return { use: 'fresh', age, lifetime };
  const staleFor = age - lifetime;
  const mustRevalidate = res.has('must-revalidate') || (mode === 'shared' && (res.has('proxy-revalidate') || res.has('s-maxage')));
  if (mustRevalidate) return revalidate;
  if (req.has('max-stale')) {
    const ms = seconds(req, 'max-stale');
    if (ms === null ? req.get('max-stale') === true : staleFor <= ms) return { use: 'fresh', age, lifetime };
  }
  const swr = seconds(res, 'stale-while-revalidate');
  if (swr !== null && staleFor < swr) return { use: 'stale-while-revalidate', age, lifetime };
  return revalidate;
}

/**
 * May a stale stored response answer when revalidation failed (a network error, or a 500,
 * 502, 503 or 504)? RFC 5861 §4 `stale-if-error` in the response or the request, never
 * past `must-revalidate` (or the shared equivalents) or `no-cache` (RFC 9111 §4.2.4).
 */
export function staleIfError(head: StoredHead, reqHeaders: Headers, now: number, mode: CacheMode): boolean {
  const headers = headHeaders(head);
  const res = cacheControl(headers);
  if (res.has('must-revalidate') || res.has('no-cache')) return false;
  if (mode === 'shared' && (res.has('proxy-revalidate') || res.has('s-maxage'))) return false;
  const staleFor = currentAge(head, headers, now) - freshnessLifetime(head, headers, mode);
  const limit = Math.max(seconds(res, 'stale-if-error') ?? -1, seconds(cacheControl(reqHeaders), 'stale-if-error') ?? -1);
  return staleFor <= limit;
}

/** Statuses on which stale-if-error applies (RFC 5861 §4). */
export function isErrorStatus(status: number): boolean {
  return status === 500 || status === 502 || status === 503 || status === 504;
}

/**
 * The selecting header fields of a response (its `Vary`), lowercased, with the request's
 * values; null for `Vary: *`, which no later request matches (RFC 9111 §4.1).
 */
export function varySelection(resHeaders: Headers, reqHeaders: Headers): [string, string | null][] | null {
  const names: string[] = [];
  for (const field of resHeaders.getAll('Vary')) {
    for (const n of field.split(',')) {
      const name = n.trim().toLowerCase();
      if (name === '') continue;
      if (name === '*') return null;
      if (!names.includes(name)) names.push(name);
    }
  }
  names.sort();
  return names.map((n) => [n, normalizedField(reqHeaders, n)]);
}

// Combines a request's field lines and normalizes whitespace around commas (§4.1 allows it).
function normalizedField(headers: Headers, name: string): string | null {
  const all = headers.getAll(name);
  if (all.length === 0) return null;
  return all
    .join(',')
    .split(',')
    .map((s) => s.trim())
    .join(', ');
}

/** A stable identifier of a Vary selection, for {@link CacheStore} variants. */
export function variantId(selection: readonly (readonly [string, string | null])[]): string {
  return JSON.stringify(selection);
}

/** Does the stored variant's selection match this request (RFC 9111 §4.1)? */
export function varyMatches(selection: readonly (readonly [string, string | null])[], reqHeaders: Headers): boolean {
  for (const [name, value] of selection) {
    if (normalizedField(reqHeaders, name) !== value) return false;
  }
  return true;
}

/** The request fields that make a revalidation conditional (RFC 9111 §4.3.1), from the stored validators. */
export function conditionalFields(headers: Headers): [string, string][] {
  const out: [string, string][] = [];
  const etag = headers.get('ETag');
  if (etag !== undefined) out.push(['If-None-Match', etag]);
  const lm = headers.get('Last-Modified');
  if (lm !== undefined) out.push(['If-Modified-Since', lm]);
  return out;
}

/**
 * Does a 304 to the conditional request the cache made from this stored response select it for
 * update (RFC 9111 §4.3.4)? A strong ETag must equal the stored one; otherwise a weak ETag or a
 * `Last-Modified` must. A 304 with no validator at all answers the one stored response whose
 * validators the request carried: it is selected (§4.3.4 selects only a stored response that
 * has none, which would leave the cache holding a 304 its caller never asked a condition for;
 * browsers and the HTTP caching test suite take it as confirming the revalidated response).
 */
export function notModifiedSelects(stored: Headers, notModified: Headers): boolean {
  const etag = notModified.get('ETag');
  const storedEtag = stored.get('ETag');
  if (etag !== undefined) {
    if (!etag.startsWith('W/')) return storedEtag === etag;
    return storedEtag !== undefined && storedEtag.replace(/^W\//, '') === etag.slice(2);
  }
  const lm = notModified.get('Last-Modified');
  if (lm !== undefined) return stored.get('Last-Modified') === lm;
  return true;
}

/** Hop-by-hop fields, never stored (RFC 9111 §3.1). */
const HOP_BY_HOP = new Set(['connection', 'keep-alive', 'proxy-connection', 'te', 'transfer-encoding', 'upgrade', 'proxy-authenticate', 'proxy-authorization', 'trailer']);

/** The response's fields as stored (RFC 9111 §3.1): without hop-by-hop fields and those its `Connection` names. */
export function storedFields(headers: Headers): [string, string][] {
  const skip = new Set(HOP_BY_HOP);
  for (const c of headers.getAll('Connection')) for (const n of c.split(',')) skip.add(n.trim().toLowerCase());
  const out: [string, string][] = [];
  for (const [n, v] of headers) if (!skip.has(n.toLowerCase())) out.push([n, v]);
  return out;
}

/** Fields a 304 never replaces in the stored head (RFC 9111 §3.2): framing and hop-by-hop fields. */
const NOT_UPDATED = new Set(['content-length', 'connection', 'keep-alive', 'proxy-connection', 'te', 'transfer-encoding', 'upgrade', 'content-encoding', 'content-range']);

/**
 * The stored head updated from a 304 (RFC 9111 §3.2, §4.3.4): each field of the 304 replaces
 * the stored field of that name, except framing and hop-by-hop fields (and those the 304's
 * `Connection` names); request and response times become the revalidation's.
 */
export function updateHead(stored: StoredHead, notModified: Headers, requestTime: number, responseTime: number): StoredHead {
  const skip = new Set(NOT_UPDATED);
  for (const c of notModified.getAll('Connection')) for (const n of c.split(',')) skip.add(n.trim().toLowerCase());
  const replaced = new Set<string>();
  for (const [n] of notModified) {
    const l = n.toLowerCase();
    if (!skip.has(l)) replaced.add(l);
  }
  const headers: [string, string][] = stored.headers.filter(([n]) => !replaced.has(n.toLowerCase())).map(([n, v]) => [n, v]);
  for (const [n, v] of notModified) if (replaced.has(n.toLowerCase())) headers.push([n, v]);
  return { ...stored, headers, requestTime, responseTime };
}

/**
 * URLs a response to an unsafe request invalidates (RFC 9111 §4.4): none unless the method is
 * unsafe and the status 2xx or 3xx; then the target, and `Location` and `Content-Location`
 * when they resolve to the target's origin (another origin could otherwise evict at will).
 */
export function invalidatedUrls(method: string, url: string, status: number, resHeaders: Headers): string[] {
  if (SAFE_METHODS.has(method) || status < 200 || status >= 400) return [];
  let target: URL;
  try {
    target = new URL(url);
  } catch {
    return [];
  }
  const out = [stripFragment(target)];
  for (const name of ['Location', 'Content-Location']) {
    const v = resHeaders.get(name);
    if (v === undefined) continue;
    let u: URL;
    try {
      u = new URL(v, target);
    } catch {
      continue;
    }
    if (u.origin === target.origin && !out.includes(stripFragment(u))) out.push(stripFragment(u));
  }
  return out;
}

function stripFragment(u: URL): string {
  const c = new URL(u.href);
  c.hash = '';
  return c.href;
}

/** The cache key of a request: method and URL without fragment (RFC 9111 §2). */
export function cacheKey(method: string, url: string): string {
  const hash = url.indexOf('#');
  return `${method} ${hash < 0 ? url : url.slice(0, hash)}`;
}
