/**
 * What every command does first: parse its arguments, answer `--help`, and take its one operand
 * (a URL, a directory), so each command states only what is its own.
 */
import { parseArgs, type OptionSpec, type ParsedArgs } from './args.js';
import { UsageError } from './errors.js';
import { writeOut, type Io } from './io.js';

/** How a command reads its line. */
export interface CommandSpec {
  /** The command's name, for error messages (`get`, `serve`). */
  readonly command: string;
  /** Its options; each must include `help`. */
  readonly options: readonly OptionSpec[];
  /** Its `--help` text. */
  readonly help: () => string;
  /** What its one operand is, for error messages (`URL`, `directory`). */
  readonly operand: string;
  /** When true, a missing operand is a usage error; else the command has a default for it. */
  readonly required: boolean;
}

/** A parsed command line: the options, and the operand (undefined when it may be left out and was). */
export interface CommandLine {
  /** See {@link ParsedArgs.options}. */
  readonly options: ParsedArgs['options'];
  /** The one operand given. */
  readonly operand: string | undefined;
}

/**
 * Parses `argv` for a command. With `--help` the help text goes to stdout and the result is
 * null (the command then ends with exit code 0). More than one operand, or none when it is
 * required, is a {@link UsageError}.
 */
export async function readCommandLine(argv: readonly string[], spec: CommandSpec, io: Io): Promise<CommandLine | null> {
  const { options, positionals } = parseArgs(argv, spec.options, spec.command);
  if (options.help === true) {
    await writeOut(io.stdout, spec.help());
    return null;
  }
  if (positionals.length === 0 && spec.required) throw new UsageError(`no ${spec.operand} given`, spec.command);
  if (positionals.length > 1) {
    throw new UsageError(`one ${spec.operand} expected, got ${positionals.length}: ${positionals.map((p) => JSON.stringify(p)).join(' ')}`, spec.command);
  }
  return { options, operand: positionals[0] };
}
