/**
 * What a hook costs on the request path, per dispatch: the claim to check is "a hook with
 * no taps costs nothing". Cases, each the median of several rounds:
 *
 * 1. the kernel's null branch with zero taps (what clients and servers do), next to what
 *    calling an untapped hook would cost (`callAsync`, and `.promise()`, which allocates);
 * 2. one sync tap through `.call` (kernel-wrapped tap, and a bare tapable hook for the
 *    wrapper's cost);
 * 3. one tap through `callAsync` and through `.promise()`.
 *
 * Run alone: `node --import tsx bench/hooks.ts`; `npm run bench hooks` runs it with the rest.
 */
import { pathToFileURL } from 'node:url';
import { SyncHook } from 'tapable';
import { createKernel, type Kernel } from '../kernel/kernel.js';
import { RequestContext } from '../kernel/message/context.js';
import { Request } from '../kernel/message/request.js';
import { Response } from '../kernel/message/response.js';
import { definePlugin } from '../kernel/plugin.js';

/** One measured case. */
export interface HooksBenchResult {
  /** What was measured. */
  readonly name: string;
  /** Median nanoseconds per dispatch. */
  readonly nsPerOp: number;
  /** Dispatches per second at that median. */
  readonly opsPerSec: number;
}

/** Options of {@link runHooksBench}. */
export interface HooksBenchOptions {
  /** Rounds per case; the median is reported. Default 7. */
  rounds?: number;
  /** Dispatches per round for synchronous cases (async cases use a tenth). Default 2 000 000. */
  iterations?: number;
  /** Print a table to stdout. Default true. */
  print?: boolean;
}

// Read after the runs so loops cannot be optimised away; kept small (masked) so it stays a
// small integer: an overflowing counter turns into a heap number and every case after it
// would pay for allocating doubles.
let sink = 0;

/** Runs the hook benchmarks and prints the table (what `npm run bench` calls). */
export async function runHooksBench(options: HooksBenchOptions = {}): Promise<void> {
  await measureHooks(options);
}

/** Runs the hook benchmarks; prints the table unless `print: false`, and resolves to the figures. */
export async function measureHooks(options: HooksBenchOptions = {}): Promise<HooksBenchResult[]> {
  const rounds = options.rounds ?? 7;
  const n = options.iterations ?? 2_000_000;
  const nAsync = Math.max(1, Math.floor(n / 10));

  const req = new Request('GET', '/');
  const ctx = new RequestContext();
  const res = new Response(200);

  // An empty kernel: every hook untapped.
  const empty = await createKernel().ready();
  // A kernel with one sync tap on a sync hook and on an async bail hook, and a kernel whose
  // async hook has one promise tap.
  const tappedKernel = await createKernel().register(benchPlugin()).ready();
  const promiseKernel = createKernel();
  promiseKernel.hooks.client.onRequest.tapPromise('bench-promise', async () => undefined);
  await promiseKernel.ready();

  const rawSync = bareHook();

  const results: HooksBenchResult[] = [];
  const add = (name: string, ns: number): void => {
    results.push({ name, nsPerOp: ns, opsPerSec: ns > 0 ? 1e9 / ns : Infinity });
  };

  // 0. The loop itself, to read the others against.
  add(
    'baseline: empty loop (loop and counter only)',
    median(rounds, () => emptyLoop(n)),
  );
  // 1. Zero taps.
  add(
    '0 taps, kernel null branch (tapped.client.onRequest === null)',
    median(rounds, () => nullBranch(empty, req, ctx, n)),
  );
  add(
    '0 taps, hook.callAsync anyway (what the null branch avoids)',
    median(rounds, () => untappedCallAsync(empty, req, ctx, n)),
  );
  add('0 taps, hook.promise() anyway (allocates a Promise)', await medianAsync(rounds, () => untappedPromise(empty, req, ctx, nAsync)));

  // 2. One sync tap through .call.
  add(
    '1 sync tap, .call (kernel hook: tap wrapped for error names)',
    median(rounds, () => syncCall(tappedKernel, res, req, n)),
  );
  add(
    '1 sync tap, .call (bare tapable hook, for comparison)',
    median(rounds, () => rawCall(rawSync, res, req, n)),
  );

  // 3. One tap through callAsync and .promise().
  add(
    '1 sync tap on async bail hook, .callAsync',
    median(rounds, () => asyncCallAsync(tappedKernel, req, ctx, n)),
  );
  add('1 sync tap on async bail hook, .promise()', await medianAsync(rounds, () => asyncPromise(tappedKernel, req, ctx, nAsync)));
  add('1 promise tap (tapPromise), .promise()', await medianAsync(rounds, () => asyncPromise(promiseKernel, req, ctx, nAsync)));

  await Promise.all([empty.close(), tappedKernel.close(), promiseKernel.close()]);
  if (sink === -1) console.log(sink);

  if (options.print !== false) printTable(results, rounds, n, nAsync);
  return results;
}

function benchPluginRegister(kernel: Kernel): void {
  kernel.hooks.server.onResponseHead.tap('bench', (r) => {
    sink = (sink + r.status) & 0xffff;
  });
  kernel.hooks.client.onRequest.tap('bench', (r) => {
    sink = (sink + r.method.length) & 0xffff;
  });
}

/** A bare tapable hook with the same tap as the kernel's, to show the wrapper's cost. */
function bareHook(): SyncHook<[Response, Request]> {
  const hook = new SyncHook<[Response, Request]>(['response', 'request']);
  hook.tap('bench-raw', (r) => {
    sink = (sink + r.status) & 0xffff;
  });
  return hook;
}

function benchPlugin() {
  return definePlugin({ name: 'bench', register: benchPluginRegister });
}

// ---------------------------------------------------------------------------------------
// Loops. Each reads the hook from the tapped table inside the loop, as a request would.

function emptyLoop(n: number): number {
  const t0 = process.hrtime.bigint();
  for (let i = 0; i < n; i++) sink = (sink + 1) & 0xffff;
  return Number(process.hrtime.bigint() - t0) / n;
}

function nullBranch(kernel: Kernel, req: Request, ctx: RequestContext, n: number): number {
  const tapped = kernel.tapped.client;
  const cb = (): void => {
    sink = (sink + 1) & 0xffff;
  };
  const t0 = process.hrtime.bigint();
  for (let i = 0; i < n; i++) {
    const h = tapped.onRequest;
    if (h !== null) h.callAsync(req, ctx, cb);
    else sink = (sink + 1) & 0xffff;
  }
  return Number(process.hrtime.bigint() - t0) / n;
}

function untappedCallAsync(kernel: Kernel, req: Request, ctx: RequestContext, n: number): number {
  const h = kernel.hooks.client.onRequest;
  const cb = (): void => {
    sink = (sink + 1) & 0xffff;
  };
  const t0 = process.hrtime.bigint();
  for (let i = 0; i < n; i++) h.callAsync(req, ctx, cb);
  return Number(process.hrtime.bigint() - t0) / n;
}

async function untappedPromise(kernel: Kernel, req: Request, ctx: RequestContext, n: number): Promise<number> {
  const h = kernel.hooks.client.onRequest;
  const t0 = process.hrtime.bigint();
  for (let i = 0; i < n; i++) {
    if ((await h.promise(req, ctx)) === undefined) sink = (sink + 1) & 0xffff;
  }
  return Number(process.hrtime.bigint() - t0) / n;
}

function syncCall(kernel: Kernel, res: Response, req: Request, n: number): number {
  const tapped = kernel.tapped.server;
  const t0 = process.hrtime.bigint();
  for (let i = 0; i < n; i++) {
    const h = tapped.onResponseHead;
    if (h !== null) h.call(res, req);
  }
  return Number(process.hrtime.bigint() - t0) / n;
}

function rawCall(hook: SyncHook<[Response, Request]>, res: Response, req: Request, n: number): number {
  const t0 = process.hrtime.bigint();
  for (let i = 0; i < n; i++) hook.call(res, req);
  return Number(process.hrtime.bigint() - t0) / n;
}

function asyncCallAsync(kernel: Kernel, req: Request, ctx: RequestContext, n: number): number {
  const tapped = kernel.tapped.client;
  // One callback for the whole loop: with only sync taps callAsync completes synchronously.
  const cb = (err: Error | null): void => {
    if (err) throw err;
    sink = (sink + 1) & 0xffff;
  };
  const t0 = process.hrtime.bigint();
  for (let i = 0; i < n; i++) {
    const h = tapped.onRequest;
    if (h !== null) h.callAsync(req, ctx, cb);
  }
  return Number(process.hrtime.bigint() - t0) / n;
}

async function asyncPromise(kernel: Kernel, req: Request, ctx: RequestContext, n: number): Promise<number> {
  const tapped = kernel.tapped.client;
  const t0 = process.hrtime.bigint();
  for (let i = 0; i < n; i++) {
    const h = tapped.onRequest;
    if (h !== null && (await h.promise(req, ctx)) === undefined) sink = (sink + 1) & 0xffff;
  }
  return Number(process.hrtime.bigint() - t0) / n;
}

// ---------------------------------------------------------------------------------------

function median(rounds: number, run: () => number): number {
  run(); // warm-up: compile tapable's caller, let V8 optimise the loop
  const xs: number[] = [];
  for (let i = 0; i < rounds; i++) xs.push(run());
  return mid(xs);
}

async function medianAsync(rounds: number, run: () => Promise<number>): Promise<number> {
  await run();
  const xs: number[] = [];
  for (let i = 0; i < rounds; i++) xs.push(await run());
  return mid(xs);
}

function mid(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 === 1 ? s[m]! : (s[m - 1]! + s[m]!) / 2;
}

function printTable(results: readonly HooksBenchResult[], rounds: number, n: number, nAsync: number): void {
  console.log(`hooks: median of ${rounds} rounds; ${n.toLocaleString('en')} dispatches per sync round, ${nAsync.toLocaleString('en')} per promise round; Node ${process.version}`);
  const w = Math.max(...results.map((r) => r.name.length));
  console.log(`${'case'.padEnd(w)}  ${'ns/op'.padStart(8)}  ${'ops/s'.padStart(14)}`);
  for (const r of results) {
    const ops = Number.isFinite(r.opsPerSec) ? Math.round(r.opsPerSec).toLocaleString('en') : '∞';
    console.log(`${r.name.padEnd(w)}  ${r.nsPerOp.toFixed(2).padStart(8)}  ${ops.padStart(14)}`);
  }
}

if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(process.argv[1]).href) {
  await runHooksBench();
}
