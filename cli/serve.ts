/**
 * `switchyard serve [DIR]`: a static file server on the default preset, through `fileServer`
 * (weak ETags from size and mtime, conditional and range requests, canonical-path
 * redirects, `index.html` for directories, dotfiles refused unless `--dotfiles allow`), a listing for directories without one (unless
 * `--no-list`; dir-listing.ts), wrapped in `loggingMiddleware` writing one access line per
 * request to stdout.
 *
 * HTTP/2: with `--tls-self-signed` the listener is HTTPS with a certificate made at start
 * (nothing written unless `--cert-out FILE`), and ALPN offers h2 when the h2 plugin is in the
 * preset; a plain listener serves h2c (prior knowledge) on the same port when the h2c plugin
 * is. The banner says which protocols are on. Ctrl-C or SIGTERM drains the server
 * (`shutdown()`: unready on `--health-path` for `--drain-delay`, then requests in flight
 * finish; a second Ctrl-C exits at once).
 *
 * `--workers N` runs the server in N processes (node:cluster) sharing the port: the command
 * runs again in each worker, where it serves without a banner until the primary drains it;
 * the primary prints the banner, replaces the workers one at a time on SIGHUP, and drains
 * them all on Ctrl-C or SIGTERM. With `--tls-self-signed` the primary makes the certificate
 * and hands it to its workers in their environment, so all serve the same one.
 */
import cluster from 'node:cluster';
import { stat, writeFile } from 'node:fs/promises';
import { resolve } from 'node:path';
import { Response, serve, WorkerPool, type Request, type RequestHandler, type ServeOptions, type Server, type WorkerCount } from '../kernel/index.js';
import { selfSignedCertificate } from '../tls/self-signed.js';
import { fileServer, type DotfilesPolicy } from '../plugins/fileserver/index.js';
import { loggingMiddleware, type Logger } from '../plugins/middleware/index.js';
import { intOption, type OptionSpec } from './args.js';
import { readCommandLine } from './command.js';
import { withDirectoryListing } from './dir-listing.js';
import { ExitCode, UsageError } from './errors.js';
import { formatHelp } from './help.js';
import { writeOut, type Io, type Output } from './io.js';
import { bootKernel } from './stack.js';

const COMMAND = 'serve';
/** How long a graceful close may take after the drain delay before connections are cut. */
const CLOSE_GRACE_MS = 5000;
const DOTFILES: readonly DotfilesPolicy[] = ['ignore', 'deny', 'allow'];
/** Where a `--workers` primary hands its self-signed certificate to its workers. */
const CERT_ENV = 'SWITCHYARD_SERVE_CERT';

/** Options of `switchyard serve`. */
export const SERVE_OPTIONS: readonly OptionSpec[] = [
  { name: 'port', short: 'p', kind: 'value', metavar: 'N', help: 'port to listen on (default 8080; 0 picks a free one)' },
  { name: 'host', kind: 'value', metavar: 'ADDR', help: 'address to bind (default 127.0.0.1; 0.0.0.0 for every interface)' },
  { name: 'tls-self-signed', kind: 'flag', help: 'serve HTTPS (and HTTP/2) with a certificate made at start' },
  { name: 'cert-out', kind: 'value', metavar: 'FILE', help: 'with --tls-self-signed: save the certificate (PEM) so clients can trust it' },
  { name: 'spa', kind: 'value', metavar: 'FILE', help: 'answer missing extension-less paths with FILE (a single-page app, e.g. index.html)' },
  { name: 'no-list', kind: 'flag', help: 'do not list directories that have no index.html (listed by default; dotfiles only with --dotfiles allow)' },
  { name: 'dotfiles', kind: 'value', metavar: 'POLICY', help: 'dotfiles and dot-directories: ignore (404, default), deny (403) or allow; .well-known/ is served' },
  { name: 'cors', kind: 'flag', help: 'allow cross-origin requests (Access-Control-Allow-Origin: *, preflights answered)' },
  { name: 'health-path', kind: 'value', metavar: 'PATH', help: "answer PATH with 200 while serving, 503 once stopping (for a balancer's health check)" },
  { name: 'drain-delay', kind: 'value', metavar: 'MS', help: 'on Ctrl-C or SIGTERM, keep serving MS more with PATH answering 503, then stop (default 0)' },
  { name: 'workers', kind: 'value', metavar: 'N', help: "run N worker processes sharing the port ('auto': one per core); SIGHUP replaces them one at a time" },
  { name: 'quiet', short: 'q', kind: 'flag', help: 'no access log' },
  { name: 'help', short: 'h', kind: 'flag', help: 'this help' },
];

/** The `--help` text of `switchyard serve`. */
export function serveHelp(): string {
  return formatHelp({
    synopsis: 'switchyard serve [DIR] [options]',
    description:
      'Serves the files under DIR (default: the current directory) with ETags, conditional and range requests,\n' +
      'HTTP/2 (h2c on the plain port; h2 over TLS with --tls-self-signed) and an access log on stdout.\n' +
      'A directory without index.html gets a listing of its entries (not of dotfiles) unless --no-list or --spa.\n' +
      'Dotfiles and dot-directories (.env, .git/) are not served unless --dotfiles allow; .well-known/ is.\n' +
      'Ctrl-C or SIGTERM stops it gracefully: requests in flight finish (after --drain-delay, during which\n' +
      '--health-path answers 503 so a balancer stops sending).',
    options: SERVE_OPTIONS,
    examples: [
      '# the current directory on http://127.0.0.1:8080/ (directories without index.html are listed)',
      'switchyard serve',
      '# files only: no listings',
      'switchyard serve public --no-list',
      '# dotfiles too (.htaccess, .config/...)',
      'switchyard serve site --dotfiles allow',
      '# a built single-page app, on every interface, callable from other origins',
      'switchyard serve dist --host 0.0.0.0 --port 3000 --spa index.html --cors',
      '# HTTPS and HTTP/2; trust the certificate in a client',
      'switchyard serve public --tls-self-signed --port 8443 --cert-out cert.pem',
      'switchyard get https://localhost:8443/ --cacert cert.pem --http2',
      '# behind a balancer that checks /healthz every second: out of rotation before it stops',
      'switchyard serve public --host 0.0.0.0 --health-path /healthz --drain-delay 3000',
      '# every core; `kill -HUP <pid>` replaces the workers without dropping a request',
      'switchyard serve public --workers auto',
    ],
  });
}

/** Runs `switchyard serve` until interrupted; resolves to the exit code. */
export async function runServe(argv: readonly string[], io: Io): Promise<number> {
  const line = await readCommandLine(argv, { command: COMMAND, options: SERVE_OPTIONS, help: serveHelp, operand: 'directory', required: false }, io);
  if (line === null) return ExitCode.OK;
  const o = line.options;
  const dir = line.operand ?? '.';
  const st = await stat(dir).catch(() => null);
  if (st === null || !st.isDirectory()) throw new UsageError(`${dir} is not a directory`, COMMAND);
  const root = resolve(dir);
  const port = o.port === undefined ? 8080 : intOption(o.port as string, '--port', COMMAND, 0, 65535);
  const host = (o.host as string | undefined) ?? '127.0.0.1';
  if (host === '') throw new UsageError('--host needs an address', COMMAND);
  const tls = o['tls-self-signed'] === true;
  const certOut = o['cert-out'] as string | undefined;
  if (certOut !== undefined && !tls) throw new UsageError('--cert-out needs --tls-self-signed', COMMAND);
  const healthPath = o['health-path'] as string | undefined;
  if (healthPath !== undefined && !healthPath.startsWith('/')) throw new UsageError(`--health-path takes a path such as /healthz, got ${JSON.stringify(healthPath)}`, COMMAND);
  const drainDelay = o['drain-delay'] === undefined ? 0 : intOption(o['drain-delay'] as string, '--drain-delay', COMMAND, 0, 600_000);
  const workersArg = o.workers as string | undefined;
  const workers: WorkerCount | undefined = workersArg === undefined || workersArg === 'auto' ? workersArg : intOption(workersArg, '--workers', COMMAND, 1, 1024);
  const spa = o.spa as string | undefined;
  const dotfiles = (o.dotfiles as string | undefined) ?? 'ignore';
  if (!DOTFILES.includes(dotfiles as DotfilesPolicy)) throw new UsageError(`--dotfiles takes ignore, deny or allow, got ${JSON.stringify(dotfiles)}`, COMMAND);

  let handler: RequestHandler = fileServer(root, { etag: 'weak_stat', dotfiles: dotfiles as DotfilesPolicy, ...(spa !== undefined ? { spaFallback: spa } : {}) });
  if (o['no-list'] !== true) handler = withDirectoryListing(handler, root, dotfiles === 'allow');
  if (o.cors === true) handler = withCors(handler);
  if (o.quiet !== true) handler = loggingMiddleware(handler, { logger: accessLogger(io.stdout) });

  const kernel = await bootKernel();
  let server: Server | WorkerPool | null = null;
  try {
    let fingerprint = '';
    let certificate: { key: string; cert: string } | null = null;
    const handed = io.env[CERT_ENV];
    if (tls && workers !== undefined && cluster.isWorker && handed !== undefined) certificate = JSON.parse(handed) as { key: string; cert: string };
    else if (tls) {
      const hosts = ['localhost', '127.0.0.1', '::1'];
      if (!['0.0.0.0', '::', ...hosts].includes(host)) hosts.push(host.replace(/^\[|\]$/g, ''));
      const c = selfSignedCertificate({ hosts });
      certificate = { key: c.key, cert: c.cert };
      fingerprint = c.fingerprint256;
      if (certOut !== undefined) await writeFile(certOut, c.cert);
      // cluster.fork gives the workers this process's environment (readable by its user only).
      if (workers !== undefined) process.env[CERT_ENV] = JSON.stringify(certificate);
    }
    const options: ServeOptions = {
      kernel,
      host,
      port,
      drainDelay,
      drainTimeout: drainDelay + CLOSE_GRACE_MS,
      ...(healthPath !== undefined ? { healthPath } : {}),
      ...(certificate !== null ? { tls: certificate } : {}),
    };
    // With workers the primary drains them on these signals; a worker leaves them to it.
    server = workers === undefined ? await serve(handler, options) : await serve(handler, { ...options, workers, signals: ['SIGINT', 'SIGTERM'] });
    if (!(server instanceof WorkerPool) && workers !== undefined) {
      // A worker: it serves until the primary drains it.
      await server.wait();
      return ExitCode.OK;
    }
    const shownHost = host.includes(':') ? `[${host}]` : host;
    const protocols = tls ? ['HTTP/1.1', ...(kernel.hasPlugin('h2') ? ['HTTP/2'] : [])] : ['HTTP/1.1', ...(kernel.hasPlugin('h2c') ? ['h2c'] : [])];
    const lines = [`switchyard serve: ${root} at ${tls ? 'https' : 'http'}://${shownHost}:${server.port}/ (${protocols.join(', ')})`];
    if (server instanceof WorkerPool) lines.push(`${server.pids.length} workers (pids ${server.pids.join(', ')}); kill -HUP ${process.pid} replaces them one at a time`);
    if (tls) lines.push(`certificate SHA-256 ${fingerprint}${certOut !== undefined ? `, saved to ${certOut}` : ''}`);
    lines.push('Ctrl-C to stop');
    await writeOut(io.stdout, `${lines.join('\n')}\n`);
    if (server instanceof WorkerPool) {
      // The pool drains its workers on Ctrl-C or SIGTERM (a second one cuts them).
      await server.wait();
      await writeOut(io.stdout, 'switchyard serve: closed\n');
      return ExitCode.OK;
    }

    await io.waitForInterrupt();
    await writeOut(io.stdout, 'switchyard serve: closing\n');
    // drainTimeout cuts what is still open CLOSE_GRACE_MS after the delay.
    await server.shutdown();
    return ExitCode.OK;
  } finally {
    if (server !== null) await server.forceClose();
    await kernel.close();
  }
}

/** The access log: one readable line per request on `out` (`time method target status bytes ms`). */
function accessLogger(out: Output): Logger {
  const line = (obj: object, msg?: string): void => {
    const r = obj as { group?: string; method?: string; target?: string; status?: number; length?: number | null; elapsedMs?: number; err?: unknown };
    if (r.group !== 'access') {
      out.write(`${new Date().toISOString()} ${msg ?? ''}\n`);
      return;
    }
    const failure = r.err !== undefined ? ` error: ${r.err instanceof Error ? r.err.message : String(r.err)}` : '';
    out.write(`${new Date().toISOString()} ${r.method} ${r.target} ${r.status} ${r.length ?? '-'} ${(r.elapsedMs ?? 0).toFixed(1)}ms${failure}\n`);
  };
  return { info: line, warn: line, error: line, debug: () => undefined };
}

/** Cross-origin access for every origin: preflights answered here, the headers added to every response. */
function withCors(handler: RequestHandler): RequestHandler {
  return async (req: Request): Promise<Response> => {
    if (req.method === 'OPTIONS' && req.headers.has('Access-Control-Request-Method')) {
      const h: [string, string][] = [
        ['Access-Control-Allow-Origin', '*'],
        ['Access-Control-Allow-Methods', 'GET, HEAD, OPTIONS'],
        ['Access-Control-Max-Age', '86400'],
      ];
      const asked = req.headers.get('Access-Control-Request-Headers');
      if (asked !== undefined) h.push(['Access-Control-Allow-Headers', asked]);
      return new Response(204, h, null);
    }
    const res = await handler(req);
    res.headers.set('Access-Control-Allow-Origin', '*');
    res.headers.set('Access-Control-Expose-Headers', 'Content-Length, Content-Range, Accept-Ranges, ETag, Last-Modified');
    return res;
  };
}
