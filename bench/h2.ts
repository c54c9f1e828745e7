/**
 * HTTP/2 benchmark, side by side in one run:
 *
 * - server: `h2load -c 10 -m 100` against switchyard (h2 and h2c plugins) over h2c and TLS,
 *   a bare `node:http2` server, and fastify with `http2: true`; hello-world responses. Each
 *   server runs in its own child process (this file with `--serve <kind>`), pinned to one core
 *   with `taskset`, h2load to another. Each round starts the three servers of a transport
 *   (h2c, then TLS) afresh and together (idle while not under load), warms each up, and
 *   measures them one after the other, forward then reversed (A B C, C B A, ...): switchyard's
 *   slice is always next to node:http2's, and the two meet in both orders; then one
 *   same-window slice, node:http2, switchyard and a second bare node:http2 process (the
 *   control, whose ratio to node:http2 is the method's own floor) loaded at once by three
 *   h2loads so that they share the server core and the same seconds of the machine; then
 *   stops them. Ratios are
 *   paired per round against bare node:http2, median of the rounds. CPU per request is per
 *   slice: the harness asks the child for its CPU time before and after.
 * - client: 100 concurrent streams on one session against a bare node:http2 h2c server (child
 *   process): switchyard's `Client` (`http2PriorKnowledge`) vs a bare node:http2 client session,
 *   each in a fresh process that makes 5,000 requests on its session before the counted ones;
 *   rounds one after the other, then same-window rounds with both clients at once on the load
 *   core, counted from one GO to one STOP.
 *   The bare session does per request what a client must to return a response: the status
 *   from 'response', the body gathered into one buffer (and both checked, as switchyard's
 *   Client checks the status); switchyard's `get` returns the same as a `Response`.
 *
 * Each server gets a short h2load warm-up first (not counted in req/s nor CPU).
 *
 * Environment: BENCH_H2_RUNS (rounds, default 7), BENCH_H2_SECONDS (h2load seconds per server
 * and round, default 2), BENCH_H2_CLIENT_REQUESTS (requests per client round, default 20000),
 * BENCH_H2_CLIENT_RUNS (client rounds, default the larger of BENCH_H2_RUNS and 5),
 * BENCH_SERVER_CPU / BENCH_LOAD_CPU (cores, default 1 and 0), BENCH_H2_ONLY (`server` or
 * `client`: that part alone). Needs h2load (Debian
 * `nghttp2-client`). `node --import tsx bench/h2.ts` runs it alone.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import http2 from 'node:http2';
import { once } from 'node:events';
import { fileURLToPath } from 'node:url';
import { childTracker, fmtInt, fmtRatio, pairedRatio, prepareProgram, printTable, sleep, stopChild, type Launch } from './common.js';
import { median, pinned, tasksetUsable } from './load.js';

type ServerKind = 'switchyard-h2c' | 'switchyard-h2' | 'node-h2c' | 'node-h2' | 'fastify-h2c' | 'fastify-h2';

const SERVERS: { kind: ServerKind; label: string; tls: boolean }[] = [
  { kind: 'node-h2c', label: 'node:http2 h2c', tls: false },
  { kind: 'switchyard-h2c', label: 'switchyard h2c', tls: false },
  { kind: 'fastify-h2c', label: 'fastify http2 h2c', tls: false },
  { kind: 'node-h2', label: 'node:http2 TLS', tls: true },
  { kind: 'switchyard-h2', label: 'switchyard TLS h2', tls: true },
  { kind: 'fastify-h2', label: 'fastify http2 TLS', tls: true },
];

const BODY = 'hello world';
/** h2load seconds against each server before it is measured (not counted). */
const WARMUP_SECONDS = 0.5;
const SELF = fileURLToPath(import.meta.url);

// ---------------------------------------------------------------------------------------
// Child: one server

async function serveKind(kind: ServerKind): Promise<void> {
  const tls = kind.endsWith('-h2') ? await certificate() : null;
  let port: number;
  let close: () => Promise<unknown> = async () => undefined;
  if (kind.startsWith('switchyard')) {
    const { createKernel, Response, serve } = await import('../kernel/index.js');
    const { h2 } = await import('../plugins/h2/index.js');
    const { h2c } = await import('../plugins/h2c/index.js');
    const kernel = await createKernel().register(h2).register(h2c).ready();
    const headers = { 'Content-Type': 'text/plain' };
    const server = await serve(() => new Response(200, BODY, { headers }), { kernel, host: '127.0.0.1', port: 0, ...(tls ? { tls } : {}) });
    port = server.port;
    close = () => server.forceClose();
  } else if (kind.startsWith('node')) {
    const server = tls ? http2.createSecureServer(tls) : http2.createServer();
    server.on('stream', (stream) => {
      stream.respond({ ':status': 200, 'content-type': 'text/plain', 'content-length': BODY.length });
      stream.end(BODY);
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
    port = (server.address() as { port: number }).port;
    close = () => new Promise((r) => server.close(() => r(undefined)));
  } else {
    const { fastify } = await import('fastify');
    // One call shape for both (fastify's typings split them); https: set for TLS only.
    const app = fastify({ http2: true, logger: false, ...(tls ? { https: tls } : {}) } as { http2: true; logger: false });
    app.get('/', (_req, reply) => {
      void reply.type('text/plain').send(BODY);
    });
    await app.listen({ host: '127.0.0.1', port: 0 });
    port = (app.server.address() as { port: number }).port;
    close = () => app.close();
  }
  process.stdout.write(`PORT ${port}\n`);
  // The harness asks for the CPU time spent so far before and after each measured slice
  // (less noisy than req/s on a shared machine): one line in, one line out.
  process.stdin.on('data', (c: Buffer) => {
    if (c.toString().includes('CPU?')) {
      const u = process.cpuUsage();
      process.stdout.write(`CPU ${u.user + u.system}\n`);
    }
  });
  const exit = (): void => {
    void close().finally(() => process.exit(0));
  };
  process.on('SIGTERM', exit);
  process.stdin.on('end', exit);
  process.stdin.resume();
}

async function certificate(): Promise<{ key: string; cert: string }> {
  const { selfSignedCertificate } = await import('../tls/self-signed.js');
  const c = selfSignedCertificate();
  return { key: c.key, cert: c.cert };
}

// ---------------------------------------------------------------------------------------
// Harness

const children = childTracker();
/** How children run this file: precompiled with esbuild (as the other benches do), else through tsx. */
let launch: Launch = { argv: ['--import', 'tsx', SELF] };

function childArgv(cpu: number | null, args: string[]): string[] {
  if ('error' in launch) throw new Error(launch.error);
  return pinned(cpu, [process.execPath, ...launch.argv, ...args]);
}

interface LiveServer {
  kind: ServerKind;
  child: ChildProcess;
  port: number;
  /** The child's CPU time so far (user + system, µs). */
  cpuNow(): Promise<number>;
}

async function startServer(kind: ServerKind, cpu: number | null): Promise<LiveServer> {
  const argv = childArgv(cpu, ['--serve', kind]);
  const child = spawn(argv[0]!, argv.slice(1), { stdio: ['pipe', 'pipe', 'inherit'] });
  children.track(child);
  let out = '';
  const cpuWaiters: ((us: number) => void)[] = [];
  const port = await new Promise<number>((resolve, reject) => {
    child.stdout!.on('data', (c: Buffer) => {
      out += c.toString();
      const m = /PORT (\d+)\n/.exec(out);
      if (m) resolve(Number(m[1]));
      // Answers to CPU? come one line each, in the order asked.
      for (let nl = out.indexOf('\n'); nl >= 0; nl = out.indexOf('\n')) {
        const line = out.slice(0, nl);
        out = out.slice(nl + 1);
        const cm = /^CPU (\d+)$/.exec(line);
        if (cm) cpuWaiters.shift()?.(Number(cm[1]));
      }
    });
    child.once('exit', (code) => reject(new Error(`${kind} exited (${code}) before listening`)));
  });
  const cpuNow = (): Promise<number> =>
    new Promise((resolve, reject) => {
      if (child.exitCode !== null || child.signalCode !== null) {
        reject(new Error(`${kind} has exited`));
        return;
      }
      cpuWaiters.push(resolve);
      child.stdin!.write('CPU?\n');
    });
  return { kind, child, port, cpuNow };
}

function h2load(url: string, seconds: number, cpu: number | null): Promise<{ rps: number; errors: number; succeeded: number; raw: string }> {
  const argv = pinned(cpu, ['h2load', '-c', '10', '-m', '100', ...(seconds < 1 ? ['-n', String(Math.round(seconds * 40000))] : ['-D', String(seconds)]), url]);
  return new Promise((resolve, reject) => {
    const child = spawn(argv[0]!, argv.slice(1), { stdio: ['ignore', 'pipe', 'pipe'] });
    children.track(child);
    let out = '';
    child.stdout.on('data', (c: Buffer) => (out += c.toString()));
    child.stderr.on('data', (c: Buffer) => (out += c.toString()));
    child.once('error', reject);
    child.once('exit', () => {
      const rps = /finished in [\d.]+m?s, ([\d.]+) req\/s/.exec(out);
      const req = /requests: \d+ total, \d+ started, \d+ done, \d+ succeeded, (\d+) failed, (\d+) errored/.exec(out);
      if (!rps) {
        reject(new Error(`h2load output not understood: ${out.slice(0, 300)}`));
        return;
      }
      const done = /requests: \d+ total, \d+ started, \d+ done, (\d+) succeeded/.exec(out);
      resolve({ rps: Number(rps[1]), errors: req ? Number(req[1]) + Number(req[2]) : NaN, succeeded: done ? Number(done[1]) : NaN, raw: out });
    });
  });
}

interface Row {
  label: string;
  runs: number[];
  reqPerSec: number;
  errors: number;
  /** Server CPU µs per request, per round. */
  cpu: number[];
  /**
   * Same-window rounds: on a switchyard row, switchyard's req/s over node:http2's when both
   * are loaded at once on the shared server core, one ratio per round; on a node:http2 row,
   * the control's (a second bare node:http2 process in the same slice) over node:http2's.
   */
  shared: number[];
}

async function serverBench(runs: number, seconds: number, serverCpu: number | null, loadCpu: number | null, log: (s: string) => void): Promise<Row[]> {
  const rows = new Map<ServerKind, Row>(SERVERS.map((s) => [s.kind, { label: s.label, runs: [], reqPerSec: NaN, errors: 0, cpu: [], shared: [] }]));
  for (const tls of [false, true]) {
    const group = SERVERS.filter((s) => s.tls === tls);
    const url = (l: LiveServer): string => `${tls ? 'https' : 'http'}://127.0.0.1:${l.port}/`;
    for (let round = 0; round < runs; round++) {
      // Fresh processes every round: under this load V8's young generation settles, per
      // process, into promoting node:http2's stream objects or not, and a process tends to
      // stay where it settled (switchyard processes read 16 of 16 slices promoting in two runs,
      // 4 of 12 in another; README). New processes per round draw that again, so
      // the median over rounds is not one draw per server. Started together: they share the
      // server core but are idle while another is measured.
      // With them, a second bare node:http2 process, loaded only in the same-window slice:
      // node:http2 against itself there is the method's own floor (its bias and spread) for
      // the ratio switchyard reads beside it.
      const nodeKind = group.find((s) => s.kind.startsWith('node'))!.kind;
      const [control, ...live] = await Promise.all([nodeKind, ...group.map((s) => s.kind)].map((k) => startServer(k, serverCpu)));
      try {
        for (const l of [...live, control]) await h2load(url(l), WARMUP_SECONDS, loadCpu);
        // Forward, then reversed: no server always runs first, and each pair meets in both orders.
        for (const l of round % 2 === 0 ? live : [...live].reverse()) {
          const before = await l.cpuNow();
          const r = await h2load(url(l), seconds, loadCpu);
          const after = await l.cpuNow();
          const row = rows.get(l.kind)!;
          row.runs.push(r.rps);
          row.errors += r.errors;
          row.cpu.push((after - before) / r.succeeded);
        }
        // Same window: node:http2, switchyard and the control loaded at once, each by its own
        // h2load, so whatever the machine does during the slice it does to all three. All are
        // busy the whole slice and share the server core (the scheduler splits it evenly
        // between runnable processes), so the ratio of two servers' req/s is the ratio of
        // their work per request, without the machine's swings between slices. The order the
        // h2loads start in rotates (they start microseconds apart).
        const node = live.find((l) => l.kind === nodeKind)!;
        const mine = live.find((l) => l.kind.startsWith('switchyard'))!;
        const trio = [node, mine, control];
        const order = [0, 1, 2].map((i) => trio[(i + round) % 3]!);
        const results = await Promise.all(order.map((l) => h2load(url(l), seconds, loadCpu)));
        const got = (l: LiveServer): { rps: number; errors: number } => results[order.indexOf(l)]!;
        const [n, m, c] = [got(node), got(mine), got(control)];
        rows.get(node.kind)!.errors += n.errors + c.errors;
        rows.get(mine.kind)!.errors += m.errors;
        rows.get(mine.kind)!.shared.push(m.rps / n.rps);
        rows.get(node.kind)!.shared.push(c.rps / n.rps);
      } finally {
        await Promise.all([...live, control].map((l) => stopChild(l.child)));
      }
      log(`  ${tls ? 'TLS' : 'h2c'} round ${round + 1}/${runs} done`);
    }
  }
  for (const r of rows.values()) r.reqPerSec = median(r.runs);
  return [...rows.values()];
}

/**
 * Requests each client makes before the counted ones, on the same session: like the servers'
 * h2load warm-up, the figure is the steady state, not the JIT compiling either stack.
 */
const CLIENT_WARMUP = 5000;

type ClientKind = 'switchyard' | 'node';

/** One client on one session to `port`: `one()` makes a request and checks its response. */
async function makeClient(kind: ClientKind, port: number): Promise<{ one: () => Promise<void>; close: () => void }> {
  const url = `http://127.0.0.1:${port}/`;
  if (kind === 'node') {
    const s = http2.connect(url);
    await once(s, 'connect');
    // What any client does with a response, in the fewest steps node:http2 allows: its status
    // and headers taken from 'response', its body gathered into one buffer (switchyard's
    // Client hands back exactly that: status, headers and the body bytes).
    const one = (): Promise<void> =>
      new Promise((resolve, reject) => {
        const st = s.request({ ':path': '/' });
        let status = 0;
        const chunks: Buffer[] = [];
        st.on('response', (h) => {
          status = Number(h[':status']);
        });
        st.on('data', (c: Buffer) => chunks.push(c));
        st.once('end', () => {
          const body = chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks);
          if (status !== 200 || body.length !== BODY.length) reject(new Error(`unexpected response ${status}`));
          else resolve();
        });
        st.once('error', reject);
      });
    return { one, close: () => s.close() };
  }
  const { Client, createKernel } = await import('../kernel/index.js');
  const { h2 } = await import('../plugins/h2/index.js');
  const { h2c } = await import('../plugins/h2c/index.js');
  const kernel = await createKernel().register(h2).register(h2c).ready();
  const c = new Client({ kernel, http2PriorKnowledge: true });
  const one = async (): Promise<void> => {
    const res = await c.get(url);
    if ((res.body as Uint8Array).length !== BODY.length) throw new Error(`unexpected response ${res.status}`);
  };
  const close = (): void => {
    if (c.transport.connectionCount() !== 1) throw new Error(`the switchyard client used ${c.transport.connectionCount()} connections, not 1`);
    c.close();
  };
  return { one, close };
}

/** `n` requests, at most 100 in flight, on one session (after {@link CLIENT_WARMUP}); resolves to requests per second and CPU µs per request. */
async function clientRound(kind: ClientKind, port: number, n: number): Promise<{ rps: number; cpu: number }> {
  const c = await makeClient(kind, port);
  const r = await measure(n, c.one);
  c.close();
  return r;
}

/**
 * Same-window client (`--client-window`): {@link CLIENT_WARMUP} requests, then `READY`; requests
 * are counted from `GO` on stdin to `STOP` (100 in flight the whole time), and the count, the
 * seconds and the CPU µs in between are printed.
 */
async function clientWindow(kind: ClientKind, port: number): Promise<void> {
  const c = await makeClient(kind, port);
  await pump(CLIENT_WARMUP, c.one);
  process.stdout.write('READY\n');
  let input = '';
  const waitFor = (word: string): Promise<void> =>
    new Promise((resolve) => {
      const check = (): void => {
        if (input.includes(word)) {
          process.stdin.off('data', onData);
          resolve();
        }
      };
      const onData = (b: Buffer): void => {
        input += b.toString();
        check();
      };
      process.stdin.on('data', onData);
      check();
    });
  await waitFor('GO');
  let counting = true;
  let done = 0;
  const t0 = performance.now();
  const c0 = process.cpuUsage();
  const worker = async (): Promise<void> => {
    while (counting) {
      await c.one();
      if (counting) done++;
    }
  };
  const workers = Promise.all(Array.from({ length: 100 }, worker));
  await waitFor('STOP');
  counting = false;
  const seconds = (performance.now() - t0) / 1000;
  const d = process.cpuUsage(c0);
  process.stdout.write(`DONE ${done} SECONDS ${seconds} CPU ${d.user + d.system}\n`);
  await workers;
  c.close();
}

/** {@link CLIENT_WARMUP} requests, then `n` counted: requests per second and CPU µs per request. */
async function measure(n: number, one: () => Promise<void>): Promise<{ rps: number; cpu: number }> {
  await pump(CLIENT_WARMUP, one);
  const t0 = performance.now();
  const c0 = process.cpuUsage();
  await pump(n, one);
  const rps = n / ((performance.now() - t0) / 1000);
  const d = process.cpuUsage(c0);
  return { rps, cpu: (d.user + d.system) / n };
}

async function pump(n: number, one: () => Promise<void>): Promise<void> {
  let next = 0;
  const worker = async (): Promise<void> => {
    while (next < n) {
      next++;
      await one();
    }
  };
  await Promise.all(Array.from({ length: 100 }, worker));
}

/** One client round in a child process (compiled like the servers), pinned to `cpu`. */
function clientChild(kind: ClientKind, port: number, n: number, cpu: number | null): Promise<{ rps: number; cpu: number }> {
  const argv = childArgv(cpu, ['--client', kind, String(port), String(n)]);
  return new Promise((resolve, reject) => {
    const child = spawn(argv[0]!, argv.slice(1), { stdio: ['ignore', 'pipe', 'inherit'] });
    children.track(child);
    let out = '';
    child.stdout.on('data', (c: Buffer) => (out += c.toString()));
    child.once('exit', (code) => {
      const m = /RPS ([\d.]+) CPU ([\d.]+)/.exec(out);
      if (m) resolve({ rps: Number(m[1]), cpu: Number(m[2]) });
      else reject(new Error(`client ${kind} failed (${code}): ${out.slice(0, 200)}`));
    });
  });
}

async function clientBench(runs: number, n: number, seconds: number, serverCpu: number | null, loadCpu: number | null, log: (s: string) => void): Promise<Row[]> {
  const { child, port } = await startServer('node-h2c', serverCpu);
  const rows = {
    node: { label: 'node:http2 session', runs: [] as number[], reqPerSec: NaN, errors: 0, cpu: [] as number[], shared: [] as number[] },
    switchyard: { label: 'switchyard Client', runs: [] as number[], reqPerSec: NaN, errors: 0, cpu: [] as number[], shared: [] as number[] },
  };
  try {
    for (let round = 0; round < runs; round++) {
      for (const k of round % 2 === 0 ? (['node', 'switchyard'] as const) : (['switchyard', 'node'] as const)) {
        const r = await clientChild(k, port, n, loadCpu);
        rows[k].runs.push(r.rps);
        rows[k].cpu.push(r.cpu);
      }
      log(`  client round ${round + 1}/${runs} done`);
    }
    // Same window: both clients at once on the load core, against the same server (whose
    // core stays under half busy: it is not what limits them), counted over the same seconds.
    for (let round = 0; round < runs; round++) {
      const flip = round % 2 === 1;
      const [a, b] = await clientPairWindow(flip ? ['switchyard', 'node'] : ['node', 'switchyard'], port, seconds, loadCpu);
      const [node, mine] = flip ? [b!, a!] : [a!, b!];
      rows.switchyard.shared.push(mine / node);
    }
    log('  client same-window rounds done');
  } finally {
    await stopChild(child);
  }
  for (const r of Object.values(rows)) r.reqPerSec = median(r.runs);
  return [rows.node, rows.switchyard];
}

const DONE_LINE = /DONE (\d+) SECONDS ([\d.]+) CPU (\d+)\n/;

/** Two `--client-window` children started in `order`, counted over the same `seconds`: their req/s. */
async function clientPairWindow(order: ClientKind[], port: number, seconds: number, cpu: number | null): Promise<number[]> {
  const kids = order.map((kind) => {
    const argv = childArgv(cpu, ['--client-window', kind, String(port)]);
    const child = spawn(argv[0]!, argv.slice(1), { stdio: ['pipe', 'pipe', 'inherit'] });
    children.track(child);
    let out = '';
    const waiters: { word: RegExp; resolve: () => void }[] = [];
    child.stdout!.on('data', (c: Buffer) => {
      out += c.toString();
      for (let i = waiters.length - 1; i >= 0; i--) {
        if (waiters[i]!.word.test(out)) waiters.splice(i, 1)[0]!.resolve();
      }
    });
    const failed = new Promise<never>((_, reject) => child.once('exit', (code) => reject(new Error(`client ${kind} exited (${code}): ${out.slice(0, 200)}`))));
    // It exits by itself once it has reported; only a wait still pending cares.
    failed.catch(() => undefined);
    const wait = (word: RegExp): Promise<void> => Promise.race([new Promise<void>((resolve) => (word.test(out) ? resolve() : waiters.push({ word, resolve }))), failed]);
    return { child, wait, out: () => out };
  });
  try {
    await Promise.all(kids.map((k) => k.wait(/READY\n/)));
    for (const k of kids) k.child.stdin!.write('GO\n');
    await sleep(seconds * 1000);
    for (const k of kids) k.child.stdin!.write('STOP\n');
    await Promise.all(kids.map((k) => k.wait(DONE_LINE)));
    return kids.map((k) => {
      const m = DONE_LINE.exec(k.out());
      return m ? Number(m[1]) / Number(m[2]) : NaN;
    });
  } finally {
    await Promise.all(kids.map((k) => stopChild(k.child)));
  }
}

/** Runs the HTTP/2 benchmark and prints its tables. */
export async function runH2Bench(log: (s: string) => void = console.log): Promise<void> {
  const runs = Number(process.env.BENCH_H2_RUNS ?? 7) || 7;
  const seconds = Number(process.env.BENCH_H2_SECONDS ?? 2) || 2;
  const n = Number(process.env.BENCH_H2_CLIENT_REQUESTS ?? 20000) || 20000;
  const sCpu = Number(process.env.BENCH_SERVER_CPU ?? 1);
  const lCpu = Number(process.env.BENCH_LOAD_CPU ?? 0);
  const pin = tasksetUsable(sCpu) && tasksetUsable(lCpu) && sCpu !== lCpu;
  log(pin ? `pinning: servers on core ${sCpu}, load on core ${lCpu}` : 'WARNING: not pinning (taskset unusable or one core); figures are noisier');
  try {
    const prepared = await prepareProgram(SELF, 'h2-bench.mjs', 'HTTP/2 bench programs');
    if (prepared.note !== undefined) log(prepared.note);
    launch = prepared.launch;
    const only = process.env.BENCH_H2_ONLY;
    const rows = only === 'client' ? [] : await serverBench(runs, seconds, pin ? sCpu : null, pin ? lCpu : null, log);
    const base = (label: string): Row | undefined => rows.find((r) => r.label === label);
    log(`\nh2load -c 10 -m 100, ${seconds} s per server and round, median of ${runs} rounds (hello world)`);
    if (rows.length > 0) {
      log('same window: switchyard, node:http2 and a second node:http2 process (the control) loaded at once on the shared server core;');
      log("  ratio of req/s to node:http2 per round, median (rounds); on the node:http2 rows, the control's: the method's own floor");
    }
    if (rows.length > 0)
      printTable(
        ['server', 'req/s', 'vs node:http2', 'same window', 'vs fastify', 'CPU µs/req', 'CPU vs node:http2', 'errors', 'runs (req/s)'],
        rows.map((r) => {
          const tls = r.label.includes('TLS');
          const node = base(tls ? 'node:http2 TLS' : 'node:http2 h2c');
          const fastify = base(tls ? 'fastify http2 TLS' : 'fastify http2 h2c');
          const cpu = median(r.cpu);
          // Efficiency as a throughput-like ratio: node's CPU per request over ours (>1: cheaper than node).
          const cpuRatio = node !== undefined ? median(node.cpu) / cpu : NaN;
          const rounds = `${fmtRatio(median(r.shared))} (${r.shared.map((x) => x.toFixed(2)).join(' ')})`;
          const shared = r.shared.length === 0 ? '-' : r === node ? `control ${rounds}` : rounds;
          return [
            r.label,
            fmtInt(r.reqPerSec),
            fmtRatio(pairedRatio(r, node, runs)),
            shared,
            fmtRatio(pairedRatio(r, fastify, runs)),
            cpu.toFixed(1),
            fmtRatio(cpuRatio),
            String(r.errors),
            r.runs.map(fmtInt).join(' '),
          ];
        }),
        log,
        true,
      );
    if (only === 'server') return;
    // Client rounds are short (a few seconds each): more of them, for a steadier median.
    const clientRuns = Number(process.env.BENCH_H2_CLIENT_RUNS ?? Math.max(runs, 5)) || 5;
    const crow = await clientBench(clientRuns, n, seconds, pin ? sCpu : null, pin ? lCpu : null, log);
    log(`\nclient: ${n} requests after ${CLIENT_WARMUP} to warm up, 100 concurrent streams on one session, against a bare node:http2 h2c server, median of ${clientRuns} rounds`);
    log(`same window: both clients at once on the load core for ${seconds} s, each on its own session; their ratio of req/s per round, median (rounds)`);
    printTable(
      ['client', 'req/s', 'vs node:http2 session', 'same window', 'CPU µs/req', 'CPU vs node:http2', 'runs (req/s)'],
      crow.map((r) => [
        r.label,
        fmtInt(r.reqPerSec),
        fmtRatio(pairedRatio(r, crow[0], clientRuns)),
        r.shared.length > 0 ? `${fmtRatio(median(r.shared))} (${r.shared.map((x) => x.toFixed(2)).join(' ')})` : '1.00x',
        median(r.cpu).toFixed(1),
        fmtRatio(median(crow[0]!.cpu) / median(r.cpu)),
        r.runs.map(fmtInt).join(' '),
      ]),
      log,
      true,
    );
  } finally {
    children.killAllNow();
  }
}

if (process.argv[2] === '--serve') {
  await serveKind(process.argv[3] as ServerKind);
} else if (process.argv[2] === '--client-window') {
  await clientWindow(process.argv[3] as ClientKind, Number(process.argv[4]));
  process.exit(0);
} else if (process.argv[2] === '--client') {
  const r = await clientRound(process.argv[3] as ClientKind, Number(process.argv[4]), Number(process.argv[5]));
  process.stdout.write(`RPS ${r.rps} CPU ${r.cpu}\n`);
  process.exit(0);
} else if (process.argv[1] === SELF) {
  await runH2Bench();
}
