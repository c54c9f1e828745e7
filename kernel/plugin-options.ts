/**
 * Plugins' options: the checks a plugin declares for the call options it reads and for its own
 * options, and which plugin reads which call option name (so a client can say which plugin an
 * option needs). Nothing here depends on the kernel or the client.
 */
import { describe } from './describe.js';
import { ArgumentError } from './errors.js';
import { checkOptionKeys } from './option-keys.js';

/**
 * Checks one value of a plugin's call option: null when it is good, else what the option
 * takes, as the end of a sentence (`'an integer >= 0'`, `'a CookieJar or false'`).
 */
export type OptionCheck = (value: unknown) => string | null;

/** The plugin that reads a call option, and its check. */
export interface CallOptionOwner {
  /** The plugin's name. */
  readonly plugin: string;
  /** Checks a value of the option. */
  readonly check: OptionCheck;
}

/** Every plugin call option defined so far (in this process), by name. */
const callOptionOwners = new Map<string, CallOptionOwner>();
/** Names the kernel reads itself; set by the client's options module (kept here so this file needs nothing of the client). */
let kernelCallOptions: ReadonlySet<string> = new Set();

/** @internal The kernel's own call option names, which no plugin may claim. */
export function setKernelCallOptions(names: ReadonlySet<string>): void {
  kernelCallOptions = names;
}

/** @internal Records the call options of a plugin being defined; refuses a name the kernel or another plugin reads. */
export function declareCallOptions(plugin: string, table: Readonly<Record<string, OptionCheck>>): void {
  if (typeof table !== 'object' || table === null) throw new ArgumentError(`definePlugin('${plugin}'): callOptions must be an object of { name: check }`);
  for (const [key, check] of Object.entries(table)) {
    if (typeof check !== 'function') throw new ArgumentError(`definePlugin('${plugin}'): callOptions.${key} must be a check function (value) => string | null`);
    if (kernelCallOptions.has(key)) throw new ArgumentError(`definePlugin('${plugin}'): the call option ${JSON.stringify(key)} is the kernel's own; pick another name`);
    const owner = callOptionOwners.get(key);
    // The same plugin defined again (a second copy of its module) takes its name over.
    if (owner !== undefined && owner.plugin !== plugin) {
      throw new ArgumentError(`definePlugin('${plugin}'): the call option ${JSON.stringify(key)} belongs to plugin "${owner.plugin}"; pick another name`);
    }
    callOptionOwners.set(key, Object.freeze({ plugin, check }));
  }
}

/** The plugin that reads call option `key` (of every plugin defined so far), or undefined. */
export function callOptionOwner(key: string): CallOptionOwner | undefined {
  return callOptionOwners.get(key);
}

/** Names of every plugin call option defined so far (for suggestions). */
export function pluginCallOptionNames(): Iterable<string> {
  return callOptionOwners.keys();
}

/**
 * Checks a plugin's own options object (what `kernel.register(plugin, options)` passed) against
 * a table of {@link OptionCheck}s, typically the plugin's `callOptions`: not an object, an
 * unknown name (with the nearest valid one) or a bad value is an `ArgumentError` starting
 * with `where` (`register(retries, …)`).
 */
export function checkPluginOptions(options: unknown, table: Readonly<Record<string, OptionCheck>>, where: string): void {
  if (typeof options !== 'object' || options === null) throw new ArgumentError(`${where}: options must be an object, got ${describe(options)}`);
  checkOptionKeys(options, new Set(Object.keys(table)), where);
  for (const [key, check] of Object.entries(table)) {
    const v = (options as Record<string, unknown>)[key];
    if (v === undefined) continue;
    const expected = check(v);
    if (expected !== null) throw new ArgumentError(`${where}: ${key} must be ${expected}, got ${describe(v)}`);
  }
}

/** Ready-made {@link OptionCheck}s for the common kinds of option values. */
export const OptionChecks = Object.freeze({
  /** `true` or `false`. */
  boolean: ((v) => (typeof v === 'boolean' ? null : 'a boolean (true or false)')) as OptionCheck,
  /** A function. */
  function: ((v) => (typeof v === 'function' ? null : 'a function')) as OptionCheck,
  /** An integer of at least `min`. */
  integer: (min: number): OptionCheck => (v) => (typeof v === 'number' && Number.isInteger(v) && v >= min ? null : `an integer >= ${min}`),
  /** A finite number of milliseconds, 0 or more. */
  milliseconds: ((v) => (typeof v === 'number' && Number.isFinite(v) && v >= 0 ? null : 'a number of milliseconds >= 0')) as OptionCheck,
  /** An instance of `type` (named `name` in the message). */
  instance: (type: abstract new (...args: never[]) => unknown, name: string): OptionCheck => (v) => (v instanceof type ? null : `a ${name}`),
});
