import { defineConfig } from 'vitest/config';

/** `npm run bench`: speed ratios against references measured in the same run; not part of `npm test`. */
export default defineConfig({
  test: {
    include: ['bench/**/*.bench.test.ts'],
    globalSetup: ['test/support/globalSetup.ts'],
    testTimeout: 900_000,
    hookTimeout: 120_000,
    fileParallelism: false,
  },
});
