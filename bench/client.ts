/**
 * HTTP/1.1 client benchmark: switchyard's `Client` side by side with undici (`Pool.request`
 * and `fetch`), `node:http` with a keep-alive Agent, axios and got, against the same server
 * in one run; and the fetch rows: switchyard's `fetch` (on the default kernel, as `HTTP.fetch`)
 * beside undici's `fetch` and Node's global `fetch`.
 *
 * Run directly with `node --import tsx bench/client.ts`, or call {@link runClientBench} from
 * the bench runner. Needs `taskset` (util-linux) for pinning.
 *
 * Scenarios (keep-alive, GET of an 11-byte `hello world` body, every client reads each body
 * to its end):
 *   sequential  one request at a time: the next is sent when the previous body was read
 *   concurrent  50 in flight: 50 loops like the one above, so 50 requests are always outstanding
 *               (each client's pool allows 50 connections)
 *
 * Method: the server is a child process pinned to one core (`taskset -c 1`), by default the
 * bare `node:net` responder of bench/servers/net-raw.ts (a precomputed response per request
 * head, no parsing), so the server is not the bottleneck; its CPU use is reported per run to
 * show it. Each client is its own child process (bench/clients/runner.ts) pinned to the other
 * core (`taskset -c 0`): no client shares a JIT, heap or event loop with another, and all of
 * them talk to the same server process. The clients start together and idle while another
 * is measured; per scenario each first gets a warm-up run, then they are measured in
 * rotating order (A B C, B C A, ...) for several rounds so machine drift hits all alike, and
 * the median req/s is reported. Ratios are the median of per-round ratios (runs of one round
 * are seconds apart). "CPU us/req" is the client process's own CPU time per request (steadier
 * than req/s on a busy machine), "client CPU" / "server CPU" their use of their core, and
 * "other load" the highest CPU use of all other processes during a run, as a share of the
 * machine (from /proc/stat minus the two processes' own time): a run above 15% is repeated.
 *
 * Programs are TypeScript precompiled with esbuild into plain ESM (the project's sources
 * bundled, npm packages external, as tsup builds dist/) and run with plain `node`;
 * `BENCH_RUNNER=tsx` runs them with `node --import tsx` instead.
 *
 * Profiling: `BENCH_CLIENT_PROFILE=switchyard,undici-request` skips the comparison and runs
 * each listed client alone per scenario under `node --cpu-prof` (warm-up + one run), then
 * prints self time by function (switchyard's functions mapped back to their sources). The
 * profiles stay in BENCH_CLIENT_PROFILE_DIR (default a fresh directory under the OS temp dir).
 *
 * Environment: BENCH_CLIENT_DURATION or BENCH_DURATION (s per run, default 1.5),
 * BENCH_CLIENT_WARMUP (s, default 1), BENCH_RUNS (default 3), BENCH_CONNECTIONS (in flight in
 * the concurrent scenario, default 50), BENCH_CLIENTS (comma list of switchyard (the kernel's
 * `Client` alone), switchyard-preset (a `Client` on the default kernel with presets.defaults, as
 * `HTTP.get` uses), switchyard-fetch, undici-request, undici-fetch, node-fetch, node-http, axios,
 * got), BENCH_CLIENT_SCENARIOS (sequential,
 * concurrent), BENCH_CLIENT_SERVER (net-raw | switchyard | node-http | fastify: a program of
 * bench/servers/), BENCH_SERVER_CPU / BENCH_CLIENT_CPU (default 1 / 0), BENCH_RUNNER
 * (esbuild | tsx), BENCH_CLIENT_MAX_OTHER_LOAD / BENCH_CLIENT_RETRIES (a run during which
 * other processes used over 15% of the machine, "other load", is repeated once by default and
 * the less disturbed run counts, while the bench has run for under BENCH_CLIENT_RETRY_BUDGET
 * s, default 85; 0 retries turns it off), BENCH_CLIENT_PROFILE,
 * BENCH_CLIENT_PROFILE_DIR.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { readdirSync, readFileSync, rmSync } from 'node:fs';
import { mkdir, mkdtemp } from 'node:fs/promises';
import { availableParallelism, cpus, tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import type { RunnerCommand, RunnerMessage } from './clients/runner.js';
import { printProfileSummary, summarizeProfile } from './clients/cpuprofile.js';
import { median, pinned, procCpuMs, tasksetUsable } from './load.js';
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
} from './common.js';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const HOST = '127.0.0.1';
/** Body size of the servers' `hello` scenario (`hello world`). */
const BODY_BYTES = 11;

/** A client under test (bench/clients/runner.ts `CLIENT`). */
interface ClientSpec {
  id: string;
  label: string;
  /** Left out unless BENCH_CLIENTS names it. */
  optional?: boolean;
}

const CLIENTS: ClientSpec[] = [
  { id: 'switchyard', label: 'switchyard' },
  { id: 'switchyard-preset', label: 'switchyard, default preset' },
  { id: 'undici-request', label: 'undici request' },
  { id: 'switchyard-fetch', label: 'switchyard fetch' },
  { id: 'undici-fetch', label: 'undici fetch' },
  { id: 'node-fetch', label: 'node fetch' },
  { id: 'node-http', label: 'node:http' },
  { id: 'axios', label: 'axios' },
  { id: 'got', label: 'got' },
];
const SERVER_PROGRAMS = ['net-raw', 'switchyard', 'node-http', 'fastify'];
const SCENARIOS = ['sequential', 'concurrent'] as const;
type ScenarioName = (typeof SCENARIOS)[number];

/** Settings of one run of the client bench (defaults from the environment). */
export interface ClientBenchOptions {
  duration: number;
  warmup: number;
  runs: number;
  /** Requests in flight in the concurrent scenario (and every client's connection limit). */
  connections: number;
  clients: string[];
  scenarios: ScenarioName[];
  /** Server program under bench/servers/. */
  server: string;
  serverCpu: number;
  clientCpu: number;
  runner: 'esbuild' | 'tsx';
  /** A run during which other processes used more than this % of the machine is repeated... */
  maxOtherLoad: number;
  /** ...up to this many times (the least disturbed run counts)... */
  retries: number;
  /** ...while the bench has run for less than this many seconds. */
  retryBudget: number;
  /** Clients to profile instead of comparing (empty: compare). */
  profile: string[];
  profileDir: string | null;
  print: boolean;
}

/** One client's figures in one scenario. */
export interface ClientRow {
  client: string;
  /** Median req/s, NaN when it did not run. */
  reqPerSec: number;
  runs: number[];
  /** Median over rounds of this client's req/s over undici request's in the same round. */
  vsUndici: number;
  /** Likewise against axios. */
  vsAxios: number;
  /** Median client CPU time per request, microseconds. */
  cpuUsPerReq: number;
  /** Median client CPU use during a run, % of one core. */
  clientCpu: number;
  /** Median server CPU use during this client's runs, % of one core. */
  serverCpu: number;
  /** Highest CPU use of other processes (not the server or this client) during a run, % of the machine. */
  otherLoad: number;
  errors: number;
  note?: string;
}

/** A performance target of the client and whether it held. */
export interface TargetCheck {
  target: string;
  ratio: number;
  needed: number;
  holds: boolean;
}

/** What {@link runClientBench} returns. */
export interface ClientBenchResult {
  machine: { cores: number; cpu: string; node: string; pinned: boolean; versions: Record<string, string> };
  options: ClientBenchOptions;
  scenarios: { name: ScenarioName; title: string; rows: ClientRow[] }[];
  targets: TargetCheck[];
  skipped: { client: string; reason: string }[];
  /** Profile mode: the profile files written. */
  profiles: { client: string; scenario: ScenarioName; file: string }[];
}

function envNumber(name: string, fallback: number): number {
  const v = Number(process.env[name]);
  return process.env[name] !== undefined && process.env[name] !== '' && Number.isFinite(v) && v >= 0 ? v : fallback;
}

function defaultOptions(): ClientBenchOptions {
  const scenarios = (envList('BENCH_CLIENT_SCENARIOS') ?? [...SCENARIOS]).filter((s): s is ScenarioName => (SCENARIOS as readonly string[]).includes(s));
  const server = process.env.BENCH_CLIENT_SERVER ?? 'net-raw';
  return {
    duration: envNumber('BENCH_CLIENT_DURATION', envNumber('BENCH_DURATION', 1.5)) || 1.5,
    warmup: envNumber('BENCH_CLIENT_WARMUP', 1),
    runs: Math.max(1, Math.round(envNumber('BENCH_RUNS', 3))),
    connections: Math.max(1, Math.round(envNumber('BENCH_CONNECTIONS', 50))),
    clients: envList('BENCH_CLIENTS') ?? CLIENTS.filter((c) => !c.optional).map((c) => c.id),
    scenarios,
    server: SERVER_PROGRAMS.includes(server) ? server : 'net-raw',
    serverCpu: Number(process.env.BENCH_SERVER_CPU ?? 1),
    clientCpu: Number(process.env.BENCH_CLIENT_CPU ?? 0),
    runner: process.env.BENCH_RUNNER === 'tsx' ? 'tsx' : 'esbuild',
    maxOtherLoad: envNumber('BENCH_CLIENT_MAX_OTHER_LOAD', 15),
    retries: Math.round(envNumber('BENCH_CLIENT_RETRIES', 1)),
    retryBudget: envNumber('BENCH_CLIENT_RETRY_BUDGET', 85),
    profile: envList('BENCH_CLIENT_PROFILE') ?? [],
    profileDir: process.env.BENCH_CLIENT_PROFILE_DIR ?? null,
    print: true,
  };
}

// ---------------------------------------------------------------------------------------
// Child processes

const { live, track, killAllNow } = childTracker();

/**
 * Precompiles the programs (see {@link prepareLaunches}) keyed by source path, with external
 * source maps for profiles.
 */
function prepareProgramLaunches(sources: string[], runner: 'esbuild' | 'tsx', dir: string | null): Promise<{ launches: Map<string, Launch>; runner: 'esbuild' | 'tsx'; note?: string }> {
  const entries = sources.map((src, i) => ({ key: src, source: src, outName: `${i}-${src.split('/').pop()!.replace(/\.ts$/, '')}.mjs` }));
  return prepareLaunches(entries, runner, dir, { sourcemap: 'external', what: 'programs' });
}

/** A running server child. */
interface ServerProc {
  child: ChildProcess;
  pid: number;
  port: number;
}

/** Starts the server; rejects with a one-line reason when it does not come up. */
async function startServer(launch: Launch, cpu: number | null): Promise<ServerProc> {
  if ('error' in launch) throw new Error(launch.error);
  const env = { ...process.env, SCENARIO: 'hello', PORT: '0', BENCH_CHILD: '1', NODE_ENV: 'production' };
  try {
    return await spawnListening(pinned(cpu, [process.execPath, ...launch.argv]), ROOT, env, track);
  } catch (err) {
    throw new Error(`server ${(err as Error).message}`, { cause: err });
  }
}

type RunResult = Extract<RunnerMessage, { type: 'result' }>;

/** One measured run: the child's figures and what the harness saw meanwhile. */
interface Measured {
  r: RunResult;
  /** Server process CPU, % of one core. */
  serverCpu: number;
  /** CPU of processes other than the server and this client, % of the machine. */
  otherLoad: number;
}

/** A running client child. */
interface ClientProc {
  spec: ClientSpec;
  child: ChildProcess;
  version: string;
  /** Sends one run and resolves with its result (rejects if the child dies). */
  run(seconds: number, concurrency: number): Promise<RunResult>;
  stderr(): string;
  exit(): Promise<void>;
}

/** Starts a client child; resolves once it has made one request successfully. */
function startClient(spec: ClientSpec, launch: Launch, url: string, connections: number, cpu: number | null, nodeFlags: string[] = []): Promise<ClientProc> {
  if ('error' in launch) return Promise.reject(new Error(launch.error));
  const [cmd, ...args] = pinned(cpu, [process.execPath, ...nodeFlags, ...launch.argv]);
  const child = spawn(cmd as string, args, {
    cwd: ROOT,
    env: { ...process.env, CLIENT: spec.id, URL: url, CONNECTIONS: String(connections), EXPECT_BYTES: String(BODY_BYTES), NODE_ENV: 'production' },
    stdio: ['ignore', 'pipe', 'pipe', 'ipc'],
  });
  track(child);
  let err = '';
  child.stderr?.setEncoding('utf8').on('data', (s: string) => {
    err = (err + s).slice(-4000);
  });
  child.stdout?.resume();
  let pending: { resolve(r: RunResult): void; reject(e: Error): void } | null = null;
  let exited = false;
  const died = (): Error => new Error(`client process exited${err ? `: ${firstLines(err)}` : ''}`);
  child.once('exit', () => {
    exited = true;
    const p = pending;
    pending = null;
    p?.reject(died());
  });
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`did not get ready within 20 s${err ? `: ${firstLines(err)}` : ''}`));
    }, 20_000);
    child.once('error', (e) => {
      clearTimeout(timer);
      reject(e);
    });
    child.once('exit', (code, signal) => {
      clearTimeout(timer);
      reject(new Error(`exited (${signal ?? `status ${code}`}) before it was ready${err ? `: ${firstLines(err)}` : ''}`));
    });
    child.on('message', (m: RunnerMessage) => {
      if (m.type === 'fatal') {
        clearTimeout(timer);
        reject(new Error(`cannot run: ${m.message}`));
      } else if (m.type === 'ready') {
        clearTimeout(timer);
        resolve({
          spec,
          child,
          version: m.version,
          stderr: () => err,
          run: (seconds, concurrency) => {
            if (exited) return Promise.reject(died());
            return new Promise<RunResult>((res, rej) => {
              pending = { resolve: res, reject: rej };
              const cmd: RunnerCommand = { type: 'run', seconds, concurrency };
              child.send(cmd);
            });
          },
          exit: async () => {
            if (exited) return;
            const gone = once(child, 'exit');
            const cmd: RunnerCommand = { type: 'exit' };
            try {
              child.send(cmd);
            } catch {
              child.kill('SIGTERM');
            }
            const t = setTimeout(() => child.kill('SIGKILL'), 5000);
            await gone;
            clearTimeout(t);
          },
        });
      } else if (m.type === 'result') {
        const p = pending;
        pending = null;
        p?.resolve(m);
      }
    });
  });
}

/** Jiffies of all cores from /proc/stat: busy, total, and user+nice+system+irq+softirq (null when unavailable). */
function machineTicks(): { busy: number; total: number; tasks: number } | null {
  try {
    const line = readFileSync('/proc/stat', 'utf8').split('\n')[0] ?? '';
    const v = line.trim().split(/\s+/).slice(1).map(Number);
    const total = v.reduce((a, b) => a + b, 0);
    const idle = (v[3] ?? 0) + (v[4] ?? 0);
    // Processes' own times include the (soft)irq work done in their context: count it too.
    return { busy: total - idle, total, tasks: (v[0] ?? 0) + (v[1] ?? 0) + (v[2] ?? 0) + (v[5] ?? 0) + (v[6] ?? 0) };
  } catch {
    return null;
  }
}

/** Share of all cores busy over `ms` (before anything of ours runs: other processes' load). */
async function machineBusy(ms: number): Promise<number> {
  const a = machineTicks();
  await sleep(ms);
  const b = machineTicks();
  if (a === null || b === null || b.total === a.total) return NaN;
  return (100 * (b.busy - a.busy)) / (b.total - a.total);
}

// ---------------------------------------------------------------------------------------
// Formatting

/** Largest finite value, NaN for none. */
function maxOf(xs: number[]): number {
  const f = xs.filter(Number.isFinite);
  return f.length ? Math.max(...f) : NaN;
}

function fmtPct(p: number): string {
  return Number.isFinite(p) ? `${p.toFixed(0)}%` : '-';
}

/** Prints rows as an aligned table; the first column is left-aligned, the rest right. */
function printTable(head: string[], rows: string[][], log: (s: string) => void): void {
  printTableWith(head, rows, log, true);
}

const TITLES: Record<ScenarioName, (c: number) => string> = {
  sequential: () => 'sequential GETs, one at a time (req/s)',
  concurrent: (c) => `${c} in flight (req/s)`,
};

// ---------------------------------------------------------------------------------------
// The bench

/**
 * Runs the client benchmark and prints its tables. Every child process is ended before it
 * returns or throws, and on SIGINT/SIGTERM.
 */
export async function runClientBench(overrides: Partial<ClientBenchOptions> = {}): Promise<ClientBenchResult> {
  const t0 = performance.now();
  const opts: ClientBenchOptions = { ...defaultOptions(), ...overrides };
  const log = (s = ''): void => {
    if (opts.print) console.log(s);
  };
  const profiling = opts.profile.length > 0;
  const specs = CLIENTS.filter((c) => (profiling ? opts.profile : opts.clients).includes(c.id));
  const cores = availableParallelism();
  const canPin = tasksetUsable(opts.serverCpu) && tasksetUsable(opts.clientCpu) && opts.serverCpu !== opts.clientCpu;
  const serverCpu = canPin ? opts.serverCpu : null;
  const clientCpu = canPin ? opts.clientCpu : null;

  const result: ClientBenchResult = {
    machine: { cores, cpu: cpus()[0]?.model ?? 'unknown', node: process.version, pinned: canPin, versions: {} },
    options: opts,
    scenarios: [],
    targets: [],
    skipped: [],
    profiles: [],
  };

  log(`HTTP/1.1 client: ${cores} cores (${result.machine.cpu}), node ${process.version}`);
  if (canPin) {
    log(`pinning: server on core ${opts.serverCpu} (taskset -c ${opts.serverCpu}), clients on core ${opts.clientCpu} (taskset -c ${opts.clientCpu})`);
  } else {
    log(`WARNING: not pinning (${cores < 2 ? `only ${cores} core` : 'taskset missing or unusable; Debian package util-linux'}): ` + 'server and clients share the cores, figures are noisier');
  }

  const busy = await machineBusy(500);
  if (Number.isFinite(busy)) {
    const msg = `machine load before start: ${busy.toFixed(0)}% of all cores busy`;
    log(busy > 10 ? `WARNING: ${msg} (other processes): figures will be noisy` : msg);
  }

  let buildDir: string | null = null;
  // Profiles point into the bundles (and their source maps): profile mode keeps them.
  const removeDirs = (): void => {
    if (buildDir && !profiling) rmSync(buildDir, { recursive: true, force: true });
  };

  // Interrupts and errors end every child; the children are reaped (up to 1 s) before the
  // signal is re-raised.
  const { checkAborted, dispose } = abortOnSignals({ live, track, killAllNow }, removeDirs);

  let server: ServerProc | null = null;
  const clients: ClientProc[] = [];
  const skip = (spec: ClientSpec, reason: string): void => {
    if (result.skipped.some((s) => s.client === spec.label)) return;
    result.skipped.push({ client: spec.label, reason });
    log(`  skipping ${spec.label}: ${reason}`);
  };

  try {
    const runnerSrc = join(ROOT, 'bench', 'clients', 'runner.ts');
    const serverSrc = join(ROOT, 'bench', 'servers', `${opts.server}.ts`);
    if (opts.runner === 'esbuild') {
      const cache = join(ROOT, 'node_modules', '.cache');
      await mkdir(cache, { recursive: true });
      buildDir = await mkdtemp(join(cache, 'switchyard-bench-client-'));
    }
    const prepared = await prepareProgramLaunches([runnerSrc, serverSrc], opts.runner, buildDir);
    if (prepared.note) log(`WARNING: ${prepared.note}`);
    const runnerLaunch = prepared.launches.get(runnerSrc) ?? { error: 'no launcher' };
    log(prepared.runner === 'esbuild' ? 'programs: precompiled with esbuild (bundled sources, npm packages external, target node20), run with plain node' : 'programs: run with node --import tsx');

    server = await startServer(prepared.launches.get(serverSrc) ?? { error: 'no launcher' }, serverCpu);
    const srv = server;
    const url = `http://${HOST}:${srv.port}/`;
    log(`server: bench/servers/${opts.server}.ts (11-byte body, Content-Length, keep-alive) at ${url}`);

    if (profiling) {
      if (buildDir) log(`bundles (kept for the profiles' source maps): ${buildDir}`);
      await profileClients(specs, runnerLaunch, url, opts, clientCpu, result, log, checkAborted);
      return result;
    }

    log(
      `runs: ${opts.runs} x ${opts.duration} s per scenario and client (median), ${opts.warmup} s warm-up each; ` +
        'clients alternate in rotating order; ratios = median of per-round ratios' +
        (opts.retries > 0 ? `; a run with other load over ${opts.maxOtherLoad}% is repeated (up to ${opts.retries}x, within ${opts.retryBudget} s)` : ''),
    );
    log('each client in its own process; every response body is read in full (and its length checked)');

    // All clients start together (idle once ready).
    const started = await Promise.all(
      specs.map((spec) =>
        startClient(spec, runnerLaunch, url, opts.connections, clientCpu).then(
          (p) => p,
          (e: Error) => {
            skip(spec, e.message);
            return null;
          },
        ),
      ),
    );
    for (const p of started) {
      if (p === null) continue;
      clients.push(p);
      result.machine.versions[p.spec.label] = p.version;
    }
    checkAborted();
    log(
      'clients: ' +
        clients
          .map((c) => {
            const v = c.version === 'local' ? '' : c.version.startsWith('v') ? ` (node ${c.version})` : ` ${c.version}`;
            return `${c.spec.label}${v}`;
          })
          .join(', '),
    );

    for (const scenario of opts.scenarios) {
      const concurrency = scenario === 'sequential' ? 1 : opts.connections;
      const title = TITLES[scenario](opts.connections);
      log();
      log(`### ${title}`);
      const runs = new Map<ClientProc, Measured[]>(clients.map((c) => [c, []]));
      let retried = 0;
      const notes = new Map<ClientProc, string>();
      const measure = async (c: ClientProc, seconds: number): Promise<Measured | null> => {
        if (notes.has(c)) return null;
        try {
          const s0 = procCpuMs(srv.pid);
          const c0 = procCpuMs(c.child.pid ?? -1);
          const m0 = machineTicks();
          const w0 = performance.now();
          const r = await c.run(seconds, concurrency);
          const wall = performance.now() - w0;
          const server = procCpuMs(srv.pid) - s0;
          const serverCpu = (100 * server) / wall;
          // CPU (user + system) of every other process meanwhile, % of the whole machine.
          const m1 = machineTicks();
          const otherLoad = m0 && m1 ? Math.max(0, (100 * ((m1.tasks - m0.tasks) * 10 - server - (procCpuMs(c.child.pid ?? -1) - c0))) / (wall * cores)) : NaN;
          if (r.errors > 0 && !notes.has(c)) notes.set(c, `${r.errors} errors: ${r.firstError ?? '?'}`);
          if (r.requests === 0) {
            notes.set(c, `no request completed${r.firstError ? `: ${r.firstError}` : ''}`);
            return null;
          }
          return { r, serverCpu, otherLoad };
        } catch (e) {
          notes.set(c, (e as Error).message);
          return null;
        }
      };
      if (opts.warmup > 0) {
        for (const c of clients) {
          checkAborted();
          await measure(c, opts.warmup);
        }
      }
      for (let round = 0; round < opts.runs; round++) {
        for (let k = 0; k < clients.length; k++) {
          checkAborted();
          const c = clients[(k + round) % clients.length] as ClientProc;
          let m = await measure(c, opts.duration);
          // A run that other processes disturbed (a shared machine) is taken again, once.
          // Not past the time budget, so a busy machine cannot stretch the bench much.
          for (let retry = 0; m !== null && m.otherLoad > opts.maxOtherLoad && retry < opts.retries && performance.now() - t0 < opts.retryBudget * 1000; retry++) {
            retried++;
            const again = await measure(c, opts.duration);
            if (again !== null && !(again.otherLoad > m.otherLoad)) m = again;
          }
          if (m !== null) runs.get(c)?.push(m);
        }
      }
      checkAborted();
      const rows: ClientRow[] = clients.map((c) => {
        const rs = runs.get(c) ?? [];
        const note = notes.get(c);
        return {
          client: c.spec.label,
          reqPerSec: median(rs.map((x) => (x.r.requests * 1000) / x.r.elapsedMs)),
          runs: rs.map((x) => (x.r.requests * 1000) / x.r.elapsedMs),
          vsUndici: NaN,
          vsAxios: NaN,
          cpuUsPerReq: median(rs.map((x) => (x.r.cpuMs * 1000) / x.r.requests)),
          clientCpu: median(rs.map((x) => (100 * x.r.cpuMs) / x.r.elapsedMs)),
          serverCpu: median(rs.map((x) => x.serverCpu)),
          otherLoad: maxOf(rs.map((x) => x.otherLoad)),
          errors: rs.reduce((a, x) => a + x.r.errors, 0),
          ...(note ? { note } : {}),
        };
      });
      const ratio = (r: ClientRow, label: string): number =>
        pairedRatio(
          r,
          rows.find((x) => x.client === label),
          opts.runs,
        );
      for (const r of rows) {
        r.vsUndici = ratio(r, 'undici request');
        r.vsAxios = ratio(r, 'axios');
      }
      result.scenarios.push({ name: scenario, title, rows });
      if (opts.print) {
        printTable(
          ['client', 'req/s', 'vs undici request', 'vs axios', 'CPU us/req', 'client CPU', 'server CPU', 'other load', 'runs (req/s)', 'errors'],
          rows.map((r) => [
            r.client,
            fmtInt(r.reqPerSec),
            fmtRatio(r.vsUndici),
            fmtRatio(r.vsAxios),
            Number.isFinite(r.cpuUsPerReq) ? r.cpuUsPerReq.toFixed(1) : '-',
            fmtPct(r.clientCpu),
            fmtPct(r.serverCpu),
            fmtPct(r.otherLoad),
            r.runs.map(fmtK).join(' ') || '-',
            r.note ? r.note.slice(0, 120) : String(r.errors),
          ]),
          log,
        );
      }
      const spread = runSpread(rows);
      if (retried > 0) log(`note: ${retried} run(s) repeated because other processes used over ${opts.maxOtherLoad}% of the machine`);
      const other = maxOf(rows.map((r) => r.otherLoad));
      if (other > opts.maxOtherLoad) {
        log(`note: other processes used up to ${other.toFixed(0)}% of the machine during a run ("other load"): those runs are disturbed`);
      }
      if (spread > 1.25) {
        log(`note: noisy machine, runs of one client differ by up to ${spread.toFixed(1)}x; raise BENCH_RUNS / BENCH_CLIENT_DURATION for firmer medians`);
      }
    }

    // The client's performance targets: at least undici's request, at least 3x axios.
    const sy = (s: ScenarioName): ClientRow | undefined => result.scenarios.find((x) => x.name === s)?.rows.find((r) => r.client === 'switchyard');
    for (const s of opts.scenarios) {
      const row = sy(s);
      if (!row) continue;
      const name = s === 'sequential' ? 'sequential' : `${opts.connections} in flight`;
      if (Number.isFinite(row.vsUndici)) result.targets.push({ target: `switchyard >= undici request, ${name}`, ratio: row.vsUndici, needed: 1, holds: row.vsUndici >= 1 });
      if (Number.isFinite(row.vsAxios)) result.targets.push({ target: `switchyard >= 3x axios, ${name}`, ratio: row.vsAxios, needed: 3, holds: row.vsAxios >= 3 });
      // What users run (`HTTP.get` on the default preset) against undici's request, 50 in flight.
      const preset = result.scenarios.find((x) => x.name === s)?.rows.find((r) => r.client === 'switchyard, default preset');
      if (s !== 'sequential' && preset && Number.isFinite(preset.vsUndici)) {
        result.targets.push({ target: `switchyard default preset >= 1.3x undici request, ${name}`, ratio: preset.vsUndici, needed: 1.3, holds: preset.vsUndici >= 1.3 });
      }
    }
    // fetch's target: at least 2x undici's fetch (paired rounds, as the other ratios).
    for (const s of opts.scenarios) {
      const rows = result.scenarios.find((x) => x.name === s)?.rows ?? [];
      const mine = rows.find((r) => r.client === 'switchyard fetch');
      const theirs = rows.find((r) => r.client === 'undici fetch');
      if (!mine || !theirs) continue;
      const r = pairedRatio(mine, theirs, opts.runs);
      const name = s === 'sequential' ? 'sequential' : `${opts.connections} in flight`;
      if (Number.isFinite(r)) result.targets.push({ target: `switchyard fetch >= 2x undici fetch, ${name}`, ratio: r, needed: 2, holds: r >= 2 });
    }
    if (result.targets.length > 0) {
      log();
      log('### targets');
      printTable(
        ['target', 'measured', 'holds'],
        result.targets.map((t) => [t.target, fmtRatio(t.ratio), t.holds ? 'yes' : 'NO']),
        log,
      );
    }
    log();
    log(`client bench took ${((performance.now() - t0) / 1000).toFixed(0)} s`);
    for (const s of result.skipped) log(`skipped ${s.client}: ${s.reason}`);
    return result;
  } finally {
    await Promise.all(clients.map((c) => c.exit().catch(() => {})));
    if (server) await stopChild(server.child).catch(() => {});
    killAllNow();
    dispose();
    removeDirs();
  }
}

/**
 * Profile mode: each listed client alone, per scenario, in a fresh child under `--cpu-prof`
 * (warm-up, then one run of the bench's duration); prints the summary of each profile.
 */
async function profileClients(
  specs: ClientSpec[],
  launch: Launch,
  url: string,
  opts: ClientBenchOptions,
  cpu: number | null,
  result: ClientBenchResult,
  log: (s?: string) => void,
  checkAborted: () => void,
): Promise<void> {
  const dir = opts.profileDir ?? (await mkdtemp(join(tmpdir(), 'switchyard-client-prof-')));
  await mkdir(dir, { recursive: true });
  log(`profile mode: ${specs.map((s) => s.label).join(', ')}; ${opts.warmup} s warm-up + ${opts.duration} s per scenario under --cpu-prof; profiles in ${dir}`);
  for (const spec of specs) {
    for (const scenario of opts.scenarios) {
      checkAborted();
      const concurrency = scenario === 'sequential' ? 1 : opts.connections;
      const sub = join(dir, `${spec.id}-${scenario}`);
      rmSync(sub, { recursive: true, force: true });
      await mkdir(sub, { recursive: true });
      const flags = ['--cpu-prof', `--cpu-prof-dir=${sub}`, '--cpu-prof-interval=250'];
      let proc: ClientProc;
      try {
        proc = await startClient(spec, launch, url, opts.connections, cpu, flags);
      } catch (e) {
        log(`  ${spec.label} ${scenario}: ${(e as Error).message}`);
        continue;
      }
      let r: RunResult | null = null;
      try {
        if (opts.warmup > 0) await proc.run(opts.warmup, concurrency);
        r = await proc.run(opts.duration, concurrency);
      } catch (e) {
        log(`  ${spec.label} ${scenario}: ${(e as Error).message}`);
      } finally {
        await proc.exit();
      }
      const file = readdirSync(sub).find((f) => f.endsWith('.cpuprofile'));
      log();
      log(`### profile: ${spec.label}, ${TITLES[scenario](opts.connections)}`);
      if (r) log(`${fmtInt((r.requests * 1000) / r.elapsedMs)} req/s under the profiler, ${((r.cpuMs * 1000) / r.requests).toFixed(1)} us CPU/req`);
      if (!file) {
        log('no .cpuprofile written');
        continue;
      }
      const path = join(sub, file);
      result.profiles.push({ client: spec.label, scenario, file: path });
      log(`file: ${path} (whole process; summarized: the measured run only)`);
      const window = r ? { fromUs: r.fromUs, toUs: r.toUs, requests: r.requests } : {};
      if (opts.print) printProfileSummary(summarizeProfile(path, window), 25, (s) => log(s));
    }
  }
}

if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(process.argv[1]).href) {
  runClientBench().catch((err: unknown) => {
    console.error(err);
    process.exitCode = 1;
  });
}
