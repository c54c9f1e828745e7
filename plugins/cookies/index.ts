/**
 * The cookies plugin and the cookie helpers (the reference's `HTTP.Cookies`).
 *
 * - {@link Cookie}, {@link cookiesOf} (`Cookies.cookies`), {@link parseSetCookie} (RFC 6265 §5.2: attributes in any case, quoted values
 *   unquoted, an invalid cookie gives `undefined`, never a throw), {@link stringify},
 *   {@link addCookie}, {@link getRequestCookies} (the reference's `HTTP.getcookies(req)`).
 * - {@link CookieJar} with {@link setCookies} and {@link getJarCookies} (the reference's
 *   `Cookies.setcookies!` / `Cookies.getcookies!`), RFC 6265 §5.3/§5.4 storage model:
 *   host-only vs domain cookies, domain-match, a Domain that is a public suffix (Mozilla list,
 *   private section included, through `tldts`) or that differs from an IP host is refused;
 *   default-path and path-match; Max-Age over Expires; expired cookies are removed; Secure
 *   cookies are only stored from and sent to secure origins (https, and `localhost`,
 *   `*.localhost`, 127.0.0.1 and ::1 as browsers do); a non-secure origin cannot overwrite a
 *   Secure cookie; `__Secure-` and `__Host-` prefixes are enforced, in any letter case
 *   (RFC 6265bis); order: longest path first, then earliest creation. SameSite is parsed and
 *   kept but not enforced (a client has no "site for cookies").
 * - Building (`new Cookie`, {@link stringify}, {@link addCookie}) refuses with `ArgumentError`
 *   what would change the header rather than encode it: a name that is not a token, a value,
 *   path or domain with `;`, CR, LF or another CTL, a `sameSite` other than lax/strict/none.
 *   Parsing and building share these rules, so every parsed cookie can be rendered back.
 * - {@link Cookies}: the namespace object (`Cookies.cookies`, `Cookies.getCookies(jar, …)`, …).
 * - The `cookies` plugin: with a `cookiejar` option (per call or `Client` default; `false` turns
 *   it off for a call), a `client.onRequest` tap at `Stage.COOKIES` adds the jar's cookies for
 *   the request URL to the `Cookie` header. A user-given `Cookie` header is kept; a jar cookie
 *   with the name of a user cookie is not added (the user's wins). On a redirect hop (which
 *   copies the previous hop's headers) or a retry, the pairs this plugin added before are taken
 *   out first, so they are replaced, not duplicated. A `client.onResponseHead` tap at
 *   `Stage.COOKIES` stores the `Set-Cookie` headers of every response, redirect hops included.
 */
import { createRequire } from 'node:module';
import { ArgumentError, checkPluginOptions, type OptionCheck, Request, Response, Stage, definePlugin, getCallOptions, isToken, type RequestContext } from '../../kernel/index.js';

const NAME = 'cookies';

/** SameSite values. */
export type SameSite = 'lax' | 'strict' | 'none';

/** Options of `new Cookie(name, value, options)`. */
export interface CookieInit {
  path?: string;
  domain?: string;
  expires?: Date;
  maxAge?: number;
  secure?: boolean;
  httpOnly?: boolean;
  sameSite?: SameSite;
}

/** One cookie: what a `Set-Cookie` header says, or a `name=value` pair of a `Cookie` header. */
export class Cookie {
  name: string;
  value: string;
  /** `Path` attribute; `''` when absent (a jar stores the default path instead). */
  path: string;
  /** `Domain` attribute, lower case without a leading dot; `''` when absent (a jar stores the host). */
  domain: string;
  expires: Date | undefined;
  /** `Max-Age` in seconds; `<= 0` means expired. Wins over `expires`. */
  maxAge: number | undefined;
  secure: boolean;
  httpOnly: boolean;
  sameSite: SameSite | undefined;
  /** Set by a jar: the cookie had no (valid) Domain attribute, so it goes back to its host only. */
  hostOnly = false;
  /** Set by a jar: creation time, ms since the epoch (kept when a cookie is replaced). */
  created = 0;

  /**
   * Throws `ArgumentError` when a field could not be sent as it is: a name that is not a token,
   * a value with a CTL, `;`, `\` or a `"` other than one pair around it (RFC 6265's quoted
   * form), a path with a CTL or `;`, a domain that is not plain ASCII host characters, a
   * `sameSite` other than lax/strict/none, an `expires` that is not a valid Date, a `maxAge`
   * that is not a finite number. The same checks run again when the cookie is rendered, so a
   * field changed afterwards cannot slip through either.
   */
  constructor(name: string, value: string, options: CookieInit = {}) {
    this.name = name;
    this.value = value;
    if (typeof options.path !== 'string' && options.path !== undefined) throw new ArgumentError(`cookie path must be a string, got ${typeof options.path}`);
    if (typeof options.domain !== 'string' && options.domain !== undefined) throw new ArgumentError(`cookie domain must be a string, got ${typeof options.domain}`);
    this.path = options.path ?? '';
    this.domain = options.domain === undefined ? '' : normDomain(options.domain);
    this.expires = options.expires;
    this.maxAge = options.maxAge;
    this.secure = options.secure ?? false;
    this.httpOnly = options.httpOnly ?? false;
    this.sameSite = options.sameSite === undefined ? undefined : sameSiteOf(options.sameSite);
    checkCookie(this, true);
  }

  /** Absolute expiry in ms (Max-Age counted from `created`), or `Infinity` for a session cookie. */
  expiryTime(): number {
    if (this.maxAge !== undefined) return this.maxAge <= 0 ? -Infinity : this.created + this.maxAge * 1000;
    if (this.expires !== undefined) {
      const t = this.expires.getTime();
      return Number.isNaN(t) ? Infinity : t;
    }
    return Infinity;
  }
}

function normDomain(d: string): string {
  d = d.trim().toLowerCase();
  return d.startsWith('.') ? d.slice(1) : d;
}

// ---- the rules of what a cookie can hold ----------------------------------------------------
// One set of rules for parsing and for building, so that every cookie parsed (and so every
// cookie a jar holds) can be rendered back, and nothing rendered can carry a `;` (a new
// attribute), a CR or LF (a new header), or any other CTL.

function describeChar(c: number): string {
  return c > 0x20 && c < 0x7f ? `'${String.fromCharCode(c)}'` : `U+${c.toString(16).toUpperCase().padStart(4, '0')}`;
}

function show(s: string): string {
  return JSON.stringify(s.length > 60 ? `${s.slice(0, 60)}...` : s);
}

function isCtl(c: number): boolean {
  return c < 0x20 || c === 0x7f;
}

/**
 * The first character a cookie value cannot hold, or -1. RFC 6265 §4.1.1 cookie-octets, plus
 * space and comma (sent in the quoted form, as Go does and browsers read) and obs-text
 * (0x80-0xFF, which RFC 6265bis user agents store and send back): so no CTL, `"`, `;` or `\`,
 * and nothing a header cannot carry (over 0xFF). With `quotedForm`, a value wrapped in one
 * pair of DQUOTEs (RFC 6265 cookie-value's other form) is checked inside its quotes.
 */
function badValueChar(v: string, quotedForm: boolean): number {
  const quoted = quotedForm && v.length >= 2 && v.charCodeAt(0) === 0x22 && v.charCodeAt(v.length - 1) === 0x22;
  const end = quoted ? v.length - 1 : v.length;
  for (let i = quoted ? 1 : 0; i < end; i++) {
    const c = v.charCodeAt(i);
    if (isCtl(c) || c === 0x22 || c === 0x3b || c === 0x5c || c > 0xff) return c;
  }
  return -1;
}

/** The first character a Path cannot hold (RFC 6265 §4.1.1 path-value: no CTL or `;`), or -1. */
function badPathChar(v: string): number {
  for (let i = 0; i < v.length; i++) {
    const c = v.charCodeAt(i);
    if (isCtl(c) || c === 0x3b || c > 0xff) return c;
  }
  return -1;
}

/** The first character a Domain cannot hold (an ASCII host name or IP: no CTL, space, `;` or `,`), or -1. */
function badDomainChar(v: string): number {
  for (let i = 0; i < v.length; i++) {
    const c = v.charCodeAt(i);
    if (c <= 0x20 || c >= 0x7f || c === 0x3b || c === 0x2c) return c;
  }
  return -1;
}

function sameSiteOf(v: unknown): SameSite {
  const s = typeof v === 'string' ? v.toLowerCase() : undefined;
  if (s === 'lax' || s === 'strict' || s === 'none') return s;
  throw new ArgumentError(`cookie sameSite must be 'lax', 'strict' or 'none', got ${typeof v === 'string' ? show(v) : typeof v}`);
}

/** Why `c` cannot be rendered (its name and value, and with `attributes` the rest), or undefined. */
function cookieProblem(c: Cookie, attributes: boolean): string | undefined {
  if (typeof c.name !== 'string' || !isToken(c.name)) {
    if (typeof c.name !== 'string') return `cookie name must be a string, got ${typeof c.name}`;
    if (c.name === '') return 'cookie name must not be empty';
    let i = 0;
    while (isToken(c.name[i]!)) i++;
    return `cookie name ${show(c.name)} must be a token (RFC 6265 §4.1.1); ${describeChar(c.name.charCodeAt(i))} is not allowed`;
  }
  if (typeof c.value !== 'string') return `cookie value must be a string, got ${typeof c.value}`;
  let bad = badValueChar(c.value, true);
  if (bad >= 0) {
    return `cookie value ${show(c.value)} of ${show(c.name)} has ${describeChar(bad)}, which a cookie value cannot hold (RFC 6265 §4.1.1); percent-encode the value (encodeURIComponent)`;
  }
  if (!attributes) return undefined;
  if (typeof c.path !== 'string') return `cookie path must be a string, got ${typeof c.path}`;
  if ((bad = badPathChar(c.path)) >= 0) return `cookie path ${show(c.path)} has ${describeChar(bad)}, which a Path cannot hold; percent-encode it`;
  if (typeof c.domain !== 'string') return `cookie domain must be a string, got ${typeof c.domain}`;
  if ((bad = badDomainChar(c.domain)) >= 0) {
    return `cookie domain ${show(c.domain)} has ${describeChar(bad)}, which a Domain cannot hold${bad > 0x7f ? '; use the A-label (xn--) form of the name' : ''}`;
  }
  if (c.expires !== undefined) {
    if (!(c.expires instanceof Date)) return `cookie expires must be a Date, got ${typeof c.expires}`;
    if (Number.isNaN(c.expires.getTime())) return 'cookie expires must be a valid Date, got an Invalid Date';
  }
  if (c.maxAge !== undefined && (typeof c.maxAge !== 'number' || !Number.isFinite(c.maxAge))) {
    return `cookie maxAge must be a finite number of seconds, got ${typeof c.maxAge === 'number' ? String(c.maxAge) : typeof c.maxAge}`;
  }
  if (typeof c.secure !== 'boolean') return `cookie secure must be a boolean, got ${typeof c.secure}`;
  if (typeof c.httpOnly !== 'boolean') return `cookie httpOnly must be a boolean, got ${typeof c.httpOnly}`;
  if (c.sameSite !== undefined) {
    try {
      sameSiteOf(c.sameSite);
    } catch (err) {
      return (err as Error).message;
    }
  }
  return undefined;
}

function checkCookie(c: Cookie, attributes: boolean): void {
  const problem = cookieProblem(c, attributes);
  if (problem !== undefined) throw new ArgumentError(problem);
}

// ---- parsing -----------------------------------------------------------------------------------

function unquote(v: string): string {
  return v.length >= 2 && v.startsWith('"') && v.endsWith('"') ? v.slice(1, -1) : v;
}

/** A value after unquoting: the quotes are gone, so none may be left. */
function validValue(v: string): boolean {
  return badValueChar(v, false) < 0;
}

/** RFC 6265bis: a set-cookie-string with a CTL other than HTAB is ignored whole. */
function hasCtl(s: string): boolean {
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (isCtl(c) && c !== 0x09) return true;
  }
  return false;
}

/** Parses one `Set-Cookie` value (RFC 6265 §5.2). Invalid input gives `undefined`; never throws. */
export function parseSetCookie(header: string): Cookie | undefined {
  if (typeof header !== 'string' || hasCtl(header)) return undefined;
  const parts = header.split(';');
  const pair = parts[0]!;
  const eq = pair.indexOf('=');
  if (eq < 0) return undefined;
  const name = pair.slice(0, eq).trim();
  const value = unquote(pair.slice(eq + 1).trim());
  if (!isToken(name) || !validValue(value)) return undefined;
  const c = new Cookie(name, value);
  for (let i = 1; i < parts.length; i++) {
    const av = parts[i]!;
    const e = av.indexOf('=');
    const key = (e < 0 ? av : av.slice(0, e)).trim().toLowerCase();
    const val = e < 0 ? '' : av.slice(e + 1).trim();
    switch (key) {
      case 'expires': {
        const d = parseCookieDate(unquote(val));
        if (d !== undefined) c.expires = d;
        break;
      }
      case 'max-age': {
        if (!/^-?[0-9]+$/.test(val)) break;
        const n = Number(val);
        c.maxAge = n <= 0 ? 0 : Math.min(n, 400 * 24 * 3600);
        break;
      }
      case 'domain':
        if (val !== '') c.domain = normDomain(val);
        break;
      case 'path':
        if (val.startsWith('/')) c.path = val;
        else c.path = '';
        break;
      case 'secure':
        c.secure = true;
        break;
      case 'httponly':
        c.httpOnly = true;
        break;
      case 'samesite': {
        const s = val.toLowerCase();
        c.sameSite = s === 'lax' || s === 'strict' || s === 'none' ? s : undefined;
        break;
      }
      default:
        break; // unknown attributes are ignored
    }
  }
  // A Path or Domain that could not be rendered back (a Domain no host name can match).
  return cookieProblem(c, true) === undefined ? c : undefined;
}

const MONTHS = ['jan', 'feb', 'mar', 'apr', 'may', 'jun', 'jul', 'aug', 'sep', 'oct', 'nov', 'dec'];

/** RFC 6265 §5.1.1 cookie-date; `undefined` when it fails. */
export function parseCookieDate(s: string): Date | undefined {
  // delimiter = %x09 / %x20-2F / %x3B-40 / %x5B-60 / %x7B-7E
  const tokens = s.split(/[\x09\x20-\x2f\x3b-\x40\x5b-\x60\x7b-\x7e]+/).filter((t) => t !== '');
  let time: [number, number, number] | undefined;
  let day: number | undefined;
  let month: number | undefined;
  let year: number | undefined;
  for (const t of tokens) {
    let m: RegExpExecArray | null;
    if (time === undefined && (m = /^(\d{1,2}):(\d{1,2}):(\d{1,2})(?:\D.*)?$/.exec(t)) !== null) {
      time = [Number(m[1]), Number(m[2]), Number(m[3])];
    } else if (day === undefined && (m = /^(\d{1,2})(?:\D.*)?$/.exec(t)) !== null) {
      day = Number(m[1]);
    } else if (month === undefined && MONTHS.includes(t.slice(0, 3).toLowerCase()) && t.length >= 3) {
      month = MONTHS.indexOf(t.slice(0, 3).toLowerCase());
    } else if (year === undefined && (m = /^(\d{2,4})(?:\D.*)?$/.exec(t)) !== null) {
      year = Number(m[1]);
    }
  }
  if (time === undefined || day === undefined || month === undefined || year === undefined) return undefined;
  if (year >= 70 && year <= 99) year += 1900;
  else if (year >= 0 && year <= 69) year += 2000;
  if (day < 1 || day > 31 || year < 1601 || time[0] > 23 || time[1] > 59 || time[2] > 59) return undefined;
  const d = new Date(Date.UTC(year, month, day, time[0], time[1], time[2]));
  if (d.getUTCDate() !== day) return undefined; // Feb 30 and the like
  return d;
}

/** `name=value` pairs of `Cookie` header values; invalid pairs are skipped. */
function parseCookieHeader(values: string[]): Cookie[] {
  const out: Cookie[] = [];
  for (const v of values) {
    for (const part of v.split(';')) {
      const p = part.trim();
      if (p === '') continue;
      const eq = p.indexOf('=');
      if (eq < 0) continue;
      const name = p.slice(0, eq).trim();
      const value = unquote(p.slice(eq + 1).trim());
      if (isToken(name) && validValue(value)) out.push(new Cookie(name, value));
    }
  }
  return out;
}

/** `Cookies.cookies(message)` (named `cookiesOf` at top level: `cookies` is the plugin). Cookies of a message: the `Cookie` header of a `Request`, the `Set-Cookie` headers of a `Response`. */
export function cookiesOf(message: Request | Response): Cookie[] {
  if (message instanceof Response) {
    const out: Cookie[] = [];
    for (const h of message.headers.getAll('Set-Cookie')) {
      const c = parseSetCookie(h);
      if (c !== undefined) out.push(c);
    }
    return out;
  }
  if (message instanceof Request) return parseCookieHeader(message.headers.getAll('Cookie'));
  throw new ArgumentError('Cookies.cookies(message): message must be a Request or a Response');
}

/** The cookies of a request's `Cookie` header (the reference's `HTTP.getcookies(req)`). */
export function getRequestCookies(req: Request): Cookie[] {
  return parseCookieHeader(req.headers.getAll('Cookie'));
}

// ---- stringify ---------------------------------------------------------------------------------

// Both check the cookie first: its fields are plain properties a caller may have changed since
// construction, and what goes out must never carry a `;`, CR, LF or other CTL.

function pairString(c: Cookie): string {
  checkCookie(c, false);
  const v = (c.value.includes(' ') || c.value.includes(',')) && !c.value.startsWith('"') ? `"${c.value}"` : c.value;
  return `${c.name}=${v}`;
}

function setCookieString(c: Cookie): string {
  checkCookie(c, true);
  let s = pairString(c);
  if (c.path !== '') s += `; Path=${c.path}`;
  if (c.domain !== '') s += `; Domain=${c.domain}`;
  if (c.expires !== undefined) s += `; Expires=${c.expires.toUTCString()}`;
  if (c.maxAge !== undefined) s += `; Max-Age=${c.maxAge > 0 ? Math.floor(c.maxAge) : 0}`;
  if (c.httpOnly) s += '; HttpOnly';
  if (c.secure) s += '; Secure';
  if (c.sameSite !== undefined) {
    const ss = sameSiteOf(c.sameSite);
    s += `; SameSite=${ss[0]!.toUpperCase()}${ss.slice(1)}`;
  }
  return s;
}

/**
 * `stringify(cookie, isRequest = true)`: `name=value` for a request, a full `Set-Cookie` value
 * with `isRequest = false`. `stringify(prefix, cookies, isRequest = true)`: the cookies joined
 * with `; ` and appended to `prefix` (after `; ` when `prefix` is not empty).
 */
export function stringify(cookie: Cookie, isRequest?: boolean): string;
export function stringify(prefix: string, cookies: Iterable<Cookie>, isRequest?: boolean): string;
export function stringify(a: Cookie | string, b?: boolean | Iterable<Cookie>, c?: boolean): string {
  if (a instanceof Cookie) return (b ?? true) === false ? setCookieString(a) : pairString(a);
  if (typeof a !== 'string' || b === undefined || typeof b === 'boolean') {
    throw new ArgumentError('stringify(cookie, isRequest?) or stringify(prefix, cookies, isRequest?)');
  }
  const isRequest = c ?? true;
  const parts: string[] = [];
  for (const ck of b) parts.push(isRequest ? pairString(ck) : setCookieString(ck));
  const joined = parts.join('; ');
  if (a === '') return joined;
  return joined === '' ? a : `${a}; ${joined}`;
}

/** Adds `cookie` to a request's `Cookie` header (joined with `; `) or as a new `Set-Cookie` header of a response. */
export function addCookie(message: Request | Response, cookie: Cookie): void {
  if (message instanceof Response) {
    message.headers.push('Set-Cookie', setCookieString(cookie));
    return;
  }
  if (!(message instanceof Request)) throw new ArgumentError('addCookie(message, cookie): message must be a Request or a Response');
  const prev = message.headers.getAll('Cookie').filter((v) => v.trim() !== '');
  message.headers.set('Cookie', [...prev, pairString(cookie)].join('; '));
}

// ---- jar ---------------------------------------------------------------------------------------

/**
 * An in-memory cookie store. `entries` maps a host (a host-only cookie's host, or a domain
 * cookie's Domain) to its cookies keyed by `name;path`. A map passed in is used without copying.
 */
export class CookieJar {
  readonly entries: Map<string, Map<string, Cookie>>;
  constructor(entries?: Map<string, Map<string, Cookie>>) {
    if (entries !== undefined && !(entries instanceof Map)) throw new ArgumentError('new CookieJar(entries?): entries must be a Map');
    this.entries = entries ?? new Map();
  }
}

const IPV4 = /^\d{1,3}(?:\.\d{1,3}){3}$/;

function isIP(host: string): boolean {
  return host.includes(':') || IPV4.test(host);
}

function normHost(host: string): string {
  let h = host.trim().toLowerCase();
  if (h.startsWith('[') && h.endsWith(']')) h = h.slice(1, -1);
  if (h.endsWith('.')) h = h.slice(0, -1);
  return h;
}

function isSecureOrigin(scheme: string, host: string): boolean {
  const s = scheme.toLowerCase().replace(/:$/, '');
  if (s === 'https' || s === 'wss') return true;
  return host === 'localhost' || host.endsWith('.localhost') || host === '::1' || /^127\.\d+\.\d+\.\d+$/.test(host);
}

function domainMatch(host: string, domain: string): boolean {
  if (host === domain) return true;
  return !isIP(host) && host.endsWith(domain) && host.charCodeAt(host.length - domain.length - 1) === 46; /* . */
}

function pathMatch(reqPath: string, cookiePath: string): boolean {
  if (reqPath === cookiePath) return true;
  if (!reqPath.startsWith(cookiePath)) return false;
  return cookiePath.endsWith('/') || reqPath.charCodeAt(cookiePath.length) === 47; /* / */
}

function defaultPath(path: string): string {
  const p = path.split('?')[0]!;
  if (!p.startsWith('/')) return '/';
  const i = p.lastIndexOf('/');
  return i <= 0 ? '/' : p.slice(0, i);
}

type Tldts = typeof import('tldts');

let tldts: Tldts | null = null;

/**
 * The public suffix list (`tldts`), loaded on the first Domain cookie: it weighs megabytes, and
 * most programs store none. Synchronously, since storing a cookie is.
 */
function publicSuffixList(): Tldts {
  return (tldts ??= createRequire(import.meta.url)('tldts') as Tldts);
}

function isPublicSuffix(domain: string): boolean {
  const info = publicSuffixList().parse(domain, { allowPrivateDomains: true });
  return info.publicSuffix === domain;
}

/** Stores one parsed cookie received from `scheme://host` for request path `path`; false when refused. */
export function storeCookie(jar: CookieJar, scheme: string, host: string, path: string, cookie: Cookie, now = Date.now()): boolean {
  const h = normHost(host);
  const secureOrigin = isSecureOrigin(scheme, h);
  const c = new Cookie(cookie.name, cookie.value, {
    path: cookie.path,
    domain: cookie.domain,
    ...(cookie.expires !== undefined ? { expires: cookie.expires } : {}),
    ...(cookie.maxAge !== undefined ? { maxAge: cookie.maxAge } : {}),
    secure: cookie.secure,
    httpOnly: cookie.httpOnly,
    ...(cookie.sameSite !== undefined ? { sameSite: cookie.sameSite } : {}),
  });
  c.created = now;
  if (c.secure && !secureOrigin) return false;
  if (c.domain !== '') {
    if (isIP(h)) {
      if (normHost(c.domain) !== h) return false; // an IP's parent (or any other domain)
      c.domain = h;
      c.hostOnly = true;
    } else if (isPublicSuffix(c.domain)) {
      if (c.domain !== h) return false;
      c.hostOnly = true; // RFC 6265 §5.3 step 5: the host itself is a public suffix
    } else if (!domainMatch(h, c.domain)) {
      return false;
    }
  } else {
    c.domain = h;
    c.hostOnly = true;
  }
  if (c.path === '' || !c.path.startsWith('/')) c.path = defaultPath(path);
  // RFC 6265bis §4.1.3: the prefixes are matched case-insensitively (`__secure-`, `__HOST-`, …).
  if (c.name.startsWith('__')) {
    const prefix = c.name.slice(0, 9).toLowerCase();
    if (prefix === '__secure-' && !(c.secure && secureOrigin)) return false;
    if (prefix.startsWith('__host-') && !(c.secure && secureOrigin && c.hostOnly && c.path === '/')) return false;
  }

  const key = `${c.name};${c.path}`;
  let bucket = jar.entries.get(c.domain);
  const old = bucket?.get(key);
  if (old !== undefined) {
    if (old.secure && !secureOrigin) return false; // RFC 6265bis: no overwriting a Secure cookie from an insecure origin
    c.created = old.created;
  }
  // Max-Age wins over Expires and counts from now; the jar keeps it as an absolute `expires`.
  if (c.maxAge !== undefined) {
    c.expires = new Date(c.maxAge <= 0 ? 0 : now + c.maxAge * 1000);
    c.maxAge = undefined;
  }
  if (c.expiryTime() <= now) {
    if (old !== undefined) {
      bucket!.delete(key);
      if (bucket!.size === 0) jar.entries.delete(c.domain);
    }
    return true;
  }
  if (bucket === undefined) {
    bucket = new Map();
    jar.entries.set(c.domain, bucket);
  }
  bucket.set(key, c);
  return true;
}

/** Stores the `Set-Cookie` headers of a response to a request for `scheme://host/path` (the reference's `setcookies!`). */
export function setCookies(jar: CookieJar, scheme: string, host: string, path: string, headers: Iterable<readonly [string, string]>, now = Date.now()): void {
  for (const [k, v] of headers) {
    if (k.length !== 10 || k.toLowerCase() !== 'set-cookie') continue;
    const c = parseSetCookie(v);
    if (c !== undefined) storeCookie(jar, scheme, host, path, c, now);
  }
}

/**
 * The cookies to send to `scheme://host/path` at `now` (ms; default now), longest path first,
 * then earliest created (the reference's `getcookies!`). Expired cookies met on the way are removed.
 */
export function getJarCookies(jar: CookieJar, scheme: string, host: string, path: string, now: number | Date = Date.now()): Cookie[] {
  const t = typeof now === 'number' ? now : now.getTime();
  const h = normHost(host);
  const secure = isSecureOrigin(scheme, h);
  const p = path.split('?')[0] || '/';
  const keys = [h];
  if (!isIP(h)) for (let i = h.indexOf('.'); i >= 0; i = h.indexOf('.', i + 1)) keys.push(h.slice(i + 1));
  const out: Cookie[] = [];
  for (const key of keys) {
    const bucket = jar.entries.get(key);
    if (bucket === undefined) continue;
    for (const [k, c] of bucket) {
      if (c.expiryTime() <= t) {
        bucket.delete(k);
        continue;
      }
      if (c.hostOnly ? h !== c.domain : !domainMatch(h, c.domain)) continue;
      if (!pathMatch(p, c.path)) continue;
      if (c.secure && !secure) continue;
      out.push(c);
    }
    if (bucket.size === 0) jar.entries.delete(key);
  }
  out.sort((a, b) => b.path.length - a.path.length || a.created - b.created);
  return out;
}

/** The reference's `HTTP.Cookies` namespace. `getCookies` is the jar's (`getcookies!`); `getRequestCookies` is `HTTP.getcookies(req)`. */
export const Cookies = Object.freeze({
  Cookie,
  CookieJar,
  cookies: cookiesOf,
  parseSetCookie,
  stringify,
  addCookie,
  getCookies: getJarCookies,
  setCookies,
  getRequestCookies,
});

// ---- plugin ------------------------------------------------------------------------------------

/** The cookie options: per call, as `Client` defaults, or as the plugin's own defaults. */
export interface CookieOptions {
  /** The jar to send cookies from and store `Set-Cookie` into; `false` turns cookies off for the call. Default: none. */
  cookiejar?: CookieJar | false;
}

/** The plugin's options (per call, `Client` defaults, `register`) and their checks. */
const CALL_OPTIONS: Readonly<Record<keyof CookieOptions, OptionCheck>> = {
  cookiejar: (v) => (v === false || v instanceof CookieJar ? null : 'a CookieJar (new Cookies.CookieJar()) or false'),
};

/** The pairs (`name=value`) this plugin added to the call's last request. */
const kAdded = Symbol('cookies.added');

function jarOf(ctx: RequestContext, base: CookieOptions): CookieJar | undefined {
  const j = getCallOptions(ctx).cookiejar ?? base.cookiejar;
  if (j === undefined || j === false) return undefined;
  if (!(j instanceof CookieJar)) throw new ArgumentError('cookiejar must be a CookieJar');
  return j;
}

/** The `cookies` plugin. Options given at `register` are defaults under `Client` and per-call options. */
export const cookies = definePlugin({
  name: NAME,
  callOptions: CALL_OPTIONS,
  register(kernel, options: CookieOptions) {
    checkPluginOptions(options, CALL_OPTIONS, 'register(cookies, …)');
    const base = options;
    kernel.hooks.client.onRequest.tap({ name: NAME, stage: Stage.COOKIES }, (req, ctx) => {
      const added = ctx.get<string[]>(kAdded);
      const jar = jarOf(ctx, base);
      if (jar === undefined && added === undefined) return;
      // The user's pairs: the Cookie header minus what this plugin added on an earlier hop or attempt.
      let user: string[] = [];
      for (const v of req.headers.getAll('Cookie')) for (const part of v.split(';')) if (part.trim() !== '') user.push(part.trim());
      if (added !== undefined && added.length > 0) {
        const rest = added.slice();
        user = user.filter((p) => {
          const i = rest.indexOf(p);
          if (i < 0) return true;
          rest.splice(i, 1);
          return false;
        });
      }
      const mine: string[] = [];
      if (jar !== undefined && req.url !== '') {
        let u: URL | undefined;
        try {
          u = new URL(req.url);
        } catch {
          u = undefined;
        }
        if (u !== undefined) {
          const names = new Set(user.map((p) => p.slice(0, Math.max(0, p.indexOf('='))).trim()));
          for (const c of getJarCookies(jar, u.protocol, u.hostname, u.pathname)) {
            if (!names.has(c.name)) mine.push(pairString(c));
          }
        }
      }
      ctx.set(kAdded, mine);
      const all = [...user, ...mine];
      if (all.length === 0) req.headers.delete('Cookie');
      else req.headers.set('Cookie', all.join('; '));
    });
    kernel.hooks.client.onResponseHead.tap({ name: NAME, stage: Stage.COOKIES }, (res, ctx) => {
      const jar = jarOf(ctx, base);
      if (jar === undefined || !res.headers.has('Set-Cookie')) return;
      const from = res.request?.url || res.url;
      if (from === '') return;
      let u: URL;
      try {
        u = new URL(from);
      } catch {
        return;
      }
      setCookies(jar, u.protocol, u.hostname, u.pathname, res.headers);
    });
  },
});
