/**
 * The hook points of the kernel: every hook declared once, typed, in two frozen tables
 * (`kernel.hooks.client`, `kernel.hooks.server`), webpack-`Compiler` style.
 *
 * How the kernel keeps hooks cheap (see plugin-api.md, "Cost"):
 * - at `ready()` each hook resolves to itself when it has taps, else `null`
 *   ({@link TappedHooks}); callers branch on `null`, so an untapped hook costs one property
 *   load and one compare, and allocates nothing;
 * - the tables close at `ready()`: `tap`, `tapAsync`, `tapPromise` and `intercept` are
 *   replaced per hook instance (own properties, which is how tapable stores them anyway), so
 *   the guard runs only when tapping, never when calling; no interceptor is installed, so
 *   the compiled callers stay as tapable generates them;
 * - a tap's function is wrapped once, at tap time, so an error it throws or rejects with
 *   carries the tap's name ({@link tapErrorInfo}); tapable itself drops it.
 *
 * tapable 2.3.4 is CommonJS with hand-written ESM-style typings. It is loaded with `require`:
 * imported, Node would first lex its source for export names (cjs-module-lexer), a loop V8
 * optimizes on a background thread during start-up, which kept ~3 MiB of RSS.
 */
import type { Socket } from 'node:net';
import type { Duplex } from 'node:stream';
import type { ConnectionOptions } from 'node:tls';
import { createRequire } from 'node:module';
import type * as Tapable from 'tapable';
import { ArgumentError, PluginError } from './errors.js';
import { checkOptionKeys } from './option-keys.js';
import type { RequestContext } from './message/context.js';
import type { Request } from './message/request.js';
import type { Response } from './message/response.js';
import type { ProtocolHost, ServerInfo, UpgradeInfo } from './server/protocol-host.js';

const { AsyncSeriesBailHook, AsyncSeriesHook, SyncBailHook, SyncHook, SyncWaterfallHook } = createRequire(import.meta.url)('tapable') as typeof Tapable;

export type { ServerInfo, UpgradeInfo } from './server/protocol-host.js';

// ---------------------------------------------------------------------------------------
// Hook class aliases. tapable passes only as many arguments as the hook declared names for
// and silently drops the rest, so every hook here takes one to three: the tuple constraint
// makes a fourth a compile error instead of a silent `undefined`.

/** Argument tuples a kernel hook may declare: one to three elements. */
type HookArgs = [unknown] | [unknown, unknown] | [unknown, unknown, unknown];
type Sync<T extends HookArgs> = Tapable.SyncHook<T>;
type SyncBail<T extends HookArgs, R> = Tapable.SyncBailHook<T, R>;
type SyncWaterfall<T extends HookArgs> = Tapable.SyncWaterfallHook<T>;
type AsyncSeries<T extends HookArgs> = Tapable.AsyncSeriesHook<T>;
type AsyncSeriesBail<T extends HookArgs, R> = Tapable.AsyncSeriesBailHook<T, R>;

// ---------------------------------------------------------------------------------------
// Argument types of the client hooks.

/** What the kernel knows about an attempt when it asks `client.onRetry`. */
export interface RetryState {
  /** 1 for the first attempt, 2 for the first retry, … (redirect hops do not count). */
  readonly attempt: number;
  /** What the attempt threw, or `null` when it produced a response. */
  readonly error: unknown;
  /** The request of the attempt (after `onRequest` taps changed it). */
  readonly request: Request;
  /** The final response head of the attempt (its body unread), or `null` when it threw. */
  readonly response: Response | null;
}

/** A `client.onRetry` tap's verdict. Returning `undefined` instead defers to the next tap. */
export interface RetryDecision {
  /** `true`: send the request again; `false`: stop, the attempt's outcome stands. */
  readonly retry: boolean;
  /** Wait this long before the next attempt (0 when absent); bounded by the request's deadline. */
  readonly delayMs?: number;
  /** Why, for traces (`RetryEvent`, `RetrySkippedEvent`) and error messages. */
  readonly reason?: string;
}

/** Everything needed to open one client connection; `client.connect` taps read it. */
export interface ConnectOptions {
  /** Scheme of the origin: `https:` means the kernel runs TLS over the socket a tap supplies, unless it is already a `TLSSocket`. */
  readonly protocol: 'http:' | 'https:';
  /** Origin host name or IP literal (IPv6 without brackets). */
  readonly host: string;
  /** Origin port. */
  readonly port: number;
  /** TLS server name (SNI); absent for IP literals and plain connections. */
  readonly servername?: string;
  /** ALPN protocols to offer, most preferred first; the result of `client.alpnProtocols` (`['http/1.1']` without taps). */
  alpnProtocols: string[];
  /** HTTP version asked for: `auto` (h2 by ALPN when a tap offers it), `h1`, or `h2` (on `http:` this means h2c with prior knowledge). */
  readonly httpVersion: 'auto' | 'h1' | 'h2';
  /** Local source address to bind (`localAddr`). */
  readonly localAddress?: string;
  /** Connect timeout in ms (0 for none); it bounds DNS, TCP, proxy/SOCKS handshakes and TLS, so a tap must honour it too. */
  readonly timeoutMs: number;
  /**
   * What the `client.poolKey` taps gave the call that opens this connection (a proxy plugin:
   * the call's proxy policy); opaque to the kernel. An upgrade handshake (`upgradeRequest`),
   * whose connection is never pooled, runs the same taps with its call options.
   */
  readonly poolKey?: unknown;
  /** Client TLS configuration, passed to `tls.connect`. */
  readonly tls?: Readonly<ConnectionOptions>;
}

/** Per-exchange settings a session applies: timeouts in ms (0 = off) and head limits. */
export interface ExchangeOptions {
  /** From the request sent to the response head. */
  readonly responseHeaderTimeout: number;
  /** Longest gap between inbound read progress (also the head wait when responseHeaderTimeout is 0). */
  readonly readIdleTimeout: number;
  /** Longest gap between outbound write progress. */
  readonly writeIdleTimeout: number;
  /** How long an upload with `Expect: 100-continue` waits for 100 before sending the body anyway. */
  readonly expectContinueTimeout: number;
  /** The call's `requestTimeout` (for the error a deadline raises), 0 when none. */
  readonly requestTimeout?: number;
  /** Longest status or header line, when the call sets its own. */
  readonly maxLineBytes?: number;
  /** Largest response head, when the call sets its own. */
  readonly maxHeaderBytes?: number;
}

/** What `client.session` taps know about a fresh connection. */
export interface SessionInfo {
  /** TLS: the ALPN result (`false` when none was agreed); plain TCP: `null`. */
  readonly alpnProtocol: string | false | null;
  /** The options the connection was opened with. */
  readonly connect: ConnectOptions;
  /**
   * The context of the call that opened the connection: a session reads its settings from
   * that call's options (`getCallOptions(ctx).http2Settings`). Set by the client's pool.
   */
  readonly ctx?: RequestContext;
  /** The pool the session will live in: a multiplexed session tells it when it is gone. Set by the client's pool. */
  readonly pool?: SessionPool;
}

/** The client pool as a session it holds sees it. */
export interface SessionPool {
  /**
   * The session is closed or will take no new exchanges (GOAWAY, error, idle close): the pool
   * drops it and opens a new connection for the next request.
   */
  discard(session: ClientSession): void;
  /**
   * A session that is not {@link ClientSession.multiplexed} finished its exchange and can take
   * another: the pool keeps it idle for the next request to its origin (or closes it when its
   * idle limits are reached).
   */
  release(session: ClientSession): void;
}

/**
 * A protocol driver on one connection: the kernel's HTTP/1.1 driver and the h2 plugin's
 * HTTP/2 session implement it, and the client's pool only talks to this interface.
 * Deliberately small; plugins (h2) implement it, so members may be added, never removed.
 */
export interface ClientSession {
  /** `http/1.1` or `h2` (the ALPN identifier of the protocol spoken). */
  readonly protocol: string;
  /**
   * True: concurrent exchanges share the session while {@link ClientSession.capacity} allows
   * (HTTP/2), and the pool hands it to them as they come. False: one exchange at a time; the
   * session gives itself back with {@link SessionPool.release} when its exchange is done (the
   * kernel's HTTP/1.1 driver). Absent counts as true.
   */
  readonly multiplexed?: boolean;
  /** True once the connection is closed or closing; the pool drops closed sessions. */
  readonly closed: boolean;
  /**
   * The connection's socket (a TLS socket, or a tunnel's Duplex), read only for the
   * addresses diagnostics report (`localAddress`, `remotePort`, …). Absent: reported as
   * unknown.
   */
  readonly socket?: Duplex;
  /** Sends one exchange. Resolves when the response head arrived, with a streaming body; the exchange ends when that body is read or closed. */
  dispatch(request: Request, ctx: RequestContext, options?: ExchangeOptions): Promise<Response>;
  /**
   * True: the session honours `kHeadGate` in exchange options (it calls the gate with each
   * response head, whose `request` is the one dispatched, and gathers the body when the gate
   * says so). Absent or false: the client never passes the mark, and runs its head taps itself
   * once `dispatch` resolves.
   */
  readonly headGate?: boolean;
  /** How many more exchanges may start now: HTTP/1 0 or 1, HTTP/2 the free concurrent streams; 0 after GOAWAY. */
  capacity(): number;
  /** True when no exchange is in flight (the pool's idle timeout counts from here). */
  isIdle(): boolean;
  /** Finishes the exchanges in flight, then closes the connection. */
  close(): Promise<void>;
  /** Closes the connection now, failing exchanges in flight with `error`. */
  destroy(error?: Error): void;
  /**
   * When the session last became idle (`performance.now()`); the pool closes an idle session
   * after its `idleTimeout`. Absent: the session manages its own idle close.
   */
  readonly idleSince?: number;
}

// ---------------------------------------------------------------------------------------
// Argument types of the server hooks.

/** What `server.protocol` taps know about a new connection. */
export interface ProtocolInfo {
  /** TLS: the ALPN result (`false` when none was agreed); plain TCP: `null`. */
  readonly alpnProtocol: string | false | null;
  /**
   * Plain TCP, when a tap declared a `preface` ({@link ProtocolTapOptions}): the first bytes
   * read, up to the end of a whole declared preface (never past it), or as far as they went
   * when they fit no preface or the peer stopped sending. TLS, or no preface declared: empty.
   * A tap that claims the connection owns these bytes (`socket.unshift(head)` before handing
   * it on).
   */
  readonly head: Uint8Array;
  /** The listener. */
  readonly server: ServerInfo;
  /**
   * The server's pipeline and lifecycle for a connection the tap takes: run each exchange
   * with `host.runExchange(request, wire)`, register the connection with `host.addConnection`
   * so `close()`/`forceClose()` reach it. Always set by the server (optional in the type only
   * so hand-built `ProtocolInfo` values, in tests, need not make one).
   */
  readonly host?: ProtocolHost;
}

/**
 * What a `server.protocol` tap may declare besides its name and stage:
 * `hooks.server.protocol.tap({ name, preface }, fn)`.
 */
export interface ProtocolTapOptions {
  /**
   * The bytes a plain connection of the tap's protocol opens with (HTTP/2's 24-byte preface for
   * h2c; 1 to {@link MAX_PREFACE_BYTES}). When any tap declares one, the server reads a new
   * plain connection's first bytes before asking the taps: until they hold a whole declared
   * preface or differ from every one, never past the end of a preface they may still be (what
   * follows it stays in the socket for the taker), within `readHeaderTimeout`. Taps without
   * one are asked with what was read; when no tap declares one, the server reads nothing
   * ahead and `head` is empty.
   */
  readonly preface?: Uint8Array;
}

/** Longest `preface` a `server.protocol` tap may declare: the bytes that announce a protocol are few. */
export const MAX_PREFACE_BYTES = 1024;

/**
 * What a `server.onRequest` tap may declare besides its name and stage:
 * `hooks.server.onRequest.tap({ name, active }, fn)`.
 */
export interface RequestTapOptions {
  /**
   * Whether the tap has anything to do now, for a plugin that is idle at times (a router
   * with no routes yet). When every `server.onRequest` tap declares it and all say false, an
   * exchange skips the hook: no exchange object is made and no tap is called. So a tap may say
   * false only when it would return nothing and change nothing. Asked once per request: keep it
   * a field read.
   */
  readonly active?: () => boolean;
}

/** Address of the peer of a server connection. */
export interface PeerAddress {
  /** IP address. */
  readonly address: string;
  /** Port. */
  readonly port: number;
  /** `IPv4` or `IPv6`. */
  readonly family: string;
}

/**
 * The exchange a server request belongs to, as `server.onRequest` taps see it; the server's
 * `Stream` implements it. Deliberately small.
 */
export interface ServerExchange {
  /** The request (the same object as the hook's first argument). */
  readonly request: Request;
  /** The listener. */
  readonly server: ServerInfo;
  /** `http/1.1` or `h2`. */
  readonly protocol: string;
  /** The peer's address. */
  peerAddr(): PeerAddress;
  /** Sets a header on the response of this exchange, whoever produces it; throws `ArgumentError` once the head was written. */
  setHeader(name: string, value: string): void;
}

// ---------------------------------------------------------------------------------------
// The tables.

/**
 * Client hooks, in the order an exchange meets them. Tap functions may leave bail hooks by
 * returning nothing (`void`): that means "not me, next tap".
 */
export interface ClientHooks {
  /**
   * An attempt is about to be sent: every attempt, and every redirect hop. Taps mutate the
   * request (cookies, default headers, auth); returning a `Response` answers it without the
   * network and skips later taps. Async series bail, hot, stage order (cookies at
   * `Stage.COOKIES`, the rest at `DEFAULT`).
   */
  readonly onRequest: AsyncSeriesBail<[request: Request, ctx: RequestContext], Response | void>;
  /**
   * A response head arrived (body unread; also for a response an `onRequest` tap returned).
   * Taps mutate the response in place (decompression wraps `response.body`, cookies store
   * `Set-Cookie`, SSE parses); returning a `Request` means "send this instead" (a redirect
   * hop): the kernel discards this response and runs the hop from `onRequest`. Async series
   * bail, hot, order by stage: `COOKIES` < `DECOMPRESS` < `SSE` < `REDIRECT`.
   */
  readonly onResponseHead: AsyncSeriesBail<[response: Response, ctx: RequestContext], Request | void>;
  /**
   * An attempt ended: it threw, or it produced its final response head (not redirected).
   * The kernel judges nothing itself (statuses, idempotency, budgets and `Retry-After` are
   * policy); the first tap returning a decision wins; no decision means no retry. Async series
   * bail, warm (once per attempt, only when tapped: a stack without a retry plugin never
   * calls it), `Stage.RETRY`.
   */
  readonly onRetry: AsyncSeriesBail<[state: RetryState, ctx: RequestContext], RetryDecision | void>;
  /**
   * A client upgrade handshake completed (101): the socket now speaks the new protocol and
   * belongs to the caller that asked for the upgrade (WebSockets); taps observe or configure
   * it, and may reject the handshake by throwing. Async series, cold.
   */
  readonly onUpgrade: AsyncSeries<[request: Request, response: Response, socket: Duplex]>;
  /**
   * What else, beyond scheme, host, port and HTTP version, tells the connections of a call
   * apart (a proxy plugin: the call's proxy policy). Taps return the value (or leave the one
   * they were given, which starts `undefined`); calls whose values differ never share a pooled
   * connection (an object counts by identity, anything else by its string; `undefined` and
   * `null` add nothing), and the value of the call that opens a connection reaches the
   * `connect` taps as `ConnectOptions.poolKey`. Derive it from the call's options
   * (`getCallOptions(ctx)`) and return the same object for the same choice: a new object per
   * call means a new connection per call. An upgrade handshake (`upgradeRequest`) runs them
   * too, with its call options, for its connection outside the pool. Sync waterfall, once per
   * call, only when tapped.
   */
  readonly poolKey: SyncWaterfall<[key: unknown, ctx: RequestContext]>;
  /**
   * A new connection is needed: a tap returns a connected byte stream to the origin (a proxy
   * tunnel, a SOCKS socket); nothing → the kernel's own `net`/`tls` connect. For `https:` the
   * kernel runs TLS over what the tap returns unless it is already a `TLSSocket`. Async series
   * bail, once per connection, proxies at `Stage.PROXY`.
   */
  readonly connect: AsyncSeriesBail<[options: ConnectOptions, ctx: RequestContext], Duplex | void>;
  /**
   * The ALPN list for a new TLS connection, most preferred first: taps return the list (h2
   * puts `'h2'` first). Sync waterfall, once per TLS connection, before `connect`.
   */
  readonly alpnProtocols: SyncWaterfall<[protocols: string[], options: ConnectOptions]>;
  /**
   * A connection is up (after TLS): pick its protocol driver. The h2 plugin returns an
   * HTTP/2 session when ALPN said `h2` or h2c prior knowledge was asked; nothing → the
   * kernel's HTTP/1.1 driver. Sync bail, once per connection.
   */
  readonly session: SyncBail<[socket: Duplex, info: SessionInfo], ClientSession | void>;
}

/** Server hooks, in the order a connection and its requests meet them. */
export interface ServerHooks {
  /**
   * A TCP connection was accepted (before TLS on a TLS listener): per-socket setup, limits.
   * Sync, once per connection.
   */
  readonly connection: Sync<[socket: Socket, server: ServerInfo]>;
  /**
   * The server's ALPN list, most preferred first: taps return the list (h2 adds `'h2'`).
   * Sync waterfall, cold: once per TLS listener.
   */
  readonly alpnProtocols: SyncWaterfall<[protocols: string[], server: ServerInfo]>;
  /**
   * Before the HTTP/1 loop starts on a connection: on TLS after the handshake with its ALPN
   * result, on plain TCP with the first bytes when a tap declared the `preface` its protocol
   * opens with ({@link ProtocolTapOptions}). A tap returning `true` has taken the connection
   * (h2 by ALPN, h2c prior knowledge) and owns `info.head`. Sync so the handover happens
   * without a tick; nothing → HTTP/1.1. Sync bail, once per connection; untapped, or with no
   * preface declared, the kernel reads nothing ahead (a plain connection opening with the h2
   * preface then gets 400 from HTTP/1).
   */
  readonly protocol: Tapable.SyncBailHook<[socket: Duplex, info: ProtocolInfo], true | void, ProtocolTapOptions>;
  /**
   * A request carrying `Connection: upgrade` and `Upgrade` arrived, before `onRequest`.
   * A tap returning `true` took the socket (WebSockets, `Upgrade: h2c`); `info.head` holds the
   * bytes read past the request head, `info.server` and `info.host` are its server. Unclaimed, the request goes on as an ordinary request
   * (`onRequest`, then the handler), which RFC 9110 §7.8 allows; the handler may still
   * upgrade it or answer (426). A claiming tap does its own authorization, as with
   * node:http's `'upgrade'` event. Async series bail, cold.
   */
  readonly onUpgrade: AsyncSeriesBail<[request: Request, socket: Duplex, info: UpgradeInfo], true | void>;
  /**
   * A request head arrived (router dispatch, access-log start). Returning a `Response`
   * answers the request without calling the handler and skips later taps. Async series
   * bail, hot, stage order (access log at `FIRST`, router at `ROUTER`).
   */
  readonly onRequest: Tapable.AsyncSeriesBailHook<[request: Request, exchange: ServerExchange], Response | void, RequestTapOptions>;
  /**
   * A response head is about to be written; its status and headers may still change.
   * Sync, hot.
   */
  readonly onResponseHead: Sync<[response: Response, request: Request]>;
}

/** The kernel's whole hook table: `kernel.hooks`. */
export interface KernelHooks {
  /** Hooks of clients made by this kernel. */
  readonly client: ClientHooks;
  /** Hooks of servers made by this kernel. */
  readonly server: ServerHooks;
}

/** A hook table with each hook replaced by `null` when it has no taps. */
export type Tapped<T> = { readonly [K in keyof T]: T[K] | null };

/** `kernel.tapped`: the table callers on the request path use; resolved once, at `ready()`. */
export interface TappedHooks {
  /** Client hooks, `null` where untapped. */
  readonly client: Tapped<ClientHooks>;
  /** Server hooks, `null` where untapped. */
  readonly server: Tapped<ServerHooks>;
}

/** Where a tap's error came from; see {@link tapErrorInfo}. */
export interface TapErrorInfo {
  /** The hook, such as `client.onRequest`. */
  readonly hook: string;
  /** The tap's name, by convention its plugin's name. */
  readonly tap: string;
}

/**
 * The hook and tap an error was thrown (or rejected) from, or `undefined` when it did not
 * come out of a tap. The kernel attaches these as non-enumerable `hook` and `tap`
 * properties, leaving the error's class, message and equality untouched.
 */
export function tapErrorInfo(err: unknown): TapErrorInfo | undefined {
  if ((typeof err !== 'object' || err === null) && typeof err !== 'function') return undefined;
  const e = err as { hook?: unknown; tap?: unknown };
  if (!Object.hasOwn(e, 'tap') || typeof e.tap !== 'string' || typeof e.hook !== 'string') return undefined;
  return { hook: e.hook, tap: e.tap };
}

// ---------------------------------------------------------------------------------------
// Construction, guards and resolution (kernel-internal).

/** @internal A freshly built hook table and the switch that closes it. */
export interface HookTable {
  /** The frozen table, `kernel.hooks`. */
  readonly hooks: KernelHooks;
  /** Closes the table: later `tap`/`tapAsync`/`tapPromise`/`intercept` throw. */
  close(): void;
}

/** @internal Builds the hook table of one kernel; every hook is declared here and nowhere else. */
export function createHookTable(): HookTable {
  const client: ClientHooks = Object.freeze({
    onRequest: new AsyncSeriesBailHook<[Request, RequestContext], Response | void>(['request', 'ctx'], 'client.onRequest'),
    onResponseHead: new AsyncSeriesBailHook<[Response, RequestContext], Request | void>(['response', 'ctx'], 'client.onResponseHead'),
    onRetry: new AsyncSeriesBailHook<[RetryState, RequestContext], RetryDecision | void>(['state', 'ctx'], 'client.onRetry'),
    onUpgrade: new AsyncSeriesHook<[Request, Response, Duplex]>(['request', 'response', 'socket'], 'client.onUpgrade'),
    poolKey: new SyncWaterfallHook<[unknown, RequestContext]>(['key', 'ctx'], 'client.poolKey'),
    connect: new AsyncSeriesBailHook<[ConnectOptions, RequestContext], Duplex | void>(['options', 'ctx'], 'client.connect'),
    alpnProtocols: new SyncWaterfallHook<[string[], ConnectOptions]>(['protocols', 'options'], 'client.alpnProtocols'),
    session: new SyncBailHook<[Duplex, SessionInfo], ClientSession | void>(['socket', 'info'], 'client.session'),
  });
  const server: ServerHooks = Object.freeze({
    connection: new SyncHook<[Socket, ServerInfo]>(['socket', 'server'], 'server.connection'),
    alpnProtocols: new SyncWaterfallHook<[string[], ServerInfo]>(['protocols', 'server'], 'server.alpnProtocols'),
    protocol: new SyncBailHook<[Duplex, ProtocolInfo], true | void, ProtocolTapOptions>(['socket', 'info'], 'server.protocol'),
    onUpgrade: new AsyncSeriesBailHook<[Request, Duplex, UpgradeInfo], true | void>(['request', 'socket', 'info'], 'server.onUpgrade'),
    onRequest: new AsyncSeriesBailHook<[Request, ServerExchange], Response | void, RequestTapOptions>(['request', 'exchange'], 'server.onRequest'),
    onResponseHead: new SyncHook<[Response, Request]>(['response', 'request'], 'server.onResponseHead'),
  });
  const state = { closed: false };
  for (const table of [client, server]) {
    for (const hook of Object.values(table) as RawHook[]) guard(hook, state, hook === (server.protocol as unknown) ? PROTOCOL_TAP : hook === (server.onRequest as unknown) ? REQUEST_TAP : TAP);
  }
  return {
    hooks: Object.freeze({ client, server }),
    close() {
      state.closed = true;
    },
  };
}

/** @internal Resolves each hook to itself when it has taps, else `null` (counts taps, not `isUsed()`, which interceptors make true). */
export function resolveTapped(hooks: KernelHooks): TappedHooks {
  return Object.freeze({ client: resolveTable(hooks.client), server: resolveTable(hooks.server) });
}

function resolveTable<T extends object>(table: T): Tapped<T> {
  const out: Record<string, unknown> = {};
  for (const [key, hook] of Object.entries(table) as [string, RawHook][]) {
    out[key] = hook.taps.length > 0 ? hook : null;
  }
  return Object.freeze(out) as Tapped<T>;
}

/**
 * The taps tapable keeps on `hook` (each with the options it was made with, its `type` and
 * `fn`), or null when an interceptor watches the hook: an interceptor expects every call to go
 * through the hook, so callers that bypass it must not.
 */
function unwatchedTaps<T>(hook: object): readonly T[] | null {
  const raw = hook as { taps: readonly T[]; interceptors: readonly unknown[] };
  return raw.interceptors.length > 0 ? null : raw.taps;
}

/**
 * @internal An async bail hook's taps as one plain function when every tap was made with `tap`
 * (synchronous) and no interceptor watches the hook, else `null`: it returns the first result
 * other than `undefined`, or throws what a tap threw, as the hook's `promise()` would resolve or
 * reject, without a promise per call. Resolved after `ready()` (the taps cannot change then).
 */
export function syncBail<A, B, R>(hook: AsyncSeriesBail<[A, B], R> | null): ((a: A, b: B) => R | undefined) | null {
  if (hook === null) return null;
  const taps = unwatchedTaps<{ type: string; fn: (a: A, b: B) => R | undefined }>(hook);
  if (taps === null || taps.some((t) => t.type !== 'sync')) return null;
  const fns = taps.map((t) => t.fn);
  if (fns.length === 1) return fns[0]!;
  return (a, b) => {
    for (let i = 0; i < fns.length; i++) {
      const r = fns[i]!(a, b);
      if (r !== undefined) return r;
    }
    return undefined;
  };
}

// The slice of tapable's Hook the guard touches. `_args` is tapable's own copy of the
// argument names (it sizes the compiled callers); the guard reads its length once.
// eslint-disable-next-line @typescript-eslint/no-explicit-any -- tapable's taps are untyped functions of any arity
type AnyFn = (...args: any[]) => any;
type TapArg = string | { name?: unknown; stage?: unknown; before?: unknown };
interface RawHook {
  name: string | undefined;
  taps: { name: string }[];
  _args?: readonly string[];
  call?: unknown;
  tap(options: TapArg, fn: AnyFn): void;
  tapAsync(options: TapArg, fn: AnyFn): void;
  tapPromise(options: TapArg, fn: AnyFn): void;
  intercept(interceptor: object): void;
}

/**
 * What a hook's tap options may hold: tapable's `name`, `stage` and `before`, and on some hooks
 * more (`preface` of `server.protocol`) with a check that returns the options tapable stores;
 * boot-time only.
 */
interface TapOptionRules {
  readonly keys: ReadonlySet<string>;
  readonly check?: (path: string, name: string, options: TapArg) => TapArg;
}

const TAP: TapOptionRules = { keys: new Set(['name', 'stage', 'before']) };

/** A `server.protocol` tap's `preface`: a copy is kept, so the caller's array may change later. */
function checkPreface(path: string, name: string, options: TapArg): TapArg {
  if (typeof options !== 'object' || options === null) return options;
  const p = (options as ProtocolTapOptions).preface;
  if (p === undefined) return options;
  if (!(p instanceof Uint8Array) || p.length === 0 || p.length > MAX_PREFACE_BYTES) {
    const got = p instanceof Uint8Array ? `${p.length} bytes` : p === null ? 'null' : typeof p;
    throw new ArgumentError(`${path}.tap('${name}'): preface must be a Uint8Array of 1 to ${MAX_PREFACE_BYTES} bytes, the bytes a connection of the tap's protocol opens with, got ${got}`);
  }
  return { ...options, preface: Uint8Array.from(p) } as TapArg;
}

const PROTOCOL_TAP: TapOptionRules = { keys: new Set([...TAP.keys, 'preface']), check: checkPreface };

/** A `server.onRequest` tap's `active`: a function, asked per request. */
function checkActive(path: string, name: string, options: TapArg): TapArg {
  if (typeof options !== 'object' || options === null) return options;
  const f = (options as RequestTapOptions).active;
  if (f !== undefined && typeof f !== 'function') {
    throw new ArgumentError(`${path}.tap('${name}'): active must be a function that says whether the tap has anything to do now, got ${f === null ? 'null' : typeof f}`);
  }
  return options;
}

const REQUEST_TAP: TapOptionRules = { keys: new Set([...TAP.keys, 'active']), check: checkActive };

/**
 * @internal For `server.onRequest`: a function that is true while every tap says it has
 * nothing to do ({@link RequestTapOptions.active}), or null when some tap always acts (or an
 * interceptor watches the hook, which expects every call).
 */
export function tapsIdle(hook: ServerHooks['onRequest'] | null): (() => boolean) | null {
  if (hook === null) return null;
  const taps = unwatchedTaps<{ active?: () => boolean }>(hook);
  if (taps === null) return null;
  const gates: (() => boolean)[] = [];
  for (const t of taps) {
    if (typeof t.active !== 'function') return null;
    gates.push(t.active);
  }
  if (gates.length === 1) {
    const g = gates[0]!;
    return () => !g();
  }
  return () => {
    for (const g of gates) if (g()) return false;
    return true;
  };
}

/**
 * Replaces the hook's tap methods (own properties on every tapable hook) with checking,
 * wrapping versions. Calls (`call`, `callAsync`, `promise`) are untouched: zero per-call cost.
 */
function guard(hook: RawHook, state: { readonly closed: boolean }, rules: TapOptionRules): void {
  const path = hook.name ?? '(hook)';
  const arity = hook._args?.length;
  if (arity === undefined || arity < 1 || arity > 3) {
    // A tapable upgrade that moved `_args` must fail at createKernel(), not misroute callbacks.
    throw new Error(`internal: cannot read the arity of hook ${path}`);
  }
  const { tap, tapAsync, tapPromise, intercept } = hook;
  hook.tap = (options, fn) => {
    const name = checkTap(path, 'tap', options, fn, state, rules.keys);
    tap.call(hook, rules.check !== undefined ? rules.check(path, name, options) : options, wrapSync(fn, arity, path, name));
  };
  // Sync hooks keep tapable's throwing tapAsync/tapPromise stubs ("not supported on a SyncHook").
  if (typeof hook.call !== 'function') {
    hook.tapAsync = (options, fn) => {
      const name = checkTap(path, 'tapAsync', options, fn, state, rules.keys);
      tapAsync.call(hook, rules.check !== undefined ? rules.check(path, name, options) : options, wrapCallback(fn, arity, path, name));
    };
    hook.tapPromise = (options, fn) => {
      const name = checkTap(path, 'tapPromise', options, fn, state, rules.keys);
      tapPromise.call(hook, rules.check !== undefined ? rules.check(path, name, options) : options, wrapPromise(fn, arity, path, name));
    };
  }
  hook.intercept = (interceptor) => {
    if (state.closed) {
      const name = typeof (interceptor as { name?: unknown })?.name === 'string' ? (interceptor as { name: string }).name : '(interceptor)';
      throw new PluginError('SWY_ERR_KERNEL_STARTED', name, `cannot intercept ${path} as "${name}": the kernel is started and its hook table is closed; intercept inside a plugin's register()`);
    }
    intercept.call(hook, interceptor);
  };
}

/** Validates a tap before tapable sees it; returns the tap's name. Boot-time only. */
function checkTap(path: string, method: string, options: TapArg, fn: unknown, state: { readonly closed: boolean }, keys: ReadonlySet<string>): string {
  const raw = typeof options === 'string' ? options : typeof options === 'object' && options !== null ? options.name : undefined;
  const name = typeof raw === 'string' ? raw.trim() : '';
  if (state.closed) {
    const who = name || '(unnamed tap)';
    throw new PluginError(
      'SWY_ERR_KERNEL_STARTED',
      who,
      `cannot tap ${path} as "${who}": the kernel is started (ready() resolved) and its hook table is closed; tap hooks inside a plugin's register()`,
    );
  }
  if (name === '') {
    throw new ArgumentError(`${path}.${method}() needs a tap name (the plugin's name): ${path}.${method}('my-plugin', fn) or ${method}({ name: 'my-plugin', stage }, fn)`);
  }
  if (typeof fn !== 'function') {
    throw new ArgumentError(`${path}.${method}('${name}', fn): fn must be a function, got ${fn === null ? 'null' : typeof fn}`);
  }
  // A misspelt option (`prefce`, `stag`) would otherwise be dropped without a word.
  if (typeof options === 'object' && options !== null) checkOptionKeys(options, keys, () => `${path}.${method}('${name}')`);
  if (typeof options === 'object' && options !== null && options.stage !== undefined && !Number.isFinite(options.stage)) {
    throw new ArgumentError(`${path}.${method}('${name}'): stage must be a finite number (use the Stage constants), got ${String(options.stage)}`);
  }
  return name;
}

/** Marks `err` with where it came from (first mark wins: the innermost tap); wraps non-objects. */
function attach(err: unknown, hook: string, tap: string): unknown {
  if ((typeof err === 'object' && err !== null) || typeof err === 'function') {
    if (!Object.hasOwn(err, 'tap')) {
      try {
        // Non-enumerable: messages, `toEqual` and logs of the error stay as thrown.
        Object.defineProperty(err, 'tap', { value: tap, configurable: true, writable: true, enumerable: false });
        Object.defineProperty(err, 'hook', { value: hook, configurable: true, writable: true, enumerable: false });
      } catch {
        // A frozen error keeps its identity; attribution is best effort.
      }
    }
    return err;
  }
  const wrapped = new PluginError('SWY_ERR_PLUGIN_TAP', tap, `tap "${tap}" on ${hook} threw a non-Error value: ${String(err)}`, { cause: err });
  return attach(wrapped, hook, tap);
}

// One wrapper per arity instead of rest parameters: no arguments array per call, and the
// function stays small enough for V8 to inline into tapable's compiled caller.
function wrapSync(fn: AnyFn, arity: number, hook: string, tap: string): AnyFn {
  switch (arity) {
    case 1:
      return function (a: unknown) {
        try {
          return fn(a);
        } catch (err) {
          throw attach(err, hook, tap);
        }
      };
    case 2:
      return function (a: unknown, b: unknown) {
        try {
          return fn(a, b);
        } catch (err) {
          throw attach(err, hook, tap);
        }
      };
    default:
      return function (a: unknown, b: unknown, c: unknown) {
        try {
          return fn(a, b, c);
        } catch (err) {
          throw attach(err, hook, tap);
        }
      };
  }
}

// tapAsync taps need their callback wrapped: a closure and an argument array per call, the
// documented price of callback-style taps (prefer `tap` for sync work, `tapPromise` for async).
function wrapCallback(fn: AnyFn, arity: number, hook: string, tap: string): AnyFn {
  const run = (args: unknown[], cb: AnyFn): void => {
    let called = false;
    const next = (err?: unknown, result?: unknown): void => {
      // The first answer counts: a tap that threw and calls back later does not run `cb` twice.
      if (called) return;
      called = true;
      if (err) cb(attach(err, hook, tap));
      else cb(err, result);
    };
    try {
      fn(...args, next);
    } catch (err) {
      // A synchronous throw joins the callback channel, unless the tap already answered.
      if (called) throw attach(err, hook, tap);
      called = true;
      cb(attach(err, hook, tap));
    }
  };
  switch (arity) {
    case 1:
      return (a: unknown, cb: AnyFn) => run([a], cb);
    case 2:
      return (a: unknown, b: unknown, cb: AnyFn) => run([a, b], cb);
    default:
      return (a: unknown, b: unknown, c: unknown, cb: AnyFn) => run([a, b, c], cb);
  }
}

// tapPromise taps pay one extra `.then` per call for attribution; the rejection handler is
// built once per tap, not per call.
function wrapPromise(fn: AnyFn, arity: number, hook: string, tap: string): AnyFn {
  const onRejected = (err: unknown): never => {
    throw attach(err, hook, tap);
  };
  const settle = (p: unknown): unknown =>
    // Not a thenable: hand it to tapable unchanged so its own "did not return promise" error fires.
    p !== null && typeof p === 'object' && typeof (p as PromiseLike<unknown>).then === 'function' ? (p as Promise<unknown>).then(undefined, onRejected) : p;
  switch (arity) {
    case 1:
      return function (a: unknown) {
        let p: unknown;
        try {
          p = fn(a);
        } catch (err) {
          return Promise.reject(attach(err, hook, tap));
        }
        return settle(p);
      };
    case 2:
      return function (a: unknown, b: unknown) {
        let p: unknown;
        try {
          p = fn(a, b);
        } catch (err) {
          return Promise.reject(attach(err, hook, tap));
        }
        return settle(p);
      };
    default:
      return function (a: unknown, b: unknown, c: unknown) {
        let p: unknown;
        try {
          p = fn(a, b, c);
        } catch (err) {
          return Promise.reject(attach(err, hook, tap));
        }
        return settle(p);
      };
  }
}
