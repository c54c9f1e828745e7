/**
 * Helpers of the drain tests behind a load balancer: switchyard processes as a balancer's
 * backends (test/interop/child/drain-server.ts), HAProxy from Debian started like nginx (see
 * peers.ts), wrk as the load tool (a Lua script alternating POSTs and GETs, stopped with
 * SIGINT, which makes it print its summary), and the restart of one backend under that load.
 */
import { readFile, writeFile } from 'node:fs/promises';
import net from 'node:net';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { killAfter } from './cleanup.js';
import { cleanEnv, findBinary, startPeer, type Peer } from './peers.js';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const SERVER = fileURLToPath(new URL('../interop/child/drain-server.ts', import.meta.url));
/** How long a backend may take to print that it listens (loading the library through tsx on a busy machine). */
const START_MS = 15_000;

/** What a backend does on SIGTERM: the drain sequence (in one process, or a primary and two workers), or `close()` (a server without it). */
export type BackendMode = 'shutdown' | 'workers' | 'close';

/** A started backend and its port. */
export interface Backend {
  peer: Peer;
  port: number;
}

/** Starts a backend process on `port` (0: a free one) and resolves once it listens. */
export async function startBackend(mode: BackendMode, port = 0): Promise<Backend> {
  const peer = startPeer(process.execPath, ['--import', 'tsx', SERVER, mode, String(port)], { cwd: ROOT, env: cleanEnv() });
  killAfter(peer.child);
  const bound = await new Promise<number>((resolve, reject) => {
    const t = setTimeout(() => reject(new Error(`the backend did not listen within ${START_MS} ms: ${peer.stderr()}`)), START_MS);
    const check = (): void => {
      const m = /^listening (\d+)$/m.exec(peer.stdout());
      if (m === null) return;
      clearTimeout(t);
      peer.child.stdout!.off('data', check);
      resolve(Number(m[1]));
    };
    peer.child.stdout!.on('data', check);
    void peer.exited.then((code) => {
      clearTimeout(t);
      reject(new Error(`the backend exited (${code}) before it listened: ${peer.stderr()}`));
    });
  });
  return { peer, port: bound };
}

/**
 * HAProxy's counters (`show stat` on its stats socket `socket`), one row per proxy and server
 * keyed `proxy/name` (`web/FRONTEND`, `app/BACKEND`, `app/a`), each field by its CSV name
 * (`req_tot`, `hrsp_2xx`, `hrsp_5xx`, `eresp`, `econ`, `wretr`, `wredis`, …). Unlike its log,
 * which drops lines when its reader falls behind, they count every request.
 */
export async function haproxyStats(socket: string): Promise<Map<string, Record<string, number>>> {
  const csv = await new Promise<string>((resolve, reject) => {
    const c = net.connect(socket);
    let out = '';
    c.on('data', (d: Buffer) => (out += d.toString()));
    c.once('error', reject);
    c.once('end', () => resolve(out));
    c.write('show stat\n');
  });
  const [head, ...rows] = csv.split('\n').filter((l) => l !== '');
  const names = head!.replace(/^# /, '').split(',');
  const stats = new Map<string, Record<string, number>>();
  for (const row of rows) {
    const cells = row.split(',');
    const rec: Record<string, number> = {};
    names.forEach((n, i) => (rec[n] = Number(cells[i] || 0)));
    stats.set(`${cells[0]}/${cells[1]}`, rec);
  }
  return stats;
}

/** Lines a process writes to stdout, gathered as they come (`lines()` is the list so far). */
export function stdoutLines(peer: Peer, keep: (line: string) => boolean): () => Promise<string[]> {
  const lines: string[] = [];
  let rest = '';
  peer.child.stdout!.on('data', (d: Buffer) => {
    const parts = (rest + d.toString('latin1')).split('\n');
    rest = parts.pop()!;
    for (const l of parts) if (keep(l)) lines.push(l);
  });
  return () => Promise.resolve(lines);
}

/** What wrk reported: requests completed and the failures by kind (`status`: answers not 2xx or 3xx). */
export interface LoadResult {
  requests: number;
  status: number;
  connect: number;
  read: number;
  write: number;
  timeout: number;
}

/** Alternates a POST with a body and a GET; prints the totals in one line wrk's caller parses. */
const WRK_SCRIPT = `
local n = 0
request = function()
  n = n + 1
  if n % 2 == 0 then
    return wrk.format("POST", "/post", { ["Content-Type"] = "text/plain" }, "request " .. n)
  end
  return wrk.format("GET", "/get")
end
done = function(summary, latency, requests)
  local e = summary.errors
  io.write(string.format("RESULT requests=%d status=%d connect=%d read=%d write=%d timeout=%d\\n",
    summary.requests, e.status, e.connect, e.read, e.write, e.timeout))
end
`;

/** wrk running against `url` until `stop()`, which resolves to its totals. */
export interface Load {
  stop(): Promise<LoadResult>;
}

/** Starts wrk (one thread, `connections` connections) against `url`, the script in `dir`. */
export async function startLoad(dir: string, url: string, connections = 8): Promise<Load> {
  const script = join(dir, 'load.lua');
  await writeFile(script, WRK_SCRIPT);
  const wrk = findBinary(['/usr/bin/wrk'], 'wrk');
  // A duration far past the test's: SIGINT ends it, and wrk prints its summary then.
  const peer = startPeer(wrk, ['-t1', `-c${connections}`, '-d120s', '--timeout', '5s', '-s', script, url], { env: cleanEnv() });
  killAfter(peer.child);
  return {
    async stop(): Promise<LoadResult> {
      peer.child.kill('SIGINT');
      await peer.exited;
      const m = /RESULT requests=(\d+) status=(\d+) connect=(\d+) read=(\d+) write=(\d+) timeout=(\d+)/.exec(peer.stdout());
      if (m === null) throw new Error(`wrk printed no totals:\n${peer.stdout()}\n${peer.stderr()}`);
      const [requests, status, connect, read, write, timeout] = m.slice(1).map(Number) as [number, number, number, number, number, number];
      return { requests, status, connect, read, write, timeout };
    },
  };
}

/** The lines of a log file written by a balancer (empty when it has none yet). */
export async function logLines(file: string): Promise<string[]> {
  const text = await readFile(file, 'latin1').catch(() => '');
  return text.split('\n').filter((l) => l !== '');
}

/** How often {@link until} looks again: a log read per event-loop turn would take the CPU from the load it watches. */
const POLL_MS = 50;

/** Checks `cond` (async) every {@link POLL_MS} until it holds; throws `what` after `ms`. */
export async function until(cond: () => Promise<boolean>, ms: number, what: string): Promise<void> {
  const start = performance.now();
  while (!(await cond())) {
    if (performance.now() - start > ms) throw new Error(`timed out after ${ms} ms waiting for ${what}`);
    await new Promise<void>((r) => setTimeout(r, POLL_MS));
  }
}

/**
 * Restarts `backend` under load: SIGTERM, waits for it to exit (0) and starts it again on its
 * port; resolves to the new process once the balancer's access log (`accessLog()`, one line
 * per request, `servedByIt(line)` true for a request the restarted backend answered) shows it
 * serving.
 */
export async function restartUnderLoad(backend: Backend, mode: BackendMode, accessLog: () => Promise<string[]>, servedByIt: (line: string) => boolean): Promise<Backend> {
  backend.peer.child.kill('SIGTERM');
  const code = await backend.peer.exited;
  if (code !== 0) throw new Error(`the backend exited with ${code} after SIGTERM: ${backend.peer.stderr()}`);
  if (!backend.peer.stdout().includes('closed')) throw new Error(`the backend exited without closing its server: ${backend.peer.stdout()}`);
  const before = (await accessLog()).length;
  const again = await startBackend(mode, backend.port);
  await until(async () => (await accessLog()).slice(before).filter(servedByIt).length >= 20, 10_000, 'the restarted backend to serve through the balancer');
  return again;
}

/**
 * Reloads a `workers` backend under load: SIGHUP to its primary, which replaces its workers one
 * at a time; resolves once the primary says the reload is done and the balancer's access log
 * shows the new workers serving (`servedByIt` as in {@link restartUnderLoad}).
 */
export async function reloadUnderLoad(backend: Backend, accessLog: () => Promise<string[]>, servedByIt: (line: string) => boolean): Promise<void> {
  const reloads = (): number => (backend.peer.stderr().match(/reload done/g) ?? []).length;
  const done = reloads();
  backend.peer.child.kill('SIGHUP');
  await until(async () => reloads() > done, 20_000, `the reload to finish: ${backend.peer.stderr()}`);
  const before = (await accessLog()).length;
  await until(async () => (await accessLog()).slice(before).filter(servedByIt).length >= 20, 10_000, 'the reloaded backend to serve through the balancer');
}
