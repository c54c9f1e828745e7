/**
 * A small command-line parser: long options (`--name value`, `--name=value`), short options
 * (`-H value`, `-Hvalue`, grouped flags `-vL`), counted flags (`-vv`), repeatable values and
 * `--` to end the options. Every mistake is a {@link UsageError} that names the option.
 */
import { editDistance } from '../kernel/index.js';
import { UsageError } from './errors.js';

/** How an option takes its argument. */
export type OptionKind =
  /** A switch: present or not. */
  | 'flag'
  /** A switch that may repeat: the value is how often it was given (`-vv` is 2). */
  | 'count'
  /** One value; given twice, the last wins. */
  | 'value'
  /** A value that may repeat; the values in order. */
  | 'list';

/** One option a command accepts. */
export interface OptionSpec {
  /** The long name without dashes (`header`), also the key in the parsed result. */
  readonly name: string;
  /** A one-letter alias without the dash (`H`). */
  readonly short?: string;
  /** See {@link OptionKind}. */
  readonly kind: OptionKind;
  /** Name of the value in help texts (`FILE`, `ms`). */
  readonly metavar?: string;
  /** One line for the help text. */
  readonly help: string;
}

/** The parsed command line: options by long name, and the positional arguments. */
export interface ParsedArgs {
  /** Flags are `true`, counts numbers, values strings, lists string arrays; absent options are missing. */
  readonly options: Readonly<Record<string, boolean | number | string | readonly string[]>>;
  /** Arguments that are not options, in order. */
  readonly positionals: readonly string[];
}

/** Parses `argv` (the arguments after the command name) against `specs`. `command` names the command in error messages. */
export function parseArgs(argv: readonly string[], specs: readonly OptionSpec[], command: string): ParsedArgs {
  const byLong = new Map<string, OptionSpec>();
  const byShort = new Map<string, OptionSpec>();
  for (const s of specs) {
    byLong.set(s.name, s);
    if (s.short !== undefined) byShort.set(s.short, s);
  }
  const options: Record<string, boolean | number | string | string[]> = {};
  const positionals: string[] = [];

  const set = (spec: OptionSpec, shown: string, value: string | undefined): void => {
    switch (spec.kind) {
      case 'flag':
        if (value !== undefined) throw new UsageError(`option ${shown} takes no value (got ${JSON.stringify(value)})`, command);
        options[spec.name] = true;
        return;
      case 'count':
        if (value !== undefined) throw new UsageError(`option ${shown} takes no value (got ${JSON.stringify(value)})`, command);
        options[spec.name] = ((options[spec.name] as number | undefined) ?? 0) + 1;
        return;
      case 'value':
        options[spec.name] = value!;
        return;
      case 'list':
        ((options[spec.name] as string[] | undefined) ?? (options[spec.name] = [])).push(value!);
        return;
    }
  };
  const takesValue = (s: OptionSpec): boolean => s.kind === 'value' || s.kind === 'list';

  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i]!;
    if (arg === '--') {
      positionals.push(...argv.slice(i + 1));
      break;
    }
    if (arg.startsWith('--')) {
      const eq = arg.indexOf('=');
      const name = eq < 0 ? arg.slice(2) : arg.slice(2, eq);
      const spec = byLong.get(name);
      if (spec === undefined) throw new UsageError(`unknown option --${name}${suggest(name, specs)}`, command);
      let value: string | undefined = eq < 0 ? undefined : arg.slice(eq + 1);
      if (takesValue(spec) && value === undefined) {
        if (i + 1 >= argv.length) throw new UsageError(`option --${name} needs a value (${spec.metavar ?? 'VALUE'})`, command);
        value = argv[++i];
      }
      set(spec, `--${name}`, value);
      continue;
    }
    if (arg.startsWith('-') && arg.length > 1) {
      // A group of short options: flags until one that takes a value, which takes the rest.
      for (let j = 1; j < arg.length; j++) {
        const letter = arg[j]!;
        const spec = byShort.get(letter);
        if (spec === undefined) {
          // `-max-time` is a long option with one dash missing more often than a group of letters.
          const long = arg.length > 2 ? suggest(arg.slice(1).split('=')[0]!, specs) : '';
          throw new UsageError(`unknown option -${letter}${arg.length > 2 ? ` (in ${JSON.stringify(arg)})` : ''}${long}`, command);
        }
        if (!takesValue(spec)) {
          set(spec, `-${letter}`, undefined);
          continue;
        }
        let value = arg.slice(j + 1);
        if (value === '') {
          if (i + 1 >= argv.length) throw new UsageError(`option -${letter} needs a value (${spec.metavar ?? 'VALUE'})`, command);
          value = argv[++i]!;
        }
        set(spec, `-${letter}`, value);
        break;
      }
      continue;
    }
    positionals.push(arg);
  }
  return { options, positionals };
}

/**
 * ` (did you mean --x?)` for a close long name, else '': the nearest within two edits (one for
 * names of up to four letters, where two edits reach almost anything), or the one option the
 * name is a prefix of (`--verb`).
 */
function suggest(name: string, specs: readonly OptionSpec[]): string {
  let best = '';
  let bestD = name.length <= 4 ? 2 : 3;
  for (const s of specs) {
    const d = editDistance(name, s.name);
    if (d < bestD) {
      bestD = d;
      best = s.name;
    }
  }
  if (best === '' && name.length >= 3) {
    const starts = specs.filter((s) => s.name.startsWith(name));
    if (starts.length === 1) best = starts[0]!.name;
  }
  return best === '' ? '' : ` (did you mean --${best}?)`;
}

/** A non-negative integer option value, or a usage error naming the option. */
export function intOption(value: string, shown: string, command: string, min = 0, max = Number.MAX_SAFE_INTEGER): number {
  if (!/^\d+$/.test(value)) throw new UsageError(`option ${shown} needs a whole number, got ${JSON.stringify(value)}`, command);
  const n = Number(value);
  if (n < min || n > max) throw new UsageError(`option ${shown} must be from ${min} to ${max}, got ${n}`, command);
  return n;
}

/** The help lines of `specs`: `  -H, --header 'Name: value'   help`. */
export function optionLines(specs: readonly OptionSpec[]): string {
  const rows = specs.map((s) => {
    const left = `${s.short !== undefined ? `-${s.short}, ` : '    '}--${s.name}${s.metavar !== undefined ? ` ${s.metavar}` : ''}`;
    return [left, s.help] as const;
  });
  const w = Math.max(...rows.map((r) => r[0].length)) + 2;
  return rows.map(([l, h]) => `  ${l.padEnd(w)}${h}`).join('\n');
}
