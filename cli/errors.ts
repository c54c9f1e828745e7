/**
 * Exit codes of the `switchyard` command and the error for wrong command lines.
 */

/** What the command exits with. */
export const ExitCode = Object.freeze({
  /** A 1xx–3xx response (a 3xx only when not followed), or a command that finished normally. */
  OK: 0,
  /** A network, TLS, protocol, timeout or file error: the error's message is on stderr. */
  FAILURE: 1,
  /** A wrong command line: unknown option, missing value, bad URL, … */
  USAGE: 2,
  /** The server answered with a 4xx or 5xx status. */
  HTTP_ERROR: 4,
  /** Stopped by Ctrl-C (SIGINT) before it finished, as a shell reports a command killed by it. */
  INTERRUPTED: 130,
});

/** A command line the tool cannot run; its message says what was wrong. Exit code 2. */
export class UsageError extends Error {
  /** The command it is about (`get`, `serve`, …), or '' for the top level; named in the hint. */
  readonly command: string;

  constructor(message: string, command = '') {
    super(message);
    this.name = 'UsageError';
    this.command = command;
  }
}
