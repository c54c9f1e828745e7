/**
 * Symbols the kernel keys its private metadata with.
 *
 * `Symbol.for` (the global registry) rather than `Symbol()`: two copies of switchyard in one
 * process (a plugin bundling its own) must still recognise each other's plugins, as undici
 * does with its `Symbol.for`-keyed error brands.
 */

/** Brand set on every object {@link definePlugin} returns; `isPlugin` checks it. */
export const kPlugin = Symbol.for('switchyard.plugin');

/**
 * avvio reads a plugin function's display name from this key (the one fastify-plugin sets);
 * the kernel puts the plugin's name there so avvio's own errors and trees name it.
 */
export const kPluginMeta = Symbol.for('plugin-meta');
