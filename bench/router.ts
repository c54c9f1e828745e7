/**
 * Route matching cost with 10 and with 1,000 registered routes: switchyard's `Router`
 * (segment trie) against find-my-way (fastify's radix tree), per lookup, median of several
 * rounds. The claim to check: with 1,000 routes, matching costs within 2x of matching with
 * 10 (a compiled tree, not a scan of regular expressions).
 *
 * Route tables: REST-like resources, four routes each (a list, `/{id}`, a nested
 * `/{id}/items/{itemId:\d+}` and a `/**` files route); 10 routes ≈ 3 resources, 1,000 ≈ 250.
 * Lookups: a fixed mix of the four shapes plus a miss, spread across the table's resources.
 *
 * Run alone: `node --import tsx bench/router.ts`; `npm run bench router` once listed in
 * bench/index.ts.
 */
import { pathToFileURL } from 'node:url';
import FindMyWay from 'find-my-way';
import { Request, Response } from '../kernel/index.js';
import { Router } from '../plugins/router/index.js';
import { fmtRatio, printTable } from './common.js';
import { median } from './load.js';

/** Options of {@link runRouterBench}. */
export interface RouterBenchOptions {
  /** Rounds per case and size; medians are reported. Default 9. */
  rounds?: number;
  /** Lookups per round. Default 200 000. */
  iterations?: number;
}

let sink = 0;

interface Table {
  /** Registration list: method, switchyard pattern, find-my-way pattern. */
  routes: [string, string, string][];
  /** Paths looked up (method GET unless noted). */
  lookups: [string, string][];
}

function table(size: number): Table {
  const resources = Math.max(1, Math.ceil(size / 4));
  const routes: [string, string, string][] = [];
  for (let i = 0; i < resources && routes.length < size; i++) {
    routes.push(['GET', `/api/v1/res${i}`, `/api/v1/res${i}`]);
    routes.push(['GET', `/api/v1/res${i}/{id}`, `/api/v1/res${i}/:id`]);
    routes.push(['GET', `/api/v1/res${i}/{id}/items/{itemId:\\d+}`, `/api/v1/res${i}/:id/items/:itemId(^\\d+$)`]);
    routes.push(['GET', `/files${i}/**`, `/files${i}/*`]);
  }
  routes.length = Math.min(routes.length, size);
  const lookups: [string, string][] = [];
  for (let k = 0; k < 64; k++) {
    // Spread over the resources present in this table (the last may be cut short: skip it).
    const i = (k * 7919) % Math.max(1, resources - 1);
    switch (k % 5) {
      case 0:
        lookups.push(['GET', `/api/v1/res${i}`]);
        break;
      case 1:
        lookups.push(['GET', `/api/v1/res${i}/abc${k}`]);
        break;
      case 2:
        lookups.push(['GET', `/api/v1/res${i}/u${k}/items/${k * 13}`]);
        break;
      case 3:
        lookups.push(['GET', `/files${i}/css/site${k}.css`]);
        break;
      default:
        lookups.push(['GET', `/nothing/here/${k}`]);
        break;
    }
  }
  return { routes, lookups };
}

function timeLoop(n: number, lookups: [string, string][], find: (method: string, path: string) => unknown): number {
  const m = lookups.length;
  const t0 = process.hrtime.bigint();
  for (let i = 0; i < n; i++) {
    const [method, path] = lookups[i % m]!;
    if (find(method, path) !== null) sink = (sink + 1) & 0xffff;
  }
  return Number(process.hrtime.bigint() - t0) / n;
}

/** One case at both sizes: per-round figures, taken back to back so machine drift hits both alike. */
export interface RouterBenchRow {
  /** What was measured. */
  readonly name: string;
  /** Median ns per lookup with 10 routes. */
  readonly ns10: number;
  /** Median ns per lookup with 1,000 routes. */
  readonly ns1000: number;
  /** Median of the per-round ratios 1,000 / 10. */
  readonly ratio: number;
}

type Case = [name: string, run: () => number];

function cases(size: number, n: number): Case[] {
  const t = table(size);
  const ours = new Router();
  const fmw = FindMyWay();
  // One shared answer: the router(req) row measures routing, not building responses.
  const answer = new Response(200);
  const handler = (): Response => answer;
  for (const [method, p, q] of t.routes) {
    ours.register(method, p, handler);
    fmw.on(method as 'GET', q, () => {});
  }
  // Both must see the same hits before anything is timed.
  for (const [method, path] of t.lookups) {
    const a = ours.match(method, path)?.route != null;
    const b = fmw.find(method as 'GET', path) !== null;
    if (a !== b) throw new Error(`routers disagree on ${method} ${path}: switchyard ${a}, find-my-way ${b}`);
  }
  const reqs = t.lookups.map(([m, p]) => new Request(m, p));
  return [
    ['switchyard Router.match', () => timeLoop(n, t.lookups, (m, p) => ours.match(m, p))],
    ['find-my-way find', () => timeLoop(n, t.lookups, (m, p) => fmw.find(m as 'GET', p))],
    [
      'switchyard router(req): match, context, handler',
      () => {
        const k = reqs.length;
        const t0 = process.hrtime.bigint();
        for (let i = 0; i < n; i++) {
          const r = ours(reqs[i % k]!) as Response;
          sink = (sink + r.status) & 0xffff;
        }
        return Number(process.hrtime.bigint() - t0) / n;
      },
    ],
  ];
}

/** Measures every case at 10 and 1,000 routes, alternating sizes round by round. */
export function measureRouter(options: RouterBenchOptions = {}): RouterBenchRow[] {
  const rounds = options.rounds ?? 9;
  const n = options.iterations ?? 200_000;
  const small = cases(10, n);
  const large = cases(1000, n);
  const rows: RouterBenchRow[] = [];
  for (let c = 0; c < small.length; c++) {
    const [name, runSmall] = small[c]!;
    const runLarge = large[c]![1];
    runSmall();
    runLarge(); // warm-up
    const a: number[] = [];
    const b: number[] = [];
    for (let r = 0; r < rounds; r++) {
      a.push(runSmall());
      b.push(runLarge());
    }
    rows.push({ name, ns10: median(a), ns1000: median(b), ratio: median(b.map((x, i) => x / a[i]!)) });
  }
  if (sink === -1) console.log(sink);
  return rows;
}

/** Runs the router benchmark and prints the table (what `npm run bench` calls). */
export async function runRouterBench(options: RouterBenchOptions = {}): Promise<void> {
  const rows = measureRouter(options);
  const fmw = rows.find((r) => r.name === 'find-my-way find')!;
  const out = rows.map((r) => [r.name, r.ns10.toFixed(0), r.ns1000.toFixed(0), fmtRatio(r.ratio), fmtRatio(r.ns10 / fmw.ns10), fmtRatio(r.ns1000 / fmw.ns1000)]);
  console.log(`Route lookup, ns per lookup (median of ${options.rounds ?? 9} paired rounds; 64 lookups: 4 route shapes and a miss)\n`);
  printTable(['case', '10 routes', '1,000 routes', '1,000 / 10', 'vs fmw @10', 'vs fmw @1,000'], out, console.log, true);
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  await runRouterBench();
}
