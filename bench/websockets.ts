/**
 * WebSocket benchmark: switchyard (`WebSockets.listen` + `WebSockets.open`) against bare `ws`
 * (`WebSocketServer` + `WebSocket`), each talking to its own kind, in one run.
 *
 * Run directly with `node --import tsx bench/websockets.ts`, or call
 * {@link runWebsocketsBench} from the bench runner.
 *
 * Scenarios (echo: the client sends binary messages, the server sends each back):
 *   64 B x1     one 64-byte message in flight: round trips per second
 *   64 B x100   100 messages in flight (a new one sent per echo received)
 *   1 MiB x1    one 1 MiB message in flight (half-compressible bytes): MiB/s echoed
 * each with and without permessage-deflate, ws's defaults on both stacks. ws applies its 1 KiB
 * threshold only under no_context_takeover, which neither side asks for, so the 64-byte
 * messages are compressed too (one zlib round trip per message and direction on both stacks).
 *
 * Method: four echo servers (two stacks, compression on/off) run as child processes pinned to
 * one core (`taskset -c 1`); two load processes (one per stack) are pinned to another
 * (`taskset -c 0`) and driven over stdin, one fresh connection per run (the handshake is not
 * timed). Each scenario gets fresh processes: one measured after another inherited its heap
 * (the 1 MiB rows after the 64-byte ones ran ~10% slower on both stacks, unevenly). Stacks alternate order every round; one warm-up run per pair first; the median of
 * the rounds is reported and the ratio is the median of per-round ratios. Children run this
 * file precompiled by esbuild with plain node, both stacks alike (tsx if esbuild is missing). Besides throughput, the CPU time (user + system,
 * from /proc) both processes of a stack spent per echoed message is reported: on a shared,
 * busy machine it moves far less than messages per second.
 *
 * Process footprint: the switchyard children load the kernel and the plugin; the ws children
 * load only ws. (Under tsx, the switchyard side also held every transpiled module and its
 * source map, which is why the children are precompiled now.) With 1 MiB messages that alone changes V8's GC behaviour
 * (a bigger old generation: incremental marking and mark-compacts every ~20 messages instead
 * of scavenges only), which costs ~15% CPU per message and is not the WebSocket path.
 * BENCH_WS_SAME_MODULES=1 makes the ws children import the websockets plugin too (unused),
 * so both stacks run with the same code loaded and the comparison isolates the per-message
 * path. Off by default: the default compares the stacks as shipped.
 *
 * Rounds are many and short (7 × 0.6 s by default, not 3 × 1.2 s): this machine's speed moves
 * in bursts of seconds, and a ratio taken per round of adjacent runs, then the median of seven,
 * is steadier than one of three.
 *
 * Environment: BENCH_DURATION (s per run, default 0.6), BENCH_RUNS (default 7),
 * BENCH_WS_SCENARIOS (comma list of echo64, echo64x100, echo1m), BENCH_SERVER_CPU /
 * BENCH_LOAD_CPU (default 1 / 0), BENCH_WS_SAME_MODULES (default 0).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { readFileSync } from 'node:fs';
import { createInterface } from 'node:readline';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { abortOnSignals, childTracker, envList, fmtInt, fmtRatio, prepareProgram, printTable, stopChild, type Launch } from './common.js';
import { median, pinned, tasksetUsable } from './load.js';

type Stack = 'ws' | 'switchyard';
const STACKS: Stack[] = ['ws', 'switchyard'];

interface Scenario {
  key: string;
  label: string;
  size: number;
  inflight: number;
}

const SCENARIOS: Scenario[] = [
  { key: 'echo64', label: '64 B x1', size: 64, inflight: 1 },
  { key: 'echo64x100', label: '64 B x100', size: 64, inflight: 100 },
  { key: 'echo1m', label: '1 MiB x1', size: 1024 * 1024, inflight: 1 },
];

/** A run's command to a load process, and its answer. */
interface RunCommand {
  url: string;
  compress: boolean;
  size: number;
  inflight: number;
  ms: number;
}
interface RunResult {
  messages: number;
  seconds: number;
  error?: string;
}

/** Half-compressible bytes: a small alphabet from an LCG. */
function payload(size: number): Buffer {
  const b = Buffer.alloc(size);
  let x = 12345;
  for (let i = 0; i < size; i++) {
    x = (x * 1103515245 + 12345) >>> 0;
    b[i] = 97 + ((x >>> 16) % 16);
  }
  return b;
}

// ---------------------------------------------------------------------------------------
// Child roles: an echo server, and a load process driven over stdin.

async function serveEcho(stack: Stack, compress: boolean): Promise<void> {
  if (stack === 'ws') {
    const { WebSocketServer } = await import('ws');
    const wss = new WebSocketServer({ host: '127.0.0.1', port: 0, perMessageDeflate: compress });
    wss.on('connection', (ws) => {
      ws.on('message', (data, isBinary) => ws.send(data as Buffer, { binary: isBinary }));
      ws.on('error', () => {});
    });
    await once(wss, 'listening');
    console.log(String((wss.address() as { port: number }).port));
    return;
  }
  const { WebSockets } = await import('../plugins/websockets/index.js');
  const server = await WebSockets.listen(
    async (ws) => {
      for await (const m of ws) await ws.send(m);
    },
    { host: '127.0.0.1', port: 0, compress, onError: () => {} },
  );
  console.log(String(server.port));
}

async function loadRun(stack: Stack, c: RunCommand): Promise<RunResult> {
  const data = payload(c.size);
  if (stack === 'ws') {
    const { WebSocket } = await import('ws');
    const ws = new WebSocket(c.url, { perMessageDeflate: c.compress });
    ws.on('error', () => {});
    await once(ws, 'open');
    const result = await new Promise<RunResult>((resolve) => {
      let messages = 0;
      let outstanding = c.inflight;
      const start = performance.now();
      const end = start + c.ms;
      ws.on('message', () => {
        messages++;
        if (performance.now() < end) ws.send(data);
        else if (--outstanding === 0) resolve({ messages, seconds: (performance.now() - start) / 1000 });
      });
      for (let i = 0; i < c.inflight; i++) ws.send(data);
    });
    ws.close();
    await once(ws, 'close');
    return result;
  }
  const { WebSockets } = await import('../plugins/websockets/index.js');
  return WebSockets.open(
    c.url,
    async (ws) => {
      let messages = 0;
      let outstanding = c.inflight;
      const start = performance.now();
      const end = start + c.ms;
      for (let i = 0; i < c.inflight; i++) await ws.send(data);
      for (;;) {
        await ws.receive();
        messages++;
        if (performance.now() < end) await ws.send(data);
        else if (--outstanding === 0) return { messages, seconds: (performance.now() - start) / 1000 };
      }
    },
    { compress: c.compress },
  );
}

async function loadLoop(stack: Stack): Promise<void> {
  const rl = createInterface({ input: process.stdin });
  for await (const line of rl) {
    if (line.trim() === '') continue;
    let out: RunResult;
    try {
      out = await loadRun(stack, JSON.parse(line) as RunCommand);
    } catch (err) {
      out = { messages: 0, seconds: 0, error: (err as Error).message };
    }
    process.stdout.write(`${JSON.stringify(out)}\n`);
  }
}

// ---------------------------------------------------------------------------------------
// The bench.

/** CPU seconds (user + system) a process has used so far, from /proc (0 where unreadable). */
function cpuSeconds(pid: number | undefined): number {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return (Number(f[11]) + Number(f[12])) / 100;
  } catch {
    return 0;
  }
}

const SELF = fileURLToPath(import.meta.url);

/**
 * How a child runs this file: precompiled by esbuild and run with plain node (as the server,
 * client and h2 benches run theirs), else through tsx. Under tsx every TypeScript module of
 * the switchyard stack was transpiled at load and kept with its source map, which grew that
 * process's heap and its GC work per message; ws (plain JS) paid none of it.
 */
let launch: Launch = { argv: ['--import', 'tsx', SELF] };

/** A child running this file in a role; `next` resolves to its next stdout line. */
function child(cpu: number | null, args: string[], stdin: boolean): { proc: ChildProcess; next: () => Promise<string> } {
  if ('error' in launch) throw new Error(launch.error);
  const argv = pinned(cpu, [process.execPath, ...launch.argv, ...args]);
  const proc = spawn(argv[0]!, argv.slice(1), { stdio: [stdin ? 'pipe' : 'ignore', 'pipe', 'inherit'] });
  const rl = createInterface({ input: proc.stdout! });
  const queue: string[] = [];
  const waiters: { resolve(s: string): void; reject(e: Error): void }[] = [];
  let exited: Error | null = null;
  rl.on('line', (l) => {
    const w = waiters.shift();
    if (w) w.resolve(l);
    else queue.push(l);
  });
  proc.once('exit', (code) => {
    exited = new Error(`bench child ${args.join(' ')} exited (${code})`);
    for (const w of waiters.splice(0)) w.reject(exited);
  });
  const next = (): Promise<string> => {
    const q = queue.shift();
    if (q !== undefined) return Promise.resolve(q);
    if (exited !== null) return Promise.reject(exited);
    return new Promise((resolve, reject) => waiters.push({ resolve, reject }));
  };
  return { proc, next };
}

/** Runs the WebSocket bench and prints its table. */
export async function runWebsocketsBench(log: (s: string) => void = console.log): Promise<void> {
  const duration = Number(process.env.BENCH_DURATION ?? 0.6) * 1000;
  const runs = Math.max(1, Number(process.env.BENCH_RUNS ?? 7));
  const wanted = envList('BENCH_WS_SCENARIOS');
  const scenarios = SCENARIOS.filter((s) => wanted === null || wanted.includes(s.key));
  const serverCpu = Number(process.env.BENCH_SERVER_CPU ?? 1);
  const loadCpu = Number(process.env.BENCH_LOAD_CPU ?? 0);
  const pin = tasksetUsable(serverCpu) && tasksetUsable(loadCpu);
  const children = childTracker();
  const { dispose } = abortOnSignals(children, () => {});
  const t0 = performance.now();
  const prepared = await prepareProgram(SELF, 'websockets-bench.mjs', 'WebSocket bench programs');
  if (prepared.note !== undefined) log(prepared.note);
  launch = prepared.launch;
  log(`programs: ${prepared.runner === 'esbuild' ? 'precompiled with esbuild (bundled sources, npm packages external, target node20), run with plain node' : 'node --import tsx'}`);
  let procs: ChildProcess[] = [];
  const ports = new Map<string, number>();
  const serverPids = new Map<string, number | undefined>();
  const loads = new Map<Stack, ReturnType<typeof child>>();
  /** Fresh servers and load processes for each scenario: no state carried from another one (heap sizes, JIT). */
  const startProcesses = async (): Promise<void> => {
    for (const stack of STACKS) {
      for (const compress of [false, true]) {
        const c = child(pin ? serverCpu : null, ['--serve', stack, compress ? '1' : '0'], false);
        children.track(c.proc);
        procs.push(c.proc);
        ports.set(`${stack}/${compress}`, Number(await c.next()));
        serverPids.set(`${stack}/${compress}`, c.proc.pid);
      }
    }
    for (const stack of STACKS) {
      const c = child(pin ? loadCpu : null, ['--load', stack], true);
      children.track(c.proc);
      procs.push(c.proc);
      loads.set(stack, c);
    }
  };
  const stopProcesses = async (): Promise<void> => {
    const all = procs;
    procs = [];
    for (const l of all) l.stdin?.end();
    await Promise.all(all.map((p) => stopChild(p)));
  };
  try {
    /** One run: its result, and the CPU time both processes spent per message (µs). */
    const run = async (stack: Stack, s: Scenario, compress: boolean, ms: number): Promise<RunResult & { cpuUs: number }> => {
      const l = loads.get(stack)!;
      const key = `${stack}/${compress}`;
      const cmd: RunCommand = { url: `ws://127.0.0.1:${ports.get(key)}/`, compress, size: s.size, inflight: s.inflight, ms };
      const cpu0 = cpuSeconds(l.proc.pid) + cpuSeconds(serverPids.get(key));
      l.proc.stdin!.write(`${JSON.stringify(cmd)}\n`);
      const r = JSON.parse(await l.next()) as RunResult;
      if (r.error !== undefined) throw new Error(`${stack} ${s.key}: ${r.error}`);
      const cpu = cpuSeconds(l.proc.pid) + cpuSeconds(serverPids.get(key)) - cpu0;
      return { ...r, cpuUs: r.messages > 0 ? (cpu * 1e6) / r.messages : NaN };
    };
    const rows: string[][] = [];
    for (const s of scenarios) {
      await startProcesses();
      for (const compress of [false, true]) {
        for (const stack of STACKS) await run(stack, s, compress, Math.min(500, duration));
        const rates: Record<Stack, number[]> = { ws: [], switchyard: [] };
        const cpu: Record<Stack, number[]> = { ws: [], switchyard: [] };
        for (let r = 0; r < runs; r++) {
          const order = r % 2 === 0 ? STACKS : [...STACKS].reverse();
          for (const stack of order) {
            const res = await run(stack, s, compress, duration);
            rates[stack].push(res.messages / res.seconds);
            cpu[stack].push(res.cpuUs);
          }
        }
        const ratio = median(rates.switchyard.map((v, i) => v / rates.ws[i]!));
        const unit = s.size >= 1024 * 1024 ? (v: number) => `${(v * (s.size / 1048576)).toFixed(0)} MiB/s` : (v: number) => `${fmtInt(v)} msg/s`;
        const us = (v: number): string => (Number.isFinite(v) ? (v >= 100 ? v.toFixed(0) : v.toFixed(1)) : '-');
        rows.push([s.label, compress ? 'deflate' : 'off', unit(median(rates.ws)), unit(median(rates.switchyard)), fmtRatio(ratio), us(median(cpu.ws)), us(median(cpu.switchyard))]);
      }
      await stopProcesses();
    }
    const same = process.env.BENCH_WS_SAME_MODULES === '1' ? '; ws children also load the switchyard plugin (BENCH_WS_SAME_MODULES=1)' : '';
    log(`WebSocket echo, ${runs} runs of ${(duration / 1000).toFixed(1)} s, median${pin ? `; servers on cpu ${serverCpu}, load on cpu ${loadCpu}` : '; not pinned (taskset unusable)'}${same}`);
    log('');
    printTable(['scenario', 'compress', 'ws', 'switchyard', 'switchyard/ws', 'ws CPU µs/msg', 'switchyard CPU µs/msg'], rows, log, true);
    log('');
    log('CPU µs/msg: user+system time of the server and load processes per echoed message (steadier than throughput on a busy machine).');
    log(`websockets bench took ${((performance.now() - t0) / 1000).toFixed(0)} s`);
  } finally {
    await stopProcesses();
    dispose();
  }
}

const role = process.argv[2];
// See the module notes (process footprint): the ws children load the same code, unused.
if (process.env.BENCH_WS_SAME_MODULES === '1' && (role === '--serve' || role === '--load') && process.argv[3] === 'ws') {
  await import('../plugins/websockets/index.js');
}
if (role === '--serve') {
  await serveEcho(process.argv[3] as Stack, process.argv[4] === '1');
} else if (role === '--load') {
  await loadLoop(process.argv[3] as Stack);
  process.exit(0);
} else if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(process.argv[1]).href) {
  runWebsocketsBench().catch((err: unknown) => {
    console.error(err);
    process.exitCode = 1;
  });
}
