/**
 * Client: a reusable bundle of transport, defaults and a kernel's client hooks. Runs one call
 * as a loop of attempts: `onRequest` taps, a pooled connection, the exchange, `onResponseHead`
 * taps (which may send a redirect hop instead), `onRetry` taps; then buffers the body.
 */
import { Buffer } from 'node:buffer';
import { performance } from 'node:perf_hooks';
import { ArgumentError } from '../errors.js';
import { describe } from '../describe.js';
import { urlHint } from '../message/uri.js';
import { syncBail, type ClientHooks, type RetryDecision, type RetryState, type Tapped } from '../hooks.js';
import type { HookHost } from '../hook-host.js';
import { AbstractBody, bodyLength, type Body } from '../message/body.js';
import type { RequestContext } from '../message/context.js';
import { Headers, headersFromArrays, type HeadersInit } from '../message/headers.js';
import { Request, requestFromWire } from '../message/request.js';
import type { Response } from '../message/response.js';
import { Call, maxResponseBytes, setAttempt } from './call.js';
import { kHoldConnection, kStale, type ExchangeOptions } from './h1-session.js';
import { Headers as HeadersClass } from '../message/headers.js';
import {
  checkCallOptions,
  DEFAULT_RESPONSE_HEADER_TIMEOUT,
  checkCallOptionNames,
  checkHttpVersion,
  KERNEL_CALL_OPTIONS,
  type CallOptions,
  type VerbHeaders,
  type QueryInit,
  type RequestBody,
  type TimeoutOptions,
} from './options.js';
import { ClientStream, opensBody, PushBody } from './open.js';
import { fetchOn, type FetchInit, type FetchInput, type StreamedCall } from './fetch.js';
import { abandonSink } from './response-sink.js';
import { appendQuery, isIdempotent, isReplayable, jsonBody, queryPairs, stopUpload, toMessageBody } from './request-body.js';
import { RedirectEvent, RequestEvent, ResponseHeadEvent, RetryEvent, RetrySkippedEvent } from './trace.js';
import { Transport, type Origin, type TransportOptions } from './transport.js';
import { channels, clientObserved } from '../diagnostics.js';
import { connectionInfo, originString, watchResponseEnd } from './diagnostics.js';

/**
 * Call options a {@link Client} takes as defaults for every call: all but the ones that only
 * make sense per call.
 */
export type ClientCallDefaults = Omit<CallOptions, 'headers' | 'body' | 'json' | 'query' | 'context' | 'signal' | 'responseStream' | 'basicauth' | 'client'>;

/** Options of {@link Client}. Call options (and plugin keys: `cookiejar`, `retryBucket`, …) are defaults for every call. */
export interface ClientOptions extends TimeoutOptions, ClientCallDefaults, Omit<TransportOptions, 'idleTimeout'> {
  /**
   * A booted (or bootable) kernel whose client hooks this client runs. None: the default
   * kernel (`presets.defaults`, booted at the first call) when the top-level `switchyard`
   * entry is loaded; a program that imports only `switchyard/kernel` gets no plugins.
   */
  kernel?: HookHost;
  /**
   * The connection pool; a new one by default (made from the transport options here). With a
   * transport, the options that shape its connections (`maxIdlePerHost`, `maxIdleTotal`,
   * `tlsConfig`, `localAddr`) belong on it and are an `ArgumentError` here; `preferHttp2`,
   * `maxLineBytes`, `maxHeaderBytes` and plugins' call options given here apply to this
   * client's requests, over the transport's (`callDefaults`).
   */
  transport?: Transport;
  /** Headers added to every call unless the call sets them. */
  defaultHeaders?: HeadersInit;
  /** Query parameters added to every call; a call's keys override matching ones. */
  defaultQuery?: QueryInit;
  /** Basic auth for calls that pass neither `basicauth` nor an Authorization header. */
  defaultBasicauth?: readonly [string, string];
  // Plugins add their options (defaults for every call) by declaration merging, as
  // plugins/options.ts does: no index signature, so a misspelt option is a type error.
}

/** Call options that only make sense per call, so a `Client` does not take them. */
const PER_CALL_ONLY = new Set(['headers', 'body', 'json', 'query', 'context', 'signal', 'responseStream', 'basicauth', 'client']);
/** The names `new Client()` reads itself (plugins' options are checked through their plugins). */
const CLIENT_OPTIONS: ReadonlySet<string> = new Set([
  ...[...KERNEL_CALL_OPTIONS].filter((k) => !PER_CALL_ONLY.has(k)),
  'kernel',
  'transport',
  'defaultHeaders',
  'defaultQuery',
  'defaultBasicauth',
  'maxIdlePerHost',
  'maxIdleTotal',
  'tlsConfig',
  'localAddr',
  'preferHttp2',
]);
const CLIENT_HEADERS_HINT = 'headers for every call go in { defaultHeaders: { … } }';

let defaultKernel: (() => HookHost) | null = null;

/**
 * Sets the kernel a `Client` made without one runs on (the top-level entry sets its lazily
 * booted default kernel; a plugin-free program that imports only the kernel sets none).
 */
export function setDefaultClientKernel(get: (() => HookHost) | null): void {
  defaultKernel = get;
}

/**
 * Marks an error of an exchange the server provably did not process (HTTP/2: refused stream,
 * or a stream past a GOAWAY's last stream id): the client sends the request again on another
 * connection, whatever its method, when the body can be replayed (RFC 9113 §8.7).
 */
export const kUnprocessed: unique symbol = Symbol.for('switchyard.unprocessed') as never;
/**
 * Marks exchange options of a call that will buffer the whole response body at once and has no
 * hook to show the head to first (or whose hooks the session runs itself: {@link kHeadGate});
 * its value is the call's bound on that body in bytes
 * (`maxResponseBytes`; Infinity: none). A protocol session may then resolve `dispatch` with
 * the body complete (bytes, or a `FlowBody` that holds all of it), saving the caller a second
 * wait; one that gathers the bytes itself refuses a declared length past the bound at the head
 * and stops at the bound, failing with `ResponseTooLargeError(bound, received, declared)` as the
 * client's own buffering does. Sessions that ignore it behave as usual. A registry symbol, so a
 * plugin can read it by its key (`Symbol.for('switchyard.bufferBody')`).
 */
export const kBufferBody: unique symbol = Symbol.for('switchyard.bufferBody') as never;
/**
 * Marks exchange options of a buffered call (they carry {@link kBufferBody} too) whose client
 * has synchronous `onResponseHead` or `onRetry` taps, given only to a session that declares
 * {@link ClientSession.headGate}. Its value, `(response, ctx) => boolean`, runs those taps:
 * the session calls it once, as soon as the head arrives and before any of the body is
 * delivered, with the response as it would resolve `dispatch` with it (the body streamed).
 * True: the taps had nothing to do and left the body as it was, so the session may gather it
 * as under {@link kBufferBody} (checking the bound then) and resolve with it complete. False:
 * the session resolves with that response now, as without either mark. It never throws.
 */
export const kHeadGate: unique symbol = Symbol.for('switchyard.headGate') as never;
/** How many times one attempt is resent after {@link kUnprocessed} failures (Go's http2 transport retries a few times too). */
const MAX_UNPROCESSED_RETRIES = 3;
const USER_AGENT = 'switchyard/0.1';

/** A reusable HTTP client. */
export class Client {
  /** The connection pool. */
  readonly transport: Transport;
  private readonly kernel: HookHost | null;
  private hooks: Tapped<ClientHooks> | null = null;
  private readonly defaults: CallOptions;
  private readonly defaultHeaders: Headers | null;
  private readonly defaultQuery: [string, string][];
  private readonly defaultBasicauth: readonly [string, string] | null;
  private readonly ownsTransport: boolean;
  private isOpenFlag = true;
  /** Exchange and acquire options of calls that pass no options (made on the first such call). */
  private defaultPlan: CallPlan | null = null;
  /**
   * The plan of the last call that passed options of its own: the next such call with the same
   * plan-relevant values (the usual case, one options object passed to every call) reuses it.
   */
  private lastPlan: CallPlan | null = null;
  /**
   * True when every client hook that acts per attempt is untapped or has only synchronous taps
   * (known once the kernel is ready): calls take {@link Client.requestPlain}, or
   * {@link Client.requestTapped} when some of those hooks are tapped.
   */
  private plain: boolean;
  /** Some hook that acts per attempt (`onRequest`, `onResponseHead`, `onRetry`) is tapped. */
  private attemptTaps = false;
  /** The synchronous taps of `onRequest` as one function (see {@link syncBail}), or null. */
  private onRequestSync: ((req: Request, ctx: RequestContext) => Response | void | undefined) | null = null;
  /** The synchronous taps of `onResponseHead` as one function, or null. */
  private onResponseHeadSync: ((res: Response, ctx: RequestContext) => Request | void | undefined) | null = null;
  /** The synchronous taps of `onRetry` as one function, or null. */
  private onRetrySync: ((state: RetryState, ctx: RequestContext) => RetryDecision | void | undefined) | null = null;
  /** The kernel was found to speak HTTP/2 on plain connections (it cannot change once booted): no need to ask again. */
  private speaksH2c = false;
  /** Negotiate HTTP/2 on secure connections: the client's `preferHttp2`, else its transport's. */
  readonly preferHttp2: boolean;

  /**
   * A client. Its plugins are `kernel`'s; without one, the default kernel's (every plugin of
   * `presets.defaults`, booted at the first call) when the top-level `switchyard` entry is
   * loaded, else none. Options are checked here: an unknown name, a bad value, or a plugin's
   * option the kernel does not have is an `ArgumentError`.
   */
  constructor(options: ClientOptions = {}) {
    if (typeof options !== 'object' || options === null) throw new ArgumentError('Client options must be an object');
    const {
      kernel: given,
      transport,
      defaultHeaders,
      defaultQuery,
      defaultBasicauth,
      maxIdlePerHost,
      maxIdleTotal,
      tlsConfig,
      localAddr,
      maxLineBytes,
      maxHeaderBytes,
      preferHttp2,
      ...rest
    } = options;
    if (given !== undefined && (typeof given !== 'object' || given === null || !('hooks' in given))) throw new ArgumentError('kernel must be a Kernel from createKernel()');
    if (transport !== undefined && !(transport instanceof Transport)) throw new ArgumentError('transport must be a Transport');
    const kernel = given ?? defaultKernel?.() ?? null;
    this.kernel = kernel;
    this.plain = this.kernel === null;
    if (this.kernel !== null && this.kernel.state === 'ready') this.setHooks(this.kernel.tapped.client);
    this.ownsTransport = transport === undefined;
    if (transport !== undefined) refuseConnectionOptions({ maxIdlePerHost, maxIdleTotal, tlsConfig, localAddr });
    // Names first: a misspelt option is named before any of its neighbours' values is judged.
    checkCallOptionNames(rest, 'new Client()', kernel, CLIENT_OPTIONS, CLIENT_HEADERS_HINT);
    this.transport = transport ?? new Transport({ maxIdlePerHost, maxIdleTotal, tlsConfig, localAddr, maxLineBytes, maxHeaderBytes, preferHttp2 });
    if (preferHttp2 !== undefined && typeof preferHttp2 !== 'boolean') throw new ArgumentError('preferHttp2 must be a boolean');
    // The client's own choice wins over the transport's default, per request (see planOf).
    this.preferHttp2 = preferHttp2 ?? this.transport.preferHttp2;
    this.defaultHeaders = defaultHeaders === undefined ? null : new Headers(defaultHeaders);
    this.defaultQuery = queryPairs(defaultQuery);
    if (defaultBasicauth !== undefined && (!Array.isArray(defaultBasicauth) || defaultBasicauth.length !== 2)) throw new ArgumentError('defaultBasicauth must be [user, password]');
    this.defaultBasicauth = defaultBasicauth ?? null;
    // Head limits are call options too: the client's apply to each of its requests, over
    // whatever transport. The plugins' call options a shared Transport carries count as the
    // client's (the plugins read them from the call options); the client's own value wins,
    // `null` too.
    const own: CallOptions = { connectTimeout: 30_000 };
    const carried = this.transport.callDefaults;
    const mine = rest as Record<string, unknown>;
    for (const key in carried) {
      if (mine[key] !== undefined) continue;
      // Given as undefined: the transport's value stands.
      delete mine[key];
      checkCallOptionNames({ [key]: carried[key] }, 'new Client() (its transport)', kernel, CLIENT_OPTIONS);
      (own as Record<string, unknown>)[key] = carried[key];
    }
    if (maxLineBytes !== undefined) own.maxLineBytes = maxLineBytes;
    if (maxHeaderBytes !== undefined) own.maxHeaderBytes = maxHeaderBytes;
    checkCallOptions({ ...own, ...rest } as CallOptions, 'new Client()', kernel, CLIENT_OPTIONS);
    this.defaults = Object.freeze({ ...own, ...rest }) as CallOptions;
  }

  /**
   * Checks call options as a call of this client would (names, values, and the plugins its
   * kernel has), throwing the `ArgumentError` the call would reject with; `where` starts the
   * message; `own` are further names the helper reads itself (valid, and offered as near misses).
   * For helpers that take call options and send later (`sseConnect`).
   */
  checkOptions(options: object, where: string, own: readonly string[] = []): void {
    checkCallOptions(options as CallOptions, where, this.kernel, own.length === 0 ? KERNEL_CALL_OPTIONS : new Set([...KERNEL_CALL_OPTIONS, ...own]));
  }

  /** False after {@link Client.close}. */
  get isOpen(): boolean {
    return this.isOpenFlag;
  }

  /** Closes the client (and its own transport's idle connections); later calls throw `ArgumentError`. */
  close(): void {
    this.isOpenFlag = false;
    if (this.ownsTransport) this.transport.close();
  }

  private check(): void {
    if (!this.isOpenFlag) throw new ArgumentError('this client is closed: make a new Client');
  }

  /** Sends `method url` and resolves to the response with its body buffered (see {@link CallOptions}). */
  request(method: string, url: string | URL, options: CallOptions = NO_OPTIONS): Promise<Response> {
    // Not async itself: the common call ({@link Client.requestPlain}) then runs without an async
    // frame (a suspended one keeps all its locals: garbage per request). Input errors still reject.
    let call: Call;
    try {
      this.check();
      if (options !== NO_OPTIONS) checkCallOptions(options, () => `request(${JSON.stringify(method)}, …)`, this.kernel);
      const o = this.merge(options);
      call = new Call(o);
      call.begin(this.buildRequest(method, url, o, call), o.context);
    } catch (err) {
      return Promise.reject(err);
    }
    // A call someone observes (trace, diagnostics channels) takes the attempt loop, which reports each step.
    const p = call.trace === null && this.plain && !clientObserved() ? (this.attemptTaps ? this.requestTapped(call) : this.requestPlain(call)) : this.traced(call, this.requestFull);
    const sink = call.options.responseStream;
    // A call that fails before or while writing the body does not leave the sink open (see writeToSink).
    return sink === undefined ? p : p.catch((err: unknown) => abandonSink(sink, err));
  }

  /**
   * A call with no client hooks that act per attempt (`onRequest`, `onResponseHead`, `onRetry`)
   * and no trace, on a pooled session with room: one exchange, buffered, finished in one
   * `then` (no async frame: a suspended one keeps every local, and this path runs per request).
   * No pooled session, or an error the attempt loop would retry (a stale pooled connection, a
   * stream the server did not process), hands the call to {@link Client.requestFull}.
   */
  private requestPlain(call: Call): Promise<Response> {
    let p: Promise<Response>;
    try {
      const ctx = call.ctx;
      const err0 = ctx.error();
      if (err0 !== null) throw err0;
      const o = call.options;
      const plan = this.planFor(o);
      const session = this.transport.acquireIdle(call.origin ?? originOf(call.request.url), plan.acquire, routeOf(this.hooks, ctx));
      if (session === null) return this.requestFull(call);
      setAttempt(ctx, 1);
      p = session.dispatch(call.request, ctx, o.responseStream === undefined ? plan.buffered : plan.timeouts);
    } catch (err) {
      try {
        call.fail(err);
      } catch (e) {
        return Promise.reject(e);
      }
    }
    return call.settle(p, this.retryPlain);
  }

  /** A plain call's exchange failed: the attempt loop sends it again when it would retry that error, else the call ends with it. */
  private readonly retryPlain = (call: Call, err: unknown): Promise<Response> => {
    const retry = retryMark(err, call.request);
    if (retry === 0) return call.fail(err);
    return this.run(call, retry).then(
      (res) => call.complete(res),
      (e: unknown) => call.fail(e),
    );
  };

  /**
   * {@link Client.requestPlain} for a kernel whose per-attempt hooks have synchronous taps only:
   * they run as plain calls (no promise, no async frame) in the order and with the arguments the
   * attempt loop gives them. While every tap has nothing to do (returns nothing) the call ends
   * here; a tap's answer, a redirect hop, a retry decision, an error, or no pooled session with
   * room hands the call to {@link Client.run} at that point, so nothing runs twice.
   */
  private requestTapped(call: Call): Promise<Response> {
    const ctx = call.ctx;
    const req = call.request;
    const url = req.url;
    let plan: CallPlan;
    let route: unknown;
    try {
      plan = this.planFor(call.options);
      route = routeOf(this.hooks, ctx);
    } catch (err) {
      return rejectCall(call, err);
    }
    setAttempt(ctx, 1);
    let p: Promise<Response>;
    try {
      const onRequest = this.onRequestSync;
      if (onRequest !== null) {
        const r = onRequest(req, ctx);
        if (r !== undefined) return this.resume(call, AT_REQUESTED, r, null);
      }
      const err0 = ctx.error();
      if (err0 !== null) throw err0;
      const acquire = plan.acquire;
      const origin = req.url === url && call.origin !== null ? call.origin : originOf(req.url);
      // The attempt loop checks that the kernel speaks h2c before it asks for such a session.
      if (acquire.httpVersion === 'h2' && origin.protocol === 'http:' && !this.speaksH2c) return this.resume(call, AT_REQUESTED, undefined, null);
      const session = this.transport.acquireIdle(origin, acquire, route);
      if (session === null) return this.resume(call, AT_REQUESTED, undefined, null);
      // A tap shown the head sees it before the body is read, as in the attempt loop: in the
      // session (which then gathers the body itself when the taps leave it alone), or here.
      const headTaps = this.onResponseHeadSync !== null || this.onRetrySync !== null;
      if (call.options.responseStream !== undefined) p = session.dispatch(req, ctx, plan.timeouts);
      else if (!headTaps) p = session.dispatch(req, ctx, plan.buffered);
      else if (session.headGate === true) {
        p = session.dispatch(req, ctx, plan.gated);
        return call.settle(p, this.failedTapped, this.headGated);
      } else p = session.dispatch(req, ctx, plan.timeouts);
    } catch (err) {
      return this.resume(call, AT_FAILED, err, null);
    }
    return call.settle(p, this.failedTapped, this.headTapped);
  }

  /**
   * The {@link kHeadGate} of this client's buffered calls: runs the synchronous `onResponseHead`
   * and `onRetry` taps on a first attempt's head inside the session, as {@link Client.headTapped}
   * would after it; what they did, when anything, waits in {@link gateOutcomes} for
   * {@link Client.headGated}.
   */
  private readonly headGate = (res: Response, ctx: RequestContext): boolean => {
    const body = res.body;
    const req = res.request!;
    res.url = req.url;
    const o = headTaps(this.onResponseHeadSync, this.onRetrySync, res, req, ctx);
    if (o !== null) return held(res, o.at, o.value);
    return res.body === body || held(res, GATE_BODY, undefined);
  };

  /** A gated exchange's response (see {@link kHeadGate}): its taps ran in the session; the call goes on from what they did. */
  private readonly headGated = (call: Call, res: Response): Response | Promise<Response> => {
    const o = gateOutcomes.get(res);
    if (o === undefined || o.at === GATE_BODY) return call.complete(res);
    gateOutcomes.delete(res);
    // A tap's error in onRetry ends the call, as it leaves the attempt loop.
    if (o.at === GATE_THREW) return call.fail(o.value);
    return this.resume(call, o.at, o.value, res);
  };

  /** A {@link Client.requestTapped} exchange failed: the attempt loop takes the error as if it had thrown there. */
  private readonly failedTapped = (call: Call, err: unknown): Promise<Response> => this.resume(call, AT_FAILED, err, null);

  /** A {@link Client.requestTapped} exchange's response head (its URL set): the `onResponseHead` and `onRetry` taps, then the body. */
  private readonly headTapped = (call: Call, res: Response): Response | Promise<Response> => {
    const o = headTaps(this.onResponseHeadSync, this.onRetrySync, res, call.request, call.ctx);
    if (o === null) return call.complete(res);
    // An onRetry tap's error ends the call, as it leaves the attempt loop.
    if (o.at === GATE_THREW) return call.fail(o.value);
    return this.resume(call, o.at, o.value, res);
  };

  /** Hands a {@link Client.requestTapped} call to the attempt loop at `at`, with what its first attempt got so far. */
  private resume(call: Call, at: Resume['at'], value: unknown, response: Response | null): Promise<Response> {
    return this.run(call, 0, false, { at, value, response }).then(
      (res) => call.complete(res),
      (e: unknown) => call.fail(e),
    );
  }

  /** Runs `fn(call)` inside the `client:request` trace when that has subscribers. */
  private traced<T>(call: Call, fn: (this: Client, call: Call) => Promise<T>): Promise<T> {
    const tc = channels.clientRequest;
    if (!tc.hasSubscribers) return fn.call(this, call);
    return tc.tracePromise(fn, { request: call.request, url: call.request.url }, this, call);
  }

  /** The attempt loop of a call whose response stays streamed (`dispatch`, `fetch`). */
  private runCall(call: Call): Promise<Response> {
    return this.run(call);
  }

  /** The attempt loop of `open`, whose stream's reader decides whether its connection is reused. */
  private runHeld(call: Call): Promise<Response> {
    return this.run(call, 0, true);
  }

  private async requestFull(call: Call): Promise<Response> {
    let res: Response;
    try {
      res = await this.run(call);
    } catch (err) {
      return call.fail(err);
    }
    // A body already in memory (or complete) is taken without another promise.
    return call.complete(res);
  }

  /**
   * The reference's `do!`: sends a prepared `Request` (its `url` must be absolute) and resolves
   * to the response with its body streamed (`response.body` is an AbstractBody to read or close).
   */
  async dispatch(request: Request, options: CallOptions = NO_OPTIONS): Promise<Response> {
    this.check();
    if (!(request instanceof Request)) throw new ArgumentError('dispatch(request, options) takes a Request');
    checkCallOptions(options, 'dispatch()', this.kernel);
    const o = this.merge(options);
    if (request.url === '') throw new ArgumentError('dispatch(): request.url must be the absolute URL to send it to');
    if (request.host === null) request.host = new URL(request.url).host;
    const call = new Call(o);
    call.begin(request, options.context ?? request.ctx);
    // The reference's do!: no status exception, and the call ends when its streamed body does.
    let res: Response;
    try {
      res = await this.traced(call, this.runCall);
    } catch (err) {
      call.unlink();
      throw err;
    }
    unlinkOnClose(call, res);
    return res;
  }

  /**
   * @internal A call built as `request` builds one (the client's defaults, the User-Agent, the
   * query) whose response stays streamed as `dispatch`'s does: no status exception, and the
   * call's signal stays linked until the body is closed. Input errors throw here, before
   * anything is sent, so the promise rejects with the exchange's errors only. Resolves to the
   * final response; `redirected` is true when it answers another request than the first (a
   * redirect hop). The client's `fetch` is made of it.
   */
  streamCall(method: string, url: string | URL, options: CallOptions, where: string): Promise<StreamedCall> {
    this.check();
    checkCallOptions(options, where, this.kernel);
    const o = this.merge(options);
    const call = new Call(o);
    const req = this.buildRequest(method, url, o, call);
    call.begin(req, o.context);
    return this.traced(call, this.runCall).then(
      (res) => {
        unlinkOnClose(call, res);
        return { response: res, redirected: res.request !== null && res.request !== req };
      },
      (err: unknown) => {
        call.unlink();
        throw err;
      },
    );
  }

  /** @internal True when this client's kernel has (or will load) the plugin `name`. */
  hasPlugin(name: string): boolean {
    return this.kernel !== null && this.kernel.isRegistered(name);
  }

  /**
   * A streamed exchange: `handler(stream)` writes the request body and reads the response
   * (`startRead` returns the head). Resolves to the final response (its body consumed: null)
   * once the handler returns; `StatusError` as for `request`.
   */
  async open(method: string, url: string | URL, handler: (stream: ClientStream) => unknown, options: CallOptions = NO_OPTIONS): Promise<Response> {
    this.check();
    if (typeof handler !== 'function') throw new ArgumentError('open(method, url, handler, options): handler must be a function');
    checkCallOptions(options, () => `open(${JSON.stringify(method)}, …)`, this.kernel);
    const o = this.merge(options);
    if (o.body !== undefined || o.json !== undefined) throw new ArgumentError(`open() sends the body the handler writes; do not pass ${o.body !== undefined ? 'body' : 'json'}`);
    const call = new Call(o);
    const req = this.buildRequest(method, url, o, call);
    const h = req.headers;
    const cl = h.get('Content-Length');
    const body = opensBody(req.method, h.has('Transfer-Encoding') || cl !== undefined) ? new PushBody() : null;
    if (body !== null) req.setBody(body, cl !== undefined && /^\d+$/.test(cl) ? Number(cl) : -1);
    call.begin(req, o.context);
    const stream = new ClientStream(body, this.traced(call, this.runHeld), call.ctx, maxResponseBytes(o));
    let final: Response | null = null;
    try {
      await handler(stream);
      final = await stream.finish();
      return call.finish(final);
    } catch (err) {
      // Never let a half-written upload end as if it were complete.
      body?.abort(err instanceof Error ? err : new Error(String(err)));
      void stream.closeRead().catch(() => undefined);
      // A StatusError comes from finish(), which ended the call already.
      if (final === null) call.fail(err);
      throw err;
    }
  }

  /**
   * The Fetch standard's `fetch` through this client (its pool, defaults and kernel's plugins):
   * resolves to a global `Response` whose body streams as it arrives. switchyard's call options
   * go in `init.switchyard`. See `docs/fetch.md`.
   */
  fetch(input: FetchInput, init?: FetchInit): Promise<globalThis.Response> {
    return fetchOn(this, input, init);
  }

  /** GET. */
  get(url: string | URL, options?: CallOptions): Promise<Response>;
  get(url: string | URL, headers: VerbHeaders | null, body?: RequestBody, options?: CallOptions): Promise<Response>;
  get(url: string | URL, headers: HeadersInit | null, body: RequestBody | undefined, options?: CallOptions): Promise<Response>;
  get(url: string | URL, a?: unknown, b?: unknown, c?: unknown): Promise<Response> {
    return this.verb('GET', 'get', url, arguments.length, a, b, c);
  }
  /** HEAD. */
  head(url: string | URL, options?: CallOptions): Promise<Response>;
  head(url: string | URL, headers: VerbHeaders | null, body?: RequestBody, options?: CallOptions): Promise<Response>;
  head(url: string | URL, headers: HeadersInit | null, body: RequestBody | undefined, options?: CallOptions): Promise<Response>;
  head(url: string | URL, a?: unknown, b?: unknown, c?: unknown): Promise<Response> {
    return this.verb('HEAD', 'head', url, arguments.length, a, b, c);
  }
  /** QUERY (RFC 10008: a safe, idempotent request with content). */
  query(url: string | URL, options?: CallOptions): Promise<Response>;
  query(url: string | URL, headers: VerbHeaders | null, body?: RequestBody, options?: CallOptions): Promise<Response>;
  query(url: string | URL, headers: HeadersInit | null, body: RequestBody | undefined, options?: CallOptions): Promise<Response>;
  query(url: string | URL, a?: unknown, b?: unknown, c?: unknown): Promise<Response> {
    return this.verb('QUERY', 'query', url, arguments.length, a, b, c);
  }
  /** POST. */
  post(url: string | URL, options?: CallOptions): Promise<Response>;
  post(url: string | URL, headers: VerbHeaders | null, body?: RequestBody, options?: CallOptions): Promise<Response>;
  post(url: string | URL, headers: HeadersInit | null, body: RequestBody | undefined, options?: CallOptions): Promise<Response>;
  post(url: string | URL, a?: unknown, b?: unknown, c?: unknown): Promise<Response> {
    return this.verb('POST', 'post', url, arguments.length, a, b, c);
  }
  /** PUT. */
  put(url: string | URL, options?: CallOptions): Promise<Response>;
  put(url: string | URL, headers: VerbHeaders | null, body?: RequestBody, options?: CallOptions): Promise<Response>;
  put(url: string | URL, headers: HeadersInit | null, body: RequestBody | undefined, options?: CallOptions): Promise<Response>;
  put(url: string | URL, a?: unknown, b?: unknown, c?: unknown): Promise<Response> {
    return this.verb('PUT', 'put', url, arguments.length, a, b, c);
  }
  /** PATCH. */
  patch(url: string | URL, options?: CallOptions): Promise<Response>;
  patch(url: string | URL, headers: VerbHeaders | null, body?: RequestBody, options?: CallOptions): Promise<Response>;
  patch(url: string | URL, headers: HeadersInit | null, body: RequestBody | undefined, options?: CallOptions): Promise<Response>;
  patch(url: string | URL, a?: unknown, b?: unknown, c?: unknown): Promise<Response> {
    return this.verb('PATCH', 'patch', url, arguments.length, a, b, c);
  }
  /** DELETE. */
  delete(url: string | URL, options?: CallOptions): Promise<Response>;
  delete(url: string | URL, headers: VerbHeaders | null, body?: RequestBody, options?: CallOptions): Promise<Response>;
  delete(url: string | URL, headers: HeadersInit | null, body: RequestBody | undefined, options?: CallOptions): Promise<Response>;
  delete(url: string | URL, a?: unknown, b?: unknown, c?: unknown): Promise<Response> {
    return this.verb('DELETE', 'delete', url, arguments.length, a, b, c);
  }
  /** OPTIONS. */
  options(url: string | URL, options?: CallOptions): Promise<Response>;
  options(url: string | URL, headers: VerbHeaders | null, body?: RequestBody, options?: CallOptions): Promise<Response>;
  options(url: string | URL, headers: HeadersInit | null, body: RequestBody | undefined, options?: CallOptions): Promise<Response>;
  options(url: string | URL, a?: unknown, b?: unknown, c?: unknown): Promise<Response> {
    return this.verb('OPTIONS', 'options', url, arguments.length, a, b, c);
  }

  // ---- internals -----------------------------------------------------------------------------

  /** A verb method's call: its arguments read as {@link verbArgs} says; a wrong shape rejects, as every other input error. */
  private verb(method: string, name: string, url: string | URL, n: number, a: unknown, b: unknown, c: unknown): Promise<Response> {
    let o: CallOptions;
    try {
      o = verbArgs(name, n, a, b, c);
    } catch (err) {
      return Promise.reject(err);
    }
    return this.request(method, url, o);
  }

  private setHooks(hooks: Tapped<ClientHooks>): void {
    this.hooks = hooks;
    this.onRequestSync = syncBail(hooks.onRequest);
    this.onResponseHeadSync = syncBail(hooks.onResponseHead);
    this.onRetrySync = syncBail(hooks.onRetry);
    this.attemptTaps = hooks.onRequest !== null || hooks.onResponseHead !== null || hooks.onRetry !== null;
    this.plain =
      (hooks.onRequest === null || this.onRequestSync !== null) && (hooks.onResponseHead === null || this.onResponseHeadSync !== null) && (hooks.onRetry === null || this.onRetrySync !== null);
  }

  /** The exchange and acquire options of `o`; calls without options of their own share one (frozen: sessions only read them). */
  private planFor(o: CallOptions): CallPlan {
    if (o === this.defaults) return (this.defaultPlan ??= planOf(o, this.hooks, this.preferHttp2, this.headGate));
    const last = this.lastPlan;
    if (last !== null && last.acquire.hooks === this.hooks && planFits(last.from, o)) return last;
    return (this.lastPlan = planOf(o, this.hooks, this.preferHttp2, this.headGate));
  }

  private merge(call: CallOptions): CallOptions {
    // No per-call options (the common case): the frozen defaults serve as they are.
    for (const _ in call) return { ...this.defaults, ...call };
    return this.defaults;
  }

  /** The request of a call: its URL, headers, query and body from the call's options; records the origin on `call` when the URL was parsed before. */
  private buildRequest(method: string, url: string | URL, o: CallOptions, call: Call): Request {
    if (typeof method !== 'string' || method === '') throw new ArgumentError('method must be a non-empty string');
    // A method holding ':' or '/' is a URL in the method's place (no token has either).
    if ((typeof url !== 'string' && !(url instanceof URL)) || method.includes(':') || method.charCodeAt(0) === 47) throw callShapeError(method, url);
    const parts = typeof url === 'string' ? parseUrl(url) : null;
    const u = parts ?? (url as URL);
    if (u.protocol !== 'http:' && u.protocol !== 'https:') {
      const hint = typeof url === 'string' ? urlHint(url, 'http') : '';
      if (hint !== '') throw new ArgumentError(`invalid URL ${JSON.stringify(url)}: ${hint}`);
      throw new ArgumentError(`unsupported URL scheme ${u.protocol} (http: and https: only; WebSockets use WebSockets.open)`);
    }
    const d = this.defaultHeaders;
    let headers: Headers;
    if (o.headers == null && d === null) {
      // The common call: only the User-Agent, in arrays of its size (a push onto empty ones reserves 17 slots each).
      headers = this.onRequestSync === null ? headersFromArrays(['User-Agent'], [USER_AGENT]) : headersWithRoom();
    } else {
      headers = new Headers(o.headers ?? undefined);
      if (d !== null) for (const [k, v] of d) if (!headers.has(k)) headers.push(k, v);
      if (!headers.has('User-Agent')) headers.push('User-Agent', USER_AGENT);
    }
    const auth = o.basicauth ?? (headers.has('Authorization') ? null : this.defaultBasicauth);
    if (auth !== null && auth !== undefined) headers.set('Authorization', `Basic ${Buffer.from(`${auth[0]}:${auth[1]}`).toString('base64')}`);
    else if (u.username !== '' && !headers.has('Authorization')) {
      headers.set('Authorization', `Basic ${Buffer.from(`${decodeURIComponent(u.username)}:${decodeURIComponent(u.password)}`).toString('base64')}`);
    }
    let pairs = queryPairs(o.query);
    if (this.defaultQuery.length > 0) {
      const own = new Set(pairs.map((p) => p[0]));
      pairs = [...this.defaultQuery.filter((p) => !own.has(p[0])), ...pairs];
    }
    const body = o.json !== undefined ? jsonBody(o.json, o.body, headers) : toMessageBody(o.body, headers);
    let target: string;
    let href: string;
    // Built, not set through URL setters (each is a native round trip): no userinfo, no fragment.
    // A parsed string URL keeps its target and URL for the calls that add no query.
    if (pairs.length === 0 && parts !== null) {
      target = parts.target ??= (u.pathname || '/') + u.search;
      href = parts.href ??= `${u.protocol}//${u.host}${target}`;
      call.origin = parts.origin ??= parseOrigin(href);
    } else {
      target = appendQuery((u.pathname || '/') + u.search, pairs);
      href = `${u.protocol}//${u.host}${target}`;
    }
    // Everything here is checked already: the wire constructor skips the options object and its checks.
    const req = requestFromWire(method, target, headers, body, bodyLength(body), 1);
    req.host = u.host;
    req.url = href;
    return req;
  }

  /**
   * The attempt loop shared by `request` and `dispatch`: resolves with the final response head.
   * `retried` is the {@link retryMark} of a first attempt {@link Client.requestPlain} already made
   * (0: none), so the retry it hands over here counts against the same limits. `hold` marks the
   * exchanges {@link kHoldConnection} (`open`). `from` is how far {@link Client.requestTapped}
   * took the first attempt: the loop goes on from there.
   */
  private async run(call: Call, retried = 0, hold = false, from: Resume | null = null): Promise<Response> {
    const k = this.kernel;
    if (k !== null && this.hooks === null) {
      if (k.state !== 'ready') await k.ready();
      this.setHooks(k.tapped.client);
    }
    const hooks = this.hooks;
    const { options: o, ctx, trace } = call;
    const plan = this.planFor(o);
    // open(): the stream's reader decides whether its connection is reused (closeRead closes it).
    const timeouts = hold ? Object.freeze({ ...plan.timeouts, [kHoldConnection]: true }) : plan.timeouts;
    const acquire = plan.acquire;
    const route = routeOf(hooks, ctx);
    let req = call.request;
    let attempt = 1;
    let redirects = 0;
    let staleRetried = retried === RETRY_STALE;
    let unprocessedRetries = retried === RETRY_UNPROCESSED ? 1 : 0;
    for (;;) {
      setAttempt(ctx, attempt);
      let res: Response | null = null;
      let error: unknown = null;
      // Resumed: what the first attempt got so far; a fresh attempt starts at AT_START.
      const at = from === null ? AT_START : from.at;
      const given = from === null ? undefined : from.value;
      if (from !== null) res = from.response;
      from = null;
      if (at !== AT_DECIDED)
        try {
          if (at === AT_FAILED) throw given;
          let r: Response | void | null | undefined;
          if (at === AT_REQUESTED) r = await (given as Response | void | undefined);
          else if (at === AT_START && hooks !== null && hooks.onRequest !== null) r = await hooks.onRequest.promise(req, ctx);
          if (r != null) {
            res = r;
            if (res.request === null) res.request = req;
          }
          if (trace !== null) trace(new RequestEvent(attempt, req, req.url));
          const create = channels.clientRequestCreate;
          if (create.hasSubscribers) create.publish({ request: req, url: req.url, attempt });
          // Timed only for someone who reads the time (NaN otherwise).
          const sent = trace !== null || channels.clientResponseHeaders.hasSubscribers || channels.clientResponseEnd.hasSubscribers ? performance.now() : NaN;
          if (res === null) {
            const err0 = ctx.error();
            if (err0 !== null) throw err0;
            const origin = originOf(req.url);
            // HTTP/2 demanded on a plain http:// URL (this hop's: a redirect may lead there) is h2c.
            if (acquire.httpVersion === 'h2' && origin.protocol === 'http:' && !this.speaksH2c) {
              checkHttpVersion(k, 'h2', 'http:', `${req.method} ${req.url}`);
              this.speaksH2c = true;
            }
            let session = this.transport.acquireIdle(origin, acquire, route);
            let reused = session !== null;
            if (session === null) {
              session = await this.transport.acquire(origin, ctx, acquire, route);
              reused = !this.transport.takeFresh(session);
            }
            const reuse = channels.clientConnectionReuse;
            if (reused && reuse.hasSubscribers) reuse.publish({ origin: originString(origin), protocol: session.protocol });
            const sending = session.dispatch(req, ctx, timeouts);
            // Both protocol drivers hand the head to the connection before dispatch returns.
            const headers = channels.clientRequestHeaders;
            if (headers.hasSubscribers) headers.publish({ request: req, connection: connectionInfo(session, reused) });
            res = await sending;
          }
          res.url = req.url;
          if (trace !== null) trace(new ResponseHeadEvent(attempt, res, req.url, res.status, performance.now() - sent));
          const head = channels.clientResponseHeaders;
          if (head.hasSubscribers) head.publish({ request: req, response: res, elapsedMs: performance.now() - sent });
          if (channels.clientResponseEnd.hasSubscribers || channels.clientRequestError.hasSubscribers) watchResponseEnd(req, res, sent);
          if (at === AT_HEAD || (hooks !== null && hooks.onResponseHead !== null)) {
            const next = at === AT_HEAD ? await (given as Request | void | undefined) : await hooks!.onResponseHead!.promise(res, ctx);
            if (next != null) {
              redirects++;
              if (trace !== null) trace(new RedirectEvent(res.status, req.url, next.url, redirects));
              discard(res.body);
              next.ctx = ctx;
              req = next;
              continue;
            }
          }
        } catch (err) {
          if (res !== null) discard(res.body);
          res = null;
          const marks = typeof err === 'object' && err !== null ? (err as Record<symbol, unknown>) : null;
          if (marks !== null && marks[kStale] === true && !staleRetried && isIdempotent(req.method) && isReplayable(req.body)) {
            // The server closed a pooled connection just as we used it: once more on a fresh one.
            staleRetried = true;
            continue;
          }
          if (marks !== null && marks[kUnprocessed] === true && unprocessedRetries < MAX_UNPROCESSED_RETRIES && isReplayable(req.body)) {
            // The server never processed it (HTTP/2 GOAWAY past it, REFUSED_STREAM): any method is safe to send again.
            unprocessedRetries++;
            continue;
          }
          error = err;
          const failed = channels.clientRequestError;
          if (failed.hasSubscribers) failed.publish({ request: req, error: err });
        }
      if (at === AT_DECIDED || (hooks !== null && hooks.onRetry !== null)) {
        const decision = at === AT_DECIDED ? await (given as RetryDecision | void | undefined) : await hooks!.onRetry!.promise({ attempt, error, request: req, response: res }, ctx);
        if (decision != null) {
          const status = res?.status ?? 0;
          if (decision.retry) {
            const delay = Math.max(0, decision.delayMs ?? 0);
            if (trace !== null) trace(new RetryEvent(attempt, delay, decision.reason ?? '', error, status));
            if (res !== null) discard(res.body);
            if (delay > 0) await sleep(delay, ctx);
            attempt++;
            continue;
          }
          if (trace !== null) trace(new RetrySkippedEvent(attempt, decision.reason ?? '', error, status));
        }
      }
      if (error !== null) {
        // A streamed body no session took (the connection failed, the call was canceled first) is released too.
        if (req.body instanceof AbstractBody) stopUpload(req.body, error instanceof Error ? error : null);
        throw error;
      }
      return res!;
    }
  }
}

/** The first attempt is fresh: the loop starts with the `onRequest` taps. */
const AT_START = 0;
/** The `onRequest` taps ran and returned `value` (undefined: no answer, send the request). */
const AT_REQUESTED = 1;
/** The response head arrived (`response`, its URL set) and the `onResponseHead` taps returned `value`. */
const AT_HEAD = 2;
/** The attempt produced `response` and the `onRetry` taps returned `value`. */
const AT_DECIDED = 3;
/** The attempt threw `value` (`response`: the head it had got, or null). */
const AT_FAILED = 4;

/** A gated head's `onRetry` taps threw (`value`): the call ends with it. */
const GATE_THREW = 5;
/** A gated head's taps replaced its body and returned nothing: the call buffers that body. */
const GATE_BODY = 6;

/** What a {@link kHeadGate}'s taps did with a head they did not leave alone, until the call's continuation takes it. */
interface GateOutcome {
  readonly at: typeof AT_HEAD | typeof AT_DECIDED | typeof AT_FAILED | typeof GATE_THREW | typeof GATE_BODY;
  readonly value: unknown;
}
const gateOutcomes = new WeakMap<Response, GateOutcome>();

/**
 * Runs the synchronous `onResponseHead` and `onRetry` taps on a first attempt's response head,
 * as the attempt loop would: null when they did nothing, else where the loop goes on (a tap's
 * error in `onRetry` is {@link GATE_THREW}: it ends the call).
 */
function headTaps(
  onHead: ((res: Response, ctx: RequestContext) => Request | void | undefined) | null,
  onRetry: ((state: RetryState, ctx: RequestContext) => RetryDecision | void | undefined) | null,
  res: Response,
  request: Request,
  ctx: RequestContext,
): { at: typeof AT_HEAD | typeof AT_DECIDED | typeof AT_FAILED | typeof GATE_THREW; value: unknown } | null {
  if (onHead !== null) {
    let next: Request | void | undefined;
    try {
      next = onHead(res, ctx);
    } catch (err) {
      return { at: AT_FAILED, value: err };
    }
    if (next !== undefined) return { at: AT_HEAD, value: next };
  }
  if (onRetry !== null) {
    let decision: RetryDecision | void | undefined;
    try {
      decision = onRetry({ attempt: 1, error: null, request, response: res }, ctx);
    } catch (err) {
      return { at: GATE_THREW, value: err };
    }
    if (decision !== undefined) return { at: AT_DECIDED, value: decision };
  }
  return null;
}

/** Records what the taps did with `res` and tells the session to hand it over as it is (false). */
function held(res: Response, at: GateOutcome['at'], value: unknown): false {
  gateOutcomes.set(res, { at, value });
  return false;
}

/** How far {@link Client.requestTapped} took a call's first attempt before {@link Client.run} goes on with it. */
interface Resume {
  readonly at: typeof AT_REQUESTED | typeof AT_HEAD | typeof AT_DECIDED | typeof AT_FAILED;
  /** What the step at `at` returned or threw (a tap's result may be a promise: the loop awaits it, as the hook would). */
  readonly value: unknown;
  readonly response: Response | null;
}

/** Ends `call` with `err` (see {@link Call.fail}) as a rejected promise. */
function rejectCall(call: Call, err: unknown): Promise<never> {
  try {
    call.fail(err);
  } catch (e) {
    return Promise.reject(e);
  }
}

/**
 * A streamed response's call ends when its body does: the call's signal stays linked while the
 * body is read, and closing the body unlinks it (at once when the body is already in memory).
 */
function unlinkOnClose(call: Call, res: Response): void {
  const body = res.body;
  if (!(body instanceof AbstractBody)) {
    call.unlink();
    return;
  }
  const close = body.close.bind(body);
  body.close = () => {
    call.unlink();
    close();
  };
}

/** What {@link Client.run} hands the pool and the session, derived from a call's options. */
interface CallPlan {
  readonly timeouts: ExchangeOptions;
  /** `timeouts` marked {@link kBufferBody} with the call's bound: for calls that buffer the whole body and run no per-attempt hooks. */
  readonly buffered: ExchangeOptions;
  /** `buffered` marked {@link kHeadGate} with the client's gate: for buffered calls whose synchronous head taps a session runs. */
  readonly gated: ExchangeOptions;
  readonly acquire: { readonly connectTimeout: number; readonly httpVersion: 'h1' | 'h2' | 'auto'; readonly hooks: Tapped<ClientHooks> | null };
  /** The options the plan was made from, as {@link planFits} compares them (copied: the call's own object may hold a body). */
  readonly from: PlanInputs;
}

/** The call options a {@link CallPlan} depends on. */
type PlanInputs = Readonly<
  Pick<
    CallOptions,
    | 'responseHeaderTimeout'
    | 'readIdleTimeout'
    | 'writeIdleTimeout'
    | 'expectContinueTimeout'
    | 'requestTimeout'
    | 'maxLineBytes'
    | 'maxHeaderBytes'
    | 'httpVersion'
    | 'http2PriorKnowledge'
    | 'connectTimeout'
    | 'maxResponseBytes'
  >
>;

/** True when `o` would make the same plan as the options `p` was taken from (same client, same hooks). */
function planFits(p: PlanInputs, o: CallOptions): boolean {
  return (
    p.responseHeaderTimeout === o.responseHeaderTimeout &&
    p.readIdleTimeout === o.readIdleTimeout &&
    p.writeIdleTimeout === o.writeIdleTimeout &&
    p.expectContinueTimeout === o.expectContinueTimeout &&
    p.requestTimeout === o.requestTimeout &&
    p.maxLineBytes === o.maxLineBytes &&
    p.maxHeaderBytes === o.maxHeaderBytes &&
    p.httpVersion === o.httpVersion &&
    p.http2PriorKnowledge === o.http2PriorKnowledge &&
    p.connectTimeout === o.connectTimeout &&
    p.maxResponseBytes === o.maxResponseBytes
  );
}

function planOf(o: CallOptions, hooks: Tapped<ClientHooks> | null, preferHttp2: boolean, gate: (res: Response, ctx: RequestContext) => boolean): CallPlan {
  const timeouts: ExchangeOptions = Object.freeze({
    // Unset, with readIdleTimeout set: that one times the head wait, as documented.
    responseHeaderTimeout: o.responseHeaderTimeout ?? ((o.readIdleTimeout ?? 0) > 0 ? 0 : DEFAULT_RESPONSE_HEADER_TIMEOUT),
    readIdleTimeout: o.readIdleTimeout ?? 0,
    writeIdleTimeout: o.writeIdleTimeout ?? 0,
    expectContinueTimeout: o.expectContinueTimeout ?? 1000,
    requestTimeout: o.requestTimeout ?? 0,
    maxLineBytes: o.maxLineBytes,
    maxHeaderBytes: o.maxHeaderBytes,
  });
  let httpVersion = o.httpVersion ?? (o.http2PriorKnowledge === true ? 'h2' : 'auto');
  // `auto` is the client's preference: without HTTP/2 that is HTTP/1.1 (its own pool key, so a
  // transport shared with clients that do negotiate h2 never hands this one an h2 session).
  if (httpVersion === 'auto' && !preferHttp2) httpVersion = 'h1';
  const acquire = Object.freeze({ connectTimeout: o.connectTimeout ?? 30_000, httpVersion, hooks } as const);
  // A session that gathers the whole body itself enforces the call's bound as it goes.
  const buffered: ExchangeOptions = Object.freeze({ ...timeouts, [kBufferBody]: maxResponseBytes(o) });
  const gated: ExchangeOptions = Object.freeze({ ...buffered, [kHeadGate]: gate });
  const from: PlanInputs = {
    responseHeaderTimeout: o.responseHeaderTimeout,
    readIdleTimeout: o.readIdleTimeout,
    writeIdleTimeout: o.writeIdleTimeout,
    expectContinueTimeout: o.expectContinueTimeout,
    requestTimeout: o.requestTimeout,
    maxLineBytes: o.maxLineBytes,
    maxHeaderBytes: o.maxHeaderBytes,
    httpVersion: o.httpVersion,
    http2PriorKnowledge: o.http2PriorKnowledge,
    connectTimeout: o.connectTimeout,
    maxResponseBytes: o.maxResponseBytes,
  };
  return { timeouts, buffered, gated, acquire, from };
}

/** What the `client.poolKey` taps add to the pool key of the call on `ctx`; nothing to ask when none is tapped. */
function routeOf(hooks: Tapped<ClientHooks> | null, ctx: RequestContext): unknown {
  return hooks === null || hooks.poolKey === null ? undefined : hooks.poolKey.call(undefined, ctx);
}

/**
 * Options that shape the connections themselves: a client given a `transport` opens none of its
 * own, so they belong on that transport (passing them to both would leave one silently unused).
 */
function refuseConnectionOptions(given: Record<string, unknown>): void {
  for (const [name, v] of Object.entries(given)) {
    if (v !== undefined) {
      throw new ArgumentError(`new Client(): ${name} shapes the connections of the pool, and this client was given a transport: pass it to new Transport({ ${name} }) instead, or leave out transport`);
    }
  }
}

const RETRY_STALE = 1;
const RETRY_UNPROCESSED = 2;

/**
 * Whether the attempt loop would send `req` again after `err` on its first attempt:
 * {@link RETRY_STALE} (a pooled connection the server had closed), {@link RETRY_UNPROCESSED}
 * (marked {@link kUnprocessed}), or 0.
 */
function retryMark(err: unknown, req: Request): number {
  if (typeof err !== 'object' || err === null) return 0;
  const marks = err as Record<symbol, unknown>;
  if (marks[kStale] === true && isIdempotent(req.method) && isReplayable(req.body)) return RETRY_STALE;
  if (marks[kUnprocessed] === true && isReplayable(req.body)) return RETRY_UNPROCESSED;
  return 0;
}

/**
 * The common call's headers (the User-Agent) when `onRequest` taps may add a few: arrays with
 * room for three more (shortening keeps their slots), so those pushes grow nothing.
 */
function headersWithRoom(): Headers {
  const names = ['User-Agent', '', '', ''];
  const values = [USER_AGENT, '', '', ''];
  names.length = 1;
  values.length = 1;
  return headersFromArrays(names, values);
}

/** The options of a call given none (one shared object: no allocation, nothing to check). */
const NO_OPTIONS: CallOptions = Object.freeze({});

/**
 * The options of a verb call (`name(url, …)` with `n` arguments in all): `(url,
 * options)`, or `(url, headers, body?, options?)` when a body follows or the second argument
 * can only be headers (a Headers, pairs or a Map). A second argument that is neither an
 * object nor headers is an `ArgumentError` naming the call shapes.
 */
function verbArgs(name: string, n: number, a: unknown, b: unknown, c: unknown): CallOptions {
  if (n <= 2 && !isHeadersValue(a)) {
    if (a === undefined || a === null) return NO_OPTIONS;
    if (typeof a !== 'object') {
      const shown = typeof a === 'string' ? JSON.stringify(a.length > 40 ? `${a.slice(0, 40)}…` : a) : typeof a;
      throw new ArgumentError(`${name}(url, ${shown}): the second argument is the options object; send a body as ${name}(url, { body }) or ${name}(url, headers, body)`);
    }
    return a as CallOptions;
  }
  return { ...((c as CallOptions | undefined) ?? {}), headers: a as HeadersInit, body: b as RequestBody };
}

const VERBS = new Set(['GET', 'HEAD', 'QUERY', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS']);

/**
 * The error for a URL argument that is neither a string nor a URL: the call shape was
 * mistaken, as in `get({ url })` or `request(url, { method })` (the method string then holds
 * the URL).
 */
function callShapeError(method: string, url: unknown): ArgumentError {
  const fields = typeof url === 'object' && url !== null ? (url as { url?: unknown; method?: unknown }) : {};
  if (method.includes(':') || method.startsWith('/')) {
    const m = typeof fields.method === 'string' ? fields.method : typeof url === 'string' && /^[A-Za-z]+$/.test(url) ? url.toUpperCase() : 'GET';
    return new ArgumentError(`request(method, url, options) takes the method first: request(${JSON.stringify(m)}, ${JSON.stringify(method)}, options), or ${m.toLowerCase()}(url, options)`);
  }
  const call = VERBS.has(method) ? `${method.toLowerCase()}(url, options)` : `request(${JSON.stringify(method)}, url, options)`;
  const got = typeof fields.url === 'string' ? `an object with url: pass the URL as the first argument, ${call}` : `${describe(url)}; the call shape is ${call}`;
  return new ArgumentError(`the URL must be a string or a URL, got ${got}`);
}

/** True for values that can only be headers, never options: a Headers, an array of pairs, a Map. */
export function isHeadersValue(a: unknown): boolean {
  return a instanceof HeadersClass || Array.isArray(a) || a instanceof Map;
}

/** The parts of a URL `buildRequest` reads. */
interface UrlParts {
  readonly protocol: string;
  readonly host: string;
  readonly username: string;
  readonly password: string;
  readonly pathname: string;
  readonly search: string;
  /** Path and query: the request target when the call adds no query (built once). */
  target: string | null;
  /** `scheme://host` + {@link UrlParts.target}: the request URL when the call adds no query (built once). */
  href: string | null;
  /** The origin (built on first use). */
  origin: Origin | null;
}

const parsedUrls = new Map<string, UrlParts>();

/**
 * A URL string parsed once: calls repeat the same few URLs, and `new URL` (a native round
 * trip, about 2 µs) was a visible part of a pooled request. Bounded like the origin cache.
 */
function parseUrl(url: string): UrlParts {
  let p = parsedUrls.get(url);
  if (p === undefined) {
    let u: URL;
    try {
      u = new URL(url);
    } catch {
      const hint = typeof url === 'string' ? urlHint(url, 'http') : '';
      throw new ArgumentError(`invalid URL ${JSON.stringify(String(url))}${hint !== '' ? `: ${hint}` : ''}`);
    }
    p = { protocol: u.protocol, host: u.host, username: u.username, password: u.password, pathname: u.pathname, search: u.search, target: null, href: null, origin: null };
    if (parsedUrls.size >= 256) parsedUrls.clear();
    parsedUrls.set(url, p);
  }
  return p;
}

const origins = new Map<string, Origin>();

/** The origin of an absolute URL, cached by its `scheme://authority` prefix (most calls repeat a few). */
function originOf(url: string): Origin {
  const slash = url.indexOf('/', url.indexOf('//') + 2);
  const prefix = slash < 0 ? url : url.slice(0, slash);
  let o = origins.get(prefix);
  if (o === undefined) {
    o = parseOrigin(url);
    if (origins.size >= 256) origins.clear();
    origins.set(prefix, o);
  }
  return o;
}

function parseOrigin(url: string): Origin {
  const u = new URL(url);
  const protocol = u.protocol === 'https:' ? 'https:' : 'http:';
  const host = u.hostname.startsWith('[') ? u.hostname.slice(1, -1) : u.hostname;
  return { protocol, host, port: u.port !== '' ? Number(u.port) : protocol === 'https:' ? 443 : 80 };
}

/** Drops a response body we will not read (redirect hops, retried attempts). */
function discard(body: Body): void {
  if (body instanceof AbstractBody) body.close();
}

function sleep(ms: number, ctx: RequestContext): Promise<void> {
  return new Promise((resolve, reject) => {
    const t = setTimeout(() => {
      remove();
      resolve();
    }, ms);
    const remove = ctx.onCancel((err) => {
      clearTimeout(t);
      reject(err);
    });
  });
}
