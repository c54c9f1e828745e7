/**
 * Start-up weight: a fresh process that imports a server library, serves a hello world on
 * port 0, answers one request and idles ~1 s, then reports its RSS, heap used and the time its
 * import took. Three programs: node:http, switchyard's default preset (`HTTP.serve` from the
 * built top-level entry) and a kernel-only server (`serve` from `switchyard/kernel`). The
 * children run plain `node` on the built `dist/` (tsx would add its own weight); the tree is
 * built first when `dist/` is missing or older than a source file.
 *
 * One more child per program lists what the import loaded: the modules (ESM through a loader
 * hook, CommonJS from `require.cache`) with their sizes, and the count of Node built-ins
 * (`process.moduleLoadList`). The hook runs only in that child, so it weighs on no figure.
 *
 * Environment: STARTUP_RUNS (children per program, default 5; the median is reported),
 * STARTUP_TREES (comma list of checkouts to compare, default this one; their children are
 * interleaved, so two trees are measured in the same window), STARTUP_PROGRAMS (comma list of
 * `node-http`, `preset`, `kernel`), STARTUP_TOP (how many of the largest modules to print,
 * default 8).
 */
import { execFileSync, spawn } from 'node:child_process';
import { once } from 'node:events';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { envList } from './common.js';
import { median } from './load.js';

const here = resolve(import.meta.dirname, '..');

/** What a program does after its import: start a hello-world server on port 0, resolve its port. */
const PROGRAMS: Record<string, { label: string; entry: string | null; start: string }> = {
  'node-http': {
    label: 'node:http',
    entry: null,
    start: `const http = await load('node:http');
const server = http.createServer((req, res) => { res.setHeader('Content-Type', 'text/plain'); res.end('hello world'); });
await new Promise((r) => server.listen(0, '127.0.0.1', r));
const port = server.address().port;`,
  },
  preset: {
    label: 'switchyard default preset',
    entry: 'dist/index.js',
    start: `const HTTP = await load(entry);
const server = await HTTP.serve(() => new HTTP.Response(200, 'hello world'), { port: 0 });
const port = server.port;`,
  },
  kernel: {
    label: 'switchyard kernel only',
    entry: 'dist/kernel/index.js',
    start: `const K = await load(entry);
const server = await K.serve(() => new K.Response(200, 'hello world'), { port: 0 });
const port = server.port;`,
  },
};

/**
 * The child: `load` times the import; one request goes over a raw socket (so no HTTP client
 * code is loaded), then the process idles and prints one JSON line.
 */
function childSource(program: string, entry: string | null): string {
  return `import { connect } from 'node:net';
const entry = ${JSON.stringify(entry)};
const builtinsBefore = process.moduleLoadList.length;
let importMs = 0;
async function load(spec) {
  const t0 = performance.now();
  const m = await import(spec);
  importMs = performance.now() - t0;
  return m;
}
${PROGRAMS[program]!.start}
const reply = await new Promise((resolve, reject) => {
  const s = connect(port, '127.0.0.1', () => s.end('GET / HTTP/1.1\\r\\nHost: localhost\\r\\nConnection: close\\r\\n\\r\\n'));
  let text = '';
  s.setEncoding('latin1');
  s.on('data', (d) => (text += d));
  s.on('end', () => resolve(text));
  s.on('error', reject);
});
if (!reply.startsWith('HTTP/1.1 200') || !reply.endsWith('hello world')) throw new Error('unexpected reply: ' + reply.slice(0, 200));
await new Promise((r) => setTimeout(r, 1000));
const mem = process.memoryUsage();
const builtins = process.moduleLoadList.slice(builtinsBefore).filter((m) => m.startsWith('NativeModule ')).map((m) => m.slice(13));
const { createRequire } = await import('node:module');
const cjs = Object.keys(createRequire(import.meta.url).cache);
console.log(JSON.stringify({ rss: mem.rss, heapUsed: mem.heapUsed, importMs, builtins, cjs }));
server.close();
process.exit(0);
`;
}

/** A loader hook that appends every loaded ESM module's URL and source size to `STARTUP_MODULES_LOG`. */
const HOOK = `import { appendFileSync } from 'node:fs';
export async function load(url, context, next) {
  const r = await next(url, context);
  if (url.startsWith('file:')) appendFileSync(process.env.STARTUP_MODULES_LOG, url + ' ' + (r.source == null ? 0 : r.source.length) + '\\n');
  return r;
}
`;
const REGISTER = (hookUrl: string): string => `import { register } from 'node:module'; register(${JSON.stringify(hookUrl)});`;

interface Sample {
  rss: number;
  heapUsed: number;
  importMs: number;
  builtins: string[];
  cjs: string[];
}

async function runChild(tree: string, program: string, scratch: string, hook: boolean): Promise<Sample & { modules: Map<string, number> }> {
  const entry = PROGRAMS[program]!.entry;
  const file = join(scratch, `${program}-${Math.random().toString(36).slice(2)}.mjs`);
  writeFileSync(file, childSource(program, entry === null ? null : pathToFileURL(join(tree, entry)).href));
  const log = join(scratch, 'modules.log');
  rmSync(log, { force: true });
  const args = hook ? ['--import', `data:text/javascript,${encodeURIComponent(REGISTER(pathToFileURL(join(scratch, 'hook.mjs')).href))}`, file] : [file];
  const child = spawn(process.execPath, args, { env: { ...process.env, STARTUP_MODULES_LOG: log }, stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  let err = '';
  child.stdout.setEncoding('utf8').on('data', (d: string) => (out += d));
  child.stderr.setEncoding('utf8').on('data', (d: string) => (err += d));
  const [code] = (await once(child, 'exit')) as [number | null];
  rmSync(file, { force: true });
  if (code !== 0) throw new Error(`${program} child (${tree}) exited with ${code}: ${err.slice(0, 2000)}`);
  const sample = JSON.parse(out.trim().split('\n').pop()!) as Sample;
  const modules = new Map<string, number>();
  if (hook && existsSync(log)) {
    for (const line of readFileSync(log, 'utf8').split('\n')) {
      const at = line.lastIndexOf(' ');
      // CommonJS loaded by import() comes without source here (size 0); its size is read below.
      if (at > 0) modules.set(new URL(line.slice(0, at)).pathname, Number(line.slice(at + 1)));
    }
  }
  // CommonJS modules a package loads with require() pass no ESM hook; their size is read here.
  for (const path of sample.cjs) if (!modules.get(path) && existsSync(path)) modules.set(path, statSync(path).size);
  for (const [path, n] of modules) if (n === 0 && existsSync(path)) modules.set(path, statSync(path).size);
  modules.delete(file);
  return { ...sample, modules };
}

/** The newest modification time under the tree's sources, to tell whether `dist/` is stale. */
function newestSource(tree: string): number {
  let newest = 0;
  const walk = (dir: string): void => {
    for (const e of readdirSync(dir, { withFileTypes: true })) {
      const p = join(dir, e.name);
      if (e.isDirectory()) walk(p);
      else if (e.name.endsWith('.ts')) newest = Math.max(newest, statSync(p).mtimeMs);
    }
  };
  for (const d of ['kernel', 'plugins', 'tls', 'cli']) if (existsSync(join(tree, d))) walk(join(tree, d));
  return Math.max(newest, statSync(join(tree, 'index.ts')).mtimeMs, statSync(join(tree, 'tsup.config.ts')).mtimeMs);
}

function ensureBuilt(tree: string): void {
  const built = join(tree, 'dist/index.js');
  if (existsSync(built) && statSync(built).mtimeMs >= newestSource(tree)) return;
  console.log(`building ${tree} (npm run build)…`);
  execFileSync('npm', ['run', 'build'], { cwd: tree, stdio: ['ignore', 'ignore', 'inherit'] });
}

const MiB = 1024 * 1024;
const fmtMiB = (n: number): string => (n / MiB).toFixed(1);

/** Runs the children and prints the table; returns the medians per tree and program. */
export async function runStartupBench(): Promise<Map<string, Map<string, { rss: number; heapUsed: number; importMs: number }>>> {
  const runs = Number(process.env.STARTUP_RUNS ?? 5);
  const top = Number(process.env.STARTUP_TOP ?? 8);
  const given = envList('STARTUP_TREES') ?? [here];
  const trees = given.map((t) => resolve(t));
  const label = (t: string): string => given[trees.indexOf(t)]!;
  const programs = envList('STARTUP_PROGRAMS') ?? Object.keys(PROGRAMS);
  for (const p of programs) if (!(p in PROGRAMS)) throw new Error(`unknown program ${p}; known: ${Object.keys(PROGRAMS).join(', ')}`);
  for (const t of trees) ensureBuilt(t);
  const scratch = mkdtempSync(join(tmpdir(), 'switchyard-startup-'));
  writeFileSync(join(scratch, 'hook.mjs'), HOOK);
  const result = new Map<string, Map<string, { rss: number; heapUsed: number; importMs: number }>>();
  try {
    const samples = new Map<string, Sample[]>();
    const key = (t: string, p: string): string => `${t}\0${p}`;
    // Rounds interleave every tree and program, so the machine's drift falls on all alike.
    for (let i = 0; i < runs; i++) {
      for (const p of programs) {
        for (const t of trees) {
          if (PROGRAMS[p]!.entry === null && t !== trees[0]) continue;
          const s = await runChild(t, p, scratch, false);
          samples.set(key(t, p), [...(samples.get(key(t, p)) ?? []), s]);
        }
      }
    }
    const rows: string[][] = [];
    let nodeRss = 0;
    for (const t of trees) {
      const perTree = new Map<string, { rss: number; heapUsed: number; importMs: number }>();
      result.set(t, perTree);
      for (const p of programs) {
        const s = samples.get(key(t, p));
        if (s === undefined) continue;
        const rss = median(s.map((x) => x.rss));
        const m = { rss, heapUsed: median(s.map((x) => x.heapUsed)), importMs: median(s.map((x) => x.importMs)) };
        perTree.set(p, m);
        if (p === 'node-http') nodeRss = rss;
        const listed = await runChild(t, p, scratch, true);
        const ours = [...listed.modules].filter(([path]) => !path.includes('/node_modules/'));
        const spread = (xs: number[], f: (n: number) => string): string => `${f(Math.min(...xs))}-${f(Math.max(...xs))}`;
        rows.push([
          PROGRAMS[p]!.label + (trees.length > 1 && PROGRAMS[p]!.entry !== null ? ` (${label(t)})` : ''),
          `${fmtMiB(rss)} (${spread(
            s.map((x) => x.rss),
            fmtMiB,
          )})`,
          `${fmtMiB(m.heapUsed)} (${spread(
            s.map((x) => x.heapUsed),
            fmtMiB,
          )})`,
          `${m.importMs.toFixed(1)} (${spread(
            s.map((x) => x.importMs),
            (n) => n.toFixed(0),
          )})`,
          `${listed.modules.size} (${ours.length} own, ${listed.modules.size - ours.length} packages), ${listed.builtins.length} built-ins`,
        ]);
        if (listed.modules.size > 0) {
          const largest = [...listed.modules].sort((a, b) => b[1] - a[1]).slice(0, top);
          console.log(`${rows.at(-1)![0]}, largest modules loaded: ${largest.map(([path, n]) => `${shortPath(path, t)} ${(n / 1024).toFixed(0)} KiB`).join(', ')}`);
        }
      }
    }
    console.log(`\n${runs} children per program; medians (min-max). RSS and heap in MiB after one request and 1 s idle; import in ms.\n`);
    console.log('| program | RSS | heap used | import | modules loaded |');
    console.log('|---|---|---|---|---|');
    for (const r of rows) console.log(`| ${r.join(' | ')} |`);
    if (nodeRss > 0) {
      for (const [t, perTree] of result) {
        const preset = perTree.get('preset');
        if (preset) console.log(`\n${trees.length > 1 ? `default preset (${label(t)})` : 'default preset'}: ${fmtMiB(preset.rss - nodeRss)} MiB over node:http (target ≤ 10)`);
      }
    }
  } finally {
    rmSync(scratch, { recursive: true, force: true });
  }
  return result;
}

/** `path` relative to the tree, or from its `node_modules/` on. */
function shortPath(path: string, tree: string): string {
  const nm = path.lastIndexOf('/node_modules/');
  return nm >= 0 ? path.slice(nm + 14) : relative(tree, path);
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) await runStartupBench();
