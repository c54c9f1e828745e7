/**
 * The request commands: `switchyard get|head|post|put|patch|delete|query|options URL [options]`.
 *
 * Decisions (curl's where it has one, the library's defaults otherwise):
 * - The body goes to stdout, streamed (never buffered whole); `-o FILE` writes it to a file
 *   (also for a 4xx/5xx answer, as curl does), `-o -` to stdout, `-O` to a file named like the
 *   URL's last path segment. A file is truncated only when the body starts: with `-f` a 4xx/5xx
 *   answer leaves an existing file as it was (and a new one is removed), as curl leaves it.
 * - `-X METHOD` sends any method (a token) with any command's options; `-I` sends HEAD and
 *   prints the head.
 * - `-i` prints the final response's status line and headers before the body, where the body
 *   goes; `-v` prints them to stdout and one line per step (request, response, redirect, retry,
 *   done) to stderr; `-vv` adds every hop's request and response headers to the stderr trace.
 * - A 4xx/5xx answer puts its status line on stderr (after the body, which is printed unless
 *   `-f`). `-s` silences that, error messages and the progress bar; `-sS` brings the messages back.
 * - Redirects are followed (the library's default); `--no-follow` returns the 3xx. `-L` is
 *   accepted for curl habits and changes nothing.
 * - No retries unless `--retry N` (curl's default: a command line is run by a person who sees
 *   the failure); with it, the retries plugin's rules apply (idempotent methods, backoff).
 * - Compressed responses are asked for and decoded (the decompression plugin); `--compressed`
 *   says so explicitly.
 * - `--max-time SECONDS` (curl's unit, fractions allowed) or `--timeout ms` bounds the exchange.
 * - `--cache DIR` keeps an HTTP cache (RFC 9111, private) in DIR across runs, on the disk
 *   store; `-v` says per call whether it was a hit, a miss or a revalidation.
 * - A URL without a scheme gets `http://`.
 * - Exit codes: 0 for a 1xx–3xx final response, 4 for 4xx/5xx, 2 for usage errors, 1 for
 *   network and other failures (the message on stderr), 130 after Ctrl-C.
 */
import { constants, ftruncateSync, type WriteStream } from 'node:fs';
import { open, unlink, type FileHandle } from 'node:fs/promises';
import { ArgumentError, Client, isToken, verbosePrinter, type AnyClientEvent, type CallOptions, type ClientEvent, type Response } from '../kernel/index.js';
import { CacheHitEvent, CacheMissEvent, CacheRevalidatedEvent, DiskStore, type CookieJar } from '../plugins/index.js';
import { intOption, type OptionSpec } from './args.js';
import { readCommandLine } from './command.js';
import { REQUEST_COMMANDS } from './commands.js';
import { BodySink } from './body-sink.js';
import { loadCookieFile, saveCookieFile } from './cookie-file.js';
import { ExitCode, UsageError } from './errors.js';
import { formatHelp } from './help.js';
import { writeOut, type Io } from './io.js';
import { ProgressBar } from './progress.js';
import { buildBody } from './request-body.js';
import { parseHeaders, tlsOptions } from './request-options.js';
import { bootKernel, requirePlugin } from './stack.js';

/** Options of the request commands. */
export const REQUEST_OPTIONS: readonly OptionSpec[] = [
  { name: 'request', short: 'X', kind: 'value', metavar: 'METHOD', help: "send METHOD instead of the command's (any token: PURGE, PROPFIND, …)" },
  { name: 'header', short: 'H', kind: 'list', metavar: "'Name: value'", help: 'add a request header (repeatable)' },
  { name: 'user-agent', short: 'A', kind: 'value', metavar: 'UA', help: 'send User-Agent: UA (a -H User-Agent wins)' },
  { name: 'data', short: 'd', kind: 'list', metavar: 'DATA', help: 'send DATA as the body; @FILE sends a file, @- stdin (repeatable, joined with &)' },
  { name: 'form', short: 'F', kind: 'list', metavar: 'name=value|name=@FILE', help: 'send a multipart form field or file (repeatable; ;type=… ;filename=… after a file)' },
  { name: 'json', kind: 'flag', help: 'send the data as JSON (Content-Type: application/json) and ask for JSON' },
  { name: 'include', short: 'i', kind: 'flag', help: 'print the status line and headers before the body (where the body goes)' },
  { name: 'head', short: 'I', kind: 'flag', help: 'send HEAD (unless -X) and print the status line and headers only' },
  { name: 'output', short: 'o', kind: 'value', metavar: 'FILE', help: 'write the body to FILE (progress bar on a terminal); - for stdout' },
  { name: 'remote-name', short: 'O', kind: 'flag', help: "write the body to a file in the current directory named like the URL's last path segment" },
  { name: 'fail', short: 'f', kind: 'flag', help: 'on a 4xx/5xx answer print no body and write no file (exit 4, the status line on stderr)' },
  { name: 'http2', kind: 'flag', help: 'use HTTP/2 (ALPN on https, prior knowledge on http)' },
  { name: 'http1', kind: 'flag', help: 'use HTTP/1.1 only' },
  { name: 'proxy', kind: 'value', metavar: 'URL', help: 'go through this proxy (http://, socks5://, socks5h://)' },
  { name: 'location', short: 'L', kind: 'flag', help: 'follow redirects (the default)' },
  { name: 'no-follow', kind: 'flag', help: 'do not follow redirects: print the 3xx response' },
  { name: 'max-time', short: 'm', kind: 'value', metavar: 'SECONDS', help: 'fail when the whole exchange takes longer (fractions allowed: 0.5; default: no limit)' },
  { name: 'timeout', kind: 'value', metavar: 'ms', help: 'the same limit in milliseconds' },
  { name: 'retry', kind: 'value', metavar: 'N', help: 'retry failed idempotent requests up to N times (default 0)' },
  { name: 'compressed', kind: 'flag', help: 'ask for a compressed response and decode it (the default; accepted for curl habits)' },
  { name: 'user', short: 'u', kind: 'value', metavar: 'USER:PASSWORD', help: 'basic authentication' },
  { name: 'cookies', kind: 'value', metavar: 'FILE', help: 'read and save cookies in FILE (Netscape cookies.txt, as curl -b/-c)' },
  { name: 'cache', kind: 'value', metavar: 'DIR', help: 'keep an HTTP cache in DIR across runs: a fresh stored response is answered without the network, a stale one revalidated' },
  { name: 'cacert', kind: 'value', metavar: 'FILE', help: 'trust the PEM certificate(s) in FILE for https' },
  { name: 'insecure', short: 'k', kind: 'flag', help: 'do not verify the server certificate' },
  { name: 'verbose', short: 'v', kind: 'count', help: "print status and headers, and a one-line trace per step on stderr; -vv adds each hop's headers" },
  { name: 'silent', short: 's', kind: 'flag', help: 'no progress bar, no error messages, no 4xx/5xx status line (the exit code tells)' },
  { name: 'show-error', short: 'S', kind: 'flag', help: 'with -s: print error messages and the 4xx/5xx status line anyway' },
  { name: 'help', short: 'h', kind: 'flag', help: 'this help' },
];

/** The `--help` text of a request command. */
export function requestHelp(command: string): string {
  return formatHelp({
    synopsis: `switchyard ${command} URL [options]`,
    description:
      `Sends a ${REQUEST_COMMANDS[command] ?? command.toUpperCase()} request to URL and prints the response body to stdout.\n` +
      'A 4xx/5xx answer also puts its status line on stderr. Options follow curl where curl has one.',
    options: REQUEST_OPTIONS,
    examples: [
      '# a page, with status and headers',
      'switchyard get -i https://example.com/',
      '# only the head (HEAD), or any method',
      'switchyard get -I https://example.com/',
      'switchyard get http://localhost:8080/cache/logo.png -X PURGE',
      '# JSON in, JSON out',
      `switchyard post http://localhost:8080/api/items --json -d '{"name":"tea"}'`,
      '# upload a file as a form',
      'switchyard post http://localhost:8080/upload -F file=@photo.jpg -F note=hi',
      '# download to big.bin with a progress bar, over HTTP/2, trusting a self-signed certificate',
      'switchyard get https://localhost:8443/big.bin -O --http2 --cacert cert.pem',
      '# in a script: no output on a 4xx/5xx, no chatter, at most 2.5 seconds',
      'switchyard get -fsS --max-time 2.5 http://localhost:8080/health',
      '# the second run answers from the cache in .http-cache while the response is fresh',
      'switchyard get https://example.com/data.json --cache .http-cache',
      '# keep a session',
      'switchyard post http://localhost:8080/login -d user=me --cookies jar.txt',
    ],
    exitCodes: '  0 a 1xx-3xx response, 4 a 4xx or 5xx response, 2 a usage error, 1 a network or other failure, 130 Ctrl-C',
  });
}

/** Runs a request command; resolves to the exit code. Usage errors are thrown as {@link UsageError}. */
export async function runRequest(command: string, argv: readonly string[], io: Io): Promise<number> {
  const commandMethod = REQUEST_COMMANDS[command];
  if (commandMethod === undefined) throw new UsageError(`unknown command ${JSON.stringify(command)}`);
  const line = await readCommandLine(argv, { command, options: REQUEST_OPTIONS, help: () => requestHelp(command), operand: 'URL', required: true }, io);
  if (line === null) return ExitCode.OK;
  const o = line.options;
  const url = normalizeUrl(line.operand!, command);
  if (o.http1 === true && o.http2 === true) throw new UsageError('--http1 and --http2 cannot be combined', command);
  if (o.location === true && o['no-follow'] === true) throw new UsageError('-L and --no-follow cannot be combined', command);
  const explicit = o.request as string | undefined;
  if (explicit !== undefined && !isToken(explicit)) throw new UsageError(`-X ${JSON.stringify(explicit)}: a method is a token (letters, digits, !#$%&'*+-.^_\`|~)`, command);
  const headOnly = o.head === true;
  const method = explicit ?? (headOnly ? 'HEAD' : commandMethod);
  const dataGiven = o.data !== undefined || o.form !== undefined;
  if (headOnly && explicit === undefined && dataGiven) throw new UsageError('-I sends HEAD, which carries no -d or -F body (add -X METHOD to send one)', command);
  const headers = parseHeaders((o.header as string[] | undefined) ?? [], command);
  const json = o.json === true;
  const body = await buildBody((o.data as string[] | undefined) ?? [], (o.form as string[] | undefined) ?? [], json, command, io.stdin);
  const has = (name: string): boolean => headers.some(([k]) => k.toLowerCase() === name);
  if (body.contentType !== undefined && !has('content-type')) headers.push(['Content-Type', body.contentType]);
  if (json && !has('accept')) headers.push(['Accept', 'application/json']);
  if (o['user-agent'] !== undefined && !has('user-agent')) headers.push(...parseHeaders([`User-Agent: ${o['user-agent'] as string}`], command));
  const timeout = timeoutMs(o['max-time'] as string | undefined, o.timeout as string | undefined, command);
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
  if (o.output !== undefined && o['remote-name'] === true) throw new UsageError('-o and -O cannot be combined', command);
  const outPath = o['remote-name'] === true ? remoteName(url, command) : (o.output as string | undefined);
  const toFile = outPath !== undefined && outPath !== '-';
  const silent = o.silent === true;
  // Messages a person reads on stderr: off with -s, back with -S.
  const speak = !silent || o['show-error'] === true;

  const cacheDir = o.cache as string | undefined;
  if (cacheDir === '') throw new UsageError('--cache needs a directory', command);
  const store = cacheDir !== undefined ? new DiskStore(cacheDir) : undefined;
  const kernel = await bootKernel(store);
  let file: OutputFile | null = null;
  let client: Client | null = null;
  let jar: CookieJar | undefined;
  const cookiePath = o.cookies as string | undefined;
  const abort = new AbortController();
  let interrupted = false;
  void io.waitForInterrupt().then(() => {
    interrupted = true;
    abort.abort();
  });
  try {
    if (o.http2 === true) requirePlugin(kernel, 'h2', '--http2', command);
    if (o.proxy !== undefined) requirePlugin(kernel, 'proxy', '--proxy', command);
    if (o.compressed === true) requirePlugin(kernel, 'decompression', '--compressed', command);
    if (cookiePath !== undefined) jar = await loadCookieFile(cookiePath);
    if (toFile) file = await openOutput(outPath);
    client = new Client({ kernel, ...(tlsConfig !== undefined ? { tlsConfig } : {}) });
    const { res, finalUrl } = await send(
      client,
      method,
      url,
      {
        headers,
        body: body.body,
        statusException: false,
        redirect: o['no-follow'] !== true,
        retry: retries > 0,
        retries,
        signal: abort.signal,
        ...(timeout > 0 ? { requestTimeout: timeout } : {}),
        ...(o.http1 === true ? { httpVersion: 'h1' as const } : o.http2 === true ? { httpVersion: 'h2' as const } : {}),
        ...(o.proxy !== undefined ? { proxy: o.proxy as string } : {}),
        ...(o.compressed === true ? { decompress: true } : {}),
        ...(jar !== undefined ? { cookiejar: jar } : {}),
        ...(basicauth !== undefined ? { basicauth } : {}),
      },
      {
        io,
        file,
        verbose,
        head: o.include === true || headOnly ? 'output' : verbose > 0 ? 'stdout' : 'none',
        bodyless: headOnly,
        fail: o.fail === true,
        progress: toFile && !silent && io.stderr.isTTY === true,
      },
    );
    if (res.status < 400) return ExitCode.OK;
    if (speak) await writeOut(io.stderr, `switchyard: ${statusLine(res)} (${method} ${finalUrl})\n`);
    return ExitCode.HTTP_ERROR;
  } catch (err) {
    if (interrupted) return ExitCode.INTERRUPTED;
    if (!speak && !(err instanceof UsageError) && !(err instanceof ArgumentError)) return ExitCode.FAILURE;
    throw err;
  } finally {
    client?.close();
    // What the cache is still writing must reach the disk before the process exits.
    await store?.settled();
    await file?.close();
    await kernel.close();
    if (jar !== undefined && cookiePath !== undefined) await saveCookieFile(cookiePath, jar);
  }
}

/** The request time limit in ms from `--max-time SECONDS` or `--timeout ms`; 0 for none. */
function timeoutMs(maxTime: string | undefined, ms: string | undefined, command: string): number {
  if (maxTime !== undefined && ms !== undefined) throw new UsageError('--max-time and --timeout cannot be combined (one limit, in seconds or in ms)', command);
  if (ms !== undefined) return intOption(ms, '--timeout', command);
  if (maxTime === undefined) return 0;
  if (!/^(\d+(\.\d*)?|\.\d+)$/.test(maxTime)) throw new UsageError(`option --max-time needs a number of seconds (such as 2 or 0.5), got ${JSON.stringify(maxTime)}`, command);
  const s = Number(maxTime);
  if (s > 2_000_000) throw new UsageError(`option --max-time must be at most 2000000 seconds, got ${maxTime}`, command);
  // A positive limit stays a limit: 0.0001 s is 1 ms, not "none".
  return s === 0 ? 0 : Math.max(1, Math.round(s * 1000));
}

/** The file `-O` writes: the URL path's last segment, as curl takes it (not decoded). */
function remoteName(url: string, command: string): string {
  const path = new URL(url).pathname;
  const name = path.slice(path.lastIndexOf('/') + 1);
  if (name === '' || name === '.' || name === '..') {
    throw new UsageError(`-O: ${url} has no file name at the end of its path; name the file with -o FILE`, command);
  }
  return name;
}

/** Where the response head is printed: with the body (`-i`, `-I`), on stdout (`-v`), or not. */
type HeadTarget = 'output' | 'stdout' | 'none';

interface SendOptions {
  io: Io;
  file: OutputFile | null;
  verbose: 0 | 1 | 2;
  head: HeadTarget;
  /** Print no body (`-I`). */
  bodyless: boolean;
  /** Print nothing for a 4xx/5xx answer (`-f`). */
  fail: boolean;
  progress: boolean;
}

/** Sends the request and writes the head and body where they go. */
async function send(client: Client, method: string, url: string, call: CallOptions, s: SendOptions): Promise<{ res: Response; finalUrl: string }> {
  const { io, file, verbose } = s;
  const bar = s.progress ? new ProgressBar(io.stderr) : null;
  const out = file?.stream ?? io.stdout;
  let head = '';
  let finalUrl = url;
  let failed = false;
  const sink = new BodySink(out, file !== null, {
    onStart: () => {
      file?.truncate();
      if (s.head === 'output') out.write(`${head}\n`);
      else if (s.head === 'stdout') io.stdout.write(`${head}\n`);
    },
    ...(bar !== null ? { onBytes: (n: number) => bar.add(n) } : {}),
  });
  // A failure of the target after the call gave up (the file closed under a pending write) has
  // nobody else to tell; the call's own failure is what gets reported.
  sink.on('error', () => undefined);
  const line = (text: string): void => void io.stderr.write(`${bar !== null ? '\r\x1b[K' : ''}${text}\n`);
  const printer = verbose > 0 ? verbosePrinter(verbose === 2 ? 2 : 1, line) : null;
  const trace = (ev: ClientEvent): void => {
    const e = ev as AnyClientEvent;
    if (e.type === 'ResponseHeadEvent') {
      // The head as received (before decoding rewrites Content-Encoding and Content-Length).
      head = headText(e.response);
      finalUrl = e.url;
      failed = s.fail && e.status >= 400;
      // The body of the last head is the one the sink gets.
      sink.drop = failed || s.bodyless;
      bar?.reset(failed || s.bodyless ? 0 : expectedLength(e.response, method));
    }
    printer?.(e);
    if (printer !== null) {
      const cached = cacheLine(ev);
      if (cached !== null) line(cached);
    }
  };
  try {
    // The command ends the sink itself (the head may still go into it after the body).
    const res = await client.request(method, url, { ...call, responseStream: { stream: sink, end: false }, trace });
    if (!failed) sink.start();
    await new Promise<void>((resolve, reject) => {
      sink.once('error', reject);
      sink.end(() => resolve());
    });
    bar?.finish(!failed);
    return { res, finalUrl };
  } finally {
    // After a failure, end the bar's line (if one was drawn) so the error message starts on its own.
    bar?.finish(false);
  }
}

/** The `-v` line of a cache plugin event (`--cache`), or null for another event. */
function cacheLine(e: ClientEvent): string | null {
  if (e instanceof CacheHitEvent) return `switchyard ~ cache ${e.status === 'hit' ? 'hit' : 'stale hit'} (age ${Math.floor(e.age)} s) ${e.url}`;
  if (e instanceof CacheMissEvent) return `switchyard ~ cache miss (${e.reason}) ${e.url}`;
  if (e instanceof CacheRevalidatedEvent) return `switchyard ~ cache revalidated (304) ${e.url}`;
  return null;
}

/** `HTTP/1.1 200 OK` (or `HTTP/2 200`). */
function statusLine(res: Response): string {
  const v = res.protoMajor >= 2 ? `HTTP/${res.protoMajor}` : `HTTP/${res.protoMajor}.${res.protoMinor}`;
  return `${v} ${res.status}${res.reason ? ` ${res.reason}` : ''}`;
}

/** The status line and the header lines. */
function headText(res: Response): string {
  const lines = [statusLine(res)];
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

/**
 * The file `-o`/`-O` writes. Opened before the request (a file that cannot be written fails
 * before anything is sent) but not truncated until the body starts, so a failed exchange
 * leaves an existing file as it was and removes one it created.
 */
interface OutputFile {
  readonly stream: WriteStream;
  /** Empties the file; called once, before the first byte. */
  truncate(): void;
  /** Closes it; removes it when it was created here and never written. */
  close(): Promise<void>;
}

async function openOutput(path: string): Promise<OutputFile> {
  const fail = (err: unknown): never => {
    throw new Error(`cannot write ${path}: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`);
  };
  let created = true;
  let handle: FileHandle;
  try {
    handle = await open(path, constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL, 0o666);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'EEXIST') fail(err);
    created = false;
    handle = await open(path, constants.O_WRONLY).catch(fail);
  }
  // A device (`-o /dev/null`) is written as it is; only a regular file is emptied first.
  const regular = (await handle.stat()).isFile();
  const stream = handle.createWriteStream({ start: 0 });
  let written = false;
  let closed: Promise<void> | null = null;
  return {
    stream,
    truncate: () => {
      if (written) return;
      written = true;
      if (regular) ftruncateSync(handle.fd, 0);
    },
    close: () =>
      (closed ??= (async () => {
        if (!stream.closed) {
          await new Promise<void>((resolve) => {
            stream.once('close', () => resolve());
            stream.destroy();
          });
        }
        if (created && !written) await unlink(path).catch(() => undefined);
      })()),
  };
}
