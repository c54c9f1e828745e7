/**
 * Zero loss behind HAProxy (Debian's): two switchyard processes in one backend, checked on
 * their `healthPath` (`option httpchk`, every 100 ms, down after one failed check), wrk
 * alternating POSTs and GETs through HAProxy; one process is restarted with SIGTERM while the
 * load runs, then the other, which runs on two `workers`, is reloaded with SIGHUP. Every request must succeed, counted by wrk and by HAProxy's access log (written
 * to its stdout: status, method, server, termination state) and by its counters (`show stat`
 * on its stats socket), which count the requests the log drops when its reader falls behind.
 *
 * The backends drain with `shutdown()` (test/interop/child/drain-server.ts): the health path
 * answers 503 at once, HAProxy takes the process out of rotation within the `drainDelay`
 * (500 ms), and only then does the listener close. SWY_DRAIN_MODE=close runs the same with
 * backends that call `close()` on SIGTERM and whose health path always answers 200.
 */
import { rm } from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { haproxyStats, reloadUnderLoad, restartUnderLoad, startBackend, startLoad, stdoutLines, until, type BackendMode } from '../helpers/balancers.js';
import { startHaproxy, stopPeer, tempDir, type Peer } from '../helpers/peers.js';

let dir = '';
let haproxy: Peer | null = null;

afterEach(async () => {
  await stopPeer(haproxy);
  haproxy = null;
  if (dir !== '') await rm(dir, { recursive: true, force: true });
  dir = '';
});

/** HAProxy in front of the backends on `a` and `b`; each request logged as `status|method|server|termination state`. */
function config(port: number, a: number, b: number): string {
  return `
global
  log stdout format raw local0
  stats socket ${dir}/stats.sock
  maxconn 256
  nbthread 1
defaults
  mode http
  log global
  log-format "%ST|%HM|%s|%ts"
  timeout connect 2s
  timeout client 10s
  timeout server 10s
  retries 3
  option redispatch
frontend web
  bind 127.0.0.1:${port}
  default_backend app
backend app
  balance roundrobin
  option httpchk GET /healthz
  http-check expect status 200
  default-server inter 100ms fastinter 100ms downinter 100ms fall 1 rise 2
  server a 127.0.0.1:${a} check
  server b 127.0.0.1:${b} check
`;
}

/** True for a log line of a request the server named `name` answered 200. */
const servedBy = (name: string) => (line: string) => line.startsWith(`200|`) && line.split('|')[2] === name;

/** A request the client itself gave up (wrk stopped with it in flight): termination state C… */
const clientAborted = (line: string): boolean => (line.split('|')[3] ?? '').startsWith('C');

describe('drain behind HAProxy', () => {
  it('restarts one of two processes with SIGTERM, then reloads the workers of the other, under load with zero failed requests and zero 502s', async () => {
    const mode = (process.env.SWY_DRAIN_MODE ?? 'shutdown') as BackendMode;
    dir = await tempDir('swy-drain-haproxy-');
    // `b` runs on two workers (a primary and its cluster), reloaded after `a`'s restart.
    const [a, b] = await Promise.all([startBackend(mode), startBackend(mode === 'close' ? 'close' : 'workers')]);
    const started = await startHaproxy(dir, 1, ([port]) => config(port!, a.port, b.port));
    haproxy = started.peer;
    const log = stdoutLines(started.peer, (l) => /^-?\d+\|/.test(l));
    const load = await startLoad(dir, `http://127.0.0.1:${started.ports[0]}/`);
    await until(async () => (await log()).filter(servedBy('a')).length >= 200, 10_000, 'load through HAProxy to both backends');

    await restartUnderLoad(a, mode, log, servedBy('a'));
    if (mode !== 'close') await reloadUnderLoad(b, log, servedBy('b'));

    const wrk = await load.stop();
    const lines = await log();
    const stats = await haproxyStats(join(dir, 'stats.sock'));
    const front = stats.get('web/FRONTEND')!;
    const back = stats.get('app/BACKEND')!;
    const failed = lines.filter((l) => !l.startsWith('200|') && !clientAborted(l));
    const counts = {
      wrkFailed: wrk.status + wrk.connect + wrk.read + wrk.write + wrk.timeout,
      // HAProxy's log may drop lines under load; its counters do not.
      answered5xx: front.hrsp_5xx!,
      serverResponseErrors: back.eresp!,
      log502: lines.filter((l) => l.startsWith('502|')).length,
      logNot200: failed.length,
    };
    // The counts, for the record of a run (the expectation below shows them only on failure).
    console.log(
      `drain behind HAProxy (${mode}): ${JSON.stringify({ ...counts, wrkRequests: wrk.requests, haproxyRequests: front.req_tot, retries: back.wretr, redispatches: back.wredis, logged: lines.length })}`,
    );
    expect({ ...counts, wrk, failed: failed.slice(0, 3) }).toMatchObject({ wrkFailed: 0, answered5xx: 0, serverResponseErrors: 0, log502: 0, logNot200: 0 });
    expect(wrk.requests).toBeGreaterThan(500);
    expect(front.hrsp_2xx).toBeGreaterThanOrEqual(wrk.requests);
    await stopPeer(b.peer);
  });
});
