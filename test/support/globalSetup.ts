import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { TestProject } from 'vitest/node';
import { runCli } from './cli.js';
import { assertFreshBuild } from './freshBuild.js';
import { createDatabase, startHarnessPostgres } from './harnessPostgres.js';

/**
 * One PostgreSQL for the whole suite: embedded, or TEST_DATABASE_URL when given. The template
 * database is migrated once by the CLI itself; each test file clones it.
 */
export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  assertFreshBuild();
  const postgres = await startHarnessPostgres('test');
  const templateName = `settle_template_${process.pid}`;
  const template = await createDatabase(postgres.adminUrl, templateName);
  const ledgerDir = await mkdtemp(join(tmpdir(), 'settle-test-ledger-'));
  const migrated = await runCli(['migrate', '--ledger', join(ledgerDir, 'l.sqlite')], { DATABASE_URL: template.url });
  await rm(ledgerDir, { recursive: true, force: true });
  if (migrated.status !== 0) throw new Error(`migrating the template failed: ${migrated.stderr}`);

  project.provide('pgAdminUrl', postgres.adminUrl);
  project.provide('templateDatabase', templateName);

  return async () => {
    // an embedded server takes its databases with it; TEST_DATABASE_URL's keeps them
    if (postgres.external) await template.drop();
    await postgres.stop();
  };
}
