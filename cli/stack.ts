/**
 * The kernel the commands run on: the default preset (`presets.defaults`, HTTP/2 included),
 * and a check that a plugin an option needs is loaded, so a flag never pretends.
 */
import { createKernel, type Kernel } from '../kernel/index.js';
import { cache, presets, type CacheStore } from '../plugins/index.js';
import { UsageError } from './errors.js';

/** A booted kernel with the command line's plugins, and the cache plugin on `store` when given (`--cache DIR`). */
export async function bootKernel(store?: CacheStore): Promise<Kernel> {
  const kernel = createKernel().register(presets.defaults);
  if (store !== undefined) kernel.register(cache, { store });
  await kernel.ready();
  return kernel;
}

/** Throws a usage error for `flag` when `kernel` has not loaded `plugin`. */
export function requirePlugin(kernel: Kernel, plugin: string, flag: string, command: string): void {
  if (!kernel.hasPlugin(plugin)) {
    throw new UsageError(`${flag} needs the ${plugin} plugin, which this build of switchyard does not include`, command);
  }
}
