import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { TestProject } from 'vitest/node';
import { startTestPostgres, type RunningPostgres } from './postgresServer.js';

/**
 * The db project's PostgreSQL (embedded, or TEST_DATABASE_URL when given), without the built
 * CLI: its tests run src/ in-process, so coverage sees them, and each makes its own database
 * (test/support/dbDatabase.ts) and migrates it through src/ itself.
 */
export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  let server: RunningPostgres | undefined;
  let dir: string | undefined;
  let adminUrl = process.env.TEST_DATABASE_URL;
  if (!adminUrl) {
    dir = await mkdtemp(join(tmpdir(), 'settle-db-pg-'));
    server = await startTestPostgres(dir);
    adminUrl = server.url('postgres');
  }
  project.provide('pgAdminUrl', adminUrl);
  project.provide('templateDatabase', 'template1');
  return async () => {
    if (server) await server.stop();
    if (dir) await rm(dir, { recursive: true, force: true });
  };
}
