/**
 * Errors of the WebSockets plugin: a connection that closed (with its close code and reason),
 * and a handshake the peer refused or got wrong.
 */
import { HTTPError, type Response } from '../../kernel/index.js';

/** Close codes that end a connection normally: iteration stops quietly on them. */
export const NORMAL_CLOSE_CODES: ReadonlySet<number> = new Set([1000, 1001, 1005]);

/**
 * The connection is closed: thrown by `receive`, `send` and `ping` once it is, and by
 * iteration when it closed abnormally. `closeCode` is the close code received (1005 when the
 * close frame carried none), the one sent when this end failed the connection because the
 * peer broke the protocol (1002, 1007, 1008, 1009; the violation is the `cause`), or 1006
 * when the connection dropped without a close frame.
 */
export class WebSocketError extends HTTPError {
  /** Always `SWY_ERR_WEBSOCKET`. */
  readonly code = 'SWY_ERR_WEBSOCKET';
  /** The close code (RFC 6455 §7.4): 1000 normal, 1002 protocol error, 1007 bad data, 1009 too big, 1006 dropped, … */
  readonly closeCode: number;
  /** The close reason the peer sent (may be empty). */
  readonly reason: string;
  constructor(closeCode: number, reason: string, message?: string, options?: { cause?: unknown }) {
    super(message ?? `WebSocket closed with code ${closeCode}${reason !== '' ? ` (${reason})` : ''}`, options);
    this.closeCode = closeCode;
    this.reason = reason;
  }

  /** True for a normal closure (1000, 1001, or no code). */
  get isNormal(): boolean {
    return NORMAL_CLOSE_CODES.has(this.closeCode);
  }
}

/**
 * A WebSocket handshake failed on the client: the server answered something other than 101
 * (`status` says what; `response` is its head), or a 101 that breaks RFC 6455 (wrong
 * `Sec-WebSocket-Accept`, a subprotocol or extension that was not offered).
 */
export class WebSocketHandshakeError extends HTTPError {
  /** Always `SWY_ERR_WEBSOCKET_HANDSHAKE`. */
  readonly code = 'SWY_ERR_WEBSOCKET_HANDSHAKE';
  /** The status the server answered. */
  readonly status: number;
  /** The response head (its body is not read). */
  readonly response: Response;
  constructor(message: string, response: Response) {
    super(message);
    this.status = response.status;
    this.response = response;
  }
}
