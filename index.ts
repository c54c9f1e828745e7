/**
 * `switchyard`: the top-level API (`import * as HTTP from 'switchyard'`).
 * The kernel's names are re-exported here; plugin namespaces (`Handlers`, `Cookies`,
 * `WebSockets`) and the client and server helpers join as their issues land.
 */
export * from './kernel/index.js';
export { presets } from './plugins/index.js';
