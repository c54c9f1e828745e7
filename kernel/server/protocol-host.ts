/**
 * The server as hooks and protocol plugins see it: the listener's facts ({@link ServerInfo}),
 * and the host a protocol plugin runs its connections and exchanges through.
 */
import type { Duplex } from 'node:stream';
import type { Request } from '../message/request.js';
import type { ExchangeWire } from './wire.js';

/** The server (listener) a connection or request belongs to, as hooks see it. */
export interface ServerInfo {
  /** True for a TLS listener. */
  readonly tls: boolean;
  /** Whether h2c (prior knowledge and `Upgrade: h2c`) may be served on this plain listener. */
  readonly allowH2c: boolean;
  /** The `serve`/`listen` options as given; plugins read their own keys (`http2Settings`, …). */
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
 * The server as a protocol plugin sees it: `ProtocolInfo.host` in `server.protocol`, and
 * {@link getProtocolHost} for a socket taken in `server.onUpgrade`.
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
