/**
 * Help texts: the top-level overview and the layout every command's `--help` shares
 * (synopsis, description, options, examples, exit codes).
 */
import { optionLines, type OptionSpec } from './args.js';

/** The parts of one command's help. */
export interface CommandHelp {
  /** `switchyard get URL [options]`. */
  readonly synopsis: string;
  /** A few lines on what it does. */
  readonly description: string;
  /** Its options. */
  readonly options: readonly OptionSpec[];
  /** Example command lines, each with a `# comment` line before it. */
  readonly examples: readonly string[];
  /** Exit codes, when the command has its own. */
  readonly exitCodes?: string;
}

/** The `--help` text of a command. */
export function formatHelp(h: CommandHelp): string {
  const parts = [`Usage: ${h.synopsis}`, '', h.description, '', 'Options:', optionLines(h.options), '', 'Examples:', h.examples.map((e) => `  ${e}`).join('\n')];
  if (h.exitCodes !== undefined) parts.push('', 'Exit codes:', h.exitCodes);
  return `${parts.join('\n')}\n`;
}

/** `switchyard --help`. */
export const TOP_HELP = `Usage: switchyard <command> [options]

HTTP from the command line, on the switchyard library (HTTP/1.1 and HTTP/2 client and server).

Requests:
  switchyard get|head|post|put|patch|delete|query|options URL [options]
      Send one request; print the body (-i: the head too; -I: the head only).
      Most of curl's options, as curl has them: -X METHOD, -H, -d, -F, -o, -O, -i, -I, -f, -s, -S, -A,
      -u, -k, -m/--max-time SECONDS, --compressed. A 4xx/5xx status line goes to stderr.

Server:
  switchyard serve [DIR] [options]
      Serve a directory: ETags, ranges, HTTP/2, directory listings, an access log.

WebSocket:
  switchyard ws URL [options]
      A WebSocket client: lines from stdin out, messages in to stdout; when stdin ends,
      the answers still coming are printed, then the connection is closed with a handshake.

Run 'switchyard <command> --help' for a command's options and examples.
  -h, --help      this text
      --version   the version

Exit codes: 0 success (2xx), 1 network or other failure, 2 usage error, 4 a 4xx or 5xx response,
130 stopped by Ctrl-C.
`;
