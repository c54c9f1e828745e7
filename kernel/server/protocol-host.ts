/**
 * The server as hooks and protocol plugins see it: the listener's facts ({@link ServerInfo}),
 * the host a protocol plugin runs its connections and exchanges through, and the wire: one
 * exchange on a connection, as the server's exchange pipeline drives it. Every protocol has
 * one (HTTP/1.1 in the kernel, HTTP/2 in its plugin): the request body comes from it, the
 * response goes out through it, and the pipeline above it runs hooks, handlers and error
 * answers the same way for all of them.
 */
import type { Duplex } from 'node:stream';
import type { Headers } from '../message/headers.js';
import type { Request } from '../message/request.js';
import type { PeerAddr } from './peer.js';

/** The server (listener) a connection or request belongs to, as hooks see it. */
export interface ServerInfo {
  /** True for a TLS listener. */
  readonly tls: boolean;
  /** The `serve`/`listen` options as given (checked); plugins read their own keys, those they declare with `definePlugin({ serverOptions })`. */
  readonly options: Readonly<Record<string, unknown>>;
}

/** The server's limits and timeouts (ms, 0 = off) as a protocol plugin applies them. */
export interface ServerLimits {
  /** Largest request header block. */
  readonly maxHeaderBytes: number;
  /** Largest request body a request handler gets buffered (0 = unlimited; the kernel enforces it). */
  readonly maxBodyBytes: number;
  /** Limit for receiving a request head. */
  readonly readHeaderTimeout: number;
  /** Limit for receiving a request body. */
  readonly readTimeout: number;
  /** Limit for the peer to take written response bytes. */
  readonly writeTimeout: number;
  /** Limit for a connection without exchanges in flight. */
  readonly idleTimeout: number;
}

/** A connection a protocol plugin serves, as the server's `close()`/`forceClose()` reach it. */
export interface ProtocolConnection {
  /** Graceful close: take no new exchanges (HTTP/2: GOAWAY), let those in flight finish, then close. */
  shutdown(): void;
  /** Forced close: drop the connection and every exchange on it now (`forceClose()`, or `close()` past its grace period). */
  destroy(): void;
}

/**
 * The server as a protocol plugin sees it: `ProtocolInfo.host` in `server.protocol`,
 * `UpgradeInfo.host` in `server.onUpgrade`, and what `stream.upgrade()` returns.
 */
export interface ProtocolHost {
  /** The listener. */
  readonly info: ServerInfo;
  /** Limits and timeouts of the server. */
  readonly limits: ServerLimits;
  /** True once `close()` or `forceClose()` was called. */
  readonly closing: boolean;
  /**
   * Registers a connection with the server's lifecycle. Returns false when the server is
   * already closing: the plugin then shuts the connection down at once.
   */
  addConnection(conn: ProtocolConnection): boolean;
  /** The connection is closed: the server stops counting it (a graceful `close()` resolves once none is left). */
  removeConnection(conn: ProtocolConnection): void;
  /**
   * How to end an upgraded `socket` politely when the server closes (a WebSocket: a close
   * frame 1001, going away). The server counts every upgraded socket until it closes: a
   * graceful `close()` waits for it up to `closeGracePeriod`, then runs `step` (the socket
   * must close within a short bound, else it is dropped; without a step it is dropped at once),
   * and `forceClose()` drops it without running `step`. Call it from the `server.onUpgrade`
   * tap that takes the socket, or after `stream.upgrade()`.
   */
  onGoingAway(socket: Duplex, step: () => void): void;
  /**
   * Runs one exchange through the server's pipeline. `request.body` is `nobody` when the
   * request has no body (HTTP/2: END_STREAM on its HEADERS), else null (read from `wire`), or
   * the body already read. Resolves when the exchange is over; never rejects (failures are
   * reported and answered).
   */
  runExchange(request: Request, wire: ExchangeWire): Promise<void>;
  /** Reports an error to the server's `onError`. */
  reportError(error: unknown, request: Request | null): void;
}

/** What `server.onUpgrade` taps know about an upgrade request's connection and server. */
export interface UpgradeInfo {
  /** The bytes read past the request head. A tap that claims the socket owns them. */
  readonly head: Uint8Array;
  /** The listener. */
  readonly server: ServerInfo;
  /**
   * The server's lifecycle for a socket the tap takes: `host.onGoingAway(socket, step)` says how
   * to end it politely when the server closes; a protocol served on it runs its exchanges with
   * `host.runExchange` (`Upgrade: h2c`).
   */
  readonly host: ProtocolHost;
}

/**
 * The response side of one exchange: the pipeline (or a `Stream`) decides status, headers,
 * length and trailers, the wire frames them for its protocol and puts them on the connection.
 * Each method returns a Promise when the peer asks to wait (flow control, a full socket).
 */
export interface ResponseWire {
  /** The protocol's ALPN name, such as `h2` (what `stream.protocol` and `exchange.protocol` say). */
  readonly protocol: string;
  /**
   * Sends the response head. `contentLength` is the body's length, -1 when unknown; `end`:
   * nothing follows (no body, no trailers). The wire drops the framing and connection-specific
   * fields `headers` may hold (Content-Length, Transfer-Encoding, Connection, …) and adds its
   * own; it must not change `headers` (a Response may be answered to many requests).
   * `trailers`: false when the caller knows none will follow the body (default true: the
   * wire must be ready to send them at `end`). `reason` (a reason phrase) and `close` (the
   * connection closes after this response) matter to protocols that have them (HTTP/1.1);
   * others ignore them.
   */
  head(status: number, headers: Headers, contentLength: number, end: boolean, trailers?: boolean, reason?: string, close?: boolean): void;
  /**
   * Sends body bytes (a string is UTF-8); `end` ends the body with them (no trailers follow).
   * The Promise resolves once the peer's flow control lets more follow. Without `end` the
   * caller may reuse `bytes` once it resolves (the wire copies what it keeps), unless it gives
   * them away (`owned`); with `end` the wire may keep them (a response's own body).
   */
  data(bytes: Uint8Array | string, end: boolean, owned?: boolean): Promise<void> | undefined;
  /**
   * Resolves once the wire would take a chunk without waiting (a Promise when the peer's flow
   * control holds it back): a producer of body bytes waits here before it reads or makes them.
   */
  ready(): Promise<void> | undefined;
  /** Ends the body, sending `trailers` when there are any. */
  end(trailers: Headers | null): Promise<void> | undefined;
  /** Abandons a response whose head went out (HTTP/2: RST_STREAM): the peer sees it incomplete. */
  abort(error: unknown): void;
  /**
   * False while the wire still holds all of the response it was given (nothing went out): the
   * exchange can then still be answered with a whole other response, whose `head` replaces
   * what is held. HTTP/1.1 holds a stream's fixed-length response up to `HOLD_BYTES`, so a
   * handler that fails before then still gets a clean 500; such a wire keeps even a head sent
   * with `end` until `end()` is called (after `end`, `end()` does nothing on any wire). Absent:
   * the head goes out with `head`.
   */
  readonly committed?: boolean;
  /** Bytes of a streamed response body read at a time for this wire (default 16384, HTTP/2's frame size). */
  readonly bodyChunk?: number;
  /**
   * Read right after a `data(bytes, false, true)`: true when the wire no longer holds `bytes`
   * (it copied them, or its transport took them at once), so the caller may read into that
   * buffer again instead of making a new one. Absent: never.
   */
  readonly reusable?: boolean;
}

/**
 * One exchange on a connection, as the server's pipeline drives it: the request body comes
 * from it, the response goes out through it ({@link ResponseWire}).
 */
export interface ExchangeWire extends ResponseWire {
  /** True while the response can still be written (false once the peer reset the stream or closed the connection). */
  readonly writable: boolean;
  /**
   * The error the request body failed with (`TimeoutError` for `readTimeout`: answered 408;
   * a `ProtocolError` with a `limit`: 413/431), or null. A handler that throws it gets that
   * status instead of 500.
   */
  readonly bodyError: unknown;
  /** The client's address. */
  peerAddr(): PeerAddr;
  /** The next chunk of the request body, or null at its end. */
  readBody(): Promise<Uint8Array | null>;
  /** The rest of the request body is not wanted (HTTP/2: the stream's read side is closed; HTTP/1.1: the connection closes after the exchange). */
  discardBody(): void;
  /** Sends `100 Continue` when the request asked for it and it was not sent yet. */
  sendContinue(): void;
  /**
   * Hands the connection's socket to the caller (`stream.upgrade()`; HTTP/1.1 only, absent on
   * protocols that multiplex): paused, without the connection's listeners, with the bytes
   * already read past the request head.
   */
  takeSocket?(): { socket: Duplex } & UpgradeInfo;
}
