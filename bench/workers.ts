/**
 * Hello world on every core: switchyard with `workers: 2` against switchyard in one process
 * and against bare `node:http` under node:cluster with two workers (the same port-sharing
 * engine, with nothing of switchyard's), keep-alive, `wrk -t2 -c50`.
 *
 * Pinning: the machine this was written on has two cores, so there is no core left for wrk
 * that the workers do not also want. Every server process (primary and workers) and wrk are
 * pinned to the same cores (`taskset -c 0,1`, BENCH_WORKER_CPUS) and share them: the figures
 * show what two workers gain over one process when the load tool competes for the same CPUs,
 * not the ceiling of two dedicated cores. The one-process row runs on the same two cores
 * (its one thread uses one at a time).
 *
 * Each setup is a child process (this file in a child role, precompiled with esbuild like the
 * other benches); the cluster primaries fork their workers from the same file. Setups run in
 * rotating order, each alone (the others idle), with a warm-up run first; the median of the
 * rounds is reported, ratios are medians of per-round ratios against the one-process row.
 *
 * Run alone: `node --import tsx bench/workers.ts`; `npm run bench workers` runs it with the rest.
 * Environment: BENCH_DURATION (s, default 3), BENCH_WARMUP (s, default 1), BENCH_RUNS
 * (default 3), BENCH_CONNECTIONS (default 50), BENCH_WORKER_CPUS (default `0,1`).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import cluster from 'node:cluster';
import { createServer } from 'node:http';
import net from 'node:net';
import { availableParallelism, cpus } from 'node:os';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { Response, serve, WorkerPool } from '../kernel/index.js';
import { abortOnSignals, childTracker, envPositive, fmtInt, fmtRatio, pairedRatio, prepareProgram, printTable, spawnListening, stopChild, type ListeningChild } from './common.js';
import { median, parseWrk, wrkArgv, wrkVersion, type WrkResult } from './load.js';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const SELF = fileURLToPath(import.meta.url);
const HOST = '127.0.0.1';
const BODY = 'hello world';
const HEADERS = { 'Content-Type': 'text/plain' };

/** The setups, by child role. */
const SETUPS = [
  { role: 'single', label: 'switchyard, one process' },
  { role: 'workers', label: 'switchyard, workers: 2' },
  { role: 'node-cluster', label: 'node:http, cluster, 2 workers' },
] as const;
type Role = (typeof SETUPS)[number]['role'];

/** One row of the result. */
export interface WorkersBenchRow {
  label: string;
  reqPerSec: number;
  runs: number[];
  errors: number;
  /** Against the one-process row. */
  ratio: number;
}

function announce(port: number): void {
  process.stdout.write(`PORT ${port}\n`);
}

/** A port free now: the node:cluster workers must all be told the same one. */
function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const probe = net.createServer();
    probe.once('error', reject);
    probe.listen({ host: HOST, port: 0 }, () => {
      const port = (probe.address() as net.AddressInfo).port;
      probe.close(() => resolve(port));
    });
  });
}

/** Runs a wrk command line (pinned by the caller's `taskset`) to its end. */
function wrkRun(argv: string[], track: (child: ChildProcess) => void): Promise<WrkResult> {
  const [cmd, ...args] = argv;
  return new Promise((resolve, reject) => {
    const child = spawn(cmd!, args, { stdio: ['ignore', 'pipe', 'pipe'] });
    track(child);
    let out = '';
    child.stdout.setEncoding('utf8').on('data', (s: string) => (out += s));
    child.once('error', reject);
    child.once('close', (code) => {
      const r = parseWrk(out);
      if (code === 0 && Number.isFinite(r.requestsPerSec)) resolve(r);
      else reject(new Error(`wrk failed (exit ${code}): ${out.slice(0, 300)}`));
    });
  });
}

/** A child role: starts its server and prints `PORT n` (a primary once its workers listen). */
async function child(role: Role): Promise<void> {
  const handler = (): Response => new Response(200, BODY, { headers: HEADERS });
  if (role === 'single') {
    announce((await serve(handler, { host: HOST, port: 0 })).port);
    return;
  }
  if (role === 'workers') {
    const s = await serve(handler, { host: HOST, port: 0, workers: 2 });
    if (s instanceof WorkerPool) {
      announce(s.port);
      process.once('SIGTERM', () => void s.forceClose().then(() => process.exit(0)));
    }
    return;
  }
  if (cluster.isPrimary) {
    const port = await freePort();
    let up = 0;
    cluster.on('listening', () => {
      if (++up === 2) announce(port);
    });
    for (let i = 0; i < 2; i++) cluster.fork({ BENCH_PORT: String(port) });
    process.once('SIGTERM', () => {
      for (const w of Object.values(cluster.workers ?? {})) w?.process.kill('SIGKILL');
      process.exit(0);
    });
    return;
  }
  const len = Buffer.byteLength(BODY);
  createServer((_req, res) => {
    res.writeHead(200, { 'Content-Type': 'text/plain', 'Content-Length': len });
    res.end(BODY);
  }).listen(Number(process.env.BENCH_PORT), HOST);
}

/** Runs the bench and prints its table. */
export async function runWorkersBench(): Promise<WorkersBenchRow[]> {
  const duration = Math.round(envPositive('BENCH_DURATION', 3));
  const warmup = Math.round(envPositive('BENCH_WARMUP', 1));
  const runs = Math.round(envPositive('BENCH_RUNS', 3));
  const connections = Math.round(envPositive('BENCH_CONNECTIONS', 50));
  const cores = process.env.BENCH_WORKER_CPUS ?? '0,1';
  const wrk = wrkVersion();
  console.log(`workers: ${availableParallelism()} cores (${cpus()[0]?.model ?? 'unknown'}), node ${process.version}, ${wrk ?? 'wrk NOT FOUND'}`);
  if (wrk === null) return [];
  const pin = (argv: string[]): string[] => (cores === '' ? argv : ['taskset', '-c', cores, ...argv]);
  console.log(cores === '' ? 'not pinned' : `pinning: every server process and wrk share cores ${cores} (taskset -c ${cores})`);
  const prepared = await prepareProgram(SELF, 'workers-bench.mjs', 'bench');
  if (prepared.note !== undefined) console.log(`WARNING: ${prepared.note}`);
  const launch = prepared.launch;
  if ('error' in launch) throw new Error(`bench/workers.ts ${launch.error}`);
  const tracker = childTracker();
  const { checkAborted, dispose } = abortOnSignals(tracker, () => undefined);
  const procs = new Map<Role, ListeningChild>();
  try {
    for (const s of SETUPS) {
      procs.set(s.role, await spawnListening(pin([process.execPath, ...launch.argv, 'child', s.role]), ROOT, { ...process.env, NODE_ENV: 'production' }, tracker.track));
    }
    const wrkOf = (port: number, d: number): string[] => pin(wrkArgv({ url: `http://${HOST}:${port}/`, connections, threads: 2, duration: d, cpu: null }));
    const runsOf = new Map<Role, { rps: number[]; errors: number }>(SETUPS.map((s) => [s.role, { rps: [], errors: 0 }]));
    for (const s of SETUPS) await wrkRun(wrkOf(procs.get(s.role)!.port, warmup), tracker.track);
    console.log(`runs: ${runs} x ${duration} s per setup (median), ${warmup} s warm-up, rotating order; ratios = median of per-round ratios to one process`);
    console.log(`command: ${wrkOf(0, duration).join(' ').replace(':0/', ':<port>/')}`);
    for (let round = 0; round < runs; round++) {
      for (let i = 0; i < SETUPS.length; i++) {
        checkAborted();
        const s = SETUPS[(i + round) % SETUPS.length]!;
        const r = await wrkRun(wrkOf(procs.get(s.role)!.port, duration), tracker.track);
        runsOf.get(s.role)!.rps.push(r.requestsPerSec);
        runsOf.get(s.role)!.errors += r.errors;
      }
    }
    const base = runsOf.get('single')!;
    const rows: WorkersBenchRow[] = SETUPS.map((s) => {
      const r = runsOf.get(s.role)!;
      const reqPerSec = median(r.rps);
      return { label: s.label, reqPerSec, runs: r.rps, errors: r.errors, ratio: pairedRatio({ runs: r.rps, reqPerSec }, { runs: base.rps, reqPerSec: median(base.rps) }, runs) };
    });
    printTable(
      ['hello, keep-alive', 'req/s', 'vs one process', 'errors'],
      rows.map((r) => [r.label, fmtInt(r.reqPerSec), fmtRatio(r.ratio), String(r.errors)]),
      console.log,
      true,
    );
    return rows;
  } finally {
    for (const p of procs.values()) await stopChild(p.child);
    dispose();
  }
}

const role = process.argv[2] === 'child' ? (process.argv[3] as Role) : null;
if (role !== null) await child(role);
else if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) await runWorkersBench();
