/**
 * Server options: their types, defaults and validation. Everything a server reads per
 * connection is resolved here once, so the request path reads plain fields. Plugins add
 * options of their own (`definePlugin({ serverOptions })`, typed by declaration merging on
 * {@link ServerOptions}); they are checked here too, and read by their plugin.
 */
import type { Server as NetServer } from 'node:net';
import type { TlsOptions } from 'node:tls';
import { ArgumentError } from '../errors.js';
import type { HookHost } from '../hook-host.js';
import { optionHint } from '../option-keys.js';
import { describe } from '../describe.js';
import { checkHealthPath, checkSignals, DEFAULT_DRAIN_TIMEOUT_MS } from './drain.js';
import { needsPlugin, pluginServerOptionNames, serverOptionOwner, setKernelServerOptions } from '../plugin-options.js';

/** A signal a process can catch (every one but SIGKILL and SIGSTOP), for the `signals` option. */
export type CatchableSignal = Exclude<NodeJS.Signals, 'SIGKILL' | 'SIGSTOP'>;

/**
 * Options of `serve`, `listen` and `new Server` (all optional). Plugins add theirs by
 * declaration merging (`declare module 'switchyard/kernel' { interface ServerOptions { … } }`)
 * and declare them at run time with `definePlugin({ serverOptions })`.
 */
export interface ServerOptions {
  /** The reference's `network`: only `'tcp'` (the default) is served; anything else is an `ArgumentError`. */
  network?: 'tcp';
  /** The reference's `address`: `'host:port'` (`'[::1]:8080'` for IPv6), instead of `host` and `port`. */
  address?: string;
  /** Address to bind; default `127.0.0.1`. */
  host?: string;
  /** Port to bind; default 8080; 0 picks a free one. */
  port?: number;
  /** A caller-made `net.Server` or `tls.Server` to serve on (listening or not); a TLS server serves HTTPS. */
  listener?: NetServer;
  /** TLS options (`key`, `cert`, `ALPNProtocols`, …): the server creates a TLS listener and serves HTTPS. */
  tls?: TlsOptions;
  /** Ignore `port` and listen on a free one. Default false. */
  listenAny?: boolean;
  /** Allow binding an address in TIME_WAIT. Default true, which is what Node always does on POSIX; false is accepted but cannot be honoured by Node. */
  reuseAddr?: boolean;
  /** Listen backlog of a listener the server creates. Default 128. */
  backlog?: number;
  /** Largest request body `serve` buffers; larger gets 413. Default 64 MiB; 0 means unlimited. Not accepted by `listen`. */
  maxBodyBytes?: number;
  /** Longest request line (longer gets 414) or header line (431). Default 32 KiB (32768). */
  maxLineBytes?: number;
  /** Largest request head; larger gets 431. Default 64 KiB (65536). */
  maxHeaderBytes?: number;
  /**
   * Limit for reading a request head, ms, from its first byte (timing out gets 408). A new
   * connection's first bytes (a protocol's preface, such as HTTP/2's, and the first request
   * included) must come within it too, else it is closed quietly. Default 60 000, or
   * `readTimeout` when that is set and shorter; 0 falls back to `readTimeout`.
   */
  readHeaderTimeout?: number;
  /** Limit for reading a request body (and the head, when `readHeaderTimeout` is 0), ms. Timing out gets 408. Default 300 000; 0 = off (for uploads that may take longer). */
  readTimeout?: number;
  /** Limit on a response write waiting for the client to read, ms: when no written byte is taken for this long, the connection (an HTTP/2 stream) is closed. Default 60 000; 0 = off. */
  writeTimeout?: number;
  /** Limit for waiting for the next request on a kept-alive connection, ms; closes quietly. Default 75 000, or `readTimeout` when that is set and shorter; 0 falls back to `readTimeout`. */
  idleTimeout?: number;
  /** Limit for a TLS handshake, from the TCP accept to the handshake's end, ms; the socket is dropped when it passes. Default 10 000; 0 = off (node's own `handshakeTimeout`, 120 s of inactivity, then applies to a listener the server creates). */
  tlsHandshakeTimeout?: number;
  /**
   * How long a graceful `close()` lets requests in flight and long-lived connections
   * (WebSockets, server-sent events) finish on their own, ms. Then it ends them: a streamed
   * response body (SSE) ends cleanly, a WebSocket gets a close frame 1001 (going away),
   * anything else is dropped. Default 10 000; 0 waits as long as they last.
   */
  closeGracePeriod?: number;
  /**
   * A path (such as `'/healthz'`) the server answers itself, before plugins and the handler,
   * for any method: 200 `ok` while the server is ready, 503 `draining` once `shutdown()` (or
   * `close()`) began, for a load balancer's or an orchestrator's health check. Matched exactly
   * (no query). Default: none.
   */
  healthPath?: string;
  /**
   * How long `shutdown()` keeps accepting and serving as before after it turned unready, ms,
   * so a balancer that checks `healthPath` (or an orchestrator that removes the endpoint)
   * stops routing here before the listener closes. Set it to the balancer's check interval
   * times the failed checks it needs, plus one interval. Default 0.
   */
  drainDelay?: number;
  /**
   * The bound on `shutdown()`, ms from its call: what is still open then is dropped, as by
   * `forceClose()`. Default 25 000 (inside the 30 s an orchestrator waits after SIGTERM);
   * 0 = no bound (`closeGracePeriod` still ends long-lived connections).
   */
  drainTimeout?: number;
  /**
   * Process signals that start `shutdown()` (such as `['SIGTERM']`); the same signal again
   * forces the close. The listeners are removed once the server is closed. Default: none.
   */
  signals?: readonly CatchableSignal[];
  // Plugins add their options by declaration merging, as plugins/options.ts does: an index
  // signature here would accept any misspelt option without a word.
}

/** @internal Options after defaults and validation. */
export interface ResolvedServerOptions {
  readonly host: string;
  readonly port: number;
  readonly listener: NetServer | null;
  readonly tls: TlsOptions | null;
  readonly backlog: number;
  readonly reuseAddr: boolean;
  readonly maxBodyBytes: number;
  readonly maxLineBytes: number;
  readonly maxHeaderBytes: number;
  readonly readHeaderTimeout: number;
  readonly readTimeout: number;
  readonly writeTimeout: number;
  readonly idleTimeout: number;
  readonly tlsHandshakeTimeout: number;
  readonly closeGracePeriod: number;
  readonly healthPath: string | null;
  readonly drainDelay: number;
  readonly drainTimeout: number;
  readonly signals: readonly NodeJS.Signals[];
  /** True when any timeout is set: connections then arm timers, otherwise they never do. */
  readonly timeouts: boolean;
  /** The options as given, for plugins (`ServerInfo.options`). */
  readonly raw: Readonly<Record<string, unknown>>;
}

/** The server options the kernel reads itself; every other name belongs to a plugin that declares it, or is unknown. */
const KNOWN: ReadonlySet<string> = new Set([
  'network',
  'address',
  'host',
  'port',
  'listener',
  'tls',
  'listenAny',
  'reuseAddr',
  'backlog',
  'maxBodyBytes',
  'maxLineBytes',
  'maxHeaderBytes',
  'readHeaderTimeout',
  'readTimeout',
  'writeTimeout',
  'idleTimeout',
  'tlsHandshakeTimeout',
  'closeGracePeriod',
  'healthPath',
  'drainDelay',
  'drainTimeout',
  'signals',
  // Server constructor and entry points
  'handler',
  'stream',
  'kernel',
  'workers',
  'workerLog',
]);
setKernelServerOptions(KNOWN);

function int(o: Record<string, unknown>, key: string, dflt: number, min: number, max = Number.MAX_SAFE_INTEGER): number {
  const v = o[key];
  if (v === undefined) return dflt;
  if (typeof v !== 'number' || !Number.isInteger(v) || v < min || v > max) {
    throw new ArgumentError(`${key} must be an integer from ${min} to ${max}, got ${typeof v === 'number' ? v : typeof v}`);
  }
  return v;
}

function ms(o: Record<string, unknown>, key: string, dflt = 0): number {
  const v = o[key];
  if (v === undefined) return dflt;
  if (typeof v !== 'number' || !Number.isFinite(v) || v < 0) {
    throw new ArgumentError(`${key} must be a number of milliseconds >= 0 (0 = off), got ${typeof v === 'number' ? v : typeof v}`);
  }
  // setTimeout cannot wait longer than 2^31-1 ms.
  return Math.min(v, 2 ** 31 - 1);
}

function bool(o: Record<string, unknown>, key: string, dflt: boolean): boolean {
  const v = o[key];
  if (v === undefined) return dflt;
  if (typeof v !== 'boolean') throw new ArgumentError(`${key} must be a boolean, got ${typeof v}`);
  return v;
}

/**
 * Checks the names of the server options, and the values of the plugins' options (the kernel's
 * own are checked as they are read). A plugin's option is refused, naming the plugin, when the
 * server's kernel lacks it; a server made without a kernel runs no plugin and checks them only.
 */
function checkNames(o: Record<string, unknown>, kernel: HookHost | null): void {
  for (const k of Object.keys(o)) {
    if (KNOWN.has(k)) continue;
    const owner = serverOptionOwner(k);
    if (owner === undefined) throw new ArgumentError(`unknown server option ${JSON.stringify(k)}${optionHint(k, [...KNOWN, ...pluginServerOptionNames()])}`);
    const v = o[k];
    if (v === undefined) continue;
    if (kernel !== null && !kernel.isRegistered(owner.plugin)) throw needsPlugin(null, k, owner.plugin, true, 'server');
    const expected = owner.check(v);
    if (expected !== null) throw new ArgumentError(`${k} must be ${expected}, got ${describe(v)}`);
  }
}

/** `address` (`host:port`, IPv6 in brackets) split; it may not be combined with `host`/`port`. */
function splitAddress(v: unknown, o: Record<string, unknown>): { host: string; port: number } {
  if (typeof v !== 'string') throw new ArgumentError(`address must be a 'host:port' string, got ${typeof v}`);
  if (o.host !== undefined || o.port !== undefined) throw new ArgumentError('pass either address or host and port, not both');
  const m = /^(?:\[([0-9A-Fa-f:.]+)\]|([^:[\]]+)):(\d{1,5})$/.exec(v);
  const port = m === null ? -1 : Number(m[3]);
  if (m === null || port > 65535) throw new ArgumentError(`address must be 'host:port' (IPv6 as '[::1]:8080'), got ${JSON.stringify(v)}`);
  return { host: (m[1] ?? m[2])!, port };
}

/**
 * `closeGracePeriod`'s default: long enough for requests in flight to finish, short enough that
 * with the polite ends after it a stop stays well inside an orchestrator's usual 30 s before
 * it kills the process.
 */
const DEFAULT_CLOSE_GRACE_MS = 10_000;

/**
 * Request head limits. A connection holds an unfinished head (up to about twice its size while
 * it arrives), so the head limit bounds what a peer can park per connection: 64 KiB is 4x
 * node:http's 16 KiB and 2x nginx's 32 KiB, room for large cookies. A line limit below the head
 * limit keeps a long target a 414, not a 431.
 */
const SERVER_MAX_HEADER_BYTES = 65536;
const SERVER_MAX_LINE_BYTES = 32768;

/**
 * Timeout defaults (ms). Without them a client that sends nothing, drips a head, never reads
 * its response or sits idle holds a connection (and a descriptor) forever.
 * - head: node:http's `headersTimeout` and nginx's `client_header_timeout` (60 s).
 * - body: node:http's `requestTimeout` (300 s), a whole-body deadline as ours is.
 * - write: nginx's `send_timeout` (60 s), which is also a gap between write progress.
 * - idle: above the 60 s idle timeout of the usual proxies and load balancers in front (AWS ALB,
 *   nginx's upstream keepalive), so they, not the server, close a kept-alive connection first and
 *   never send a request on one the server is closing; nginx's own `keepalive_timeout` is 75 s.
 *   A silent connection is held for the head timeout anyway, so a shorter idle wait would not
 *   make holding connections any cheaper for a client that means harm.
 * - TLS handshake: a few round trips; Go's client `TLSHandshakeTimeout` is 10 s (node:tls's 120 s
 *   is measured from the last byte, so a ClientHello sent a byte at a time never ends it).
 */
const DEFAULT_READ_HEADER_MS = 60_000;
const DEFAULT_READ_MS = 300_000;
const DEFAULT_WRITE_MS = 60_000;
const DEFAULT_IDLE_MS = 75_000;
const DEFAULT_TLS_HANDSHAKE_MS = 10_000;

/**
 * A timeout that falls back to `readTimeout` when 0: unset, it is its default, or an explicitly
 * set shorter `readTimeout`.
 */
function readFallback(o: Record<string, unknown>, key: string, dflt: number, readTimeout: number): number {
  if (o[key] === undefined) return o.readTimeout !== undefined && readTimeout > 0 ? Math.min(readTimeout, dflt) : dflt;
  return ms(o, key) || readTimeout;
}

/**
 * @internal Validates and fills in defaults; `stream` servers refuse `maxBodyBytes`; `kernel`
 * (null: none) is the server's, whose plugins' options may be given.
 */
export function resolveServerOptions(options: ServerOptions | undefined, stream: boolean, kernel: HookHost | null = null): ResolvedServerOptions {
  if (options === undefined) options = {};
  if (typeof options !== 'object' || options === null) throw new ArgumentError(`server options must be an object, got ${options === null ? 'null' : typeof options}`);
  const o = options as Record<string, unknown>;
  checkNames(o, kernel);
  for (const k of ['workers', 'workerLog']) {
    if (o[k] !== undefined) throw new ArgumentError(`${k} is an option of serve(), listen() and serveFetch() with workers, which start the worker processes; a Server runs in one process`);
  }
  if (stream && o.maxBodyBytes !== undefined) {
    throw new ArgumentError('maxBodyBytes applies to request handlers (serve); a stream handler (listen) reads the body itself');
  }
  if (o.network !== undefined && o.network !== 'tcp') {
    throw new ArgumentError(`network must be 'tcp' (the only network served), got ${JSON.stringify(o.network)}`);
  }
  const addr = o.address === undefined ? null : splitAddress(o.address, o);
  const host = addr?.host ?? o.host ?? '127.0.0.1';
  if (typeof host !== 'string' || host === '') throw new ArgumentError(`host must be a non-empty string, got ${typeof host}`);
  let port = addr?.port ?? int(o, 'port', 8080, 0, 65535);
  if (bool(o, 'listenAny', false)) port = 0;
  const listener = o.listener ?? null;
  if (listener !== null && (typeof listener !== 'object' || typeof (listener as NetServer).listen !== 'function' || typeof (listener as NetServer).on !== 'function')) {
    throw new ArgumentError('listener must be a net.Server or tls.Server');
  }
  const tls = o.tls ?? null;
  if (tls !== null && (typeof tls !== 'object' || Array.isArray(tls))) throw new ArgumentError('tls must be an object of TLS options (key, cert, ...)');
  if (tls !== null && listener !== null) throw new ArgumentError('pass either tls options or a listener, not both (make the tls.Server yourself)');
  const readTimeout = ms(o, 'readTimeout', DEFAULT_READ_MS);
  const readHeaderTimeout = readFallback(o, 'readHeaderTimeout', DEFAULT_READ_HEADER_MS, readTimeout);
  const idleTimeout = readFallback(o, 'idleTimeout', DEFAULT_IDLE_MS, readTimeout);
  const writeTimeout = ms(o, 'writeTimeout', DEFAULT_WRITE_MS);
  const drainDelay = ms(o, 'drainDelay');
  const drainTimeout = ms(o, 'drainTimeout', DEFAULT_DRAIN_TIMEOUT_MS);
  if (drainTimeout > 0 && drainDelay >= drainTimeout) {
    throw new ArgumentError(`drainDelay (${drainDelay} ms) must be shorter than drainTimeout (${drainTimeout} ms), or the drain is forced before the listener closes`);
  }
  return Object.freeze({
    host,
    port,
    listener: listener as NetServer | null,
    tls: tls as TlsOptions | null,
    backlog: int(o, 'backlog', 128, 1),
    reuseAddr: bool(o, 'reuseAddr', true),
    maxBodyBytes: int(o, 'maxBodyBytes', 64 * 1024 * 1024, 0),
    maxLineBytes: int(o, 'maxLineBytes', SERVER_MAX_LINE_BYTES, 1),
    maxHeaderBytes: int(o, 'maxHeaderBytes', SERVER_MAX_HEADER_BYTES, 1),
    readHeaderTimeout,
    readTimeout,
    writeTimeout,
    idleTimeout,
    tlsHandshakeTimeout: ms(o, 'tlsHandshakeTimeout', DEFAULT_TLS_HANDSHAKE_MS),
    closeGracePeriod: o.closeGracePeriod === undefined ? DEFAULT_CLOSE_GRACE_MS : ms(o, 'closeGracePeriod'),
    healthPath: checkHealthPath(o.healthPath),
    drainDelay,
    drainTimeout,
    signals: checkSignals(o.signals),
    timeouts: readTimeout > 0 || readHeaderTimeout > 0 || idleTimeout > 0 || writeTimeout > 0,
    raw: o,
  });
}
