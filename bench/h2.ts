/**
 * HTTP/2 benchmark, side by side in one run. Every switchyard figure comes twice: the
 * *preset* is what users run (`HTTP.serve(handler)` and `HTTP.get(url, { http2PriorKnowledge:
 * true })` from the top-level entry, i.e. a kernel with `presets.defaults`, every first-party
 * plugin registered and its hooks tapped); the *minimal* stack is a kernel with only the h2
 * and h2c plugins, the floor of switchyard's own HTTP/2 path. And every figure comes from two
 * methods: *sequential* slices (one server or client loaded at a time, as an outside harness
 * measures) and *same-window* slices (all loaded at once, sharing one core).
 *
 * - server: `h2load -c 10 -m 100` against node:http2 (bare stream API), the switchyard
 *   preset, the switchyard minimal stack and fastify with `http2: true`, over h2c (prior
 *   knowledge) and TLS (ALPN, one self-signed certificate for all); hello-world responses,
 *   the switchyard handler making a new `Response` per request. Each server runs in its own
 *   child process (this file with `--serve <kind>`), pinned to one core with `taskset`,
 *   h2load to another. Each round starts the servers of a transport afresh and together
 *   (idle while not under load), warms each up, and measures them one after the other in the
 *   order preset, node:http2, minimal, fastify, reversed every other round: both switchyard
 *   slices are always next to node:http2's and meet it in both orders. Their CPU per request
 *   comes from those slices (the harness asks the child for its CPU time before and after).
 *   Then one same-window slice: node:http2, the preset, the minimal stack and a second bare
 *   node:http2 process (the control, whose ratio to node:http2 is the method's own floor)
 *   loaded at once by four h2loads, so that they share the server core and the same seconds
 *   of the machine. Four in one slice rather than a trio per switchyard stack: one slice per
 *   round keeps the run time, and it puts the preset and the minimal stack in the same
 *   seconds too, so what the preset's plugins cost reads directly (preset ÷ minimal). Ratios
 *   are paired per round against bare node:http2, median of the rounds.
 * - client: 100 concurrent streams on one session, against a bare node:http2 h2c server (a
 *   child process) and against nginx (Debian's /usr/sbin/nginx, `listen … http2` without TLS:
 *   h2c prior knowledge; one process pinned to the server core): the preset (`HTTP.get`), the
 *   minimal `Client` (`http2PriorKnowledge`) and a bare node:http2 client session, each in a
 *   fresh process that makes 5,000 requests on its session before the counted ones; rounds one
 *   after the other (preset, node:http2, minimal, reversed every other round), then
 *   same-window rounds with the three clients at once on the load core, counted from one GO
 *   to one STOP. The bare session does per request what a client must to return a response:
 *   the status from 'response', the body gathered into one buffer (and both checked, as
 *   switchyard's Client checks the status); switchyard's `get` returns the same as a
 *   `Response`.
 *
 * Each server gets a short h2load warm-up first (not counted in req/s nor CPU).
 *
 * Environment: BENCH_H2_RUNS (rounds, default 7), BENCH_H2_SECONDS (h2load seconds per server
 * and round, default 2), BENCH_H2_CLIENT_REQUESTS (requests per client round, default 20000),
 * BENCH_H2_CLIENT_RUNS (client rounds, default 5), BENCH_SERVER_CPU / BENCH_LOAD_CPU (cores,
 * default 1 and 0), BENCH_H2_ONLY (`server` or `client`: that part alone). Needs h2load
 * (Debian `nghttp2-client`); the nginx rows need nginx (skipped, with a note, without it).
 * `node --import tsx bench/h2.ts` runs it alone.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import http2 from 'node:http2';
import { once } from 'node:events';
import { mkdir, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { nginxHttpCommon, nginxPreamble, startNginx, stopPeer, tempDir, type Peer } from '../test/helpers/peers.js';
import { childTracker, fmtInt, fmtRatio, pairedRatio, prepareProgram, printTable, sleep, stopChild, type Launch } from './common.js';
import { median, pinned, tasksetUsable } from './load.js';

/** Who serves: bare node:http2, switchyard's default preset, switchyard's minimal stack (h2 + h2c), fastify. */
type Role = 'node' | 'preset' | 'minimal' | 'fastify';

type ServerKind = `${'node' | 'switchyard-preset' | 'switchyard' | 'fastify'}-${'h2c' | 'h2'}`;

const ROLE_PREFIX: Record<Role, string> = { node: 'node', preset: 'switchyard-preset', minimal: 'switchyard', fastify: 'fastify' };

/** Row labels, the same for servers and clients. */
const ROLE_LABEL: Record<Role, string> = {
  node: 'node:http2',
  preset: 'switchyard preset',
  minimal: 'switchyard minimal',
  fastify: 'fastify http2',
};

/** Table order of a transport's servers. */
const SERVER_ROLES: Role[] = ['node', 'preset', 'minimal', 'fastify'];
/** Measuring order of the sequential slices (reversed every other round): both switchyard slices next to node:http2's. */
const SEQUENTIAL_ORDER: Role[] = ['preset', 'node', 'minimal', 'fastify'];

function serverKind(role: Role, tls: boolean): ServerKind {
  return `${ROLE_PREFIX[role]}-${tls ? 'h2' : 'h2c'}` as ServerKind;
}

const BODY = 'hello world';
/** h2load seconds against each server before it is measured (not counted). */
const WARMUP_SECONDS = 0.5;
const SELF = fileURLToPath(import.meta.url);

// ---------------------------------------------------------------------------------------
// Child: one server

async function serveKind(kind: ServerKind): Promise<void> {
  const tls = kind.endsWith('-h2') ? await certificate() : null;
  const headers = { 'Content-Type': 'text/plain' };
  let port: number;
  let close: () => Promise<unknown> = async () => undefined;
  if (kind.startsWith('switchyard-preset')) {
    // As users start it: the top-level serve, on the default kernel (presets.defaults).
    const HTTP = await import('../index.js');
    const server = await HTTP.serve(() => new HTTP.Response(200, BODY, { headers }), { host: '127.0.0.1', port: 0, ...(tls ? { tls } : {}) });
    port = server.port;
    close = () => server.forceClose();
  } else if (kind.startsWith('switchyard')) {
    const { createKernel, Response, serve } = await import('../kernel/index.js');
    const { h2 } = await import('../plugins/h2/index.js');
    const { h2c } = await import('../plugins/h2c/index.js');
    const kernel = await createKernel().register(h2).register(h2c).ready();
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
  role: Role;
  child: ChildProcess;
  port: number;
  /** The child's CPU time so far (user + system, µs). */
  cpuNow(): Promise<number>;
}

async function startServer(role: Role, tls: boolean, cpu: number | null): Promise<LiveServer> {
  const kind = serverKind(role, tls);
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
  return { role, child, port, cpuNow };
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

/** One server or client of one group (a transport, or a client's target server), over the rounds. */
interface Row {
  role: Role;
  /** Sequential slices: req/s per round. */
  runs: number[];
  /** Median of {@link runs}. */
  reqPerSec: number;
  errors: number;
  /** CPU µs per request, per round (sequential slices). */
  cpu: number[];
  /**
   * Same-window slices: on a switchyard row, its req/s over node:http2's when all are loaded
   * at once, one ratio per round; on the node:http2 server row, the control's (a second bare
   * node:http2 process in the same slice) over node:http2's.
   */
  shared: number[];
  /** Same window, the preset row only: the preset's req/s over the minimal stack's, per round. */
  sharedVsMinimal: number[];
}

/** One table: a transport's servers, or the clients against one server. */
interface Group {
  title: string;
  rows: Row[];
}

function newRow(role: Role): Row {
  return { role, runs: [], reqPerSec: NaN, errors: 0, cpu: [], shared: [], sharedVsMinimal: [] };
}

function rowOf(group: Group, role: Role): Row {
  return group.rows.find((r) => r.role === role)!;
}

/** `order` rotated by `by` (who starts first in a same-window slice changes every round). */
function rotated<T>(order: T[], by: number): T[] {
  return order.map((_, i) => order[(i + by) % order.length]!);
}

async function serverBench(runs: number, seconds: number, serverCpu: number | null, loadCpu: number | null, log: (s: string) => void): Promise<Group[]> {
  const groups: Group[] = [];
  for (const tls of [false, true]) {
    const group: Group = { title: tls ? 'TLS h2 (ALPN)' : 'h2c (prior knowledge)', rows: SERVER_ROLES.map(newRow) };
    groups.push(group);
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
      // the ratios switchyard reads beside it.
      const [control, ...live] = await Promise.all((['node', ...SERVER_ROLES] as Role[]).map((role) => startServer(role, tls, serverCpu)));
      const server = (role: Role): LiveServer => live.find((l) => l.role === role)!;
      try {
        for (const l of [...live, control!]) await h2load(url(l), WARMUP_SECONDS, loadCpu);
        // Forward, then reversed: no server always runs first, and each pair meets in both orders.
        for (const role of round % 2 === 0 ? SEQUENTIAL_ORDER : [...SEQUENTIAL_ORDER].reverse()) {
          const l = server(role);
          const before = await l.cpuNow();
          const r = await h2load(url(l), seconds, loadCpu);
          const after = await l.cpuNow();
          const row = rowOf(group, role);
          row.runs.push(r.rps);
          row.errors += r.errors;
          row.cpu.push((after - before) / r.succeeded);
        }
        // Same window: node:http2, the preset, the minimal stack and the control loaded at
        // once, each by its own h2load, so whatever the machine does during the slice it
        // does to all four. All are busy the whole slice and share the server core (the
        // scheduler splits it evenly between runnable processes), so the ratio of two
        // servers' req/s is the ratio of their work per request, without the machine's swings
        // between slices. The order the h2loads start in rotates (they start microseconds apart).
        const window = [server('node'), server('preset'), server('minimal'), control!];
        const order = rotated(window, round);
        const results = await Promise.all(order.map((l) => h2load(url(l), seconds, loadCpu)));
        const [n, p, m, c] = window.map((l) => results[order.indexOf(l)]!);
        rowOf(group, 'node').errors += n!.errors + c!.errors;
        rowOf(group, 'preset').errors += p!.errors;
        rowOf(group, 'minimal').errors += m!.errors;
        rowOf(group, 'node').shared.push(c!.rps / n!.rps);
        rowOf(group, 'preset').shared.push(p!.rps / n!.rps);
        rowOf(group, 'minimal').shared.push(m!.rps / n!.rps);
        rowOf(group, 'preset').sharedVsMinimal.push(p!.rps / m!.rps);
      } finally {
        await Promise.all([...live, control!].map((l) => stopChild(l.child)));
      }
      log(`  ${tls ? 'TLS' : 'h2c'} round ${round + 1}/${runs} done`);
    }
    for (const r of group.rows) r.reqPerSec = median(r.runs);
  }
  return groups;
}

/**
 * Requests each client makes before the counted ones, on the same session: like the servers'
 * h2load warm-up, the figure is the steady state, not the JIT compiling either stack.
 */
const CLIENT_WARMUP = 5000;

/** The clients, in table order. */
const CLIENT_ROLES: Role[] = ['node', 'preset', 'minimal'];
/** Order of the sequential client rounds (reversed every other round): both switchyard clients next to node:http2's. */
const CLIENT_ORDER: Role[] = ['preset', 'node', 'minimal'];

/** One client on one session to `port`: `one()` makes a request and checks its response. */
async function makeClient(role: Role, port: number): Promise<{ one: () => Promise<void>; close: () => void }> {
  const url = `http://127.0.0.1:${port}/`;
  if (role === 'node') {
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
  let get: () => Promise<{ status: number; body: unknown }>;
  let client: { transport: { connectionCount(): number }; close(): void };
  if (role === 'preset') {
    // As users call it: the top-level get, on the default client (presets.defaults), h2c by
    // prior knowledge asked per call.
    const HTTP = await import('../index.js');
    const options = { http2PriorKnowledge: true };
    get = () => HTTP.get(url, options);
    client = HTTP.getDefaultClient();
  } else {
    const { Client, createKernel } = await import('../kernel/index.js');
    const { h2 } = await import('../plugins/h2/index.js');
    const { h2c } = await import('../plugins/h2c/index.js');
    const kernel = await createKernel().register(h2).register(h2c).ready();
    const c = new Client({ kernel, http2PriorKnowledge: true });
    get = () => c.get(url);
    client = c;
  }
  const one = async (): Promise<void> => {
    const res = await get();
    if ((res.body as Uint8Array).length !== BODY.length) throw new Error(`unexpected response ${res.status}`);
  };
  const close = (): void => {
    if (client.transport.connectionCount() !== 1) throw new Error(`the ${ROLE_LABEL[role]} client used ${client.transport.connectionCount()} connections, not 1`);
    client.close();
  };
  return { one, close };
}

/** `n` requests, at most 100 in flight, on one session (after {@link CLIENT_WARMUP}); resolves to requests per second and CPU µs per request. */
async function clientRound(role: Role, port: number, n: number): Promise<{ rps: number; cpu: number }> {
  const c = await makeClient(role, port);
  const r = await measure(n, c.one);
  c.close();
  return r;
}

/**
 * Same-window client (`--client-window`): {@link CLIENT_WARMUP} requests, then `READY`; requests
 * are counted from `GO` on stdin to `STOP` (100 in flight the whole time), and the count, the
 * seconds and the CPU µs in between are printed.
 */
async function clientWindow(role: Role, port: number): Promise<void> {
  const c = await makeClient(role, port);
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
function clientChild(role: Role, port: number, n: number, cpu: number | null): Promise<{ rps: number; cpu: number }> {
  const argv = childArgv(cpu, ['--client', role, String(port), String(n)]);
  return new Promise((resolve, reject) => {
    const child = spawn(argv[0]!, argv.slice(1), { stdio: ['ignore', 'pipe', 'inherit'] });
    children.track(child);
    let out = '';
    child.stdout.on('data', (c: Buffer) => (out += c.toString()));
    child.once('exit', (code) => {
      const m = /RPS ([\d.]+) CPU ([\d.]+)/.exec(out);
      if (m) resolve({ rps: Number(m[1]), cpu: Number(m[2]) });
      else reject(new Error(`client ${role} failed (${code}): ${out.slice(0, 200)}`));
    });
  });
}

/**
 * nginx serving the 11-byte hello world over h2c (prior knowledge) on one port, one process
 * (no master) pinned to `cpu`; null, with the reason logged, when it cannot start.
 */
async function startNginxH2c(cpu: number | null, log: (s: string) => void): Promise<{ port: number; stop: () => Promise<void> } | null> {
  let dir = '';
  let peer: Peer | null = null;
  try {
    dir = await tempDir('swy-bench-nginx-');
    await mkdir(join(dir, 'tmp'), { mode: 0o755 });
    const started = await startNginx(
      dir,
      1,
      ([port]) => `${nginxPreamble(dir)}
http {${nginxHttpCommon(dir)}
  # One session carries every request of a round: no GOAWAY after 1,000 requests.
  keepalive_requests 100000000;
  keepalive_timeout 600s;
  server {
    listen 127.0.0.1:${port} http2;
    location / { default_type text/plain; return 200 '${BODY}'; }
  }
}
`,
    );
    peer = started.peer;
    children.track(peer.child);
    if (cpu !== null) {
      // The preamble runs nginx without a master: this one process is all of it.
      const [cmd, ...args] = ['taskset', '-pc', String(cpu), String(peer.child.pid)];
      const pin = spawn(cmd!, args, { stdio: 'ignore' });
      const [code] = (await once(pin, 'exit')) as [number | null];
      if (code !== 0) throw new Error(`taskset -pc ${cpu} ${peer.child.pid} failed (${code})`);
    }
    const p = peer;
    const d = dir;
    return {
      port: started.ports[0]!,
      stop: async () => {
        await stopPeer(p);
        await rm(d, { recursive: true, force: true });
      },
    };
  } catch (e) {
    log(`  nginx rows skipped: ${(e as Error).message.split('\n')[0]}`);
    await stopPeer(peer);
    if (dir !== '') await rm(dir, { recursive: true, force: true });
    return null;
  }
}

async function clientBench(runs: number, n: number, seconds: number, serverCpu: number | null, loadCpu: number | null, log: (s: string) => void): Promise<Group[]> {
  const node = await startServer('node', false, serverCpu);
  const nginx = await startNginxH2c(serverCpu, log);
  const targets = [
    { port: node.port, group: { title: 'against a bare node:http2 h2c server', rows: CLIENT_ROLES.map(newRow) } as Group },
    ...(nginx ? [{ port: nginx.port, group: { title: 'against nginx h2c', rows: CLIENT_ROLES.map(newRow) } as Group }] : []),
  ];
  try {
    for (let round = 0; round < runs; round++) {
      for (const t of targets) {
        for (const role of round % 2 === 0 ? CLIENT_ORDER : [...CLIENT_ORDER].reverse()) {
          const r = await clientChild(role, t.port, n, loadCpu);
          rowOf(t.group, role).runs.push(r.rps);
          rowOf(t.group, role).cpu.push(r.cpu);
        }
      }
      log(`  client round ${round + 1}/${runs} done`);
    }
    // Same window: the three clients at once on the load core, against the same server (whose
    // core stays under half busy: it is not what limits them), counted over the same seconds.
    for (let round = 0; round < runs; round++) {
      for (const t of targets) {
        const order = rotated(CLIENT_ROLES, round);
        const got = await clientWindowGroup(order, t.port, seconds, loadCpu);
        const rps = (role: Role): number => got[order.indexOf(role)]!;
        rowOf(t.group, 'preset').shared.push(rps('preset') / rps('node'));
        rowOf(t.group, 'minimal').shared.push(rps('minimal') / rps('node'));
        rowOf(t.group, 'preset').sharedVsMinimal.push(rps('preset') / rps('minimal'));
      }
    }
    log('  client same-window rounds done');
  } finally {
    await stopChild(node.child);
    await nginx?.stop();
  }
  for (const t of targets) for (const r of t.group.rows) r.reqPerSec = median(r.runs);
  return targets.map((t) => t.group);
}

const DONE_LINE = /DONE (\d+) SECONDS ([\d.]+) CPU (\d+)\n/;

/** `--client-window` children started in `order`, counted over the same `seconds`: their req/s. */
async function clientWindowGroup(order: Role[], port: number, seconds: number, cpu: number | null): Promise<number[]> {
  const kids = order.map((role) => {
    const argv = childArgv(cpu, ['--client-window', role, String(port)]);
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
    const failed = new Promise<never>((_, reject) => child.once('exit', (code) => reject(new Error(`client ${role} exited (${code}): ${out.slice(0, 200)}`))));
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

/** `median (each round's value)`, or `-` without rounds. */
function fmtRounds(values: number[]): string {
  return values.length === 0 ? '-' : `${fmtRatio(median(values))} (${values.map((x) => x.toFixed(2)).join(' ')})`;
}

/** Prints one group's table: sequential figures first, then the same-window ratios. */
function printGroup(group: Group, runs: number, log: (s: string) => void, servers: boolean): void {
  const node = rowOf(group, 'node');
  const fastify = group.rows.find((r) => r.role === 'fastify');
  const head = [
    servers ? 'server' : 'client',
    'seq req/s',
    'seq vs node:http2',
    'seq CPU µs/req',
    'seq CPU vs node:http2',
    'same-window vs node:http2 (rounds)',
    // Servers count h2load's failed requests; a client's failed request ends its round with an error instead.
    ...(servers ? ['seq vs fastify', 'errors'] : []),
    'seq rounds (req/s)',
  ];
  log(`\n${group.title}`);
  printTable(
    head,
    group.rows.map((r) => {
      const cpu = median(r.cpu);
      return [
        ROLE_LABEL[r.role],
        fmtInt(r.reqPerSec),
        fmtRatio(pairedRatio(r, node, runs)),
        cpu.toFixed(1),
        // Efficiency as a throughput-like ratio: node's CPU per request over this row's (>1: cheaper than node).
        fmtRatio(median(node.cpu) / cpu),
        r === node && r.shared.length > 0 ? `control ${fmtRounds(r.shared)}` : r === node ? '1.00x' : fmtRounds(r.shared),
        ...(servers ? [r.role === 'fastify' ? '1.00x' : fmtRatio(pairedRatio(r, fastify, runs)), String(r.errors)] : []),
        r.runs.map(fmtInt).join(' '),
      ];
    }),
    log,
    true,
  );
  const preset = rowOf(group, 'preset');
  const minimal = rowOf(group, 'minimal');
  log(
    `switchyard preset ÷ minimal: sequential ${fmtRatio(pairedRatio(preset, minimal, runs))} (CPU ${fmtRatio(median(minimal.cpu) / median(preset.cpu))}), same window ${fmtRounds(preset.sharedVsMinimal)}`,
  );
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
    log('switchyard preset: HTTP.serve / HTTP.get from the top-level entry (presets.defaults); switchyard minimal: a kernel with only h2 and h2c');
    log('seq: one server (client) loaded at a time, fresh processes per round, ratios paired per round, median; CPU from the same slices');
    if (only !== 'client') {
      const groups = await serverBench(runs, seconds, pin ? sCpu : null, pin ? lCpu : null, log);
      log(`\nSERVERS: h2load -c 10 -m 100, ${seconds} s per server and round, median of ${runs} rounds (hello world)`);
      log('same window: node:http2, switchyard preset, switchyard minimal and a second node:http2 process (the control) loaded at once on the');
      log("  shared server core; ratio of req/s to node:http2 per round, median (rounds); on the node:http2 row, the control's: the method's own floor");
      for (const g of groups) printGroup(g, runs, log, true);
    }
    if (only === 'server') return;
    // Client rounds are short (a few seconds each): at least five, for a steadier median.
    const clientRuns = Number(process.env.BENCH_H2_CLIENT_RUNS ?? 5) || 5;
    const groups = await clientBench(clientRuns, n, seconds, pin ? sCpu : null, pin ? lCpu : null, log);
    log(`\nCLIENTS: ${n} requests after ${CLIENT_WARMUP} to warm up, 100 concurrent streams on one session, median of ${clientRuns} rounds`);
    log(`same window: the three clients at once on the load core for ${seconds} s, each on its own session; ratio of req/s to the node:http2 session per round, median (rounds)`);
    for (const g of groups) printGroup(g, clientRuns, log, false);
  } finally {
    children.killAllNow();
  }
}

if (process.argv[2] === '--serve') {
  await serveKind(process.argv[3] as ServerKind);
} else if (process.argv[2] === '--client-window') {
  await clientWindow(process.argv[3] as Role, Number(process.argv[4]));
  process.exit(0);
} else if (process.argv[2] === '--client') {
  const r = await clientRound(process.argv[3] as Role, Number(process.argv[4]), Number(process.argv[5]));
  process.stdout.write(`RPS ${r.rps} CPU ${r.cpu}\n`);
  process.exit(0);
} else if (process.argv[1] === SELF) {
  await runH2Bench();
}
