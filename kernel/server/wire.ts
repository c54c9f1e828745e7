/**
 * The wire: one exchange on a connection, as the server's exchange pipeline drives it. Every
 * protocol has one (HTTP/1.1 in the kernel, HTTP/2 in its plugin): the request body comes
 * from it, the response goes out through it, and the pipeline above it runs hooks, handlers
 * and error answers the same way for all of them.
 */
import type { Duplex } from 'node:stream';
import type { Headers } from '../message/headers.js';
import type { PeerAddr } from './peer.js';

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
  takeSocket?(): { socket: Duplex; head: Uint8Array };
}
