/**
 * Shared helpers of the server tests: servers on port 0 that are force-closed after each test,
 * a raw TCP client that writes bytes and parses the responses it gets back, and bounded waits.
 *
 * What they start is closed after each test by test/helpers/cleanup.ts (clients destroyed, tracked
 * timers cleared, servers force-closed).
 */
import { spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import net from 'node:net';
import { destroyAfter, forceCloseAfter, killAfter, untrack } from './cleanup.js';
import { AbstractBody, ByteReader, Headers, listen, readAll, readResponse, serve, type RequestHandler, type Server, type ServeOptions, type StreamHandler } from '../../kernel/index.js';

// ---- cleanup (test/helpers/cleanup.ts) ------------------------------------------------------------

export { onCleanup, track } from './cleanup.js';

// ---- servers ---------------------------------------------------------------------------------

/** A started server, its port, and the errors its `onError` reporter got. */
export interface Started {
  server: Server;
  port: number;
  errors: { error: unknown; request: unknown }[];
}

function withDefaults(options: ServeOptions, errors: Started['errors']): ServeOptions {
  return {
    host: '127.0.0.1',
    port: 0,
    onError: (error, request) => {
      errors.push({ error, request });
    },
    ...options,
  };
}

/** `serve(handler)` on 127.0.0.1 port 0 with an error collector; closed after the test. */
export async function startServer(handler: RequestHandler, options: ServeOptions = {}): Promise<Started> {
  const errors: Started['errors'] = [];
  const server = await serve(handler, withDefaults(options, errors));
  forceCloseAfter(server);
  return { server, port: server.port, errors };
}

/** `listen(handler)` on 127.0.0.1 port 0 with an error collector; closed after the test. */
export async function startStreamServer(handler: StreamHandler, options: ServeOptions = {}): Promise<Started> {
  const errors: Started['errors'] = [];
  const server = await listen(handler, withDefaults(options, errors));
  forceCloseAfter(server);
  return { server, port: server.port, errors };
}

/** Force-closes a server now (it is also closed after the test). */
export async function stopServer(server: Server): Promise<void> {
  untrack(server);
  await server.forceClose();
}

// ---- bounded waits ---------------------------------------------------------------------------

/** Rejects with `what` when `p` does not settle within `ms`. */
export function within<T>(p: Promise<T>, ms: number, what: string): Promise<T> {
  let t: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    t = setTimeout(() => reject(new Error(`timed out after ${ms} ms: ${what}`)), ms);
  });
  return Promise.race([p, timeout]).finally(() => clearTimeout(t));
}

/** Polls `cond` once per event-loop turn (setImmediate) until it holds; throws after `ms`. */
export async function waitFor(cond: () => boolean, ms = 3000, what = 'condition'): Promise<void> {
  const start = performance.now();
  while (!cond()) {
    if (performance.now() - start > ms) throw new Error(`timed out after ${ms} ms waiting for ${what}`);
    await new Promise<void>((r) => setImmediate(r));
  }
}

/** Waits until `server.connectionCount` is `n`. */
export function waitConnections(server: Server, n: number, ms = 3000): Promise<void> {
  return waitFor(() => server.connectionCount === n, ms, `connectionCount === ${n} (is ${server.connectionCount})`);
}

// ---- raw client ------------------------------------------------------------------------------

/** A response read off the wire, body read to its end. */
export interface ParsedResponse {
  status: number;
  reason: string;
  headers: Headers;
  body: Buffer;
  text: string;
  /** The connection cannot be reused after it (Connection: close, HTTP/1.0, read-until-close body). */
  close: boolean;
  protoMinor: number;
}

const EMPTY = Buffer.alloc(0);

/** A TCP client that writes raw bytes and parses what comes back. */
export class RawClient {
  readonly socket: net.Socket;
  /** Every byte received so far (independent of what the parser consumed). */
  received: Buffer = EMPTY;
  /** The peer sent FIN. */
  ended = false;
  /** The socket closed ('close' fired). */
  isClosed = false;
  /** A socket error, if any (ECONNRESET, ...). */
  error: Error | null = null;
  /** Resolves on 'close'. */
  readonly closed: Promise<void>;
  private readonly queue: Buffer[] = [];
  private wake: (() => void) | null = null;
  private readonly reader: ByteReader;

  constructor(socket: net.Socket) {
    this.socket = socket;
    destroyAfter(socket);
    socket.on('data', (chunk: Buffer) => {
      this.received = this.received.length === 0 ? chunk : Buffer.concat([this.received, chunk]);
      this.queue.push(chunk);
      this.poke();
    });
    socket.on('end', () => {
      this.ended = true;
      this.poke();
    });
    socket.on('error', (err) => {
      this.error = err;
    });
    this.closed = new Promise((resolve) => {
      socket.once('close', () => {
        this.isClosed = true;
        this.poke();
        resolve();
      });
    });
    this.reader = new ByteReader(this.chunks());
  }

  private poke(): void {
    const w = this.wake;
    this.wake = null;
    w?.();
  }

  private async *chunks(): AsyncGenerator<Uint8Array> {
    for (;;) {
      const c = this.queue.shift();
      if (c !== undefined) {
        yield c;
        continue;
      }
      if (this.ended || this.isClosed) return;
      await new Promise<void>((r) => (this.wake = r));
    }
  }

  /** Writes bytes (a string is latin1); resolves once handed to the kernel. */
  write(data: string | Uint8Array): Promise<void> {
    return new Promise((resolve, reject) => {
      const cb = (err?: Error | null): void => (err ? reject(err) : resolve());
      if (typeof data === 'string') this.socket.write(data, 'latin1', cb);
      else this.socket.write(data, cb);
    });
  }

  /** Reads and parses the next response (body read to its end); `method` HEAD for a HEAD answer. */
  response(options: { method?: string; timeout?: number } = {}): Promise<ParsedResponse> {
    return within(parseNext(this.reader, options.method), options.timeout ?? 5000, 'a response');
  }

  /** Reads `n` responses in a row. */
  async responses(n: number, methods: string[] = []): Promise<ParsedResponse[]> {
    const out: ParsedResponse[] = [];
    for (let i = 0; i < n; i++) out.push(await this.response(methods[i] !== undefined ? { method: methods[i]! } : {}));
    return out;
  }

  /** Waits for 'close' (bounded) and returns every byte received. */
  async untilClosed(ms = 5000): Promise<Buffer> {
    await within(this.closed, ms, 'the server to close the connection');
    return this.received;
  }

  /** The status of the first response received, or null. */
  get firstStatus(): number | null {
    return statusOf(this.received);
  }

  /** Half-closes (FIN). */
  end(): void {
    this.socket.end();
  }

  /** Drops the connection. */
  destroy(): void {
    this.socket.destroy();
  }
}

/** The status code of the status line at the start of `bytes`, or null. */
export function statusOf(bytes: Uint8Array): number | null {
  const m = /^HTTP\/1\.[01] (\d{3})/.exec(Buffer.from(bytes).toString('latin1', 0, 16));
  return m === null ? null : Number(m[1]);
}

async function parseNext(reader: ByteReader, method: string | undefined): Promise<ParsedResponse> {
  const res = await readResponse(reader, method !== undefined ? { method } : {});
  const b = res.body;
  const body = b instanceof AbstractBody ? Buffer.from(await readAll(b)) : b === null ? EMPTY : Buffer.from(b as Uint8Array | string);
  return { status: res.status, reason: res.reason, headers: res.headers, body, text: body.toString('utf8'), close: res.close, protoMinor: res.protoMinor };
}

/** Connects a {@link RawClient} to 127.0.0.1:`port` (destroyed after the test). */
export function rawClient(port: number): Promise<RawClient> {
  return new Promise((resolve, reject) => {
    const socket = net.connect({ host: '127.0.0.1', port });
    socket.setNoDelay(true);
    const client = new RawClient(socket);
    socket.once('connect', () => {
      socket.removeListener('error', reject);
      resolve(client);
    });
    socket.once('error', reject);
  });
}

/**
 * Parses `n` responses from a RawClient or a plain socket (a plain socket is read through its
 * async iterator: do not also listen for its 'data').
 */
export async function readResponses(source: RawClient | net.Socket, n: number, methods: string[] = []): Promise<ParsedResponse[]> {
  if (source instanceof RawClient) return source.responses(n, methods);
  const reader = ByteReader.from(source);
  const out: ParsedResponse[] = [];
  for (let i = 0; i < n; i++) out.push(await within(parseNext(reader, methods[i]), 5000, `response ${i + 1} of ${n}`));
  return out;
}

/** Waits (bounded) until the socket is closed by the server; returns the bytes received (RawClient) or nothing. */
export async function expectClosed(source: RawClient | net.Socket, ms = 5000): Promise<Buffer> {
  if (source instanceof RawClient) return source.untilClosed(ms);
  if (!source.destroyed) await within(new Promise<void>((r) => source.once('close', () => r())), ms, 'the server to close the connection');
  return EMPTY;
}

/** Connects, writes `raw`, reads one response. */
export async function exchange(port: number, raw: string | Uint8Array, method?: string): Promise<{ client: RawClient; res: ParsedResponse }> {
  const client = await rawClient(port);
  await client.write(raw);
  const res = await client.response(method !== undefined ? { method } : {});
  return { client, res };
}

/** Asserts the server still answers a well-formed GET on a fresh connection; returns the response. */
export async function expectServing(port: number, path = '/ok'): Promise<ParsedResponse> {
  const { client, res } = await exchange(port, `GET ${path} HTTP/1.1\r\nHost: x\r\n\r\n`);
  client.destroy();
  if (res.status !== 200) throw new Error(`server no longer serving: GET ${path} got ${res.status}`);
  return res;
}

/** A GET request head. */
export function get(path: string, extra = ''): string {
  return `GET ${path} HTTP/1.1\r\nHost: x\r\n${extra}\r\n`;
}

// ---- curl and small utilities (interop-curl.test.ts, tls.test.ts) -----------------------------

/** The curl binary the interop tests run. */
export const CURL = '/usr/bin/curl';

/** What a curl run left behind. */
export interface CurlResult {
  code: number | null;
  stdout: Buffer;
  stderr: string;
}

/**
 * Environment without proxy settings (so curl talks to loopback directly) and without the
 * variables whose names match `drop` (by default only `CURL_HOME`).
 */
export function curlEnv(drop: RegExp = /^curl_home$/i): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const [k, v] of Object.entries(process.env)) {
    if (!/_proxy$/i.test(k) && !drop.test(k)) env[k] = v;
  }
  return env;
}

/**
 * Runs curl (async) with `args` in `env`; `input` is written to its stdin. Resolves when it
 * exits; a curl still running when the test ends is killed (test/helpers/cleanup.ts).
 */
export function runCurl(args: string[], env: NodeJS.ProcessEnv, input?: Buffer): Promise<CurlResult> {
  const child = spawn(CURL, ['-q', '--noproxy', '*', '-sS', '--max-time', '20', ...args], {
    env,
    stdio: [input === undefined ? 'ignore' : 'pipe', 'pipe', 'pipe'],
  });
  killAfter(child);
  const out: Buffer[] = [];
  const err: Buffer[] = [];
  child.stdout!.on('data', (c: Buffer) => out.push(c));
  child.stderr!.on('data', (c: Buffer) => err.push(c));
  if (input !== undefined) {
    child.stdin!.on('error', () => {});
    child.stdin!.end(input);
  }
  return new Promise((resolve, reject) => {
    child.once('error', reject);
    child.once('close', (code) => {
      resolve({ code, stdout: Buffer.concat(out), stderr: Buffer.concat(err).toString('latin1') });
    });
  });
}

/** curl `-w` format appended after each transfer; parsed by {@link transfers}. */
export const W = '\\n@@ %{http_code} %{num_connects} %{local_port} %{size_download}\\n';

/** One transfer of a curl run with `-w W`. */
export interface Transfer {
  body: string;
  status: number;
  connects: number;
  localPort: number;
  size: number;
}

/** Splits stdout of a curl run with `-w W` into one record per transfer. */
export function transfers(stdout: Buffer): Transfer[] {
  const text = stdout.toString('latin1');
  const re = /([\s\S]*?)\n@@ (\d+) (\d+) (\d+) (\d+)\n/g;
  const out: Transfer[] = [];
  let m: RegExpExecArray | null;
  while ((m = re.exec(text)) !== null) {
    out.push({ body: m[1]!, status: Number(m[2]), connects: Number(m[3]), localPort: Number(m[4]), size: Number(m[5]) });
  }
  return out;
}

/** How many times curl -v said it reused a connection (wording differs across versions). */
export function reuses(stderr: string): number {
  return (stderr.match(/Re-?using existing connection/g) ?? []).length;
}

/** Hex SHA-256 of `b`. */
export function sha256(b: Uint8Array): string {
  return createHash('sha256').update(b).digest('hex');
}

/** A promise with its resolve function. */
export function deferred<T = void>(): { promise: Promise<T>; resolve: (v: T) => void } {
  let resolve!: (v: T) => void;
  const promise = new Promise<T>((r) => (resolve = r));
  return { promise, resolve };
}
