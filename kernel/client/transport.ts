/**
 * Transport: the connection pool. One pool per origin (scheme, host, port), HTTP version wish
 * and what the `client.poolKey` taps add (a proxy); idle HTTP/1 connections are reused
 * last-in, first-out, dropped when the server closes them, and closed after `idleTimeout`.
 */
import { performance } from 'node:perf_hooks';
import type { Duplex } from 'node:stream';
import type { ConnectionOptions } from 'node:tls';
import { ArgumentError } from '../errors.js';
import { unknownOptionError } from '../option-keys.js';
import { isTransportOption, pluginTransportOptionNames } from '../plugin-options.js';
import type { ClientHooks, ClientSession, ConnectOptions, SessionPool, Tapped } from '../hooks.js';
import type { RequestContext } from '../message/context.js';
import { checkLocalAddr, openConnection } from './connect.js';
import { H1ClientSession, type SessionOwner } from './h1-session.js';
import { channels } from '../diagnostics.js';
import { publishOpen } from './diagnostics.js';

/**
 * Options of {@link Transport}. Plugins add the call options a transport may carry as its
 * clients' defaults (`definePlugin`'s `transportOptions`) by declaration merging
 * (`declare module 'switchyard/kernel' { interface TransportOptions { … } }`).
 */
export interface TransportOptions {
  /** Idle connections kept per origin. Default 100. */
  maxIdlePerHost?: number;
  /** Idle connections kept across origins. Default 1000. */
  maxIdleTotal?: number;
  /** Idle connections older than this are closed, ms. Default 90 000 (0: never). */
  idleTimeout?: number;
  /** TLS options for `https:` origins (`ca`, `rejectUnauthorized`, `servername`, `cert`/`key`, …). */
  tlsConfig?: ConnectionOptions;
  /** Source address of outbound connections: an IP literal of this machine (a request whose connection cannot bind it fails with `ArgumentError`). */
  localAddr?: string;
  /** Longest status or header line. Default 65536. */
  maxLineBytes?: number;
  /** Largest response head. Default 1 MiB. */
  maxHeaderBytes?: number;
  /** Negotiate HTTP/2 by ALPN on secure connections when a plugin offers it: the default of the clients on this transport (a client's own `preferHttp2` wins). Default true. */
  preferHttp2?: boolean;
}

/** The names `new Transport()` reads itself (plugins' call options it carries are declared by their plugins). */
const TRANSPORT_OPTIONS: ReadonlySet<string> = new Set(['maxIdlePerHost', 'maxIdleTotal', 'idleTimeout', 'tlsConfig', 'localAddr', 'maxLineBytes', 'maxHeaderBytes', 'preferHttp2']);

/** The carried call options of a transport given none. */
const NO_CALL_DEFAULTS: Readonly<Record<string, unknown>> = Object.freeze({});

/** Where a request goes: scheme, host and port. */
export interface Origin {
  /** `http:` or `https:`. */
  readonly protocol: 'http:' | 'https:';
  /** Host name or IP (IPv6 without brackets). */
  readonly host: string;
  /** Port. */
  readonly port: number;
}

/** @internal What a pool needs per acquire. */
export interface AcquireOptions {
  readonly connectTimeout: number;
  /** `auto`: HTTP/2 by ALPN when offered (the caller prefers it), else HTTP/1.1. */
  readonly httpVersion: 'auto' | 'h1' | 'h2';
  readonly hooks: Tapped<ClientHooks> | null;
}

class Pool implements SessionOwner, SessionPool {
  readonly key: string;
  /** Sessions that take one exchange at a time, idle (most recently used last). */
  readonly idle: ClientSession[] = [];
  readonly all = new Set<ClientSession>();
  /** Multiplexed sessions (HTTP/2): shared by concurrent exchanges while they have capacity. */
  readonly shared: ClientSession[] = [];
  /** A connection being opened that may turn out multiplexed: later acquirers wait for it rather than dial their own. */
  pending: Promise<ClientSession | null> | null = null;
  private readonly transport: Transport;
  constructor(key: string, transport: Transport) {
    this.key = key;
    this.transport = transport;
  }

  release(session: ClientSession): void {
    this.transport.onRelease(this, session);
  }

  discard(session: ClientSession): void {
    const i = this.idle.indexOf(session);
    if (i >= 0) {
      this.idle.splice(i, 1);
      this.transport.idleTotal--;
    }
    const j = this.shared.indexOf(session);
    if (j >= 0) {
      this.shared.splice(j, 1);
      this.transport.sharedTotal--;
    }
    this.all.delete(session);
  }
}

/** The connection pool of one or more clients. */
export class Transport {
  /** @internal */
  readonly maxIdlePerHost: number;
  /** @internal */
  readonly maxIdleTotal: number;
  /** @internal */
  readonly idleTimeout: number;
  /** TLS options for `https:` origins. */
  readonly tlsConfig: ConnectionOptions | undefined;
  /** Source address, when set. */
  readonly localAddr: string | undefined;
  /**
   * The plugins' call options this transport was given (those a plugin lets a transport carry,
   * such as the proxy plugin's `proxy`): the defaults of its clients' calls, under each
   * client's own options. Opaque here: the plugins that declare them read and check them.
   */
  readonly callDefaults: Readonly<Record<string, unknown>>;
  /** @internal */
  readonly maxLineBytes: number;
  /** @internal */
  readonly maxHeaderBytes: number;
  /** Negotiate HTTP/2 when offered: the default of clients that set no `preferHttp2` of their own. */
  readonly preferHttp2: boolean;
  /** @internal */
  idleTotal = 0;
  /** @internal Multiplexed (HTTP/2) sessions across all origins. */
  sharedTotal = 0;
  private readonly pools = new Map<string, Pool>();
  /** Sessions opened that no exchange took yet through {@link Transport.acquire} (see {@link Transport.takeFresh}). */
  private readonly fresh = new WeakSet<ClientSession>();
  private sweeper: NodeJS.Timeout | null = null;
  private closed = false;

  /** A transport with its own pool. */
  constructor(options: TransportOptions = {}) {
    if (typeof options !== 'object' || options === null) throw new ArgumentError('Transport options must be an object');
    this.callDefaults = carriedOptions(options);
    this.maxIdlePerHost = int(options.maxIdlePerHost, 'maxIdlePerHost', 100);
    this.maxIdleTotal = int(options.maxIdleTotal, 'maxIdleTotal', 1000);
    this.idleTimeout = int(options.idleTimeout, 'idleTimeout', 90_000);
    this.maxLineBytes = int(options.maxLineBytes, 'maxLineBytes', 65536, 1);
    this.maxHeaderBytes = int(options.maxHeaderBytes, 'maxHeaderBytes', 1048576, 1);
    if (options.tlsConfig !== undefined && (typeof options.tlsConfig !== 'object' || options.tlsConfig === null)) {
      throw new ArgumentError('tlsConfig must be an object of Node TLS options');
    }
    this.tlsConfig = options.tlsConfig;
    this.localAddr = checkLocalAddr(options.localAddr);
    if (options.preferHttp2 !== undefined && typeof options.preferHttp2 !== 'boolean') throw new ArgumentError('preferHttp2 must be a boolean');
    this.preferHttp2 = options.preferHttp2 ?? true;
  }

  /** Idle connections across all origins. */
  idleConnectionCount(): number {
    return this.idleTotal;
  }

  /** Open connections (idle and busy) across all origins. */
  connectionCount(): number {
    let n = 0;
    for (const p of this.pools.values()) n += p.all.size;
    return n;
  }

  /** Closes every idle connection now (an HTTP/2 session without exchanges in flight included). */
  closeIdleConnections(): void {
    for (const p of this.pools.values()) {
      for (const s of p.idle.splice(0)) {
        this.idleTotal--;
        p.all.delete(s);
        s.destroy();
      }
      for (let i = p.shared.length - 1; i >= 0; i--) {
        const s = p.shared[i]!;
        if (s.closed || s.isIdle()) {
          p.discard(s);
          s.destroy();
        }
      }
    }
  }

  /** Closes idle connections now and the others once their exchange ends; later use fails. */
  close(): void {
    this.closed = true;
    this.closeIdleConnections();
    // Busy multiplexed sessions finish their exchanges, then close (HTTP/2: GOAWAY).
    for (const p of this.pools.values()) for (const s of p.shared.splice(0)) void s.close();
    this.sharedTotal = 0;
    if (this.sweeper !== null) clearInterval(this.sweeper);
    this.sweeper = null;
  }

  /**
   * @internal An idle session for `origin`, or null: synchronous, so reusing a pooled
   * connection costs no promise (the common case of every call after the first). `route` is
   * what the `client.poolKey` taps gave the call.
   */
  acquireIdle(origin: Origin, a: AcquireOptions, route: unknown): ClientSession | null {
    if (this.closed || (this.idleTotal === 0 && this.sharedTotal === 0)) return null;
    const pool = this.pools.get(poolKey(origin, route, a.httpVersion));
    if (pool === undefined) return null;
    if (pool.shared.length > 0) {
      const s = this.takeShared(pool);
      if (s !== null) return s;
    }
    return this.takeIdle(pool);
  }

  /** A multiplexed session of `pool` with a free stream, dropping closed ones (Go's first-fit). */
  private takeShared(pool: Pool): ClientSession | null {
    const shared = pool.shared;
    for (let i = 0; i < shared.length; i++) {
      const s = shared[i]!;
      if (s.closed) {
        pool.discard(s);
        i--;
        continue;
      }
      if (s.capacity() > 0) return s;
    }
    return null;
  }

  private takeIdle(pool: Pool): ClientSession | null {
    const idle = pool.idle;
    while (idle.length > 0) {
      const s = idle.pop()!;
      this.idleTotal--;
      if (!s.closed && (this.idleTimeout === 0 || s.idleSince === undefined || performance.now() - s.idleSince < this.idleTimeout)) return s;
      s.destroy();
      pool.all.delete(s);
    }
    return null;
  }

  /** @internal A session for one exchange to `origin`: an idle one, or a new connection (see {@link Transport.acquireIdle} for `route`). */
  async acquire(origin: Origin, ctx: RequestContext, a: AcquireOptions, route: unknown): Promise<ClientSession> {
    if (this.closed) throw new ArgumentError('the transport is closed');
    const key = poolKey(origin, route, a.httpVersion);
    let pool = this.pools.get(key);
    if (pool === undefined) {
      pool = new Pool(key, this);
      this.pools.set(key, pool);
    }
    const ready = (pool.shared.length > 0 ? this.takeShared(pool) : null) ?? this.takeIdle(pool);
    if (ready !== null) return ready;
    while (pool.pending !== null) {
      // A connection that may be HTTP/2 is on its way: share it instead of dialing another.
      const s = await pool.pending;
      if (s !== null && !s.closed && s.capacity() > 0) return s;
      const again = this.takeShared(pool);
      if (again !== null) return again;
      if (s === null || s.capacity() === 0) break;
    }
    return this.connect(pool, origin, ctx, a, route);
  }

  private async connect(pool: Pool, origin: Origin, ctx: RequestContext, a: AcquireOptions, route: unknown): Promise<ClientSession> {
    const started = performance.now();
    const hooks = a.hooks;
    const o: ConnectOptions = {
      protocol: origin.protocol,
      host: origin.host,
      port: origin.port,
      servername: this.tlsConfig?.servername,
      alpnProtocols: ['http/1.1'],
      httpVersion: a.httpVersion,
      localAddress: this.localAddr,
      timeoutMs: a.connectTimeout,
      poolKey: route,
      tls: this.tlsConfig,
    };
    // `auto` comes from a client that prefers HTTP/2 (its own preferHttp2, or this transport's
    // default); a client without the preference acquires `h1`.
    if (origin.protocol === 'https:' && hooks !== null && hooks.alpnProtocols !== null && a.httpVersion !== 'h1') {
      o.alpnProtocols = hooks.alpnProtocols.call(o.alpnProtocols, o);
    }
    if (hooks === null || hooks.session === null || pool.pending !== null || (a.httpVersion !== 'h2' && !o.alpnProtocols.includes('h2'))) {
      return this.open(pool, o, ctx, hooks, started);
    }
    // This connection may be multiplexed: requests arriving meanwhile wait for it (see acquire).
    const opening = this.open(pool, o, ctx, hooks, started);
    const shared = opening.then(
      (s) => (s.multiplexed !== false ? s : null),
      () => null,
    );
    pool.pending = shared;
    void shared.then(() => {
      if (pool.pending === shared) pool.pending = null;
    });
    return opening;
  }

  private async open(pool: Pool, o: ConnectOptions, ctx: RequestContext, hooks: Tapped<ClientHooks> | null, started: number): Promise<ClientSession> {
    let given: Duplex | null = null;
    if (hooks !== null && hooks.connect !== null) given = (await hooks.connect.promise(o, ctx)) ?? null;
    const socket = await openConnection(o, ctx, given, started);
    let session: ClientSession | null = null;
    if (hooks !== null && hooks.session !== null) {
      const alpn = 'alpnProtocol' in socket ? ((socket as { alpnProtocol?: string | false }).alpnProtocol ?? false) : null;
      session = hooks.session.call(socket, { alpnProtocol: alpn, connect: o, ctx, pool }) ?? null;
    }
    if (session === null) session = new H1ClientSession(socket, pool, { maxLineBytes: this.maxLineBytes, maxHeaderBytes: this.maxHeaderBytes });
    else if (session.multiplexed !== false) this.addShared(pool, session);
    pool.all.add(session);
    this.fresh.add(session);
    if (channels.clientConnectionOpen.hasSubscribers) publishOpen(o, session, socket, started);
    return session;
  }

  /**
   * @internal True when `session`, which {@link Transport.acquire} returned, is a connection
   * this transport just opened and no exchange took before (the first asker is told so once).
   */
  takeFresh(session: ClientSession): boolean {
    return this.fresh.delete(session);
  }

  private addShared(pool: Pool, session: ClientSession): void {
    if (session.closed) return;
    pool.shared.push(session);
    this.sharedTotal++;
    this.startSweeper();
  }

  private startSweeper(): void {
    if (this.idleTimeout > 0 && this.sweeper === null) {
      // One timer for the whole transport, not one per connection.
      this.sweeper = setInterval(() => this.sweep(), Math.max(1000, this.idleTimeout / 2));
      this.sweeper.unref();
    }
  }

  /** @internal */
  onRelease(pool: Pool, session: ClientSession): void {
    if (this.closed || pool.idle.length >= this.maxIdlePerHost || this.idleTotal >= this.maxIdleTotal) {
      pool.all.delete(session);
      session.destroy();
      return;
    }
    pool.idle.push(session);
    this.idleTotal++;
    this.startSweeper();
  }

  private sweep(): void {
    const now = performance.now();
    for (const p of this.pools.values()) {
      for (let i = p.idle.length - 1; i >= 0; i--) {
        const s = p.idle[i]!;
        if (s.idleSince !== undefined && now - s.idleSince >= this.idleTimeout) {
          p.idle.splice(i, 1);
          this.idleTotal--;
          p.all.delete(s);
          s.destroy();
        }
      }
      for (let i = p.shared.length - 1; i >= 0; i--) {
        const s = p.shared[i]!;
        if (s.closed) p.discard(s);
        else if (s.isIdle() && s.idleSince !== undefined && now - s.idleSince >= this.idleTimeout) {
          p.discard(s);
          void s.close();
        }
      }
      if (p.all.size === 0 && p.pending === null) this.pools.delete(p.key);
    }
    if (this.idleTotal === 0 && this.sharedTotal === 0 && this.sweeper !== null) {
      clearInterval(this.sweeper);
      this.sweeper = null;
    }
  }
}

const routeIds = new WeakMap<object, number>();
let nextRouteId = 1;

/** Keys of pools with nothing added per origin object and version wish: the client reuses its Origin objects, so most acquires build no string. */
const directKeys = new WeakMap<Origin, Record<string, string>>();

/** Pool key: origin, HTTP version wish, and what the `client.poolKey` taps gave (an object by identity). */
function poolKey(o: Origin, route: unknown, v: string): string {
  if (route === undefined || route === null) {
    let byVersion = directKeys.get(o);
    if (byVersion === undefined) directKeys.set(o, (byVersion = {}));
    return (byVersion[v] ??= `${o.protocol}//${o.host}:${o.port}|${v}`);
  }
  return buildKey(o, route, v);
}

function buildKey(o: Origin, route: unknown, v: string): string {
  let p: string;
  if ((typeof route === 'object' && route !== null) || typeof route === 'function') {
    let id = routeIds.get(route);
    if (id === undefined) {
      id = nextRouteId++;
      routeIds.set(route, id);
    }
    p = `|@${id}`;
  } else p = `|=${String(route)}`;
  return `${o.protocol}//${o.host}:${o.port}|${v}${p}`;
}

/**
 * The plugins' call options among `options` (the set ones), checking every name: one that is
 * neither the transport's own nor a call option a plugin lets a transport carry is an
 * `ArgumentError` with the nearest valid name.
 */
function carriedOptions(options: object): Readonly<Record<string, unknown>> {
  let carried: Record<string, unknown> | null = null;
  for (const key in options) {
    if (TRANSPORT_OPTIONS.has(key) || !Object.prototype.hasOwnProperty.call(options, key)) continue;
    if (!isTransportOption(key)) throw unknownOptionError('new Transport()', key, [...TRANSPORT_OPTIONS, ...pluginTransportOptionNames()]);
    const v = (options as Record<string, unknown>)[key];
    if (v !== undefined) (carried ??= {})[key] = v;
  }
  return carried === null ? NO_CALL_DEFAULTS : Object.freeze(carried);
}

function int(v: unknown, name: string, dflt: number, min = 0): number {
  if (v === undefined) return dflt;
  if (typeof v !== 'number' || !Number.isInteger(v) || v < min) throw new ArgumentError(`${name} must be an integer >= ${min}, got ${String(v)}`);
  return v;
}
