/**
 * A connection to an origin through one proxy: TCP to the proxy, then the CONNECT or SOCKS5
 * handshake, all within the connect timeout (the kernel layers TLS on top, within what is
 * left of it). Also the standalone form for clients that own their sockets (WebSockets).
 */
import { performance } from 'node:perf_hooks';
import type net from 'node:net';
import { ArgumentError, CanceledError, ConnectError, TimeoutError, hostPort, type RequestContext } from '../../kernel/index.js';
import type { ProxyConfig } from './config.js';
import type { ProxyEndpoint } from './endpoint.js';
import { bounded, dial } from './handshake.js';
import { httpConnect } from './http-connect.js';
import { socks5Connect } from './socks5.js';

/** How to use an `http://` proxy: a CONNECT tunnel, or a plain connection carrying absolute-form requests. */
export type HttpProxyMode = 'tunnel' | 'forward';

/** Options of {@link openThroughProxy} and {@link connectThroughProxy}. */
export interface ProxyConnectOptions {
  /** Bounds the whole connect (proxy TCP and handshake), ms; 0 for none. Default 30 000. */
  timeoutMs?: number;
  /** `performance.now()` the timeout counts from. Default: now. */
  started?: number;
  /** A request context whose deadline and cancellation also apply. */
  ctx?: RequestContext;
  /** Cancels the connect. */
  signal?: AbortSignal;
  /** Local address to bind the connection to the proxy to. */
  localAddress?: string;
  /** For `http://` proxies. Default `tunnel`. */
  mode?: HttpProxyMode;
}

/**
 * Connects to `host:port` through `proxy` and resolves to the socket, ready for bytes to the
 * origin (TLS, if any, is the caller's). Failures: `ConnectError`/`DNSError` for the proxy's
 * own address when it cannot be reached; `ConnectError` for `host:port` whose `cause` says
 * what the proxy did (`ProxyStatusError`, `Socks5Error`, `ProxyError`, or `ParseError` /
 * `ProtocolError` for bytes that are not a valid answer); `TimeoutError('connect')`;
 * `ArgumentError` for an `https://` proxy.
 */
export async function openThroughProxy(proxy: ProxyEndpoint, host: string, port: number, options: ProxyConnectOptions = {}): Promise<net.Socket> {
  if (proxy.protocol === 'https:') {
    throw new ArgumentError(`cannot send a request through an https:// proxy (${proxy.href}): TLS to the proxy is not supported; use http://, socks5:// or socks5h://`);
  }
  const started = options.started ?? performance.now();
  const target = hostPort(host, port);
  const mode = options.mode ?? 'tunnel';
  const { socket, connected } = dial(proxy, options.localAddress);
  let step = `the connection to proxy ${proxy.href}`;
  const work = (async (): Promise<void> => {
    await connected;
    try {
      if (proxy.protocol === 'http:') {
        if (mode === 'forward') return;
        step = `the CONNECT handshake with proxy ${proxy.href} for ${target}`;
        await httpConnect(socket, proxy, host, port);
      } else {
        step = `the SOCKS5 handshake with proxy ${proxy.href} for ${target}`;
        await socks5Connect(socket, proxy, host, port);
      }
    } catch (err) {
      throw err instanceof TimeoutError || err instanceof CanceledError ? err : new ConnectError(target, err);
    }
  })();
  const bounds = { timeoutMs: options.timeoutMs ?? 30_000, started, ctx: options.ctx, signal: options.signal };
  await bounded(socket, bounds, () => step, work);
  return socket;
}

/**
 * The standalone form, for clients that manage their own sockets (a WebSocket client): the
 * proxy `config` picks for `url` (`http:`, `https:`, `ws:` or `wss:`), or `null` when the URL
 * goes direct. Always tunnels (CONNECT for `http://` proxies), since the caller speaks its own
 * protocol over the socket.
 */
export async function connectThroughProxy(config: ProxyConfig, url: string | URL, options: Omit<ProxyConnectOptions, 'mode'> = {}): Promise<net.Socket | null> {
  let u: URL;
  try {
    u = url instanceof URL ? url : new URL(url);
  } catch {
    throw new ArgumentError(`connectThroughProxy: invalid URL ${JSON.stringify(String(url))}`);
  }
  const proxy = config.proxyFor(u);
  if (proxy === null) return null;
  const secure = u.protocol === 'https:' || u.protocol === 'wss:';
  const host = u.hostname.startsWith('[') ? u.hostname.slice(1, -1) : u.hostname;
  return openThroughProxy(proxy, host, u.port !== '' ? Number(u.port) : secure ? 443 : 80, { ...options, mode: 'tunnel' });
}
