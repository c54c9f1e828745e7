/**
 * `definePlugin()`: makes a plugin from its definition, checking it at once, and records the
 * call and server options it reads. The plugin contract itself (`Plugin`, what `register` receives) is the
 * kernel's (kernel.ts); the loader's ordering and checks run there.
 */
import { describe } from './describe.js';
import { ArgumentError } from './errors.js';
import type { Kernel, Plugin, RegisterResult } from './kernel.js';
import { checkOptionKeys } from './option-keys.js';
import { declareCallOptions, declareClientProtocols, declareServerOptions, declareTransportOptions, type OptionCheck } from './plugin-options.js';
import { kPlugin } from './symbols.js';

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
   * Which of this plugin's `callOptions` a `Transport` may carry as the default of its clients'
   * calls (`new Transport({ proxy })`; typed by declaration merging on `TransportOptions`). A
   * client on that transport takes them under its own options: its own value, `null` too,
   * wins. Each name must be one of `callOptions`.
   */
  readonly transportOptions?: readonly string[];
  /**
   * The protocols this plugin's `client.session` taps speak, as ALPN identifiers: `'h2'`
   * (HTTP/2 over TLS, negotiated or demanded), `'h2c'` (HTTP/2 on plain connections, prior
   * knowledge). A call that demands one (`httpVersion: 'h2'`, `http2PriorKnowledge: true`) on a
   * client whose kernel has no plugin that speaks it is refused with an `ArgumentError` naming
   * this plugin, instead of quietly speaking HTTP/1.1.
   */
  readonly clientProtocols?: readonly string[];
  /**
   * The server options this plugin reads (`serve`, `listen`, `new Server`; typed by declaration
   * merging on `ServerOptions`), each with its {@link OptionCheck}, as `callOptions` are for
   * calls: a server checks their values when it is made, and a server whose kernel lacks the
   * plugin refuses them with an `ArgumentError` naming it. The plugin reads them from
   * `ServerInfo.options`. A name the kernel or another plugin already reads is refused.
   */
  readonly serverOptions?: Readonly<Record<string, OptionCheck>>;
}

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
  const { name, dependencies = [], register, callOptions, serverOptions, transportOptions, clientProtocols } = definition;
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
  if (callOptions !== undefined) declareCallOptions(name, callOptions);
  if (serverOptions !== undefined) declareServerOptions(name, serverOptions);
  if (transportOptions !== undefined) declareTransportOptions(name, transportOptions, callOptions);
  if (clientProtocols !== undefined) declareClientProtocols(name, clientProtocols);
  return Object.freeze({
    name,
    dependencies: Object.freeze([...dependencies]),
    // Bound to the definition so `this` inside a method-style register still works.
    register: register.bind(definition) as (kernel: Kernel, options: Options) => RegisterResult,
    [kPlugin]: true as const,
  });
}

const DEFINITION_KEYS: ReadonlySet<string> = new Set(['name', 'dependencies', 'register', 'callOptions', 'serverOptions', 'transportOptions', 'clientProtocols']);
