/**
 * Which WebSocket servers are listening.
 *
 * `server.onUpgrade` taps get `(request, socket, head)`, not the server, so a socket is tied
 * to its `WebSockets.listen` server by its local address (port, and address unless the
 * server listens on a wildcard). Upgraded sockets stay in the kernel's books, which is what
 * `close()` and `forceClose()` reach them by.
 */
import type { Socket } from 'node:net';
import type { Duplex } from 'node:stream';
import type { Server } from '../../kernel/index.js';
import type { ResolvedServerOptions } from './options.js';
import type { WebSocketHandler } from './session.js';

/** A listening `WebSockets.listen` server. */
export interface ListenEntry {
  readonly server: Server;
  readonly handler: WebSocketHandler;
  readonly options: ResolvedServerOptions;
  readonly report: (err: unknown) => void;
}

const byPort = new Map<number, Set<ListenEntry>>();

/** Records a listening server. */
export function addEntry(e: ListenEntry): void {
  let set = byPort.get(e.server.port);
  if (set === undefined) byPort.set(e.server.port, (set = new Set()));
  set.add(e);
}

/** Forgets a server (it stopped). */
export function removeEntry(e: ListenEntry): void {
  const set = byPort.get(e.server.port);
  if (set === undefined) return;
  set.delete(e);
  if (set.size === 0) byPort.delete(e.server.port);
}

function unmapped(a: string): string {
  return a.startsWith('::ffff:') ? a.slice(7) : a;
}

/** True when `socket`'s local end is an address `server` listens on. */
export function servedBy(socket: Duplex, server: Server): boolean {
  const s = socket as Partial<Socket>;
  if (s.localPort !== server.port) return false;
  const bound = server.address;
  if (bound === '0.0.0.0' || bound === '::') return true;
  return typeof s.localAddress === 'string' && unmapped(s.localAddress) === unmapped(bound);
}

/** The `WebSockets.listen` server a socket was accepted by, or null. */
export function entryFor(socket: Duplex): ListenEntry | null {
  const port = (socket as Partial<Socket>).localPort;
  if (port === undefined) return null;
  const set = byPort.get(port);
  if (set === undefined) return null;
  for (const e of set) if (servedBy(socket, e.server)) return e;
  return null;
}
