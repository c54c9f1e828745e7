/**
 * The `switchyard` command: picks the subcommand, turns every failure into a message on
 * stderr and an exit code (see {@link ExitCode}). `run()` is what the binary calls;
 * `main()` takes the arguments and streams, for callers that bring their own.
 */
import { readFileSync } from 'node:fs';
import { ArgumentError, TLSHandshakeError } from '../kernel/index.js';
import { ExitCode, UsageError } from './errors.js';
import { TOP_HELP } from './help.js';
import { writeOut, type Io } from './io.js';
import { REQUEST_COMMANDS } from './commands.js';

export { ExitCode, UsageError } from './errors.js';

/** Runs one command line (without the program name); resolves to the exit code. Never throws. */
export async function main(argv: readonly string[], io: Io): Promise<number> {
  const [cmd, ...rest] = argv;
  try {
    if (cmd === undefined) {
      await writeOut(io.stderr, TOP_HELP);
      return ExitCode.USAGE;
    }
    if (cmd === '-h' || cmd === '--help' || cmd === 'help') {
      // `switchyard help get` is `switchyard get --help`.
      if (cmd === 'help' && rest[0] !== undefined) return await main([rest[0], '--help'], io);
      await writeOut(io.stdout, TOP_HELP);
      return ExitCode.OK;
    }
    if (cmd === '--version' || cmd === '-V') {
      await writeOut(io.stdout, `switchyard ${version()}\n`);
      return ExitCode.OK;
    }
    // Each command's module (and the plugins it needs) loads when that command runs, so help,
    // --version and usage errors load none of them.
    if (Object.hasOwn(REQUEST_COMMANDS, cmd)) return await (await import('./request.js')).runRequest(cmd, rest, io);
    if (cmd === 'serve') return await (await import('./serve.js')).runServe(rest, io);
    if (cmd === 'ws') return await (await import('./ws.js')).runWs(rest, io);
    if (cmd.startsWith('-')) throw new UsageError(`${cmd} before a command: options follow the command (switchyard get URL ${cmd} …)`);
    // A URL where the command goes: curl takes the URL first, this tool the method.
    if (/^(https?|wss?):\/\//i.test(cmd)) {
      throw new UsageError(`${JSON.stringify(cmd)} is a URL, not a command: put the method first (switchyard ${/^ws/i.test(cmd) ? 'ws' : 'get'} ${cmd} …)`);
    }
    throw new UsageError(`unknown command ${JSON.stringify(cmd)}: expected ${[...Object.keys(REQUEST_COMMANDS), 'serve', 'ws'].join(', ')}`);
  } catch (err) {
    return report(err, cmd ?? '', io);
  }
}

/** Prints `err` and gives its exit code: usage and argument errors 2, everything else 1. */
async function report(err: unknown, cmd: string, io: Io): Promise<number> {
  if (err instanceof UsageError) {
    const c = err.command !== '' ? err.command : '';
    const hint = c !== '' ? `Run 'switchyard ${c} --help' for its options.` : `Run 'switchyard --help' for the commands.`;
    await writeOut(io.stderr, `switchyard${c !== '' ? ` ${c}` : ''}: ${err.message}\n${hint}\n`);
    return ExitCode.USAGE;
  }
  if (err instanceof ArgumentError) {
    await writeOut(io.stderr, `switchyard ${cmd}: ${err.message}\n`);
    return ExitCode.USAGE;
  }
  const tls = certificateFailure(err);
  if (tls !== null) {
    // The library's advice names its own options; a command line has --cacert and -k for them.
    const fix =
      tls.certificateError === 'ERR_TLS_CERT_ALTNAME_INVALID' || tls.certificateError === 'HOSTNAME_MISMATCH'
        ? 'the certificate is for another name: use a URL with a name it lists'
        : tls.certificateError === 'CERT_HAS_EXPIRED' || tls.certificateError === 'CERT_NOT_YET_VALID'
          ? "the certificate is outside its validity dates (check the server certificate, and this machine's clock)"
          : "the server's certificate is not signed by a CA this machine trusts: pass that CA's certificate with --cacert FILE, or for a test only skip the check with -k";
    await writeOut(io.stderr, `switchyard: TLS handshake failed: ${describe(tls.cause)}; ${fix}\n`);
    return ExitCode.FAILURE;
  }
  await writeOut(io.stderr, `switchyard: ${describe(err)}\n`);
  return ExitCode.FAILURE;
}

/** The TLS handshake failure about the server's certificate in `err`'s cause chain, or null. */
function certificateFailure(err: unknown): TLSHandshakeError | null {
  for (let e: unknown = err, depth = 0; e instanceof Error && depth < 8; e = e.cause, depth++) {
    if (e instanceof TLSHandshakeError && e.certificateError !== null) return e;
  }
  return null;
}

function describe(err: unknown): string {
  if (err instanceof Error) return err.message !== '' ? err.message : err.name;
  return String(err);
}

function version(): string {
  // ../package.json from cli/ (sources), ../../package.json from dist/cli/ (the build).
  for (const rel of ['../package.json', '../../package.json']) {
    try {
      const pkg = JSON.parse(readFileSync(new URL(rel, import.meta.url), 'utf8')) as { name?: string; version?: string };
      if (pkg.name === 'switchyard' && typeof pkg.version === 'string') return pkg.version;
    } catch {
      // not there: try the next
    }
  }
  return 'unknown';
}

/**
 * The binary's entry: runs `process.argv`, waits until stdout and stderr have taken
 * everything, and exits with the code (explicitly, so a lingering handle never keeps a
 * finished command alive).
 */
export async function run(argv: readonly string[] = process.argv.slice(2)): Promise<never> {
  // A reader that went away (`| head`) ends the command quietly.
  process.stdout.on('error', (err: NodeJS.ErrnoException) => {
    if (err.code === 'EPIPE') process.exit(ExitCode.OK);
  });
  let interrupt: Promise<void> | null = null;
  const io: Io = {
    stdin: process.stdin,
    stdout: process.stdout,
    stderr: process.stderr,
    env: process.env,
    waitForInterrupt: () =>
      (interrupt ??= new Promise<void>((resolve) => {
        const stop = (): void => {
          // A second Ctrl-C does not wait for a graceful close.
          process.once('SIGINT', () => process.exit(130));
          resolve();
        };
        process.once('SIGINT', stop);
        process.once('SIGTERM', stop);
      })),
  };
  const code = await main(argv, io);
  await writeOut(process.stdout, '');
  await writeOut(process.stderr, '');
  process.exit(code);
}
