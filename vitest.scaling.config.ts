import { defineConfig } from 'vitest/config';

/**
 * `npm run bench:scaling`: the limits of docs/SCALING.md (bench/scaling/), each file starting
 * the servers it needs; not part of `npm test` or `npm run bench`. One file at a time:
 * `npm run bench:scaling -- bench/scaling/ledgerYear.scaling.test.ts`.
 */
export default defineConfig({
  test: {
    include: ['bench/scaling/**/*.scaling.test.ts'],
    testTimeout: 7_200_000,
    hookTimeout: 300_000,
    fileParallelism: false,
  },
});
