/**
 * URI splitting and query-string decoding. Works on absolute URLs and on request targets
 * (`/path?query`), which WHATWG `URL` cannot take without a base.
 */
import { ArgumentError } from '../errors.js';

// RFC 3986 appendix B: the generic splitting expression (not a validator).
const SPLIT = /^(?:([A-Za-z][A-Za-z0-9+.-]*):)?(?:\/\/([^/?#]*))?([^?#]*)(?:\?([^#]*))?(?:#(.*))?$/s;

/** A URI split into its parts; every part is a string, empty when absent. */
export class URI {
  /** Scheme without `:` (`https`), empty for a relative reference. */
  readonly scheme: string;
  /** User information before `@`, still percent-encoded. */
  readonly userinfo: string;
  /** Host name or address; an IPv6 literal without brackets. */
  readonly host: string;
  /** Port as written, empty when absent. */
  readonly port: string;
  /** Path, still percent-encoded. */
  readonly path: string;
  /** Query string without `?`, still encoded; decode with {@link queryParams}. */
  readonly query: string;
  /** Fragment without `#`. */
  readonly fragment: string;

  /** Splits `target`, an absolute URL or a request target such as `/a/b?x=1`. */
  constructor(target: string | URI) {
    if (target instanceof URI) {
      this.scheme = target.scheme;
      this.userinfo = target.userinfo;
      this.host = target.host;
      this.port = target.port;
      this.path = target.path;
      this.query = target.query;
      this.fragment = target.fragment;
      return;
    }
    if (typeof target !== 'string') throw new ArgumentError(`URI takes a string, got ${typeof target}`);
    const m = SPLIT.exec(target)!;
    this.scheme = (m[1] ?? '').toLowerCase();
    const authority = m[2] ?? '';
    this.path = m[3] ?? '';
    this.query = m[4] ?? '';
    this.fragment = m[5] ?? '';
    const at = authority.lastIndexOf('@');
    this.userinfo = at >= 0 ? authority.slice(0, at) : '';
    const hostport = at >= 0 ? authority.slice(at + 1) : authority;
    if (hostport.startsWith('[')) {
      const close = hostport.indexOf(']');
      if (close < 0) throw new ArgumentError(`invalid IPv6 host in URI ${JSON.stringify(target)}`);
      this.host = hostport.slice(1, close);
      const rest = hostport.slice(close + 1);
      this.port = rest.startsWith(':') ? rest.slice(1) : '';
    } else {
      const colon = hostport.lastIndexOf(':');
      this.host = colon >= 0 ? hostport.slice(0, colon) : hostport;
      this.port = colon >= 0 ? hostport.slice(colon + 1) : '';
    }
    if (this.port !== '' && !/^\d{1,5}$/.test(this.port)) {
      throw new ArgumentError(`invalid port ${JSON.stringify(this.port)} in URI ${JSON.stringify(target)}`);
    }
  }

  /** Path plus `?query` (`/` when the path is empty): the HTTP request target. */
  get target(): string {
    const p = this.path === '' ? '/' : this.path;
    return this.query === '' ? p : `${p}?${this.query}`;
  }

  /** Port as a number: the explicit one, else 443 for https/wss, 80 for http/ws, else 0. */
  get portNumber(): number {
    if (this.port !== '') return Number(this.port);
    if (this.scheme === 'https' || this.scheme === 'wss') return 443;
    if (this.scheme === 'http' || this.scheme === 'ws') return 80;
    return 0;
  }

  /** The URI reassembled. */
  toString(): string {
    let s = '';
    if (this.scheme) s += `${this.scheme}:`;
    if (this.host || this.userinfo || this.port || this.scheme) {
      s += '//';
      if (this.userinfo) s += `${this.userinfo}@`;
      s += this.host.includes(':') ? `[${this.host}]` : this.host;
      if (this.port) s += `:${this.port}`;
    }
    s += this.path;
    if (this.query) s += `?${this.query}`;
    if (this.fragment) s += `#${this.fragment}`;
    return s;
  }
}

/** `host:port`, with brackets around an IPv6 host: the form errors and logs use for an address. */
export function hostPort(host: string, port: number): string {
  return host.includes(':') ? `[${host}]:${port}` : `${host}:${port}`;
}

/** Decodes one form-urlencoded component: `+` is a space, bad `%` escapes are kept as written. */
export function decodeComponent(s: string): string {
  if (s.indexOf('+') >= 0) s = s.replace(/\+/g, ' ');
  if (s.indexOf('%') < 0) return s;
  try {
    return decodeURIComponent(s);
  } catch {
    // Decode the valid escapes one by one and keep the rest literally.
    return s.replace(/(%[0-9A-Fa-f]{2})+/g, (seq) => {
      try {
        return decodeURIComponent(seq);
      } catch {
        return seq;
      }
    });
  }
}

function queryOf(q: string | URI): string {
  if (q instanceof URI) return q.query;
  if (typeof q !== 'string') throw new ArgumentError(`query must be a string or URI, got ${typeof q}`);
  return q.startsWith('?') ? q.slice(1) : q;
}

/**
 * Query pairs in order, repeated keys kept. `+` and `%20` decode to a space, so this also
 * decodes `application/x-www-form-urlencoded` bodies.
 */
export function queryParamPairs(query: string | URI): [string, string][] {
  const q = queryOf(query);
  const out: [string, string][] = [];
  if (q === '') return out;
  for (const part of q.split('&')) {
    if (part === '') continue;
    const eq = part.indexOf('=');
    const k = eq < 0 ? part : part.slice(0, eq);
    const v = eq < 0 ? '' : part.slice(eq + 1);
    out.push([decodeComponent(k), decodeComponent(v)]);
  }
  return out;
}

/** Query parameters as an object; for a repeated key the last value wins (use {@link queryParamPairs} to keep all). */
export function queryParams(query: string | URI): Record<string, string> {
  const out: Record<string, string> = Object.create(null) as Record<string, string>;
  for (const [k, v] of queryParamPairs(query)) out[k] = v;
  return out;
}

/** Encodes pairs as `application/x-www-form-urlencoded` (spaces as `+`). */
export function encodeQuery(pairs: Iterable<readonly [string, string]>): string {
  let s = '';
  for (const [k, v] of pairs) {
    if (s) s += '&';
    s += `${encodeComponent(k)}=${encodeComponent(v)}`;
  }
  return s;
}

function encodeComponent(s: string): string {
  return encodeURIComponent(s).replace(/%20/g, '+');
}

/** A host (name with a dot, `localhost`, IPv4 or bracketed IPv6), an optional port, then a path, query or nothing. */
const HOST_FIRST = /^(\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9](?:[A-Za-z0-9.-]*[A-Za-z0-9])?)(:\d{1,5})?(?:[/?#]|$)/;

/**
 * What to say about a URL string that a client cannot send: one given without its scheme
 * (`localhost:8080/api` → `did you mean http://localhost:8080/api?`, with `scheme` the one
 * to suggest), or a path alone (`/api`). Empty when the string is neither.
 */
export function urlHint(url: string, scheme: string): string {
  if (url.includes('://')) return '';
  if (url.startsWith('/')) return `a path alone; a request needs an absolute URL such as ${scheme}://host${url}`;
  const m = HOST_FIRST.exec(url);
  if (m === null) return '';
  const host = m[1]!;
  if (m[2] === undefined && !host.includes('.') && host !== 'localhost' && !host.startsWith('[')) return '';
  return `no scheme: did you mean ${scheme}://${url}?`;
}
