/**
 * Load-generator helpers for bench/server.ts: running and parsing `wrk`, the pipelining Lua
 * script, CPU pinning with `taskset`, reading a process's resident memory from /proc, and
 * holding many idle keep-alive connections open.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { writeFile } from 'node:fs/promises';
import { connect, type Socket } from 'node:net';
import { join } from 'node:path';

/** True when `taskset -c <cpu>` works here (installed, and the core exists). */
export function tasksetUsable(cpu: number): boolean {
  const r = spawnSync('taskset', ['-c', String(cpu), 'true'], { stdio: 'ignore' });
  return r.status === 0;
}

/** `wrk`'s version line, or null when wrk is not installed. */
export function wrkVersion(): string | null {
  const r = spawnSync('wrk', ['-v'], { encoding: 'utf8' });
  if (r.error) return null;
  const line = `${r.stdout}${r.stderr}`.split('\n')[0]?.trim() ?? '';
  return line.startsWith('wrk') ? line : null;
}

/** Prefixes `argv` with `taskset -c <cpu>` when pinning is on (cpu not null). */
export function pinned(cpu: number | null, argv: string[]): string[] {
  return cpu === null ? argv : ['taskset', '-c', String(cpu), ...argv];
}

/**
 * Writes the standard wrk pipelining script: `init` concatenates `depth` copies of
 * `wrk.format()` once, `request` returns that string, so each write carries `depth` requests
 * (wrk counts them and waits for as many responses before writing again).
 */
export async function writePipelineScript(dir: string, depth: number): Promise<string> {
  const file = join(dir, `pipeline-${depth}.lua`);
  const lua = [
    `-- switchyard bench: HTTP/1.1 pipelining, ${depth} requests per write`,
    'local req',
    'init = function(args)',
    '  local r = {}',
    `  for i = 1, ${depth} do r[i] = wrk.format() end`,
    '  req = table.concat(r)',
    'end',
    'request = function()',
    '  return req',
    'end',
    '',
  ].join('\n');
  await writeFile(file, lua);
  return file;
}

/** Options of one wrk run. */
export interface WrkOptions {
  url: string;
  connections: number;
  threads?: number;
  /** Seconds. */
  duration: number;
  /** Lua script path (`-s`). */
  script?: string;
  /** Core to pin wrk to, or null for unpinned. */
  cpu: number | null;
}

/** What one wrk run reported. */
export interface WrkResult {
  requestsPerSec: number;
  /** Bytes/s read by wrk (heads and bodies), from "Transfer/sec". */
  bytesPerSec: number;
  requests: number;
  /** Socket errors (connect + read + write + timeout) plus non-2xx/3xx responses. */
  errors: number;
  raw: string;
}

/** The argv of a wrk run (pinned when opts.cpu is set). */
export function wrkArgv(opts: WrkOptions): string[] {
  const argv = ['wrk', `-t${opts.threads ?? 1}`, `-c${opts.connections}`, `-d${opts.duration}s`];
  if (opts.script) argv.push('-s', opts.script);
  argv.push(opts.url);
  return pinned(opts.cpu, argv);
}

const UNITS: Record<string, number> = { '': 1, K: 1e3, M: 1e6, G: 1e9, B: 1, KB: 1024, MB: 1024 ** 2, GB: 1024 ** 3, TB: 1024 ** 4 };

function num(text: string, re: RegExp): number {
  const m = re.exec(text);
  if (!m || m[1] === undefined) return NaN;
  return Number(m[1]) * (UNITS[m[2] ?? ''] ?? 1);
}

/** Parses wrk's text report. */
export function parseWrk(raw: string): WrkResult {
  const socketErrors = /Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)/.exec(raw);
  let errors = 0;
  if (socketErrors) for (let i = 1; i <= 4; i++) errors += Number(socketErrors[i]);
  const non2xx = /Non-2xx or 3xx responses: (\d+)/.exec(raw);
  if (non2xx) errors += Number(non2xx[1]);
  return {
    requestsPerSec: num(raw, /Requests\/sec:\s+([\d.]+)/),
    bytesPerSec: num(raw, /Transfer\/sec:\s+([\d.]+)(B|KB|MB|GB|TB)/),
    requests: num(raw, /(\d+) requests in/),
    errors,
    raw,
  };
}

/**
 * Runs wrk to completion. `track` receives the child so the caller can kill it on an
 * interrupt; a run that overstays its duration by 15 s is killed.
 */
export function runWrk(opts: WrkOptions, track?: (child: ChildProcess | null) => void): Promise<WrkResult> {
  const [cmd, ...args] = wrkArgv(opts);
  return new Promise((resolve, reject) => {
    const child = spawn(cmd as string, args, { stdio: ['ignore', 'pipe', 'pipe'] });
    track?.(child);
    let out = '';
    let err = '';
    child.stdout.setEncoding('utf8').on('data', (s: string) => (out += s));
    child.stderr.setEncoding('utf8').on('data', (s: string) => (err += s));
    const timer = setTimeout(() => child.kill('SIGKILL'), (opts.duration + 15) * 1000);
    child.on('error', (e) => {
      clearTimeout(timer);
      track?.(null);
      reject(e);
    });
    child.on('close', (code, signal) => {
      clearTimeout(timer);
      track?.(null);
      const result = parseWrk(out);
      if (code !== 0 || !Number.isFinite(result.requestsPerSec)) {
        reject(new Error(`wrk failed (${signal ?? `exit ${code}`}): ${(err || out).trim().slice(0, 500)}`));
      } else {
        resolve(result);
      }
    });
  });
}

/** CPU time (user + system) of a process so far, ms; NaN when /proc is unavailable. */
export function procCpuMs(pid: number): number {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    // Fields 14 and 15 of stat (utime, stime) are 11 and 12 after the command name; clock ticks of 10 ms.
    return (Number(f[11]) + Number(f[12])) * 10;
  } catch {
    return NaN;
  }
}

/** Resident memory of a process in bytes: current (VmRSS) and peak (VmHWM). */
export interface Rss {
  rss: number;
  peak: number;
}

/** Reads VmRSS/VmHWM of `pid` from /proc (Linux); NaN when unavailable. */
export function readRss(pid: number): Rss {
  try {
    const status = readFileSync(`/proc/${pid}/status`, 'utf8');
    const kb = (key: string): number => {
      const m = new RegExp(`^${key}:\\s+(\\d+) kB`, 'm').exec(status);
      return m ? Number(m[1]) * 1024 : NaN;
    };
    return { rss: kb('VmRSS'), peak: kb('VmHWM') };
  } catch {
    return { rss: NaN, peak: NaN };
  }
}

/**
 * Resolves once `socket` has delivered one whole response (Content-Length framing, which every
 * bench server uses); rejects if it errors or closes first.
 */
function awaitResponse(socket: Socket): Promise<void> {
  return new Promise((resolve, reject) => {
    let got: Buffer = Buffer.alloc(0);
    const done = (e?: Error): void => {
      socket.off('data', onData);
      socket.off('close', onClose);
      socket.off('error', done);
      if (e) reject(e);
      else resolve();
    };
    const onClose = (): void => done(new Error('connection closed before its response'));
    const onData = (chunk: Buffer): void => {
      got = got.length === 0 ? chunk : Buffer.concat([got, chunk]);
      const end = got.indexOf('\r\n\r\n');
      if (end < 0) return;
      const m = /\r\ncontent-length:\s*(\d+)/i.exec(got.subarray(0, end).toString('latin1'));
      if (!m) return done(new Error('response without Content-Length'));
      if (got.length >= end + 4 + Number(m[1])) done();
    };
    socket.on('data', onData);
    socket.once('close', onClose);
    socket.once('error', done);
  });
}

function requestHead(host: string, port: number): Buffer {
  return Buffer.from(`GET / HTTP/1.1\r\nHost: ${host}:${port}\r\n\r\n`, 'latin1');
}

function connected(host: string, port: number): Promise<Socket> {
  return new Promise((resolve, reject) => {
    const socket = connect({ host, port, noDelay: true });
    socket.once('connect', () => {
      socket.off('error', reject);
      resolve(socket);
    });
    socket.once('error', reject);
  });
}

/** A set of idle keep-alive connections, each having completed one request. */
export interface IdleConnections {
  /** How many are still open. */
  open(): number;
  /** Destroys them all. */
  close(): void;
}

/**
 * Opens `count` connections to host:port (`batch` at a time, so the listen backlog never
 * overflows), sends one GET on each, waits for its whole response, and leaves the connection
 * open and idle.
 */
export async function openIdleConnections(host: string, port: number, count: number, batch = 100): Promise<IdleConnections> {
  const sockets: Socket[] = [];
  let open = 0;
  const request = requestHead(host, port);
  const one = async (): Promise<void> => {
    const socket = await connected(host, port);
    sockets.push(socket);
    open++;
    socket.once('close', () => open--);
    socket.on('error', () => {}); // a late reset (server gone) is seen as a close
    const response = awaitResponse(socket);
    socket.write(request);
    await response;
    socket.resume(); // keep draining, should anything more arrive
  };
  try {
    for (let i = 0; i < count; i += batch) {
      await Promise.all(Array.from({ length: Math.min(batch, count - i) }, one));
    }
  } catch (e) {
    for (const s of sockets) s.destroy();
    throw e;
  }
  return {
    open: () => open,
    close: () => {
      for (const s of sockets) s.destroy();
    },
  };
}

/** Sends `n` sequential keep-alive GETs over one connection (a tiny warm-up). */
export async function sequentialRequests(host: string, port: number, n: number): Promise<void> {
  const socket = await connected(host, port);
  try {
    const request = requestHead(host, port);
    for (let i = 0; i < n; i++) {
      const response = awaitResponse(socket);
      socket.write(request);
      await response;
    }
  } finally {
    socket.destroy();
  }
}

/** Median of numbers (NaN for none). */
export function median(xs: number[]): number {
  const s = xs.filter((x) => Number.isFinite(x)).sort((a, b) => a - b);
  if (s.length === 0) return NaN;
  const mid = s.length >> 1;
  return s.length % 2 ? (s[mid] as number) : ((s[mid - 1] as number) + (s[mid] as number)) / 2;
}
