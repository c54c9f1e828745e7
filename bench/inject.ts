/**
 * Requests with no socket: switchyard's `server.inject` against `fastify.inject`
 * (light-my-request), sequential (each awaited before the next), same route logic on both: a
 * hello route (`GET /hello` → `hello world`) and a JSON POST (`POST /sum` with `{ a, b }` →
 * `{ sum }`, the body parsed as JSON and the answer serialized). Both stacks run their router
 * and the caller reads the answer as a test would (`text()` / `json()`).
 *
 * Each side runs in its own worker thread, so each has its own heap: light-my-request 6.8
 * retains about 10 KB per inject (on Node 20), and in one heap the collector's work on what
 * it keeps would be charged to both sides. Rounds alternate the two sides (one runs at a time,
 * so drift moves both alike) and go on until the medians settle: at least `minRounds`, then
 * until adding a round moves neither side's median by more than 1%, at most `maxRounds`. The
 * ratio is the median of per-round ratios.
 *
 * Run alone: `node --import tsx bench/inject.ts`; `npm run bench inject` runs it with the rest.
 */
import { pathToFileURL } from 'node:url';
import { isMainThread, parentPort, Worker, workerData } from 'node:worker_threads';
import Fastify from 'fastify';
import { createKernel, Response, Server } from '../kernel/index.js';
import { router } from '../plugins/router/index.js';
import { envPositive, fmtInt, fmtRatio, pairedRatio, printTable } from './common.js';
import { median } from './load.js';

/** Options of {@link runInjectBench}. */
export interface InjectBenchOptions {
  /**
   * Sequential injects per round and side. Default 4 000 (env `INJECT_ITERATIONS`): kept small
   * because of what light-my-request retains per inject (see above), so the fastify worker's
   * heap stays well within its limit.
   */
  iterations?: number;
  /** Rounds before convergence is checked. Default 5. */
  minRounds?: number;
  /** Rounds at most. Default 12. */
  maxRounds?: number;
}

/** One scenario's figures. */
export interface InjectBenchRow {
  readonly scenario: string;
  readonly switchyard: number;
  readonly fastify: number;
  /** switchyard / fastify, median of per-round ratios. */
  readonly ratio: number;
  readonly rounds: number;
}

interface Side {
  hello(): Promise<void>;
  sum(): Promise<void>;
}

async function switchyardSide(): Promise<{ side: Side; close: () => Promise<void> }> {
  const kernel = createKernel().register(router);
  await kernel.ready();
  kernel.route('GET', '/hello', () => new Response(200, 'hello world'));
  kernel.route('POST', '/sum', (req) => {
    const { a, b } = JSON.parse(Buffer.from(req.body as Uint8Array).toString()) as { a: number; b: number };
    return Response.json({ sum: a + b });
  });
  const server = new Server({ handler: () => new Response(404), kernel });
  const side: Side = {
    async hello() {
      const res = await server.inject('/hello');
      if (res.status !== 200 || res.text() !== 'hello world') throw new Error(`switchyard hello: ${res.status}`);
    },
    async sum() {
      const res = await server.inject({ method: 'POST', url: '/sum', payload: { a: 1, b: 2 } });
      if (res.status !== 200 || res.json<{ sum: number }>().sum !== 3) throw new Error(`switchyard sum: ${res.status}`);
    },
  };
  return {
    side,
    close: async () => {
      await server.close();
      await kernel.close();
    },
  };
}

async function fastifySide(): Promise<{ side: Side; close: () => Promise<void> }> {
  const app = Fastify({ logger: false });
  app.get('/hello', async () => 'hello world');
  app.post('/sum', async (req) => {
    const { a, b } = req.body as { a: number; b: number };
    return { sum: a + b };
  });
  await app.ready();
  const side: Side = {
    async hello() {
      const res = await app.inject({ method: 'GET', url: '/hello' });
      if (res.statusCode !== 200 || res.body !== 'hello world') throw new Error(`fastify hello: ${res.statusCode}`);
    },
    async sum() {
      const res = await app.inject({ method: 'POST', url: '/sum', payload: { a: 1, b: 2 } });
      if (res.statusCode !== 200 || res.json<{ sum: number }>().sum !== 3) throw new Error(`fastify sum: ${res.statusCode}`);
    },
  };
  return { side, close: () => app.close() };
}

/** Sequential calls of `fn` for `n` iterations; ops per second. */
async function round(fn: () => Promise<void>, n: number): Promise<number> {
  const t0 = process.hrtime.bigint();
  for (let i = 0; i < n; i++) await fn();
  const ns = Number(process.hrtime.bigint() - t0);
  return (n * 1e9) / ns;
}

type SideName = 'switchyard' | 'fastify';
type Scenario = keyof Side;

/** A side in its own worker: `round(scenario, n)` runs there and resolves to its ops/s. */
interface RemoteSide {
  round(scenario: Scenario, n: number): Promise<number>;
  close(): Promise<void>;
}

function startSide(name: SideName): Promise<RemoteSide> {
  // Node 20 does not carry `--import tsx` into workers: the worker registers tsx itself, then loads this file.
  const boot = `import(${JSON.stringify(import.meta.resolve('tsx/esm/api'))}).then((m) => { m.register(); return import(${JSON.stringify(import.meta.url)}); })`;
  const worker = new Worker(boot, { eval: true, workerData: { side: name } });
  let pending: { resolve: (v: number) => void; reject: (e: unknown) => void } | null = null;
  const failed = (err: unknown): void => {
    const p = pending;
    pending = null;
    p?.reject(err);
  };
  worker.on('error', failed);
  worker.on('exit', (code) => failed(new Error(`the ${name} worker exited (${code})`)));
  return new Promise((resolve, reject) => {
    worker.once('message', (first: { ready?: true; error?: string }) => {
      if (first.error !== undefined) {
        reject(new Error(first.error));
        return;
      }
      worker.on('message', (m: { opsPerSec?: number; error?: string }) => {
        const p = pending;
        pending = null;
        if (m.error !== undefined) p?.reject(new Error(m.error));
        else p?.resolve(m.opsPerSec!);
      });
      resolve({
        round: (scenario, n) =>
          new Promise<number>((res, rej) => {
            pending = { resolve: res, reject: rej };
            worker.postMessage({ scenario, n });
          }),
        close: async () => {
          worker.removeAllListeners('exit');
          await worker.terminate();
        },
      });
    });
  });
}

/** The worker's side: sets it up, then runs the rounds the main thread asks for. */
async function serveSide(name: SideName): Promise<void> {
  const port = parentPort!;
  let side: Side;
  try {
    side = (name === 'switchyard' ? await switchyardSide() : await fastifySide()).side;
  } catch (err) {
    port.postMessage({ error: String(err) });
    return;
  }
  port.on('message', (m: { scenario: Scenario; n: number }) => {
    round(side[m.scenario], m.n).then(
      (opsPerSec) => port.postMessage({ opsPerSec }),
      (err: unknown) => port.postMessage({ error: String(err) }),
    );
  });
  port.postMessage({ ready: true });
}

/** Runs the scenarios; prints the table and resolves to the figures. */
export async function measureInject(options: InjectBenchOptions = {}): Promise<InjectBenchRow[]> {
  const n = options.iterations ?? envPositive('INJECT_ITERATIONS', 4000);
  const minRounds = options.minRounds ?? 5;
  const maxRounds = options.maxRounds ?? 12;
  const sy = await startSide('switchyard');
  const fa = await startSide('fastify');
  const rows: InjectBenchRow[] = [];
  try {
    for (const scenario of ['hello', 'sum'] as const) {
      // Warm-up: both sides optimized before the first measured round.
      for (let w = 0; w < 3; w++) {
        await sy.round(scenario, n);
        await fa.round(scenario, n);
      }
      const runsA: number[] = [];
      const runsB: number[] = [];
      for (let r = 0; r < maxRounds; r++) {
        const prevA = median(runsA);
        const prevB = median(runsB);
        runsA.push(await sy.round(scenario, n));
        runsB.push(await fa.round(scenario, n));
        if (runsA.length >= minRounds && Math.abs(median(runsA) / prevA - 1) < 0.01 && Math.abs(median(runsB) / prevB - 1) < 0.01) break;
      }
      const mA = median(runsA);
      const mB = median(runsB);
      const ratio = pairedRatio({ runs: runsA, reqPerSec: mA }, { runs: runsB, reqPerSec: mB }, runsA.length);
      rows.push({ scenario: scenario === 'hello' ? 'GET /hello (text)' : 'POST /sum (JSON in, JSON out)', switchyard: mA, fastify: mB, ratio, rounds: runsA.length });
    }
  } finally {
    await sy.close();
    await fa.close();
  }
  console.log(`inject (no socket), sequential, ops/s: median of rounds of ${fmtInt(n)} injects per side (each side in its own worker) until the medians settle (1%)\n`);
  printTable(
    ['scenario', 'switchyard inject', 'fastify.inject', 'ratio', 'rounds'],
    rows.map((r) => [r.scenario, fmtInt(r.switchyard), fmtInt(r.fastify), fmtRatio(r.ratio), String(r.rounds)]),
    (s) => console.log(s),
    true,
  );
  return rows;
}

/** What `npm run bench inject` calls. */
export async function runInjectBench(options: InjectBenchOptions = {}): Promise<void> {
  await measureInject(options);
}

if (!isMainThread && (workerData as { side?: SideName } | null)?.side !== undefined) await serveSide((workerData as { side: SideName }).side);
else if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) await runInjectBench();
