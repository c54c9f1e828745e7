import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    // Installs the real peers the suite drives when they are missing (test/setup/peers.ts).
    globalSetup: ['test/setup/peers.ts'],
    // Real sockets on loopback: generous per-test ceiling, but tests wait on events, never sleeps.
    testTimeout: 20_000,
    hookTimeout: 20_000,
    pool: 'forks',
  },
});
