/**
 * The `WebSockets` namespace (the reference's `HTTP.WebSockets`): `open`, `listen`,
 * `upgrade`, `isUpgrade`, `send`, `receive`, `close`, `ping`, `pong`, `serverAddr`,
 * `forceClose`, and the `WebSocket` type with its errors.
 */
import { ArgumentError } from '../../kernel/index.js';
import { WebSocket, type Message } from './websocket.js';

export { open } from './client.js';
export { listen, upgrade, serverAddr, forceClose } from './server.js';
export { isUpgrade } from './handshake.js';
export { WebSocket, type Message } from './websocket.js';
export { WebSocketError, WebSocketHandshakeError } from './errors.js';
export type { WebSocketHandler } from './session.js';
export type { WebSocketOpenOptions, WebSocketListenOptions, WebSocketServerOptions, WebSocketLimits, CheckOrigin } from './options.js';

function check(ws: unknown, fn: string): WebSocket {
  if (!(ws instanceof WebSocket)) throw new ArgumentError(`WebSockets.${fn}(ws, …) takes a WebSocket`);
  return ws;
}

/** `ws.send(message)`: a string goes as a text frame, bytes as a binary frame. */
export function send(ws: WebSocket, message: Message): Promise<void> {
  return check(ws, 'send').send(message);
}

/** `ws.receive()`: the next message (string for text, Uint8Array for binary). */
export function receive(ws: WebSocket): Promise<Message> {
  return check(ws, 'receive').receive();
}

/** `ws.close(code, reason)`: the closing handshake; resolves once closed. */
export function close(ws: WebSocket, code = 1000, reason = ''): Promise<void> {
  return check(ws, 'close').close(code, reason);
}

/** `ws.ping(data)`: resolves when the pong arrives. */
export function ping(ws: WebSocket, data: string | Uint8Array = ''): Promise<void> {
  return check(ws, 'ping').ping(data);
}

/** `ws.pong(data)`: an unsolicited pong. */
export function pong(ws: WebSocket, data: string | Uint8Array = ''): Promise<void> {
  return check(ws, 'pong').pong(data);
}
