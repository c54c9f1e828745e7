/**
 * `switchyard ws URL`: an interactive WebSocket client. Each line of stdin goes out as a text
 * message; each message that comes in is printed on stdout, one per line (a binary message as
 * `[binary N bytes] <hex of the first 32>`, so a terminal stays readable).
 *
 * When stdin ends (Ctrl-D, or the end of a pipe) the answers still on their way are printed:
 * a ping goes out and, once its pong shows that the server has read everything sent, the
 * command waits until no message came for `--linger` ms (default 1000; 0 skips the wait).
 * A server may drop the answers to what it reads after a close frame (RFC 6455 §5.5.1 lets it),
 * so closing at once would lose `echo x | switchyard ws URL`'s echo. Then (also on Ctrl-C) it
 * sends a close frame (1000) and keeps printing until the server's close frame comes; without
 * one within 5 s the connection is dropped and the command fails, saying so.
 *
 * permessage-deflate is offered unless `--no-compress`. Exit codes as for requests: 0 after a
 * normal close, 4 when the handshake got a 4xx/5xx answer, 1 for any other failure (an
 * abnormal close, no close frame, a network error), 2 for usage errors.
 */
import { createInterface } from 'node:readline';
import { WebSocketError, WebSocketHandshakeError, WebSockets, type WebSocket, type WebSocketMessage } from '../plugins/websockets/index.js';
import { intOption, type OptionSpec } from './args.js';
import { readCommandLine } from './command.js';
import { ExitCode, UsageError } from './errors.js';
import { formatHelp } from './help.js';
import { writeOut, type Io } from './io.js';
import { parseHeaders, tlsOptions } from './request-options.js';

const COMMAND = 'ws';
/** How long the server's close frame may take after ours. */
const CLOSE_TIMEOUT_MS = 5000;
/** The default of `--linger`. */
const DEFAULT_LINGER_MS = 1000;

/** Options of `switchyard ws`. */
export const WS_OPTIONS: readonly OptionSpec[] = [
  { name: 'header', short: 'H', kind: 'list', metavar: "'Name: value'", help: 'add a handshake header (repeatable)' },
  { name: 'subprotocol', kind: 'list', metavar: 'NAME', help: 'offer a subprotocol (repeatable, most preferred first)' },
  { name: 'no-compress', kind: 'flag', help: 'do not offer permessage-deflate' },
  { name: 'cacert', kind: 'value', metavar: 'FILE', help: 'trust the PEM certificate(s) in FILE for wss' },
  { name: 'insecure', short: 'k', kind: 'flag', help: 'do not verify the server certificate' },
  { name: 'linger', kind: 'value', metavar: 'ms', help: `after stdin ends, print answers until none came for ms, then close (default ${DEFAULT_LINGER_MS}; 0: close at once)` },
  { name: 'quiet', short: 'q', kind: 'flag', help: 'no connection notes on stderr' },
  { name: 'help', short: 'h', kind: 'flag', help: 'this help' },
];

/** The `--help` text of `switchyard ws`. */
export function wsHelp(): string {
  return formatHelp({
    synopsis: 'switchyard ws URL [options]',
    description:
      'Opens a WebSocket to URL (ws:// or wss://). Lines typed (or piped) on stdin are sent as text messages;\n' +
      'messages received are printed on stdout, one per line. When stdin ends (Ctrl-D) the answers still coming are\n' +
      `printed until none came for --linger ms; then, or on Ctrl-C, a close frame (1000) goes out and the command ends\n` +
      `with the server's close frame (failing when none comes within ${CLOSE_TIMEOUT_MS / 1000} s).`,
    options: WS_OPTIONS,
    examples: [
      '# chat with a server',
      'switchyard ws ws://localhost:8080/chat',
      '# send one message, print the answers, close when stdin ends',
      'echo \'{"type":"ping"}\' | switchyard ws wss://localhost:8443/events --cacert cert.pem',
      '# a slow server: wait up to 5 s of silence for its answers',
      'switchyard ws ws://localhost:8080/report --linger 5000 < queries.txt',
    ],
    exitCodes: '  0 a normal close, 4 a 4xx or 5xx handshake answer, 2 a usage error, 1 any other failure',
  });
}

/** Runs `switchyard ws`; resolves to the exit code. */
export async function runWs(argv: readonly string[], io: Io): Promise<number> {
  const line = await readCommandLine(argv, { command: COMMAND, options: WS_OPTIONS, help: wsHelp, operand: 'URL', required: true }, io);
  if (line === null) return ExitCode.OK;
  const o = line.options;
  const url = wsUrl(line.operand!);
  const headers = parseHeaders((o.header as string[] | undefined) ?? [], COMMAND);
  const tls = await tlsOptions(o.cacert as string | undefined, o.insecure === true, COMMAND);
  const lingerMs = o.linger === undefined ? DEFAULT_LINGER_MS : intOption(o.linger as string, '--linger', COMMAND, 0, 3_600_000);
  const quiet = o.quiet === true;
  const note = (text: string): void => {
    if (!quiet) io.stderr.write(`switchyard ws: ${text}\n`);
  };
  try {
    await WebSockets.open(url, (ws) => session(ws, url, io, note, lingerMs), {
      headers,
      compress: o['no-compress'] !== true,
      ...(o.subprotocol !== undefined ? { subprotocols: o.subprotocol as string[] } : {}),
      ...(tls !== undefined ? { tls } : {}),
    });
    return ExitCode.OK;
  } catch (err) {
    if (err instanceof WebSocketHandshakeError && err.status >= 400) {
      await writeOut(io.stderr, `switchyard: ${err.message}\n`);
      return ExitCode.HTTP_ERROR;
    }
    throw err;
  }
}

/** Pumps stdin lines out and messages in until one side ends; then closes with the handshake. */
async function session(ws: WebSocket, url: string, io: Io, note: (text: string) => void, lingerMs: number): Promise<void> {
  const details = [ws.subprotocol !== null ? `subprotocol ${ws.subprotocol}` : '', ws.extensions !== '' ? ws.extensions : ''].filter((s) => s !== '');
  note(`connected to ${url}${details.length > 0 ? ` (${details.join('; ')})` : ''}`);
  const lines = createInterface({ input: io.stdin, crlfDelay: Infinity, terminal: false });
  let failure: unknown = null;
  // Told of each message printed while lingering after stdin ended.
  const watcher: Watcher = { onMessage: null };
  const reader = (async () => {
    try {
      for await (const msg of ws) {
        io.stdout.write(`${show(msg)}\n`);
        watcher.onMessage?.();
      }
    } catch (err) {
      failure = err;
    }
  })();
  const sender = (async () => {
    for await (const line of lines) {
      if (ws.isClosed) break;
      // A send refused because the connection closed meanwhile: the reader reports why.
      await ws.send(line).catch(() => undefined);
    }
  })();
  let stop = false;
  const interrupted = io.waitForInterrupt().then(() => {
    stop = true;
  });
  await Promise.race([reader, sender, interrupted]);
  lines.close();
  if (!stop && !ws.isClosed && lingerMs > 0) await linger(ws, lingerMs, Promise.race([reader, interrupted]), watcher);
  if (!ws.isClosed) {
    let timer: NodeJS.Timeout | undefined;
    const answered = await Promise.race([ws.close(1000).then(() => true), new Promise<false>((resolve) => (timer = setTimeout(() => resolve(false), CLOSE_TIMEOUT_MS)))]);
    clearTimeout(timer);
    if (!answered) {
      ws.terminate();
      await reader;
      throw new Error(`the server sent no close frame within ${CLOSE_TIMEOUT_MS / 1000} s of ours; dropped the connection`);
    }
  }
  await reader;
  if (failure !== null && !(failure instanceof WebSocketError && failure.isNormal)) throw failure;
  note(`closed${ws.closeCode !== null ? ` (${ws.closeCode}${ws.closeReason ? ` ${ws.closeReason}` : ''})` : ''}`);
}

/** Where the reader reports each message it printed. */
interface Watcher {
  onMessage: (() => void) | null;
}

/**
 * After stdin ended: waits for the pong of a ping sent now (the server has then read every
 * message before it; frames arrive in order), then until `ms` pass without a message. Ends
 * early on `done` (the connection closed, or Ctrl-C).
 */
async function linger(ws: WebSocket, ms: number, done: Promise<void>, watcher: Watcher): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  try {
    // A server that never answers pings gets the close timeout's worth of patience, no more.
    const pongOrTimeout = new Promise<void>((resolve) => (timer = setTimeout(resolve, CLOSE_TIMEOUT_MS)));
    await Promise.race([ws.ping().catch(() => undefined), pongOrTimeout, done]);
    clearTimeout(timer);
    await Promise.race([
      done,
      new Promise<void>((resolve) => {
        timer = setTimeout(resolve, ms);
        watcher.onMessage = () => {
          clearTimeout(timer);
          timer = setTimeout(resolve, ms);
        };
      }),
    ]);
  } finally {
    clearTimeout(timer);
    watcher.onMessage = null;
  }
}

function show(msg: WebSocketMessage): string {
  if (typeof msg === 'string') return msg;
  const hex = Buffer.from(msg.buffer, msg.byteOffset, Math.min(32, msg.byteLength)).toString('hex');
  return `[binary ${msg.byteLength} bytes] ${hex}${msg.byteLength > 32 ? '…' : ''}`;
}

function wsUrl(raw: string): string {
  let u: URL;
  try {
    u = new URL(/^[a-zA-Z][a-zA-Z0-9+.-]*:\/\//.test(raw) ? raw : `ws://${raw}`);
  } catch {
    throw new UsageError(`invalid URL ${JSON.stringify(raw)}`, COMMAND);
  }
  if (u.protocol !== 'ws:' && u.protocol !== 'wss:') throw new UsageError(`ws needs a ws:// or wss:// URL, got ${JSON.stringify(raw)}`, COMMAND);
  return u.href;
}
