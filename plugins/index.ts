/**
 * switchyard/plugins: the feature plugins and the presets that bundle them.
 *
 * Each plugin lives in `plugins/<name>/` and is re-exported here.
 */
import type { AnyPlugin } from '../kernel/index.js';
import './options.js';
import { cookies } from './cookies/index.js';
import { decompression } from './decompression/index.js';
import { fileserver } from './fileserver/index.js';
import { h2 } from './h2/index.js';
import { h2c } from './h2c/index.js';
import { proxy } from './proxy/index.js';
import { sse } from './sse/index.js';
import { websockets } from './websockets/index.js';
import { redirects } from './redirects/index.js';
import { retries } from './retries/index.js';
import { router } from './router/index.js';
import { setDefaultMockPlugins } from './mock/index.js';

export * from './h2/index.js';
export * from './h2c/index.js';
export * from './cookies/index.js';
export * from './redirects/index.js';
export * from './decompression/index.js';
export * from './retries/index.js';
export * from './multipart/index.js';
export * from './fileserver/index.js';
export * from './proxy/index.js';
export * from './proxy-protocol/index.js';
export * from './sse/index.js';
export * from './router/index.js';
export * from './middleware/index.js';
export * from './websockets/index.js';
export * from './mock/index.js';
export * from './compression/index.js';
export * from './cache/index.js';

/** Ready-made plugin lists for `kernel.register(list)`; the kernel orders them by dependencies. */
export interface Presets {
  /**
   * The default bundle: h2, h2c, proxy, cookies, redirects, decompression, retries, router,
   * fileserver, sse and websockets. Plugins that have nothing to do without options (the
   * fileserver without mounts, the router without routes) cost little or nothing.
   */
  readonly defaults: readonly AnyPlugin[];
}

/** The presets. `createKernel().register(presets.defaults)` boots the default stack. */
export const presets: Presets = Object.freeze({
  defaults: Object.freeze([h2, h2c, proxy, cookies, redirects, decompression, retries, router, fileserver, sse, websockets] as AnyPlugin[]),
});

// mocks.client() stacks the mock over the default bundle (the mock cannot import this module).
setDefaultMockPlugins(() => presets.defaults);
