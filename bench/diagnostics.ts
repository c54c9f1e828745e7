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
 *   instr   (opt-in; needs valgrind and h2load) CPU instructions per request of the server
 *           (under `h2load --h1 -c 10`) and of the client (10 loops against net-raw), counted
 *           by valgrind as bench/diagnostics/h2-instructions.ts does: the count after HIGH
 *           requests minus the count after LOW, divided by HIGH - LOW, so start-up and warm-up
 *           cancel. It moves by 1-2% between processes where req/s moves by 10% or more on a
 *           shared machine.
 *
 * Method: every program is a child process, servers pinned to one core (`taskset -c 1`), the
 * load (wrk, or the client process) to the other (`taskset -c 0`); variants are measured in
 * rotating order for BENCH_RUNS rounds after a warm-up each, and a ratio is the median of
 * per-round ratios. The programs are this file in child roles (`--serve <variant>`,
 * `--client <variant>`), precompiled with esbuild as the other benches do.
 *
 * Environment: BENCH_DURATION (s per run, default 3), BENCH_RUNS (default 3), BENCH_DIAG_BASE,
 * BENCH_DIAG_SCENARIOS (comma list of server, client, instr; default server,client),
 * BENCH_DIAG_VARIANTS (comma list of base, on: the rows besides `off`; default all),
 * BENCH_DIAG_LOW / BENCH_DIAG_HIGH (instr: default 10000 / 40000 requests).
 */
import diagnosticsChannel from 'node:diagnostics_channel';
import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { copyFileSync, existsSync } from 'node:fs';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import { Client, Response, serve } from '../kernel/index.js';
import { childTracker, envList, envPositive, fmtInt, fmtK, fmtRatio, prepareProgram, printTable, sleep, spawnListening, stopChild, type ListeningChild } from './common.js';
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

/**
 * `inflight` concurrent `client.get` loops: for `amount` seconds after a 1 s warm-up (prints
 * `RESULT <requests> <ms> <cpu ms>`), or, in `count` mode, 2,000 requests of warm-up and then
 * `amount` more (for instruction counts: the same work in every process).
 */
async function clientRole(variant: string, port: number, mode: string, amount: number, inflight: number): Promise<void> {
  if (variant === 'on') subscribeAll('client');
  const client = new Client();
  const url = `http://${HOST}:${port}/`;
  let stop = false;
  let count = 0;
  let left = Infinity;
  const loop = async (): Promise<void> => {
    while (!stop && left-- > 0) {
      await client.get(url);
      count++;
    }
  };
  const runAll = (): Promise<unknown> => Promise.all(Array.from({ length: inflight }, loop));
  if (mode === 'count') {
    left = 2000;
    await runAll();
    left = amount;
    await runAll();
    client.close();
    return;
  }
  let loops = runAll();
  await sleep(1000);
  stop = true;
  await loops;
  stop = false;
  count = 0;
  const cpu0 = process.cpuUsage();
  const t0 = performance.now();
  loops = runAll();
  await sleep(amount * 1000);
  stop = true;
  await loops;
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
    rows.map((r) => [r.name, fmtK(median(r.runs)), fmtRatio(ratioRow(r, off)).replace('x', ''), median(r.cpuUs).toFixed(2), r.runs.map(fmtK).join(' ')]),
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

/** Runs the scenarios of BENCH_DIAG_SCENARIOS (default `server,client`; `instr` adds the instruction counts). */
export async function runDiagnosticsBench(): Promise<void> {
  const scenarios = envList('BENCH_DIAG_SCENARIOS') ?? ['server', 'client'];
  const seconds = envPositive('BENCH_DURATION', 3);
  const rounds = envPositive('BENCH_RUNS', 3);
  const pin = tasksetUsable(1);
  const serverCpu = pin ? 1 : null;
  const loadCpu = pin ? 0 : null;
  const progs = await programs();
  const variants: Variant[] = [
    ['off', progs.get('own')!, 'off'],
    ['on', progs.get('own')!, 'on'],
  ];
  if (progs.has('base')) variants.unshift(['base', progs.get('base')!, 'off']);
  const only = envList('BENCH_DIAG_VARIANTS');
  if (only !== null) variants.splice(0, variants.length, ...variants.filter(([name]) => name === 'off' || only.includes(name)));
  const children = childTracker();
  const track = (c: ChildProcess): void => children.track(c);
  const env = { ...process.env, BENCH_CHILD: '1' };
  try {
    if (scenarios.includes('server')) {
      console.log(`server: wrk -t1 -c50 -d${seconds}s, hello (11 bytes), ${rounds} rounds${pin ? ', server on core 1, wrk on core 0' : ' (unpinned)'}`);
      const servers: ListeningChild[] = [];
      for (const [, argv, v] of variants) servers.push(await spawnListening(pinned(serverCpu, [process.execPath, ...argv, '--serve', v]), process.cwd(), env, track));
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
    }
    if (scenarios.includes('client') || scenarios.includes('instr')) {
      const raw = await prepareProgram(join(SELF, '..', 'servers', 'net-raw.ts'), 'diagnostics-net-raw.mjs', 'net-raw server');
      if ('error' in raw.launch) throw new Error(raw.launch.error);
      const target = await spawnListening(pinned(serverCpu, [process.execPath, ...raw.launch.argv]), process.cwd(), env, track);
      if (scenarios.includes('client')) {
        console.log(`\nclient: 50 concurrent client.get loops for ${seconds}s against bench/servers/net-raw.ts, ${rounds} rounds`);
        const rows: Row[] = variants.map(([name]) => ({ name, runs: [], cpuUs: [] }));
        for (let r = 0; r < rounds; r++) {
          for (let k = 0; k < variants.length; k++) {
            const i = (k + r) % variants.length;
            const [, argv, v] = variants[i]!;
            const out = await runToExit(pinned(loadCpu, [process.execPath, ...argv, '--client', v, String(target.port), 'secs', String(seconds), '50']), track);
            const m = /RESULT (\d+) ([\d.]+) ([\d.]+)/.exec(out.stdout);
            if (!m) throw new Error(`client run failed: ${out.stderr.slice(-400)}`);
            rows[i]!.runs.push((Number(m[1]) * 1000) / Number(m[2]));
            rows[i]!.cpuUs.push((Number(m[3]) * 1000) / Number(m[1]));
          }
        }
        print(rows, 'req/s');
      }
      if (scenarios.includes('instr')) await instructions(variants, target.port, track);
      await stopChild(target.child);
    }
  } finally {
    children.killAllNow();
  }
}

type Variant = [name: string, argv: string[], variant: string];

/** Runs `argv` to its exit; its stdout and stderr. */
async function runToExit(argv: string[], track: (c: ChildProcess) => void): Promise<{ stdout: string; stderr: string }> {
  const [cmd, ...args] = argv;
  const child = spawn(cmd!, args, { stdio: ['ignore', 'pipe', 'pipe'] });
  track(child);
  let stdout = '';
  let stderr = '';
  child.stdout.setEncoding('utf8').on('data', (s: string) => (stdout += s));
  child.stderr.setEncoding('utf8').on('data', (s: string) => (stderr += s));
  await once(child, 'exit');
  return { stdout, stderr };
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

/** Instructions of one server process that served 2,000 + `n` requests. */
async function serverInstructions(argv: string[], variant: string, n: number): Promise<number> {
  const child = spawn('valgrind', [...VALGRIND, process.execPath, ...argv, '--serve', variant], { stdio: ['pipe', 'pipe', 'pipe'] });
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
  return irefs(err);
}

/** Instructions of one client process that made 2,000 + `n` requests (10 at a time) to `port`. */
async function clientInstructions(argv: string[], variant: string, port: number, n: number, track: (c: ChildProcess) => void): Promise<number> {
  const out = await runToExit(['valgrind', ...VALGRIND, process.execPath, ...argv, '--client', variant, String(port), 'count', String(n), '10'], track);
  return irefs(out.stderr);
}

const VALGRIND = ['--tool=cachegrind', '--cache-sim=no', '--cachegrind-out-file=/dev/null'];

function irefs(stderr: string): number {
  const m = /I\s+refs:\s+([\d,]+)/.exec(stderr);
  if (!m) throw new Error(`no instruction count from valgrind: ${stderr.slice(-300)}`);
  return Number(m[1]!.replace(/,/g, ''));
}

async function instructions(variants: Variant[], port: number, track: (c: ChildProcess) => void): Promise<void> {
  const low = envPositive('BENCH_DIAG_LOW', 10000);
  const high = envPositive('BENCH_DIAG_HIGH', 40000);
  console.log(`\ninstructions per request (valgrind): (count after ${high} - count after ${low}) / ${high - low}; server under h2load --h1 -c 10, client 10 loops against net-raw`);
  const rows: string[][] = [];
  const per = new Map<string, [number, number]>();
  for (const [name, argv, v] of variants) {
    const server = ((await serverInstructions(argv, v, high)) - (await serverInstructions(argv, v, low))) / (high - low);
    const client = ((await clientInstructions(argv, v, port, high, track)) - (await clientInstructions(argv, v, port, low, track))) / (high - low);
    per.set(name, [server, client]);
  }
  const [s0, c0] = per.get('off')!;
  for (const [name, [server, client]] of per) rows.push([name, fmtInt(server), (server / s0).toFixed(3), fmtInt(client), (client / c0).toFixed(3)]);
  printTable(['variant', 'server instr/req', 'vs off', 'client instr/req', 'vs off'], rows, (l) => console.log(l), true);
}

// ---- entry ---------------------------------------------------------------------------------

const role = process.argv.indexOf('--serve');
const crole = process.argv.indexOf('--client');
if (role >= 0) await serveRole(process.argv[role + 1]!);
else if (crole >= 0) {
  const a = process.argv.slice(crole + 1);
  await clientRole(a[0]!, Number(a[1]), a[2]!, Number(a[3]), Number(a[4]));
} else if (process.argv[1] === SELF) await runDiagnosticsBench();
