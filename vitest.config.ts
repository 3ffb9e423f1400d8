import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    testTimeout: 20_000,
    hookTimeout: 30_000,
    // Tests share loopback Redis and PostgreSQL; each suite uses its own namespace or table.
    pool: 'forks',
    // Two files at a time. Most of the suite's time is waiting on real clocks: voice frames,
    // Discord's 5 s identify buckets, leases running out. On the 2-core CI machine, vitest's
    // default of one worker took 8.5 minutes of the 10 allowed; with two it takes under 5.
    maxWorkers: 2,
  },
});
