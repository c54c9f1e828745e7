/**
 * `switchyard/kernel`: the microkernel's public entry, for plugin authors and stack builders:
 * the message model and its HTTP/1 I/O, errors, the kernel and its hooks, plugins and their
 * options, clients and servers. A plugin imports the kernel only through this module, and a
 * protocol plugin (a wire: HTTP/2, a tunnel, an upgrade) also through `switchyard/protocol`
 * (kernel/protocol.ts), which holds the codec's internals (DESIGN.md, "Boundaries").
 */
export * from './errors.js';
export { StatusError } from './client/status-error.js';
export * from './message/index.js';
export * from './http1/index.js';
export { createKernel, isPlugin, Kernel, type KernelOptions, type CloseHandler, type Plugin, type AnyPlugin, type PluginList, type OptionsArgs, type RegisterResult } from './kernel.js';
export type { HookHost, KernelState } from './hook-host.js';
export { definePlugin, type PluginDefinition } from './plugin.js';
export { checkPluginOptions, callOptionOwner, OptionChecks, type OptionCheck, type CallOptionOwner } from './plugin-options.js';
export { Stage, type StageName } from './stages.js';
export { checkOptionKeys, editDistance, optionHint, suggestOption, unknownOptionError } from './option-keys.js';
export { nodeCrypto, nodeTls, nodeZlib } from './builtins.js';
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
  type ServerInfo,
  type UpgradeInfo,
  type PeerAddress,
  type ServerExchange,
  type RequestTapOptions,
} from './hooks.js';
export * from './server/index.js';
export * from './client/index.js';
export * from './web/index.js';
export {
  channels,
  channelNames,
  type DiagnosticChannel,
  type ClientRequestContext,
  type ClientRequestCreateMessage,
  type ClientConnectionInfo,
  type ClientRequestHeadersMessage,
  type ClientResponseHeadersMessage,
  type ClientResponseEndMessage,
  type ClientRequestErrorMessage,
  type ClientRetryMessage,
  type ClientRedirectMessage,
  type ClientConnectionOpenMessage,
  type ClientConnectionReuseMessage,
  type ServerConnectionMessage,
  type ServerRequestContext,
  type ServerRequestStartMessage,
  type ServerResponseHeadersMessage,
  type ServerResponseFinishMessage,
  type ServerErrorMessage,
  type ServerUpgradeMessage,
} from './diagnostics.js';
