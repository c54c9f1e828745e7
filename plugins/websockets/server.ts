/**
 * Server side: `listen` (a server whose every connection is a WebSocket), `upgrade` (turn an
 * in-flight stream into one), `serverAddr` and `forceClose`.
 *
 * A `listen` server is a kernel stream server. With the `websockets` plugin on its kernel
 * (the default), upgrades are taken in `server.onUpgrade`, before `onRequest`; without it, or
 * for requests the tap leaves alone, its stream handler runs `upgrade(stream)`, which answers
 * anything that is not a WebSocket handshake with 426.
 */
import process from 'node:process';
import { ArgumentError, PeerAddr, Server, Stream } from '../../kernel/index.js';
import { negotiate } from './handshake.js';
import { resolveServerOptions, SERVER_WS_KEYS, type ResolvedServerOptions, type WebSocketListenOptions, type WebSocketServerOptions } from './options.js';
import { defaultKernel, kListen, type ListenEntry } from './plugin.js';
import { serveSession, type WebSocketHandler } from './session.js';
import { loadWs } from './ws-lib.js';

function checkHandler(handler: unknown, where: string): void {
  if (typeof handler !== 'function') throw new ArgumentError(`${where}: handler must be a function (ws) => …, got ${typeof handler}`);
}

/** Options objects `listen` resolved itself (frozen), passed to `upgrade` as they are. */
const resolved = new WeakSet<object>();

/**
 * Upgrades an in-flight HTTP/1.1 server stream to a WebSocket and runs `handler` on it;
 * resolves once the handler returned and the connection closed (1000; 1011 when the handler
 * threw, whose error is then rethrown). Call it before writing any of the response. A request
 * that is not a valid handshake is answered instead (426, 400, or 403 from `checkOrigin`)
 * and the promise resolves without running `handler`. Throws `ArgumentError` over HTTP/2
 * (RFC 8441 WebSockets are not supported) or once the response has started.
 */
export async function upgrade(stream: Stream, handler: WebSocketHandler, options?: WebSocketServerOptions): Promise<void> {
  if (!(stream instanceof Stream)) throw new ArgumentError('WebSockets.upgrade(stream, handler, options): stream must be a server Stream');
  checkHandler(handler, 'WebSockets.upgrade');
  if (stream.protocol !== 'http/1.1') {
    throw new ArgumentError(`WebSockets.upgrade: cannot upgrade a ${stream.protocol} stream: WebSockets over HTTP/2 (RFC 8441) are not supported; serve them over HTTP/1.1`);
  }
  if (stream.headersSent) throw new ArgumentError('WebSockets.upgrade: the response has already started; upgrade before writing anything');
  const o = options !== undefined && resolved.has(options) ? (options as ResolvedServerOptions) : resolveServerOptions(options, 'WebSockets.upgrade');
  const mod = await loadWs();
  const request = stream.message;
  const n = await negotiate(mod, request, o);
  if (!n.ok) {
    stream.setStatus(n.status);
    for (const [k, v] of n.headers) stream.setHeader(k, v);
    stream.setHeader('Content-Type', 'text/plain; charset=utf-8');
    await stream.write(`${n.message}\n`);
    return;
  }
  const { socket, head, host } = stream.upgrade();
  // The handler's own error rejects this call (a peer that broke the protocol or dropped the
  // connection is not the handler's fault: serveSession drops that).
  await serveSession(socket, head, request, n, o, handler, rethrow, host);
}

function rethrow(err: unknown): never {
  throw err;
}

function defaultReport(err: unknown): void {
  const what = err instanceof Error ? (err.stack ?? err.message) : String(err);
  process.stderr.write(`switchyard websocket handler error: ${what}\n`);
}

/**
 * Starts a server on which every connection is a WebSocket running `handler`, and resolves
 * once it listens. Options: the WebSocket ones (`compress`, `subprotocols`, `checkOrigin`,
 * `maxFrameSize`, `maxFragmentation`) and the server's (`host`, `port`, `listenAny`, `tls`,
 * timeouts, `kernel`, `onError`, which gets handler errors). Requests that are not WebSocket
 * handshakes get 426. Stop it with `server.close()`, which lets live WebSockets go on for the
 * server's `closeGracePeriod` and then closes them with 1001 (going away), or
 * {@link forceClose}.
 */
export async function listen(handler: WebSocketHandler, options: WebSocketListenOptions = {}): Promise<Server> {
  checkHandler(handler, 'WebSockets.listen');
  if (typeof options !== 'object' || options === null) throw new ArgumentError('WebSockets.listen(handler, options): options must be an object');
  const wsOptions: Record<string, unknown> = {};
  const serverOptions: Record<string | symbol, unknown> = {};
  for (const [k, v] of Object.entries(options)) {
    if ((SERVER_WS_KEYS as readonly string[]).includes(k)) wsOptions[k] = v;
    else serverOptions[k] = v;
  }
  const o = resolveServerOptions(wsOptions, 'WebSockets.listen');
  const onError = options.onError;
  const report = onError !== undefined ? (err: unknown) => onError(err, null) : defaultReport;
  // The plugin's onUpgrade tap finds this server's handler in its options (ServerInfo.options).
  const entry: ListenEntry = { handler, options: o, report };
  serverOptions[kListen] = entry;
  await loadWs();
  const server = new Server({
    ...serverOptions,
    kernel: options.kernel ?? defaultKernel(),
    stream: true,
    handler: (stream: Stream) => upgrade(stream, handler, o as WebSocketServerOptions),
  });
  resolved.add(o);
  await server.listen();
  return server;
}

/** The address a server listens on (`String(addr)` is `host:port`). */
export function serverAddr(server: Server): PeerAddr {
  if (!(server instanceof Server)) throw new ArgumentError('serverAddr(server) takes a Server');
  return new PeerAddr(server.address, server.port);
}

/**
 * Stops the server at once: no more connections, and every open connection closed, the
 * WebSockets it upgraded included (their peers see 1006). Resolves once stopped. The same as
 * `server.forceClose()`, which knows every connection, upgraded ones too.
 */
export async function forceClose(server: Server): Promise<void> {
  if (!(server instanceof Server)) throw new ArgumentError('forceClose(server) takes a Server');
  await server.forceClose();
}
