/**
 * Plugins' options: the checks a plugin declares for the call options it reads and for its own
 * options, and which plugin reads which call or server option name (so a client or a server
 * can say which plugin an option needs). Nothing here depends on the kernel or the client.
 */
import { describe } from './describe.js';
import { ArgumentError } from './errors.js';
import { checkOptionKeys } from './option-keys.js';

/**
 * Checks one value of a plugin's call option: null when it is good, else what the option
 * takes, as the end of a sentence (`'an integer >= 0'`, `'a CookieJar or false'`).
 */
export type OptionCheck = (value: unknown) => string | null;

/** The plugin that reads an option (a call option or a server option), and its check. */
export interface OptionOwner {
  /** The plugin's name. */
  readonly plugin: string;
  /** Checks a value of the option. */
  readonly check: OptionCheck;
}

/** The plugin that reads a call option, and its check. */
export type CallOptionOwner = OptionOwner;

/**
 * The options of one kind (call or server) that plugins declared, by name, beside the names the
 * kernel reads itself (set by the client's or the server's options module, so this file needs
 * nothing of either).
 */
class OptionTable {
  private readonly owners = new Map<string, OptionOwner>();
  /** Names the kernel reads itself, which no plugin may claim. */
  kernelNames: ReadonlySet<string> = new Set();

  /** `field`: the definition's field (`callOptions`); `kind`: what its entries are called (`call option`). */
  constructor(
    private readonly field: string,
    private readonly kind: string,
  ) {}

  declare(plugin: string, table: Readonly<Record<string, OptionCheck>>): void {
    if (typeof table !== 'object' || table === null) throw new ArgumentError(`definePlugin('${plugin}'): ${this.field} must be an object of { name: check }`);
    for (const [key, check] of Object.entries(table)) {
      if (typeof check !== 'function') throw new ArgumentError(`definePlugin('${plugin}'): ${this.field}.${key} must be a check function (value) => string | null`);
      if (this.kernelNames.has(key)) throw new ArgumentError(`definePlugin('${plugin}'): the ${this.kind} ${JSON.stringify(key)} is the kernel's own; pick another name`);
      const owner = this.owners.get(key);
      // The same plugin defined again (a second copy of its module) takes its name over.
      if (owner !== undefined && owner.plugin !== plugin) {
        throw new ArgumentError(`definePlugin('${plugin}'): the ${this.kind} ${JSON.stringify(key)} belongs to plugin "${owner.plugin}"; pick another name`);
      }
      this.owners.set(key, Object.freeze({ plugin, check }));
    }
  }

  owner(key: string): OptionOwner | undefined {
    return this.owners.get(key);
  }

  names(): Iterable<string> {
    return this.owners.keys();
  }
}

/** Every plugin call option defined so far (in this process). */
const callOptionTable = new OptionTable('callOptions', 'call option');
/** Every plugin server option defined so far (in this process). */
const serverOptionTable = new OptionTable('serverOptions', 'server option');

/** @internal The kernel's own call option names, which no plugin may claim. */
export function setKernelCallOptions(names: ReadonlySet<string>): void {
  callOptionTable.kernelNames = names;
}

/** @internal The kernel's own server option names, which no plugin may claim. */
export function setKernelServerOptions(names: ReadonlySet<string>): void {
  serverOptionTable.kernelNames = names;
}

/** @internal Records the call options of a plugin being defined; refuses a name the kernel or another plugin reads. */
export function declareCallOptions(plugin: string, table: Readonly<Record<string, OptionCheck>>): void {
  callOptionTable.declare(plugin, table);
}

/** @internal Records the server options of a plugin being defined; refuses a name the kernel or another plugin reads. */
export function declareServerOptions(plugin: string, table: Readonly<Record<string, OptionCheck>>): void {
  serverOptionTable.declare(plugin, table);
}

/** The plugin that reads call option `key` (of every plugin defined so far), or undefined. */
export function callOptionOwner(key: string): CallOptionOwner | undefined {
  return callOptionTable.owner(key);
}

/** Names of every plugin call option defined so far (for suggestions). */
export function pluginCallOptionNames(): Iterable<string> {
  return callOptionTable.names();
}

/** Call options plugins let a `Transport` carry as the default of its clients' calls (see `definePlugin`'s `transportOptions`). */
const transportOptionNames = new Set<string>();

/** @internal Records the call options of `plugin` a `Transport` takes; each must be one of `callOptions`. */
export function declareTransportOptions(plugin: string, names: readonly string[], callOptions: Readonly<Record<string, OptionCheck>> | undefined): void {
  if (!Array.isArray(names)) throw new ArgumentError(`definePlugin('${plugin}'): transportOptions must be an array of names of its callOptions`);
  for (const name of names) {
    if (typeof name !== 'string' || callOptions === undefined || !Object.hasOwn(callOptions, name)) {
      throw new ArgumentError(
        `definePlugin('${plugin}'): transportOptions lists ${typeof name === 'string' ? JSON.stringify(name) : describe(name)}, which is not one of its callOptions; a Transport carries only call options the plugin reads`,
      );
    }
  }
  for (const name of names) transportOptionNames.add(name);
}

/** True when a plugin defined so far lets a `Transport` carry call option `key`. */
export function isTransportOption(key: string): boolean {
  return transportOptionNames.has(key);
}

/** Names of every call option a `Transport` may carry (for suggestions). */
export function pluginTransportOptionNames(): Iterable<string> {
  return transportOptionNames.values();
}

/** Plugins that speak each client protocol (see `definePlugin`'s `clientProtocols`), in the order they were defined. */
const protocolSpeakers = new Map<string, string[]>();

/** @internal Records the client protocols `plugin` speaks. */
export function declareClientProtocols(plugin: string, protocols: readonly string[]): void {
  if (!Array.isArray(protocols) || !protocols.every((p) => typeof p === 'string' && p !== '')) {
    throw new ArgumentError(`definePlugin('${plugin}'): clientProtocols must be an array of protocol names (ALPN identifiers such as 'h2'), got ${describe(protocols)}`);
  }
  for (const protocol of protocols) {
    const speakers = protocolSpeakers.get(protocol);
    if (speakers === undefined) protocolSpeakers.set(protocol, [plugin]);
    // The same plugin defined again (a second copy of its module) is listed once.
    else if (!speakers.includes(plugin)) speakers.push(plugin);
  }
}

/**
 * Null when `kernel` (null: the client has none) has a plugin that speaks client protocol
 * `protocol`, else the error for `key` (the option that asks for it; `where` starts the message
 * when given), naming the first plugin defined that speaks it.
 */
export function protocolMissing(kernel: { isRegistered(name: string): boolean } | null, protocol: string, where: string | null, key: string): ArgumentError | null {
  const speakers = protocolSpeakers.get(protocol);
  if (kernel !== null && speakers !== undefined && speakers.some((p) => kernel.isRegistered(p))) return null;
  if (speakers !== undefined) return needsPlugin(where, key, speakers[0]!, kernel !== null);
  return new ArgumentError(
    `${where === null ? '' : `${where}: `}${key} needs a plugin that speaks ${protocol}, and no plugin loaded in this program declares it (definePlugin's clientProtocols): import and register one, or use the top-level \`switchyard\` entry, whose clients run on the default plugins`,
  );
}

/** The plugin that reads server option `key` (of every plugin defined so far), or undefined. */
export function serverOptionOwner(key: string): OptionOwner | undefined {
  return serverOptionTable.owner(key);
}

/** Names of every plugin server option defined so far (for suggestions). */
export function pluginServerOptionNames(): Iterable<string> {
  return serverOptionTable.names();
}

/**
 * The error for a plugin's option given to a client or server (`user`) whose kernel (`hasKernel`
 * false: none) lacks that plugin; `where` starts the message when given (`get()`).
 */
export function needsPlugin(where: string | null, key: string, plugin: string, hasKernel: boolean, user: 'client' | 'server' = 'client'): ArgumentError {
  // A client given no kernel runs on the default plugins; a server only through the top-level entry.
  const elsewhere = user === 'client' ? 'leave out kernel to get the default plugins' : "leave out kernel in the top-level `switchyard` entry's serve/listen, which run on the default plugins";
  const fix = !hasKernel
    ? `pass a kernel that has it, or use the top-level \`switchyard\` entry, whose ${user}s run on the default plugins`
    : `register it on this kernel (kernel.register(${plugin})) before making the ${user}, or ${elsewhere}`;
  return new ArgumentError(`${where === null ? '' : `${where}: `}${key} needs the ${plugin} plugin, which this ${user}'s kernel does not have: ${fix}`);
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
  integer:
    (min: number): OptionCheck =>
    (v) =>
      typeof v === 'number' && Number.isInteger(v) && v >= min ? null : `an integer >= ${min}`,
  /** A finite number of milliseconds, 0 or more. */
  milliseconds: ((v) => (typeof v === 'number' && Number.isFinite(v) && v >= 0 ? null : 'a number of milliseconds >= 0')) as OptionCheck,
  /** An instance of `type` (named `name` in the message). */
  instance:
    (type: abstract new (...args: never[]) => unknown, name: string): OptionCheck =>
    (v) =>
      v instanceof type ? null : `a ${name}`,
});
