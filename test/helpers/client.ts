/**
 * Shared helpers of the client tests: the project's server on a caller-made listener that
 * counts connections, raw `node:net` servers that play misbehaving peers, clients that are
 * closed after each test, a port whose accept queue is full (a connect that never completes),
 * and bounded waits on events.
 *
 * What they start (clients, servers, sockets, child processes) is closed after each test by
 * test/helpers/cleanup.ts.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import net from 'node:net';
import tls from 'node:tls';
import { closeAfter, closeKernelAfter, closeNetServerAfter, destroyAfter, forceCloseAfter, killAfter, untrack } from './cleanup.js';
import { proxy } from '../../plugins/proxy/index.js';
import { within } from './server.js';
import {
  Client,
  createKernel,
  listen,
  serve,
  type ClientOptions,
  type Kernel,
  type Request,
  type RequestHandler,
  type Response,
  type ServeOptions,
  type Server,
  type StreamHandler,
} from '../../kernel/index.js';

// ---- cleanup (test/helpers/cleanup.ts) ------------------------------------------------------------

export { onCleanup } from './cleanup.js';

/** A `Client` closed after the test; on a kernel without plugins unless `options.kernel` (these tests are the kernel's own). */
export function newClient(options: ClientOptions = {}): Client {
  return closeAfter(new Client({ kernel: createKernel(), ...options }));
}

/** A booted kernel with only the proxy plugin (a client test that goes through a proxy), closed after the test. */
export async function proxyKernel(): Promise<Kernel> {
  return closeKernelAfter(await createKernel().register(proxy).ready());
}

/** Tracks a child process: killed after the test. */
export function trackChild<T extends ChildProcess>(c: T): T {
  killAfter(c);
  return c;
}

/** Tracks a socket: destroyed after the test. */
export function trackSocket<T extends net.Socket>(s: T): T {
  return destroyAfter(s);
}

// ---- waits -----------------------------------------------------------------------------------

// The bounded waits are the server helpers' (one copy for both sides).
export { waitFor, within } from './server.js';

/** Milliseconds since `t0` (a `performance.now()` value). */
export function since(t0: number): number {
  return performance.now() - t0;
}

/** Resolves with the rejection of `p` (fails when it resolves). */
export async function rejection(p: Promise<unknown>): Promise<Error> {
  try {
    await p;
  } catch (err) {
    return err as Error;
  }
  throw new Error('expected the promise to reject, it resolved');
}

/** A promise and its resolver. */
export function deferred<T = void>(): { promise: Promise<T>; resolve: (v: T) => void; reject: (e: unknown) => void } {
  let resolve!: (v: T) => void;
  let reject!: (e: unknown) => void;
  const promise = new Promise<T>((a, b) => {
    resolve = a;
    reject = b;
  });
  return { promise, resolve, reject };
}

// ---- bodies ----------------------------------------------------------------------------------

/** The body of a buffered client response as text. */
export function text(res: Response): string {
  const b = res.body;
  if (b === null) return '';
  if (typeof b === 'string') return b;
  if (b instanceof Uint8Array) return Buffer.from(b.buffer, b.byteOffset, b.byteLength).toString('utf8');
  throw new Error('response body is streamed, not buffered');
}

/** The body of a buffered client response as a Buffer. */
export function bytes(res: Response): Buffer {
  const b = res.body;
  if (b === null) return Buffer.alloc(0);
  if (typeof b === 'string') return Buffer.from(b, 'utf8');
  if (b instanceof Uint8Array) return Buffer.from(b.buffer, b.byteOffset, b.byteLength);
  throw new Error('response body is streamed, not buffered');
}

/** The buffered body of a server-side request as text. */
export function reqText(req: Request): string {
  const b = req.body;
  if (b === null) return '';
  if (typeof b === 'string') return b;
  if (b instanceof Uint8Array) return Buffer.from(b.buffer, b.byteOffset, b.byteLength).toString('utf8');
  return '';
}

// ---- the project's server, counting connections ----------------------------------------------

/** A server of the project with connection accounting. */
export interface Started {
  server: Server;
  port: number;
  /** `http://127.0.0.1:<port>` */
  origin: string;
  /** Connections accepted so far. */
  readonly connections: number;
  /** Connections closed so far. */
  readonly closedConnections: number;
  /** Server-side sockets, in accept order. */
  sockets: net.Socket[];
  /** Resolves when the n-th (1-based) accepted connection closes. */
  closedAt(n: number): Promise<void>;
  errors: unknown[];
}

function counting(listener: net.Server = net.createServer({ noDelay: true })): { listener: net.Server; state: Omit<Started, 'server' | 'port' | 'origin' | 'errors'> } {
  const list: net.Socket[] = [];
  const waiters = new Map<number, () => void>();
  const closedSet = new Set<number>();
  let closed = 0;
  listener.on('connection', (s: net.Socket) => {
    const i = list.length + 1;
    list.push(s);
    destroyAfter(s);
    s.once('close', () => {
      closed++;
      closedSet.add(i);
      waiters.get(i)?.();
    });
  });
  closeNetServerAfter(listener);
  const state = {
    get connections() {
      return list.length;
    },
    get closedConnections() {
      return closed;
    },
    sockets: list,
    closedAt(n: number): Promise<void> {
      if (closedSet.has(n)) return Promise.resolve();
      return new Promise<void>((resolve) => waiters.set(n, resolve));
    },
  };
  return { listener, state };
}

async function bind(l: net.Server, host = '127.0.0.1'): Promise<void> {
  await new Promise<void>((resolve, reject) => {
    l.once('error', reject);
    l.listen(0, host, () => {
      l.removeListener('error', reject);
      resolve();
    });
  });
}

/** `serve(handler)` on 127.0.0.1, a free port, on a counting listener; closed after the test. */
export async function startServer(handler: RequestHandler, options: ServeOptions = {}): Promise<Started> {
  const { listener, state } = counting();
  await bind(listener);
  const errors: unknown[] = [];
  const server = await serve(handler, { onError: (e) => errors.push(e), ...options, listener });
  forceCloseAfter(server);
  const port = (listener.address() as net.AddressInfo).port;
  return Object.assign(state, { server, port, origin: `http://127.0.0.1:${port}`, errors }) as Started;
}

/** `serve(handler)` over HTTPS with `key`/`cert` (a counting `tls.Server`); `origin` is `https://127.0.0.1:<port>`. */
export async function startTlsServer(handler: RequestHandler, creds: { key: string; cert: string }, options: ServeOptions = {}): Promise<Started> {
  const { listener, state } = counting(tls.createServer({ key: creds.key, cert: creds.cert, ALPNProtocols: ['http/1.1'] }));
  await bind(listener);
  const errors: unknown[] = [];
  const server = await serve(handler, { onError: (e) => errors.push(e), ...options, listener });
  forceCloseAfter(server);
  const port = (listener.address() as net.AddressInfo).port;
  return Object.assign(state, { server, port, origin: `https://127.0.0.1:${port}`, errors }) as Started;
}

/** `listen(handler)` (a stream handler) on a counting listener; closed after the test. */
export async function startStreamServer(handler: StreamHandler, options: ServeOptions = {}): Promise<Started> {
  const { listener, state } = counting();
  await bind(listener);
  const errors: unknown[] = [];
  const server = await listen(handler, { onError: (e) => errors.push(e), ...options, listener });
  forceCloseAfter(server);
  const port = (listener.address() as net.AddressInfo).port;
  return Object.assign(state, { server, port, origin: `http://127.0.0.1:${port}`, errors }) as Started;
}

/** Force-closes a started server now. */
export async function stopServer(s: Started): Promise<void> {
  untrack(s.server);
  await s.server.forceClose();
}

// ---- raw servers -----------------------------------------------------------------------------

/** A raw TCP server playing a peer; `onConnection` gets each socket and its 1-based index. */
export interface RawServer {
  server: net.Server;
  port: number;
  origin: string;
  sockets: net.Socket[];
  readonly connections: number;
  /** Resolves when the n-th (1-based) connection closes. */
  closedAt(n: number): Promise<void>;
  /** Resolves when the n-th connection is accepted. */
  acceptedAt(n: number): Promise<net.Socket>;
}

/** Starts a raw TCP server on `host` (default 127.0.0.1), a free port; closed (and its sockets destroyed) after the test. */
export async function rawServer(onConnection: (socket: net.Socket, index: number) => void, host = '127.0.0.1'): Promise<RawServer> {
  const list: net.Socket[] = [];
  const closed = new Set<number>();
  const closeWaiters = new Map<number, () => void>();
  const acceptWaiters = new Map<number, (s: net.Socket) => void>();
  const server = net.createServer({ noDelay: true }, (s) => {
    const i = list.length + 1;
    list.push(s);
    destroyAfter(s);
    s.on('error', () => undefined);
    s.once('close', () => {
      closed.add(i);
      closeWaiters.get(i)?.();
    });
    onConnection(s, i);
    acceptWaiters.get(i)?.(s);
  });
  closeNetServerAfter(server);
  await bind(server, host);
  const port = (server.address() as net.AddressInfo).port;
  return {
    server,
    port,
    origin: `http://${host.includes(':') ? `[${host}]` : host}:${port}`,
    sockets: list,
    get connections() {
      return list.length;
    },
    closedAt(n) {
      if (closed.has(n)) return Promise.resolve();
      return new Promise((resolve) => closeWaiters.set(n, resolve));
    },
    acceptedAt(n) {
      const s = list[n - 1];
      if (s !== undefined) return Promise.resolve(s);
      return new Promise((resolve) => acceptWaiters.set(n, resolve));
    },
  };
}

/** One request as a raw server read it. */
export interface RawRequest {
  head: string;
  method: string;
  target: string;
  headers: Map<string, string>;
  body: Buffer;
}

/**
 * Reads requests off a raw socket (Content-Length and chunked bodies), calling `onRequest`
 * for each complete one. `onHead` (optional) is called as soon as a head is complete, before
 * its body arrives.
 */
export function readRequests(socket: net.Socket, onRequest: (r: RawRequest) => void, onHead?: (r: RawRequest) => void): void {
  let buf = Buffer.alloc(0);
  let pending: RawRequest | null = null;
  let need = -1;
  let chunked = false;
  socket.on('data', (d: Buffer) => {
    buf = Buffer.concat([buf, d]);
    for (;;) {
      if (pending === null) {
        const at = buf.indexOf('\r\n\r\n');
        if (at < 0) return;
        const head = buf.subarray(0, at).toString('latin1');
        buf = buf.subarray(at + 4);
        const [line, ...rest] = head.split('\r\n');
        const [method = '', target = ''] = (line ?? '').split(' ');
        const headers = new Map<string, string>();
        for (const h of rest) {
          const c = h.indexOf(':');
          headers.set(h.slice(0, c).trim().toLowerCase(), h.slice(c + 1).trim());
        }
        pending = { head, method, target, headers, body: Buffer.alloc(0) };
        chunked = /chunked/i.test(headers.get('transfer-encoding') ?? '');
        need = chunked ? -1 : Number(headers.get('content-length') ?? '0');
        onHead?.(pending);
      }
      if (chunked) {
        const end = buf.indexOf('0\r\n\r\n');
        if (end < 0) return;
        pending.body = decodeChunked(buf.subarray(0, end + 5));
        buf = buf.subarray(end + 5);
      } else {
        if (buf.length < need) return;
        pending.body = buf.subarray(0, need);
        buf = buf.subarray(need);
      }
      const r = pending;
      pending = null;
      onRequest(r);
    }
  });
}

function decodeChunked(b: Buffer): Buffer {
  const out: Buffer[] = [];
  let off = 0;
  for (;;) {
    const eol = b.indexOf('\r\n', off);
    const size = parseInt(b.subarray(off, eol).toString('latin1'), 16);
    if (!(size > 0)) break;
    out.push(b.subarray(eol + 2, eol + 2 + size));
    off = eol + 2 + size + 2;
  }
  return Buffer.concat(out);
}

/** A complete `HTTP/1.1 200` response with a Content-Length body. */
export function okResponse(body = 'ok', extra = ''): string {
  return `HTTP/1.1 200 OK\r\nContent-Length: ${Buffer.byteLength(body)}\r\n${extra}\r\n${body}`;
}

// ---- a port nobody accepts on ----------------------------------------------------------------

/** The Debian python3 (the interop tests need it anyway), else whatever `python3` is on PATH. */
export const PYTHON = existsSync('/usr/bin/python3') ? '/usr/bin/python3' : 'python3';

/**
 * A listening port whose accept queue is full: a python3 child listens with backlog 0 and
 * never accepts, and one connection made here fills the queue. Linux then drops the SYNs of
 * further connects, so they neither complete nor fail (for seconds): a deterministic stalled
 * connect on loopback.
 */
export async function stalledPort(): Promise<number> {
  const py = trackChild(
    spawn(PYTHON, ['-c', 'import socket,sys\ns=socket.socket()\ns.bind(("127.0.0.1",0))\ns.listen(0)\nprint(s.getsockname()[1],flush=True)\nsys.stdin.read()'], {
      stdio: ['pipe', 'pipe', 'inherit'],
    }),
  );
  const port = await within(
    new Promise<number>((resolve, reject) => {
      py.once('error', reject);
      py.stdout!.once('data', (d: Buffer) => resolve(Number(String(d).trim())));
    }),
    5000,
    'python3 to listen',
  );
  // Fill the queue (backlog 0 admits one connection).
  const filler = trackSocket(net.connect({ host: '127.0.0.1', port }));
  filler.on('error', () => undefined);
  await within(new Promise<void>((resolve) => filler.once('connect', () => resolve())), 3000, 'the filler connection');
  return port;
}

/** A port on 127.0.0.1 that nothing listens on (bound and released). */
export async function closedPort(): Promise<number> {
  const s = net.createServer();
  await bind(s);
  const port = (s.address() as net.AddressInfo).port;
  await new Promise<void>((resolve) => s.close(() => resolve()));
  return port;
}
