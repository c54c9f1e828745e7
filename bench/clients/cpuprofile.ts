/**
 * Summarizes a V8 `.cpuprofile` (from `node --cpu-prof`): self time and total (inclusive)
 * time by function, and self time by where the code lives (switchyard's sources, undici,
 * other packages, Node's internals, V8 builtins, GC). Functions of a bundle built with an
 * external source map (`<bundle>.map` next to it) are mapped back to their source file and
 * line, so switchyard's functions show as `kernel/client/h1-session.ts:123`.
 *
 * Run directly: `node --import tsx bench/clients/cpuprofile.ts <file.cpuprofile> [top]`.
 */
import { existsSync, readFileSync } from 'node:fs';
import { SourceMap, type SourceMapPayload } from 'node:module';
import { dirname, relative, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

interface CallFrame {
  functionName: string;
  url: string;
  lineNumber: number;
  columnNumber: number;
}

interface ProfileNode {
  id: number;
  callFrame: CallFrame;
  children?: number[];
}

interface CpuProfile {
  nodes: ProfileNode[];
  samples: number[];
  timeDeltas: number[];
  startTime: number;
  endTime: number;
}

/** One function's share of a profile. */
export interface FunctionTime {
  /** `name (file:line)`. */
  key: string;
  /** Where the code lives, see {@link CpuSummary.byArea}. */
  area: string;
  selfMs: number;
  totalMs: number;
}

/** What {@link summarizeProfile} returns. */
export interface CpuSummary {
  /** Sampled wall time, ms. */
  totalMs: number;
  /** Sampled time minus `(idle)`, ms. */
  busyMs: number;
  /** Self time by area (`switchyard`, `undici`, `pkg:<name>`, `node`, `v8/native`, `wasm`, `gc`, `idle`, `program`, `bench`), ms. */
  byArea: Map<string, number>;
  /** Every function, by self time, largest first. */
  functions: FunctionTime[];
  /** Requests completed in the summarized window, when known (for per-request figures). */
  requests: number;
}

/** Which part of a profile to sum. */
export interface SummaryOptions {
  /** Only samples taken in this window (microseconds, V8's monotonic clock = `process.hrtime`). */
  fromUs?: number;
  toUs?: number;
  /** Requests completed in the window: per-request microseconds are printed as well. */
  requests?: number;
}

const ROOT = fileURLToPath(new URL('../..', import.meta.url));

/** Maps bundle positions back to sources, one source map per bundle URL (or none). */
class Mapper {
  private readonly maps = new Map<string, SourceMap | null>();

  map(f: CallFrame): { file: string; line: number } {
    const line = f.lineNumber + 1;
    if (!f.url.startsWith('file:')) return { file: f.url, line };
    let sm = this.maps.get(f.url);
    if (sm === undefined) {
      sm = null;
      const path = fileURLToPath(f.url);
      if (existsSync(`${path}.map`)) {
        try {
          sm = new SourceMap(JSON.parse(readFileSync(`${path}.map`, 'utf8')) as SourceMapPayload);
        } catch {
          sm = null;
        }
      }
      this.maps.set(f.url, sm);
    }
    const file = fileURLToPath(f.url);
    if (sm === null) return { file, line };
    const e = sm.findEntry(f.lineNumber, f.columnNumber) as { originalSource?: string; originalLine?: number };
    if (e.originalSource === undefined || e.originalLine === undefined) return { file, line };
    // Sources of an esbuild map are relative to the map's directory.
    const src = e.originalSource.startsWith('file:') ? fileURLToPath(e.originalSource) : resolve(dirname(file), e.originalSource);
    return { file: src, line: e.originalLine + 1 };
  }
}

function areaOf(name: string, file: string): string {
  if (name === '(garbage collector)') return 'gc';
  if (name === '(idle)') return 'idle';
  if (name === '(program)' || name === '(root)') return 'program';
  if (file === '') return 'v8/native';
  if (file.startsWith('wasm:')) return 'wasm'; // undici's llhttp
  if (file.startsWith('node:')) return 'node';
  if (file.includes('/node_modules/.cache/')) return 'bench'; // bundle code without a source (esbuild helpers)
  const m = /node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(file);
  if (m) return m[1] === 'undici' ? 'undici' : `pkg:${m[1]}`;
  const rel = relative(ROOT, file);
  if (rel.startsWith('kernel/') || rel.startsWith('plugins/') || rel === 'index.ts') return 'switchyard';
  if (rel.startsWith('bench/') || rel.startsWith('node_modules/.cache/')) return 'bench';
  return 'other';
}

/** Reads a `.cpuprofile` and sums its samples (all, or a window's) by function and by area. */
export function summarizeProfile(file: string, options: SummaryOptions = {}): CpuSummary {
  const from = options.fromUs ?? -Infinity;
  const to = options.toUs ?? Infinity;
  const p = JSON.parse(readFileSync(file, 'utf8')) as CpuProfile;
  const mapper = new Mapper();
  const byId = new Map<number, ProfileNode>();
  const parent = new Map<number, number>();
  for (const n of p.nodes) {
    byId.set(n.id, n);
    for (const c of n.children ?? []) parent.set(c, n.id);
  }
  // One key per node (its function), computed once.
  const keyOf = new Map<number, { key: string; area: string }>();
  for (const n of p.nodes) {
    const f = n.callFrame;
    const name = f.functionName || '(anonymous)';
    const { file: src, line } = mapper.map(f);
    const area = areaOf(name, src);
    const where = src === '' ? '' : src.startsWith('node:') ? src : relative(ROOT, src);
    keyOf.set(n.id, { key: where ? `${name} (${where}:${line})` : name, area });
  }
  const self = new Map<string, number>();
  const total = new Map<string, number>();
  const areaOfKey = new Map<string, string>();
  const byArea = new Map<string, number>();
  let totalMs = 0;
  let t = p.startTime;
  for (let i = 0; i < p.samples.length; i++) {
    const delta = p.timeDeltas[i] ?? 0;
    t += delta;
    // A sample stands for the interval before it.
    if (t < from || t - delta > to) continue;
    const ms = delta / 1000;
    if (ms <= 0) continue;
    const id = p.samples[i] as number;
    const k = keyOf.get(id);
    if (!k) continue;
    totalMs += ms;
    self.set(k.key, (self.get(k.key) ?? 0) + ms);
    areaOfKey.set(k.key, k.area);
    byArea.set(k.area, (byArea.get(k.area) ?? 0) + ms);
    // Inclusive time: every distinct function on the stack once.
    const seen = new Set<string>();
    for (let cur: number | undefined = id; cur !== undefined; cur = parent.get(cur)) {
      const kk = keyOf.get(cur);
      if (!kk || seen.has(kk.key)) continue;
      seen.add(kk.key);
      areaOfKey.set(kk.key, kk.area);
      total.set(kk.key, (total.get(kk.key) ?? 0) + ms);
    }
  }
  const functions: FunctionTime[] = [...total.keys()].map((key) => ({
    key,
    area: areaOfKey.get(key) ?? 'other',
    selfMs: self.get(key) ?? 0,
    totalMs: total.get(key) ?? 0,
  }));
  functions.sort((a, b) => b.selfMs - a.selfMs);
  return { totalMs, busyMs: totalMs - (byArea.get('idle') ?? 0), byArea, functions, requests: options.requests ?? 0 };
}

/** Prints a summary: areas, the top `top` functions by self time, and switchyard's top by total time. */
export function printProfileSummary(s: CpuSummary, top = 25, log: (line: string) => void = console.log): void {
  const n = s.requests;
  const pct = (ms: number): string => `${((100 * ms) / s.busyMs).toFixed(1)}%`;
  // Per request: microseconds of CPU, when the request count is known.
  const per = (ms: number): string => (n > 0 ? `${((ms * 1000) / n).toFixed(2)}us` : pct(ms));
  const unit = n > 0 ? 'us per request' : '% of busy time';
  log(
    `sampled ${s.totalMs.toFixed(0)} ms, busy (not idle) ${s.busyMs.toFixed(0)} ms` +
      (n > 0 ? `, ${n.toLocaleString('en-US')} requests: ${((s.busyMs * 1000) / n).toFixed(2)} us busy per request` : ''),
  );
  log(
    `self time by area (${unit}): ` +
      [...s.byArea.entries()]
        .filter(([a]) => a !== 'idle')
        .sort((a, b) => b[1] - a[1])
        .map(([a, ms]) => `${a} ${per(ms)} (${pct(ms)})`)
        .join(', '),
  );
  log(`top ${top} functions by self time (self, total; ${unit}):`);
  for (const f of s.functions.filter((x) => x.area !== 'idle').slice(0, top)) {
    log(`  ${per(f.selfMs).padStart(8)} ${per(f.totalMs).padStart(8)}  ${pct(f.selfMs).padStart(6)}  [${f.area}] ${f.key}`);
  }
  const own = s.functions.filter((f) => f.area === 'switchyard');
  if (own.length > 0) {
    log(`switchyard functions by self time (self, total):`);
    for (const f of own.slice(0, top)) log(`  ${per(f.selfMs).padStart(8)} ${per(f.totalMs).padStart(8)}  ${f.key}`);
    log(`switchyard functions by total (inclusive) time (total, self):`);
    for (const f of [...own].sort((a, b) => b.totalMs - a.totalMs).slice(0, top)) {
      log(`  ${per(f.totalMs).padStart(8)} ${per(f.selfMs).padStart(8)}  ${f.key}`);
    }
  }
}

if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(process.argv[1]).href) {
  const file = process.argv[2];
  if (!file) {
    console.error('usage: node --import tsx bench/clients/cpuprofile.ts <file.cpuprofile> [top]');
    process.exit(2);
  }
  printProfileSummary(summarizeProfile(file), Number(process.argv[3] ?? 25) || 25);
}
