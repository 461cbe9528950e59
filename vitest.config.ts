import { availableParallelism } from 'node:os';
import { defineConfig } from 'vitest/config';

/**
 * Test files run side by side, each in a process of its own (vitest's default would be one file
 * at a time on two cores: cores - 1). The unit and db files work the CPU: one per core. The
 * slowest integration files mostly wait (on the CLI's subprocesses, PostgreSQL, the SFTP servers,
 * a timeout they prove): two per core keep the cores busy (docs/DEVELOPING.md, "The suite's time").
 * SETTLE_TEST_WORKERS sets both to one number (1: a file at a time, as when hunting a flaky test).
 */
const cores = availableParallelism();
const workers = (perCore: number) => Number(process.env.SETTLE_TEST_WORKERS) || Math.max(2, cores * perCore);

export default defineConfig({
  test: {
    // `--coverage` (scripts/test.mjs gives it to the unit and db projects): lines of src/ these tests
    // run, with floors at what they reach; the integration tests run the CLI in processes of its
    // own, which this does not see
    coverage: {
      provider: 'v8',
      include: ['src/**/*.ts'],
      reporter: ['text-summary', ['json-summary', { file: 'coverage-summary.json' }]],
      reportsDirectory: '.test-output/coverage',
      // the floors at what the unit and db tests reach (raise them as tests are added, never lower
      // them): the run's flow without a finance database (test/unit/pipelineRun.test.ts) and with
      // one (test/db/pipelineLoad.test.ts: loads, rejects, reprocess, adopt), the SQLite ledger,
      // and the finance load and PostgreSQL ledger in-process (test/db/)
      thresholds: {
        lines: 66,
        statements: 64,
        branches: 59,
        functions: 59,
        'src/pipeline/**': { lines: 90 },
        // ledger/ at 92: the partner leases (partnerLeases.ts) are proved by several processes on a real
        // PostgreSQL ledger in test/integration/partnerLeases.test.ts, which no coverage sees
        'src/ledger/**': { lines: 92 },
        // finance/ at 95: the last run reached 96.05% (copyBinary.ts and financePrivileges.ts by test/db/)
        'src/finance/**': { lines: 95 },
      },
    },
    projects: [
      {
        test: {
          name: 'unit',
          include: ['test/unit/**/*.test.ts'],
          maxWorkers: workers(1),
          setupFiles: ['test/support/leftoversSetup.ts'],
          // the differential reader tests do real work: on a busy two-core machine 5 s is too little
          testTimeout: 30_000,
        },
      },
      {
        test: {
          // src/finance/ and the PostgreSQL ledger, in-process against the harness's PostgreSQL
          // (test/support/dbSetup.ts): no build, and coverage sees them
          name: 'db',
          include: ['test/db/**/*.test.ts'],
          maxWorkers: workers(1),
          globalSetup: ['test/support/dbSetup.ts'],
          setupFiles: ['test/support/leftoversSetup.ts'],
          testTimeout: 60_000,
          hookTimeout: 120_000,
        },
      },
      {
        test: {
          name: 'integration',
          include: ['test/integration/**/*.test.ts'],
          maxWorkers: workers(2),
          globalSetup: ['test/support/globalSetup.ts'],
          setupFiles: ['test/support/leftoversSetup.ts'],
          testTimeout: 120_000,
          hookTimeout: 120_000,
        },
      },
    ],
  },
});
