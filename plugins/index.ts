/**
 * switchyard/plugins: the feature plugins and the presets that bundle them.
 *
 * Each plugin lives in `plugins/<name>/` and is re-exported here as it lands (none yet).
 */
import type { AnyPlugin } from '../kernel/plugin.js';

/** Ready-made plugin lists for `kernel.register(list)`; the kernel orders them by dependencies. */
export interface Presets {
  /**
   * The default bundle: h2, h2c, proxy, cookies, redirects, decompression, retries, router,
   * fileserver, sse and websockets. Empty for now: it grows as each plugin's issue lands, so
   * code written against `presets.defaults` picks them up without changes.
   */
  readonly defaults: readonly AnyPlugin[];
}

/** The presets. `createKernel().register(presets.defaults)` boots the default stack. */
export const presets: Presets = Object.freeze({
  defaults: Object.freeze([] as AnyPlugin[]),
});
