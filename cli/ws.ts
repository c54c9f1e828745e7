/**
 * `switchyard ws URL`: an interactive WebSocket client. Each line of stdin goes out as a text
 * message; each message that comes in is printed on stdout, one per line (a binary message as
 * `[binary N bytes] <hex of the first 32>`, so a terminal stays readable).
 *
 * It ends when stdin ends (Ctrl-D) or on Ctrl-C (closing with 1000), or when the server closes.
 * permessage-deflate is offered unless `--no-compress`. Exit codes as for requests: 0 after a
 * normal close, 4 when the handshake got a 4xx/5xx answer, 1 for any other failure (an
 * abnormal close, a network error), 2 for usage errors.
 */
import { createInterface } from 'node:readline';
import { WebSocketError, WebSocketHandshakeError, WebSockets, type WebSocket, type WebSocketMessage } from '../plugins/websockets/index.js';
import { parseArgs, type OptionSpec } from './args.js';
import { ExitCode, UsageError } from './errors.js';
import { formatHelp } from './help.js';
import { writeOut, type Io } from './io.js';
import { parseHeaders, tlsOptions } from './request-options.js';

const COMMAND = 'ws';

/** Options of `switchyard ws`. */
export const WS_OPTIONS: readonly OptionSpec[] = [
  { name: 'header', short: 'H', kind: 'list', metavar: "'Name: value'", help: 'add a handshake header (repeatable)' },
  { name: 'subprotocol', kind: 'list', metavar: 'NAME', help: 'offer a subprotocol (repeatable, most preferred first)' },
  { name: 'no-compress', kind: 'flag', help: 'do not offer permessage-deflate' },
  { name: 'cacert', kind: 'value', metavar: 'FILE', help: 'trust the PEM certificate(s) in FILE for wss' },
  { name: 'insecure', short: 'k', kind: 'flag', help: 'do not verify the server certificate' },
  { name: 'quiet', short: 'q', kind: 'flag', help: 'no connection notes on stderr' },
  { name: 'help', short: 'h', kind: 'flag', help: 'this help' },
];

/** The `--help` text of `switchyard ws`. */
export function wsHelp(): string {
  return formatHelp({
    synopsis: 'switchyard ws URL [options]',
    description:
      'Opens a WebSocket to URL (ws:// or wss://). Lines typed (or piped) on stdin are sent as text messages;\n' +
      'messages received are printed on stdout, one per line. Ctrl-D or Ctrl-C closes the connection.',
    options: WS_OPTIONS,
    examples: [
      '# chat with a server',
      'switchyard ws ws://localhost:8080/chat',
      '# send one message and stop when stdin ends',
      "echo '{\"type\":\"ping\"}' | switchyard ws wss://localhost:8443/events --cacert cert.pem",
    ],
    exitCodes: '  0 a normal close, 4 a 4xx or 5xx handshake answer, 2 a usage error, 1 any other failure',
  });
}

/** Runs `switchyard ws`; resolves to the exit code. */
export async function runWs(argv: readonly string[], io: Io): Promise<number> {
  const { options: o, positionals } = parseArgs(argv, WS_OPTIONS, COMMAND);
  if (o.help === true) {
    await writeOut(io.stdout, wsHelp());
    return ExitCode.OK;
  }
  if (positionals.length === 0) throw new UsageError('no URL given', COMMAND);
  if (positionals.length > 1) throw new UsageError(`one URL expected, got ${positionals.length}`, COMMAND);
  const url = wsUrl(positionals[0]!);
  const headers = parseHeaders((o.header as string[] | undefined) ?? [], COMMAND);
  const tls = await tlsOptions(o.cacert as string | undefined, o.insecure === true, COMMAND);
  const quiet = o.quiet === true;
  const note = (text: string): void => {
    if (!quiet) io.stderr.write(`switchyard ws: ${text}\n`);
  };
  try {
    await WebSockets.open(url, (ws) => session(ws, url, io, note), {
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

/** Pumps stdin lines out and messages in until one side ends. */
async function session(ws: WebSocket, url: string, io: Io, note: (text: string) => void): Promise<void> {
  const details = [ws.subprotocol !== null ? `subprotocol ${ws.subprotocol}` : '', ws.extensions !== '' ? ws.extensions : ''].filter((s) => s !== '');
  note(`connected to ${url}${details.length > 0 ? ` (${details.join('; ')})` : ''}`);
  const lines = createInterface({ input: io.stdin, crlfDelay: Infinity, terminal: false });
  let failure: unknown = null;
  const reader = (async () => {
    try {
      for await (const msg of ws) io.stdout.write(`${show(msg)}\n`);
    } catch (err) {
      failure = err;
    }
  })();
  const sender = (async () => {
    for await (const line of lines) {
      if (ws.isClosed) break;
      await ws.send(line);
    }
  })();
  const interrupted = io.waitForInterrupt();
  await Promise.race([reader, sender, interrupted]);
  lines.close();
  if (!ws.isClosed) await ws.close(1000).catch(() => undefined);
  await reader;
  if (failure !== null && !(failure instanceof WebSocketError && failure.isNormal)) throw failure;
  note(`closed${ws.closeCode !== null ? ` (${ws.closeCode}${ws.closeReason ? ` ${ws.closeReason}` : ''})` : ''}`);
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
