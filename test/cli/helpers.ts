/**
 * Helpers of the CLI tests: run the real binary (`node bin/switchyard.js …`) as a child
 * process and collect its output and exit code; start a long-running command (`serve`, `ws`)
 * and read its lines as they come; temp directories removed after the test.
 *
 * Importing this module registers an `afterEach` that kills every child still running and
 * removes the temp directories.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach } from 'vitest';
import { cleanEnv } from '../helpers/peers.js';

/** The binary under test. */
export const BIN = fileURLToPath(new URL('../../bin/switchyard.js', import.meta.url));

const children = new Set<ChildProcess>();
const dirs: string[] = [];

afterEach(async () => {
  const all = [...children];
  children.clear();
  await Promise.all(
    all.map(
      (c) =>
        new Promise<void>((resolve) => {
          if (c.exitCode !== null || c.signalCode !== null) return resolve();
          c.once('exit', () => resolve());
          c.kill('SIGKILL');
        }),
    ),
  );
  for (const d of dirs.splice(0)) await rm(d, { recursive: true, force: true });
});

/** A temp directory, removed after the test. */
export async function tempDir(): Promise<string> {
  const d = await mkdtemp(join(tmpdir(), 'swy-cli-'));
  dirs.push(d);
  return d;
}

/** What a finished command gave. */
export interface CliResult {
  code: number | null;
  signal: string | null;
  stdout: Buffer;
  stderr: string;
  /** stdout as UTF-8. */
  out: string;
}

/** Options of {@link runCli}. */
export interface RunOptions {
  /** Written to stdin, which is then closed; stdin is empty otherwise. */
  stdin?: string | Uint8Array;
  cwd?: string;
  env?: NodeJS.ProcessEnv;
}

/** Runs `switchyard …args` to its end. */
export function runCli(args: readonly string[], options: RunOptions = {}): Promise<CliResult> {
  return runCommand(process.execPath, [BIN, ...args], options);
}

/** Runs any command to its end (used to wrap the binary in `script` for a terminal). */
export function runCommand(cmd: string, args: readonly string[], options: RunOptions = {}): Promise<CliResult> {
  const child = spawn(cmd, args, { cwd: options.cwd, env: options.env ?? cleanEnv(), stdio: ['pipe', 'pipe', 'pipe'] });
  children.add(child);
  const out: Buffer[] = [];
  const err: Buffer[] = [];
  child.stdout.on('data', (c: Buffer) => out.push(c));
  child.stderr.on('data', (c: Buffer) => err.push(c));
  child.stdin.on('error', () => undefined);
  child.stdin.end(options.stdin ?? '');
  return new Promise((resolve, reject) => {
    child.once('error', reject);
    child.once('close', (code, signal) => {
      children.delete(child);
      const stdout = Buffer.concat(out);
      resolve({ code, signal, stdout, stderr: Buffer.concat(err).toString(), out: stdout.toString() });
    });
  });
}

/** A command left running: its output so far, a wait for a line, and its end. */
export interface Running {
  child: ChildProcess;
  stdout: () => string;
  stderr: () => string;
  /** Resolves with the first stdout line matching `re` (its match); rejects when the command exits first or `ms` pass. */
  waitLine(re: RegExp, ms?: number): Promise<RegExpMatchArray>;
  /** Resolves with the exit code (or signal name). */
  exited: Promise<number | string>;
  /** Writes to stdin. */
  write(text: string): void;
}

/** Starts `switchyard …args` and returns at once (for `serve` and `ws`). Killed after the test if still running. */
export function startCli(args: readonly string[], options: Omit<RunOptions, 'stdin'> = {}): Running {
  const child = spawn(process.execPath, [BIN, ...args], { cwd: options.cwd, env: options.env ?? cleanEnv(), stdio: ['pipe', 'pipe', 'pipe'] });
  children.add(child);
  let out = '';
  let err = '';
  const waiters = new Set<() => void>();
  child.stdout.setEncoding('utf8');
  child.stderr.setEncoding('utf8');
  child.stdout.on('data', (c: string) => {
    out += c;
    for (const w of waiters) w();
  });
  child.stderr.on('data', (c: string) => {
    err += c;
  });
  child.stdin.on('error', () => undefined);
  const exited = new Promise<number | string>((resolve) => {
    child.once('exit', (code, signal) => {
      resolve(code ?? signal ?? -1);
      for (const w of waiters) w();
    });
  });
  return {
    child,
    stdout: () => out,
    stderr: () => err,
    exited,
    write: (text) => child.stdin.write(text),
    waitLine: (re, ms = 10_000) =>
      new Promise((resolve, reject) => {
        const check = (): void => {
          for (const line of out.split('\n')) {
            const m = re.exec(line);
            if (m !== null) {
              done();
              return resolve(m);
            }
          }
          if (child.exitCode !== null || child.signalCode !== null) {
            done();
            reject(new Error(`the command exited (${child.exitCode ?? child.signalCode}) before printing ${re}: stdout ${JSON.stringify(out)} stderr ${JSON.stringify(err)}`));
          }
        };
        const t = setTimeout(() => {
          done();
          reject(new Error(`no line matching ${re} within ${ms} ms: stdout ${JSON.stringify(out)} stderr ${JSON.stringify(err)}`));
        }, ms);
        const done = (): void => {
          clearTimeout(t);
          waiters.delete(check);
        };
        waiters.add(check);
        check();
      }),
  };
}

/** What an in-process run of `main()` gave. */
export interface MainResult {
  code: number;
  out: string;
  stdout: Buffer;
  stderr: string;
}

/** Options of {@link runMain}. */
export interface MainOptions {
  /** Standard input's content (empty by default). */
  stdin?: string;
  /** Make stderr look like a terminal of this many columns (for the progress bar). */
  ttyColumns?: number;
}

/**
 * Runs the command line in this process through `main()` with captured streams: the same
 * code as the binary minus the process start, for the checks that need no real process.
 */
export async function runMain(args: readonly string[], options: MainOptions = {}): Promise<MainResult> {
  const { PassThrough } = await import('node:stream');
  const { main } = await import('../../cli/main.js');
  const stdout = new PassThrough();
  const stderr = new PassThrough();
  if (options.ttyColumns !== undefined) Object.assign(stderr, { isTTY: true, columns: options.ttyColumns });
  const out: Buffer[] = [];
  let err = '';
  stdout.on('data', (c: Buffer) => out.push(c));
  stderr.on('data', (c: Buffer) => (err += c.toString()));
  const stdin = new PassThrough();
  stdin.end(options.stdin ?? '');
  const code = await main(args, { stdin, stdout, stderr, env: {}, waitForInterrupt: () => new Promise<void>(() => undefined) });
  const buf = Buffer.concat(out);
  return { code, out: buf.toString(), stdout: buf, stderr: err };
}
