/**
 * The `workers` option of `serve`, `listen` and `serveFetch`: one server per core on
 * node:cluster. The program's entry runs again in each worker (cluster forks
 * `process.argv[1]` with the same `execArgv`), and there the same `serve(...)` call starts an
 * ordinary server on the port the workers share. In the primary, that call starts the workers
 * and resolves to a {@link WorkerPool}, which restarts a worker that dies, replaces them one
 * at a time on `reload()` or SIGHUP, and drains them all on `close()`.
 *
 * Primary and workers speak through cluster's IPC channel, in messages tagged `switchyard`:
 * a worker reports `listening` (or `failed`, with the reason its server did not start), and
 * is told to `drain` (its server's `shutdown()`); `forceClose()` kills the workers outright. A
 * worker whose server is closed disconnects from the primary and ends once nothing else holds it.
 */
import cluster, { type Worker } from 'node:cluster';
import net from 'node:net';
import os from 'node:os';
import process from 'node:process';
import { ArgumentError, WorkerStartError } from '../errors.js';
import { describe } from '../describe.js';
import { checkSignals } from './drain.js';
import { resolveServerOptions, type ResolvedServerOptions } from './options.js';
import type { Server, ServerInit } from './server.js';

/** How many workers: a whole number, or `'auto'` for one per core (`os.availableParallelism()`). */
export type WorkerCount = number | 'auto';

/** A bound well above any machine's cores: a typo such as 100000 is refused, not forked. */
const MAX_WORKERS = 1024;

/** The primary's bound address and port, handed to each worker so all bind the same one (a port 0 is chosen once). */
const HOST_ENV = 'SWITCHYARD_WORKER_HOST';
const PORT_ENV = 'SWITCHYARD_WORKER_PORT';

/** First delay before a dead worker is replaced, ms; it doubles with each death in a row, up to {@link RESTART_MAX_MS}. */
const RESTART_MIN_MS = 100;
const RESTART_MAX_MS = 10_000;
/** A worker that served this long before it died starts the backoff afresh: its death is not part of a crash loop. */
const STABLE_MS = 10_000;
/**
 * Workers in a row that exit before they listen (the program throws at start, the port is
 * taken) before the pool gives up: past a few, another try only repeats the same error.
 */
const MAX_START_FAILURES = 5;
/** A worker that has not listened this long after its fork is killed (and counts as failing to start). */
const START_TIMEOUT_MS = 30_000;
/** How long a worker whose server closed may take to end before it is killed (something else of the program holds it). */
const EXIT_AFTER_CLOSE_MS = 5_000;

/** A message between primary and worker; `switchyard` tells it from the program's own messages. */
type Message = { switchyard: 'listening'; port: number } | { switchyard: 'failed'; message: string } | { switchyard: 'drain' };

function tagOf(m: unknown): Message['switchyard'] | null {
  return typeof m === 'object' && m !== null && 'switchyard' in m ? (m as Message).switchyard : null;
}

/** @internal Checks the `workers` option; the number of workers to run. */
export function workerCount(v: unknown): number {
  if (v === 'auto') return Math.min(os.availableParallelism(), MAX_WORKERS);
  if (typeof v !== 'number' || !Number.isInteger(v) || v < 1 || v > MAX_WORKERS) {
    throw new ArgumentError(`workers must be a whole number from 1 to ${MAX_WORKERS}, or 'auto' (one per core), got ${describe(v)}`);
  }
  return v;
}

/** What `serve`/`listen` pass on: their options, `workers` and `workerLog` included. */
type WorkersInit = Omit<ServerInit, 'handler' | 'stream'> & { workers?: unknown; workerLog?: unknown };

/** What `serve`/`listen` start in one process: the options without `workers`, to a listening server. */
type Start = (options: Omit<ServerInit, 'handler' | 'stream'>) => Promise<Server>;

/**
 * @internal `serve`/`listen` with `workers`: in the primary, checks the options (once, not in
 * each worker) and starts the pool; in a worker of the pool, the ordinary server.
 */
export function serveWorkers(options: WorkersInit, stream: boolean, start: Start): Promise<Server | WorkerPool> {
  const count = workerCount(options.workers);
  const { workers: _workers, workerLog, kernel, onError, ...serverOptions } = options;
  if (workerLog !== undefined && typeof workerLog !== 'function') throw new ArgumentError(`workerLog must be a function (line: string) => void, got ${describe(workerLog)}`);
  if (serverOptions.listener !== undefined) {
    throw new ArgumentError('workers cannot be combined with listener: each worker binds the port itself; pass host and port (or address)');
  }
  if (cluster.isWorker) {
    if (process.env[PORT_ENV] === undefined) {
      throw new ArgumentError('workers: this process is a worker of a cluster the program runs itself; serve without workers here');
    }
    return serveAsWorker(options, start);
  }
  const resolved = resolveServerOptions(serverOptions, stream, kernel ?? null);
  if (resolved.signals.includes('SIGHUP')) throw new ArgumentError('signals: SIGHUP reloads the workers when workers is set; list the signals that stop the server (such as SIGTERM)');
  return WorkerPool.start(count, resolved, (workerLog as ((line: string) => void) | undefined) ?? toStderr);
}

/** In a worker: the server on the primary's address, its drain and its end driven by the primary. */
async function serveAsWorker(options: WorkersInit, start: Start): Promise<Server> {
  const worker = cluster.worker!;
  const { workers: _workers, workerLog: _workerLog, signals, address: _address, listenAny: _listenAny, ...rest } = options;
  // A signal sent to the whole process group (Ctrl-C, systemd's stop) reaches the workers too:
  // the primary drains them, so here it must not end the process under its requests.
  const ignored = checkSignals(signals);
  for (const s of ignored) process.on(s, ignore);
  let server: Server;
  try {
    server = await start({ ...rest, host: process.env[HOST_ENV]!, port: Number(process.env[PORT_ENV]) });
  } catch (err) {
    for (const sig of ignored) process.removeListener(sig, ignore);
    send(worker, { switchyard: 'failed', message: err instanceof Error ? err.message : String(err) });
    throw err;
  }
  const s = server;
  const onMessage = (m: unknown): void => {
    if (tagOf(m) === 'drain') void s.shutdown();
  };
  worker.on('message', onMessage);
  void s.wait().then(() => {
    worker.removeListener('message', onMessage);
    for (const sig of ignored) process.removeListener(sig, ignore);
    if (worker.isConnected()) worker.disconnect();
  });
  send(worker, { switchyard: 'listening', port: s.port });
  return s;
}

function ignore(): void {}

function send(to: Worker, m: Message): void {
  // A peer that is gone cannot be told anything; its exit is handled where it is seen.
  if (to.isConnected()) to.send(m, undefined, ignoreError);
}

function ignoreError(): void {}

/** Where the primary's lines go unless `workerLog` says otherwise. */
function toStderr(line: string): void {
  process.stderr.write(`${line}\n`);
}

/** The primary's record of one worker. */
interface Member {
  readonly worker: Worker;
  readonly pid: number;
  /** When it reported listening (0: not yet). */
  since: number;
  /** Told to drain (close, reload): its exit is expected. */
  retiring: boolean;
  /** A reload's new worker: if it fails to start, the reload stops (the old workers keep serving) instead of a restart. */
  replacing: boolean;
  /** Why it did not start, when its server said so. */
  failure: string | null;
  readonly listening: Promise<void>;
  readonly exited: Promise<void>;
  onListening: () => void;
  onStartFailed: (err: Error) => void;
  onExit: () => void;
  timer: NodeJS.Timeout | null;
}

type PoolState = 'starting' | 'running' | 'closing' | 'closed';

/**
 * The primary's side of a server with `workers`: what `serve`/`listen`/`serveFetch` resolve
 * to in the cluster's primary process (in a worker they resolve to the worker's `Server`).
 * `port`, `close()`, `forceClose()` and `wait()` are a `Server`'s; `reload()` (and SIGHUP)
 * replaces every worker, one at a time, each new one listening before the old one drains.
 */
export class WorkerPool {
  private readonly opts: ResolvedServerOptions;
  private readonly count: number;
  private state: PoolState = 'starting';
  private readonly members = new Set<Member>();
  private readonly restartTimers = new Set<NodeJS.Timeout>();
  /** Unexpected exits in a row (reset by a worker that served {@link STABLE_MS}): the backoff's exponent. */
  private deaths = 0;
  /** Workers in a row that exited before they listened. */
  private startFailures = 0;
  private reloading: Promise<void> | null = null;
  private readonly boundHost: string;
  private readonly boundPort: number;
  private readonly started: Promise<void>;
  private resolveStarted!: () => void;
  private rejectStarted!: (err: Error) => void;
  private readonly closed: Promise<void>;
  private resolveClosed!: () => void;
  private rejectClosed!: (err: Error) => void;
  /** Set when the pool gave up: `wait()` rejects with it. */
  private failure: Error | null = null;
  private readonly unwatch: () => void;
  private readonly logTo: (line: string) => void;

  private constructor(count: number, opts: ResolvedServerOptions, port: number, log: (line: string) => void) {
    this.count = count;
    this.logTo = log;
    this.opts = opts;
    this.boundHost = opts.host;
    this.boundPort = port;
    this.started = new Promise((resolve, reject) => {
      this.resolveStarted = resolve;
      this.rejectStarted = reject;
    });
    this.closed = new Promise((resolve, reject) => {
      this.resolveClosed = resolve;
      this.rejectClosed = reject;
    });
    // Rejected only after a give-up, which start() or the log already reported: not an unhandled rejection.
    this.closed.catch(ignore);
    this.unwatch = this.watchSignals();
  }

  /** @internal Starts `count` workers; resolves once all listen, rejects (having stopped them) when they cannot start. */
  static async start(count: number, opts: ResolvedServerOptions, log: (line: string) => void): Promise<WorkerPool> {
    const port = opts.port === 0 ? await freePort(opts.host) : opts.port;
    const pool = new WorkerPool(count, opts, port, log);
    for (let i = 0; i < count; i++) pool.spawn(false);
    await pool.started;
    return pool;
  }

  /** The port the workers share. */
  get port(): number {
    return this.boundPort;
  }

  /** The address the workers bind. */
  get address(): string {
    return this.boundHost;
  }

  /** The process ids of the workers that serve now (listening, not draining). */
  get pids(): number[] {
    const out: number[] = [];
    for (const m of this.members) if (m.since > 0 && !m.retiring) out.push(m.pid);
    return out;
  }

  /** True from the start until `close()`/`forceClose()` (or a give-up). */
  get listening(): boolean {
    return this.state === 'running' || this.state === 'starting';
  }

  /**
   * Replaces every worker, one at a time: a new worker is forked and listening before an old
   * one is told to drain (its server's `shutdown()`: requests in flight finish, kept-alive
   * connections get `Connection: close`, HTTP/2 sessions GOAWAY, streams and WebSockets
   * `closeGracePeriod`). Resolves once every old worker has ended; a reload asked while one
   * runs is that one. If a new worker fails to start (a mistake in the new code), the reload
   * stops there and rejects with `WorkerStartError`; the old workers not yet replaced keep serving.
   */
  reload(): Promise<void> {
    if (this.state !== 'running') return Promise.reject(new ArgumentError(`reload(): the workers are ${this.state}`));
    this.reloading ??= this.replaceAll().finally(() => {
      this.reloading = null;
    });
    return this.reloading;
  }

  private async replaceAll(): Promise<void> {
    const t0 = Date.now();
    const old = [...this.members].filter((m) => !m.retiring);
    this.log(`reloading ${old.length} worker${old.length === 1 ? '' : 's'} (pids ${old.map((m) => m.pid).join(', ')})`);
    const draining: Promise<void>[] = [];
    for (const m of old) {
      if (this.state !== 'running') break;
      if (!this.members.has(m) || m.retiring) continue;
      const fresh = this.spawn(true);
      try {
        await fresh.listening;
      } catch (err) {
        // Closing while it started ended it: the close, not the new code, stopped the reload.
        if (this.state !== 'running') return;
        this.log(`reload stopped: the new worker ${fresh.pid} did not start (${(err as Error).message}); the ${this.pids.length} workers serving keep serving`);
        throw err;
      }
      fresh.replacing = false;
      // Checked again: the old worker may have died while the new one started.
      if (this.members.has(m) && !m.retiring) draining.push(this.retire(m));
    }
    await Promise.all(draining);
    this.log(`reload done: ${draining.length} worker${draining.length === 1 ? '' : 's'} replaced in ${Date.now() - t0} ms`);
  }

  /**
   * Drains every worker (each server's `shutdown()`, bounded by `drainTimeout`) and resolves
   * once they have all ended; no worker is restarted meanwhile. Asked again, the same promise.
   */
  close(): Promise<void> {
    if (this.state === 'closing' || this.state === 'closed') return this.closed;
    this.beginClose();
    for (const m of this.members) if (!m.retiring) void this.retire(m);
    this.maybeClosed();
    return this.closed;
  }

  /** Ends every worker at once (SIGKILL), dropping what they serve; resolves once they have ended. */
  forceClose(): Promise<void> {
    if (this.state !== 'closed') this.beginClose();
    for (const m of this.members) m.worker.process.kill('SIGKILL');
    this.maybeClosed();
    return this.closed;
  }

  /** Resolves once every worker has ended after `close()`/`forceClose()`; rejects with `WorkerStartError` if the pool gave up starting workers. */
  wait(): Promise<void> {
    return this.closed;
  }

  private log(line: string): void {
    try {
      this.logTo(`switchyard: ${line}`);
    } catch {
      // A log function that throws must not stop the restarts.
    }
  }

  private beginClose(): void {
    if (this.state === 'starting') this.rejectStarted(new ArgumentError('the workers were closed before they all listened'));
    this.state = 'closing';
    for (const t of this.restartTimers) clearTimeout(t);
    this.restartTimers.clear();
  }

  private maybeClosed(): void {
    if (this.state !== 'closing' || this.members.size > 0) return;
    this.state = 'closed';
    this.unwatch();
    if (this.failure !== null) this.rejectClosed(this.failure);
    else this.resolveClosed();
  }

  /** SIGHUP reloads; the `signals` option's signals drain (the second one forces). */
  private watchSignals(): () => void {
    const onHup = (): void => {
      if (this.state === 'running') void this.reload().catch(ignore);
    };
    const onStop = (): void => {
      void (this.state === 'closing' ? this.forceClose() : this.close());
    };
    process.on('SIGHUP', onHup);
    for (const s of this.opts.signals) process.on(s, onStop);
    return () => {
      process.removeListener('SIGHUP', onHup);
      for (const s of this.opts.signals) process.removeListener(s, onStop);
    };
  }

  /** Forks a worker and tracks it until it ends. */
  private spawn(replacing: boolean): Member {
    const worker = cluster.fork({ [HOST_ENV]: this.boundHost, [PORT_ENV]: String(this.boundPort) });
    let onListening!: () => void;
    let onStartFailed!: (err: Error) => void;
    let onExit!: () => void;
    const listening = new Promise<void>((resolve, reject) => {
      onListening = resolve;
      onStartFailed = reject;
    });
    listening.catch(ignore);
    const exited = new Promise<void>((resolve) => (onExit = resolve));
    const m: Member = { worker, pid: worker.process.pid ?? 0, since: 0, retiring: false, replacing, failure: null, listening, exited, onListening, onStartFailed, onExit, timer: null };
    m.timer = setTimeout(() => {
      m.failure = `it did not listen within ${START_TIMEOUT_MS} ms`;
      worker.process.kill('SIGKILL');
    }, START_TIMEOUT_MS);
    this.members.add(m);
    worker.on('message', (msg: unknown) => {
      const tag = tagOf(msg);
      if (tag === 'listening') this.listened(m);
      else if (tag === 'failed') m.failure = (msg as { message: string }).message;
    });
    // The worker's server closed: it should end now; something of the program may hold it.
    worker.on('disconnect', () => {
      if (m.timer !== null) clearTimeout(m.timer);
      m.timer = setTimeout(() => {
        this.log(`worker ${m.pid} closed its server but did not end within ${EXIT_AFTER_CLOSE_MS} ms (something else of the program keeps it running); killing it`);
        worker.process.kill('SIGKILL');
      }, EXIT_AFTER_CLOSE_MS);
    });
    worker.on('error', ignore);
    worker.on('exit', (code: number | null, signal: NodeJS.Signals | null) => this.exited(m, code, signal));
    return m;
  }

  private listened(m: Member): void {
    if (m.since > 0) return;
    if (m.timer !== null) clearTimeout(m.timer);
    m.timer = null;
    m.since = Date.now();
    this.startFailures = 0;
    m.onListening();
    if (this.state === 'starting' && this.pids.length >= this.count) {
      this.state = 'running';
      this.resolveStarted();
    }
    // Closing began while it started: it drains like the others.
    if (this.state === 'closing' && !m.retiring) void this.retire(m);
  }

  /** Tells a worker to drain; resolves once it has ended (bounded by `drainTimeout`, after which it is killed). */
  private retire(m: Member): Promise<void> {
    m.retiring = true;
    if (m.since === 0) {
      // Not serving yet: nothing to drain.
      m.worker.process.kill('SIGKILL');
      return m.exited;
    }
    send(m.worker, { switchyard: 'drain' });
    const bound = this.opts.drainTimeout;
    if (bound > 0) {
      // The worker forces its own drain at drainTimeout; this is for a worker too busy to.
      const t = setTimeout(() => m.worker.process.kill('SIGKILL'), bound + EXIT_AFTER_CLOSE_MS);
      void m.exited.then(() => clearTimeout(t));
    }
    return m.exited;
  }

  private exited(m: Member, code: number | null, signal: NodeJS.Signals | null): void {
    if (m.timer !== null) clearTimeout(m.timer);
    this.members.delete(m);
    const how = signal !== null ? `signal ${signal}` : `exit code ${code}`;
    const started = m.since > 0;
    if (!started) m.onStartFailed(new WorkerStartError(`worker ${m.pid} ended (${how}) before it listened${m.failure !== null ? `: ${m.failure}` : ''}`, this.startFailures + 1));
    m.onExit();
    if (m.retiring || this.state === 'closing' || this.state === 'closed') {
      this.maybeClosed();
      return;
    }
    if (m.replacing && !started) return; // the reload reports it and stops
    if (!started) {
      this.startFailures++;
      if (this.startFailures >= MAX_START_FAILURES) {
        this.giveUp(`${this.startFailures} workers in a row ended before they listened (the last: ${how}${m.failure !== null ? `, ${m.failure}` : ''}); giving up: see the workers' errors above`);
        return;
      }
    } else if (Date.now() - m.since >= STABLE_MS) this.deaths = 0;
    const delay = Math.min(RESTART_MIN_MS * 2 ** this.deaths, RESTART_MAX_MS);
    this.deaths++;
    this.log(`worker ${m.pid} ${started ? 'died' : 'ended before it listened'} (${how}); starting another in ${delay} ms`);
    const t = setTimeout(() => {
      this.restartTimers.delete(t);
      if (this.state === 'running' || this.state === 'starting') this.spawn(false);
    }, delay);
    this.restartTimers.add(t);
  }

  /** Workers cannot be started: stop the rest (draining those that serve) and fail `start`/`wait()`. */
  private giveUp(reason: string): void {
    this.log(reason);
    const err = new WorkerStartError(`workers could not be started: ${reason}`, this.startFailures);
    this.failure = err;
    if (this.state === 'starting') this.rejectStarted(err);
    this.state = 'running';
    void this.close();
  }
}

/** A port free now on `host`, for workers asked for port 0: they must all bind the same one, and one cluster handle keeps it only while a worker holds it. */
function freePort(host: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const probe = net.createServer();
    probe.once('error', reject);
    probe.listen({ host, port: 0 }, () => {
      const port = (probe.address() as net.AddressInfo).port;
      probe.close(() => resolve(port));
    });
  });
}
