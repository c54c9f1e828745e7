import { defineConfig, type Options } from 'tsup';

type Plugin = NonNullable<Options['plugins']>[number];

/**
 * esbuild writes code as ASCII (escaping the rest) but keeps the comments it keeps (those on
 * class fields) as written; one `§` or `…` among them makes V8 hold the chunk's whole source
 * as UTF-16, twice its size, for the life of the process. Only comments can hold such a
 * character here, and a `\uXXXX` escape means the same in a string, a regular expression or an
 * identifier, so every one is escaped.
 */
const asciiOutput: Plugin = {
  name: 'ascii-output',
  renderChunk(code) {
    return { code: code.replace(/[^\x00-\x7f]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`) };
  },
};

// Five public entries, matching package.json "exports": the top-level API, the kernel for
// plugin authors, the protocol plugins' codec internals, the plugin bundle, and the
// OpenTelemetry plugin (its own entry: it imports the optional peer @opentelemetry/api); plus
// the `switchyard` command (bin/).
export default defineConfig({
  entry: {
    index: 'index.ts',
    'kernel/index': 'kernel/index.ts',
    'kernel/protocol': 'kernel/protocol.ts',
    'plugins/index': 'plugins/index.ts',
    'plugins/opentelemetry/index': 'plugins/opentelemetry/index.ts',
    'cli/main': 'cli/main.ts',
  },
  format: ['esm'],
  target: 'node20',
  platform: 'node',
  dts: true,
  // No source maps: they would point at TypeScript sources the package does not ship.
  sourcemap: false,
  clean: true,
  splitting: true,
  treeshake: true,
  plugins: [asciiOutput],
});
