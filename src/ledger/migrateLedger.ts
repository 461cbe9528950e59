import type Database from 'better-sqlite3';
import { readMigrations } from '../db/migrationFiles.js';
import { UsageError } from '../errors.js';

function currentVersion(db: Database.Database): number {
  const table = db.prepare(`SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'schema_migrations'`).get();
  if (!table) return 0;
  const row = db.prepare('SELECT max(version) AS v FROM schema_migrations').get() as { v: number | null };
  return row.v ?? 0;
}

/**
 * Applies pending ledger migrations, each in its own IMMEDIATE transaction (SQLite's write
 * lock), recording its version first: a second migrator waits, then finds it applied.
 */
export function migrateLedger(db: Database.Database, path: string): number[] {
  const latest = Math.max(...readMigrations('ledger').map((migration) => migration.version));
  const current = currentVersion(db);
  if (current > latest) {
    throw new UsageError(`ledger ${path} is at version ${current}, newer than this release knows (${latest}): upgrade settle-ingest`);
  }
  const applied: number[] = [];
  for (const m of readMigrations('ledger')) {
    const apply = db.transaction(() => {
      db.exec(`CREATE TABLE IF NOT EXISTS schema_migrations (
                 version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at TEXT NOT NULL)`);
      const done = db
        .prepare('INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, ?, ?) ON CONFLICT DO NOTHING')
        .run(m.version, m.name, new Date().toISOString());
      if (done.changes === 0) return;
      db.exec(m.sql);
      applied.push(m.version);
    });
    apply.immediate();
  }
  return applied;
}

export function assertLedgerCurrent(db: Database.Database, path: string): void {
  const latest = Math.max(...readMigrations('ledger').map((m) => m.version));
  const current = currentVersion(db);
  if (current < latest) {
    throw new UsageError(`ledger ${path} is at version ${current}, this release needs ${latest}: run \`settle-ingest migrate\` first`);
  }
  if (current > latest) {
    throw new UsageError(`ledger ${path} is at version ${current}, newer than this release knows (${latest}): upgrade settle-ingest`);
  }
}
