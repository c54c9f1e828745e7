/**
 * One WebSocket session: answer the handshake on a socket the kernel handed over (101, or the
 * refusal), hand the socket to the frame codec (ws-lib's attachSocket), and run the handler
 * to completion, closing the connection when it returns (1000) or throws (1011).
 */
import { Buffer } from 'node:buffer';
import type { Duplex } from 'node:stream';
import { socketPeer, Response, type Headers, type Request } from '../../kernel/index.js';
import { serializeResponseHead, type ProtocolHost } from '../../kernel/protocol.js';
import { WebSocketError } from './errors.js';
import type { Negotiation } from './handshake.js';
import type { ResolvedServerOptions } from './options.js';
import { WebSocket } from './websocket.js';
import { attachSocket } from './ws-lib.js';

/** What runs on each connection: reads and writes the `WebSocket`; the connection closes when it returns. */
export type WebSocketHandler<T = unknown> = (ws: WebSocket) => T | Promise<T>;

/**
 * Runs `handler(ws)`, then closes: 1000 when it returned, 1011 when it threw (and rethrows).
 * Resolves to the handler's result once the connection is closed.
 */
export async function runHandler<T>(ws: WebSocket, handler: WebSocketHandler<T>): Promise<T> {
  let result: T;
  try {
    result = await handler(ws);
  } catch (err) {
    if (!ws.isClosed) await ws.close(1011, 'handler error');
    else await ws.closed();
    throw err;
  }
  await ws.close(1000);
  return result;
}

/** Writes a refusal (status, text body, `Connection: close`) on a socket we own, then ends it. */
export function writeRefusal(socket: Duplex, status: number, message: string, headers: Headers): void {
  const body = Buffer.from(`${message}\n`, 'utf8');
  headers.set('Content-Type', 'text/plain; charset=utf-8');
  headers.set('Connection', 'close');
  socket.on('error', () => {});
  socket.end(Buffer.concat([Buffer.from(serializeResponseHead(status, '', headers, body.length), 'latin1'), body]));
  socket.resume();
}

/**
 * Answers an accepted handshake with 101 on `socket` (handed over by the kernel: paused, our
 * listeners only), gives it to the frame codec and runs `handler`. Resolves when the connection is closed;
 * a handler error goes to `report` (a peer that closed abnormally is not an error here). `host`
 * is the server that handed the socket over, which ends the session when it closes.
 */
export async function serveSession(
  socket: Duplex,
  head: Uint8Array,
  request: Request,
  n: Extract<Negotiation, { ok: true }>,
  o: ResolvedServerOptions,
  handler: WebSocketHandler,
  report: (err: unknown) => void,
  host: ProtocolHost,
): Promise<void> {
  const response = new Response(101, null, { headers: n.headers, copyHeaders: false, request });
  socket.write(serializeResponseHead(101, '', n.headers, 'none'), 'latin1');
  const raw = attachSocket(socket, head, { isServer: true, deflate: n.deflate, maxPayload: o.maxFrameSize, maxFragments: o.maxFragmentation });
  const ws = new WebSocket(raw, { isServer: true, request, response, subprotocol: n.protocol, peer: socketPeer(socket) });
  // A server closing gracefully ends the session with 1001 once its grace period is over.
  host.onGoingAway(socket, () => void ws.close(1001, 'server going away'));
  try {
    await runHandler(ws, handler);
  } catch (err) {
    if (!(err instanceof WebSocketError)) report(err);
  }
}
