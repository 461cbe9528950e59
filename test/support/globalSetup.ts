import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { TestProject } from 'vitest/node';
import pg from 'pg';
import { startTestPostgres, type RunningPostgres } from './postgresServer.js';
import { runCli } from './cli.js';
import { assertFreshBuild } from './freshBuild.js';

declare module 'vitest' {
  export interface ProvidedContext {
    /** a URL whose database is a maintenance database: tests create their own from the template */
    pgAdminUrl: string;
    templateDatabase: string;
  }
}

/**
 * One PostgreSQL for the whole suite: embedded, or TEST_DATABASE_URL when given. The template
 * database is migrated once by the CLI itself; each test file clones it.
 */
export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  assertFreshBuild();
  let server: RunningPostgres | undefined;
  let dir: string | undefined;
  let adminUrl = process.env.TEST_DATABASE_URL;
  if (!adminUrl) {
    dir = await mkdtemp(join(tmpdir(), 'settle-test-pg-'));
    server = await startTestPostgres(dir);
    adminUrl = server.url('postgres');
  }
  const template = `settle_template_${process.pid}`;
  const admin = new pg.Client({ connectionString: adminUrl });
  await admin.connect();
  await admin.query(`DROP DATABASE IF EXISTS ${template}`);
  await admin.query(`CREATE DATABASE ${template}`);
  await admin.end();

  const templateUrl = new URL(adminUrl);
  templateUrl.pathname = `/${template}`;
  const ledgerDir = await mkdtemp(join(tmpdir(), 'settle-test-ledger-'));
  const migrated = await runCli(['migrate', '--ledger', join(ledgerDir, 'l.sqlite')], { DATABASE_URL: templateUrl.toString() });
  await rm(ledgerDir, { recursive: true, force: true });
  if (migrated.status !== 0) throw new Error(`migrating the template failed: ${migrated.stderr}`);

  project.provide('pgAdminUrl', adminUrl);
  project.provide('templateDatabase', template);

  return async () => {
    if (server) await server.stop();
    else {
      const c = new pg.Client({ connectionString: adminUrl });
      await c.connect();
      await c.query(`DROP DATABASE IF EXISTS ${template}`);
      await c.end();
    }
    if (dir) await rm(dir, { recursive: true, force: true });
  };
}
