/**
 * The request commands: `switchyard get|head|post|put|patch|delete|query|options URL [options]`.
 *
 * Decisions (curl's where it has one, the library's defaults otherwise):
 * - The body goes to stdout, streamed (never buffered whole); `-o FILE` writes it to a file
 *   (also for a 4xx/5xx answer, as curl does), `-o -` to stdout.
 * - `-v` prints the final response's status line and headers, as received, to stdout before
 *   the body, and one line per step (request, response, redirect, retry, done) to stderr;
 *   `-vv` adds every hop's request and response headers to the stderr trace.
 * - Redirects are followed (the library's default); `--no-follow` returns the 3xx. `-L` is
 *   accepted for curl habits and changes nothing.
 * - No retries unless `--retry N` (curl's default: a command line is run by a person who sees
 *   the failure); with it, the retries plugin's rules apply (idempotent methods, backoff).
 * - Compressed responses are asked for and decoded (the decompression plugin).
 * - A URL without a scheme gets `http://`.
 * - Exit codes: 0 for a 1xx–3xx final response, 4 for 4xx/5xx, 2 for usage errors, 1 for
 *   network and other failures (the message on stderr).
 */
import { once } from 'node:events';
import { createWriteStream, type WriteStream } from 'node:fs';
import { Client, verbosePrinter, type AnyClientEvent, type CallOptions, type ClientEvent, type Response } from '../kernel/index.js';
import type { CookieJar } from '../plugins/index.js';
import { intOption, parseArgs, type OptionSpec } from './args.js';
import { BodySink } from './body-sink.js';
import { loadCookieFile, saveCookieFile } from './cookie-file.js';
import { ExitCode, UsageError } from './errors.js';
import { formatHelp } from './help.js';
import { writeOut, type Io } from './io.js';
import { ProgressBar } from './progress.js';
import { buildBody } from './request-body.js';
import { parseHeaders, tlsOptions } from './request-options.js';
import { bootKernel, requirePlugin } from './stack.js';

/** The request commands and their methods. */
export const REQUEST_COMMANDS: Readonly<Record<string, string>> = Object.freeze({
  get: 'GET',
  head: 'HEAD',
  post: 'POST',
  put: 'PUT',
  patch: 'PATCH',
  delete: 'DELETE',
  query: 'QUERY',
  options: 'OPTIONS',
});

/** Options of the request commands. */
export const REQUEST_OPTIONS: readonly OptionSpec[] = [
  { name: 'header', short: 'H', kind: 'list', metavar: "'Name: value'", help: 'add a request header (repeatable)' },
  { name: 'data', short: 'd', kind: 'list', metavar: 'DATA', help: 'send DATA as the body; @FILE sends a file, @- stdin (repeatable, joined with &)' },
  { name: 'form', short: 'F', kind: 'list', metavar: 'name=value|name=@FILE', help: 'send a multipart form field or file (repeatable; ;type=… ;filename=… after a file)' },
  { name: 'json', kind: 'flag', help: 'send the data as JSON (Content-Type: application/json) and ask for JSON' },
  { name: 'output', short: 'o', kind: 'value', metavar: 'FILE', help: 'write the body to FILE (progress bar on a terminal); - for stdout' },
  { name: 'http2', kind: 'flag', help: 'use HTTP/2 (ALPN on https, prior knowledge on http)' },
  { name: 'http1', kind: 'flag', help: 'use HTTP/1.1 only' },
  { name: 'proxy', kind: 'value', metavar: 'URL', help: 'go through this proxy (http://, socks5://, socks5h://)' },
  { name: 'location', short: 'L', kind: 'flag', help: 'follow redirects (the default)' },
  { name: 'no-follow', kind: 'flag', help: 'do not follow redirects: print the 3xx response' },
  { name: 'timeout', kind: 'value', metavar: 'ms', help: 'fail when the whole exchange takes longer (default: no limit)' },
  { name: 'retry', kind: 'value', metavar: 'N', help: 'retry failed idempotent requests up to N times (default 0)' },
  { name: 'user', short: 'u', kind: 'value', metavar: 'USER:PASSWORD', help: 'basic authentication' },
  { name: 'cookies', kind: 'value', metavar: 'FILE', help: 'read and save cookies in FILE (Netscape cookies.txt, as curl -b/-c)' },
  { name: 'cacert', kind: 'value', metavar: 'FILE', help: 'trust the PEM certificate(s) in FILE for https' },
  { name: 'insecure', short: 'k', kind: 'flag', help: 'do not verify the server certificate' },
  { name: 'verbose', short: 'v', kind: 'count', help: "print status and headers, and a one-line trace per step on stderr; -vv adds each hop's headers" },
  { name: 'silent', short: 's', kind: 'flag', help: 'no progress bar' },
  { name: 'help', short: 'h', kind: 'flag', help: 'this help' },
];

/** The `--help` text of a request command. */
export function requestHelp(command: string): string {
  return formatHelp({
    synopsis: `switchyard ${command} URL [options]`,
    description: `Sends a ${REQUEST_COMMANDS[command] ?? command.toUpperCase()} request to URL and prints the response body to stdout.`,
    options: REQUEST_OPTIONS,
    examples: [
      '# a page, with status and headers',
      'switchyard get -v https://example.com/',
      '# JSON in, JSON out',
      `switchyard post http://localhost:8080/api/items --json -d '{"name":"tea"}'`,
      '# upload a file as a form',
      'switchyard post http://localhost:8080/upload -F file=@photo.jpg -F note=hi',
      '# download with a progress bar, over HTTP/2, trusting a self-signed certificate',
      'switchyard get https://localhost:8443/big.bin -o big.bin --http2 --cacert cert.pem',
      '# keep a session',
      'switchyard post http://localhost:8080/login -d user=me --cookies jar.txt',
    ],
    exitCodes: '  0 a 1xx-3xx response, 4 a 4xx or 5xx response, 2 a usage error, 1 a network or other failure',
  });
}

/** Runs a request command; resolves to the exit code. Usage errors are thrown as {@link UsageError}. */
export async function runRequest(command: string, argv: readonly string[], io: Io): Promise<number> {
  const method = REQUEST_COMMANDS[command];
  if (method === undefined) throw new UsageError(`unknown command ${JSON.stringify(command)}`);
  const { options: o, positionals } = parseArgs(argv, REQUEST_OPTIONS, command);
  if (o.help === true) {
    await writeOut(io.stdout, requestHelp(command));
    return ExitCode.OK;
  }
  if (positionals.length === 0) throw new UsageError('no URL given', command);
  if (positionals.length > 1) throw new UsageError(`one URL expected, got ${positionals.length}: ${positionals.map((p) => JSON.stringify(p)).join(' ')}`, command);
  const url = normalizeUrl(positionals[0]!, command);
  if (o.http1 === true && o.http2 === true) throw new UsageError('--http1 and --http2 cannot be combined', command);
  if (o.location === true && o['no-follow'] === true) throw new UsageError('-L and --no-follow cannot be combined', command);
  const headers = parseHeaders((o.header as string[] | undefined) ?? [], command);
  const json = o.json === true;
  const body = await buildBody((o.data as string[] | undefined) ?? [], (o.form as string[] | undefined) ?? [], json, command, io.stdin);
  const has = (name: string): boolean => headers.some(([k]) => k.toLowerCase() === name);
  if (body.contentType !== undefined && !has('content-type')) headers.push(['Content-Type', body.contentType]);
  if (json && !has('accept')) headers.push(['Accept', 'application/json']);
  const timeout = o.timeout === undefined ? 0 : intOption(o.timeout as string, '--timeout', command);
  const retries = o.retry === undefined ? 0 : intOption(o.retry as string, '--retry', command, 0, 100);
  const verbose = Math.min(2, (o.verbose as number | undefined) ?? 0) as 0 | 1 | 2;
  let basicauth: readonly [string, string] | undefined;
  if (o.user !== undefined) {
    const u = o.user as string;
    const i = u.indexOf(':');
    if (i < 0) throw new UsageError('-u needs USER:PASSWORD', command);
    basicauth = [u.slice(0, i), u.slice(i + 1)];
  }
  const tlsConfig = await tlsOptions(o.cacert as string | undefined, o.insecure === true, command);
  const outPath = o.output as string | undefined;
  const toFile = outPath !== undefined && outPath !== '-';

  const kernel = await bootKernel();
  let file: WriteStream | null = null;
  let client: Client | null = null;
  let jar: CookieJar | undefined;
  const cookiePath = o.cookies as string | undefined;
  try {
    if (o.http2 === true) requirePlugin(kernel, 'h2', '--http2', command);
    if (o.proxy !== undefined) requirePlugin(kernel, 'proxy', '--proxy', command);
    if (cookiePath !== undefined) jar = await loadCookieFile(cookiePath);
    if (toFile) file = await openOutput(outPath);
    client = new Client({ kernel, ...(tlsConfig !== undefined ? { tlsConfig } : {}) });
    const res = await send(client, method, url, {
      headers,
      body: body.body,
      statusException: false,
      redirect: o['no-follow'] !== true,
      retry: retries > 0,
      retries,
      ...(timeout > 0 ? { requestTimeout: timeout } : {}),
      ...(o.http1 === true ? { httpVersion: 'h1' as const } : o.http2 === true ? { httpVersion: 'h2' as const } : {}),
      ...(o.proxy !== undefined ? { proxy: o.proxy } : {}),
      ...(jar !== undefined ? { cookiejar: jar } : {}),
      ...(basicauth !== undefined ? { basicauth } : {}),
    }, { io, file, verbose, progress: toFile && o.silent !== true && io.stderr.isTTY === true });
    return res.status >= 400 ? ExitCode.HTTP_ERROR : ExitCode.OK;
  } finally {
    client?.close();
    file?.destroy();
    await kernel.close();
    if (jar !== undefined && cookiePath !== undefined) await saveCookieFile(cookiePath, jar);
  }
}

interface SendOptions {
  io: Io;
  file: WriteStream | null;
  verbose: 0 | 1 | 2;
  progress: boolean;
}

/** Sends the request and writes the head (with -v) and body where they go. */
async function send(client: Client, method: string, url: string, call: CallOptions, s: SendOptions): Promise<Response> {
  const { io, file, verbose } = s;
  const bar = s.progress ? new ProgressBar(io.stderr) : null;
  let head = '';
  const sink = new BodySink(file ?? io.stdout, file !== null, {
    onStart: () => {
      if (verbose > 0) io.stdout.write(`${head}\n`);
    },
    ...(bar !== null ? { onBytes: (n: number) => bar.add(n) } : {}),
  });
  const printer = verbose > 0 ? verbosePrinter(verbose === 2 ? 2 : 1, (line) => io.stderr.write(`${bar !== null ? '\r\x1b[K' : ''}${line}\n`)) : null;
  const trace = (ev: ClientEvent): void => {
    const e = ev as AnyClientEvent;
    if (e.type === 'ResponseHeadEvent') {
      // The head as received (before decoding rewrites Content-Encoding and Content-Length).
      head = headText(e.response);
      bar?.reset(expectedLength(e.response, method));
    }
    printer?.(e);
  };
  try {
    // The command ends the sink itself (the head may still go into it after the body).
    const res = await client.request(method, url, { ...call, responseStream: { stream: sink, end: false }, trace });
    sink.start();
    await new Promise<void>((resolve, reject) => {
      sink.once('error', reject);
      sink.end(() => resolve());
    });
    bar?.finish(true);
    return res;
  } finally {
    // After a failure, end the bar's line (if one was drawn) so the error message starts on its own.
    bar?.finish(false);
  }
}

/** `HTTP/1.1 200 OK` (or `HTTP/2 200`) and the header lines. */
function headText(res: Response): string {
  const v = res.protoMajor >= 2 ? `HTTP/${res.protoMajor}` : `HTTP/${res.protoMajor}.${res.protoMinor}`;
  const lines = [`${v} ${res.status}${res.reason ? ` ${res.reason}` : ''}`];
  for (const [k, val] of res.headers) lines.push(`${k}: ${val}`);
  return `${lines.join('\n')}\n`;
}

/** The body size the progress bar expects: Content-Length of an unencoded body, else unknown. */
function expectedLength(res: Response, method: string): number {
  if (method === 'HEAD') return 0;
  const enc = res.headers.get('Content-Encoding');
  if (enc !== undefined && enc.trim().toLowerCase() !== 'identity') return -1;
  const cl = res.headers.get('Content-Length');
  return cl !== undefined && /^\d+$/.test(cl) ? Number(cl) : -1;
}

function normalizeUrl(raw: string, command: string): string {
  const withScheme = /^[a-zA-Z][a-zA-Z0-9+.-]*:\/\//.test(raw) ? raw : `http://${raw}`;
  let u: URL;
  try {
    u = new URL(withScheme);
  } catch {
    throw new UsageError(`invalid URL ${JSON.stringify(raw)}`, command);
  }
  if (u.protocol !== 'http:' && u.protocol !== 'https:') {
    throw new UsageError(`unsupported URL scheme ${u.protocol} in ${JSON.stringify(raw)}: http and https only${u.protocol.startsWith('ws') ? " (use 'switchyard ws' for WebSockets)" : ''}`, command);
  }
  return u.href;
}

/** Opens `path` for writing; a file that cannot be created fails now, before any request. */
async function openOutput(path: string): Promise<WriteStream> {
  const ws = createWriteStream(path, { flags: 'w' });
  try {
    await once(ws, 'open');
  } catch (err) {
    throw new Error(`cannot write ${path}: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`);
  }
  return ws;
}
