import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { startTestPostgres, type RunningPostgres } from './postgresServer.js';

declare module 'vitest' {
  export interface ProvidedContext {
    /** a URL whose database is a maintenance database: tests create their own from the template */
    pgAdminUrl: string;
    templateDatabase: string;
    /** the db project's: workspaces run the CLI's main() in the test's process (test/support/workspace.ts, runCommand) */
    inProcessCli?: boolean;
  }
}

export interface HarnessPostgres {
  /** the maintenance database's URL, as an administrator */
  adminUrl: string;
  /** true for TEST_DATABASE_URL's server, which outlives the suite: what the suite made there is dropped by hand */
  external: boolean;
  stop(): Promise<void>;
}

/**
 * The suite's PostgreSQL: embedded in a folder of its own under the temporary folder, or
 * TEST_DATABASE_URL's server when given (the integration and db projects' global setups).
 */
export async function startHarnessPostgres(purpose: string): Promise<HarnessPostgres> {
  const given = process.env.TEST_DATABASE_URL;
  if (given) return { adminUrl: given, external: true, stop: async () => undefined };
  const dir = await mkdtemp(join(tmpdir(), `settle-${purpose}-pg-`));
  let server: RunningPostgres;
  try {
    server = await startTestPostgres(dir);
  } catch (err) {
    await rm(dir, { recursive: true, force: true });
    throw err;
  }
  return {
    adminUrl: server.url('postgres'),
    external: false,
    stop: async () => {
      await server.stop();
      await rm(dir, { recursive: true, force: true });
    },
  };
}

/** A URL of the same server and role as `adminUrl`, for database `name`. */
export function databaseUrl(adminUrl: string, name: string): string {
  const url = new URL(adminUrl);
  url.pathname = `/${name}`;
  return url.toString();
}

/** Runs one statement as the administrator, on a connection of its own. */
async function asAdmin(adminUrl: string, statement: string): Promise<void> {
  const admin = new pg.Client({ connectionString: adminUrl });
  await admin.connect();
  try {
    await admin.query(statement);
  } finally {
    await admin.end();
  }
}

/**
 * Creates database `name` afresh (dropping one left by an earlier run of that name), empty or
 * cloned from `template`; returns its URL and the drop that removes it, its sessions ended.
 */
export async function createDatabase(
  adminUrl: string,
  name: string,
  opts: { template?: string } = {},
): Promise<{ url: string; drop: () => Promise<void> }> {
  await asAdmin(adminUrl, `DROP DATABASE IF EXISTS ${name}`);
  await asAdmin(adminUrl, `CREATE DATABASE ${name}${opts.template ? ` TEMPLATE ${opts.template}` : ''}`);
  return { url: databaseUrl(adminUrl, name), drop: () => asAdmin(adminUrl, `DROP DATABASE IF EXISTS ${name} WITH (FORCE)`) };
}
