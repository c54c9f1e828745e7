/**
 * Helpers of the HTTP/2 tests: a booted kernel with h2 and h2c, servers on port 0 (plain and
 * TLS with a self-signed certificate made here), clients, curl/nghttp/h2load runs, and a raw
 * HTTP/2 frame writer for the bad-input tests. Everything started here is closed after each test.
 */
import { execFile } from 'node:child_process';
import { connect as netConnect, createServer as netServer, type Socket } from 'node:net';
import http2 from 'node:http2';
import { closeAfter, destroyAfter, forceCloseAfter, onCleanup } from './cleanup.js';
import { Client, createKernel, listen, serve, type ClientOptions, type Kernel, type RequestHandler, type Server, type ServeOptions, type StreamHandler } from '../../kernel/index.js';
import { selfSignedCertificate } from '../../tls/self-signed.js';
import { h2 } from '../../plugins/h2/index.js';
import { h2c } from '../../plugins/h2c/index.js';

export { onCleanup } from './cleanup.js';

let booted: Kernel | null = null;

/** One kernel with h2 and h2c for the whole file (booting is per process, not per test). */
export async function h2Kernel(): Promise<Kernel> {
  if (booted === null) {
    booted = createKernel().register(h2).register(h2c);
    await booted.ready();
  }
  return booted;
}

/** A self-signed certificate for 127.0.0.1 and localhost, made once. */
export const cert = selfSignedCertificate();

/** A started server, its port and the errors it reported. */
export interface Started {
  server: Server;
  port: number;
  errors: { error: unknown; request: unknown }[];
}

async function opts(options: ServeOptions, errors: Started['errors']): Promise<ServeOptions> {
  return { host: '127.0.0.1', port: 0, kernel: await h2Kernel(), onError: (error, request) => void errors.push({ error, request }), ...options };
}

/** `serve(handler)` with h2/h2c; `tls: true` makes it HTTPS with the test certificate. */
export async function startServer(handler: RequestHandler, options: ServeOptions & { secure?: boolean } = {}): Promise<Started> {
  const errors: Started['errors'] = [];
  const { secure, ...rest } = options;
  if (secure === true) rest.tls = { key: cert.key, cert: cert.cert, ...(rest.tls ?? {}) };
  const server = await serve(handler, await opts(rest, errors));
  forceCloseAfter(server);
  return { server, port: server.port, errors };
}

/** `listen(handler)` with h2/h2c; `secure: true` makes it HTTPS. */
export async function startStreamServer(handler: StreamHandler, options: ServeOptions & { secure?: boolean } = {}): Promise<Started> {
  const errors: Started['errors'] = [];
  const { secure, ...rest } = options;
  if (secure === true) rest.tls = { key: cert.key, cert: cert.cert, ...(rest.tls ?? {}) };
  const server = await listen(handler, await opts(rest, errors));
  forceCloseAfter(server);
  return { server, port: server.port, errors };
}

/** A client on the h2 kernel that trusts the test certificate; closed after the test. */
export async function h2Client(options: ClientOptions = {}): Promise<Client> {
  return closeAfter(new Client({ kernel: await h2Kernel(), tlsConfig: { ca: cert.cert }, ...options }));
}

/** A bare node:http2 client session (a peer nobody here wrote); destroyed after the test. */
export function nodeSession(url: string, options: http2.SecureClientSessionOptions = {}): http2.ClientHttp2Session {
  const s = http2.connect(url, { ca: cert.cert, ...options });
  s.on('error', () => undefined);
  destroyAfter(s);
  return s;
}

/** A bare node:http2 server (h2c), closed after the test. */
export async function nodeServer(
  onStream: (stream: http2.ServerHttp2Stream, headers: http2.IncomingHttpHeaders) => void,
  settings: http2.Settings = {},
): Promise<{ port: number; sessions: http2.ServerHttp2Session[] }> {
  const server = http2.createServer({ settings });
  const sessions: http2.ServerHttp2Session[] = [];
  server.on('session', (s) => sessions.push(s));
  server.on('stream', onStream);
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  onCleanup(
    () =>
      new Promise<void>((r) => {
        for (const s of sessions) s.destroy();
        server.close(() => r());
      }),
  );
  return { port: (server.address() as { port: number }).port, sessions };
}

/** One request on a node:http2 session: status, headers and body. */
export function nodeRequest(
  s: http2.ClientHttp2Session,
  headers: http2.OutgoingHttpHeaders,
  body?: string | Buffer,
): Promise<{ status: number; headers: http2.IncomingHttpHeaders; body: Buffer; trailers: http2.IncomingHttpHeaders | null; rstCode: number }> {
  return new Promise((resolve, reject) => {
    const st = s.request(headers, { endStream: body === undefined });
    const chunks: Buffer[] = [];
    let head: http2.IncomingHttpHeaders = {};
    let trailers: http2.IncomingHttpHeaders | null = null;
    st.on('response', (h) => (head = h));
    st.on('trailers', (t) => (trailers = t));
    st.on('data', (c: Buffer) => chunks.push(c));
    st.on('error', () => undefined);
    st.on('close', () => resolve({ status: Number(head[':status'] ?? 0), headers: head, body: Buffer.concat(chunks), trailers, rstCode: st.rstCode ?? 0 }));
    st.on('aborted', () => undefined);
    if (body !== undefined) st.end(body);
    void reject;
  });
}

/** Runs a program and resolves with its exit code and output (never rejects on a non-zero exit). */
export function run(cmd: string, args: string[], timeoutMs = 20_000): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(cmd, args, { timeout: timeoutMs, maxBuffer: 64 * 1024 * 1024 }, (err, stdout, stderr) => {
      const code = err === null ? 0 : typeof (err as { code?: unknown }).code === 'number' ? (err as { code: number }).code : -1;
      resolve({ code, stdout: String(stdout), stderr: String(stderr) });
    });
  });
}

/** A raw TCP socket to the server; destroyed after the test. */
export function rawSocket(port: number): Promise<Socket> {
  return new Promise((resolve, reject) => {
    const s = netConnect({ host: '127.0.0.1', port });
    destroyAfter(s);
    s.once('connect', () => resolve(s));
    s.once('error', reject);
  });
}

/** Polls `cond` once per event-loop turn until it holds; throws after `ms`. */
export async function waitFor(cond: () => boolean, ms = 5000, what = 'condition'): Promise<void> {
  const start = performance.now();
  while (!cond()) {
    if (performance.now() - start > ms) throw new Error(`timed out after ${ms} ms waiting for ${what}`);
    await new Promise<void>((r) => setTimeout(r, 2));
  }
}

/** A TCP relay to the project's server on `port`, closed after the test. */
export interface Relay {
  readonly port: number;
  /** Connections accepted so far. */
  accepted(): number;
  /** Nothing is forwarded either way any more (a peer that stopped answering, a NAT that forgot). */
  freeze(): void;
  /** The client-side connections are reset (RST) and their upstream closed. */
  reset(): void;
}

/** Starts a {@link Relay} to `127.0.0.1:port`. */
export async function relay(port: number): Promise<Relay> {
  const pairs: [Socket, Socket][] = [];
  let accepted = 0;
  const server = netServer((c) => {
    accepted++;
    const u = netConnect(port, '127.0.0.1');
    c.on('error', () => undefined);
    u.on('error', () => undefined);
    c.pipe(u);
    u.pipe(c);
    pairs.push([c, u]);
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  onCleanup(
    () =>
      new Promise<void>((r) => {
        for (const [c, u] of pairs) {
          c.destroy();
          u.destroy();
        }
        server.close(() => r());
      }),
  );
  return {
    port: (server.address() as { port: number }).port,
    accepted: () => accepted,
    freeze() {
      for (const [c, u] of pairs) {
        c.unpipe(u);
        u.unpipe(c);
        c.pause();
        u.pause();
      }
    },
    reset() {
      for (const [c, u] of pairs) {
        c.resetAndDestroy();
        u.destroy();
      }
    },
  };
}
