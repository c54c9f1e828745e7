/**
 * Plugins: `definePlugin()` and the checks and ordering the loader applies to them.
 *
 * A plugin is a frozen object with metadata (`name`, `dependencies`) and a
 * `register(kernel, options)` function; the kernel hands it to avvio wrapped in an avvio
 * plugin function, so avvio's boot order, timeouts and LIFO close apply.
 */
import { ArgumentError, PluginError } from './errors.js';
import type { Kernel } from './kernel.js';
import { checkOptionKeys } from './option-keys.js';
import { kPlugin } from './symbols.js';

/**
 * Checks one value of a plugin's call option: null when it is good, else what the option
 * takes, as the end of a sentence (`'an integer >= 0'`, `'a CookieJar or false'`).
 */
export type OptionCheck = (value: unknown) => string | null;

/** What a plugin's `register` may return: nothing, or a promise the kernel awaits before the next plugin. */
export type RegisterResult = void | Promise<void>;

/** The argument of {@link definePlugin}. */
export interface PluginDefinition<Options> {
  /** Unique name; also the name its taps use. Registering two plugins with one name fails. */
  readonly name: string;
  /** Names of plugins that must be loaded first; the kernel orders by them and fails when one is missing. */
  readonly dependencies?: readonly string[];
  /**
   * Taps hooks, decorates the kernel, registers close handlers and nested plugins. Runs once,
   * during `ready()`; a returned promise is awaited (within the kernel's `pluginTimeout`).
   * There is no `done` callback: return a promise instead.
   */
  register(kernel: Kernel, options: Options): RegisterResult;
  /**
   * The call options this plugin reads (per call, and as `Client` defaults; typed by declaration
   * merging on `CallOptions` and `ClientOptions`), each with its {@link OptionCheck}. The kernel
   * knows them as soon as the plugin is defined, loaded into a kernel or not: `new Client()` and
   * every call check their values, and a client whose kernel lacks the plugin refuses them with
   * an `ArgumentError` naming it (`cookiejar needs the cookies plugin`). A name the kernel or
   * another plugin already reads is refused.
   */
  readonly callOptions?: Readonly<Record<string, OptionCheck>>;
  /**
   * The server options this plugin reads (`serve`, `listen`, `new Server`; typed by declaration
   * merging on `ServerOptions`), each with its {@link OptionCheck}, as `callOptions` are for
   * calls: a server checks their values when it is made, and a server whose kernel lacks the
   * plugin refuses them with an `ArgumentError` naming it. The plugin reads them from
   * `ServerInfo.options`. A name the kernel or another plugin already reads is refused.
   */
  readonly serverOptions?: Readonly<Record<string, OptionCheck>>;
}

/** A plugin made by {@link definePlugin}; `Options` is what `kernel.register(plugin, options)` takes. */
export interface Plugin<Options = Record<string, never>> {
  /** Unique name. */
  readonly name: string;
  /** Names of plugins that must be loaded first. */
  readonly dependencies: readonly string[];
  /** The plugin's register function. */
  readonly register: (kernel: Kernel, options: Options) => RegisterResult;
  /** Brand: this object came from `definePlugin`. */
  readonly [kPlugin]: true;
}

/** A plugin whose options type does not matter (lists, presets). */
// eslint-disable-next-line @typescript-eslint/no-explicit-any
export type AnyPlugin = Plugin<any>;

/** A preset: a list of plugins, possibly nested. The kernel orders it by `dependencies`. */
export type PluginList = readonly (AnyPlugin | PluginList)[];

/**
 * The options arguments of `kernel.register(plugin, …)`: optional when every option is,
 * required as soon as one is.
 */
export type OptionsArgs<Options> = {} extends Options ? [options?: Options] : [options: Options];

/**
 * Makes a plugin. `Options` is inferred from the type `register` gives its second parameter.
 *
 * ```ts
 * export const requestId = definePlugin({
 *   name: 'request-id',
 *   register(kernel, options: { header?: string }) { … },
 * });
 * ```
 */
export function definePlugin<Options = Record<string, never>>(definition: PluginDefinition<Options>): Plugin<Options> {
  if (typeof definition !== 'object' || definition === null) {
    throw new ArgumentError(`definePlugin() takes { name, dependencies?, register }, got ${describe(definition)}`);
  }
  const { name, dependencies = [], register, callOptions, serverOptions } = definition;
  if (typeof name !== 'string' || name.trim() === '' || name.trim() !== name) {
    throw new ArgumentError(`definePlugin(): name must be a non-empty string without surrounding spaces, got ${describe(name)}`);
  }
  checkOptionKeys(definition, DEFINITION_KEYS, `definePlugin('${name}')`);
  if (!Array.isArray(dependencies) || !dependencies.every((d) => typeof d === 'string' && d !== '')) {
    throw new ArgumentError(`definePlugin('${name}'): dependencies must be an array of plugin names`);
  }
  if (dependencies.includes(name)) {
    throw new ArgumentError(`definePlugin('${name}'): a plugin cannot depend on itself`);
  }
  if (typeof register !== 'function') {
    throw new ArgumentError(`definePlugin('${name}'): register must be a function (kernel, options) => void | Promise<void>, got ${describe(register)}`);
  }
  if (register.length > 2) {
    // avvio would hand a third parameter a `done` callback; ours never does, so a plugin
    // written for that style would hang until the timeout. Say so now.
    throw new ArgumentError(`definePlugin('${name}'): register takes (kernel, options); there is no done callback, return a promise instead`);
  }
  if (callOptions !== undefined) callOptionTable.declare(name, callOptions);
  if (serverOptions !== undefined) serverOptionTable.declare(name, serverOptions);
  return Object.freeze({
    name,
    dependencies: Object.freeze([...dependencies]),
    // Bound to the definition so `this` inside a method-style register still works.
    register: register.bind(definition) as (kernel: Kernel, options: Options) => RegisterResult,
    [kPlugin]: true as const,
  });
}

const DEFINITION_KEYS: ReadonlySet<string> = new Set(['name', 'dependencies', 'register', 'callOptions', 'serverOptions']);

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

/** The plugin that reads call option `key` (of every plugin defined so far), or undefined. */
export function callOptionOwner(key: string): CallOptionOwner | undefined {
  return callOptionTable.owner(key);
}

/** Names of every plugin call option defined so far (for suggestions). */
export function pluginCallOptionNames(): Iterable<string> {
  return callOptionTable.names();
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
 * The error for a plugin's option given to a client or server (`user`) whose kernel (null:
 * none) lacks that plugin; `where` starts the message when given (`get()`).
 */
export function needsPlugin(where: string | null, key: string, plugin: string, kernel: Kernel | null, user: 'client' | 'server' = 'client'): ArgumentError {
  // A client given no kernel runs on the default plugins; a server only through the top-level entry.
  const elsewhere = user === 'client' ? 'leave out kernel to get the default plugins' : "leave out kernel in the top-level `switchyard` entry's serve/listen, which run on the default plugins";
  const fix = kernel === null
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
  integer: (min: number): OptionCheck => (v) => (typeof v === 'number' && Number.isInteger(v) && v >= min ? null : `an integer >= ${min}`),
  /** A finite number of milliseconds, 0 or more. */
  milliseconds: ((v) => (typeof v === 'number' && Number.isFinite(v) && v >= 0 ? null : 'a number of milliseconds >= 0')) as OptionCheck,
  /** An instance of `type` (named `name` in the message). */
  instance: (type: abstract new (...args: never[]) => unknown, name: string): OptionCheck => (v) => (v instanceof type ? null : `a ${name}`),
});

/** True when `value` is a plugin made by {@link definePlugin} (of any copy of switchyard). */
export function isPlugin(value: unknown): value is AnyPlugin {
  return typeof value === 'object' && value !== null && (value as { [kPlugin]?: unknown })[kPlugin] === true;
}

/** @internal One registration waiting for `ready()`. */
export interface PluginEntry {
  /** The plugin. */
  readonly plugin: AnyPlugin;
  /** Its options (`{}` when none were given). */
  readonly options: unknown;
}

/**
 * @internal Checks what `kernel.register` received and flattens lists; throws an
 * `ArgumentError` saying what was wrong and where.
 */
export function toEntries(value: unknown, options: unknown, hasOptions: boolean): PluginEntry[] {
  if (Array.isArray(value)) {
    if (hasOptions && options !== undefined) {
      throw new ArgumentError('kernel.register(list, options): options belong to one plugin; register it separately, or list plugins without options');
    }
    const out: PluginEntry[] = [];
    flatten(value, 'plugins', out, new Set());
    return out;
  }
  return [{ plugin: asPlugin(value, 'kernel.register()'), options: options === undefined ? {} : options }];
}

function flatten(list: readonly unknown[], where: string, out: PluginEntry[], seen: Set<unknown>): void {
  if (seen.has(list)) throw new ArgumentError(`kernel.register(): ${where} contains itself`);
  seen.add(list);
  list.forEach((item, i) => {
    const at = `${where}[${i}]`;
    if (Array.isArray(item)) flatten(item, at, out, seen);
    else out.push({ plugin: asPlugin(item, at), options: {} });
  });
}

function asPlugin(value: unknown, where: string): AnyPlugin {
  if (isPlugin(value)) return value;
  // `register(await import('./my-plugin.js'))`: a module whose default export is a plugin.
  if (typeof value === 'object' && value !== null && isPlugin((value as { default?: unknown }).default)) {
    return (value as { default: AnyPlugin }).default;
  }
  let hint = '';
  if (typeof value === 'function') {
    hint = `; wrap it: definePlugin({ name: '${value.name || 'my-plugin'}', register: ${value.name || 'fn'} })`;
  } else if (typeof value === 'object' && value !== null && typeof (value as { register?: unknown }).register === 'function') {
    hint = '; make plugins with definePlugin({ name, register }), which validates and brands them';
  }
  throw new ArgumentError(`${where} expects a plugin made by definePlugin() or a list of them, got ${describe(value)}${hint}`);
}

/**
 * @internal Orders entries so every plugin comes after the plugins it depends on, otherwise
 * keeping registration order (a dependency moves up to just before its first dependent).
 * Dependencies not in the list are left for the load-time check: a plugin registered inside
 * another may provide them. Throws `PluginError` on duplicates and cycles.
 */
export function sortEntries(entries: readonly PluginEntry[]): PluginEntry[] {
  const byName = new Map<string, number>();
  entries.forEach((e, i) => {
    if (byName.has(e.plugin.name)) throw duplicateError(e.plugin.name);
    byName.set(e.plugin.name, i);
  });
  const state = new Uint8Array(entries.length); // 0 new, 1 on the current path, 2 placed
  const out: PluginEntry[] = [];
  const path: string[] = [];
  const visit = (i: number): void => {
    if (state[i] === 2) return;
    const { name, dependencies } = entries[i]!.plugin;
    if (state[i] === 1) {
      const cycle = [...path.slice(path.indexOf(name)), name].map((n) => `"${n}"`).join(' → ');
      throw new PluginError('SWY_ERR_PLUGIN_DEPENDENCY', name, `plugin "${name}" is part of a dependency cycle: ${cycle}`);
    }
    state[i] = 1;
    path.push(name);
    for (const dep of dependencies) {
      const j = byName.get(dep);
      if (j !== undefined) visit(j);
    }
    path.pop();
    state[i] = 2;
    out.push(entries[i]!);
  };
  for (let i = 0; i < entries.length; i++) visit(i);
  return out;
}

/** @internal The error for a second plugin of one name. */
export function duplicateError(name: string): PluginError {
  return new PluginError(
    'SWY_ERR_PLUGIN_DUPLICATE',
    name,
    `plugin "${name}" is registered twice; register it once (to give a preset's plugin options, build the list without it: presets.defaults.filter((p) => p.name !== '${name}'), then register it with its options)`,
  );
}

/** @internal Short description of a value for error messages. */
export function describe(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'an array';
  if (typeof value === 'function') return value.name ? `a function "${value.name}"` : 'an anonymous function';
  if (typeof value === 'object') {
    const ctor = (value as object).constructor?.name;
    return ctor && ctor !== 'Object' ? `a ${ctor}` : 'a plain object';
  }
  if (typeof value === 'string') return `the string ${JSON.stringify(value)}`;
  return String(value);
}
