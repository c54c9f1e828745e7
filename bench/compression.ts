/**
 * Compression benchmark: switchyard's `compression` plugin side by side with
 * `@fastify/compress` on fastify, both answering GET with the same 64 KiB JSON document
 * (a string made once), gzip and br, in one run.
 *
 * Run directly with `node --import tsx bench/compression.ts`, or call
 * {@link runCompressionBench} from the bench runner. Load comes from `wrk` (Debian package
 * `wrk`) with an `Accept-Encoding` header set by a Lua script.
 *
 * Method: the servers are child processes pinned to one core (`taskset -c 1`, which holds
 * every thread of the process, libuv's thread pool included) with wrk on another
 * (`taskset -c 0`); keep-alive, `wrk -t1 -c<n>`. Each server is checked first (the coding it
 * answers with, and the decoded bytes), warmed up, then measured in rotating rounds; the table
 * gives the median req/s, and the server's CPU time per request (user + system from
 * /proc/<pid>/stat over all measured runs, divided by the requests wrk counted). Both use
 * their defaults but the threshold, which both have at 1024: gzip level 6, brotli quality 4.
 * Both compress the document in one zlib call (@fastify/compress does up to its
 * `syncThreshold`, 64 KiB on one core, and streams larger payloads).
 *
 * Environment: BENCH_DURATION (s per run, default 2), BENCH_WARMUP (s, default 1),
 * BENCH_RUNS (default 3), BENCH_CONNECTIONS (default 32), BENCH_SERVER_CPU / BENCH_LOAD_CPU
 * (default 1 / 0), BENCH_RUNNER (esbuild | tsx), BENCH_CODINGS (comma list of gzip, br).
 */
import type { ChildProcess } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import { availableParallelism, cpus, tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import zlib from 'node:zlib';
import { abortOnSignals, childTracker, envList, envPositive, fmtInt, inRotation, fmtK, fmtRatio, pairedRatio, prepareLaunches, printTable, spawnListening, stopChild, type Launch } from './common.js';
import { exitOnSignal } from './servers/common.js';
import { median, pinned, procCpuMs, runWrk, tasksetUsable, wrkArgv, wrkVersion } from './load.js';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const HOST = '127.0.0.1';

/** The servers compared. */
const SERVERS = [
  { id: 'switchyard', label: 'switchyard compression' },
  { id: 'fastify-compress', label: '@fastify/compress' },
] as const;
type ServerId = (typeof SERVERS)[number]['id'];

const CODINGS = ['gzip', 'br'] as const;
type BenchCoding = (typeof CODINGS)[number];

/**
 * The JSON document both servers send: an array of small records, as an API answers, as
 * large as fits in `bytes` (64 KiB: at most 65536 bytes, which @fastify/compress still
 * compresses in one call on one core; a byte more and it streams).
 */
export function benchJson(bytes = 64 * 1024): string {
  const items: string[] = [];
  let size = 2;
  for (let i = 0; ; i++) {
    const item = JSON.stringify({ id: i, name: `item ${i}`, tags: ['alpha', 'beta', i % 7 === 0 ? 'gamma' : 'delta'], price: (i * 37) % 1000, active: i % 3 !== 0 });
    const next = size + item.length + (items.length > 0 ? 1 : 0);
    if (next > bytes) break;
    size = next;
    items.push(item);
  }
  return `[${items.join(',')}]`;
}

// ---------------------------------------------------------------------------------------
// Server side (a child process): print `PORT <n>`, exit on SIGTERM/stdin EOF.

async function runServerRole(role: ServerId): Promise<void> {
  const body = benchJson();
  let port: number;
  let close: () => unknown;
  if (role === 'switchyard') {
    const { createKernel, Response } = await import('../kernel/index.js');
    const { compression } = await import('../plugins/compression/index.js');
    const kernel = await createKernel().register(compression).ready();
    const server = await kernel.serve(() => new Response(200, body, { headers: { 'Content-Type': 'application/json' } }), { host: HOST, port: 0 });
    port = server.port;
    close = () => server.forceClose();
  } else {
    const { default: Fastify } = await import('fastify');
    const { default: fastifyCompress } = await import('@fastify/compress');
    const app = Fastify({ logger: false, keepAliveTimeout: 120_000 });
    await app.register(fastifyCompress, { threshold: 1024 });
    app.get('/', (_req, reply) => {
      void reply.type('application/json').send(body);
    });
    await app.listen({ host: HOST, port: 0 });
    port = (app.server.address() as AddressInfo).port;
    close = () => app.close();
  }
  process.stdout.write(`PORT ${port}\n`);
  exitOnSignal(close, true);
}

// ---------------------------------------------------------------------------------------
// The harness

/** Settings of one run (defaults from the environment). */
export interface CompressionBenchOptions {
  duration: number;
  warmup: number;
  runs: number;
  connections: number;
  codings: string[];
  serverCpu: number;
  loadCpu: number;
  runner: 'esbuild' | 'tsx';
}

/** One server's figures for one coding. */
export interface CompressionRow {
  server: string;
  reqPerSec: number;
  /** Server CPU (user + system, all threads) per request, microseconds. */
  cpuUsPerReq: number;
  /** Compressed body size, bytes. */
  bodyBytes: number;
  runs: number[];
  vsFastify: number;
  errors: number;
  note?: string;
}

function defaultOptions(): CompressionBenchOptions {
  return {
    duration: Math.round(envPositive('BENCH_DURATION', 2)),
    warmup: Math.round(envPositive('BENCH_WARMUP', 1)),
    runs: Math.round(envPositive('BENCH_RUNS', 3)),
    connections: Math.round(envPositive('BENCH_CONNECTIONS', 32)),
    codings: envList('BENCH_CODINGS') ?? [...CODINGS],
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

async function startServer(id: ServerId, label: string, launch: Launch, cpu: number | null): Promise<Proc> {
  if ('error' in launch) throw new Error(launch.error);
  const env = { ...process.env, COMPRESSION_BENCH_ROLE: id, NODE_ENV: 'production' };
  const proc = await spawnListening(pinned(cpu, [process.execPath, ...launch.argv]), ROOT, env, (c) => children.track(c));
  return { id, label, ...proc };
}

/** Fetches `url` once with `coding` and checks the answer's coding and decoded bytes; resolves to the encoded size. */
async function verify(url: string, coding: BenchCoding, expected: string): Promise<number> {
  const { request } = await import('undici');
  const res = await request(url, { headers: { 'accept-encoding': coding } });
  const body = Buffer.from(await res.body.arrayBuffer());
  if (res.statusCode !== 200) throw new Error(`GET ${url} answered ${res.statusCode}`);
  if (res.headers['content-encoding'] !== coding) throw new Error(`GET ${url} answered Content-Encoding ${String(res.headers['content-encoding'])}, not ${coding}`);
  const decoded = (coding === 'gzip' ? zlib.gunzipSync(body) : zlib.brotliDecompressSync(body)).toString('utf8');
  if (decoded !== expected) throw new Error(`GET ${url} decoded to ${decoded.length} bytes that differ from the document`);
  return body.length;
}

/** Runs the compression benchmark and prints one table per coding. Ends every child it started. */
export async function runCompressionBench(overrides: Partial<CompressionBenchOptions> = {}): Promise<Map<string, CompressionRow[]>> {
  const t0 = performance.now();
  const opts: CompressionBenchOptions = { ...defaultOptions(), ...overrides };
  const wrk = wrkVersion();
  if (wrk === null) {
    console.log('compression: wrk not found (Debian package wrk): skipped');
    return new Map();
  }
  const canPin = tasksetUsable(opts.serverCpu) && tasksetUsable(opts.loadCpu) && opts.serverCpu !== opts.loadCpu;
  const serverCpu = canPin ? opts.serverCpu : null;
  const loadCpu = canPin ? opts.loadCpu : null;
  console.log(`compression: ${availableParallelism()} cores (${cpus()[0]?.model ?? 'unknown'}), node ${process.version}, ${wrk}`);
  console.log(canPin ? `pinning: servers on core ${opts.serverCpu} (thread pool included), wrk on core ${opts.loadCpu}` : 'WARNING: not pinning (taskset missing or one core): figures are noisier');

  const dir = mkdtempSync(join(tmpdir(), 'switchyard-compression-bench-'));
  let buildDir: string | null = null;
  const cleanup = (): void => {
    rmSync(dir, { recursive: true, force: true });
    if (buildDir) rmSync(buildDir, { recursive: true, force: true });
  };
  const { checkAborted, dispose } = abortOnSignals(children, cleanup);
  const procs: Proc[] = [];
  const results = new Map<string, CompressionRow[]>();
  try {
    const doc = benchJson();
    if (opts.runner === 'esbuild') {
      const cache = join(ROOT, 'node_modules', '.cache');
      mkdirSync(cache, { recursive: true });
      buildDir = mkdtempSync(join(cache, 'switchyard-compression-bench-'));
    }
    const prepared = await prepareLaunches([{ key: 'compression', source: fileURLToPath(import.meta.url), outName: 'compression-bench.mjs' }], opts.runner, buildDir, {
      sourcemap: false,
      what: 'servers',
    });
    if (prepared.note) console.log(`WARNING: ${prepared.note}`);
    const launch = prepared.launches.get('compression') ?? { error: 'no launcher' };
    const notes = new Map<ServerId, string>();
    for (const s of SERVERS) {
      try {
        procs.push(await startServer(s.id, s.label, launch, serverCpu));
      } catch (e) {
        notes.set(s.id, (e as Error).message);
        console.log(`  skipping ${s.label}: ${(e as Error).message}`);
      }
    }
    console.log(`document: ${doc.length} bytes of JSON; runs: ${opts.runs} x ${opts.duration} s per coding and server (median), ${opts.warmup} s warm-up, rotating order`);

    for (const coding of CODINGS.filter((c) => opts.codings.includes(c))) {
      checkAborted();
      const script = join(dir, `${coding}.lua`);
      writeFileSync(script, `wrk.headers["Accept-Encoding"] = "${coding}"\n`);
      const urlOf = (p: Proc): string => `http://${HOST}:${p.port}/`;
      const load = (url: string, seconds: number): ReturnType<typeof runWrk> =>
        runWrk({ url, connections: opts.connections, threads: 1, duration: seconds, script, cpu: loadCpu }, (c) => c && children.track(c));
      console.log();
      console.log(`### ${coding}, 64 KiB JSON, keep-alive, ${opts.connections} connections`);
      console.log(
        `$ ${wrkArgv({ url: `http://${HOST}:<port>/`, connections: opts.connections, threads: 1, duration: opts.duration, script: `${coding}.lua (Accept-Encoding: ${coding})`, cpu: loadCpu }).join(' ')}`,
      );
      const live = procs.filter((p) => !notes.has(p.id));
      const sizes = new Map<ServerId, number>();
      for (const p of live) {
        try {
          sizes.set(p.id, await verify(urlOf(p), coding, doc));
          if (opts.warmup > 0) await load(urlOf(p), opts.warmup);
        } catch (e) {
          notes.set(p.id, (e as Error).message);
        }
      }
      const runs = new Map<ServerId, number[]>(live.map((p) => [p.id, []]));
      const cpu = new Map<ServerId, { ms: number; requests: number }>();
      const errors = new Map<ServerId, number>();
      await inRotation(
        live,
        opts.runs,
        notes,
        (p) => p.id,
        checkAborted,
        async (p) => {
          const before = procCpuMs(p.pid);
          const r = await load(urlOf(p), opts.duration);
          const used = procCpuMs(p.pid) - before;
          runs.get(p.id)!.push(r.requestsPerSec);
          const c = cpu.get(p.id) ?? { ms: 0, requests: 0 };
          cpu.set(p.id, { ms: c.ms + used, requests: c.requests + r.requests });
          errors.set(p.id, (errors.get(p.id) ?? 0) + r.errors);
        },
      );
      const rows: CompressionRow[] = SERVERS.map((s) => {
        const rs = runs.get(s.id) ?? [];
        const c = cpu.get(s.id);
        const note = notes.get(s.id);
        return {
          server: s.label,
          reqPerSec: median(rs),
          cpuUsPerReq: c !== undefined && c.requests > 0 ? (c.ms * 1000) / c.requests : NaN,
          bodyBytes: sizes.get(s.id) ?? NaN,
          runs: rs,
          vsFastify: NaN,
          errors: errors.get(s.id) ?? 0,
          ...(note ? { note } : {}),
        };
      });
      const base = rows.find((r) => r.server === '@fastify/compress');
      for (const r of rows) r.vsFastify = pairedRatio(r, base, opts.runs);
      results.set(coding, rows);
      printTable(
        ['server', 'req/s', 'vs @fastify/compress', 'CPU µs/req', 'body bytes', 'runs (req/s)', 'errors'],
        rows.map((r) => [
          r.server,
          fmtInt(r.reqPerSec),
          fmtRatio(r.vsFastify),
          Number.isFinite(r.cpuUsPerReq) ? r.cpuUsPerReq.toFixed(0) : '-',
          Number.isFinite(r.bodyBytes) ? String(r.bodyBytes) : '-',
          r.runs.map(fmtK).join(' ') || '-',
          r.note ? r.note.slice(0, 120) : String(r.errors),
        ]),
        (s) => console.log(s),
        false,
      );
    }
    console.log();
    console.log(`compression bench took ${((performance.now() - t0) / 1000).toFixed(0)} s`);
    return results;
  } finally {
    await Promise.all(procs.map((p) => stopChild(p.child))).catch(() => {});
    children.killAllNow();
    dispose();
    cleanup();
  }
}

const role = process.env.COMPRESSION_BENCH_ROLE as ServerId | undefined;
if (role !== undefined) {
  runServerRole(role).catch((err: unknown) => {
    console.error(err);
    process.exit(1);
  });
} else if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(process.argv[1]).href) {
  runCompressionBench().catch((err: unknown) => {
    console.error(err);
    process.exitCode = 1;
  });
}
