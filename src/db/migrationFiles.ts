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

export function readMigrations(set: MigrationSet): Migration[] {
  const dir = fileURLToPath(new URL(`../../sql/${set}/`, import.meta.url));
  return readdirSync(dir)
    .map((file) => ({ file, m: MIGRATION_FILE.exec(file) }))
    .filter((x): x is { file: string; m: RegExpExecArray } => x.m !== null)
    .map(({ file, m }) => ({ version: Number(m[1]), name: m[2]!, sql: readFileSync(dir + file, 'utf8') }))
    .sort((a, b) => a.version - b.version);
}
