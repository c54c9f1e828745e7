/**
 * The `websockets` plugin: one `server.onUpgrade` tap that takes WebSocket upgrades arriving
 * at a `WebSockets.listen` server straight off the connection (before `onRequest`), answers
 * the handshake and runs the server's handler. Upgrades for other servers, and requests that
 * are not WebSocket upgrades, are left alone (the tap returns nothing), so a stream handler
 * can still `WebSockets.upgrade(stream, …)` them, on a route or anywhere.
 *
 * The client side needs no tap: `WebSockets.open` runs the kernel's `client.connect` taps
 * (proxies) and `client.onUpgrade` taps through `upgradeRequest`.
 */
import type { Duplex } from 'node:stream';
import { createKernel, definePlugin, Stage, type Kernel, type Request, type UpgradeInfo } from '../../kernel/index.js';
import { isUpgrade, negotiate } from './handshake.js';
import type { ResolvedServerOptions } from './options.js';
import { serveSession, writeRefusal, type WebSocketHandler } from './session.js';
import { loadWs } from './ws-lib.js';

const NAME = 'websockets';

/** What the tap needs of a `WebSockets.listen` server: its handler, options and error reporter. */
export interface ListenEntry {
  readonly handler: WebSocketHandler;
  readonly options: ResolvedServerOptions;
  readonly report: (err: unknown) => void;
}

/**
 * @internal The server option under which `WebSockets.listen` gives its server the
 * {@link ListenEntry}; the tap reads it from `ServerInfo.options`. A symbol, so it is no option
 * name of the server's and none a caller can pass by accident.
 */
export const kListen: unique symbol = Symbol('switchyard.websockets.listen');

/** Claims an upgrade for a `WebSockets.listen` server; nothing for any other. */
async function claim(request: Request, socket: Duplex, info: UpgradeInfo): Promise<true | undefined> {
  const e = (info.server.options as Readonly<Record<symbol, unknown>>)[kListen] as ListenEntry | undefined;
  if (e === undefined || !isUpgrade(request)) return undefined;
  const mod = await loadWs();
  const n = await negotiate(mod, request, e.options);
  if (!n.ok) {
    writeRefusal(socket, n.status, n.message, n.headers);
    return true;
  }
  void serveSession(socket, info.head, request, n, e.options, e.handler, e.report, info.host);
  return true;
}

/** The WebSockets plugin (server side of `WebSockets.listen`). Registered without options. */
export const websockets = definePlugin({
  name: NAME,
  register(kernel) {
    kernel.hooks.server.onUpgrade.tapPromise({ name: NAME, stage: Stage.DEFAULT }, claim);
  },
});

let getDefault: (() => Kernel) | null = null;
let own: Kernel | null = null;

/**
 * Sets the kernel `WebSockets.listen` and `WebSockets.open` use when given no `kernel`
 * (the top-level API passes its default kernel). Until then they use a kernel of their own
 * holding just this plugin.
 */
export function setDefaultWebSocketKernel(get: () => Kernel): void {
  getDefault = get;
}

/** @internal The kernel for calls given none. */
export function defaultKernel(): Kernel {
  if (getDefault !== null) return getDefault();
  return (own ??= createKernel().register(websockets));
}
