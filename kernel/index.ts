/**
 * `switchyard/kernel`: the microkernel's public entry. Plugins import the kernel only
 * through this module (DESIGN.md, "Boundaries").
 */
export * from './errors.js';
export * from './message/index.js';
export * from './http1/index.js';
export { createKernel, Kernel, type KernelOptions, type KernelState, type CloseHandler } from './kernel.js';
export {
  definePlugin,
  isPlugin,
  checkPluginOptions,
  callOptionOwner,
  OptionChecks,
  type OptionCheck,
  type CallOptionOwner,
  type Plugin,
  type AnyPlugin,
  type PluginList,
  type PluginDefinition,
  type OptionsArgs,
  type RegisterResult,
} from './plugin.js';
export { Stage, type StageName } from './stages.js';
export { checkOptionKeys, editDistance, optionHint, suggestOption, unknownOptionError } from './option-keys.js';
export {
  tapErrorInfo,
  type TapErrorInfo,
  type ClientHooks,
  type ServerHooks,
  type KernelHooks,
  type TappedHooks,
  type Tapped,
  type RetryState,
  type RetryDecision,
  type ConnectOptions,
  type SessionInfo,
  type ClientSession,
  type ServerInfo,
  type ProtocolInfo,
  type PeerAddress,
  type ServerExchange,
  type ExchangeOptions,
} from './hooks.js';
export * from './server/index.js';
export * from './client/index.js';
