import type { TestProject } from 'vitest/node';
import { startHarnessPostgres } from './harnessPostgres.js';

/**
 * The db project's PostgreSQL (embedded, or TEST_DATABASE_URL when given), without the built
 * CLI: its tests run src/ in-process, so coverage sees them, and each makes its own database
 * (test/support/dbDatabase.ts) and migrates it through src/ itself; a workspace
 * (test/support/workspace.ts) runs the CLI's main() in-process.
 */
export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  const postgres = await startHarnessPostgres('db');
  project.provide('pgAdminUrl', postgres.adminUrl);
  project.provide('templateDatabase', 'template1');
  project.provide('inProcessCli', true);
  return () => postgres.stop();
}
