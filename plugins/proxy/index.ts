/**
 * The proxy plugin: HTTP forward and CONNECT proxies, SOCKS5 (`socks5://`, `socks5h://`),
 * `NO_PROXY` rules and proxies from the environment, for every client of the kernel.
 *
 * The policy is the `proxy` option (per call, `Client`, or `Transport`): a {@link ProxyConfig},
 * a proxy URL string (shorthand for `new ProxyConfig(url)`), or `null` for direct. The plugin's
 * own `proxy` option is the policy of calls that have none (`register(proxy, { proxy:
 * proxyFromEnvironment() })` makes the environment the default). Three taps:
 *
 * - `client.poolKey`: the call's policy (a `ProxyConfig`, or null for direct) is its share of
 *   the pool key, so calls with different policies never share a connection, and it reaches
 *   `client.connect` with the connection the call opens (an upgrade handshake's connection,
 *   outside the pool, is keyed the same way from its call options).
 * - `client.connect` at `Stage.PROXY`: for a new connection whose origin the policy sends
 *   through a proxy, opens it through that proxy and returns the socket (the kernel runs TLS
 *   over it for `https:` with SNI and ALPN, so HTTP/2 by ALPN works end to end). `https:`
 *   origins, WebSocket-style tunnels and SOCKS go through the tunnel; a plain `http:` origin
 *   through an `http://` proxy gets a plain connection to the proxy (forward mode). An
 *   `https://` proxy URL fails here with `ArgumentError`. Direct origins return nothing, so the
 *   kernel connects itself. The connect timeout covers the proxy's TCP connect and handshake,
 *   and the kernel's TLS handshake gets what is left of it.
 * - `client.onRequest` at `Stage.LAST - 1` (after every tap that edits the request): a request
 *   sent in forward mode gets the absolute-form target (`GET http://host:port/path`) and
 *   `Proxy-Authorization` from the proxy URL's user info unless the caller set one; on a later
 *   hop that does not go through that proxy (a redirect to https, to a `NO_PROXY` host) the
 *   header this plugin added is taken off again, so proxy credentials never reach an origin.
 *
 * Forward mode is chosen by `client.onRequest` and only used when `client.connect` picks the
 * same proxy for that request. Otherwise a plain `http:` origin goes through a CONNECT tunnel,
 * which is correct but needs a proxy that allows CONNECT to the port: upgrade handshakes (a
 * request with `Upgrade`, as `WebSockets.open` sends; an upgrade is hop-by-hop, RFC 9110 §7.8,
 * so a forwarding proxy would answer it itself) and h2c prior knowledge (`httpVersion: 'h2'`).
 * A policy given to a `Transport` is its clients' default call option (the plugin declares
 * `proxy` as one a transport may carry), so it forwards too.
 */
import { ArgumentError, Stage, checkPluginOptions, type OptionCheck, definePlugin, getCallOptions, type Request } from '../../kernel/index.js';
import { ProxyConfig } from './config.js';
import { openThroughProxy, type HttpProxyMode } from './connect.js';
import type { ProxyEndpoint } from './endpoint.js';

export { ProxyConfig, proxyURL, proxyFromEnvironment, type ProxyConfigOptions, type ProxyURLOptions, type ProxyURLInput, type ProxyEnvironment } from './config.js';
export { NoProxy, type NoProxySpec } from './no-proxy.js';
export { ProxyEndpoint, type ProxyProtocol } from './endpoint.js';
export { ProxyError, ProxyStatusError, Socks5Error, SOCKS5_REPLIES, socks5ReplyText } from './errors.js';
export { connectThroughProxy, openThroughProxy, type ProxyConnectOptions, type HttpProxyMode } from './connect.js';
export { CONNECT_MAX_HEADER_BYTES, CONNECT_MAX_LINE_BYTES } from './http-connect.js';

const NAME = 'proxy';

/** What the `proxy` option takes: a policy, a proxy URL, or `null` (direct). */
export type ProxyOption = ProxyConfig | string | URL | null;

/** The proxy plugin's call option (per call, `Client`, `Transport`, `WebSockets.open`). */
export interface ProxyOptions {
  /** Proxy policy: a `ProxyConfig`, a proxy URL string (shorthand for `new ProxyConfig(url)`), or `null` for direct. Default: the plugin's own `proxy` option, else direct. */
  proxy?: ProxyOption;
}

/** Options of the proxy plugin (`kernel.register(proxy, { … })`). */
export interface ProxyPluginOptions {
  /** The policy of calls whose client, transport and call options set none. Default: direct. */
  proxy?: ProxyOption;
}

/** The plugin's option (per call, `Client`, `Transport`, `register`) and its check. */
const CALL_OPTIONS: Readonly<Record<keyof ProxyOptions, OptionCheck>> = {
  proxy: (v) => (v === null || v === false || v instanceof ProxyConfig || v instanceof URL || typeof v === 'string' ? null : 'a ProxyConfig, a proxy URL string or null'),
};

/** The `Proxy-Authorization` value this plugin added to the call's request, so a later hop can take it off. */
const kAddedAuth = Symbol('proxy.addedAuthorization');
/** The proxy `client.onRequest` chose forward mode with for the request in flight (read by `client.connect`). */
const kForward = Symbol('proxy.forward');

/** The `proxy` plugin. */
export const proxy = definePlugin({
  name: NAME,
  callOptions: CALL_OPTIONS,
  // A Transport carries a policy as the default of its clients' calls.
  transportOptions: ['proxy'],
  register(kernel, options: ProxyPluginOptions) {
    checkPluginOptions(options, CALL_OPTIONS, 'register(proxy, …)');
    const fallback = options.proxy === undefined ? null : toConfig(options.proxy, 'register(proxy, …): proxy');
    const policy = (v: unknown): ProxyConfig | null => (v === undefined ? fallback : toConfig(v, 'proxy'));

    kernel.hooks.client.poolKey.tap({ name: NAME, stage: Stage.PROXY }, (_key, ctx) => policy(getCallOptions(ctx).proxy));

    kernel.hooks.client.connect.tapPromise({ name: NAME, stage: Stage.PROXY }, async (o, ctx) => {
      // The policy the poolKey tap chose for the call (or upgrade handshake) that opens the connection.
      const cfg = o.poolKey instanceof ProxyConfig ? o.poolKey : null;
      if (cfg === null) return undefined;
      const ep = cfg.select(o.protocol, o.host, o.port);
      if (ep === null) return undefined;
      // Forward only when client.onRequest chose it for this request (it wrote the absolute form);
      // an upgrade handshake (WebSockets) or a policy onRequest could not see tunnels instead.
      const mode: HttpProxyMode = ep.protocol === 'http:' && o.protocol === 'http:' && o.httpVersion !== 'h2' && ctx.get(kForward) === ep ? 'forward' : 'tunnel';
      return openThroughProxy(ep, o.host, o.port, { timeoutMs: o.timeoutMs, ctx, localAddress: o.localAddress, mode });
    });

    kernel.hooks.client.onRequest.tap({ name: NAME, stage: Stage.LAST - 1 }, (req, ctx) => {
      const added = ctx.get<string>(kAddedAuth);
      const call = getCallOptions(ctx);
      const cfg = policy(call.proxy);
      if (cfg === null && added === undefined) return;
      // The kernel's rule for the HTTP version (h2c prior knowledge cannot be forwarded: it tunnels).
      const h2 = (call.httpVersion ?? (call.http2PriorKnowledge === true ? 'h2' : 'auto')) === 'h2';
      // Nor can an upgrade handshake: Upgrade is hop-by-hop, the proxy would refuse it (squid: 426).
      const ep = cfg === null || h2 || req.headers.has('Upgrade') ? null : forwardProxy(cfg, req.url);
      ctx.set(kForward, ep ?? undefined);
      if (added !== undefined && (ep === null || ep.authorization !== added) && req.headers.get('Proxy-Authorization') === added) {
        req.headers.delete('Proxy-Authorization');
        ctx.set(kAddedAuth, undefined);
      }
      if (ep === null) return;
      toAbsoluteForm(req);
      if (ep.authorization !== null && !req.headers.has('Proxy-Authorization')) {
        req.headers.set('Proxy-Authorization', ep.authorization);
        ctx.set(kAddedAuth, ep.authorization);
      }
    });
  },
});

/** The `http://` proxy a plain `http:` URL is forwarded through, or null. */
function forwardProxy(cfg: ProxyConfig, url: string): ProxyEndpoint | null {
  if (!url.startsWith('http:')) return null;
  const { host, port } = originOf(url);
  const ep = cfg.select('http:', host, port);
  return ep !== null && ep.protocol === 'http:' ? ep : null;
}

/** `GET /path` → `GET http://host:port/path` (RFC 9112 §3.2.2); `*` → the authority alone. */
function toAbsoluteForm(req: Request): void {
  const t = req.target;
  if (t.startsWith('http://') || t.startsWith('https://')) return; // already (a retry of the same request)
  const u = req.url;
  const slash = u.indexOf('/', u.indexOf('//') + 2);
  let prefix = slash < 0 ? u : u.slice(0, slash);
  if (prefix.includes('@')) {
    // A prepared request's URL with user info: never put credentials on the request line.
    const p = new URL(u);
    prefix = `${p.protocol}//${p.host}`;
  }
  req.target = t === '*' ? prefix : t.startsWith('/') ? prefix + t : `${prefix}/${t}`;
}

const origins = new Map<string, { host: string; port: number }>();

/** Host (IPv6 without brackets) and effective port of an http URL, cached by its prefix. */
function originOf(url: string): { host: string; port: number } {
  const slash = url.indexOf('/', url.indexOf('//') + 2);
  const prefix = slash < 0 ? url : url.slice(0, slash);
  let o = origins.get(prefix);
  if (o === undefined) {
    const u = new URL(url);
    o = { host: u.hostname.startsWith('[') ? u.hostname.slice(1, -1) : u.hostname, port: u.port !== '' ? Number(u.port) : 80 };
    if (origins.size >= 256) origins.clear();
    origins.set(prefix, o);
  }
  return o;
}

const fromStrings = new Map<string, ProxyConfig>();

/** The policy an option value stands for: a `ProxyConfig`, a URL (one config per distinct string), or null for direct. */
function toConfig(v: unknown, where: string): ProxyConfig | null {
  if (v instanceof ProxyConfig) return v;
  if (v === null || v === false) return null;
  if (typeof v === 'string' || v instanceof URL) {
    const key = String(v);
    let c = fromStrings.get(key);
    if (c === undefined) {
      c = new ProxyConfig(v);
      if (fromStrings.size >= 64) fromStrings.clear();
      fromStrings.set(key, c);
    }
    return c;
  }
  throw new ArgumentError(`${where} must be a ProxyConfig, a proxy URL string or null, got ${typeof v}`);
}
