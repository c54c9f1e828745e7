/**
 * The h2 plugin: HTTP/2 over TLS, negotiated by ALPN, for servers and clients, on node:http2
 * (nghttp2). Plugin h2c (cleartext HTTP/2) builds on it.
 *
 * Server: `server.alpnProtocols` offers `h2` first on a TLS listener the server creates when
 * its `tls` options list no `ALPNProtocols` of their own (a list given is respected as is: `h2`
 * only when it is there, as the reference says); `server.protocol` takes each connection whose
 * ALPN result is `h2` and serves it through the server's pipeline (request and stream handlers,
 * `onRequest`, `onResponseHead`, limits, timeouts, `close()`/`forceClose()`). A handler sees one
 * authority: a `host` field naming another than `:authority`, or two of them, is answered 400
 * first (RFC 9113 §8.3.1), and Host is `request.host`; `cookie` fields a client sent apart reach
 * it as one Cookie header (RFC 9113 §8.2.3).
 *
 * Client: `client.alpnProtocols` offers `h2` first on https (unless `preferHttp2: false` or
 * `httpVersion: 'h1'`); `client.session` returns an HTTP/2 session when the server agreed, and
 * the kernel's pool multiplexes requests over it. A stream the server resets fails its call with
 * {@link H2StreamResetError} (a `ProtocolError` with the HTTP/2 error code); a REFUSED_STREAM is
 * first sent again on another attempt when its body can be.
 *
 * Options: `http2Settings` (an {@link HTTP2Settings}) on `serve`/`listen` and on `Client` or a
 * call; `maxConcurrentStreams` (default 100, 0 = no limit) on `serve`/`listen`. On a client the
 * settings are those of the call that opens a session: later calls multiplexed onto it share
 * its windows whatever they pass (give a `Client` of its own to calls that need others).
 */
import { ArgumentError, checkOptionKeys, definePlugin, Stage, type Kernel, type OptionCheck } from '../../kernel/index.js';
import { connectH2Session, type H2PingOptions } from './client-session.js';
import { serveH2 } from './server-connection.js';
import { SERVER_OPTION_CHECKS } from './settings.js';

export { HTTP2Settings, type HTTP2SettingsInit, type H2ServerOptions, MAX_WINDOW, DEFAULT_WINDOW, DEFAULT_MAX_CONCURRENT_STREAMS } from './settings.js';
export { serveH2, loadHttp2, H2ServerConnection } from './server-connection.js';
export { connectH2Session, H2ClientSession, DEFAULT_PING_INTERVAL_MS, DEFAULT_PING_TIMEOUT_MS, type H2SessionOptions, type H2PingOptions } from './client-session.js';
export { H2ResponseBody } from './client-body.js';
export { H2StreamResetError, h2ErrorName } from './errors.js';

/** Options of the h2 plugin (per call, as `Client` defaults, or on `serve`/`listen`). */
export interface H2Options {
  /** HTTP/2 flow-control windows: an `HTTP2Settings` or `{ initialWindowSize, connectionWindowSize }` (on a client, for the sessions a call opens). */
  http2Settings?: import('./settings.js').HTTP2Settings | import('./settings.js').HTTP2SettingsInit;
}

const NAME = 'h2';

/** Options of the h2 plugin itself (`kernel.register(h2, { … })`). */
export type H2PluginOptions = H2PingOptions;

/** The h2 plugin. */
export const h2 = definePlugin<H2PluginOptions>({
  name: NAME,
  callOptions: {
    http2Settings: (v) => (v === null || (typeof v === 'object' && !Array.isArray(v)) ? null : 'an HTTP2Settings or { initialWindowSize, connectionWindowSize }'),
  } satisfies Record<keyof H2Options, OptionCheck>,
  serverOptions: SERVER_OPTION_CHECKS,
  // Its client.session tap speaks HTTP/2 over TLS (by ALPN, or demanded with httpVersion: 'h2').
  clientProtocols: ['h2'],
  register(kernel, options) {
    const ping = pingOptions(options);
    pingByKernel.set(kernel, ping);
    const stage = { name: NAME, stage: Stage.DEFAULT };

    // ---- server ----
    kernel.hooks.server.alpnProtocols.tap(stage, (protocols, server) => {
      const tls = server.options.tls as { ALPNProtocols?: unknown } | undefined;
      // A list the caller configured is theirs; the default list gains h2 first.
      if (tls !== undefined && tls.ALPNProtocols !== undefined) return protocols;
      return protocols.includes('h2') ? protocols : ['h2', ...protocols];
    });
    kernel.hooks.server.protocol.tap(stage, (socket, info) => {
      if (info.alpnProtocol !== 'h2' || info.host === undefined) return undefined;
      serveH2(socket, info.host, null);
      return true;
    });

    // ---- client ----
    kernel.hooks.client.alpnProtocols.tap(stage, (protocols, options) => {
      if (options.httpVersion === 'h1' || protocols.includes('h2')) return protocols;
      return ['h2', ...protocols];
    });
    kernel.hooks.client.session.tap(stage, (socket, info) => {
      if (info.alpnProtocol !== 'h2') {
        // TLS without ALPN while HTTP/2 was demanded: speak it anyway (prior knowledge over TLS).
        if (!(info.alpnProtocol === false && info.connect.httpVersion === 'h2')) return undefined;
      }
      return connectH2Session(socket, info, ping);
    });
  },
});

const PING_OPTIONS: ReadonlySet<string> = new Set(['pingIntervalMs', 'pingTimeoutMs']);

const pingByKernel = new WeakMap<Kernel, H2PingOptions>();

/** The ping options the h2 plugin was registered with on `kernel` (plugin h2c's sessions use them too). */
export function h2PingOptions(kernel: Kernel): H2PingOptions {
  return pingByKernel.get(kernel) ?? {};
}

/** The plugin's ping options, checked (positive finite ms when given). */
function pingOptions(options: H2PluginOptions | undefined): H2PingOptions {
  if (options === undefined || options === null) return {};
  if (typeof options !== 'object') throw new ArgumentError('h2 plugin options must be an object');
  checkOptionKeys(options, PING_OPTIONS, 'register(h2, …)');
  for (const key of ['pingIntervalMs', 'pingTimeoutMs'] as const) {
    const v = options[key];
    if (v !== undefined && (typeof v !== 'number' || !Number.isFinite(v) || v <= 0)) throw new ArgumentError(`h2 plugin option ${key} must be a positive number of milliseconds, got ${String(v)}`);
  }
  return { pingIntervalMs: options.pingIntervalMs, pingTimeoutMs: options.pingTimeoutMs };
}

export default h2;
