/**
 * Requests with no socket: switchyard's `server.inject` against `fastify.inject`
 * (light-my-request), sequential (each awaited before the next), same route logic on both: a
 * hello route (`GET /hello` → `hello world`) and a JSON POST (`POST /sum` with `{ a, b }` →
 * `{ sum }`, the body parsed as JSON and the answer serialized). Both stacks run their router
 * and the caller reads the answer as a test would (`text()` / `json()`).
 *
 * Rounds alternate the two sides (so drift moves both alike) and go on until the medians
 * settle: at least `minRounds`, then until adding a round moves neither side's median by more
 * than 1%, at most `maxRounds`. The ratio is the median of per-round ratios.
 *
 * Run alone: `node --import tsx bench/inject.ts`; `npm run bench inject` runs it with the rest.
 */
import { pathToFileURL } from 'node:url';
import Fastify from 'fastify';
import { createKernel, Response, Server } from '../kernel/index.js';
import { router } from '../plugins/router/index.js';
import { envPositive, fmtInt, fmtRatio, pairedRatio, printTable } from './common.js';
import { median } from './load.js';

/** Options of {@link runInjectBench}. */
export interface InjectBenchOptions {
  /**
   * Sequential injects per round and side. Default 4 000 (env `INJECT_ITERATIONS`): kept small
   * because light-my-request 6.8 retains about 10 KB per inject (on Node 20), so long runs of
   * fastify.inject run out of heap.
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

/** Runs the scenarios; prints the table and resolves to the figures. */
export async function measureInject(options: InjectBenchOptions = {}): Promise<InjectBenchRow[]> {
  const n = options.iterations ?? envPositive('INJECT_ITERATIONS', 4000);
  const minRounds = options.minRounds ?? 5;
  const maxRounds = options.maxRounds ?? 12;
  const sy = await switchyardSide();
  const fa = await fastifySide();
  const rows: InjectBenchRow[] = [];
  try {
    for (const scenario of ['hello', 'sum'] as const) {
      const a = sy.side[scenario];
      const b = fa.side[scenario];
      // Warm-up: both sides optimized before the first measured round.
      await round(a, n);
      await round(b, n);
      const runsA: number[] = [];
      const runsB: number[] = [];
      for (let r = 0; r < maxRounds; r++) {
        const prevA = median(runsA);
        const prevB = median(runsB);
        runsA.push(await round(a, n));
        runsB.push(await round(b, n));
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
  console.log(`inject (no socket), sequential, ops/s: median of rounds of ${fmtInt(n)} injects per side until the medians settle (1%)\n`);
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

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) await runInjectBench();
