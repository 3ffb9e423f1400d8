import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    testTimeout: 20_000,
    hookTimeout: 30_000,
    // Tests share loopback Redis and PostgreSQL; each suite uses its own namespace or table.
    pool: 'forks',
  },
});
