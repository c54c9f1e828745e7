/**
 * HTTP/1.1 server benchmark: switchyard's server side by side with bare `node:http`, fastify,
 * a bare `node:net` responder (the ceiling: no HTTP work at all) and the kernel's HTTP/1 codec
 * alone on a bare socket (bench/servers/h1-floor.ts: every head parsed and serialized, nothing
 * else, the least HTTP work a server can do), in one run. switchyard runs twice: the kernel
 * alone (`switchyard`) and as users start it, `HTTP.serve` on the default preset
 * (`switchyard-preset`), so what the preset's plugins cost per request shows.
 *
 * Run directly with `node --import tsx bench/server.ts`, or call {@link runServerBench} from the
 * bench runner. Needs `wrk` (Debian package `wrk`) and, for pinning, `taskset` (util-linux).
 *
 * Scenarios (keep-alive, `wrk -t1 -c50`):
 *   hello     11-byte `hello world` text/plain body
 *   pipeline  the same, 16 requests pipelined per write (wrk Lua script)
 *   big       a 64 KiB preallocated body; body MiB/s and req/s (wrk is the bottleneck here: compare
 *             the servers by "CPU µs/req", their process CPU time per request, read from /proc)
 *   idle      resident memory of 5,000 idle keep-alive connections (each served one request)
 *
 * Method: each server (bench/servers/*.ts) is a child process pinned to one core
 * (`taskset -c 1`), wrk is pinned to another (`taskset -c 0`). All servers of a scenario run
 * at once (idle while not under load) and are measured in alternating rounds (A B C D, B C D
 * A, ...) so machine drift hits all alike; each gets one warm-up run first, and the median of
 * the rounds is reported. Ratios are the median of per-round ratios (runs of the same round
 * are seconds apart), which holds up better than a ratio of medians on a drifting machine.
 * The `pipeline` scenario reuses the `hello` processes, already warm. `idle` uses fresh
 * processes per round: RSS (VmRSS from /proc/<pid>/status) after opening the connections
 * minus RSS before, median of the rounds. It measures twice, in separate processes: cold (the
 * connections are the process's first after 20 requests on one connection), and warm (three
 * batches of BENCH_IDLE_WARMUP connections were opened, served and closed before the baseline).
 * The cold figure also holds what the first many connections cost the process once: V8
 * compiling the connection path and growing (and first touching) its young generation, 3-5 MB
 * in all; the warm one is closer to what each further connection costs. That one-off is why
 * the default is 5,000 connections: over 1,000 it is 3-5 KiB of each connection's figure (the
 * bare `net` server reads 10 KiB per connection over 1,000, 5.4 KiB over 5,000).
 *
 * The server programs are TypeScript, precompiled with esbuild into plain ESM (bundling the
 * project's own sources, leaving npm packages external, as tsup builds dist/) and run with
 * plain `node`: no loader-hook thread, no source-map support switched on, nothing but the
 * server in the process, so throughput and RSS compare like for like. `BENCH_RUNNER=tsx` runs
 * them with `node --import tsx` instead (also the fallback when esbuild is unavailable).
 *
 * Environment: BENCH_DURATION (s per run, default 3), BENCH_WARMUP (s, default 1),
 * BENCH_RUNS (default 3), BENCH_CONNECTIONS (default 50), BENCH_PIPELINE (depth, default 16),
 * BENCH_IDLE_CONNECTIONS (default 5000), BENCH_IDLE_WARMUP (default 200), BENCH_SERVERS (comma list of switchyard,
 * switchyard-preset, node-http, fastify, net-raw, h1-floor), BENCH_SCENARIOS (comma list of hello, pipeline, big, idle),
 * BENCH_SERVER_CPU / BENCH_LOAD_CPU (default 1 / 0), BENCH_RUNNER (esbuild | tsx).
 */
import type { ChildProcess } from 'node:child_process';
import { rmSync } from 'node:fs';
import { mkdir, mkdtemp } from 'node:fs/promises';
import { availableParallelism, cpus, tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { median, openIdleConnections, pinned, procCpuMs, readRss, runWrk, sequentialRequests, tasksetUsable, wrkArgv, wrkVersion, writePipelineScript, type WrkResult } from './load.js';
import {
  abortOnSignals,
  childTracker,
  envList,
  firstLines,
  fmtInt,
  fmtK,
  fmtRatio,
  pairedRatio,
  prepareLaunches,
  printTable as printTableWith,
  runSpread,
  sleep,
  spawnListening,
  stopChild,
  type Launch,
  envPositive,
  inRotation,
} from './common.js';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const HOST = '127.0.0.1';
const BIG_SIZE = 64 * 1024;

/** A server program under bench/servers/. */
interface ServerSpec {
  /** Id used in BENCH_SERVERS and file name (bench/servers/<id>.ts). */
  id: string;
  /** Name in the tables. */
  label: string;
}

const SERVERS: ServerSpec[] = [
  { id: 'switchyard', label: 'switchyard' },
  { id: 'switchyard-preset', label: 'switchyard, default preset' },
  { id: 'node-http', label: 'node:http' },
  { id: 'fastify', label: 'fastify' },
  { id: 'net-raw', label: 'net (ceiling)' },
  // switchyard's head parser and serializer on a bare socket, nothing else: the floor of the pipeline.
  { id: 'h1-floor', label: 'codec alone (floor)' },
];
const SCENARIOS = ['hello', 'pipeline', 'big', 'idle'] as const;
type ScenarioName = (typeof SCENARIOS)[number];

/** Settings of one run of the server bench (defaults from the environment). */
export interface ServerBenchOptions {
  duration: number;
  warmup: number;
  runs: number;
  connections: number;
  pipeline: number;
  idleConnections: number;
  /** Connections per warm-up batch before the warm idle measurement. */
  idleWarmup: number;
  servers: string[];
  scenarios: ScenarioName[];
  serverCpu: number;
  loadCpu: number;
  runner: 'esbuild' | 'tsx';
  print: boolean;
}

/** One server's figures in one throughput scenario. */
export interface ThroughputRow {
  server: string;
  /** Median req/s, NaN when it did not run. */
  reqPerSec: number;
  /** Median body MiB/s (req/s x body size). */
  mibPerSec: number;
  runs: number[];
  /** Median over rounds of this server's req/s over node:http's in the same round. */
  vsNodeHttp: number;
  /** Likewise against fastify. */
  vsFastify: number;
  /** Largest VmRSS seen right after a run, bytes. */
  rss: number;
  /** Median over rounds of the server process's CPU time (user + system) per request, µs. */
  cpuPerRequest: number;
  /** Median over rounds of this server's CPU per request over node:http's in the same round. */
  cpuVsNodeHttp: number;
  errors: number;
  note?: string;
}

/** One server's figures in the idle-connections scenario. */
export interface IdleRow {
  server: string;
  rssBefore: number;
  rssAfter: number;
  /** Median RSS growth, bytes. */
  delta: number;
  deltas: number[];
  perConnection: number;
  /** The same, measured warm (see the module notes): median RSS growth per connection, bytes. */
  perConnectionWarm: number;
  deltasWarm: number[];
  /** Connections still open when RSS was read (lowest over rounds). */
  open: number;
  vsNodeHttp: number;
  vsFastify: number;
  note?: string;
}

/** What {@link runServerBench} returns. */
export interface ServerBenchResult {
  machine: { cores: number; cpu: string; node: string; wrk: string | null; pinned: boolean };
  options: ServerBenchOptions;
  scenarios: { name: ScenarioName; title: string; command: string; rows: ThroughputRow[] }[];
  idle: IdleRow[] | null;
  skipped: { server: string; reason: string }[];
}

function defaultOptions(): ServerBenchOptions {
  const scenarios = (envList('BENCH_SCENARIOS') ?? [...SCENARIOS]).filter((s): s is ScenarioName => (SCENARIOS as readonly string[]).includes(s));
  return {
    duration: Math.round(envPositive('BENCH_DURATION', 3)),
    warmup: Math.round(envPositive('BENCH_WARMUP', 1)),
    runs: Math.round(envPositive('BENCH_RUNS', 3)),
    connections: Math.round(envPositive('BENCH_CONNECTIONS', 50)),
    pipeline: Math.round(envPositive('BENCH_PIPELINE', 16)),
    idleConnections: Math.round(envPositive('BENCH_IDLE_CONNECTIONS', 5000)),
    idleWarmup: Math.round(envPositive('BENCH_IDLE_WARMUP', 200)),
    servers: envList('BENCH_SERVERS') ?? SERVERS.map((s) => s.id),
    scenarios,
    serverCpu: Number(process.env.BENCH_SERVER_CPU ?? 1),
    loadCpu: Number(process.env.BENCH_LOAD_CPU ?? 0),
    runner: process.env.BENCH_RUNNER === 'tsx' ? 'tsx' : 'esbuild',
    print: true,
  };
}

// ---------------------------------------------------------------------------------------
// Child processes

const { live, track, killAllNow } = childTracker();

/** A running server child. */
interface ServerProc {
  spec: ServerSpec;
  child: ChildProcess;
  pid: number;
  port: number;
  stderr: () => string;
  exited: () => boolean;
}

/** Precompiles each server (see {@link prepareLaunches}), keyed by server id. */
function prepareServerLaunches(specs: ServerSpec[], runner: 'esbuild' | 'tsx', dir: string | null): Promise<{ launches: Map<string, Launch>; runner: 'esbuild' | 'tsx'; note?: string }> {
  const entries = specs.map((spec) => ({ key: spec.id, source: join(ROOT, 'bench', 'servers', `${spec.id}.ts`), outName: `${spec.id}.mjs` }));
  return prepareLaunches(entries, runner, dir, { sourcemap: false, what: 'servers' });
}

/** Starts one server; rejects with a one-line reason when it does not come up. */
async function startServer(spec: ServerSpec, launch: Launch, scenario: 'hello' | 'big', cpu: number | null): Promise<ServerProc> {
  if ('error' in launch) throw new Error(launch.error);
  const env = { ...process.env, SCENARIO: scenario, PORT: '0', BENCH_CHILD: '1', NODE_ENV: 'production' };
  return { spec, ...(await spawnListening(pinned(cpu, [process.execPath, ...launch.argv]), ROOT, env, track)) };
}

/** SIGTERM, then SIGKILL after 2 s; resolves when the child is gone. */
function stopServer(proc: ServerProc): Promise<void> {
  return stopChild(proc.child);
}

// ---------------------------------------------------------------------------------------
// Formatting

function fmtMB(bytes: number, digits = 1): string {
  return Number.isFinite(bytes) ? (bytes / 1024 / 1024).toFixed(digits) : '-';
}

/** Prints rows as an aligned table; the first column is left-aligned, the rest right. */
function printTable(head: string[], rows: string[][]): void {
  printTableWith(head, rows, (s) => console.log(s), false);
}

// ---------------------------------------------------------------------------------------
// The bench

/**
 * Runs the server benchmark and prints its tables. Every child process is ended before it
 * returns or throws, and on SIGINT/SIGTERM.
 */
export async function runServerBench(overrides: Partial<ServerBenchOptions> = {}): Promise<ServerBenchResult> {
  const t0 = performance.now();
  const opts: ServerBenchOptions = { ...defaultOptions(), ...overrides };
  const log = (s = ''): void => {
    if (opts.print) console.log(s);
  };
  const specs = SERVERS.filter((s) => opts.servers.includes(s.id));
  const cores = availableParallelism();
  const wrk = wrkVersion();
  const canPin = tasksetUsable(opts.serverCpu) && tasksetUsable(opts.loadCpu) && opts.serverCpu !== opts.loadCpu;
  const serverCpu = canPin ? opts.serverCpu : null;
  const loadCpu = canPin ? opts.loadCpu : null;

  const result: ServerBenchResult = {
    machine: { cores, cpu: cpus()[0]?.model ?? 'unknown', node: process.version, wrk, pinned: canPin },
    options: opts,
    scenarios: [],
    idle: null,
    skipped: [],
  };

  log(`HTTP/1.1 server: ${cores} cores (${result.machine.cpu}), node ${process.version}, ${wrk ?? 'wrk NOT FOUND'}`);
  if (canPin) {
    log(`pinning: servers on core ${opts.serverCpu} (taskset -c ${opts.serverCpu}), wrk on core ${opts.loadCpu} (taskset -c ${opts.loadCpu})`);
  } else {
    log(`WARNING: not pinning (${cores < 2 ? `only ${cores} core` : 'taskset missing or unusable; Debian package util-linux'}): ` + 'servers and wrk share the cores, figures are noisier');
  }
  if (!wrk) log('WARNING: wrk not found (Debian package "wrk"): throughput scenarios skipped');

  let buildDir: string | null = null;
  let scriptDir: string | null = null;
  const removeDirs = (): void => {
    for (const dir of [buildDir, scriptDir]) if (dir) rmSync(dir, { recursive: true, force: true });
  };

  // Interrupts and errors end every child.
  // The children are reaped (waited for, up to 1 s) before the signal is re-raised.
  const { checkAborted, dispose } = abortOnSignals({ live, track, killAllNow }, removeDirs);

  const running: ServerProc[] = [];
  const skippedReasons = new Map<string, string>();
  const skip = (spec: ServerSpec, reason: string): void => {
    if (skippedReasons.has(spec.id)) return;
    skippedReasons.set(spec.id, reason);
    result.skipped.push({ server: spec.label, reason });
    log(`  skipping ${spec.label}: ${reason}`);
  };

  const startAll = async (scenario: 'hello' | 'big', launches: Map<string, Launch>): Promise<ServerProc[]> => {
    checkAborted();
    // Started together (they share the server core but are idle once listening).
    const started = await Promise.all(
      specs.map((spec) =>
        startServer(spec, launches.get(spec.id) ?? { error: 'no launcher' }, scenario, serverCpu).then(
          (proc) => {
            running.push(proc);
            return proc;
          },
          (e: Error) => {
            skip(spec, e.message);
            return null;
          },
        ),
      ),
    );
    checkAborted();
    return started.filter((p): p is ServerProc => p !== null);
  };
  const stopAll = async (procs: ServerProc[]): Promise<void> => {
    await Promise.all(procs.map(stopServer));
    for (const p of procs) running.splice(running.indexOf(p), 1);
  };

  try {
    let launches: Map<string, Launch>;
    {
      if (opts.runner === 'esbuild') {
        const cache = join(ROOT, 'node_modules', '.cache');
        await mkdir(cache, { recursive: true });
        buildDir = await mkdtemp(join(cache, 'switchyard-bench-'));
      }
      const prepared = await prepareServerLaunches(specs, opts.runner, buildDir);
      launches = prepared.launches;
      if (prepared.note) log(`WARNING: ${prepared.note}`);
      log(prepared.runner === 'esbuild' ? 'servers: precompiled with esbuild (bundled sources, npm packages external, target node20), run with plain node' : 'servers: run with node --import tsx');
    }
    log(`runs: ${opts.runs} x ${opts.duration} s per scenario and server (median), ${opts.warmup} s warm-up, ` + 'servers alternate in rotating order; ratios = median of per-round ratios');

    const urlOf = (p: ServerProc): string => `http://${HOST}:${p.port}/`;
    const printTableIf = (head: string[], rows: string[][]): void => {
      if (opts.print) printTable(head, rows);
    };

    /** One throughput scenario over already-running servers. */
    const throughput = async (name: ScenarioName, title: string, procs: ServerProc[], script: string | undefined, warm: boolean): Promise<void> => {
      const base = { connections: opts.connections, threads: 1, cpu: loadCpu, ...(script ? { script } : {}) };
      const command = wrkArgv({ ...base, duration: opts.duration, url: `http://${HOST}:<port>/` }).join(' ');
      log();
      log(`### ${title}`);
      log(`$ ${command}`);
      const runs = new Map<ServerProc, WrkResult[]>(procs.map((p) => [p, []]));
      // CPU µs per request, per round: what a wrk-bound scenario (64 KiB bodies) compares.
      const cpus = new Map<ServerProc, number[]>(procs.map((p) => [p, []]));
      const rss = new Map<ServerProc, number>(procs.map((p) => [p, NaN]));
      const notes = new Map<ServerProc, string>();
      const alive = (p: ServerProc): boolean => {
        if (!p.exited()) return true;
        if (!notes.has(p)) notes.set(p, `died: ${firstLines(p.stderr()) || 'no stderr'}`);
        return false;
      };
      if (warm && opts.warmup > 0) {
        for (const p of procs) {
          checkAborted();
          if (!alive(p)) continue;
          await runWrk({ ...base, duration: opts.warmup, url: urlOf(p) }, (c) => c && track(c)).catch((e: Error) => notes.set(p, e.message));
        }
      }
      await inRotation(
        procs,
        opts.runs,
        notes,
        (p) => p,
        checkAborted,
        async (p) => {
          const cpu0 = procCpuMs(p.pid);
          const r = await runWrk({ ...base, duration: opts.duration, url: urlOf(p) }, (c) => c && track(c));
          runs.get(p)?.push(r);
          cpus.get(p)?.push(r.requests > 0 ? ((procCpuMs(p.pid) - cpu0) * 1000) / r.requests : NaN);
          const now = readRss(p.pid).rss;
          const prev = rss.get(p) ?? NaN;
          rss.set(p, Number.isFinite(prev) ? Math.max(prev, now) : now);
        },
      );
      checkAborted();
      const rows: ThroughputRow[] = procs.map((p) => {
        const rs = runs.get(p) ?? [];
        alive(p);
        const reqs = rs.map((r) => r.requestsPerSec);
        const m = median(reqs);
        const note = notes.get(p);
        return {
          server: p.spec.label,
          reqPerSec: m,
          mibPerSec: (m * BIG_SIZE) / 1024 / 1024,
          runs: reqs,
          vsNodeHttp: NaN,
          vsFastify: NaN,
          rss: rss.get(p) ?? NaN,
          cpuPerRequest: median(cpus.get(p) ?? []),
          cpuVsNodeHttp: NaN,
          errors: rs.reduce((a, r) => a + r.errors, 0),
          ...(note ? { note } : {}),
        };
      });
      // Ratios pair the runs of one round (measured seconds apart), then take the median, so
      // a machine whose speed drifts between rounds moves both sides of each ratio alike.
      const ratio = (r: ThroughputRow, label: string): number =>
        pairedRatio(
          r,
          rows.find((x) => x.server === label),
          opts.runs,
        );
      for (const r of rows) {
        r.vsNodeHttp = ratio(r, 'node:http');
        r.vsFastify = ratio(r, 'fastify');
      }
      const nodeProc = procs.find((p) => p.spec.label === 'node:http');
      const nodeCpu = nodeProc === undefined ? [] : (cpus.get(nodeProc) ?? []);
      for (const p of procs) {
        const mine = cpus.get(p) ?? [];
        const row = rows.find((x) => x.server === p.spec.label)!;
        row.cpuVsNodeHttp = median(mine.map((c, i) => c / (nodeCpu[i] ?? NaN)).filter(Number.isFinite));
      }
      result.scenarios.push({ name, title, command, rows });
      const spread = runSpread(rows);
      const big = name === 'big';
      printTableIf(
        ['server', ...(big ? ['MiB/s'] : []), 'req/s', 'vs node:http', 'vs fastify', 'CPU µs/req', 'CPU vs node:http', 'RSS MB', 'runs (req/s)', 'errors'],
        rows.map((r) => [
          r.server,
          ...(big ? [Number.isFinite(r.mibPerSec) ? r.mibPerSec.toFixed(0) : '-'] : []),
          fmtInt(r.reqPerSec),
          fmtRatio(r.vsNodeHttp),
          fmtRatio(r.vsFastify),
          Number.isFinite(r.cpuPerRequest) ? r.cpuPerRequest.toFixed(1) : '-',
          fmtRatio(r.cpuVsNodeHttp),
          fmtMB(r.rss),
          r.runs.map(fmtK).join(' ') || '-',
          r.note ? r.note.slice(0, 120) : r.errors ? String(r.errors) : '0',
        ]),
      );
      if (spread > 1.25) {
        log(`note: noisy machine, runs of one server differ by up to ${spread.toFixed(1)}x; raise BENCH_RUNS / BENCH_DURATION for firmer medians`);
      }
    };
    const want = (s: ScenarioName): boolean => opts.scenarios.includes(s);

    if (wrk && (want('hello') || want('pipeline'))) {
      const procs = await startAll('hello', launches);
      if (want('hello')) {
        await throughput('hello', `hello world, keep-alive, ${opts.connections} connections (req/s)`, procs, undefined, true);
      }
      if (want('pipeline')) {
        scriptDir = await mkdtemp(join(tmpdir(), 'switchyard-bench-'));
        const script = await writePipelineScript(scriptDir, opts.pipeline);
        await throughput('pipeline', `hello world, pipelining depth ${opts.pipeline}, ${opts.connections} connections (req/s)`, procs, script, !want('hello'));
      }
      await stopAll(procs);
    }

    if (wrk && want('big')) {
      const procs = await startAll('big', launches);
      await throughput('big', `64 KiB body, keep-alive, ${opts.connections} connections (body MiB/s, req/s)`, procs, undefined, true);
      await stopAll(procs);
    }

    if (want('idle')) {
      log();
      log(`### resident memory, ${opts.idleConnections.toLocaleString('en-US')} idle keep-alive connections (one request each)`);
      log(`fresh servers per round; RSS = VmRSS of the server from /proc/<pid>/status, after minus before; median of ${opts.runs} rounds`);
      log(`warm: measured in other fresh servers after 3 x ${opts.idleWarmup} connections were opened, served and closed`);
      const samples = new Map<string, { before: number[]; after: number[]; delta: number[]; deltaWarm: number[]; open: number[]; note?: string }>();
      for (let round = 0; round < opts.runs; round++) {
        for (const warm of [false, true]) {
          const procs = await startAll('hello', launches);
          try {
            for (const p of procs) {
              checkAborted();
              const s = samples.get(p.spec.id) ?? { before: [], after: [], delta: [], deltaWarm: [], open: [] };
              samples.set(p.spec.id, s);
              try {
                await sequentialRequests(HOST, p.port, 20); // first-request paths, before the baseline
                if (warm) {
                  for (let i = 0; i < 3 && opts.idleWarmup > 0; i++) {
                    const w = await openIdleConnections(HOST, p.port, opts.idleWarmup);
                    w.close();
                    await sleep(200);
                  }
                }
                await sleep(100);
                const before = readRss(p.pid).rss;
                const conns = await openIdleConnections(HOST, p.port, opts.idleConnections);
                await sleep(300);
                const after = readRss(p.pid).rss;
                s.open.push(conns.open());
                conns.close();
                if (warm) {
                  s.deltaWarm.push(after - before);
                } else {
                  s.before.push(before);
                  s.after.push(after);
                  s.delta.push(after - before);
                }
              } catch (e) {
                s.note = (e as Error).message;
              }
            }
          } finally {
            await stopAll(procs);
          }
        }
      }
      checkAborted();
      const rows: IdleRow[] = [];
      for (const spec of specs) {
        const s = samples.get(spec.id);
        if (!s) continue;
        const delta = median(s.delta);
        rows.push({
          server: spec.label,
          rssBefore: median(s.before),
          rssAfter: median(s.after),
          delta,
          deltas: s.delta,
          perConnection: delta / opts.idleConnections,
          perConnectionWarm: median(s.deltaWarm) / opts.idleConnections,
          deltasWarm: s.deltaWarm,
          open: s.open.length ? Math.min(...s.open) : NaN,
          vsNodeHttp: NaN,
          vsFastify: NaN,
          ...(s.note ? { note: s.note } : {}),
        });
      }
      const by = (label: string): number => rows.find((r) => r.server === label)?.delta ?? NaN;
      for (const r of rows) {
        r.vsNodeHttp = r.delta / by('node:http');
        r.vsFastify = r.delta / by('fastify');
      }
      result.idle = rows;
      printTableIf(
        ['server', 'RSS before MB', 'RSS after MB', 'delta MB', 'per conn KiB', 'warm per conn KiB', 'vs node:http', 'vs fastify', 'open', 'deltas MB', 'warm deltas MB', 'note'],
        rows.map((r) => [
          r.server,
          fmtMB(r.rssBefore),
          fmtMB(r.rssAfter),
          fmtMB(r.delta),
          Number.isFinite(r.perConnection) ? (r.perConnection / 1024).toFixed(1) : '-',
          Number.isFinite(r.perConnectionWarm) ? (r.perConnectionWarm / 1024).toFixed(1) : '-',
          fmtRatio(r.vsNodeHttp),
          fmtRatio(r.vsFastify),
          fmtInt(r.open),
          r.deltas.map((d) => fmtMB(d)).join(' ') || '-',
          r.deltasWarm.map((d) => fmtMB(d)).join(' ') || '-',
          r.note ?? '',
        ]),
      );
    }
    log();
    log(`server bench took ${((performance.now() - t0) / 1000).toFixed(0)} s`);
    if (result.skipped.length) {
      for (const s of result.skipped) log(`skipped ${s.server}: ${s.reason}`);
    }
    return result;
  } finally {
    await Promise.all(running.map(stopServer)).catch(() => {});
    killAllNow();
    dispose();
    removeDirs();
  }
}

if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(process.argv[1]).href) {
  runServerBench().catch((err: unknown) => {
    console.error(err);
    process.exitCode = 1;
  });
}
