/**
 * The tests' one cleanup registry: what a test started is closed after it, in one order.
 * Timers first (nothing fires into a cleanup), then the test's own cleanups in the order given
 * (they may still use a client or a server), then clients, then sockets and HTTP/2 sessions,
 * then child processes, then servers and plain net servers, then kernels. Helpers register what they start;
 * vitest gives each test file its own copy of this module, so the afterEach below is registered
 * once per file that imports it, directly or through a helper.
 */
import type { ChildProcess } from 'node:child_process';
import type net from 'node:net';
import { afterEach } from 'vitest';

const timers = new Set<NodeJS.Timeout>();
const cleanups: (() => unknown)[] = [];
const clients = new Set<{ close(): unknown }>();
const destroyables = new Set<{ destroy(): unknown }>();
const children = new Set<ChildProcess>();
const servers = new Set<{ forceClose(): Promise<unknown> }>();
const netServers = new Set<net.Server>();
const kernels = new Set<{ close(): Promise<unknown> }>();

/** Runs `fn` after the current test, before the clients and servers are closed. */
export function onCleanup(fn: () => unknown): void {
  cleanups.push(fn);
}

/** Tracks a `setInterval`/`setTimeout` handle so it is cleared after the test. */
export function track<T extends NodeJS.Timeout>(t: T): T {
  timers.add(t);
  return t;
}

/** Closes a client (switchyard's `Client`) after the test. */
export function closeAfter<T extends { close(): unknown }>(client: T): T {
  clients.add(client);
  return client;
}

/** Destroys a socket or an HTTP/2 session after the test. */
export function destroyAfter<T extends { destroy(): unknown }>(x: T): T {
  destroyables.add(x);
  return x;
}

/** Kills a child process after the test, unless it exited. */
export function killAfter(child: ChildProcess): ChildProcess {
  children.add(child);
  return child;
}

/** Force-closes a switchyard server after the test; `untrack` when the test closed it itself. */
export function forceCloseAfter<T extends { forceClose(): Promise<unknown> }>(server: T): T {
  servers.add(server);
  return server;
}

/** Stops force-closing `server` after the test. */
export function untrack(server: { forceClose(): Promise<unknown> }): void {
  servers.delete(server);
}

/** Closes a plain net (or TLS) server after the test. */
export function closeNetServerAfter<T extends net.Server>(server: T): T {
  netServers.add(server);
  return server;
}

/** Closes a kernel after the test, last: after the servers it may have started are force-closed. */
export function closeKernelAfter<T extends { close(): Promise<unknown> }>(kernel: T): T {
  kernels.add(kernel);
  return kernel;
}

afterEach(async () => {
  for (const t of timers) clearInterval(t);
  timers.clear();
  for (const fn of cleanups.splice(0)) await fn();
  for (const c of clients) c.close();
  clients.clear();
  for (const d of destroyables) d.destroy();
  destroyables.clear();
  for (const ch of children) if (ch.exitCode === null && ch.signalCode === null) ch.kill('SIGKILL');
  children.clear();
  const all = [...servers];
  servers.clear();
  await Promise.all(all.map((s) => s.forceClose()));
  const nets = [...netServers];
  netServers.clear();
  await Promise.all(nets.map((l) => new Promise<void>((resolve) => (l.listening ? l.close(() => resolve()) : resolve()))));
  const ks = [...kernels];
  kernels.clear();
  await Promise.all(ks.map((k) => k.close().catch(() => undefined)));
});
