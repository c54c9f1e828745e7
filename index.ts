/**
 * `switchyard`: the top-level API (`import * as HTTP from 'switchyard'`).
 *
 * Everything of the kernel is re-exported; the entry points that take a `kernel` option
 * (`serve`, `listen`) run on a default kernel booted lazily with `presets.defaults` when the
 * caller passes none. Plugin namespaces (`Handlers`, `Cookies`, `WebSockets`) and the client
 * join as their issues land.
 */
import {
  createKernel,
  listen as kernelListen,
  serve as kernelServe,
  type Kernel,
  type RequestHandler,
  type ServeOptions,
  type Server,
  type StreamHandler,
} from './kernel/index.js';
import { presets } from './plugins/index.js';

export * from './kernel/index.js';
export { presets } from './plugins/index.js';

let defaultKernel: Kernel | null = null;

/** The kernel the top-level helpers use when given none: `presets.defaults`, made on first use. */
export function getDefaultKernel(): Kernel {
  return (defaultKernel ??= createKernel().register(presets.defaults));
}

/**
 * Starts a server for a request handler on the default kernel (or `options.kernel`) and
 * resolves once it listens. See the kernel's `serve` for the options.
 */
export function serve(handler: RequestHandler, options: ServeOptions = {}): Promise<Server> {
  return kernelServe(handler, { ...options, kernel: options?.kernel ?? getDefaultKernel() });
}

/** Starts a server for a stream handler on the default kernel (or `options.kernel`). */
export function listen(handler: StreamHandler, options: ServeOptions = {}): Promise<Server> {
  return kernelListen(handler, { ...options, kernel: options?.kernel ?? getDefaultKernel() });
}
