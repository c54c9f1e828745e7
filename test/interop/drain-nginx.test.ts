/**
 * Zero loss behind nginx (Debian's, upstream keep-alive on): two switchyard processes behind
 * one upstream, wrk alternating POSTs and GETs through nginx; one process is restarted with
 * SIGTERM while the load runs, then the other, which runs on two `workers`, is reloaded with
 * SIGHUP. Every request must succeed, counted by wrk and by nginx's access log (no 502), and
 * nginx's error log must show no request lost on a connection the server closed under it
 * ("upstream prematurely closed", "reset by peer").
 *
 * The backends drain with `shutdown()` (test/interop/child/drain-server.ts). nginx has no
 * health check: what keeps a POST from being lost is the drain itself. Through `drainDelay`
 * the server serves as before; it then closes its listener in a gap between new connections,
 * and only from then on says `Connection: close`, so nginx closes its kept-alive connections
 * after a response, never under a request, and a refused connect it passes to the other
 * process. SWY_DRAIN_MODE=close runs the same with backends that call `close()` on SIGTERM: it
 * shows the 502s this sequence removes.
 */
import { mkdir, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { logLines, reloadUnderLoad, restartUnderLoad, startBackend, startLoad, until, type BackendMode } from '../helpers/balancers.js';
import { nginxHttpCommon, nginxPreamble, startNginx, stopPeer, tempDir, type Peer } from '../helpers/peers.js';

let dir = '';
let nginx: Peer | null = null;

afterEach(async () => {
  await stopPeer(nginx);
  nginx = null;
  if (dir !== '') await rm(dir, { recursive: true, force: true });
  dir = '';
});

/** nginx in front of the backends on `a` and `b`; the access log is `status|method|upstream addresses|upstream statuses`. */
function config(port: number, a: number, b: number): string {
  return `
${nginxPreamble(dir)}
http {${nginxHttpCommon(dir)}
  log_format drain '$status|$request_method|$upstream_addr|$upstream_status';
  upstream app {
    server 127.0.0.1:${a} max_fails=1 fail_timeout=1s;
    server 127.0.0.1:${b} max_fails=1 fail_timeout=1s;
    keepalive 32;
  }
  server {
    listen 127.0.0.1:${port};
    access_log ${dir}/access.log drain;
    error_log ${dir}/error.log warn;
    keepalive_requests 1000000;
    location / {
      proxy_pass http://app;
      proxy_http_version 1.1;
      proxy_set_header Connection "";
    }
  }
}
`;
}

/** True for an access-log line of a request the backend on `port` answered 200. */
const servedBy = (port: number) => (line: string) => {
  const [status, , addrs] = line.split('|');
  return status === '200' && addrs!.split(', ').at(-1) === `127.0.0.1:${port}`;
};

describe('drain behind nginx', () => {
  it('restarts one of two processes with SIGTERM, then reloads the workers of the other, under load with zero failed requests and zero 502s', async () => {
    const mode = (process.env.SWY_DRAIN_MODE ?? 'shutdown') as BackendMode;
    dir = await tempDir('swy-drain-nginx-');
    await mkdir(join(dir, 'tmp'), { mode: 0o755 });
    const access = join(dir, 'access.log');
    // `b` runs on two workers (a primary and its cluster), reloaded after `a`'s restart.
    const [a, b] = await Promise.all([startBackend(mode), startBackend(mode === 'close' ? 'close' : 'workers')]);
    const started = await startNginx(dir, 1, ([port]) => config(port!, a.port, b.port));
    nginx = started.peer;
    const load = await startLoad(dir, `http://127.0.0.1:${started.ports[0]}/`);
    await until(async () => (await logLines(access)).filter(servedBy(a.port)).length >= 200, 10_000, 'load through nginx to both backends');

    await restartUnderLoad(a, mode, () => logLines(access), servedBy(a.port));
    if (mode !== 'close') await reloadUnderLoad(b, () => logLines(access), servedBy(b.port));

    const wrk = await load.stop();
    const lines = await logLines(access);
    const errors = await logLines(join(dir, 'error.log'));
    const counts = {
      wrkFailed: wrk.status + wrk.connect + wrk.read + wrk.write + wrk.timeout,
      log502: lines.filter((l) => l.startsWith('502|')).length,
      // 499: wrk's own requests in flight when it was stopped.
      logNot200: lines.filter((l) => !l.startsWith('200|') && !l.startsWith('499|')).length,
      lostOnAClosedConnection: errors.filter((l) => /prematurely closed|reset by peer|broken pipe/.test(l)).length,
    };
    const lost = errors.filter((l) => /prematurely closed|reset by peer|broken pipe/.test(l)).slice(0, 3);
    const failed = lines.filter((l) => !l.startsWith('200|') && !l.startsWith('499|')).slice(0, 3);
    // The counts, for the record of a run (the expectation below shows them only on failure).
    console.log(`drain behind nginx (${mode}): ${JSON.stringify({ ...counts, wrkRequests: wrk.requests, logged: lines.length, lost })}`);
    expect({ ...counts, wrk, logged: lines.length, lost, failed }).toMatchObject({
      wrkFailed: 0,
      log502: 0,
      logNot200: 0,
      lostOnAClosedConnection: 0,
    });
    expect(wrk.requests).toBeGreaterThan(500);
    expect(lines.length).toBeGreaterThanOrEqual(wrk.requests);
    await stopPeer(b.peer);
  });
});
