/**
 * Options of the WebSockets plugin: their types, defaults and validation. Resolved once per
 * server, upgrade or `open`, so the message path reads plain fields.
 */
import type { ConnectionOptions } from 'node:tls';
import type { CookieJar } from '../cookies/index.js';
import { ArgumentError, isToken, type HeadersInit, type Kernel, type Request, type RequestContext, type ServeOptions } from '../../kernel/index.js';

/** Default `maxFrameSize`: 16 MiB (the reference's `maxframesize`). */
export const DEFAULT_MAX_FRAME_SIZE = 16 * 1024 * 1024;
/** Default `maxFragmentation`: fragments per message. */
export const DEFAULT_MAX_FRAGMENTATION = 1024;

/**
 * Who may open a WebSocket, judged on the `Origin` header (null when absent, as from
 * non-browser clients): `true` allows no Origin or one whose host equals the request's
 * `Host` (same origin), a list allows exactly those origins (`https://app.example`), a
 * function decides. A refusal is answered 403.
 */
export type CheckOrigin = boolean | readonly string[] | ((origin: string | null, request: Request) => boolean | Promise<boolean>);

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
  /** Origin policy; default: any origin. */
  checkOrigin?: CheckOrigin;
}

/** Options of `WebSockets.listen`: the WebSocket options plus the server's (`host`, `port`, `listenAny`, `tls`, …). */
export interface WebSocketListenOptions extends WebSocketServerOptions, Omit<ServeOptions, 'maxBodyBytes'> {}

/** Options of `WebSockets.open`. Durations in ms; 0 turns a timeout off. */
export interface WebSocketOpenOptions extends WebSocketLimits {
  /** Extra request headers (`Authorization`, `Origin`, `Cookie`, …). */
  headers?: HeadersInit;
  /** Subprotocols to offer, most preferred first. */
  subprotocols?: readonly string[];
  /** Offer permessage-deflate (RFC 7692). Default false. */
  compress?: boolean;
  /** DNS, TCP, proxy handshakes and TLS. Default 30 000. */
  connectTimeout?: number;
  /** The whole handshake. Default 0. */
  requestTimeout?: number;
  /** From the request written to the 101. Default 300 000; 0 = off. */
  responseHeaderTimeout?: number;
  /** Longest silence while the handshake response arrives. Default 0. */
  readIdleTimeout?: number;
  /** Longest wait for the handshake request to be written. Default 0. */
  writeIdleTimeout?: number;
  /** Proxy policy, for the proxy plugin's `client.connect` tap. */
  proxy?: unknown;
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
  readonly checkOrigin: CheckOrigin;
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
  const c = o.checkOrigin ?? false;
  if (typeof c !== 'boolean' && typeof c !== 'function' && !(Array.isArray(c) && c.every((x) => typeof x === 'string'))) {
    throw new ArgumentError(`${where}: checkOrigin must be a boolean, a list of origins or a function (origin, request) => boolean`);
  }
  return Object.freeze({
    ...resolveLimits(o, where),
    compress: boolOpt(o as Record<string, unknown>, 'compress', where),
    subprotocols: subprotocolList(o.subprotocols, where),
    checkOrigin: c,
  });
}

/** Keys of {@link WebSocketServerOptions}, split off before the rest goes to the server. */
export const SERVER_WS_KEYS = ['compress', 'subprotocols', 'checkOrigin', 'maxFrameSize', 'maxFragmentation'] as const;
