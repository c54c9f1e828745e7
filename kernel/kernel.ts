/**
 * The kernel: a hook table, a plugin loader (avvio), and the clients and servers
 * built on them; also the plugin contract (what `register` takes and gives a plugin).
 *
 * avvio runs on a private instance (`avvio(null, …)`) rather than on the kernel itself: its
 * `expose` option would add five untyped methods and a `then` getter to the kernel, which
 * makes the kernel a thenable (so `await kernel.ready()` could not resolve to it). The
 * kernel's own typed `register`/`ready`/`close`/`onClose` drive that instance instead.
 */
import { createRequire } from 'node:module';
import type Avvio from 'avvio';
import { describe } from './describe.js';
import { ArgumentError, PluginError } from './errors.js';
import type { HookHost, KernelState } from './hook-host.js';
import { createHookTable, resolveTapped, type KernelHooks, type TappedHooks } from './hooks.js';
import { kPlugin, kPluginMeta } from './symbols.js';
import { Client, type ClientOptions } from './client/client.js';
import type { FetchInit, FetchInput } from './client/fetch.js';
import { listen, serve, type RequestHandler, type ServeOptions, type StreamHandler } from './server/index.js';
import { Server, type InjectTarget } from './server/server.js';
import type { InjectRequest } from './server/inject.js';
import type { Response } from './message/response.js';
import { serveFetch, type FetchHandler, type ServeFetchOptions } from './web/fetch-handler.js';

// CommonJS, so required: imported, Node would first lex its source for export names (see hooks.ts).
const avvio = createRequire(import.meta.url)('avvio') as typeof Avvio;

/** Options of {@link createKernel}. */
export interface KernelOptions {
  /** Longest one plugin's `register()` may take, in milliseconds (avvio's timeout); 0 disables it. Default 10 000. */
  pluginTimeout?: number;
}

/** A function `kernel.onClose` runs during `close()`; a returned promise is awaited. */
export type CloseHandler = (kernel: Kernel) => void | Promise<void>;

// --- The plugin contract ------------------------------------------------------------
// Declared with the kernel: a plugin's register receives the kernel, and the kernel's register
// takes plugins, so the two types refer to each other.

/** What a plugin's `register` may return: nothing, or a promise the kernel awaits before the next plugin. */
export type RegisterResult = void | Promise<void>;

/** A plugin made by `definePlugin`; `Options` is what `kernel.register(plugin, options)` takes. */
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
// eslint-disable-next-line @typescript-eslint/no-empty-object-type -- `{} extends Options`: true exactly when every option is optional
export type OptionsArgs<Options> = {} extends Options ? [options?: Options] : [options: Options];

/** Default of {@link KernelOptions.pluginTimeout}, as fastify's `pluginTimeout`. */
const DEFAULT_PLUGIN_TIMEOUT = 10_000;

/**
 * A plugin stack: hooks, decorations and close handlers, booted by `ready()`.
 * Make one with {@link createKernel}. Plugins share this one instance (no encapsulation:
 * tapable hooks are global to a kernel anyway).
 *
 * Plugins that decorate the kernel type their decoration by augmenting this interface:
 * `declare module 'switchyard/kernel' { interface Kernel { route(…): void } }`.
 */
export class Kernel implements HookHost {
  /** Every hook of the kernel, frozen (`kernel.hooks.client.onRequest.tap(name, fn)`); closed to new taps at `ready()`. */
  readonly hooks: KernelHooks;

  #closeTable: () => void;
  #tapped: TappedHooks | null = null;
  #avvio: Avvio.Avvio<null>;
  #timeout: number;
  #state: KernelState = 'idle';
  /** The servers `inject` made for handlers given alone. */
  #injectServers = new WeakMap<RequestHandler, Server>();
  /** Top-level registrations, ordered by dependencies and handed to avvio at `ready()`. */
  #pending: PluginEntry[] = [];
  #loaded = new Set<string>();
  /** Names of every plugin registered (loaded or waiting to load). */
  #registered = new Set<string>();
  #order: string[] = [];
  /** Name of the plugin whose `register()` is running (avvio loads one at a time). */
  #booting: string | null = null;
  /** True while `ready()` loads plugins; it stays true if `close()` is called meanwhile, so plugins still loading can register and add close handlers. */
  #bootRunning = false;
  #decorators = new Map<PropertyKey, string>();
  /** The client `fetch` runs on, made at its first call. */
  #fetchClient: Client | null = null;
  #readyPromise: Promise<this> | null = null;
  #closePromise: Promise<void> | null = null;

  /** Prefer {@link createKernel}. */
  constructor(options: KernelOptions = {}) {
    if (typeof options !== 'object' || options === null) {
      throw new ArgumentError(`createKernel(options): options must be an object, got ${describe(options)}`);
    }
    const timeout = options.pluginTimeout ?? DEFAULT_PLUGIN_TIMEOUT;
    if (typeof timeout !== 'number' || !Number.isFinite(timeout) || timeout < 0) {
      throw new ArgumentError(`createKernel(): pluginTimeout must be a non-negative number of milliseconds, got ${describe(timeout)}`);
    }
    this.#timeout = timeout;
    const table = createHookTable();
    this.hooks = table.hooks;
    this.#closeTable = table.close;
    // autostart false: nothing loads before ready(), so plugins can be registered in any order.
    this.#avvio = avvio(null, { autostart: false, timeout });
  }

  /** Where the kernel is in its life. */
  get state(): KernelState {
    return this.#state;
  }

  /**
   * The hook table for callers on the request path: each hook when it has taps, else
   * `null`. Resolved once at `ready()` and frozen (taps are closed then, so it never goes
   * stale); read before `ready()` it throws. Cache `kernel.tapped.client` and branch:
   * `const h = tapped.onRequest; if (h !== null) …`.
   */
  get tapped(): TappedHooks {
    const t = this.#tapped;
    if (t === null) throw new ArgumentError('kernel.tapped is resolved by ready(): await kernel.ready() first');
    return t;
  }

  /** Names of the loaded plugins, in load order (a copy). */
  get plugins(): readonly string[] {
    return Object.freeze([...this.#order]);
  }

  /** True once a plugin of this name has loaded (its `register()` finished). */
  hasPlugin(name: string): boolean {
    return this.#loaded.has(name);
  }

  /**
   * True when a plugin of this name is loaded or registered to load at `ready()` (a plugin that
   * another registers from inside its own `register()` counts once it loads).
   */
  isRegistered(name: string): boolean {
    return this.#registered.has(name);
  }

  /**
   * Adds a plugin, or a list of plugins (a preset, possibly nested). Nothing loads yet:
   * `ready()` loads everything registered before it, ordered by `dependencies` and
   * otherwise in registration order. Inside a plugin's `register()` it registers a nested
   * plugin, which loads right after that plugin. After `ready()` it throws
   * `PluginError` `SWY_ERR_KERNEL_STARTED`; a value that is not a plugin throws
   * `ArgumentError`.
   */
  register<Options>(plugin: Plugin<Options>, ...options: OptionsArgs<Options>): this;
  register(plugins: PluginList): this;
  register(plugin: AnyPlugin | PluginList, ...rest: unknown[]): this {
    const entries = toEntries(plugin, rest[0], rest.length > 0);
    if (this.#state === 'idle') {
      this.#pending.push(...entries);
      for (const e of entries) this.#registered.add(e.plugin.name);
    } else if (this.#bootRunning) {
      if (this.#booting === null) {
        throw new ArgumentError("kernel.register() while ready() is running: register plugins before calling ready(), or from inside a plugin's register()");
      }
      for (const entry of sortEntries(entries)) this.#use(entry);
    } else {
      const name = entries[0]?.plugin.name ?? '(empty list)';
      throw new PluginError(
        'SWY_ERR_KERNEL_STARTED',
        name,
        `cannot register plugin "${name}": the kernel is ${this.#state === 'ready' ? 'started' : this.#state}; register every plugin before ready()`,
      );
    }
    return this;
  }

  /**
   * Loads every registered plugin, then closes the hook table and resolves `tapped`.
   * Resolves to the kernel; calling it again returns the same promise. Rejects with a
   * `PluginError` naming the plugin: `SWY_ERR_PLUGIN_DEPENDENCY` (missing dependency or
   * cycle), `SWY_ERR_PLUGIN_DUPLICATE`, `SWY_ERR_PLUGIN_BOOT` (its `register()` threw,
   * rejected or timed out; the original error is `cause`). A failed kernel stays failed.
   */
  ready(): Promise<this> {
    if (this.#readyPromise === null) this.#readyPromise = this.#boot();
    return this.#readyPromise;
  }

  /**
   * Runs the close handlers, last registered first (avvio's LIFO), waiting for each; also
   * waits for a `ready()` in progress. Calling it again returns the same promise. Rejects
   * with the last error a handler threw, after all handlers ran.
   */
  close(): Promise<void> {
    if (this.#closePromise === null) {
      if (this.#state === 'idle') {
        this.#pending = [];
        this.#registered.clear();
      }
      this.#state = 'closing';
      // A boot in progress keeps its table open until it ends (plugins still loading tap).
      if (!this.#bootRunning) this.#closeTable();
      this.#closePromise = new Promise<void>((resolve, reject) => {
        this.#avvio.close((err: Error) => {
          this.#state = 'closed';
          if (err) reject(err);
          else resolve();
        });
      });
    }
    return this.#closePromise;
  }

  /**
   * Registers `fn` to run at `close()`, before every handler registered earlier (LIFO, so
   * what was built last is torn down first). Allowed until `close()` starts, also after
   * `ready()` (clients and servers made from the kernel close with it).
   */
  onClose(fn: CloseHandler): this {
    if (typeof fn !== 'function') throw new ArgumentError(`kernel.onClose(fn): fn must be a function, got ${describe(fn)}`);
    if (this.#closePromise !== null && !this.#bootRunning) {
      throw new ArgumentError('kernel.onClose() after close() started: the handler would never run');
    }
    // async: a handler that throws synchronously becomes a rejection avvio reports, not a crash.
    this.#avvio.onClose(async () => {
      await fn(this);
    });
    return this;
  }

  /**
   * Adds a property to the kernel (a plugin's API, such as the router's `route`). The
   * property is enumerable and read-only; hold mutable state in an object. Refuses, with an
   * `ArgumentError`, a name the kernel already has (its own members included, and `then`),
   * and any decoration after `ready()`.
   */
  decorate<K extends string | symbol, V>(name: K, value: V): this & { readonly [P in K]: V } {
    if ((typeof name !== 'string' || name === '') && typeof name !== 'symbol') {
      throw new ArgumentError(`kernel.decorate(name, value): name must be a non-empty string or a symbol, got ${describe(name)}`);
    }
    const label = String(name);
    if (this.#state !== 'idle' && !this.#bootRunning) {
      throw new ArgumentError(`kernel.decorate('${label}') after ready(): decorations are fixed when the kernel starts; decorate inside a plugin's register()`);
    }
    if (name === 'then') {
      throw new ArgumentError("kernel.decorate('then'): a kernel must not be thenable, or awaiting it would misbehave");
    }
    if (name in this) {
      const by = this.#decorators.get(name);
      throw new ArgumentError(`kernel.decorate('${label}'): the kernel already has "${label}" (${by ?? 'a kernel member'}); refusing to overwrite it, pick another name`);
    }
    Object.defineProperty(this, name, { value, enumerable: true, writable: false, configurable: false });
    this.#decorators.set(name, this.#booting !== null ? `added by plugin "${this.#booting}"` : 'added outside a plugin');
    return this as this & { readonly [P in K]: V };
  }

  // --- Clients and servers -----------------------------------------------------------

  /** A `Client` running this kernel's client plugins (the kernel boots on its first call if needed). */
  client(options: Omit<ClientOptions, 'kernel'> = {}): Client {
    const client = new Client({ ...options, kernel: this });
    this.onClose(() => client.close());
    return client;
  }

  /**
   * The Fetch standard's `fetch` through this kernel's client plugins, on a client made at the
   * first call (closed with the kernel): see `Client.fetch`.
   */
  fetch(input: FetchInput, init?: FetchInit): Promise<globalThis.Response> {
    let c = this.#fetchClient;
    if (c === null || !c.isOpen) c = this.#fetchClient = this.client();
    return c.fetch(input, init);
  }

  /** Starts a server for a request handler running this kernel's server plugins; `kernel.close()` closes it. */
  async serve(handler: RequestHandler, options: Omit<ServeOptions, 'kernel'> = {}): Promise<Server> {
    const server = await serve(handler, { ...options, kernel: this });
    this.onClose(() => server.close());
    return server;
  }

  /** Starts a server for a stream handler running this kernel's server plugins; `kernel.close()` closes it. */
  async listen(handler: StreamHandler, options: Omit<ServeOptions, 'kernel'> = {}): Promise<Server> {
    const server = await listen(handler, { ...options, kernel: this });
    this.onClose(() => server.close());
    return server;
  }

  /**
   * Runs one request through this kernel's server plugins and `target` with no socket, as
   * `server.inject` does, on a server that never listens. `target` is a request handler, or
   * what `new Server` takes less `kernel` (`{ handler, stream: true }` for a stream handler,
   * `onError`, and the server options that act on an exchange: `maxBodyBytes`, plugins'
   * options). The server made for a handler given alone is kept for the next call with it.
   */
  inject(target: RequestHandler | InjectTarget, request: InjectRequest | string): Promise<Response> {
    if (this.#state === 'closing' || this.#state === 'closed') return Promise.reject(new ArgumentError(`kernel.inject(): the kernel is ${this.#state}`));
    let server: Server;
    try {
      server = this.#injectServer(target);
    } catch (err) {
      return Promise.reject(err);
    }
    return server.inject(request);
  }

  #injectServer(target: RequestHandler | InjectTarget): Server {
    if (typeof target === 'function') {
      let server = this.#injectServers.get(target);
      if (server === undefined) this.#injectServers.set(target, (server = new Server({ handler: target, kernel: this })));
      return server;
    }
    if (typeof target !== 'object' || target === null)
      throw new ArgumentError(`kernel.inject(target, request): target must be a request handler or { handler, stream?, ...server options }, got ${describe(target)}`);
    if ('kernel' in target) throw new ArgumentError('kernel.inject(target, request): target takes no kernel (the server runs this one)');
    return new Server({ ...target, kernel: this });
  }

  /** Starts a server for a fetch-style handler (`app.fetch`) running this kernel's server plugins; `kernel.close()` closes it. */
  async serveFetch(handler: FetchHandler, options: Omit<ServeFetchOptions, 'kernel'> = {}): Promise<Server> {
    const server = await serveFetch(handler, { ...options, kernel: this });
    this.onClose(() => server.close());
    return server;
  }

  // --- Boot internals ------------------------------------------------------------------

  async #boot(): Promise<this> {
    if (this.#state !== 'idle') {
      throw new ArgumentError(`kernel.ready() after close(): this kernel is ${this.#state}; create a new one`);
    }
    this.#state = 'booting';
    this.#bootRunning = true;
    try {
      const ordered = sortEntries(this.#pending);
      this.#pending = [];
      for (const entry of ordered) this.#use(entry);
      await this.#avvio.ready();
    } catch (err) {
      if (this.#state === 'booting') this.#state = 'failed';
      throw this.#bootError(err);
    } finally {
      this.#bootRunning = false;
      // Closed on failure too: a failed kernel makes nothing, so a tap could never fire.
      this.#closeTable();
    }
    this.#tapped = resolveTapped(this.hooks);
    if (this.#state === 'booting') this.#state = 'ready';
    return this;
  }

  /** Hands one plugin to avvio, wrapped in an avvio plugin function. */
  #use({ plugin, options }: PluginEntry): void {
    this.#registered.add(plugin.name);
    // Options travel in the closure, not through avvio, which would call a function-valued
    // options object and default a missing one.
    const fn = (): Promise<void> => this.#load(plugin, options);
    Object.defineProperty(fn, kPluginMeta, { value: Object.freeze({ name: plugin.name }) });
    this.#avvio.use(fn, {});
  }

  /** Loads one plugin: checks, then its `register()`; errors name the plugin. */
  async #load(plugin: AnyPlugin, options: unknown): Promise<void> {
    const { name } = plugin;
    if (this.#loaded.has(name)) throw duplicateError(name);
    for (const dep of plugin.dependencies) {
      if (!this.#loaded.has(dep)) {
        throw new PluginError(
          'SWY_ERR_PLUGIN_DEPENDENCY',
          name,
          `plugin "${name}" needs plugin "${dep}", which is not registered: register "${dep}" too (registrations before ready() are ordered by dependencies; inside a plugin's register(), register "${dep}" before "${name}")`,
        );
      }
    }
    this.#booting = name;
    try {
      await plugin.register(this, options);
    } catch (err) {
      throw new PluginError('SWY_ERR_PLUGIN_BOOT', name, `plugin "${name}" failed in register(): ${message(err)}`, { cause: err });
    } finally {
      this.#booting = null;
    }
    this.#loaded.add(name);
    this.#order.push(name);
  }

  /** Turns whatever made boot fail into a `PluginError` naming the plugin. */
  #bootError(err: unknown): PluginError {
    if (err instanceof PluginError) return err;
    const code = (err as { code?: unknown } | null)?.code;
    if (code === 'AVV_ERR_PLUGIN_EXEC_TIMEOUT' || code === 'AVV_ERR_READY_TIMEOUT') {
      const fn = (err as { fn?: { [kPluginMeta]?: { name?: string } } }).fn;
      const name = fn?.[kPluginMeta]?.name ?? this.#booting ?? '(unknown)';
      return new PluginError('SWY_ERR_PLUGIN_BOOT', name, `plugin "${name}" did not finish register() within ${this.#timeout} ms (pluginTimeout): a promise it returned never settled`, { cause: err });
    }
    const name = this.#booting ?? '(kernel)';
    return new PluginError('SWY_ERR_PLUGIN_BOOT', name, `booting the kernel failed${this.#booting ? ` in plugin "${name}"` : ''}: ${message(err)}`, {
      cause: err,
    });
  }
}

/** Makes an empty kernel: register plugins, then `await kernel.ready()`. */
export function createKernel(options?: KernelOptions): Kernel {
  return new Kernel(options);
}

function message(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}

// --- Registrations ------------------------------------------------------------------

/** True when `value` is a plugin made by `definePlugin` (of any copy of switchyard). */
export function isPlugin(value: unknown): value is AnyPlugin {
  return typeof value === 'object' && value !== null && (value as { [kPlugin]?: unknown })[kPlugin] === true;
}

/** One registration waiting for `ready()`. */
interface PluginEntry {
  /** The plugin. */
  readonly plugin: AnyPlugin;
  /** Its options (`{}` when none were given). */
  readonly options: unknown;
}

/**
 * Checks what `kernel.register` received and flattens lists; throws an
 * `ArgumentError` saying what was wrong and where.
 */
function toEntries(value: unknown, options: unknown, hasOptions: boolean): PluginEntry[] {
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
 * Orders entries so every plugin comes after the plugins it depends on, otherwise
 * keeping registration order (a dependency moves up to just before its first dependent).
 * Dependencies not in the list are left for the load-time check: a plugin registered inside
 * another may provide them. Throws `PluginError` on duplicates and cycles.
 */
function sortEntries(entries: readonly PluginEntry[]): PluginEntry[] {
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

/** The error for a second plugin of one name. */
function duplicateError(name: string): PluginError {
  return new PluginError(
    'SWY_ERR_PLUGIN_DUPLICATE',
    name,
    `plugin "${name}" is registered twice; register it once (to give a preset's plugin options, build the list without it: presets.defaults.filter((p) => p.name !== '${name}'), then register it with its options)`,
  );
}
