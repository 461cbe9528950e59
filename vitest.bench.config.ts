import { defineConfig } from 'vitest/config';

/**
 * `npm run bench`: speed ratios against references measured in the same run; not part of `npm
 * test`. The bench starts its own PostgreSQL servers (one as fast as it can be made, one as
 * shipped), so it has no global setup.
 */
export default defineConfig({
  test: {
    include: ['bench/**/*.bench.test.ts'],
    testTimeout: 3_600_000,
    hookTimeout: 300_000,
    fileParallelism: false,
  },
});
