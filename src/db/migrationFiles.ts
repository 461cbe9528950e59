import { readdirSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

export interface Migration {
  version: number;
  name: string;
  sql: string;
}

const MIGRATION_FILE = /^(\d{6})_([a-z0-9_]+)\.sql$/;

/** The numbered, forward-only migrations shipped under sql/<set>/ (sql/ sits beside dist/). */
export type MigrationSet = 'ledger' | 'ledger-pg' | 'finance';

/** The set's migration files, by name alone: what a version check needs, without reading their SQL. */
function migrationFiles(set: MigrationSet): { dir: string; files: { file: string; version: number; name: string }[] } {
  const dir = fileURLToPath(new URL(`../../sql/${set}/`, import.meta.url));
  const files = readdirSync(dir)
    .map((file) => ({ file, m: MIGRATION_FILE.exec(file) }))
    .filter((x): x is { file: string; m: RegExpExecArray } => x.m !== null)
    .map(({ file, m }) => ({ file, version: Number(m[1]), name: m[2]! }))
    .sort((a, b) => a.version - b.version);
  return { dir, files };
}

export function readMigrations(set: MigrationSet): Migration[] {
  const { dir, files } = migrationFiles(set);
  return files.map(({ file, version, name }) => ({ version, name, sql: readFileSync(dir + file, 'utf8') }));
}

/** The highest version of the set this release knows (every command but `migrate` checks a store against it). */
export function latestMigration(set: MigrationSet): number {
  return Math.max(...migrationFiles(set).files.map((file) => file.version));
}
