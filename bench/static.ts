/**
 * Static-file benchmark: switchyard's `fileServer` side by side with `@fastify/static` on
 * fastify and `serve-static` on bare `node:http`, for a 4 KiB and a 1 MiB file, in one run.
 *
 * Run directly with `node --import tsx bench/static.ts`, or call {@link runStaticBench} from
 * the bench runner. Load comes from `wrk` (Debian package `wrk`) when installed, else from an
 * undici keep-alive loop in this process (noted in the output).
 *
 * Method: the three servers are child processes serving the same temp directory, pinned to
 * one core (`taskset -c 1`) with wrk on another (`taskset -c 0`); keep-alive, `wrk -t1 -c<n>`.
 * Each server is checked first (status 200, exact length and bytes), warmed up, then measured
 * in rotating rounds (A B C, B C A, ...); the table gives the median req/s and MiB/s, and
 * ratios as the median of per-round ratios. All three send ETag and Last-Modified (switchyard
 * with `etag: 'weak_stat'`) and `Cache-Control: public, max-age=0`, and all stream the file
 * from disk per request (none caches file contents).
 *
 * The servers run from this same file (precompiled with esbuild like bench/server.ts's, or
 * with `node --import tsx`): `STATIC_BENCH_ROLE` picks the server in a child.
 *
 * Environment: BENCH_DURATION (s per run, default 2), BENCH_WARMUP (s, default 1),
 * BENCH_RUNS (default 3), BENCH_CONNECTIONS (default 32), BENCH_SERVER_CPU / BENCH_LOAD_CPU
 * (default 1 / 0), BENCH_RUNNER (esbuild | tsx), BENCH_STATIC_SIZES (comma list of 4k, 1m).
 */
import type { ChildProcess } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import { availableParallelism, cpus, tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
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
import { median, pinned, readRss, runWrk, tasksetUsable, wrkArgv, wrkVersion } from './load.js';
import { exitOnSignal } from './servers/common.js';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const HOST = '127.0.0.1';
const CACHE_CONTROL = 'public, max-age=0';

/** The servers compared. */
const SERVERS = [
  { id: 'switchyard', label: 'switchyard' },
  { id: 'fastify-static', label: '@fastify/static' },
  { id: 'serve-static', label: 'serve-static' },
] as const;
type ServerId = (typeof SERVERS)[number]['id'];

/** The file sizes compared. */
const SIZES = [
  { id: '4k', label: '4 KiB', bytes: 4096 },
  { id: '1m', label: '1 MiB', bytes: 1024 * 1024 },
] as const;

// ---------------------------------------------------------------------------------------
// Server side (a child process): serve STATIC_ROOT, print `PORT <n>`, exit on SIGTERM/stdin EOF.

async function runServerRole(role: ServerId, root: string): Promise<void> {
  let port: number;
  let close: () => unknown;
  if (role === 'switchyard') {
    // Through the package's public entries, as a user would.
    const { serve } = await import('../kernel/index.js');
    const { fileServer } = await import('../plugins/fileserver/index.js');
    const server = await serve(fileServer(root, { etag: 'weak_stat', cacheControl: CACHE_CONTROL }), { host: HOST, port: 0 });
    port = server.port;
    close = () => server.forceClose();
  } else if (role === 'fastify-static') {
    const { default: Fastify } = await import('fastify');
    const { default: fastifyStatic } = await import('@fastify/static');
    const app = Fastify({ logger: false, keepAliveTimeout: 120_000 });
    await app.register(fastifyStatic, { root, prefix: '/', cacheControl: true, maxAge: 0 });
    await app.listen({ host: HOST, port: 0 });
    port = (app.server.address() as AddressInfo).port;
    close = () => app.close();
  } else {
    const { default: serveStatic } = await import('serve-static');
    const http = await import('node:http');
    const serveFiles = serveStatic(root, { index: false, maxAge: 0 });
    const server = http.createServer((req, res) => {
      serveFiles(req, res, () => {
        res.statusCode = 404;
        res.end();
      });
    });
    server.keepAliveTimeout = 120_000;
    await new Promise<void>((resolve) => server.listen(0, HOST, resolve));
    port = (server.address() as AddressInfo).port;
    close = () => server.closeAllConnections();
  }
  process.stdout.write(`PORT ${port}\n`);
  exitOnSignal(close, true);
}

// ---------------------------------------------------------------------------------------
// The harness

/** Settings of one run (defaults from the environment). */
export interface StaticBenchOptions {
  duration: number;
  warmup: number;
  runs: number;
  connections: number;
  sizes: string[];
  serverCpu: number;
  loadCpu: number;
  runner: 'esbuild' | 'tsx';
}

/** One server's figures for one file size. */
export interface StaticRow {
  server: string;
  reqPerSec: number;
  mibPerSec: number;
  runs: number[];
  vsFastifyStatic: number;
  vsServeStatic: number;
  rss: number;
  errors: number;
  note?: string;
}

function defaultOptions(): StaticBenchOptions {
  return {
    duration: Math.round(envPositive('BENCH_DURATION', 2)),
    warmup: Math.round(envPositive('BENCH_WARMUP', 1)),
    runs: Math.round(envPositive('BENCH_RUNS', 3)),
    connections: Math.round(envPositive('BENCH_CONNECTIONS', 32)),
    sizes: envList('BENCH_STATIC_SIZES') ?? SIZES.map((s) => s.id),
    serverCpu: Number(process.env.BENCH_SERVER_CPU ?? 1),
    loadCpu: Number(process.env.BENCH_LOAD_CPU ?? 0),
    runner: process.env.BENCH_RUNNER === 'tsx' ? 'tsx' : 'esbuild',
  };
}

interface Proc {
  id: ServerId;
  label: string;
  child: ChildProcess;
  pid: number;
  port: number;
  stderr: () => string;
  exited: () => boolean;
}

const children = childTracker();

async function startServer(id: ServerId, label: string, launch: Launch, root: string, cpu: number | null): Promise<Proc> {
  if ('error' in launch) throw new Error(launch.error);
  const env = { ...process.env, STATIC_BENCH_ROLE: id, STATIC_ROOT: root, NODE_ENV: 'production' };
  const proc = await spawnListening(pinned(cpu, [process.execPath, ...launch.argv]), ROOT, env, (c) => children.track(c));
  return { id, label, ...proc };
}

/** Fetches `url` once and checks status, length and bytes against `expected`. */
async function verify(url: string, expected: Buffer): Promise<void> {
  const { request } = await import('undici');
  const res = await request(url);
  const body = Buffer.from(await res.body.arrayBuffer());
  if (res.statusCode !== 200) throw new Error(`GET ${url} answered ${res.statusCode}`);
  const sha = (b: Uint8Array): string => createHash('sha256').update(b).digest('hex');
  if (body.length !== expected.length || sha(body) !== sha(expected)) throw new Error(`GET ${url} returned ${body.length} bytes that differ from the file`);
}

/** A keep-alive undici loop standing in for wrk: `connections` requests in flight for `seconds`. */
async function undiciLoad(url: string, connections: number, seconds: number): Promise<{ requestsPerSec: number; errors: number }> {
  const { Pool } = await import('undici');
  const u = new URL(url);
  const pool = new Pool(u.origin, { connections, pipelining: 1 });
  const end = performance.now() + seconds * 1000;
  let done = 0;
  let errors = 0;
  const worker = async (): Promise<void> => {
    while (performance.now() < end) {
      try {
        const res = await pool.request({ path: u.pathname, method: 'GET' });
        for await (const _ of res.body) void _;
        if (res.statusCode === 200) done++;
        else errors++;
      } catch {
        errors++;
      }
    }
  };
  const t0 = performance.now();
  await Promise.all(Array.from({ length: connections }, worker));
  const elapsed = (performance.now() - t0) / 1000;
  await pool.close();
  return { requestsPerSec: done / elapsed, errors };
}

/** Runs the static-file benchmark and prints one table per file size. Ends every child it started. */
export async function runStaticBench(overrides: Partial<StaticBenchOptions> = {}): Promise<Map<string, StaticRow[]>> {
  const t0 = performance.now();
  const opts: StaticBenchOptions = { ...defaultOptions(), ...overrides };
  const wrk = wrkVersion();
  const canPin = tasksetUsable(opts.serverCpu) && tasksetUsable(opts.loadCpu) && opts.serverCpu !== opts.loadCpu;
  const serverCpu = canPin ? opts.serverCpu : null;
  const loadCpu = canPin ? opts.loadCpu : null;
  console.log(`static files: ${availableParallelism()} cores (${cpus()[0]?.model ?? 'unknown'}), node ${process.version}, ${wrk ?? 'wrk not found: undici loop in-process'}`);
  console.log(canPin ? `pinning: servers on core ${opts.serverCpu}, load on core ${opts.loadCpu}` : 'WARNING: not pinning (taskset missing or one core): figures are noisier');

  const dir = mkdtempSync(join(tmpdir(), 'switchyard-static-bench-'));
  let buildDir: string | null = null;
  const cleanup = (): void => {
    rmSync(dir, { recursive: true, force: true });
    if (buildDir) rmSync(buildDir, { recursive: true, force: true });
  };
  const { checkAborted, dispose } = abortOnSignals(children, cleanup);
  const procs: Proc[] = [];
  const results = new Map<string, StaticRow[]>();
  try {
    const files = new Map<string, Buffer>();
    for (const s of SIZES) {
      const data = randomBytes(s.bytes);
      writeFileSync(join(dir, `${s.id}.bin`), data);
      files.set(s.id, data);
    }
    if (opts.runner === 'esbuild') {
      const cache = join(ROOT, 'node_modules', '.cache');
      mkdirSync(cache, { recursive: true });
      buildDir = mkdtempSync(join(cache, 'switchyard-static-bench-'));
    }
    const prepared = await prepareLaunches([{ key: 'static', source: fileURLToPath(import.meta.url), outName: 'static-bench.mjs' }], opts.runner, buildDir, { sourcemap: false, what: 'servers' });
    if (prepared.note) console.log(`WARNING: ${prepared.note}`);
    const launch = prepared.launches.get('static') ?? { error: 'no launcher' };
    const notes = new Map<ServerId, string>();
    for (const s of SERVERS) {
      try {
        procs.push(await startServer(s.id, s.label, launch, dir, serverCpu));
      } catch (e) {
        notes.set(s.id, (e as Error).message);
        console.log(`  skipping ${s.label}: ${(e as Error).message}`);
      }
    }
    const load = async (url: string, seconds: number): Promise<{ requestsPerSec: number; errors: number }> =>
      wrk ? runWrk({ url, connections: opts.connections, threads: 1, duration: seconds, cpu: loadCpu }, (c) => c && children.track(c)) : undiciLoad(url, opts.connections, seconds);
    console.log(`runs: ${opts.runs} x ${opts.duration} s per size and server (median), ${opts.warmup} s warm-up, rotating order; ratios = median of per-round ratios`);

    for (const size of SIZES.filter((s) => opts.sizes.includes(s.id))) {
      checkAborted();
      const path = `/${size.id}.bin`;
      const urlOf = (p: Proc): string => `http://${HOST}:${p.port}${path}`;
      console.log();
      console.log(`### ${size.label} file, keep-alive, ${opts.connections} connections`);
      console.log(
        `$ ${wrk ? wrkArgv({ url: `http://${HOST}:<port>${path}`, connections: opts.connections, threads: 1, duration: opts.duration, cpu: loadCpu }).join(' ') : `undici Pool, ${opts.connections} connections, ${opts.duration} s`}`,
      );
      const live = procs.filter((p) => !notes.has(p.id));
      for (const p of live) {
        try {
          await verify(urlOf(p), files.get(size.id)!);
          if (opts.warmup > 0) await load(urlOf(p), opts.warmup);
        } catch (e) {
          notes.set(p.id, (e as Error).message);
        }
      }
      const runs = new Map<ServerId, number[]>(live.map((p) => [p.id, []]));
      const errors = new Map<ServerId, number>();
      const rss = new Map<ServerId, number>();
      await inRotation(
        live,
        opts.runs,
        notes,
        (p) => p.id,
        checkAborted,
        async (p) => {
          const r = await load(urlOf(p), opts.duration);
          runs.get(p.id)!.push(r.requestsPerSec);
          errors.set(p.id, (errors.get(p.id) ?? 0) + r.errors);
          rss.set(p.id, Math.max(rss.get(p.id) ?? 0, readRss(p.pid).rss));
        },
      );
      const rows: StaticRow[] = SERVERS.map((s) => {
        const rs = runs.get(s.id) ?? [];
        const m = median(rs);
        const note = notes.get(s.id);
        return {
          server: s.label,
          reqPerSec: m,
          mibPerSec: (m * size.bytes) / 1024 / 1024,
          runs: rs,
          vsFastifyStatic: NaN,
          vsServeStatic: NaN,
          rss: rss.get(s.id) ?? NaN,
          errors: errors.get(s.id) ?? 0,
          ...(note ? { note } : {}),
        };
      });
      for (const r of rows) {
        r.vsFastifyStatic = pairedRatio(
          r,
          rows.find((x) => x.server === '@fastify/static'),
          opts.runs,
        );
        r.vsServeStatic = pairedRatio(
          r,
          rows.find((x) => x.server === 'serve-static'),
          opts.runs,
        );
      }
      results.set(size.id, rows);
      printTable(
        ['server', 'req/s', 'MiB/s', 'vs @fastify/static', 'vs serve-static', 'RSS MB', 'runs (req/s)', 'errors'],
        rows.map((r) => [
          r.server,
          fmtInt(r.reqPerSec),
          Number.isFinite(r.mibPerSec) ? r.mibPerSec.toFixed(0) : '-',
          fmtRatio(r.vsFastifyStatic),
          fmtRatio(r.vsServeStatic),
          Number.isFinite(r.rss) ? (r.rss / 1024 / 1024).toFixed(1) : '-',
          r.runs.map(fmtK).join(' ') || '-',
          r.note ? r.note.slice(0, 120) : String(r.errors),
        ]),
        (s) => console.log(s),
        false,
      );
      const spread = runSpread(rows.filter((r) => r.runs.length > 0));
      if (spread > 1.25) console.log(`note: noisy machine, runs of one server differ by up to ${spread.toFixed(1)}x; raise BENCH_RUNS / BENCH_DURATION for firmer medians`);
    }
    console.log();
    console.log(`static bench took ${((performance.now() - t0) / 1000).toFixed(0)} s`);
    return results;
  } finally {
    await Promise.all(procs.map((p) => stopChild(p.child))).catch(() => {});
    children.killAllNow();
    dispose();
    cleanup();
  }
}

const role = process.env.STATIC_BENCH_ROLE as ServerId | undefined;
if (role !== undefined) {
  runServerRole(role, process.env.STATIC_ROOT ?? '.').catch((err: unknown) => {
    console.error(err);
    process.exit(1);
  });
} else if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(process.argv[1]).href) {
  runStaticBench().catch((err: unknown) => {
    console.error(err);
    process.exitCode = 1;
  });
}
