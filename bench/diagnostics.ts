/**
 * What the diagnostics channels cost: switchyard's HTTP/1.1 hello server and its client loop,
 * each with nobody subscribed (`off`) and with one no-op subscriber on every channel of its side,
 * the TracingChannel included (`on`), in one run. `off` is the row that must not move against
 * a build without the channels: with `BENCH_DIAG_BASE=<dir>` (a checkout of another revision,
 * e.g. `git archive main | tar -x -C <dir>`, with this tree's node_modules linked in) the same
 * roles are also built from that tree and run as `base` rows beside them.
 *
 * Run directly with `node --import tsx bench/diagnostics.ts`, or `npm run bench diagnostics`.
 * Needs `wrk` and, for pinning, `taskset`.
 *
 * Scenarios:
 *   server  `wrk -t1 -c50` against the hello server (keep-alive, 11-byte body); req/s and the
 *           server's CPU µs per request (from /proc), ratios against `off`
 *   client  a client process running 50 concurrent `client.get` loops against the bare
 *           `node:net` responder of bench/servers/net-raw.ts; req/s and the client's CPU µs per
 *           request, ratios against `off`
 *   instr   (only with BENCH_DIAG_INSTR=1; needs valgrind and h2load) the server's CPU
 *           instructions per request, counted by valgrind as bench/diagnostics/h2-instructions.ts
 *           does (h2load --h1, count after HIGH requests minus count after LOW, divided), which
 *           does not move by more than 1-2% between processes where req/s moves by 10%
 *
 * Method: every program is a child process, servers pinned to one core (`taskset -c 1`), the
 * load (wrk, or the client process) to the other (`taskset -c 0`); variants are measured in
 * rotating order for BENCH_RUNS rounds after a warm-up each, and a ratio is the median of
 * per-round ratios. The programs are this file in child roles (`--serve <variant>`,
 * `--client <variant>`), precompiled with esbuild as the other benches do.
 *
 * Environment: BENCH_DURATION (s per run, default 3), BENCH_RUNS (default 3), BENCH_DIAG_BASE,
 * BENCH_DIAG_INSTR, BENCH_DIAG_LOW / BENCH_DIAG_HIGH (instr: default 10000 / 40000 requests).
 */
import diagnosticsChannel from 'node:diagnostics_channel';
import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { copyFileSync, existsSync } from 'node:fs';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import { Client, Response, serve } from '../kernel/index.js';
import { childTracker, envPositive, fmtInt, fmtK, fmtRatio, prepareProgram, printTable, sleep, spawnListening, stopChild, type ListeningChild } from './common.js';
import { median, pinned, procCpuMs, runWrk, tasksetUsable } from './load.js';

const SELF = fileURLToPath(import.meta.url);
const HOST = '127.0.0.1';

// Names spelled out (not imported) so this file also builds against a tree without the channels.
const SERVER_CHANNELS = ['connection', 'request:start', 'response:headers', 'response:finish', 'error', 'upgrade'].map((n) => `switchyard:server:${n}`);
const CLIENT_CHANNELS = ['request:create', 'request:headers', 'response:headers', 'response:end', 'request:error', 'retry', 'redirect', 'connection:open', 'connection:reuse'].map(
  (n) => `switchyard:client:${n}`,
);

/** One no-op subscriber on every channel of a side, its TracingChannel included. */
function subscribeAll(side: 'server' | 'client'): void {
  const noop = (): void => undefined;
  for (const name of side === 'server' ? SERVER_CHANNELS : CLIENT_CHANNELS) diagnosticsChannel.subscribe(name, noop);
  diagnosticsChannel.tracingChannel(`switchyard:${side}:request`).subscribe({ start: noop, end: noop, asyncStart: noop, asyncEnd: noop, error: noop });
}

// ---- child roles -------------------------------------------------------------------------

async function serveRole(variant: string): Promise<void> {
  if (variant === 'on') subscribeAll('server');
  const headers = { 'Content-Type': 'text/plain' };
  const server = await serve(() => new Response(200, 'hello world', { headers }), { host: HOST, port: 0 });
  process.stdout.write(`PORT ${server.port}\n`);
  const exit = (): void => void server.forceClose().then(() => process.exit(0));
  process.on('SIGTERM', exit);
  process.stdin.on('end', exit).resume();
}

async function clientRole(variant: string, port: number, seconds: number, inflight: number): Promise<void> {
  if (variant === 'on') subscribeAll('client');
  const client = new Client();
  const url = `http://${HOST}:${port}/`;
  let stop = false;
  let count = 0;
  const loop = async (): Promise<void> => {
    while (!stop) {
      await client.get(url);
      count++;
    }
  };
  // Warm-up, then the measured window.
  let loops = Array.from({ length: inflight }, loop);
  await sleep(1000);
  stop = true;
  await Promise.all(loops);
  stop = false;
  count = 0;
  const cpu0 = process.cpuUsage();
  const t0 = performance.now();
  loops = Array.from({ length: inflight }, loop);
  await sleep(seconds * 1000);
  stop = true;
  await Promise.all(loops);
  const ms = performance.now() - t0;
  const cpu = process.cpuUsage(cpu0);
  client.close();
  process.stdout.write(`RESULT ${count} ${ms} ${(cpu.user + cpu.system) / 1000}\n`);
}

// ---- harness -----------------------------------------------------------------------------

interface Row {
  name: string;
  runs: number[];
  cpuUs: number[];
}

function ratioRow(row: Row, base: Row): number {
  return median(row.runs.map((v, i) => v / base.runs[i]!));
}

function print(rows: Row[], metric: string): void {
  const off = rows.find((r) => r.name === 'off')!;
  printTable(
    ['variant', metric, 'vs off', 'CPU µs/req', 'runs'],
    rows.map((r) => [r.name, fmtK(median(r.runs)), fmtRatio(ratioRow(r, off)).replace('x', ''), median(r.cpuUs).toFixed(1), r.runs.map(fmtK).join(' ')]),
    (s) => console.log(s),
    true,
  );
}

/** The programs: this file, and the same file built inside BENCH_DIAG_BASE when given. */
async function programs(): Promise<Map<string, string[]>> {
  const out = new Map<string, string[]>();
  const own = await prepareProgram(SELF, 'diagnostics-bench.mjs', 'diagnostics roles');
  if ('error' in own.launch) throw new Error(own.launch.error);
  out.set('own', own.launch.argv);
  const base = process.env.BENCH_DIAG_BASE;
  if (base !== undefined && base !== '') {
    if (!existsSync(join(base, 'kernel', 'index.ts'))) throw new Error(`BENCH_DIAG_BASE=${base} holds no kernel/index.ts`);
    const copy = join(base, 'bench', 'diagnostics-roles.ts');
    copyFileSync(SELF, copy);
    const p = await prepareProgram(copy, 'diagnostics-bench-base.mjs', 'diagnostics roles of the base tree');
    if ('error' in p.launch) throw new Error(p.launch.error);
    out.set('base', p.launch.argv);
  }
  return out;
}

export async function runDiagnosticsBench(): Promise<void> {
  const seconds = envPositive('BENCH_DURATION', 3);
  const rounds = envPositive('BENCH_RUNS', 3);
  const pin = tasksetUsable(1);
  const serverCpu = pin ? 1 : null;
  const loadCpu = pin ? 0 : null;
  const progs = await programs();
  const variants: [string, string[], string][] = [['off', progs.get('own')!, 'off'], ['on', progs.get('own')!, 'on']];
  if (progs.has('base')) variants.unshift(['base', progs.get('base')!, 'off']);
  const children = childTracker();
  try {
    // -- server
    console.log(`server: wrk -t1 -c50 -d${seconds}s, hello (11 bytes), ${rounds} rounds${pin ? ', server on core 1, wrk on core 0' : ' (unpinned)'}`);
    const servers: ListeningChild[] = [];
    for (const [, argv, v] of variants) {
      servers.push(await spawnListening(pinned(serverCpu, [process.execPath, ...argv, '--serve', v]), process.cwd(), { ...process.env, BENCH_CHILD: '1' }, (c) => children.track(c)));
    }
    const rows: Row[] = variants.map(([name]) => ({ name, runs: [], cpuUs: [] }));
    for (const s of servers) await runWrk({ url: `http://${HOST}:${s.port}/`, connections: 50, duration: 1, cpu: loadCpu });
    for (let r = 0; r < rounds; r++) {
      for (let k = 0; k < servers.length; k++) {
        const i = (k + r) % servers.length;
        const s = servers[i]!;
        const cpu0 = procCpuMs(s.pid);
        const w = await runWrk({ url: `http://${HOST}:${s.port}/`, connections: 50, duration: seconds, cpu: loadCpu });
        rows[i]!.runs.push(w.requestsPerSec);
        rows[i]!.cpuUs.push(((procCpuMs(s.pid) - cpu0) * 1000) / w.requests);
      }
    }
    print(rows, 'req/s');
    for (const s of servers) await stopChild(s.child);

    // -- client
    console.log(`\nclient: 50 concurrent client.get loops for ${seconds}s against bench/servers/net-raw.ts, ${rounds} rounds`);
    const raw = await prepareProgram(join(SELF, '..', 'servers', 'net-raw.ts'), 'diagnostics-net-raw.mjs', 'net-raw server');
    if ('error' in raw.launch) throw new Error(raw.launch.error);
    const target = await spawnListening(pinned(serverCpu, [process.execPath, ...raw.launch.argv]), process.cwd(), { ...process.env, BENCH_CHILD: '1' }, (c) => children.track(c));
    const crows: Row[] = variants.map(([name]) => ({ name, runs: [], cpuUs: [] }));
    for (let r = 0; r < rounds; r++) {
      for (let k = 0; k < variants.length; k++) {
        const i = (k + r) % variants.length;
        const [, argv, v] = variants[i]!;
        const [count, ms, cpuMs] = await runClient(pinned(loadCpu, [process.execPath, ...argv, '--client', v, String(target.port), String(seconds), '50']), (c) => children.track(c));
        crows[i]!.runs.push((count * 1000) / ms);
        crows[i]!.cpuUs.push((cpuMs * 1000) / count);
      }
    }
    print(crows, 'req/s');
    await stopChild(target.child);

    if (process.env.BENCH_DIAG_INSTR === '1') await instructions(variants);
  } finally {
    children.killAllNow();
  }
}

async function runClient(argv: string[], track: (c: ChildProcess) => void): Promise<[number, number, number]> {
  const [cmd, ...args] = argv;
  const child = spawn(cmd!, args, { stdio: ['ignore', 'pipe', 'pipe'] });
  track(child);
  let out = '';
  let err = '';
  child.stdout.setEncoding('utf8').on('data', (s: string) => (out += s));
  child.stderr.setEncoding('utf8').on('data', (s: string) => (err += s));
  await once(child, 'exit');
  const m = /RESULT (\d+) ([\d.]+) ([\d.]+)/.exec(out);
  if (!m) throw new Error(`client run failed: ${err.slice(-400)}`);
  return [Number(m[1]), Number(m[2]), Number(m[3])];
}

// ---- instructions (valgrind) ---------------------------------------------------------------

function h2loadH1(url: string, n: number): Promise<void> {
  const child = spawn('h2load', ['--h1', '-c', '10', '-n', String(n), url], { stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  child.stdout.on('data', (c: Buffer) => (out += c.toString()));
  return once(child, 'exit').then(() => {
    const m = /requests: \d+ total, \d+ started, \d+ done, (\d+) succeeded/.exec(out);
    if (!m || Number(m[1]) !== n) throw new Error(`h2load did not complete ${n} requests: ${out.slice(0, 300)}`);
  });
}

async function countInstructions(argv: string[], variant: string, n: number): Promise<number> {
  const child = spawn('valgrind', ['--tool=cachegrind', '--cache-sim=no', '--cachegrind-out-file=/dev/null', process.execPath, ...argv, '--serve', variant], { stdio: ['pipe', 'pipe', 'pipe'] });
  let out = '';
  let err = '';
  child.stdout!.on('data', (c: Buffer) => (out += c.toString()));
  child.stderr!.on('data', (c: Buffer) => (err += c.toString()));
  while (!/PORT (\d+)/.test(out)) {
    if (child.exitCode !== null) throw new Error(`server exited before listening: ${err.slice(-300)}`);
    await Promise.race([once(child.stdout!, 'data'), once(child, 'exit')]);
  }
  const url = `http://${HOST}:${/PORT (\d+)/.exec(out)![1]}/`;
  await h2loadH1(url, 2000);
  await h2loadH1(url, n);
  child.stdin!.end();
  await once(child, 'exit');
  const m = /I\s+refs:\s+([\d,]+)/.exec(err);
  if (!m) throw new Error(`no instruction count from valgrind: ${err.slice(-300)}`);
  return Number(m[1]!.replace(/,/g, ''));
}

async function instructions(variants: [string, string[], string][]): Promise<void> {
  const low = envPositive('BENCH_DIAG_LOW', 10000);
  const high = envPositive('BENCH_DIAG_HIGH', 40000);
  console.log(`\nserver instructions per request (valgrind), h2load --h1 -c 10: (count after ${high} - count after ${low}) / ${high - low}`);
  const per = new Map<string, number>();
  for (const [name, argv, v] of variants) {
    const a = await countInstructions(argv, v, low);
    const b = await countInstructions(argv, v, high);
    per.set(name, (b - a) / (high - low));
  }
  const off = per.get('off')!;
  for (const [name, v] of per) console.log(`${name.padEnd(5)} ${fmtInt(v).padStart(9)}  ${(v / off).toFixed(3)}x off`);
}

// ---- entry ---------------------------------------------------------------------------------

const role = process.argv.indexOf('--serve');
const crole = process.argv.indexOf('--client');
if (role >= 0) await serveRole(process.argv[role + 1]!);
else if (crole >= 0) {
  const a = process.argv.slice(crole + 1);
  await clientRole(a[0]!, Number(a[1]), Number(a[2]), Number(a[3]));
} else if (process.argv[1] === SELF) await runDiagnosticsBench();
