/**
 * HTTP cache benchmark: a cache hit through switchyard's cache plugin (memory store and disk
 * store) beside a hit through undici's cache interceptor (`interceptors.cache()` on an Agent,
 * its default memory store, `request`), and both clients without a cache against the same
 * server; then the memory each store holds per entry.
 *
 * Run directly with `node --import tsx bench/cache.ts`, or call {@link runCacheBench} from the
 * bench runner.
 *
 * Scenarios (GET of an 11-byte body marked `Cache-Control: max-age=3600`, each body read to
 * its end; for the cached rows the URL was fetched once before the runs, so every measured
 * call is a hit):
 *   sequential  one call at a time
 *   concurrent  50 in flight (50 loops like the one above)
 * Method: the server is a child process (`node:http`), the clients share this process and
 * are measured one after another, BENCH_RUNS rounds in rotating order; the median req/s is
 * reported. Memory: N distinct URLs are fetched into a fresh client's cache; the heap after a
 * forced GC, less the heap before, over N.
 *
 * Environment: BENCH_CACHE_DURATION or BENCH_DURATION (s per run, default 1.5), BENCH_RUNS
 * (default 3), BENCH_CONNECTIONS (default 50), BENCH_CACHE_ENTRIES (default 2000).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { Agent, interceptors, request as undiciRequest, type Dispatcher } from 'undici';
import { Client, createKernel, type Kernel } from '../kernel/index.js';
import { cache, DiskStore, MemoryStore, type CacheStore } from '../plugins/index.js';
import { childTracker, envPositive, fmtInt, printTable, spawnListening, stopChild } from './common.js';
import { median } from './load.js';

const SERVER = `
const http = require('node:http');
let count = 0;
http.createServer((req, res) => {
  res.setHeader('X-Count', String(++count));
  res.setHeader('Content-Type', 'text/plain');
  res.setHeader('Cache-Control', 'max-age=3600');
  res.setHeader('ETag', '"v1"');
  res.end('hello world');
}).listen(0, '127.0.0.1', function () { console.log('PORT ' + this.address().port); });
`;

/** One client under test: `call(url)` makes a GET, reads the body and gives the server's X-Count. */
interface Subject {
  name: string;
  /** Whether its calls after the first should be cache hits. */
  cached: boolean;
  call(url: string): Promise<string | undefined>;
  close(): Promise<void>;
}

async function switchyardSubject(name: string, store: CacheStore | null): Promise<Subject> {
  const kernel: Kernel = store === null ? createKernel() : createKernel().register(cache, { store });
  await kernel.ready();
  const client = new Client({ kernel });
  return {
    name,
    cached: store !== null,
    call: async (url) => {
      const res = await client.get(url);
      if (res.status !== 200) throw new Error(`${name}: status ${res.status}`);
      return res.headers.get('X-Count');
    },
    close: async () => {
      client.close();
      await kernel.close();
    },
  };
}

function undiciSubject(name: string, cached: boolean): Subject {
  const agent = new Agent({ connections: 50 });
  const dispatcher: Dispatcher = cached ? agent.compose(interceptors.cache()) : agent;
  return {
    name,
    cached,
    call: async (url) => {
      const res = await undiciRequest(url, { dispatcher });
      await res.body.arrayBuffer();
      if (res.statusCode !== 200) throw new Error(`${name}: status ${res.statusCode}`);
      return res.headers['x-count'] as string | undefined;
    },
    close: () => agent.close(),
  };
}

/** Calls per second over `seconds` with `inFlight` loops. */
async function measure(s: Subject, url: string, inFlight: number, seconds: number): Promise<number> {
  const end = performance.now() + seconds * 1000;
  let n = 0;
  const loop = async (): Promise<void> => {
    while (performance.now() < end) {
      await s.call(url);
      n++;
    }
  };
  const t0 = performance.now();
  await Promise.all(Array.from({ length: inFlight }, loop));
  return (n * 1000) / (performance.now() - t0);
}

function gc(): void {
  setFlagsFromString('--expose-gc');
  (runInNewContext('gc') as () => void)();
}

/** Heap bytes per entry after `entries` distinct URLs went through `s`'s cache. */
async function bytesPerEntry(make: () => Promise<Subject>, base: string, entries: number): Promise<number> {
  const s = await make();
  await s.call(`${base}/warm`);
  gc();
  const before = process.memoryUsage().heapUsed;
  for (let i = 0; i < entries; i++) await s.call(`${base}/entry/${i}`);
  gc();
  const after = process.memoryUsage().heapUsed;
  await s.close();
  return (after - before) / entries;
}

/** Runs the benchmark and prints its tables. */
export async function runCacheBench(log: (s: string) => void = console.log): Promise<void> {
  const seconds = envPositive('BENCH_CACHE_DURATION', envPositive('BENCH_DURATION', 1.5));
  const runs = envPositive('BENCH_RUNS', 3);
  const inFlight = envPositive('BENCH_CONNECTIONS', 50);
  const entries = envPositive('BENCH_CACHE_ENTRIES', 2000);
  const children = childTracker();
  const server = await spawnListening([process.execPath, '-e', SERVER], process.cwd(), process.env, children.track);
  const base = `http://127.0.0.1:${server.port}`;
  const dir = mkdtempSync(join(tmpdir(), 'bench-cache-'));
  try {
    const subjects: Subject[] = [
      await switchyardSubject('switchyard cache hit (memory store)', new MemoryStore()),
      await switchyardSubject('switchyard cache hit (disk store)', new DiskStore(dir)),
      undiciSubject('undici cache interceptor hit', true),
      await switchyardSubject('switchyard, no cache', null),
      undiciSubject('undici, no cache', false),
    ];
    const url = `${base}/hello`;
    for (const s of subjects) {
      // The rows claim hits: the second call must not have reached the server.
      const first = await s.call(url);
      if ((first === (await s.call(url))) !== s.cached) throw new Error(`${s.name}: the second call was ${s.cached ? 'not ' : ''}answered from the cache`);
    }
    for (const [scenario, n] of [
      ['sequential', 1],
      [`${inFlight} in flight`, inFlight],
    ] as const) {
      const results = new Map<string, number[]>(subjects.map((s) => [s.name, []]));
      for (const s of subjects) await measure(s, url, n, Math.min(0.5, seconds));
      for (let r = 0; r < runs; r++) {
        for (let i = 0; i < subjects.length; i++) {
          const s = subjects[(i + r) % subjects.length]!;
          results.get(s.name)!.push(await measure(s, url, n, seconds));
        }
      }
      const baseRate = median(results.get(subjects[2]!.name)!);
      log(`\n${scenario} (req/s, median of ${runs}; ratio to the undici cache hit)\n`);
      printTable(
        ['client', 'req/s', 'ratio'],
        subjects.map((s) => {
          const m = median(results.get(s.name)!);
          return [s.name, fmtInt(m), (m / baseRate).toFixed(2)];
        }),
        log,
        true,
      );
    }
    for (const s of subjects) await s.close();

    log(`\nmemory per stored entry (${entries} entries of an 11-byte body, heap delta after GC)\n`);
    const rows: string[][] = [];
    rows.push(['switchyard MemoryStore', fmtInt(await bytesPerEntry(() => switchyardSubject('m', new MemoryStore({ maxEntries: entries * 2 })), base, entries))]);
    rows.push(['undici cache interceptor (MemoryCacheStore)', fmtInt(await bytesPerEntry(async () => undiciSubject('u', true), base, entries))]);
    printTable(['store', 'bytes/entry'], rows, log, true);
  } finally {
    rmSync(dir, { recursive: true, force: true });
    await stopChild(server.child);
  }
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) await runCacheBench();
