/**
 * Options of the WebSockets plugin: their types, defaults and validation. Resolved once per
 * server, upgrade or `open`, so the message path reads plain fields.
 */
import type { ConnectionOptions } from 'node:tls';
import type { CookieJar } from '../cookies/index.js';
import type { ProxyOption } from '../proxy/index.js';
import { ArgumentError, isToken, type ExchangeTimeoutOptions, type HeadersInit, type Kernel, type Request, type RequestContext, type ServeOptions } from '../../kernel/index.js';

/** Default `maxFrameSize`: 16 MiB (the reference's `maxframesize`). */
export const DEFAULT_MAX_FRAME_SIZE = 16 * 1024 * 1024;
/** Default `maxFragmentation`: fragments per message. */
export const DEFAULT_MAX_FRAGMENTATION = 1024;

/**
 * Who may open a WebSocket, judged on the `Origin` header (null when absent, as from
 * non-browser clients; browsers always send it). A refusal is answered 403.
 *
 * - `'same-origin'` (default; also `true`): no Origin, or one whose host and port equal the
 *   request's `Host` (letter case ignored, the scheme's default port assumed where none is
 *   written). `Origin: null` (sandboxed frames, `file:` pages) is refused.
 * - `'any'` (also `false`): every request, whatever its Origin. Only for endpoints that do not
 *   act on cookies or other credentials a browser adds by itself: a page on any site can
 *   open such a WebSocket as its visitor (cross-site WebSocket hijacking, RFC 6455 §10.2).
 * - A list of origins (`['https://app.example', 'http://localhost:5173']`): exactly these
 *   (compared as origins: letter case and default ports do not matter); a request without
 *   Origin is refused. `'null'` in the list allows `Origin: null`.
 * - A function `(origin, request) => boolean` (or a promise of one) decides.
 *
 * A request with two `Origin` fields is refused under every policy but `'any'`.
 */
export type CheckOrigin = 'same-origin' | 'any' | boolean | readonly string[] | ((origin: string | null, request: Request) => boolean | Promise<boolean>);

/** @internal `checkOrigin` resolved: a policy name, the allowed origins normalized, or the function. */
export type ResolvedCheckOrigin = 'same-origin' | 'any' | ReadonlySet<string> | ((origin: string | null, request: Request) => boolean | Promise<boolean>);

/**
 * @internal An origin as compared: `scheme://host[:port]` in lower case without the scheme's
 * default port, `'null'` as is; null when `s` is not an origin (a path, a query, user info).
 */
export function normalizeOrigin(s: string): string | null {
  if (s === 'null') return s;
  let u: URL;
  try {
    u = new URL(s);
  } catch {
    return null;
  }
  if (u.host === '' || u.username !== '' || u.password !== '' || (u.pathname !== '' && u.pathname !== '/') || u.search !== '' || u.hash !== '') return null;
  if (s.includes('?') || s.includes('#')) return null;
  // URL drops a special scheme's default port and lowercases its host; other schemes keep theirs.
  return `${u.protocol}//${u.host}`.toLowerCase();
}

function resolveCheckOrigin(c: unknown, where: string): ResolvedCheckOrigin {
  if (c === undefined || c === true || c === 'same-origin') return 'same-origin';
  if (c === false || c === 'any') return 'any';
  if (typeof c === 'function') return c as ResolvedCheckOrigin;
  if (Array.isArray(c)) {
    const out = new Set<string>();
    for (const x of c as unknown[]) {
      const o = typeof x === 'string' ? normalizeOrigin(x) : null;
      if (o === null) throw new ArgumentError(`${where}: checkOrigin lists origins as scheme://host[:port] (such as 'https://app.example'), without a path; got ${JSON.stringify(x)}`);
      out.add(o);
    }
    return out;
  }
  throw new ArgumentError(
    `${where}: checkOrigin must be 'same-origin', 'any', a list of origins or a function (origin, request) => boolean, got ${typeof c === 'string' ? JSON.stringify(c) : typeof c}`,
  );
}

/** Limits shared by both ends. */
export interface WebSocketLimits {
  /** Largest frame, and largest message after decompression; larger closes with 1009. Default 16 MiB. */
  maxFrameSize?: number;
  /** Most fragments one message may arrive in; more closes with 1008. Default 1024; 0 = no bound. */
  maxFragmentation?: number;
}

/** Options of a server-side WebSocket (`upgrade`, and each connection of `listen`). */
export interface WebSocketServerOptions extends WebSocketLimits {
  /** Accept permessage-deflate (RFC 7692) when the client offers it. Default false. */
  compress?: boolean;
  /** Subprotocols this server speaks; the first one the client offers that is here is selected, none otherwise. */
  subprotocols?: readonly string[];
  /** Who may connect, by `Origin` (see {@link CheckOrigin}). Default `'same-origin'`. */
  checkOrigin?: CheckOrigin;
}

/** Options of `WebSockets.listen`: the WebSocket options plus the server's (`host`, `port`, `listenAny`, `tls`, …). */
export interface WebSocketListenOptions extends WebSocketServerOptions, Omit<ServeOptions, 'maxBodyBytes'> {}

/**
 * Options of `WebSockets.open`. Durations in ms; 0 turns a timeout off. The timeouts are a
 * call's, applied to the handshake: `requestTimeout` bounds it whole, `responseHeaderTimeout`
 * the wait for the 101.
 */
export interface WebSocketOpenOptions extends WebSocketLimits, ExchangeTimeoutOptions {
  /** Extra request headers (`Authorization`, `Origin`, `Cookie`, …). */
  headers?: HeadersInit;
  /** Subprotocols to offer, most preferred first. */
  subprotocols?: readonly string[];
  /** Offer permessage-deflate (RFC 7692). Default false. */
  compress?: boolean;
  /** Proxy policy (the proxy plugin's call option): a `ProxyConfig`, a proxy URL string, or `null` for direct. */
  proxy?: ProxyOption;
  /**
   * A cookie jar for the handshake, for the cookies plugin's taps: its cookies for the URL go
   * in the request, and `Set-Cookie` headers of the response (101 or a refusal) are stored.
   * The handshake runs the kernel's `client.onRequest` and `client.onResponseHead` taps either way.
   */
  cookiejar?: CookieJar | false;
  /** TLS options for `wss:` (`ca`, `rejectUnauthorized`, `servername`, …). */
  tls?: ConnectionOptions;
  /** Local address to connect from. */
  localAddr?: string;
  /** The kernel whose client hooks (`connect`, `onUpgrade`) run; default the plugin's own. */
  kernel?: Kernel;
  /** Cancels the handshake (and closes an open connection with 1001) when canceled. */
  context?: RequestContext;
  /** An AbortSignal with the same effect as `context`. */
  signal?: AbortSignal;
  /** With a socket: the request target. Default `/`. */
  target?: string;
  /** With a socket: the `Host` header. Required there. */
  host?: string;
}

/** @internal Resolved limits. */
export interface ResolvedLimits {
  readonly maxFrameSize: number;
  readonly maxFragmentation: number;
}

/** @internal Resolved server options. */
export interface ResolvedServerOptions extends ResolvedLimits {
  readonly compress: boolean;
  readonly subprotocols: readonly string[];
  readonly checkOrigin: ResolvedCheckOrigin;
}

function intOpt(o: Record<string, unknown>, key: string, dflt: number, min: number, where: string): number {
  const v = o[key];
  if (v === undefined) return dflt;
  if (typeof v !== 'number' || !Number.isSafeInteger(v) || v < min) throw new ArgumentError(`${where}: ${key} must be an integer >= ${min}, got ${String(v)}`);
  return v;
}

function boolOpt(o: Record<string, unknown>, key: string, where: string): boolean {
  const v = o[key];
  if (v === undefined) return false;
  if (typeof v !== 'boolean') throw new ArgumentError(`${where}: ${key} must be a boolean, got ${typeof v}`);
  return v;
}

/** @internal Checks a subprotocol list (tokens, RFC 6455 §4.1). */
export function subprotocolList(v: unknown, where: string): readonly string[] {
  if (v === undefined) return [];
  if (!Array.isArray(v) || !v.every((p) => typeof p === 'string' && isToken(p))) {
    throw new ArgumentError(`${where}: subprotocols must be an array of tokens (such as ['chat', 'v2.json']), got ${JSON.stringify(v)}`);
  }
  return Object.freeze([...(v as string[])]);
}

/** @internal Validates the limits. */
export function resolveLimits(o: WebSocketLimits, where: string): ResolvedLimits {
  const r = o as Record<string, unknown>;
  return {
    maxFrameSize: intOpt(r, 'maxFrameSize', DEFAULT_MAX_FRAME_SIZE, 1, where),
    maxFragmentation: intOpt(r, 'maxFragmentation', DEFAULT_MAX_FRAGMENTATION, 0, where),
  };
}

/** @internal Validates server options. */
export function resolveServerOptions(o: WebSocketServerOptions | undefined, where: string): ResolvedServerOptions {
  if (o === undefined) o = {};
  if (typeof o !== 'object' || o === null) throw new ArgumentError(`${where}: options must be an object`);
  const c = resolveCheckOrigin(o.checkOrigin, where);
  return Object.freeze({
    ...resolveLimits(o, where),
    compress: boolOpt(o as Record<string, unknown>, 'compress', where),
    subprotocols: subprotocolList(o.subprotocols, where),
    checkOrigin: c,
  });
}

/** Keys of {@link WebSocketServerOptions}, split off before the rest goes to the server. */
export const SERVER_WS_KEYS = ['compress', 'subprotocols', 'checkOrigin', 'maxFrameSize', 'maxFragmentation'] as const;
