import { defineConfig } from 'vitest/config';
import { PATIENCE_MS } from './test/support/patience.js';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    // Bounds that only end a test that would hang, never judge a speed: the suite must pass
    // on a machine at load 8, where a service child takes tens of seconds just to start.
    testTimeout: 2 * PATIENCE_MS,
    hookTimeout: 3 * PATIENCE_MS,
    expect: { poll: { timeout: PATIENCE_MS, interval: 50 } },
    // Tests share loopback Redis and PostgreSQL; each suite uses its own namespace or table.
    pool: 'forks',
    // Two files at a time. Most of the suite's time is waiting on real clocks: voice frames,
    // Discord's 5 s identify buckets, leases running out. On the 2-core CI machine, vitest's
    // default of one worker took 8.5 minutes of the 10 allowed; with two it takes under 5.
    maxWorkers: 2,
  },
});
