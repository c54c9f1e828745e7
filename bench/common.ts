/**
 * Helpers shared by bench/server.ts and bench/client.ts: environment lists, tracking and
 * ending child processes, precompiling the child programs with esbuild, paired ratios, and
 * table formatting.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { createHash } from 'node:crypto';
import { once } from 'node:events';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { median } from './load.js';

/** The environment variable `name` as a positive number, else `fallback` (unset, empty, zero, negative or not a number). */
export function envPositive(name: string, fallback: number): number {
  const v = Number(process.env[name]);
  return Number.isFinite(v) && v > 0 ? v : fallback;
}

/** Comma list from the environment variable `name`, or null when unset or empty. */
export function envList(name: string): string[] | null {
  const v = process.env[name]?.trim();
  return v
    ? v
        .split(',')
        .map((s) => s.trim())
        .filter(Boolean)
    : null;
}

export function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/** The first `n` non-empty lines of `text`, trimmed, joined by ` | ` (at most 300 chars). */
export function firstLines(text: string, n = 3): string {
  return text
    .split('\n')
    .map((l) => l.trim())
    .filter(Boolean)
    .slice(0, n)
    .join(' | ')
    .slice(0, 300);
}

/**
 * Measures servers in rotating rounds: `rounds` times, each server once, the order shifted by
 * one each round so machine drift never favours the one that goes first. A server that has a
 * note (`notes`, by `key(p)`) is left out; one that died gets a note saying so, and one whose
 * `measure` throws gets the error as its note, so a failing peer costs its row, not the run.
 */
export async function inRotation<P extends { exited(): boolean; stderr(): string }, K>(
  procs: readonly P[],
  rounds: number,
  notes: Map<K, string>,
  key: (p: P) => K,
  checkAborted: () => void,
  measure: (p: P) => Promise<void>,
): Promise<void> {
  for (let round = 0; round < rounds; round++) {
    for (let k = 0; k < procs.length; k++) {
      const p = procs[(k + round) % procs.length]!;
      checkAborted();
      if (notes.has(key(p))) continue;
      if (p.exited()) {
        notes.set(key(p), `died: ${firstLines(p.stderr()) || 'no stderr'}`);
        continue;
      }
      try {
        await measure(p);
      } catch (e) {
        notes.set(key(p), (e as Error).message);
      }
    }
  }
}

// ---------------------------------------------------------------------------------------
// Child processes

/** Every child still alive (per bench), so an error or an interrupt can end them all. */
export interface ChildTracker {
  live: Set<ChildProcess>;
  track(child: ChildProcess): void;
  killAllNow(): void;
}

export function childTracker(): ChildTracker {
  const live = new Set<ChildProcess>();
  return {
    live,
    track(child: ChildProcess): void {
      live.add(child);
      child.once('exit', () => live.delete(child));
    },
    killAllNow(): void {
      for (const child of live) {
        try {
          child.kill('SIGKILL');
        } catch {
          // already gone
        }
      }
    },
  };
}

/**
 * Installs SIGINT/SIGTERM handlers (and a process `exit` hook) that end every tracked child,
 * run `cleanup`, reap the children (up to 1 s) and re-raise the signal. `checkAborted` throws
 * once a signal came; `dispose` removes the handlers.
 */
export function abortOnSignals(children: ChildTracker, cleanup: () => void): { checkAborted(): void; dispose(): void } {
  const { live, killAllNow } = children;
  let aborted = false;
  const onSignal = (signal: NodeJS.Signals): void => {
    aborted = true;
    process.off('SIGINT', onSignal);
    process.off('SIGTERM', onSignal);
    process.on(signal, () => {}); // a second ^C while reaping is ignored
    killAllNow();
    cleanup();
    const all = [...live];
    const reap = Promise.all(all.map((c) => (c.exitCode === null && c.signalCode === null ? once(c, 'exit') : null)));
    void Promise.race([reap, sleep(1000)]).then(() => {
      process.removeAllListeners(signal);
      process.kill(process.pid, signal);
    });
  };
  process.on('SIGINT', onSignal);
  process.on('SIGTERM', onSignal);
  process.on('exit', killAllNow);
  return {
    checkAborted(): void {
      if (aborted) throw new Error('interrupted');
    },
    dispose(): void {
      process.off('SIGINT', onSignal);
      process.off('SIGTERM', onSignal);
      process.off('exit', killAllNow);
    },
  };
}

/** SIGTERM, then SIGKILL after 2 s; resolves when the child is gone. */
export async function stopChild(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const gone = once(child, 'exit');
  child.kill('SIGTERM');
  const timer = setTimeout(() => child.kill('SIGKILL'), 2000);
  await gone;
  clearTimeout(timer);
}

/** A child program that printed `PORT <n>`; see {@link spawnListening}. */
export interface ListeningChild {
  child: ChildProcess;
  pid: number;
  port: number;
  /** The last 4,000 characters it wrote to stderr. */
  stderr: () => string;
  exited: () => boolean;
}

/**
 * Spawns `argv` (already pinned, see load.ts `pinned`) and resolves once it prints
 * `PORT <n>` on stdout; rejects with a one-line reason when it exits first or stays silent
 * for 20 s. `track` registers the child for cleanup.
 */
export function spawnListening(argv: string[], cwd: string, env: NodeJS.ProcessEnv, track: (child: ChildProcess) => void): Promise<ListeningChild> {
  const [cmd, ...args] = argv;
  const child = spawn(cmd as string, args, { cwd, env, stdio: ['pipe', 'pipe', 'pipe'] });
  track(child);
  let err = '';
  let exited = false;
  child.stderr?.setEncoding('utf8').on('data', (s: string) => {
    err = (err + s).slice(-4000);
  });
  child.stdin?.on('error', () => {});
  return new Promise((resolve, reject) => {
    let out = '';
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`did not print "PORT <n>" within 20 s${err ? `: ${firstLines(err)}` : ''}`));
    }, 20_000);
    child.once('error', (e) => {
      clearTimeout(timer);
      reject(e);
    });
    child.once('exit', (code, signal) => {
      exited = true;
      clearTimeout(timer);
      reject(new Error(`exited (${signal ?? `status ${code}`}) before listening${err ? `: ${firstLines(err)}` : ''}`));
    });
    child.stdout?.setEncoding('utf8').on('data', (s: string) => {
      out += s;
      const m = /^PORT (\d+)$/m.exec(out);
      if (!m) return;
      clearTimeout(timer);
      resolve({ child, pid: child.pid as number, port: Number(m[1]), stderr: () => err, exited: () => exited });
    });
  });
}

// ---------------------------------------------------------------------------------------
// Precompiling the programs

/** Minimal view of esbuild's JS API (loaded dynamically: it is a dependency of tsup/tsx). */
interface Esbuild {
  build(options: Record<string, unknown>): Promise<unknown>;
  stop?(): void | Promise<void>;
}

/** argv after `node` for a program, or why it cannot run. */
export type Launch = { argv: string[] } | { error: string };

/** A program to prepare: its key in the result, its source, and its output file name. */
export interface LaunchEntry {
  key: string;
  source: string;
  outName: string;
}

/**
 * Precompiles the programs with esbuild into `dir` (inside node_modules/.cache so the output
 * resolves the project's npm packages). A program that fails to build gets an error instead.
 * Without esbuild (or `runner: 'tsx'`) they run with `node --import tsx`; `what` names them
 * in the note saying so.
 */
export async function prepareLaunches(
  entries: LaunchEntry[],
  runner: 'esbuild' | 'tsx',
  dir: string | null,
  opts: { sourcemap: 'external' | false; what: string },
): Promise<{ launches: Map<string, Launch>; runner: 'esbuild' | 'tsx'; note?: string }> {
  const launches = new Map<string, Launch>();
  let esbuild: Esbuild | null = null;
  let note: string | undefined;
  if (runner === 'esbuild' && dir) {
    try {
      const name = 'esbuild';
      esbuild = (await import(name)) as Esbuild;
    } catch (e) {
      note = `esbuild unavailable (${(e as Error).message.split('\n')[0]}); running the ${opts.what} with node --import tsx`;
    }
  }
  if (!esbuild || !dir) {
    for (const e of entries) launches.set(e.key, { argv: ['--import', 'tsx', e.source] });
    return { launches, runner: 'tsx', ...(note ? { note } : {}) };
  }
  await Promise.all(
    entries.map(async (entry) => {
      const outfile = join(dir, entry.outName);
      try {
        await esbuild.build({
          entryPoints: [entry.source],
          outfile,
          bundle: true,
          packages: 'external',
          platform: 'node',
          format: 'esm',
          target: 'node20',
          sourcemap: opts.sourcemap,
          logLevel: 'silent',
        });
        launches.set(entry.key, { argv: [outfile] });
      } catch (e) {
        const errors = (e as { errors?: { text: string; location?: { file: string; line: number } | null }[] }).errors;
        const why = errors?.length
          ? errors
              .slice(0, 2)
              .map((x) => `${x.location ? `${x.location.file}:${x.location.line}: ` : ''}${x.text}`)
              .join(' | ')
          : (e as Error).message;
        launches.set(entry.key, { error: `does not build: ${why}` });
      }
    }),
  );
  await esbuild.stop?.(); // ends its service process
  return { launches, runner: 'esbuild' };
}

const ROOT = join(fileURLToPath(import.meta.url), '..', '..');

/**
 * Where the single-file benches keep their precompiled programs (resolves the project's
 * packages). One directory per checkout: worktrees that share one node_modules would otherwise
 * overwrite each other's programs, and a bench would spawn children built from another tree.
 */
const BENCH_CACHE = join(ROOT, 'node_modules', '.cache', 'switchyard-bench', createHash('sha256').update(ROOT).digest('hex').slice(0, 12));

/**
 * One program (a bench file running itself in child roles) precompiled into the bench cache as
 * `outName`, as {@link prepareLaunches} does; without esbuild it runs through tsx. `note` says
 * so when it does.
 */
export async function prepareProgram(source: string, outName: string, what: string): Promise<{ launch: Launch; runner: 'esbuild' | 'tsx'; note?: string }> {
  const prepared = await prepareLaunches([{ key: 'p', source, outName }], 'esbuild', BENCH_CACHE, { sourcemap: false, what });
  const launch = prepared.launches.get('p') ?? { argv: ['--import', 'tsx', source] };
  return { launch, runner: prepared.runner, ...(prepared.note !== undefined ? { note: prepared.note } : {}) };
}

// ---------------------------------------------------------------------------------------
// Figures and formatting

/**
 * Ratio of `row` to `base`: the median of per-round ratios when both have all `runs` rounds
 * (runs of one round are seconds apart, so drift moves both sides alike), else the ratio of
 * the medians; NaN without a base.
 */
export function pairedRatio(row: { runs: number[]; reqPerSec: number }, base: { runs: number[]; reqPerSec: number } | undefined, runs: number): number {
  if (!base) return NaN;
  if (row.runs.length === runs && base.runs.length === runs) {
    return median(row.runs.map((v, i) => v / (base.runs[i] as number)));
  }
  return row.reqPerSec / base.reqPerSec;
}

/** Largest max/min ratio of the runs of any row (1 with fewer than two runs). */
export function runSpread(rows: { runs: number[] }[]): number {
  return Math.max(...rows.map((r) => (r.runs.length > 1 ? Math.max(...r.runs) / Math.min(...r.runs) : 1)));
}

export function fmtInt(n: number): string {
  return Number.isFinite(n) ? Math.round(n).toLocaleString('en-US') : '-';
}

export function fmtK(n: number): string {
  if (!Number.isFinite(n)) return '-';
  return n >= 10_000 ? `${(n / 1000).toFixed(1)}k` : n.toFixed(0);
}

export function fmtRatio(r: number): string {
  return Number.isFinite(r) ? `${r.toFixed(2)}x` : 'n/a';
}

/**
 * Prints rows as an aligned table through `log`; the first column is left-aligned, the rest
 * right. `trimEnd` drops trailing spaces of each row.
 */
export function printTable(head: string[], rows: string[][], log: (s: string) => void, trimEnd: boolean): void {
  const widths = head.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? '').length)));
  const line = (cells: string[]): string => {
    const s = cells.map((c, i) => (i === 0 ? c.padEnd(widths[i] ?? 0) : c.padStart(widths[i] ?? 0))).join('  ');
    return trimEnd ? s.trimEnd() : s;
  };
  log(line(head));
  log(widths.map((w) => '-'.repeat(w)).join('  '));
  for (const r of rows) log(line(r));
}
