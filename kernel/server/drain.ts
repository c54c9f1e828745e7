/**
 * The parts of a server's drain sequence (`server.shutdown()`) that are not connection
 * bookkeeping: the health answer a balancer's check reads, the checks of the drain options,
 * and the process signals that start a drain.
 *
 * The sequence (the server runs it): readiness turns unready at once (the health path answers
 * 503, `server.ready` is false) while the server accepts and serves as before for
 * `drainDelay`, so a balancer that reads the health path takes it out of rotation. Responses
 * keep their connections alive meanwhile: a client told to close would connect again, and a
 * connection still in the accept queue when the listener closes is reset with its request in
 * it (a balancer without health checks, nginx's open-source upstreams, lost a POST per
 * connection so). Then the server stops accepting (once no connection came for a moment: see
 * LISTEN_QUIET_MS), and only once the listener is closed says `Connection: close` on every
 * HTTP/1 response and GOAWAY on HTTP/2, lets the requests in flight finish, and closes idle
 * kept-alive connections after a short grace (a request may be on its way on them: closing
 * under it loses it); a balancer then meets a refused connect, which it passes to another
 * server whatever the method. A drain still going at `drainTimeout` is forced.
 */
import { constants } from 'node:os';
import process from 'node:process';
import { ArgumentError } from '../errors.js';
import { Response } from '../message/response.js';

/**
 * `drainTimeout`'s default, ms: inside the 30 s an orchestrator (Kubernetes'
 * `terminationGracePeriodSeconds`, systemd's `TimeoutStopSec` is 90 s) gives a process after
 * SIGTERM before it kills it, with room for the process's own cleanup after the server.
 */
export const DEFAULT_DRAIN_TIMEOUT_MS = 25_000;

const HEALTH_HEADERS: [string, string][] = [
  ['Content-Type', 'text/plain; charset=utf-8'],
  // A cache between the check and the server must not answer for it.
  ['Cache-Control', 'no-store'],
];
// One Response each, answered to every check (a Response may be answered many times).
const READY = new Response(200, HEALTH_HEADERS, 'ok\n');
const DRAINING = new Response(503, HEALTH_HEADERS, 'draining\n');

/** @internal The answer to a request for the health path: 200 while ready, 503 once draining (or closing). */
export function healthResponse(ready: boolean): Response {
  return ready ? READY : DRAINING;
}

/** Signals a process cannot catch. */
const UNCATCHABLE: ReadonlySet<string> = new Set(['SIGKILL', 'SIGSTOP']);

/** @internal Checks the `signals` option: a list of distinct signal names a process can catch. */
export function checkSignals(v: unknown): readonly NodeJS.Signals[] {
  if (v === undefined) return [];
  if (!Array.isArray(v)) throw new ArgumentError(`signals must be an array of signal names such as ['SIGTERM'], got ${typeof v}`);
  const seen = new Set<string>();
  for (const s of v) {
    if (typeof s !== 'string' || !(s in constants.signals)) throw new ArgumentError(`signals: ${JSON.stringify(s)} is not a signal name (such as 'SIGTERM')`);
    if (UNCATCHABLE.has(s)) throw new ArgumentError(`signals: ${s} cannot be caught by a process`);
    if (seen.has(s)) throw new ArgumentError(`signals: ${s} is listed twice`);
    seen.add(s);
  }
  return Object.freeze([...v] as NodeJS.Signals[]);
}

/** @internal Checks the `healthPath` option: an absolute path without query or fragment, matched exactly. */
export function checkHealthPath(v: unknown): string | null {
  if (v === undefined) return null;
  if (typeof v !== 'string' || !/^\/[A-Za-z0-9\-._~!$&'()*+,;=:@%/]*$/.test(v)) {
    throw new ArgumentError(`healthPath must be a path such as '/healthz' (no query, no spaces), got ${typeof v === 'string' ? JSON.stringify(v) : typeof v}`);
  }
  return v;
}

/**
 * @internal Listens for `signals` on the process, calling `onSignal` for each; returns the
 * function that stops listening. While a listener is on, the signal no longer ends the
 * process by itself (Node's default), so the server removes it once it is closed.
 */
export function watchSignals(signals: readonly NodeJS.Signals[], onSignal: (signal: NodeJS.Signals) => void): () => void {
  if (signals.length === 0) return noop;
  for (const s of signals) process.on(s, onSignal);
  return () => {
    for (const s of signals) process.removeListener(s, onSignal);
  };
}

function noop(): void {}
