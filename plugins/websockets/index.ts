/**
 * The WebSockets plugin and API: WebSocket clients (`ws://`, `wss://`, or over a caller's
 * byte stream), servers, and upgrades of in-flight server streams, framed by the plugin's own
 * codec (`FrameConnection`), with permessage-deflate (RFC 7692) on request (negotiated through `ws`).
 *
 * - `websockets`: the plugin; its `server.onUpgrade` tap takes the upgrades of
 *   `WebSockets.listen` servers before `onRequest`.
 * - `WebSockets`: the namespace of the reference's `HTTP.WebSockets` (`open`, `listen`,
 *   `upgrade`, `isUpgrade`, `send`, `receive`, `close`, `ping`, `pong`, `serverAddr`,
 *   `forceClose`).
 * - `WebSocket`, `WebSocketError`, `WebSocketHandshakeError`: the connection and its errors.
 */
export { websockets, setDefaultWebSocketKernel } from './plugin.js';
export * as WebSockets from './api.js';
export { WebSocket, type Message as WebSocketMessage, SEND_HIGH_WATER, RECEIVE_HIGH_WATER } from './websocket.js';
export { WebSocketError, WebSocketHandshakeError } from './errors.js';
export { DEFAULT_MAX_FRAME_SIZE, DEFAULT_MAX_FRAGMENTATION } from './options.js';
export type { WebSocketHandler } from './session.js';
export type { WebSocketOpenOptions, WebSocketListenOptions, WebSocketServerOptions, WebSocketLimits, CheckOrigin } from './options.js';
