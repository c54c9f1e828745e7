import { defineConfig } from 'tsup';

// Four public entries, matching package.json "exports": the top-level API, the kernel for
// plugin authors, the protocol plugins' codec internals, and the plugin bundle; plus the
// `switchyard` command (bin/).
export default defineConfig({
  entry: {
    index: 'index.ts',
    'kernel/index': 'kernel/index.ts',
    'kernel/protocol': 'kernel/protocol.ts',
    'plugins/index': 'plugins/index.ts',
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
});
