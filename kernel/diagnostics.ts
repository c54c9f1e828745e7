/**
 * The kernel's `node:diagnostics_channel` channels: every channel the client and the server
 * publish to, created once here, and the shape of each message. A publishing site checks
 * `hasSubscribers` first and builds no message when nobody listens, so a process that
 * subscribes to nothing pays one field read per site.
 *
 * Subscribe by name (`diagnostics_channel.subscribe('switchyard:server:request:start', fn)`)
 * or through {@link channels}; docs/diagnostics.md lists when each fires.
 */
import diagnosticsChannel from 'node:diagnostics_channel';
import type { Channel, TracingChannel } from 'node:diagnostics_channel';
import type { Socket } from 'node:net';
import type { Request } from './message/request.js';
import type { Response } from './message/response.js';
import type { ServerInfo } from './server/protocol-host.js';

// ---------------------------------------------------------------------------------------
// Client messages.

/**
 * The context object of the `switchyard:client:request` TracingChannel: one per client
 * call (`client.request(...)`, `HTTP.get(...)`, …), retries and redirect hops inside it.
 * The same object reaches `start`, `end`, `asyncStart`, `asyncEnd` and `error`.
 */
export interface ClientRequestContext {
  /** The request as the call made it (before `onRequest` taps and redirect hops). */
  readonly request: Request;
  /** Its URL. */
  readonly url: string;
  /** The final response: set before `asyncStart` when the call resolves. */
  result?: Response;
  /** What the call threw or rejected with: set before `error`. */
  error?: unknown;
}

/** `switchyard:client:request:create`: an attempt is about to pick a connection. */
export interface ClientRequestCreateMessage {
  /**
   * The attempt's request after the `onRequest` taps. A subscriber may still add headers to
   * `request.headers`: they are sent.
   */
  readonly request: Request;
  /** Its URL. */
  readonly url: string;
  /** 1 for the first attempt, 2 for the first retry, …; a redirect hop keeps the number of the attempt it belongs to. */
  readonly attempt: number;
}

/** The connection a client request went out on, as `switchyard:client:request:headers` tells it. */
export interface ClientConnectionInfo {
  /** `http/1.1` or `h2`. */
  readonly protocol: string;
  /** True when the connection carried an earlier exchange, or an HTTP/2 connection is shared with one. */
  readonly reused: boolean;
  /** Local address of the socket, or `''` when unknown (a tunnel). */
  readonly localAddress: string;
  /** Local port, or 0. */
  readonly localPort: number;
  /** Peer address (the proxy's, through a proxy), or `''`. */
  readonly remoteAddress: string;
  /** Peer port, or 0. */
  readonly remotePort: number;
}

/** `switchyard:client:request:headers`: the request head was handed to the connection. */
export interface ClientRequestHeadersMessage {
  /** The request sent. */
  readonly request: Request;
  /** The connection it went out on. */
  readonly connection: ClientConnectionInfo;
}

/** `switchyard:client:response:headers`: a response head arrived (body unread). */
export interface ClientResponseHeadersMessage {
  /** The request it answers. */
  readonly request: Request;
  /** The response. */
  readonly response: Response;
  /**
   * From `request:create` of this attempt to the head, ms (`performance.now()` based). NaN
   * when nobody listened to `response:headers` or `response:end` at `request:create` (a
   * subscriber that attached later in the attempt).
   */
  readonly elapsedMs: number;
}

/** `switchyard:client:response:end`: the response body was read to its end. */
export interface ClientResponseEndMessage {
  /** The request it answers. */
  readonly request: Request;
  /** The response. */
  readonly response: Response;
  /** Body bytes as received on the wire (before any decompression, after de-chunking). */
  readonly bytes: number;
  /** From `request:create` of this attempt to the end of the body, ms; NaN as for `response:headers`. */
  readonly elapsedMs: number;
}

/** `switchyard:client:request:error`: an attempt failed (connect, write, read, timeout, abort). */
export interface ClientRequestErrorMessage {
  /** The attempt's request. */
  readonly request: Request;
  /** The failure. */
  readonly error: unknown;
}

/** `switchyard:client:retry`: the retries plugin scheduled another attempt. */
export interface ClientRetryMessage {
  /** The request of the attempt that failed. */
  readonly request: Request;
  /** The attempt that failed (1 for the first). */
  readonly attempt: number;
  /** Wait before the next attempt, ms. */
  readonly delayMs: number;
  /** Why it retries (`status 503`, the error's code, …). */
  readonly reason: string;
  /** The failure, or null for a retryable status. */
  readonly error: unknown;
  /** The status that is retried, or 0 when the attempt threw. */
  readonly status: number;
}

/** `switchyard:client:redirect`: the redirects plugin follows a redirect. */
export interface ClientRedirectMessage {
  /** The request that was answered with the redirect. */
  readonly request: Request;
  /** The redirect response (its body is discarded). */
  readonly response: Response;
  /** The absolute URL followed. */
  readonly location: string;
  /** Redirects followed so far in this call, this one included (1 for the first). */
  readonly hop: number;
}

/** `switchyard:client:connection:open`: a new client connection is ready for its first exchange. */
export interface ClientConnectionOpenMessage {
  /** `scheme://host:port` of the pool it joins. */
  readonly origin: string;
  /** `http/1.1` or `h2`. */
  readonly protocol: string;
  /** Local address, or `''` when unknown. */
  readonly localAddress: string;
  /** Local port, or 0. */
  readonly localPort: number;
  /** Peer address (the proxy's, through a proxy), or `''`. */
  readonly remoteAddress: string;
  /** Peer port, or 0. */
  readonly remotePort: number;
  /** From starting to connect to the session being ready (TCP, proxy, TLS, protocol), ms. */
  readonly connectMs: number;
}

/** `switchyard:client:connection:reuse`: an exchange takes a pooled connection. */
export interface ClientConnectionReuseMessage {
  /** `scheme://host:port` of the pool. */
  readonly origin: string;
  /** `http/1.1` or `h2`. */
  readonly protocol: string;
}

// ---------------------------------------------------------------------------------------
// Server messages.

/** `switchyard:server:connection`: a TCP connection was accepted (before TLS). */
export interface ServerConnectionMessage {
  /** The accepted socket. */
  readonly socket: Socket;
  /** The listener. */
  readonly server: ServerInfo;
}

/**
 * The context object of the `switchyard:server:request` TracingChannel: one per exchange the
 * server's pipeline runs (HTTP/1.1 and HTTP/2 alike). `start` fires as the pipeline takes the
 * request, before the `onRequest` taps and the request or stream handler, which run inside
 * `start.runStores` (so an `AsyncLocalStorage` bound to `start` is the handler's context);
 * `end` when that synchronous part returns; `asyncStart` and `asyncEnd` when the exchange is
 * over (its response written, or abandoned). `error` fires before `asyncStart` when the
 * handler, a tap or the response failed (the error the server reports to `onError`).
 */
export interface ServerRequestContext {
  /** The request. */
  readonly request: Request;
  /** The response as its head went out (status, reason, headers; see `response:headers`), set before `asyncStart`; absent when none was written. */
  result?: unknown;
  /** The first error reported about the exchange: set before `error`. */
  error?: unknown;
}

/** `switchyard:server:request:start`: a request head arrived. */
export interface ServerRequestStartMessage {
  /** The request. */
  readonly request: Request;
  /** The listener. */
  readonly server: ServerInfo;
}

/** `switchyard:server:response:headers`: the response head is final (right after `onResponseHead`) and was handed to the connection. */
export interface ServerResponseHeadersMessage {
  /** The request it answers. */
  readonly request: Request;
  /**
   * The response as its head was written: status, reason and headers as the connection got
   * them (framing fields such as Content-Length are the protocol's to add), `contentLength`
   * the body's length or -1. A Response made for the message: its body is null, not the
   * handler's.
   */
  readonly response: Response;
}

/** `switchyard:server:response:finish`: the last byte of the response was handed to the socket (or stream). */
export interface ServerResponseFinishMessage {
  /** The request it answers. */
  readonly request: Request;
  /** The response, as in `response:headers`. */
  readonly response: Response;
  /** Body bytes written (the payload, without chunk framing). */
  readonly bytes: number;
  /**
   * From `request:start` to now, ms (`performance.now()` based). Only exchanges that arrived
   * while some server request channel had a subscriber are reported (a later subscriber sees
   * the exchanges that arrive after it), so it is always a number.
   */
  readonly elapsedMs: number;
}

/** `switchyard:server:error`: a handler or the pipeline failed, or a connection saw an error. */
export interface ServerErrorMessage {
  /** The request it belongs to, or null for a connection-level error. */
  readonly request: Request | null;
  /** The failure. */
  readonly error: unknown;
}

/** `switchyard:server:upgrade`: an `onUpgrade` tap took a connection. */
export interface ServerUpgradeMessage {
  /** The upgrade request. */
  readonly request: Request;
  /** The protocol asked for (the `Upgrade` header, e.g. `websocket`, `h2c`). */
  readonly protocol: string;
}

// ---------------------------------------------------------------------------------------
// The channels.

/** A channel whose messages have type `M` (a `node:diagnostics_channel` `Channel`). */
export interface DiagnosticChannel<M> extends Channel {
  /** Sends `message` to the subscribers; check `hasSubscribers` first. */
  publish(message: M): void;
}

/** The channel names, by the key of {@link channels}. */
export const channelNames = Object.freeze({
  clientRequest: 'switchyard:client:request',
  clientRequestCreate: 'switchyard:client:request:create',
  clientRequestHeaders: 'switchyard:client:request:headers',
  clientResponseHeaders: 'switchyard:client:response:headers',
  clientResponseEnd: 'switchyard:client:response:end',
  clientRequestError: 'switchyard:client:request:error',
  clientRetry: 'switchyard:client:retry',
  clientRedirect: 'switchyard:client:redirect',
  clientConnectionOpen: 'switchyard:client:connection:open',
  clientConnectionReuse: 'switchyard:client:connection:reuse',
  serverConnection: 'switchyard:server:connection',
  serverRequest: 'switchyard:server:request',
  serverRequestStart: 'switchyard:server:request:start',
  serverResponseHeaders: 'switchyard:server:response:headers',
  serverResponseFinish: 'switchyard:server:response:finish',
  serverError: 'switchyard:server:error',
  serverUpgrade: 'switchyard:server:upgrade',
} as const);

function ch<M>(name: string): DiagnosticChannel<M> {
  return diagnosticsChannel.channel(name) as DiagnosticChannel<M>;
}

/**
 * The TracingChannel `name`. Node 20 before 20.13 has no `TracingChannel.hasSubscribers`: there
 * the channel gets one that asks its five channels, so publishing sites check it the same way.
 */
function tracing<C extends object>(name: string): TracingChannel<unknown, C> {
  const tc = diagnosticsChannel.tracingChannel<unknown, C>(name);
  if (typeof (tc as { hasSubscribers?: unknown }).hasSubscribers !== 'boolean') {
    Object.defineProperty(tc, 'hasSubscribers', {
      get: () => tc.start.hasSubscribers || tc.end.hasSubscribers || tc.asyncStart.hasSubscribers || tc.asyncEnd.hasSubscribers || tc.error.hasSubscribers,
    });
  }
  return tc;
}

/**
 * Every channel the kernel publishes to. `clientRequest` and `serverRequest` are
 * TracingChannels (`tracing:<name>:start|end|asyncStart|asyncEnd|error`); the rest are plain
 * channels. The retries and redirects plugins publish `clientRetry` and `clientRedirect`.
 */
export const channels = Object.freeze({
  /** Around one whole client call; context {@link ClientRequestContext}. */
  clientRequest: tracing<ClientRequestContext>(channelNames.clientRequest),
  /** {@link ClientRequestCreateMessage}. */
  clientRequestCreate: ch<ClientRequestCreateMessage>(channelNames.clientRequestCreate),
  /** {@link ClientRequestHeadersMessage}. */
  clientRequestHeaders: ch<ClientRequestHeadersMessage>(channelNames.clientRequestHeaders),
  /** {@link ClientResponseHeadersMessage}. */
  clientResponseHeaders: ch<ClientResponseHeadersMessage>(channelNames.clientResponseHeaders),
  /** {@link ClientResponseEndMessage}. */
  clientResponseEnd: ch<ClientResponseEndMessage>(channelNames.clientResponseEnd),
  /** {@link ClientRequestErrorMessage}. */
  clientRequestError: ch<ClientRequestErrorMessage>(channelNames.clientRequestError),
  /** {@link ClientRetryMessage}. */
  clientRetry: ch<ClientRetryMessage>(channelNames.clientRetry),
  /** {@link ClientRedirectMessage}. */
  clientRedirect: ch<ClientRedirectMessage>(channelNames.clientRedirect),
  /** {@link ClientConnectionOpenMessage}. */
  clientConnectionOpen: ch<ClientConnectionOpenMessage>(channelNames.clientConnectionOpen),
  /** {@link ClientConnectionReuseMessage}. */
  clientConnectionReuse: ch<ClientConnectionReuseMessage>(channelNames.clientConnectionReuse),
  /** {@link ServerConnectionMessage}. */
  serverConnection: ch<ServerConnectionMessage>(channelNames.serverConnection),
  /** Around the handler call; context {@link ServerRequestContext}. */
  serverRequest: tracing<ServerRequestContext>(channelNames.serverRequest),
  /** {@link ServerRequestStartMessage}. */
  serverRequestStart: ch<ServerRequestStartMessage>(channelNames.serverRequestStart),
  /** {@link ServerResponseHeadersMessage}. */
  serverResponseHeaders: ch<ServerResponseHeadersMessage>(channelNames.serverResponseHeaders),
  /** {@link ServerResponseFinishMessage}. */
  serverResponseFinish: ch<ServerResponseFinishMessage>(channelNames.serverResponseFinish),
  /** {@link ServerErrorMessage}. */
  serverError: ch<ServerErrorMessage>(channelNames.serverError),
  /** {@link ServerUpgradeMessage}. */
  serverUpgrade: ch<ServerUpgradeMessage>(channelNames.serverUpgrade),
});

/**
 * True when someone listens to a server channel published per exchange (`request`,
 * `request:start`, `response:headers`, `response:finish`): the pipeline then runs the exchange
 * on an observing wire. A few field reads, made once per exchange.
 */
export function serverObserved(): boolean {
  return channels.serverRequestStart.hasSubscribers || channels.serverResponseHeaders.hasSubscribers || channels.serverResponseFinish.hasSubscribers || channels.serverRequest.hasSubscribers;
}

/**
 * True when someone listens to a client channel published by the attempt loop (`request`,
 * `request:create`, `request:headers`, `response:headers`, `response:end`, `request:error`,
 * `connection:reuse`): the call then takes the attempt loop rather than the shortcuts that
 * skip it. A few field reads, made once per call.
 */
export function clientObserved(): boolean {
  return (
    channels.clientRequestCreate.hasSubscribers ||
    channels.clientResponseHeaders.hasSubscribers ||
    channels.clientResponseEnd.hasSubscribers ||
    channels.clientRequestHeaders.hasSubscribers ||
    channels.clientRequestError.hasSubscribers ||
    channels.clientConnectionReuse.hasSubscribers ||
    channels.clientRequest.hasSubscribers
  );
}

/** Publishes `server:upgrade` for `request`, whose connection was just taken over, when someone listens. */
export function publishUpgrade(request: Request): void {
  const ch = channels.serverUpgrade;
  if (ch.hasSubscribers) ch.publish({ request, protocol: request.headers.get('Upgrade') ?? '' });
}
