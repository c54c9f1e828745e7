/**
 * Server: owns the listener, the set of open connections and their configuration; accepts
 * connections, lets protocol plugins (such as h2 and h2c) claim them, and runs HTTP/1.1 on the rest.
 *
 * States (the reference's Server rows): configured → `listen()` → listening →
 * `close()` → not accepting (requests in flight finish, idle keep-alive connections close at
 * once) → stopped; `forceClose()` drops every connection at once. `shutdown()` is a
 * `close()` behind a drain (drain.ts): unready while it still serves for `drainDelay`, then
 * (once no connection came for {@link LISTEN_QUIET_MS}) as `close()`, but an idle kept-alive
 * connection closes only after {@link IDLE_AT_DRAIN_MS} more of idleness; all bounded by
 * `drainTimeout`. A graceful close tells connections (`Connection: close`, GOAWAY) only once
 * the listener is closed.
 * A connection accepted but not yet used when the server stops accepting is not idle: its
 * client is sending its first request, which gets {@link HEAD_AT_CLOSE_MS} to come and is
 * answered (with `Connection: close`).
 *
 * The server knows every connection it accepted until it closes, upgraded ones included (a
 * WebSocket, or any socket a handler or an `onUpgrade` tap took over), so `forceClose()` needs
 * no plugin's help. A graceful `close()` waits at most `closeGracePeriod`; then it ends what is
 * left: politely where it knows how (a streamed response body such as SSE ends where it is; an
 * upgraded socket whose owner registered a going-away step, such as a WebSocket's 1001 close,
 * runs it), by dropping it otherwise, and drops what the polite ends leave open after
 * {@link GOING_AWAY_MS}.
 */
import process from 'node:process';
import { Buffer } from 'node:buffer';
import { performance } from 'node:perf_hooks';
import net, { type Socket } from 'node:net';
import type { Duplex } from 'node:stream';
import type { Server as TlsServer, TLSSocket } from 'node:tls';
import { AddressInUseError, ArgumentError } from '../errors.js';
import { nodeTls } from '../builtins.js';
import { tapsIdle, type ServerHooks, type ServerInfo, type Tapped } from '../hooks.js';
import type { HookHost } from '../hook-host.js';
import type { Request } from '../message/request.js';
import type { Response } from '../message/response.js';
import { hostPort } from '../message/uri.js';
import { boundReads, pauseReadable, READ_MAX, unboundReads } from '../socket-reads.js';
import { H1Connection, HEAD_AT_CLOSE_MS, type ConnectionHost } from './h1-connection.js';
import { watchSignals } from './drain.js';
import { resolveServerOptions, type ResolvedServerOptions, type ServerOptions } from './options.js';
import { ExchangePipeline, type PipelineServer, type RequestHandler, type StreamHandler } from './exchange.js';
import type { ProtocolConnection } from './protocol-host.js';
import { Prefaces } from './prefaces.js';
import { inject, type InjectHost, type InjectRequest } from './inject.js';
import { HeadParserPool } from './parser-pool.js';
import { TimerHeap } from './timer-heap.js';
import { channels } from '../diagnostics.js';
import { observedWire } from './observed-wire.js';

/** What `new Server()` takes: the handler, whether it is a stream handler, and the server options. */
export interface ServerInit extends ServerOptions {
  /** A request handler (`Request` → `Response`), or a stream handler when `stream` is true. */
  handler: RequestHandler | StreamHandler;
  /** `handler` is a stream handler (reads and writes a `Stream`). Default false. */
  stream?: boolean;
  /** A booted kernel whose server hooks (plugins) this server runs; none means no plugins. */
  kernel?: HookHost;
  /** Called with each error a handler threw (the client got 500) or a response failed with; default: one line on stderr. */
  onError?: (error: unknown, request: Request | null) => void;
}

/**
 * What `kernel.inject(target, request)` runs the request on besides a bare request handler:
 * what `new Server` takes less `kernel` (`{ handler, stream: true }` for a stream handler).
 */
export type InjectTarget = Omit<ServerInit, 'kernel'>;

type State = 'configured' | 'listening' | 'closing' | 'closed';

/**
 * How long what `close()` ended politely once its grace period ran out (a WebSocket's closing
 * handshake, the end of an SSE response) may take before it is dropped.
 */
export const GOING_AWAY_MS = 2000;

/**
 * How long `shutdown()` keeps a kept-alive connection that is idle when the listener closes,
 * or becomes idle after, ms: a client of it (a balancer's upstream pool) may be sending its
 * next request on it right now, and closing under that request loses it (a POST is not
 * retried). A request that comes in time is answered with `Connection: close`; one that comes
 * later meets a close the client had this long to see coming, as with any idle timeout.
 */
export const IDLE_AT_DRAIN_MS = 1000;

/**
 * How long no connection may have come before `shutdown()` closes its listener, ms, and how
 * much longer than `drainDelay` it waits for such a gap at most. A connection the kernel
 * completed but the server has not accepted yet is reset by the close with the request its
 * client may have written; a balancer that renews its upstream connections (nginx after
 * `keepalive_requests`, 1000 by default) opens several at once, and a gap after them is
 * where the close loses none.
 */
export const LISTEN_QUIET_MS = 50;
export const LISTEN_QUIET_WAIT_MS = 1000;

/** An HTTP server: `await new Server({ handler }).listen()`, or `serve`/`listen`. */
export class Server implements ConnectionHost, PipelineServer, InjectHost {
  /** @internal */
  readonly opts: ResolvedServerOptions;
  /** @internal */
  readonly info: ServerInfo;
  /** @internal */
  readonly handler: RequestHandler | null;
  /** @internal */
  readonly streamHandler: StreamHandler | null;
  /** @internal */
  hooks: Tapped<ServerHooks> | null = null;
  /** @internal True while every `server.onRequest` tap says it has nothing to do (null: some tap always acts). */
  requestTapsIdle: (() => boolean) | null = null;
  /** What the protocol taps declared to see of a plain connection's first bytes; null: read nothing ahead. */
  private prefaces: Prefaces | null = null;
  private readonly kernel: HookHost | null;
  private readonly onError: (error: unknown, request: Request | null) => void;
  private listener: net.Server | null = null;
  private ownsListener = false;
  private state: State = 'configured';
  private readonly connections = new Set<H1Connection>();
  /** Connections protocol plugins took over (HTTP/2). */
  private readonly protocolConns = new Set<ProtocolConnection>();
  /** @internal The exchange pipeline every connection runs its exchanges through; also the server as protocol plugins see it (`ProtocolInfo.host`). */
  readonly pipeline: ExchangePipeline;
  /** @internal The request-head parsers the HTTP/1.1 connections share. */
  readonly parsers: HeadParserPool;
  /** @internal The head, body and idle deadlines of the HTTP/1.1 connections, on one timer. */
  readonly timers = new TimerHeap();
  /**
   * Sockets accepted but not yet handed to a protocol (protocol detection, TLS handshake), each
   * with the timer that drops it if that takes too long (null when the timeout is off).
   */
  private readonly pending = new Map<Socket, NodeJS.Timeout | null>();
  /** Upgraded sockets, until they close. */
  private readonly upgraded = new Set<Duplex>();
  /** The going-away step an upgraded socket's owner registered (a tap may do so before the handover completes). */
  private readonly goingAway = new WeakMap<Duplex, () => void>();
  /** `close()`'s grace period, then the bound on what it ended politely. */
  private closeTimer: NodeJS.Timeout | null = null;
  /** `close()`'s grace period is over: what is still open is being ended. */
  private goneAway = false;
  /** `shutdown()` or `close()` began: the server is no longer ready. */
  private draining = false;
  /** @internal {@link ConnectionHost.idleGrace}: {@link IDLE_AT_DRAIN_MS} in `shutdown()` (bounded by `idleTimeout`), 0 in `close()`. */
  idleGrace = 0;
  /** `shutdown()`'s delay before it stops accepting, then its bound (`drainTimeout`). */
  private drainTimer: NodeJS.Timeout | null = null;
  private drainDeadline: NodeJS.Timeout | null = null;
  /**
   * @internal {@link ConnectionHost.connectionsClose}: a close began and the listener is closed
   * (or the close is forced): every response closes its connection.
   */
  connectionsClose = false;
  /** When `shutdown()` last accepted a connection (`performance.now()`), and when its delay was over. */
  private lastAccept = -Infinity;
  private delayEnded = -1;
  /** A graceful close takes the connections already waiting to be accepted before the listener closes. */
  private acceptingLast = false;
  private listenerClosing = false;
  /** Stops listening for the `signals` option's signals (set while listening). */
  private unwatchSignals: (() => void) | null = null;
  private boundPort = 0;
  private boundHost = '';
  private closed: Promise<void>;
  private resolveClosed!: () => void;

  /** Configures a server; start it with {@link Server.listen}. */
  constructor(init: ServerInit) {
    if (typeof init !== 'object' || init === null) throw new ArgumentError('new Server(options) needs an options object with a handler');
    const { handler, stream, kernel, onError, ...rest } = init;
    if (typeof handler !== 'function') throw new ArgumentError(`handler must be a function, got ${typeof handler}`);
    if (stream !== undefined && typeof stream !== 'boolean') throw new ArgumentError(`stream must be a boolean, got ${typeof stream}`);
    if (onError !== undefined && typeof onError !== 'function') throw new ArgumentError(`onError must be a function, got ${typeof onError}`);
    if (kernel !== undefined && (typeof kernel !== 'object' || kernel === null || !('hooks' in kernel))) throw new ArgumentError('kernel must be a Kernel from createKernel()');
    this.opts = resolveServerOptions(rest, stream === true, kernel ?? null);
    this.handler = stream === true ? null : (handler as RequestHandler);
    this.streamHandler = stream === true ? (handler as StreamHandler) : null;
    this.kernel = kernel ?? null;
    this.onError = onError ?? defaultOnError;
    const isTls = this.opts.tls !== null || (this.opts.listener !== null && this.opts.listener instanceof nodeTls().Server);
    this.info = Object.freeze({ tls: isTls, options: this.opts.raw });
    this.boundPort = this.opts.port;
    this.boundHost = this.opts.host;
    this.pipeline = new ExchangePipeline(this);
    this.parsers = new HeadParserPool({ maxLineBytes: this.opts.maxLineBytes, maxHeaderBytes: this.opts.maxHeaderBytes });
    this.closed = new Promise((resolve) => {
      this.resolveClosed = resolve;
    });
  }

  /** The bound port once listening, else the configured one. */
  get port(): number {
    return this.boundPort;
  }

  /** The bound address once listening, else the configured host. */
  get address(): string {
    return this.boundHost;
  }

  /** True from `listen()` until `close()`/`forceClose()`. */
  get listening(): boolean {
    return this.state === 'listening';
  }

  /** True once `close()` or `forceClose()` was called (or `shutdown()`'s delay is over). */
  get closing(): boolean {
    return this.state === 'closing' || this.state === 'closed';
  }

  /**
   * The server's readiness: true while it listens and no drain began (`shutdown()`, `close()`);
   * the `healthPath` answer (200 or 503) says the same to a balancer's health check.
   */
  get ready(): boolean {
    return this.state === 'listening' && !this.draining;
  }

  /** Number of open connections, HTTP/1 and those protocol plugins serve (for tests and metrics). */
  get connectionCount(): number {
    return this.connections.size + this.pending.size + this.protocolConns.size + this.upgraded.size;
  }

  /** Starts listening; resolves to this server once bound. Binding an address in use throws `AddressInUseError`. */
  async listen(): Promise<this> {
    if (this.state !== 'configured') throw new ArgumentError(`server.listen(): the server is already ${this.state}`);
    this.state = 'listening';
    const bound = this.bindHooks();
    if (bound !== null) await bound;
    const o = this.opts;
    let listener = o.listener;
    if (listener === null) {
      this.ownsListener = true;
      if (o.tls !== null) {
        const alpn = this.alpn(o.tls.ALPNProtocols);
        listener = nodeTls().createServer({ ...o.tls, ALPNProtocols: alpn });
      } else {
        listener = net.createServer({ noDelay: true });
      }
    }
    this.listener = listener;
    // A listener made here is TLS when given tls options; one passed in was checked by the constructor.
    if (this.info.tls) {
      const secure = listener as TlsServer;
      secure.on('secureConnection', this.onSecureConnection);
      secure.on('connection', this.onTcpForTls);
      secure.on('tlsClientError', onTlsClientError);
    } else {
      listener.on('connection', this.onConnection);
    }
    if (!listener.listening) {
      await new Promise<void>((resolve, reject) => {
        const onErr = (err: NodeJS.ErrnoException): void => {
          listener!.removeListener('listening', onOk);
          this.state = 'closed';
          this.resolveClosed();
          reject(err.code === 'EADDRINUSE' ? new AddressInUseError(hostPort(o.host, o.port), err) : err);
        };
        const onOk = (): void => {
          listener!.removeListener('error', onErr);
          resolve();
        };
        listener!.once('error', onErr);
        listener!.once('listening', onOk);
        listener!.listen({ host: o.host, port: o.port, backlog: o.backlog });
      });
    }
    const addr = listener.address();
    if (addr !== null && typeof addr === 'object') {
      this.boundPort = addr.port;
      this.boundHost = addr.address;
    }
    listener.on('error', (err) => this.onError(err, null));
    if (o.signals.length > 0 && this.state === 'listening') this.unwatchSignals = watchSignals(o.signals, this.onSignal);
    return this;
  }

  /** A `signals` signal: the first starts `shutdown()`, the next forces the close. */
  private readonly onSignal = (): void => {
    void (this.draining ? this.forceClose() : this.shutdown());
  };

  /**
   * @internal Resolves the kernel's server hooks for this server, once (the kernel boots first
   * when it has not); null when that is done already, or there is no kernel.
   */
  bindHooks(): Promise<void> | null {
    const k = this.kernel;
    if (k === null || this.hooks !== null) return null;
    const bind = (): void => {
      const hooks = (this.hooks = k.tapped.server);
      if (hooks.protocol !== null) this.prefaces = Prefaces.of(hooks.protocol);
      this.requestTapsIdle = tapsIdle(hooks.onRequest);
    };
    if (k.state === 'ready') {
      bind();
      return null;
    }
    return k.ready().then(bind);
  }

  /**
   * Runs one request through this server's whole stack (its plugins' hooks, the handler,
   * `onResponseHead`, limits and error answers) with no socket, and resolves to the response
   * with its body read (see `InjectRequest`; a string is a GET of that url). Works before
   * `listen()` (the kernel boots then) and while listening; rejects once `close()` or
   * `forceClose()` was called. An exchange in flight counts as a connection: a graceful
   * `close()` waits for it (a streamed body such as SSE ends at the grace period), and
   * `forceClose()` rejects it with `CanceledError`. A request that asks to upgrade to another
   * protocol, which needs a socket, rejects with `NeedsSocketError`; `peerAddr()` is the
   * `remoteAddress` option (127.0.0.1 by default) with port 0.
   */
  inject(request: InjectRequest | string): Promise<Response> {
    return inject(this, request);
  }

  private alpn(given: unknown): string[] {
    let base = Array.isArray(given) && given.every((p) => typeof p === 'string') ? (given as string[]) : ['http/1.1'];
    const tapped = this.kernel !== null ? this.kernel.tapped.server : null;
    // Offer only what can be served: without a protocol plugin, another protocol would meet the HTTP/1 loop.
    if (tapped === null || tapped.protocol === null) base = base.filter((p) => HTTP1_ALPN.includes(p));
    const h = tapped !== null ? tapped.alpnProtocols : null;
    return h !== null ? h.call([...base], this.info) : base;
  }

  /**
   * Stops accepting and resolves once the requests in flight and the upgraded connections
   * (WebSockets) have finished; idle keep-alive connections close at once, busy ones after
   * their current response. What is still open after `closeGracePeriod` is ended: a streamed
   * response body (SSE) ends cleanly, a WebSocket is closed with 1001 (going away), anything
   * else is dropped (see the module notes).
   */
  close(): Promise<void> {
    return this.stop(false);
  }

  /**
   * Drains the server and resolves once it is closed, as a load balancer or orchestrator
   * (Kubernetes, systemd) expects on SIGTERM: readiness turns unready at once (`ready` false,
   * `healthPath` answers 503) while the server still accepts and serves as before for
   * `drainDelay`; then it closes as `close()` does (stops accepting, `Connection: close` on
   * every HTTP/1 response, GOAWAY on HTTP/2, requests in flight finish), except that an idle
   * kept-alive connection stays open {@link IDLE_AT_DRAIN_MS} more for a request already on
   * its way, which is answered. What is still open `drainTimeout` after the call is dropped.
   * Before `listen()`, or once closing, it is `close()`.
   */
  shutdown(): Promise<void> {
    if (this.state !== 'listening') return this.stop(false);
    if (this.draining) return this.closed;
    this.draining = true;
    const idle = this.opts.idleTimeout;
    this.idleGrace = idle > 0 ? Math.min(IDLE_AT_DRAIN_MS, idle) : IDLE_AT_DRAIN_MS;
    const o = this.opts;
    if (o.drainTimeout > 0) {
      this.drainDeadline = setTimeout(this.drainOver, o.drainTimeout);
      this.drainDeadline.unref();
    }
    if (o.drainDelay > 0) {
      this.drainTimer = setTimeout(this.delayOver, o.drainDelay);
      this.drainTimer.unref();
    } else this.delayOver();
    return this.closed;
  }

  /** The delay is over: close once no connection came for {@link LISTEN_QUIET_MS} (waiting {@link LISTEN_QUIET_WAIT_MS} at most). */
  private readonly delayOver = (): void => {
    this.drainTimer = null;
    const now = performance.now();
    if (this.delayEnded < 0) this.delayEnded = now;
    const quiet = now - this.lastAccept;
    if (quiet < LISTEN_QUIET_MS && now - this.delayEnded < LISTEN_QUIET_WAIT_MS) {
      this.drainTimer = setTimeout(this.delayOver, LISTEN_QUIET_MS - quiet);
      this.drainTimer.unref();
      return;
    }
    void this.stop(false);
  };

  private readonly drainOver = (): void => {
    this.drainDeadline = null;
    void this.stop(true);
  };

  /** Stops accepting and closes every connection at once, including requests in progress. */
  forceClose(): Promise<void> {
    return this.stop(true);
  }

  /**
   * `close()` and `forceClose()`: stop accepting, then end every connection gracefully (the
   * grace period starts) or at once. A graceful stop asked again changes nothing; a forced one
   * also ends a graceful stop under way.
   */
  private stop(force: boolean): Promise<void> {
    // A server that never listened closes at once, unless injected exchanges are in flight.
    if (this.state === 'closed' || (this.state === 'configured' && this.protocolConns.size === 0)) {
      this.state = 'closed';
      this.resolveClosed();
      return this.closed;
    }
    if (this.state === 'closing' && !force) return this.closed;
    this.state = 'closing';
    this.draining = true;
    if (this.drainTimer !== null) clearTimeout(this.drainTimer);
    this.drainTimer = null;
    if (force) {
      this.connectionsClose = true;
      this.closeListener();
      if (this.closeTimer !== null) clearTimeout(this.closeTimer);
      this.dropAll();
    } else if (this.listener !== null && this.listener.listening && !this.listenerClosing) {
      // The accepts of this event-loop turn first (see closeGracefully).
      this.acceptingLast = true;
      setImmediate(this.closeGracefully);
    } else this.closeGracefully();
    this.maybeClosed();
    const grace = this.opts.closeGracePeriod;
    if (!force && this.state === 'closing' && grace > 0) this.closeTimer = setTimeout(this.goAway, grace);
    return this.closed;
  }

  /** The grace period is over: end what is left, politely where the kernel or the socket's owner knows how. */
  private readonly goAway = (): void => {
    this.goneAway = true;
    this.dropPending();
    for (const c of this.connections) c.endForClose();
    // HTTP/2: streamed bodies end cleanly; the sessions, sent GOAWAY at close(), then close once
    // their streams are done, or go with the rest below.
    this.pipeline.endStreamedBodies();
    for (const socket of this.upgraded) this.endUpgraded(socket);
    if (this.state === 'closing') this.closeTimer = setTimeout(this.dropAll, GOING_AWAY_MS);
  };

  /** Drops the sockets still waiting for a protocol (detection, TLS handshake). */
  private dropPending(): void {
    for (const s of this.pending.keys()) s.destroy();
  }

  private endUpgraded(socket: Duplex): void {
    const step = this.goingAway.get(socket);
    if (step === undefined) {
      socket.destroy();
      return;
    }
    try {
      step();
    } catch (err) {
      this.reportError(err, null);
      socket.destroy();
    }
  }

  /**
   * True while a connection whose protocol was just found (or whose TLS handshake just ended)
   * is served: while listening, and during a graceful close until its grace period is over
   * (it was accepted before the listener closed; its first request is answered).
   */
  private get serving(): boolean {
    return this.state === 'listening' || (this.state === 'closing' && !this.goneAway);
  }

  private readonly dropAll = (): void => {
    this.closeTimer = null;
    this.dropPending();
    for (const c of this.connections) c.destroy();
    for (const c of this.protocolConns) c.destroy();
    for (const s of this.upgraded) s.destroy();
  };

  /** Resolves when the server has stopped (after `close()` or `forceClose()` finished). */
  wait(): Promise<void> {
    return this.closed;
  }

  /**
   * A graceful close, once the accepts of the event-loop turn it began in are taken: the
   * listener closes, then connections learn it (`Connection: close`, idle ones closed, GOAWAY).
   * Closing a listening socket resets the connections still in its accept queue, whose clients
   * may have written a request on them already; and a client told to close one connection opens
   * another at once (nginx does), so no connection is told before the listener is closed.
   */
  private readonly closeGracefully = (): void => {
    this.closeListener();
    if (this.connectionsClose || this.state !== 'closing') return;
    this.connectionsClose = true;
    // A socket still waiting for its protocol is a client about to send its first request.
    const rht = this.opts.readHeaderTimeout;
    for (const s of [...this.pending.keys()]) this.addPending(s, rht > 0 ? Math.min(rht, HEAD_AT_CLOSE_MS) : HEAD_AT_CLOSE_MS);
    for (const c of this.connections) c.closeIfIdle();
    for (const c of this.protocolConns) c.shutdown();
    this.maybeClosed();
  };

  private closeListener(): void {
    const l = this.listener;
    this.acceptingLast = false;
    if (l === null || this.listenerClosing) return;
    this.listenerClosing = true;
    l.removeListener('connection', this.onConnection);
    l.removeListener('connection', this.onTcpForTls);
    l.removeListener('secureConnection', this.onSecureConnection);
    if (this.ownsListener || l.listening) l.close(() => this.maybeClosed());
  }

  private maybeClosed(): void {
    if (this.state !== 'closing') return;
    if (this.connections.size > 0 || this.pending.size > 0 || this.protocolConns.size > 0 || this.upgraded.size > 0) return;
    if (this.listener !== null && this.listener.listening) return;
    if (this.closeTimer !== null) clearTimeout(this.closeTimer);
    this.closeTimer = null;
    this.state = 'closed';
    this.endDrain();
    this.resolveClosed();
  }

  /** The server is closed: the drain's timers and signal listeners go. */
  private endDrain(): void {
    if (this.drainTimer !== null) clearTimeout(this.drainTimer);
    if (this.drainDeadline !== null) clearTimeout(this.drainDeadline);
    this.drainTimer = this.drainDeadline = null;
    if (this.unwatchSignals !== null) this.unwatchSignals();
    this.unwatchSignals = null;
  }

  /** @internal */
  removeConnection(conn: H1Connection): void {
    if (this.connections.delete(conn)) this.maybeClosed();
  }

  /**
   * @internal An HTTP/1 connection handed its socket over (`Upgrade`): the server keeps it in
   * its books until it closes (`close()` waits for it, `forceClose()` drops it).
   */
  adoptUpgraded(socket: Duplex): void {
    if (socket.destroyed) return;
    this.upgraded.add(socket);
    socket.once('close', () => {
      if (this.upgraded.delete(socket)) this.maybeClosed();
    });
    // Upgraded after the grace period: nothing is left to wait for.
    if (this.goneAway) this.endUpgraded(socket);
  }

  /** @internal See {@link ProtocolHost.onGoingAway}. */
  onGoingAway(socket: Duplex, step: () => void): void {
    this.goingAway.set(socket, step);
    if (this.goneAway && this.upgraded.has(socket)) this.endUpgraded(socket);
  }

  /** @internal A protocol plugin's connection joins the lifecycle; false when the server is closing. */
  addProtocolConnection(conn: ProtocolConnection): boolean {
    // Accepted in the turn a graceful close began: GOAWAY comes with the others', once the listener is closed.
    if (this.state !== 'listening' && !this.acceptingLast) return false;
    this.protocolConns.add(conn);
    return true;
  }

  /** @internal An exchange `inject()` runs joins the lifecycle, listening or not; false once the server is closing. */
  addInjected(conn: ProtocolConnection): boolean {
    if (this.closing) return false;
    this.protocolConns.add(conn);
    return true;
  }

  /** @internal */
  removeProtocolConnection(conn: ProtocolConnection): void {
    if (this.protocolConns.delete(conn)) this.maybeClosed();
  }

  /** @internal */
  reportError(err: unknown, request: Request | null): void {
    if (request !== null) observedWire(request)?.reported(err);
    const ch = channels.serverError;
    if (ch.hasSubscribers) ch.publish({ request, error: err });
    try {
      this.onError(err, request);
    } catch {
      // An error reporter that throws must not take the server down.
    }
  }

  // ---- accepting ---------------------------------------------------------------------------

  /** A TCP accept: false (the socket dropped) once the server no longer listens, else true after the connection hook. */
  private accepted(socket: Socket): boolean {
    if (this.state !== 'listening' && !this.acceptingLast) {
      socket.destroy();
      return false;
    }
    if (this.draining) this.lastAccept = performance.now();
    const hooks = this.hooks;
    if (hooks !== null && hooks.connection !== null) hooks.connection.call(socket, this.info);
    const ch = channels.serverConnection;
    if (ch.hasSubscribers) ch.publish({ socket, server: this.info });
    return true;
  }

  private readonly onConnection = (socket: Socket): void => {
    if (!this.accepted(socket)) return;
    const hooks = this.hooks;
    if (hooks !== null && hooks.protocol !== null) {
      if (this.prefaces !== null) {
        this.detect(socket, hooks.protocol, this.prefaces);
        return;
      }
      if (hooks.protocol.call(socket, { alpnProtocol: null, head: EMPTY, server: this.info, host: this.pipeline }) === true) return;
    }
    this.startHttp1(socket, null);
  };

  /** TCP accept on a TLS listener: the connection hook; HTTP starts after the handshake, until which the raw socket is `pending`. */
  private readonly onTcpForTls = (socket: Socket): void => {
    if (!this.accepted(socket)) return;
    this.addPending(socket, this.opts.tlsHandshakeTimeout);
    socket.once('close', () => {
      if (this.removePending(socket)) this.maybeClosed();
    });
  };

  private readonly onSecureConnection = (socket: TLSSocket): void => {
    // The handshake is over: the raw socket now lives on as this TLS connection.
    const raw = (socket as TLSSocket & { _parent?: Socket })._parent;
    if (raw !== undefined) this.removePending(raw);
    if (!this.serving) {
      socket.destroy();
      this.maybeClosed();
      return;
    }
    const hooks = this.hooks;
    if (hooks !== null && hooks.protocol !== null) {
      const claimed = hooks.protocol.call(socket, { alpnProtocol: socket.alpnProtocol ?? false, head: EMPTY, server: this.info, host: this.pipeline });
      if (claimed === true) return;
    }
    this.startHttp1(socket, null);
  };

  /**
   * Plain TCP with taps that declared prefaces: read until the bytes hold one, or cannot become
   * one. Reads are bounded to the preface still missing (`boundReads`, and why), so what a
   * client sends after it (HTTP/2's first frames) stays in the socket for the taker; a runtime
   * without that reads as a stream.
   */
  private detect(socket: Socket, hook: NonNullable<Tapped<ServerHooks>['protocol']>, prefaces: Prefaces): void {
    // Waiting for the first bytes is waiting for a request head: a client that sends nothing, or
    // only part of a preface, is dropped at readHeaderTimeout.
    this.addPending(socket, this.opts.readHeaderTimeout);
    let head: Buffer = EMPTY;
    let settled = false;
    const done = (): void => {
      settled = true;
      socket.removeListener('data', onData);
      socket.removeListener('end', onEnd);
      socket.removeListener('close', onClose);
      this.removePending(socket);
    };
    const decide = (): void => {
      if (settled) return;
      done();
      // Paused, so no byte flows past between our listener and a claiming tap's.
      if (bounded) pauseReadable(socket);
      else socket.pause();
      if (!this.serving) {
        socket.destroy();
        this.maybeClosed();
        return;
      }
      // Whoever reads next (a claiming tap, node:http2 below its own listener, or HTTP/1) reads unbounded.
      if (bounded) unboundReads(socket);
      const claimed = hook.call(socket, { alpnProtocol: null, head, server: this.info, host: this.pipeline });
      if (claimed === true) return;
      // HTTP/1 handles errors itself: the guard for the detection would stay as one more listener (an array) per connection.
      socket.removeListener('error', noop);
      this.startHttp1(socket, head);
      socket.resume();
    };
    /** Adds a read to `head` (copied: a bounded read's bytes are a view); 1 once it holds a preface, -1 once it cannot, 0 while it may. */
    const take = (bytes: Buffer): -1 | 0 | 1 => {
      head = head.length === 0 ? Buffer.from(bytes) : Buffer.concat([head, bytes]);
      return prefaces.match(head);
    };
    const onData = (chunk: Buffer): void => {
      if (take(chunk) !== 0) decide();
    };
    const onEnd = (): void => decide();
    const onClose = (): void => {
      done();
      this.maybeClosed();
    };
    let gathered = false;
    const bounded = boundReads(socket, prefaces.shortest, (bytes, full) => {
      if (gathered) head = Buffer.concat([head, bytes]);
      else {
        const match = take(bytes);
        if (match === 0) return prefaces.missing(head);
        if (match === 1) {
          // What follows the preface stays in the socket; the taker reads it after this read.
          process.nextTick(decide);
          return 0;
        }
        if (full) {
          // No declared preface, and more may be waiting: one more read of this burst (the rest
          // of a request head, as a rule) joins `head`, so HTTP/1 parses it whole. If there was
          // no more, libuv reads nothing further in this loop, and the decision is made after it.
          gathered = true;
          setImmediate(decide);
          return READ_MAX;
        }
      }
      // Decided within this read loop, so what else is waiting goes straight on to HTTP/1 (or
      // a claiming tap), not an event-loop turn later.
      decide();
      return socket.destroyed ? 0 : 1;
    });
    if (!bounded) socket.on('data', onData);
    socket.once('end', onEnd);
    socket.once('close', onClose);
    socket.on('error', noop);
  }

  /** `socket` waits to be handed to a protocol; it is destroyed if it still waits after `ms` (0: never; a timer it had is replaced). */
  private addPending(socket: Socket, ms: number): void {
    const old = this.pending.get(socket);
    if (old != null) clearTimeout(old);
    let timer: NodeJS.Timeout | null = null;
    if (ms > 0) {
      timer = setTimeout(destroySocket, ms, socket);
      timer.unref();
    }
    this.pending.set(socket, timer);
  }

  /** `socket` no longer waits (handed over, or closed); false when it was not waiting. */
  private removePending(socket: Socket): boolean {
    const timer = this.pending.get(socket);
    if (timer === undefined) return false;
    if (timer !== null) clearTimeout(timer);
    this.pending.delete(socket);
    return true;
  }

  private startHttp1(socket: Socket, head: Uint8Array | null): void {
    const conn = new H1Connection(this, socket);
    this.connections.add(conn);
    if (head !== null) conn.start(head);
    // Accepted before the listener closed, handed over after: its first request is on its way.
    if (this.connectionsClose) conn.closeIfIdle();
  }
}

const EMPTY: Buffer = Buffer.alloc(0);

/** ALPN names of what the kernel's own loop serves. */
const HTTP1_ALPN: readonly string[] = ['http/1.1', 'http/1.0'];

function noop(): void {}

function destroySocket(socket: Socket): void {
  socket.destroy();
}

function onTlsClientError(_err: Error, socket: TLSSocket): void {
  socket.destroy();
}

function defaultOnError(error: unknown, request: Request | null): void {
  const where = request !== null ? ` (${request.method} ${request.target})` : '';
  const what = error instanceof Error ? (error.stack ?? error.message) : String(error);
  process.stderr.write(`switchyard server error${where}: ${what}\n`);
}
