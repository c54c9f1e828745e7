/**
 * The client side of an HTTP/1.1 protocol upgrade (RFC 9110 §7.8, RFC 6455 §4.1): one GET
 * with `Connection: Upgrade` on a connection of its own (never pooled), its response head read
 * with the kernel's parser, and on `101 Switching Protocols` the raw socket handed to the
 * caller. WebSockets build on it; so could any other upgrade.
 *
 * The connection is opened the way the client opens every connection: the `client.connect`
 * taps first (a proxy tunnel, SOCKS), then the kernel's own TCP/TLS connect, ALPN pinned to
 * `http/1.1` (an upgrade cannot happen over HTTP/2). Timeouts follow the client's meanings
 * (`connectTimeout` for DNS, TCP, proxy handshakes and TLS; `requestTimeout` for the whole
 * handshake; `responseHeaderTimeout`, `readIdleTimeout`, `writeIdleTimeout` for the exchange).
 *
 * The request goes through the `client.onRequest` taps and its response through the
 * `client.onResponseHead` taps, as a call's do (so the cookies plugin sends and stores
 * cookies, an auth plugin adds its header), with `callOptions` as the call options they read.
 * An upgrade is one exchange: a request an `onResponseHead` tap returns (a redirect to follow)
 * is not followed (RFC 6455 §4.1 fails a handshake answered 3xx), and an `onRequest` tap
 * that answers the request itself fails the upgrade with `ProtocolError`.
 */
import { performance } from 'node:perf_hooks';
import type { Duplex } from 'node:stream';
import type { ConnectionOptions } from 'node:tls';
import { ArgumentError, ParseError, ProtocolError, TimeoutError, type TimeoutOperation } from '../errors.js';
import type { ClientHooks, ConnectOptions, Tapped } from '../hooks.js';
import { requestFraming } from '../http1/framing.js';
import { exchangeHead } from '../http1/head-exchange.js';
import { serializeRequestHead } from '../http1/serialize.js';
import type { HookHost } from '../hook-host.js';
import { nobody } from '../message/body.js';
import { kCallOptions, RequestContext } from '../message/context.js';
import type { Request } from '../message/request.js';
import { Response } from '../message/response.js';
import { checkLocalAddr, openConnection } from './connect.js';
import { resolveExchangeTimeouts, type CallOptions, type ExchangeTimeoutOptions } from './options.js';

/**
 * Options of {@link upgradeRequest}. Durations in ms; 0 turns a timeout off. The timeouts are a
 * call's: `requestTimeout` bounds the whole handshake, `responseHeaderTimeout` the wait from
 * the request written to the response head read, `readIdleTimeout` a gap between its bytes
 * (and the head wait when `responseHeaderTimeout` is 0), `writeIdleTimeout` the wait for the
 * request head to be taken by the socket.
 */
export interface UpgradeOptions extends ExchangeTimeoutOptions {
  /** A kernel whose `client.connect` taps open the connection and whose `client.onUpgrade` taps see the 101; none means no plugins. */
  kernel?: HookHost | null;
  /**
   * An already connected byte stream to send the request over instead of connecting. It stays
   * the caller's: it is never destroyed here, not even on failure (only our listeners go).
   */
  socket?: Duplex | null;
  /** TLS options for `https:` (`ca`, `rejectUnauthorized`, `servername`, …). */
  tls?: Readonly<ConnectionOptions>;
  /** Local source address to bind: an IP literal (else `ArgumentError`, as when it cannot be bound). */
  localAddress?: string;
  /** Longest status or header line of the response. Default 65 536. */
  maxLineBytes?: number;
  /** Largest response head. Default 1 MiB. */
  maxHeaderBytes?: number;
  /** Cancellation and deadline of the caller; canceling it stops the handshake. */
  context?: RequestContext;
  /**
   * The call options the client taps read through `getCallOptions(ctx)` (such as `cookiejar`),
   * the `client.poolKey` taps too: what they give reaches the `client.connect` taps as
   * `ConnectOptions.poolKey`, as for a call's connection. Default none.
   */
  callOptions?: CallOptions;
  /** `operation` of the `TimeoutError` the exchange's timeouts raise. Default `request`; WebSockets use `websocket handshake`. */
  timeoutOperation?: TimeoutOperation;
  /**
   * Checks a 101 before the `client.onUpgrade` taps see it (the protocol's own rules, such as
   * RFC 6455's `Sec-WebSocket-Accept`); throwing refuses the handshake like a tap does.
   */
  check?: (response: Response) => void;
}

/** What {@link upgradeRequest} resolves to. */
export interface UpgradeResult {
  /**
   * The response head. Its `body` is always `nobody`: after a 101 the socket speaks the new
   * protocol; after any other status the body was not read (its first bytes are `head`).
   */
  readonly response: Response;
  /** The connection, paused, with none of our listeners: the caller owns it (and destroys it after a refusal, unless it passed it in). */
  readonly socket: Duplex;
  /** Bytes the server sent past the response head (the start of the new protocol's stream). */
  readonly head: Uint8Array;
}

/**
 * Sends `request` (a GET carrying `Upgrade` and `Connection: upgrade`; `request.url` absolute
 * `http:` or `https:`) on a new connection, or on `options.socket`, and reads the response
 * head. On 101 `options.check` and then the `client.onUpgrade` taps run (one throwing refuses
 * the handshake: the socket is destroyed, unless the caller owns it) and the socket is handed
 * over; any other final status is returned as it is, for the caller to report.
 *
 * Throws `ArgumentError` for a request that is not an upgrade or a `localAddress` that is not
 * an IP literal or cannot be bound, the connect errors
 * (`DNSError`, `ConnectError`, `TLSHandshakeError`, `TimeoutError` `connect`/`tls_handshake`),
 * `TimeoutError` with `options.timeoutOperation` for the exchange's timeouts and
 * `requestTimeout`, `ParseError`/`ProtocolError` for a bad or missing response head, the
 * context's `CanceledError`, and what a tap throws.
 */
export async function upgradeRequest(request: Request, options: UpgradeOptions = {}): Promise<UpgradeResult> {
  const started = performance.now();
  const upgrade = request.headers.get('Upgrade');
  if (upgrade === undefined || upgrade === '') throw new ArgumentError('upgradeRequest(): the request has no Upgrade header');
  let url: URL;
  try {
    url = new URL(request.url);
  } catch {
    throw new ArgumentError(`upgradeRequest(): request.url must be an absolute http: or https: URL, got ${JSON.stringify(request.url)}`);
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') throw new ArgumentError(`upgradeRequest(): request.url must be http: or https:, got ${url.protocol}`);
  const op = options.timeoutOperation ?? 'request';
  const { connectTimeout, requestTimeout, readIdleTimeout: readIdle, responseHeaderTimeout: headerTimeout, writeIdleTimeout: writeIdle } = resolveExchangeTimeouts(options);
  const localAddress = checkLocalAddr(options.localAddress);

  const k = options.kernel ?? null;
  let hooks: Tapped<ClientHooks> | null = null;
  if (k !== null) {
    if (k.state !== 'ready') await k.ready();
    hooks = k.tapped.client;
  }
  const parent = options.context;
  const deadline = requestTimeout > 0 ? started + requestTimeout : 0;
  const ctx = parent !== undefined ? parent.child(deadline) : new RequestContext({ deadline });
  request.ctx = ctx;
  if (options.callOptions !== undefined) ctx.set(kCallOptions, options.callOptions);
  const owned = options.socket === undefined || options.socket === null;
  let socket: Duplex;
  try {
    if (hooks !== null && hooks.onRequest !== null) {
      const answered = await hooks.onRequest.promise(request, ctx);
      if (answered !== undefined && answered !== null) {
        throw new ProtocolError(`a client.onRequest tap answered the upgrade request itself (status ${answered.status}); an upgrade needs the server's 101`);
      }
    }
    if (!owned) socket = options.socket!;
    else {
      const host = url.hostname.startsWith('[') ? url.hostname.slice(1, -1) : url.hostname;
      const protocol = url.protocol as 'http:' | 'https:';
      const o: ConnectOptions = {
        protocol,
        host,
        port: url.port !== '' ? Number(url.port) : protocol === 'https:' ? 443 : 80,
        servername: options.tls?.servername,
        alpnProtocols: ['http/1.1'],
        httpVersion: 'h1',
        localAddress,
        timeoutMs: connectTimeout,
        // Never pooled, but keyed as a call with these options would be: the connect taps have one path.
        poolKey: hooks !== null && hooks.poolKey !== null ? hooks.poolKey.call(undefined, ctx) : undefined,
        tls: options.tls,
      };
      let given: Duplex | null = null;
      if (hooks !== null && hooks.connect !== null) given = (await hooks.connect.promise(o, ctx)) ?? null;
      socket = await openConnection(o, ctx, given, started);
    }
    const { response, head } = await exchange(request, socket, ctx, {
      op,
      started,
      requestTimeout,
      headerTimeout,
      readIdle,
      writeIdle,
      owned,
      maxLineBytes: options.maxLineBytes,
      maxHeaderBytes: options.maxHeaderBytes,
    });
    try {
      // The taps see every handshake response (cookies are stored from a refusal too); a
      // request one returns (a redirect) is not followed.
      if (hooks !== null && hooks.onResponseHead !== null) await hooks.onResponseHead.promise(response, ctx);
      if (response.status === 101) {
        options.check?.(response);
        if (hooks !== null && hooks.onUpgrade !== null) await hooks.onUpgrade.promise(request, response, socket);
      }
    } catch (err) {
      if (owned) socket.destroy();
      throw err;
    }
    return { response, socket, head };
  } catch (err) {
    // The connect step's deadline error names the request; this deadline is the handshake's.
    if (err instanceof TimeoutError && err.operation === 'request' && op !== 'request' && deadline > 0 && performance.now() >= deadline - 1) {
      throw new TimeoutError(op, requestTimeout, Math.round(performance.now() - started));
    }
    throw err;
  } finally {
    ctx.detach();
  }
}

interface ExchangeSettings {
  op: TimeoutOperation;
  started: number;
  requestTimeout: number;
  headerTimeout: number;
  readIdle: number;
  writeIdle: number;
  owned: boolean;
  maxLineBytes?: number;
  maxHeaderBytes?: number;
}

/** Writes the request head and reads the final (or 101) response head, under the timeouts. */
async function exchange(request: Request, socket: Duplex, ctx: RequestContext, s: ExchangeSettings): Promise<{ response: Response; head: Uint8Array }> {
  const framing = requestFraming(request.method, request.headers, 0);
  const text = serializeRequestHead(request.method, request.target, request.headers, request.host, framing.field);
  const stop = new AbortController();
  let headTimer: NodeJS.Timeout | null = null;
  let idleTimer: NodeJS.Timeout | null = null;
  let deadlineTimer: NodeJS.Timeout | null = null;
  let writeTimer: NodeJS.Timeout | null = null;
  const timeout = (timeoutMs: number, what: string) => (): void =>
    stop.abort(new TimeoutError(s.op, timeoutMs, Math.round(performance.now() - s.started), `${s.op} timed out after ${timeoutMs} ms (${what})`));
  const armIdle = (): void => {
    if (s.readIdle <= 0 || s.headerTimeout > 0) return;
    if (idleTimer !== null) clearTimeout(idleTimer);
    idleTimer = setTimeout(timeout(s.readIdle, 'readIdleTimeout: no response bytes'), s.readIdle);
  };
  const onDrain = (): void => {
    if (writeTimer !== null) clearTimeout(writeTimer);
    writeTimer = null;
  };
  const removeCancel = ctx.onCancel((err) => stop.abort(err));
  const dl = ctx.deadline;
  if (dl > 0) {
    const fromRequest = s.requestTimeout > 0 && Math.abs(dl - (s.started + s.requestTimeout)) < 1;
    deadlineTimer = setTimeout(
      fromRequest
        ? timeout(s.requestTimeout, 'requestTimeout')
        : () => stop.abort(new TimeoutError('request', 0, Math.round(performance.now() - s.started), 'request deadline passed during the upgrade handshake')),
      Math.max(0, dl - performance.now()),
    );
  }
  try {
    if (s.headerTimeout > 0 && !stop.signal.aborted) headTimer = setTimeout(timeout(s.headerTimeout, 'responseHeaderTimeout'), s.headerTimeout);
    const answer = exchangeHead(socket, text, {
      maxLineBytes: s.maxLineBytes,
      maxHeaderBytes: s.maxHeaderBytes,
      signal: stop.signal,
      onProgress: armIdle,
      closedError: (_received, seen) =>
        new ParseError(seen === 0 ? 'the connection closed before the upgrade response arrived' : `the connection closed inside the upgrade response head (after ${seen} bytes)`),
      pause: true,
    });
    if (!stop.signal.aborted) {
      if (socket.writableNeedDrain && s.writeIdle > 0) {
        writeTimer = setTimeout(timeout(s.writeIdle, 'writeIdleTimeout: the request was not taken'), s.writeIdle);
        socket.once('drain', onDrain);
      }
      armIdle();
    }
    const got = await answer;
    const response = new Response(got.status, nobody, {
      headers: got.headers,
      copyHeaders: false,
      reason: got.reason,
      protoMinor: got.versionMinor,
      close: got.status !== 101,
      request,
    });
    response.url = request.url;
    return { response, head: got.rest };
  } catch (err) {
    if (s.owned) socket.destroy();
    throw err;
  } finally {
    if (headTimer !== null) clearTimeout(headTimer);
    if (idleTimer !== null) clearTimeout(idleTimer);
    if (deadlineTimer !== null) clearTimeout(deadlineTimer);
    if (writeTimer !== null) clearTimeout(writeTimer);
    socket.removeListener('drain', onDrain);
    removeCancel();
  }
}
