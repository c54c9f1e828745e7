/**
 * Fetch-style server benchmark: one Hono app (bench/servers/hono-app.ts) served by
 * switchyard's `serveFetch` (default preset, as users start it) and by Hono's own Node adapter
 * `@hono/node-server`, beside a plain `node:http` hello server (the platform's floor for one
 * request), in one run.
 *
 * Run directly with `node --import tsx bench/fetch-server.ts`, or `npm run bench fetch-server`.
 * Needs `wrk` and, for pinning, `taskset`.
 *
 * Scenarios (keep-alive, `wrk -t1 -c50`):
 *   hello  `c.text('hello world')` (node:http: the same 11 bytes)
 *   big    64 KiB streamed: a `ReadableStream` of four 16 KiB chunks, no length up front
 *          (node:http: one preallocated 64 KiB Buffer); wrk is the bottleneck here, compare the
 *          servers by "CPU µs/req", their process CPU time per request read from /proc
 *
 * Method (as bench/server.ts): each server is a child process pinned to core 1 (`taskset -c
 * 1`), wrk to core 0; the servers are precompiled with esbuild and run with plain node; they
 * are measured in rotating rounds (A B C, B C A, ...) after one warm-up each, the median of
 * the rounds reported, and ratios are the median of per-round ratios.
 *
 * Environment: BENCH_DURATION (s per run, default 3), BENCH_WARMUP (s, default 1), BENCH_RUNS
 * (default 3), BENCH_CONNECTIONS (default 50), BENCH_SERVERS (comma list of fetch-switchyard,
 * fetch-hono-node, node-http, and switchyard-preset: `HTTP.serve` with no fetch layer, the
 * floor, by name only), BENCH_SCENARIOS (hello, big), BENCH_SERVER_CPU / BENCH_LOAD_CPU
 * (default 1 / 0), BENCH_RUNNER (esbuild | tsx).
 */
import { rmSync } from 'node:fs';
import { mkdir, mkdtemp } from 'node:fs/promises';
import { availableParallelism, cpus } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { median, pinned, procCpuMs, runWrk, tasksetUsable, wrkArgv, wrkVersion, type WrkResult } from './load.js';
import {
  abortOnSignals,
  childTracker,
  envList,
  fmtInt,
  fmtK,
  fmtRatio,
  pairedRatio,
  prepareLaunches,
  printTable,
  runSpread,
  spawnListening,
  stopChild,
  type Launch,
  envPositive,
  inRotation,
} from './common.js';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const HOST = '127.0.0.1';

const SERVERS = [
  { id: 'fetch-switchyard', label: 'switchyard serveFetch', byDefault: true },
  { id: 'fetch-hono-node', label: '@hono/node-server', byDefault: true },
  { id: 'node-http', label: 'node:http (plain)', byDefault: true },
  // The floor of serveFetch: the preset's own `serve` with no fetch layer and no Hono (by name only).
  { id: 'switchyard-preset', label: 'switchyard serve (floor)', byDefault: false },
] as const;
const HONO_NODE = '@hono/node-server';
const NODE_HTTP = 'node:http (plain)';
const SCENARIOS = ['hello', 'big'] as const;
type Scenario = (typeof SCENARIOS)[number];

/** One server's figures in one scenario. */
export interface FetchServerRow {
  server: string;
  /** Median req/s. */
  reqPerSec: number;
  runs: number[];
  /** Median of per-round req/s ratios to `@hono/node-server`. */
  vsHonoNode: number;
  /** Likewise to the plain node:http server. */
  vsNodeHttp: number;
  /** Median over rounds of the server's CPU time per request, µs. */
  cpuPerRequest: number;
  /** Median of per-round ratios of `@hono/node-server`'s CPU per request to this one's (above 1: this one is cheaper). */
  cpuGainVsHonoNode: number;
  errors: number;
  note?: string;
}

/** Runs the bench and prints its tables; every child is ended before it returns or throws. */
export async function runFetchServerBench(): Promise<{ scenarios: { name: Scenario; command: string; rows: FetchServerRow[] }[] }> {
  const duration = Math.round(envPositive('BENCH_DURATION', 3));
  const warmup = Math.round(envPositive('BENCH_WARMUP', 1));
  const runs = Math.round(envPositive('BENCH_RUNS', 3));
  const connections = Math.round(envPositive('BENCH_CONNECTIONS', 50));
  const wanted = envList('BENCH_SERVERS');
  const specs = SERVERS.filter((s) => (wanted === null ? s.byDefault : wanted.includes(s.id)));
  const scenarios = (envList('BENCH_SCENARIOS') ?? [...SCENARIOS]).filter((s): s is Scenario => (SCENARIOS as readonly string[]).includes(s));
  const serverCpuWanted = Number(process.env.BENCH_SERVER_CPU ?? 1);
  const loadCpuWanted = Number(process.env.BENCH_LOAD_CPU ?? 0);
  const canPin = tasksetUsable(serverCpuWanted) && tasksetUsable(loadCpuWanted) && serverCpuWanted !== loadCpuWanted;
  const serverCpu = canPin ? serverCpuWanted : null;
  const loadCpu = canPin ? loadCpuWanted : null;
  const wrk = wrkVersion();
  console.log(`fetch-style server (a Hono app): ${availableParallelism()} cores (${cpus()[0]?.model ?? 'unknown'}), node ${process.version}, ${wrk ?? 'wrk NOT FOUND'}`);
  console.log(canPin ? `pinning: servers on core ${serverCpuWanted}, wrk on core ${loadCpuWanted}` : 'WARNING: not pinning (taskset missing or one core): figures are noisier');
  const out: { name: Scenario; command: string; rows: FetchServerRow[] }[] = [];
  if (!wrk) {
    console.log('WARNING: wrk not found (Debian package "wrk"): nothing to measure');
    return { scenarios: out };
  }

  const tracker = childTracker();
  let buildDir: string | null = null;
  const removeDir = (): void => {
    if (buildDir) rmSync(buildDir, { recursive: true, force: true });
  };
  const { checkAborted, dispose } = abortOnSignals(tracker, removeDir);
  try {
    const runner = process.env.BENCH_RUNNER === 'tsx' ? 'tsx' : 'esbuild';
    if (runner === 'esbuild') {
      const cache = join(ROOT, 'node_modules', '.cache');
      await mkdir(cache, { recursive: true });
      buildDir = await mkdtemp(join(cache, 'switchyard-bench-'));
    }
    const entries = specs.map((s) => ({ key: s.id, source: join(ROOT, 'bench', 'servers', `${s.id}.ts`), outName: `${s.id}.mjs` }));
    const prepared = await prepareLaunches(entries, runner, buildDir, { sourcemap: false, what: 'servers' });
    if (prepared.note) console.log(`WARNING: ${prepared.note}`);
    console.log(`runs: ${runs} x ${duration} s per scenario and server (median), ${warmup} s warm-up, rotating order; ratios = median of per-round ratios`);

    for (const scenario of scenarios) {
      checkAborted();
      const procs: { label: string; pid: number; port: number; child: import('node:child_process').ChildProcess; stderr: () => string; exited: () => boolean }[] = [];
      const notes = new Map<string, string>();
      for (const spec of specs) {
        const launch: Launch = prepared.launches.get(spec.id) ?? { error: 'no launcher' };
        if ('error' in launch) {
          notes.set(spec.label, launch.error);
          continue;
        }
        const env = { ...process.env, SCENARIO: scenario, PORT: '0', BENCH_CHILD: '1', NODE_ENV: 'production' };
        try {
          procs.push({ label: spec.label, ...(await spawnListening(pinned(serverCpu, [process.execPath, ...launch.argv]), ROOT, env, tracker.track)) });
        } catch (e) {
          notes.set(spec.label, (e as Error).message);
        }
      }
      try {
        const base = { connections, threads: 1, cpu: loadCpu };
        const command = wrkArgv({ ...base, duration, url: `http://${HOST}:<port>/` }).join(' ');
        console.log();
        console.log(`### ${scenario === 'hello' ? 'hello world' : '64 KiB streamed response'}, keep-alive, ${connections} connections`);
        console.log(`$ ${command}`);
        const results = new Map<string, WrkResult[]>(procs.map((p) => [p.label, []]));
        const cpu = new Map<string, number[]>(procs.map((p) => [p.label, []]));
        const url = (p: (typeof procs)[number]): string => `http://${HOST}:${p.port}/`;
        for (const p of procs) {
          checkAborted();
          if (warmup > 0) await runWrk({ ...base, duration: warmup, url: url(p) }, (c) => c && tracker.track(c)).catch((e: Error) => notes.set(p.label, e.message));
        }
        await inRotation(
          procs,
          runs,
          notes,
          (p) => p.label,
          checkAborted,
          async (p) => {
            const c0 = procCpuMs(p.pid);
            const r = await runWrk({ ...base, duration, url: url(p) }, (c) => c && tracker.track(c));
            results.get(p.label)!.push(r);
            cpu.get(p.label)!.push(r.requests > 0 ? ((procCpuMs(p.pid) - c0) * 1000) / r.requests : NaN);
          },
        );
        const rows: FetchServerRow[] = procs.map((p) => {
          const rs = results.get(p.label) ?? [];
          const reqs = rs.map((r) => r.requestsPerSec);
          const note = notes.get(p.label);
          return {
            server: p.label,
            reqPerSec: median(reqs),
            runs: reqs,
            vsHonoNode: NaN,
            vsNodeHttp: NaN,
            cpuPerRequest: median(cpu.get(p.label) ?? []),
            cpuGainVsHonoNode: NaN,
            errors: rs.reduce((a, r) => a + r.errors, 0),
            ...(note ? { note } : {}),
          };
        });
        const honoCpu = cpu.get(HONO_NODE) ?? [];
        for (const r of rows) {
          r.vsHonoNode = pairedRatio(
            r,
            rows.find((x) => x.server === HONO_NODE),
            runs,
          );
          r.vsNodeHttp = pairedRatio(
            r,
            rows.find((x) => x.server === NODE_HTTP),
            runs,
          );
          const mine = cpu.get(r.server) ?? [];
          r.cpuGainVsHonoNode = median(mine.map((c, i) => (honoCpu[i] ?? NaN) / c).filter(Number.isFinite));
        }
        printTable(
          ['server', 'req/s', `vs ${HONO_NODE}`, 'vs node:http', 'CPU µs/req', `CPU gain vs ${HONO_NODE}`, 'runs (req/s)', 'errors'],
          rows.map((r) => [
            r.server,
            fmtInt(r.reqPerSec),
            fmtRatio(r.vsHonoNode),
            fmtRatio(r.vsNodeHttp),
            Number.isFinite(r.cpuPerRequest) ? r.cpuPerRequest.toFixed(1) : '-',
            fmtRatio(r.cpuGainVsHonoNode),
            r.runs.map(fmtK).join(' ') || '-',
            r.note ? r.note.slice(0, 120) : String(r.errors),
          ]),
          (s) => console.log(s),
          false,
        );
        for (const [label, why] of notes) if (!procs.some((p) => p.label === label)) console.log(`skipped ${label}: ${why}`);
        const spread = runSpread(rows);
        if (spread > 1.25) console.log(`note: noisy machine, runs of one server differ by up to ${spread.toFixed(1)}x; raise BENCH_RUNS / BENCH_DURATION`);
        out.push({ name: scenario, command, rows });
      } finally {
        await Promise.all(procs.map((p) => stopChild(p.child)));
      }
    }
    return { scenarios: out };
  } finally {
    tracker.killAllNow();
    dispose();
    removeDir();
  }
}

if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(process.argv[1]).href) {
  runFetchServerBench().catch((err: unknown) => {
    console.error(err);
    process.exitCode = 1;
  });
}
