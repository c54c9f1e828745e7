/**
 * Headers: an ordered list of name/value pairs with case-insensitive lookup.
 *
 * Storage is two parallel arrays (names, values) rather than an array of tuples, so the
 * HTTP/1 parser can push without allocating a pair per header and lookups scan strings
 * without lowercasing them.
 */
import { ArgumentError } from '../errors.js';

/** One header as a `[name, value]` tuple. */
export type HeaderPair = readonly [string, string];

/** Everything {@link Headers} and {@link mkHeaders} accept. */
export type HeadersInit =
  Headers | Iterable<HeaderPair | readonly [string, string | number]> | Map<string, string | number | readonly string[]> | Record<string, string | number | readonly string[] | undefined>;

/** Anything that carries headers: a {@link Headers} or a message with a `headers` field. */
export interface HasHeaders {
  /** The message's headers. */
  headers: Headers;
}

/** True when `a` and `b` are equal ignoring ASCII case; no allocation. */
export function eqIgnoreCase(a: string, b: string): boolean {
  if (a === b) return true;
  const n = a.length;
  if (n !== b.length) return false;
  for (let i = 0; i < n; i++) {
    const x = a.charCodeAt(i);
    const y = b.charCodeAt(i);
    if (x === y) continue;
    // Fold only ASCII letters: 'A'..'Z' <-> 'a'..'z'.
    if ((x | 0x20) !== (y | 0x20)) return false;
    const l = x | 0x20;
    if (l < 0x61 || l > 0x7a) return false;
  }
  return true;
}

/** Ordered, case-insensitive collection of header pairs. */
export class Headers implements Iterable<[string, string]> {
  /** @internal Header names in stored spelling. */
  _names: string[];
  /** @internal Header values, parallel to `_names`. */
  _values: string[];

  /**
   * `new Headers()` is empty; `new Headers(n)` is empty with room for `n` headers; another
   * Headers is copied pair for pair; any other input (array of pairs, Map, plain object) is
   * copied, joining a header onto the one before it when the names match, as
   * {@link appendHeader} does.
   */
  constructor(init?: HeadersInit | number | null) {
    if (typeof init === 'number') {
      if (!Number.isInteger(init) || init < 0) {
        throw new ArgumentError(`Headers capacity must be a non-negative integer, got ${init}`);
      }
      // A capacity hint only: V8 drops an array's storage when its length is set to 0, so
      // pre-sizing buys nothing and would leave the arrays holey (slower); the first push
      // reserves 17 slots, more than most messages use.
      this._names = [];
      this._values = [];
      return;
    }
    if ((init as unknown) === ARRAYS) {
      // headersFromArrays(): the caller's arrays, used as they are.
      this._names = given.names!;
      this._values = given.values!;
      given.names = given.values = null;
      return;
    }
    const keys = init != null ? plainKeys(init) : null;
    if (keys !== null) {
      // The common `{ 'Content-Type': '…' }`: arrays of the exact size (the keys array itself
      // for the names), not the 17 slots each that a first push onto an empty array reserves,
      // and no empty arrays made first only to be replaced.
      const values = keys.slice();
      for (let i = 0; i < keys.length; i++) values[i] = (init as Record<string, string>)[keys[i]!]!;
      this._names = keys;
      this._values = values;
      return;
    }
    this._names = [];
    this._values = [];
    if (init != null) addAll(this, init);
  }

  /** Number of stored pairs (a name stored twice counts twice). */
  get size(): number {
    return this._names.length;
  }

  /** Iterates `[name, value]` pairs in order. */
  *[Symbol.iterator](): IterableIterator<[string, string]> {
    const names = this._names;
    const values = this._values;
    for (let i = 0; i < names.length; i++) yield [names[i]!, values[i]!];
  }

  /** Same as iterating the collection. */
  entries(): IterableIterator<[string, string]> {
    return this[Symbol.iterator]();
  }

  /** The stored names in order (a repeated name appears once per value). */
  keys(): string[] {
    return this._names.slice();
  }

  /** Index of the first header named `name`, or -1. */
  indexOf(name: string, from = 0): number {
    const names = this._names;
    for (let i = from; i < names.length; i++) if (eqIgnoreCase(names[i]!, name)) return i;
    return -1;
  }

  /** Name at position `i`. */
  nameAt(i: number): string {
    return this._names[i]!;
  }

  /** Value at position `i`. */
  valueAt(i: number): string {
    return this._values[i]!;
  }

  /** First value of `name`, or `undefined`. */
  get(name: string): string | undefined {
    const i = this.indexOf(name);
    return i < 0 ? undefined : this._values[i];
  }

  /** Every value of `name` in order. */
  getAll(name: string): string[] {
    const out: string[] = [];
    const names = this._names;
    for (let i = 0; i < names.length; i++) if (eqIgnoreCase(names[i]!, name)) out.push(this._values[i]!);
    return out;
  }

  /** True when a header named `name` is stored (even with an empty value). */
  has(name: string): boolean {
    return this.indexOf(name) >= 0;
  }

  /** Adds a pair at the end without joining. The HTTP/1 parser uses this for network headers. */
  push(name: string, value: string): void {
    this._names.push(name);
    this._values.push(value);
  }

  /**
   * Replaces every value of `name` with `value`: the first occurrence keeps its position and
   * takes the new spelling, later ones are removed; a new header goes at the end.
   */
  set(name: string, value: string): void {
    const first = this.indexOf(name);
    if (first < 0) {
      this.push(name, value);
      return;
    }
    this._names[first] = name;
    this._values[first] = value;
    this.removeFrom(name, first + 1);
  }

  /**
   * Adds a value. When the last header has the same name it is joined onto it, with `; ` for
   * Cookie and `,` for other names; Set-Cookie values always stay separate headers.
   */
  append(name: string, value: string): void {
    const last = this._names.length - 1;
    if (last >= 0 && eqIgnoreCase(this._names[last]!, name) && !eqIgnoreCase(name, 'set-cookie')) {
      const sep = eqIgnoreCase(name, 'cookie') ? '; ' : ',';
      this._values[last] = this._values[last]! + sep + value;
      return;
    }
    this.push(name, value);
  }

  /** Removes every value of `name`; returns how many were removed. */
  delete(name: string): number {
    return this.removeFrom(name, 0);
  }

  /** Removes every header. */
  clear(): void {
    this._names.length = 0;
    this._values.length = 0;
  }

  /** A copy of this collection. */
  clone(): Headers {
    return headersFromArrays(this._names.slice(), this._values.slice());
  }

  /** Pairs as an array of tuples. */
  toArray(): [string, string][] {
    return [...this];
  }

  /** Lowercased names to values, repeated names joined with `, ` (Set-Cookie as an array of its values joined by `\n` is not done; use `getAll`). */
  toObject(): Record<string, string> {
    const out: Record<string, string> = Object.create(null) as Record<string, string>;
    for (let i = 0; i < this._names.length; i++) {
      const k = this._names[i]!.toLowerCase();
      out[k] = k in out ? `${out[k]}, ${this._values[i]}` : this._values[i]!;
    }
    return out;
  }

  /** For `console.log` and `JSON.stringify`: the list of pairs. */
  toJSON(): [string, string][] {
    return this.toArray();
  }

  private removeFrom(name: string, from: number): number {
    const names = this._names;
    const values = this._values;
    // Nothing to remove (the usual case): no writes, and no length set (a runtime call).
    let w = from;
    while (w < names.length && !eqIgnoreCase(names[w]!, name)) w++;
    if (w === names.length) return 0;
    for (let r = w + 1; r < names.length; r++) {
      if (eqIgnoreCase(names[r]!, name)) continue;
      names[w] = names[r]!;
      values[w] = values[r]!;
      w++;
    }
    const removed = names.length - w;
    names.length = w;
    values.length = w;
    return removed;
  }
}

function str(v: unknown, name: string): string {
  if (typeof v === 'string') return v;
  if (typeof v === 'number' || typeof v === 'bigint' || typeof v === 'boolean') return String(v);
  throw new ArgumentError(`header ${JSON.stringify(name)} must have a string value, got ${typeof v}`);
}

function addPair(h: Headers, name: unknown, value: unknown): void {
  if (typeof name !== 'string') throw new ArgumentError(`header name must be a string, got ${typeof name}`);
  if (Array.isArray(value)) {
    for (const v of value) h.append(name, str(v, name));
  } else {
    h.append(name, str(value, name));
  }
}

/**
 * True when every value of `init` is a valid header string and no two names are equal
 * ignoring case (where `append` would join them), for up to 8 names: such an object maps
 * to names and values one for one.
 */
function plainPairs(init: Record<string, unknown>, keys: string[]): boolean {
  const n = keys.length;
  if (n === 0 || n > 8) return false;
  for (let i = 0; i < n; i++) {
    const v = init[keys[i]!];
    if (typeof v !== 'string') return false;
    for (let j = 0; j < i; j++) if (eqIgnoreCase(keys[i]!, keys[j]!)) return false;
  }
  return true;
}

/**
 * The keys of `init` when it is a plain object that {@link plainPairs} accepts (its names and
 * values map one for one onto a Headers), else null.
 */
function plainKeys(init: object): string[] | null {
  if (typeof init !== 'object' || init instanceof Headers || init instanceof Map || typeof (init as Iterable<unknown>)[Symbol.iterator] === 'function') return null;
  const keys = Object.keys(init);
  return plainPairs(init as Record<string, unknown>, keys) ? keys : null;
}

const ARRAYS = Symbol('arrays');
const given: { names: string[] | null; values: string[] | null } = { names: null, values: null };

/**
 * @internal Headers over `names` and `values` (parallel, same length), taken as they are: no
 * copy, no checks. For protocol drivers whose codec read and validated the fields.
 */
export function headersFromArrays(names: string[], values: string[]): Headers {
  given.names = names;
  given.values = values;
  return new Headers(ARRAYS as unknown as number);
}

const canonicalCache = new Map<string, string>();

/** Canonical spelling of a lowercase wire name (cached: the usual names repeat on every request). */
function canonicalWireName(name: string): string {
  let c = canonicalCache.get(name);
  if (c === undefined) {
    c = canonicalHeaderKey(name);
    if (canonicalCache.size < 1024) canonicalCache.set(name, c);
  }
  return c;
}

/**
 * @internal Headers from a decoded HTTP/2 (or HTTP/3) field list: flat `[name, value, …]` in
 * arrival order, names lowercase as those protocols send them. Pseudo-header fields (`:path`…)
 * are skipped and names are stored in canonical spelling. With `hostFromAuthority`, a list
 * without `host` gets `Host` from its `:authority` at the end (HTTP/1 handlers read Host; RFC
 * 9113 §8.3.1).
 */
export function headersFromFields(fields: readonly string[], hostFromAuthority: boolean): Headers {
  // Arrays of the exact size: pushing onto empty ones reserves 17 slots each.
  let n = 0;
  let hasHost = false;
  let authority: string | null = null;
  for (let i = 0; i + 1 < fields.length; i += 2) {
    const name = fields[i]!;
    if (name.charCodeAt(0) === 0x3a) {
      if (name === ':authority') authority = fields[i + 1]!;
      continue;
    }
    if (name === 'host') hasHost = true;
    n++;
  }
  const addHost = hostFromAuthority && authority !== null && !hasHost;
  const size = addHost ? n + 1 : n;
  const names = new Array<string>(size);
  const values = new Array<string>(size);
  let j = 0;
  for (let i = 0; i + 1 < fields.length; i += 2) {
    const name = fields[i]!;
    if (name.charCodeAt(0) === 0x3a) continue;
    names[j] = canonicalWireName(name);
    values[j] = fields[i + 1]!;
    j++;
  }
  if (addHost) {
    names[j] = 'Host';
    values[j] = authority!;
  }
  return headersFromArrays(names, values);
}

function addAll(h: Headers, init: unknown): void {
  if (init instanceof Headers) {
    // Already a header list: copy the pairs as they are (joining would merge, e.g., two
    // Connection headers that a reader checks one by one).
    for (let i = 0; i < init._names.length; i++) h.push(init._names[i]!, init._values[i]!);
    return;
  }
  if (init instanceof Map) {
    for (const [k, v] of init) addPair(h, k, v);
    return;
  }
  if (typeof init === 'object' && init !== null && typeof (init as Iterable<unknown>)[Symbol.iterator] === 'function') {
    for (const item of init as Iterable<unknown>) {
      if (!Array.isArray(item) || item.length !== 2) {
        throw new ArgumentError('each header must be a [name, value] pair');
      }
      addPair(h, item[0], item[1]);
    }
    return;
  }
  if (typeof init === 'object' && init !== null) {
    const keys = Object.keys(init);
    for (const k of keys) {
      const v = (init as Record<string, unknown>)[k];
      if (v !== undefined) addPair(h, k, v);
    }
    return;
  }
  throw new ArgumentError(`headers must be a Headers, array of pairs, Map or object, got ${typeof init}`);
}

/**
 * Converts input to {@link Headers}: `null`/`undefined` → empty, a single `[name, value]`
 * pair, a Map, object or iterable of pairs (each value added with {@link appendHeader}).
 * A `Headers` is returned as is, not copied.
 */
export function mkHeaders(input?: HeadersInit | HeaderPair | null): Headers {
  if (input instanceof Headers) return input;
  if (input == null) return new Headers();
  if (typeof input !== 'object') throw new ArgumentError(`mkHeaders takes a pair, Map, object or iterable of pairs, got ${typeof input}`);
  if (Array.isArray(input) && input.length === 2 && typeof input[0] === 'string' && !Array.isArray(input[1])) {
    const h = new Headers();
    addPair(h, input[0], input[1]);
    return h;
  }
  return new Headers(input as HeadersInit);
}

function hdrs(target: Headers | HasHeaders): Headers {
  return target instanceof Headers ? target : target.headers;
}

/** First value of `key` in a Headers or message, else `defaultValue` (`''` by default). */
export function header(target: Headers | HasHeaders, key: string, defaultValue = ''): string {
  return hdrs(target).get(key) ?? defaultValue;
}

/** Every value of `key` in order; empty when none. */
export function headers(target: Headers | HasHeaders, key: string): string[] {
  return hdrs(target).getAll(key);
}

/**
 * `hasHeader(h, key)`: present with a non-empty first value.
 * `hasHeader(h, key, value)`: any stored value of `key` equals `value` ignoring case.
 */
export function hasHeader(target: Headers | HasHeaders, key: string, value?: string): boolean {
  const h = hdrs(target);
  if (value === undefined) {
    const v = h.get(key);
    return v !== undefined && v !== '';
  }
  const names = h._names;
  for (let i = 0; i < names.length; i++) {
    if (eqIgnoreCase(names[i]!, key) && eqIgnoreCase(h._values[i]!, value)) return true;
  }
  return false;
}

/** True when `token` is an element of the comma-separated values of `key`, ignoring case and whitespace. */
export function headerContains(target: Headers | HasHeaders, key: string, token: string): boolean {
  const h = hdrs(target);
  const names = h._names;
  for (let i = 0; i < names.length; i++) {
    if (!eqIgnoreCase(names[i]!, key)) continue;
    const v = h._values[i]!;
    let start = 0;
    while (start <= v.length) {
      let end = v.indexOf(',', start);
      if (end < 0) end = v.length;
      let a = start;
      let b = end;
      while (a < b && (v.charCodeAt(a) === 32 || v.charCodeAt(a) === 9)) a++;
      while (b > a && (v.charCodeAt(b - 1) === 32 || v.charCodeAt(b - 1) === 9)) b--;
      if (b - a === token.length && eqIgnoreCase(v.slice(a, b), token)) return true;
      start = end + 1;
    }
  }
  return false;
}

/** Something whose response headers are set through its own method, such as a server `Stream`. */
export interface HeaderSetter {
  /** Sets a header; may throw when the head has gone out. */
  setHeader(key: string, value: string): void;
}

function splitKV(keyOrPair: string | HeaderPair, value: string | undefined, fn: string): [string, string] {
  if (typeof keyOrPair === 'string') {
    if (value === undefined) throw new ArgumentError(`${fn}(target, key, value) needs a value for ${keyOrPair}`);
    return [keyOrPair, str(value, keyOrPair)];
  }
  if (Array.isArray(keyOrPair) && keyOrPair.length === 2) return [keyOrPair[0], str(keyOrPair[1], keyOrPair[0])];
  throw new ArgumentError(`${fn} takes (target, key, value) or (target, [key, value])`);
}

/**
 * Replaces every value of the key (see {@link Headers.set}). Takes `(target, key, value)` or
 * `(target, [key, value])`; the target may be a Headers, a message, or a server stream.
 */
export function setHeader(target: Headers | HasHeaders | HeaderSetter, keyOrPair: string | HeaderPair, value?: string): void {
  const [k, v] = splitKV(keyOrPair, value, 'setHeader');
  if (target instanceof Headers) target.set(k, v);
  else if ('headers' in target && target.headers instanceof Headers) target.headers.set(k, v);
  else (target as HeaderSetter).setHeader(k, v);
}

/** Adds the header unless one with that name is present. */
export function defaultHeader(target: Headers | HasHeaders, keyOrPair: string | HeaderPair, value?: string): void {
  const [k, v] = splitKV(keyOrPair, value, 'defaultHeader');
  const h = hdrs(target);
  if (!h.has(k)) h.push(k, v);
}

/** Adds a value, joining onto an immediately preceding same-name header (see {@link Headers.append}). */
export function appendHeader(target: Headers | HasHeaders, keyOrPair: string | HeaderPair, value?: string): void {
  const [k, v] = splitKV(keyOrPair, value, 'appendHeader');
  hdrs(target).append(k, v);
}

/** Removes every value of `key`. */
export function removeHeader(target: Headers | HasHeaders, key: string): void {
  hdrs(target).delete(key);
}

/**
 * Canonical spelling of a header name: the first letter and every letter after `-`
 * uppercase, other ASCII letters lowercase. The key is not validated.
 */
export function canonicalHeaderKey(key: string): string {
  let upper = true;
  let changed = false;
  const n = key.length;
  for (let i = 0; i < n; i++) {
    const c = key.charCodeAt(i);
    if (upper ? c >= 0x61 && c <= 0x7a : c >= 0x41 && c <= 0x5a) {
      changed = true;
      break;
    }
    upper = c === 0x2d;
  }
  if (!changed) return key;
  let out = '';
  upper = true;
  for (let i = 0; i < n; i++) {
    let c = key.charCodeAt(i);
    if (upper && c >= 0x61 && c <= 0x7a) c -= 0x20;
    else if (!upper && c >= 0x41 && c <= 0x5a) c += 0x20;
    out += String.fromCharCode(c);
    upper = c === 0x2d;
  }
  return out;
}
