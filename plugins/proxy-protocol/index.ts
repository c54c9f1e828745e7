/**
 * The proxy-protocol plugin: who the client is when a load balancer or reverse proxy stands
 * in front of the server.
 *
 * - `proxyProtocol` (server option): every connection begins with a PROXY protocol header,
 *   v1 or v2 (HAProxy's `send-proxy`, `send-proxy-v2`; nginx's `proxy_protocol on`; AWS NLB),
 *   read before anything else, TLS handshake included. `true` believes the header of every
 *   source; a list of CIDR ranges believes it only from those (the proxies), and from any other
 *   source reads it but keeps the connection's own address. A connection without a valid header
 *   is closed, whoever sends it: the specification forbids guessing whether one is there.
 *   `peerAddr()` then reports the relayed client on every protocol (HTTP/1.1, h2c, HTTP/2 and
 *   HTTP/1.1 over TLS, WebSockets).
 * - `trustProxy` (server option): `X-Forwarded-For`/`-Proto`/`-Host`, or `Forwarded` (RFC 7239)
 *   with `forwardedHeaders: 'forwarded'`, read from trusted peers only; {@link clientOf} gives
 *   the request's client address, scheme and host, as fastify's `request.ip`, `protocol` and
 *   `host` do.
 */
import { definePlugin, Stage, type OptionCheck, type PeerAddress, type Request, type ServerInfo } from '../../kernel/index.js';
import { forwardedClient, type ForwardedClient, type ForwardedHeaders, type Trust } from './forwarded.js';
import { preambleOf, readProxyHeader } from './read.js';
import { TrustList } from './trust.js';

export { parseProxyHeader, V1_MAX_BYTES, V2_MAX_BYTES, V2_SIGNATURE, type ProxyHeader } from './header.js';
export type { ForwardedClient, ForwardedHeaders } from './forwarded.js';

/** Server options of the proxy-protocol plugin (`serve`, `listen`), joined to `ServerOptions` by declaration merging. */
export interface ProxyProtocolServerOptions {
  /**
   * Every connection begins with a PROXY protocol header (v1 or v2), which is required: a
   * connection without a valid one is closed. `true`: the header's client is believed from
   * every source (the server is reachable only through the proxy). A list of IP addresses and
   * CIDR ranges: believed from those sources only; from others the header is read and its
   * addresses ignored. Default: off (`false`).
   */
  proxyProtocol?: boolean | readonly string[];
  /**
   * Which peers' forwarding headers to believe: `true` every peer, a number the n nearest hops
   * (the connection's peer is the first), a list of IP addresses and CIDR ranges those
   * addresses. Read with {@link clientOf}. Default: none (`false`).
   */
  trustProxy?: boolean | number | readonly string[];
  /**
   * The headers the trusted proxies set: `'x-forwarded'` (`X-Forwarded-For`, `-Proto`,
   * `-Host`; nginx, HAProxy's `option forwardfor`; the default) or `'forwarded'` (RFC 7239;
   * HAProxy's `option forwarded`). Only that family is read: a client could forge the other,
   * which the proxies pass on untouched.
   */
  forwardedHeaders?: ForwardedHeaders;
}

const NAME = 'proxy-protocol';

/** Parsed lists, by the option's array (a server keeps its options object for its life). */
const lists = new WeakMap<readonly unknown[], TrustList>();

function trustList(v: readonly unknown[]): TrustList | string {
  const known = lists.get(v);
  if (known !== undefined) return known;
  const parsed = TrustList.parse(v);
  if (typeof parsed !== 'string') lists.set(v, parsed);
  return parsed;
}

function checkList(v: readonly unknown[]): string | null {
  if (v.length === 0) return 'a non-empty list of IP addresses and CIDR ranges';
  const parsed = trustList(v);
  return typeof parsed === 'string' ? parsed : null;
}

const checks = {
  proxyProtocol: (v) => (typeof v === 'boolean' ? null : Array.isArray(v) ? checkList(v) : "true, false, or a list of the proxies' IP addresses and CIDR ranges"),
  trustProxy: (v) =>
    typeof v === 'boolean' || (typeof v === 'number' && Number.isInteger(v) && v >= 0)
      ? null
      : Array.isArray(v)
        ? checkList(v)
        : "true, false, a hop count (an integer >= 0), or a list of the proxies' IP addresses and CIDR ranges",
  forwardedHeaders: (v) => (v === 'x-forwarded' || v === 'forwarded' ? null : "'x-forwarded' or 'forwarded'"),
} satisfies Record<keyof ProxyProtocolServerOptions, OptionCheck>;

/** A server's `trustProxy`, read (its options were checked when it was made). */
function trustOf(server: ServerInfo): Trust {
  const v = (server.options as ProxyProtocolServerOptions).trustProxy;
  if (v === undefined) return false;
  if (typeof v === 'boolean' || typeof v === 'number') return v;
  return trustList(v) as TrustList;
}

/** What a request's client is computed from, on demand. */
interface Seen {
  readonly peer: PeerAddress;
  readonly server: ServerInfo;
  client: ForwardedClient | null;
}

const seen = new WeakMap<Request, Seen>();

/**
 * The client of a request a server of a kernel with this plugin received: its address, the
 * addresses on the way, the scheme and the host, as far as the server's `trustProxy` lets the
 * proxies in front say (without it, the connection's own: `peerAddr()`, TLS or not, the Host
 * header). Works in request handlers, which have no `peerAddr()`, and stream handlers
 * (`clientOf(stream.request)`). Null for a request no such server received.
 */
export function clientOf(request: Request): ForwardedClient | null {
  const s = seen.get(request);
  if (s === undefined) return null;
  if (s.client === null) {
    const o = s.server.options as ProxyProtocolServerOptions;
    const direct = request.headers.get('Host') ?? request.host;
    s.client = forwardedClient(s.peer.address, s.server.tls, direct, request.headers, trustOf(s.server), o.forwardedHeaders ?? 'x-forwarded');
  }
  return s.client;
}

/** The proxy-protocol plugin: the `proxyProtocol`, `trustProxy` and `forwardedHeaders` server options, and {@link clientOf}. */
export const proxyProtocol = definePlugin({
  name: NAME,
  serverOptions: checks,
  register(kernel) {
    kernel.hooks.server.preamble.tap(NAME, (server) => {
      const v = (server.options as ProxyProtocolServerOptions).proxyProtocol;
      if (v === undefined || v === false) return undefined;
      const list = v === true ? null : (trustList(v) as TrustList);
      return async (socket) => {
        const header = await readProxyHeader(socket);
        return preambleOf(header, list === null || list.has(socket.remoteAddress ?? ''));
      };
    });
    // First, so what later taps (an access log, auth) and the handler ask of clientOf is there.
    kernel.hooks.server.onRequest.tap({ name: NAME, stage: Stage.FIRST }, (request, exchange) => {
      seen.set(request, { peer: exchange.peerAddr(), server: exchange.server, client: null });
    });
  },
});

export default proxyProtocol;
