/**
 * Server-sent events benchmark: events per second delivered to 100 clients by switchyard
 * (`sseStream`, one producer broadcasting to every `SSEStream`) and by a hand-written
 * `node:http` SSE server doing the same with `res.write`, in one run.
 *
 * Run alone with `node --import tsx bench/sse.ts`, or call {@link runSseBench} from the runner.
 *
 * Method: each server is a child process (pinned with `taskset -c 1` when it works) that
 * waits for all clients, then broadcasts as fast as backpressure allows: each round makes one
 * event (`id: <n>`, a 64-byte `data:` line), writes it to every client, waits until every
 * write may go on (switchyard: `await Promise.all(stream.write(ev))`; node:http: `'drain'` of
 * each `res.write` that returned false), then yields to I/O (`setImmediate`) and goes again.
 * The clients are raw TCP sockets in a second child (`taskset -c 0`), counting events (blank
 * lines) as bytes arrive; after every client got its first event and a warm-up, the events
 * received during the measured window give events/s (summed over clients). The servers take
 * turns round by round (A B, B A, …), each round with fresh processes; the median is reported,
 * and the ratio is the median of per-round ratios. The child programs are this file,
 * precompiled with esbuild (as bench/server.ts does) or run with tsx.
 *
 * Environment: BENCH_DURATION (s per run, default 3), BENCH_WARMUP (s, default 1), BENCH_RUNS
 * (default 3), BENCH_SSE_CLIENTS (default 100), BENCH_SSE_PAYLOAD (data bytes, default 64),
 * BENCH_SERVER_CPU / BENCH_LOAD_CPU (default 1 / 0), BENCH_RUNNER (esbuild | tsx).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { readFileSync, rmSync } from 'node:fs';
import { mkdir, mkdtemp } from 'node:fs/promises';
import http from 'node:http';
import net, { type AddressInfo } from 'node:net';
import { dirname, join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { abortOnSignals, childTracker, firstLines, fmtInt, fmtRatio, pairedRatio, prepareLaunches, printTable, sleep, stopChild, type Launch } from './common.js';
import { median, pinned, tasksetUsable } from './load.js';

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..');
const HOST = '127.0.0.1';

/** The servers compared. */
export type SseServerId = 'switchyard' | 'node-http';
const SERVERS: SseServerId[] = ['switchyard', 'node-http'];

/** One server's figures. */
export interface SseBenchRow {
  /** Which server. */
  readonly server: SseServerId;
  /** Median events/s summed over all clients. */
  readonly eventsPerSec: number;
  /** Events/s of each round. */
  readonly runs: number[];
  /** Median of the slowest client's share of an even split (1 = perfectly fair). */
  readonly fairness: number;
  /** Ratio to node:http (median of per-round ratios). */
  readonly vsNodeHttp: number;
  /** Median server CPU time (user + system) per delivered event, in microseconds. */
  readonly cpuUsPerEvent: number;
  /** Events per server CPU second, as a ratio to node:http (median of per-round ratios; > 1 is cheaper). */
  readonly cpuVsNodeHttp: number;
}

/** Options of {@link runSseBench} (defaults from the environment, see the file comment). */
export interface SseBenchOptions {
  /** Seconds measured per run. */
  duration?: number;
  /** Seconds of warm-up per run. */
  warmup?: number;
  /** Rounds. */
  runs?: number;
  /** Connected clients. */
  clients?: number;
  /** Bytes of each event's data. */
  payload?: number;
  /** Print the table. Default true. */
  print?: boolean;
}

/** Runs the SSE benchmark and prints its table; resolves to the figures. */
export async function runSseBench(options: SseBenchOptions = {}): Promise<SseBenchRow[]> {
  const env = process.env;
  const duration = options.duration ?? Number(env.BENCH_DURATION ?? 3);
  const warmup = options.warmup ?? Number(env.BENCH_WARMUP ?? 1);
  const runs = options.runs ?? Number(env.BENCH_RUNS ?? 3);
  const clients = options.clients ?? Number(env.BENCH_SSE_CLIENTS ?? 100);
  const payload = options.payload ?? Number(env.BENCH_SSE_PAYLOAD ?? 64);
  const print = options.print !== false;
  const log = (s = ''): void => {
    if (print) console.log(s);
  };
  const serverCpu = Number(env.BENCH_SERVER_CPU ?? 1);
  const loadCpu = Number(env.BENCH_LOAD_CPU ?? 0);
  const canPin = serverCpu !== loadCpu && tasksetUsable(serverCpu) && tasksetUsable(loadCpu);
  const children = childTracker();
  let buildDir: string | null = null;
  const { checkAborted, dispose } = abortOnSignals(children, () => {
    if (buildDir) rmSync(buildDir, { recursive: true, force: true });
  });
  try {
    const runner = env.BENCH_RUNNER === 'tsx' ? 'tsx' : 'esbuild';
    if (runner === 'esbuild') {
      const cache = join(ROOT, 'node_modules', '.cache');
      await mkdir(cache, { recursive: true });
      buildDir = await mkdtemp(join(cache, 'switchyard-bench-sse-'));
    }
    const prepared = await prepareLaunches([{ key: 'sse', source: fileURLToPath(import.meta.url), outName: 'sse.mjs' }], runner, buildDir, { sourcemap: false, what: 'sse bench programs' });
    if (prepared.note) log(`WARNING: ${prepared.note}`);
    const launch = prepared.launches.get('sse')!;
    log(
      `${clients} clients, ${payload}-byte events, ${runs} rounds of ${warmup} s warm-up + ${duration} s, ${canPin ? `servers on cpu ${serverCpu}, clients on cpu ${loadCpu}` : 'not pinned (taskset unusable)'}, ${prepared.runner === 'esbuild' ? 'precompiled with esbuild' : 'run with tsx'}`,
    );

    const figures = new Map<SseServerId, { runs: number[]; fairness: number[]; cpu: number[] }>(SERVERS.map((s) => [s, { runs: [], fairness: [], cpu: [] }]));
    for (let r = 0; r < runs; r++) {
      const order = r % 2 === 0 ? SERVERS : [...SERVERS].reverse();
      for (const id of order) {
        checkAborted();
        const got = await oneRun(id, launch, { clients, payload, warmup, duration, serverCpu: canPin ? serverCpu : null, loadCpu: canPin ? loadCpu : null, track: children.track });
        const f = figures.get(id)!;
        f.runs.push(got.eventsPerSec);
        f.fairness.push(got.fairness);
        f.cpu.push(got.cpuUsPerEvent);
      }
    }
    const base = figures.get('node-http')!;
    const baseRow = { runs: base.runs, reqPerSec: median(base.runs) };
    const rows: SseBenchRow[] = SERVERS.map((id) => {
      const f = figures.get(id)!;
      const mine = { runs: f.runs, reqPerSec: median(f.runs) };
      const cpu = { runs: f.cpu.map((x) => 1 / x), reqPerSec: 1 / median(f.cpu) };
      const baseCpu = { runs: base.cpu.map((x) => 1 / x), reqPerSec: 1 / median(base.cpu) };
      return {
        server: id,
        eventsPerSec: mine.reqPerSec,
        runs: f.runs,
        fairness: median(f.fairness),
        vsNodeHttp: id === 'node-http' ? 1 : pairedRatio(mine, baseRow, runs),
        cpuUsPerEvent: median(f.cpu),
        cpuVsNodeHttp: id === 'node-http' ? 1 : pairedRatio(cpu, baseCpu, runs),
      };
    });
    if (print) {
      printTable(
        ['server', 'events/s (all clients)', 'per client', 'slowest client', 'vs node:http', 'server CPU µs/event', 'events per CPU-s vs node:http', 'runs (events/s)'],
        rows.map((row) => [
          row.server,
          fmtInt(row.eventsPerSec),
          fmtInt(row.eventsPerSec / clients),
          `${(row.fairness * 100).toFixed(0)}%`,
          fmtRatio(row.vsNodeHttp),
          Number.isFinite(row.cpuUsPerEvent) ? row.cpuUsPerEvent.toFixed(2) : '-',
          fmtRatio(row.cpuVsNodeHttp),
          row.runs.map((x) => fmtInt(x)).join(' '),
        ]),
        log,
        true,
      );
      log('slowest client: its events as a share of an even split (100% = every client got as many)');
      log('server CPU: user + system time of the server process during the window, per event delivered (steadier than events/s on a busy machine)');
    }
    return rows;
  } finally {
    children.killAllNow();
    dispose();
    if (buildDir) rmSync(buildDir, { recursive: true, force: true });
  }
}

interface RunOptions {
  clients: number;
  payload: number;
  warmup: number;
  duration: number;
  serverCpu: number | null;
  loadCpu: number | null;
  track: (c: ChildProcess) => void;
}

/** One measured run: a fresh server and a fresh load process. */
async function oneRun(id: SseServerId, launch: Launch, o: RunOptions): Promise<{ eventsPerSec: number; fairness: number; cpuUsPerEvent: number }> {
  if ('error' in launch) throw new Error(launch.error);
  const common = { SSE_CLIENTS: String(o.clients), SSE_PAYLOAD: String(o.payload), NODE_ENV: 'production' };
  const server = child(pinned(o.serverCpu, [process.execPath, ...launch.argv]), { ...common, SSE_ROLE: id }, o.track);
  try {
    const port = Number((await server.line(/^PORT (\d+)$/, 10_000))[1]);
    const load = child(
      pinned(o.loadCpu, [process.execPath, ...launch.argv]),
      { ...common, SSE_ROLE: 'load', SSE_PORT: String(port), SSE_WARMUP: String(o.warmup), SSE_DURATION: String(o.duration) },
      o.track,
    );
    try {
      await load.line(/^WINDOW$/, o.warmup * 1000 + 20_000);
      const cpu0 = cpuSeconds(server.proc.pid);
      const m = await load.line(/^RESULT (.*)$/, o.duration * 1000 + 20_000);
      const cpu1 = cpuSeconds(server.proc.pid);
      const got = JSON.parse(m[1]!) as { eventsPerSec: number; fairness: number; events: number };
      return { ...got, cpuUsPerEvent: got.events > 0 ? ((cpu1 - cpu0) * 1e6) / got.events : NaN };
    } finally {
      await stopChild(load.proc);
    }
  } finally {
    await stopChild(server.proc);
  }
}

/** User plus system CPU seconds of a process so far (Linux /proc), NaN elsewhere. */
function cpuSeconds(pid: number | undefined): number {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // Fields after the command name (which may hold spaces) start after the last ')'.
    const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return (Number(f[11]) + Number(f[12])) / CLK_TCK;
  } catch {
    return NaN;
  }
}

/** Clock ticks per second of /proc times (USER_HZ, 100 on Linux). */
const CLK_TCK = 100;

/** Spawns a child program; `line(re)` resolves with the first stdout line matching `re`. */
function child(argv: string[], env: Record<string, string>, track: (c: ChildProcess) => void): { proc: ChildProcess; line(re: RegExp, ms: number): Promise<RegExpMatchArray> } {
  const [cmd, ...args] = argv;
  const proc = spawn(cmd!, args, { cwd: ROOT, env: { ...process.env, ...env }, stdio: ['pipe', 'pipe', 'pipe'] });
  track(proc);
  proc.stdin?.on('error', () => {});
  let out = '';
  let err = '';
  const waiters: (() => void)[] = [];
  proc.stdout!.setEncoding('utf8').on('data', (s: string) => {
    out += s;
    for (const w of waiters.splice(0)) w();
  });
  proc.stderr!.setEncoding('utf8').on('data', (s: string) => {
    err = (err + s).slice(-4000);
  });
  proc.on('exit', () => {
    for (const w of waiters.splice(0)) w();
  });
  return {
    proc,
    async line(re, ms) {
      const deadline = performance.now() + ms;
      for (;;) {
        for (const l of out.split('\n')) {
          const m = l.trim().match(re);
          if (m) return m;
        }
        if (proc.exitCode !== null || proc.signalCode !== null) throw new Error(`${env.SSE_ROLE} exited: ${firstLines(err) || 'no output'}`);
        if (performance.now() > deadline) throw new Error(`${env.SSE_ROLE}: no ${re.source} within ${ms} ms: ${firstLines(err)}`);
        await Promise.race([new Promise<void>((r) => waiters.push(r)), sleep(200)]);
      }
    },
  };
}

// ---------------------------------------------------------------------------------------
// The child programs (this file run with SSE_ROLE set).

/** Exits when the harness closes stdin or signals. */
function exitWithHarness(): void {
  const bye = (): never => process.exit(0);
  process.on('SIGTERM', bye);
  process.on('SIGINT', bye);
  process.stdin.on('end', bye).on('error', bye).resume();
}

/** The event data of the given size. */
function payloadOf(n: number): string {
  return 'x'.repeat(n);
}

/** switchyard: `sseStream` per client, one producer writing each event to every stream. */
async function switchyardServer(clients: number, payload: string): Promise<void> {
  const { serve } = await import('../kernel/index.js');
  const { SSEEvent, sseStream } = await import('../plugins/sse/index.js');
  type Stream = import('../plugins/sse/index.js').SSEStream;
  const streams = new Set<Stream>();
  let started = false;
  const broadcast = async (): Promise<void> => {
    for (let n = 0; streams.size > 0; n++) {
      const ev = new SSEEvent(payload, { id: String(n) });
      const waits: Promise<void>[] = [];
      for (const s of streams) waits.push(s.write(ev));
      try {
        await Promise.all(waits);
      } catch {
        for (const s of streams) if (s.closed) streams.delete(s);
      }
      await new Promise<void>((r) => setImmediate(r));
    }
  };
  const server = await serve(
    (req) =>
      sseStream(
        async (s) => {
          streams.add(s);
          if (!started && streams.size === clients) {
            started = true;
            void broadcast();
          }
          await new Promise<void>((r) => s.ctx.onCancel(() => r()));
          streams.delete(s);
        },
        200,
        { request: req },
      ),
    { host: HOST, port: 0 },
  );
  process.stdout.write(`PORT ${server.port}\n`);
}

/** node:http by hand: `res.write` of one prebuilt buffer per event to every client, `'drain'` for backpressure. */
async function nodeHttpServer(clients: number, payload: string): Promise<void> {
  const all = new Set<http.ServerResponse>();
  let started = false;
  let n = 0;
  const tick = (): void => {
    if (all.size === 0) return;
    const buf = Buffer.from(`id: ${n++}\ndata: ${payload}\n\n`, 'utf8');
    let waiting = 1;
    const done = (): void => {
      if (--waiting === 0) setImmediate(tick);
    };
    for (const res of all) {
      if (!res.write(buf)) {
        waiting++;
        let once = false;
        const go = (): void => {
          if (once) return;
          once = true;
          res.off('drain', go);
          res.off('close', go);
          done();
        };
        res.on('drain', go);
        res.on('close', go);
      }
    }
    done();
  };
  const server = http.createServer((req, res) => {
    res.writeHead(200, { 'Content-Type': 'text/event-stream', 'Cache-Control': 'no-cache' });
    res.flushHeaders();
    all.add(res);
    req.on('close', () => all.delete(res));
    if (!started && all.size === clients) {
      started = true;
      setImmediate(tick);
    }
  });
  await new Promise<void>((r) => server.listen(0, HOST, r));
  process.stdout.write(`PORT ${(server.address() as AddressInfo).port}\n`);
}

/** The clients: raw sockets counting blank lines (one per event) as bytes arrive. */
async function loadClients(port: number, clients: number, warmupS: number, durationS: number): Promise<void> {
  const counts = new Float64Array(clients);
  const sockets: net.Socket[] = [];
  const request = `GET /feed HTTP/1.1\r\nHost: ${HOST}:${port}\r\nAccept: text/event-stream\r\n\r\n`;
  for (let i = 0; i < clients; i++) {
    const s = net.connect(port, HOST);
    s.setNoDelay(true);
    let prevLF = false;
    s.on('data', (chunk: Buffer) => {
      let c = 0;
      for (let j = chunk.indexOf(10); j !== -1; j = chunk.indexOf(10, j + 1)) {
        if (j === 0 ? prevLF : chunk[j - 1] === 10) c++;
      }
      prevLF = chunk[chunk.length - 1] === 10;
      counts[i]! += c;
    });
    s.on('error', (e) => {
      console.error(`client ${i}: ${e.message}`);
      process.exit(1);
    });
    s.write(request);
    sockets.push(s);
  }
  const t0 = performance.now();
  while (counts.some((c) => c === 0)) {
    if (performance.now() - t0 > 15_000) throw new Error(`only ${counts.filter((c) => c > 0).length} of ${clients} clients got an event`);
    await sleep(20);
  }
  await sleep(warmupS * 1000);
  process.stdout.write('WINDOW\n');
  const before = Float64Array.from(counts);
  const start = performance.now();
  await sleep(durationS * 1000);
  const after = Float64Array.from(counts);
  const seconds = (performance.now() - start) / 1000;
  let total = 0;
  let min = Infinity;
  for (let i = 0; i < clients; i++) {
    const d = after[i]! - before[i]!;
    total += d;
    if (d < min) min = d;
  }
  const fairness = total > 0 ? min / (total / clients) : 0;
  process.stdout.write(`RESULT ${JSON.stringify({ eventsPerSec: total / seconds, fairness, events: total })}\n`);
  for (const s of sockets) s.destroy();
}

async function childMain(role: string): Promise<void> {
  exitWithHarness();
  const clients = Number(process.env.SSE_CLIENTS ?? 100);
  const payload = payloadOf(Number(process.env.SSE_PAYLOAD ?? 64));
  if (role === 'switchyard') await switchyardServer(clients, payload);
  else if (role === 'node-http') await nodeHttpServer(clients, payload);
  else if (role === 'load') await loadClients(Number(process.env.SSE_PORT), clients, Number(process.env.SSE_WARMUP ?? 1), Number(process.env.SSE_DURATION ?? 3));
  else throw new Error(`unknown SSE_ROLE ${role}`);
}

const role = process.env.SSE_ROLE;
if (role !== undefined && role !== '') {
  childMain(role).catch((err: unknown) => {
    console.error(err);
    process.exit(1);
  });
} else if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(process.argv[1]).href) {
  runSseBench().catch((err: unknown) => {
    console.error(err);
    process.exitCode = 1;
  });
}
