/**
 * `ProxyConfig`: which proxy (if any) a URL goes through. The reference's `ProxyConfig`,
 * `ProxyURL` ({@link proxyURL}) and `ProxyFromEnvironment` ({@link proxyFromEnvironment}).
 *
 * Selection: `http:` (and `ws:`) URLs use `http`, else `all`; `https:` (and `wss:`) URLs use
 * `https`, else `all`; hosts matched by `noProxy` (always localhost and loopback) go direct.
 *
 * Environment (`env: true`, `proxyFromEnvironment()`): `http_proxy`/`HTTP_PROXY`,
 * `https_proxy`/`HTTPS_PROXY`, `all_proxy`/`ALL_PROXY`, `no_proxy`/`NO_PROXY`; the lower-case
 * name wins when both are set (curl, undici, Python; Go reads upper case first); empty means
 * unset. In a CGI environment (`REQUEST_METHOD` set) upper-case `HTTP_PROXY` is refused, as Go
 * does, because a request's `Proxy:` header arrives there as `HTTP_PROXY` ("httpoxy"): a
 * request that would use it fails with `ArgumentError`. Lower-case `http_proxy`, which no
 * request header can set, is still honoured (Go refuses both). Unreadable `NO_PROXY` entries
 * are skipped; an unreadable proxy URL throws `ArgumentError` naming the variable.
 */
import process from 'node:process';
import { ArgumentError } from '../../kernel/index.js';
import { ProxyEndpoint } from './endpoint.js';
import { NoProxy, type NoProxySpec } from './no-proxy.js';

/** A proxy URL as options take it; `null` means "none" (and stops `env` from filling it in). */
export type ProxyURLInput = string | URL | ProxyEndpoint | null;

/** Options of `new ProxyConfig({ … })`. */
export interface ProxyConfigOptions {
  /** Proxy for `http:` and `ws:` URLs. */
  http?: ProxyURLInput;
  /** Proxy for `https:` and `wss:` URLs. */
  https?: ProxyURLInput;
  /** Proxy for either when the specific one is unset. */
  all?: ProxyURLInput;
  /** Hosts reached directly (see {@link NoProxy}). */
  noProxy?: NoProxy | NoProxySpec | null;
  /**
   * Fill the settings left `undefined` from the environment: `true` reads `process.env` (now,
   * once), an object is read instead of it. Default false.
   */
  env?: boolean | ProxyEnvironment;
}

/** Options of `new ProxyConfig(url, { noProxy })` and {@link proxyURL}. */
export interface ProxyURLOptions {
  /** Hosts reached directly (see {@link NoProxy}). */
  noProxy?: NoProxy | NoProxySpec | null;
}

/** The environment variables a config reads, as `process.env` has them. */
export type ProxyEnvironment = Readonly<Record<string, string | undefined>>;

/** A proxy policy: the value of the `proxy` option of `Client`, `Transport`, requests and `WebSockets.open`. */
export class ProxyConfig {
  /** Proxy for `http:`/`ws:` URLs, or null. */
  readonly http: ProxyEndpoint | null;
  /** Proxy for `https:`/`wss:` URLs, or null. */
  readonly https: ProxyEndpoint | null;
  /** Proxy for either when the specific one is null. */
  readonly all: ProxyEndpoint | null;
  /** Hosts reached directly. */
  readonly noProxy: NoProxy;
  /** The `HTTP_PROXY` value refused in a CGI environment (see the module notes), else null. */
  readonly refusedHttp: string | null;
  private readonly cache = new Map<string, ProxyEndpoint | null>();

  /** No proxy: every request connects directly. */
  constructor();
  /** Every request through `url` (the reference's `ProxyConfig(url; no_proxy)`), except `noProxy` hosts. */
  constructor(url: string | URL, options?: ProxyURLOptions);
  /** Per-scheme proxies; with `env: true`, unset ones come from the environment. */
  constructor(options: ProxyConfigOptions);
  constructor(a?: string | URL | ProxyConfigOptions, b?: ProxyURLOptions) {
    if (a === undefined) {
      this.http = this.https = this.all = null;
      this.noProxy = new NoProxy();
      this.refusedHttp = null;
    } else if (typeof a === 'string' || a instanceof URL) {
      if (b !== undefined && (typeof b !== 'object' || b === null)) throw new ArgumentError('ProxyConfig(url, options): options must be an object');
      this.all = new ProxyEndpoint(a);
      this.http = this.https = null;
      this.noProxy = toNoProxy(b?.noProxy, false);
      this.refusedHttp = null;
    } else if (typeof a === 'object' && a !== null && !Array.isArray(a)) {
      if (a.env !== undefined && typeof a.env !== 'boolean' && (typeof a.env !== 'object' || a.env === null)) {
        throw new ArgumentError('ProxyConfig: env must be a boolean or an object of environment variables');
      }
      const env = a.env === true ? process.env : typeof a.env === 'object' ? a.env : null;
      const r = fromOptions(a, env);
      this.http = r.http;
      this.https = r.https;
      this.all = r.all;
      this.noProxy = r.noProxy;
      this.refusedHttp = r.refusedHttp;
    } else {
      throw new ArgumentError(`ProxyConfig takes nothing, a proxy URL, or { http, https, all, noProxy, env }; got ${a === null ? 'null' : Array.isArray(a) ? 'an array' : typeof a}`);
    }
  }

  /** True when no proxy is configured at all. */
  get isDirect(): boolean {
    return this.http === null && this.https === null && this.all === null && this.refusedHttp === null;
  }

  /** The proxy `url` goes through (http, https, ws or wss), or null for a direct connection. */
  proxyFor(url: string | URL): ProxyEndpoint | null {
    let u: URL;
    try {
      u = url instanceof URL ? url : new URL(url);
    } catch {
      throw new ArgumentError(`proxyFor: invalid URL ${JSON.stringify(String(url))}`);
    }
    const secure = u.protocol === 'https:' || u.protocol === 'wss:';
    if (!secure && u.protocol !== 'http:' && u.protocol !== 'ws:') throw new ArgumentError(`proxyFor: unsupported URL scheme ${u.protocol}`);
    const port = u.port !== '' ? Number(u.port) : secure ? 443 : 80;
    return this.select(secure ? 'https:' : 'http:', u.hostname, port);
  }

  /**
   * The proxy for a connection to `host:port` (`protocol` `http:` or `https:`; `ws:`/`wss:`
   * map to them), or null. Throws `ArgumentError` for a refused CGI `HTTP_PROXY`.
   */
  select(protocol: string, host: string, port: number): ProxyEndpoint | null {
    const secure = protocol === 'https:' || protocol === 'wss:';
    const ep = secure ? (this.https ?? this.all) : (this.http ?? this.all);
    if (ep === null && (secure || this.refusedHttp === null)) return null;
    const key = `${secure ? 's' : ''}${host}:${port}`;
    let hit = this.cache.get(key);
    if (hit === undefined) {
      if (this.noProxy.matches(host, port)) hit = null;
      else if (!secure && this.http === null && this.refusedHttp !== null) {
        throw new ArgumentError('refusing to use HTTP_PROXY in a CGI environment (REQUEST_METHOD is set): a request header can set it ("httpoxy"); set http_proxy or pass ProxyConfig({ http })');
      } else hit = ep;
      // A few hosts per client in practice; the bound only stops a crawler from growing it forever.
      if (this.cache.size >= 512) this.cache.clear();
      this.cache.set(key, hit);
    }
    return hit;
  }

  /** A summary without credentials. */
  toString(): string {
    const parts: string[] = [];
    if (this.http !== null) parts.push(`http=${this.http.href}`);
    if (this.https !== null) parts.push(`https=${this.https.href}`);
    if (this.all !== null) parts.push(`all=${this.all.href}`);
    if (this.noProxy.entries.length > 0) parts.push(`noProxy=${this.noProxy.toString()}`);
    return `ProxyConfig(${parts.length > 0 ? parts.join(' ') : 'direct'})`;
  }
}

/**
 * Every request through `url` except hosts in `noProxy` (the reference's
 * `ProxyURL(url; no_proxy)`).
 */
export function proxyURL(url: string | URL, options: ProxyURLOptions = {}): ProxyConfig {
  return new ProxyConfig(url, options);
}

/**
 * A config from `HTTP_PROXY`, `HTTPS_PROXY`, `ALL_PROXY` and `NO_PROXY` (either case), read
 * once, now (the reference's `ProxyFromEnvironment()`). `env` defaults to `process.env`.
 */
export function proxyFromEnvironment(env: ProxyEnvironment = process.env): ProxyConfig {
  if (typeof env !== 'object' || env === null) throw new ArgumentError('proxyFromEnvironment(env): env must be an object of variables');
  return new ProxyConfig({ env });
}

interface Resolved {
  http: ProxyEndpoint | null;
  https: ProxyEndpoint | null;
  all: ProxyEndpoint | null;
  noProxy: NoProxy;
  refusedHttp: string | null;
}

function fromOptions(o: ProxyConfigOptions, env: ProxyEnvironment | null): Resolved {
  for (const k of Object.keys(o)) {
    if (k !== 'http' && k !== 'https' && k !== 'all' && k !== 'noProxy' && k !== 'env') {
      throw new ArgumentError(`ProxyConfig: unknown option ${JSON.stringify(k)} (http, https, all, noProxy, env)`);
    }
  }
  let refusedHttp: string | null = null;
  let http: ProxyEndpoint | null;
  if (o.http !== undefined || env === null) http = endpoint(o.http, 'http');
  else {
    const lower = variable(env, 'http_proxy');
    const upper = variable(env, 'HTTP_PROXY');
    if (lower !== undefined) http = new ProxyEndpoint(lower, 'http_proxy');
    else if (upper !== undefined && variable(env, 'REQUEST_METHOD') !== undefined) {
      http = null;
      refusedHttp = upper;
    } else http = upper === undefined ? null : new ProxyEndpoint(upper, 'HTTP_PROXY');
  }
  const https = o.https !== undefined || env === null ? endpoint(o.https, 'https') : fromEnv(env, 'https_proxy');
  const all = o.all !== undefined || env === null ? endpoint(o.all, 'all') : fromEnv(env, 'all_proxy');
  let noProxy: NoProxy;
  if (o.noProxy !== undefined || env === null) noProxy = toNoProxy(o.noProxy, false);
  else {
    const v = variable(env, 'no_proxy') ?? variable(env, 'NO_PROXY');
    noProxy = new NoProxy(v ?? null, { lenient: true });
  }
  return { http, https, all, noProxy, refusedHttp };
}

function endpoint(v: ProxyURLInput | undefined, name: string): ProxyEndpoint | null {
  if (v === undefined || v === null) return null;
  if (v instanceof ProxyEndpoint) return v;
  return new ProxyEndpoint(v, `ProxyConfig ${name}`);
}

function fromEnv(env: ProxyEnvironment, lower: string): ProxyEndpoint | null {
  const upper = lower.toUpperCase();
  const l = variable(env, lower);
  if (l !== undefined) return new ProxyEndpoint(l, lower);
  const u = variable(env, upper);
  return u === undefined ? null : new ProxyEndpoint(u, upper);
}

function variable(env: ProxyEnvironment, name: string): string | undefined {
  const v = env[name];
  return v === undefined || v.trim() === '' ? undefined : v;
}

function toNoProxy(v: NoProxy | NoProxySpec | null | undefined, lenient: boolean): NoProxy {
  if (v instanceof NoProxy) return v;
  if (v === undefined || v === null) return new NoProxy();
  return new NoProxy(v, { lenient });
}
