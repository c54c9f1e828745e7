/**
 * `npm run fuzz`: the hostile generators of test/hostile/generators.ts for a given count, not in
 * CI. Two parts:
 *
 * - `--count N` (default 1,000,000): mutated requests through the HTTP/1 head parser in-process,
 *   each fed whole, cut at random points, or into a parser reused after the previous head, and
 *   the chunked bodies that follow through the chunked decoder. Runs in a worker watched by
 *   the main thread, so a parse that never returns is reported as a hang with its iteration.
 * - `--sockets N` (default 100,000): mutated requests, pipelined and split, over loopback
 *   sockets against `serve` on the default preset.
 *
 * Prints iterations, crashes (exceptions other than ParseError and ProtocolError, 500s, server
 * errors), hangs and peak RSS. `--seed S` replays a run; `--count 0` or `--sockets 0` skips a
 * part. Exits 1 when a crash or hang was found.
 *
 *     npm run fuzz -- --count 1000000 --sockets 100000 --seed 1
 */
import v8 from 'node:v8';
import vm from 'node:vm';
import { isMainThread, parentPort, Worker, workerData } from 'node:worker_threads';
import { ParseError, ProtocolError } from '../kernel/errors.js';
import { ChunkedDecoder } from '../kernel/http1/chunked.js';
import { HeadParser } from '../kernel/http1/head-parser.js';
import { Response, serve } from '../index.js';
import { FUZZ_SERVER_OPTIONS, mutatedBatch, mutateOnce, reached, Rng, sendBatch, splitRandom, validRequest } from '../test/hostile/generators.js';

interface ParseJob {
  seed: number;
  count: number;
  progress: SharedArrayBuffer;
}

interface ParseReport {
  iterations: number;
  refused: number;
  accepted: number;
  /** Heads still waiting for bytes when the input ended (a cut or truncated head). */
  incomplete: number;
  crashes: string[];
}

function arg(name: string, dflt: number): number {
  const i = process.argv.indexOf(`--${name}`);
  if (i === -1) return dflt;
  const v = Number(process.argv[i + 1]);
  if (!Number.isSafeInteger(v) || v < 0) throw new Error(`--${name} needs a non-negative integer, got ${process.argv[i + 1]}`);
  return v;
}

const expected = (e: unknown): boolean => e instanceof ParseError || e instanceof ProtocolError;

/** The in-process part (runs in the worker). */
function parseLoop(job: ParseJob): ParseReport {
  const rng = new Rng(job.seed);
  const progress = new Int32Array(job.progress);
  const reused = new HeadParser('request');
  const report: ParseReport = { iterations: 0, refused: 0, accepted: 0, incomplete: 0, crashes: [] };
  for (let i = 0; i < job.count; i++) {
    Atomics.store(progress, 0, i);
    let text = validRequest(rng);
    const n = rng.int(4);
    for (let k = 0; k < n; k++) text = mutateOnce(rng, text);
    const bytes = Buffer.from(text, 'latin1');
    const mode = rng.int(3);
    const parser = mode === 2 ? reused : new HeadParser('request');
    try {
      let at = 0;
      const pieces = mode === 1 ? splitRandom(rng, text, 8).map((p) => p.length) : [bytes.length];
      for (const len of pieces) {
        const end = at + len;
        // Consumes the whole piece, or stops where a complete head ends.
        const used = parser.execute(bytes, at, end);
        if (parser.complete) {
          at += used;
          break;
        }
        at = end;
      }
      if (parser.complete) {
        report.accepted++;
        if (parser.hasTransferEncoding) {
          const dec = new ChunkedDecoder();
          let p = at;
          while (p < bytes.length && !dec.done) {
            const used = dec.execute(bytes, p, bytes.length);
            if (used === 0) break;
            p += used;
          }
        }
      } else {
        report.incomplete++;
      }
    } catch (e) {
      if (expected(e)) report.refused++;
      else report.crashes.push(`iteration ${i}: ${e instanceof Error ? `${e.name}: ${e.message}` : String(e)} for ${JSON.stringify(text.slice(0, 200))}`);
    }
    if (parser === reused) reused.reset();
    report.iterations++;
  }
  return report;
}

if (!isMainThread) {
  parentPort!.postMessage(parseLoop(workerData as ParseJob));
} else {
  await main();
}

async function runParse(seed: number, count: number): Promise<{ report: ParseReport | null; hang: string | null; ms: number }> {
  const progress = new SharedArrayBuffer(4);
  const view = new Int32Array(progress);
  const t0 = performance.now();
  // A worker does not inherit the tsx loader: register it there before importing this file.
  const boot = `(async () => { (await import('tsx/esm/api')).register(); await import(${JSON.stringify(import.meta.url)}); })()`;
  const worker = new Worker(boot, { eval: true, workerData: { seed, count, progress } satisfies ParseJob });
  return new Promise((resolve, reject) => {
    let last = -1;
    let still = 0;
    const watch = setInterval(() => {
      const now = Atomics.load(view, 0);
      still = now === last ? still + 1 : 0;
      last = now;
      if (still >= 5) {
        clearInterval(watch);
        void worker.terminate();
        resolve({ report: null, hang: `iteration ${now} did not return within 5 s (seed ${seed})`, ms: performance.now() - t0 });
      }
    }, 1000);
    worker.once('message', (report: ParseReport) => {
      clearInterval(watch);
      resolve({ report, hang: null, ms: performance.now() - t0 });
    });
    worker.once('error', (e) => {
      clearInterval(watch);
      reject(e);
    });
  });
}

/** heapUsed after a full collection. */
function heapAfterGc(): number {
  v8.setFlagsFromString('--expose-gc');
  (vm.runInNewContext('gc') as () => void)();
  return process.memoryUsage().heapUsed;
}

async function runSockets(
  seed: number,
  count: number,
): Promise<{ heads: number; connections: number; statuses: Map<number, number>; crashes: string[]; hangs: string[]; ms: number; heapGrowth: number }> {
  const crashes: string[] = [];
  const hangs: string[] = [];
  const onUncaught = (e: unknown): void => void crashes.push(`uncaught: ${String(e)}`);
  process.on('uncaughtException', onUncaught);
  const server = await serve(() => new Response(200, 'ok'), {
    ...FUZZ_SERVER_OPTIONS,
    onError: (error, request) => {
      if (request !== null && request !== undefined) crashes.push(`handler error: ${String(error)}`);
    },
  });
  const heap0 = heapAfterGc();
  const rng = new Rng(seed);
  const statuses = new Map<number, number>();
  let heads = 0;
  let connections = 0;
  const t0 = performance.now();
  const worker = async (): Promise<void> => {
    while (heads < count && crashes.length + hangs.length < 20) {
      const { parts, mutated } = mutatedBatch(rng, 40);
      const r = await sendBatch(server.port, parts, 10_000);
      connections++;
      heads += reached(r.statuses, mutated.length);
      for (const s of r.statuses) statuses.set(s, (statuses.get(s) ?? 0) + 1);
      const what = JSON.stringify(parts.join('').slice(0, 200));
      if (r.hung) hangs.push(`no answer and no close within 10 s: ${what}`);
      if (r.garbage !== null) crashes.push(`not an HTTP/1.1 response at byte ${r.garbage.offset}: ${r.garbage.excerpt}`);
      if (r.statuses.some((s) => s >= 500 && s !== 501 && s !== 505)) crashes.push(`5xx for ${what}`);
    }
  };
  await Promise.all(Array.from({ length: 32 }, worker));
  const ms = performance.now() - t0;
  const probe = await sendBatch(server.port, ['GET / HTTP/1.1\r\nHost: x\r\n\r\n'], 5000);
  if (probe.statuses[0] !== 200) crashes.push(`server no longer serving: ${JSON.stringify(probe.statuses)}`);
  await server.forceClose();
  process.off('uncaughtException', onUncaught);
  return { heads, connections, statuses, crashes, hangs, ms, heapGrowth: heapAfterGc() - heap0 };
}

async function main(): Promise<void> {
  const seed = arg('seed', (Math.random() * 2 ** 32) >>> 0);
  const count = arg('count', 1_000_000);
  const sockets = arg('sockets', 100_000);
  let failed = false;
  console.log(`fuzz seed ${seed} (replay with --seed ${seed})`);
  if (count > 0) {
    const { report, hang, ms } = await runParse(seed, count);
    const peak = process.resourceUsage().maxRSS / 1024;
    if (report === null) {
      failed = true;
      console.log(`parser: HANG ${hang}`);
    } else {
      failed ||= report.crashes.length > 0;
      console.log(
        `parser: ${report.iterations} iterations in ${(ms / 1000).toFixed(1)} s: ${report.accepted} accepted, ${report.refused} refused (ParseError/ProtocolError), ${report.incomplete} incomplete, ${report.crashes.length} crashes, 0 hangs; peak RSS ${peak.toFixed(0)} MB`,
      );
      for (const c of report.crashes.slice(0, 10)) console.log(`  crash ${c}`);
    }
  }
  if (sockets > 0) {
    const r = await runSockets(seed, sockets);
    const peak = process.resourceUsage().maxRSS / 1024;
    failed ||= r.crashes.length + r.hangs.length > 0;
    console.log(
      `sockets: ${r.heads} requests reached over ${r.connections} connections in ${(r.ms / 1000).toFixed(1)} s; statuses ${JSON.stringify(Object.fromEntries([...r.statuses].sort((a, b) => a[0] - b[0])))}; ${r.crashes.length} crashes, ${r.hangs.length} hangs; peak RSS ${peak.toFixed(0)} MB, RSS now ${(process.memoryUsage().rss / 2 ** 20).toFixed(0)} MB, heapUsed growth after GC ${(r.heapGrowth / 2 ** 20).toFixed(1)} MB`,
    );
    for (const c of [...r.crashes, ...r.hangs].slice(0, 10)) console.log(`  ${c}`);
  }
  process.exitCode = failed ? 1 : 0;
}
