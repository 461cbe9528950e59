import type Database from 'better-sqlite3';
import { applyMigrations, assertCurrent, pendingMigrationsSql, type MigrationStore } from '../db/migrator.js';

function currentVersion(db: Database.Database): number {
  const table = db.prepare(`SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'schema_migrations'`).get();
  if (!table) return 0;
  const row = db.prepare('SELECT max(version) AS version FROM schema_migrations').get() as { version: number | null };
  return row.version ?? 0;
}

const ledgerStore = (path: string): MigrationStore => ({ label: `ledger ${path}`, set: 'ledger' });

/**
 * The SQLite side of the migrator (`db/migrator.ts`): each migration in its own IMMEDIATE
 * transaction (SQLite's write lock), recording its version first: a second migrator waits,
 * then finds it applied.
 */
export function migrateLedger(db: Database.Database, path: string): number[] {
  return applyMigrations(ledgerStore(path), currentVersion(db), (migration) =>
    db
      .transaction(() => {
        db.exec(`CREATE TABLE IF NOT EXISTS schema_migrations (
                   version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at TEXT NOT NULL)`);
        const recorded = db
          .prepare('INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, ?, ?) ON CONFLICT DO NOTHING')
          .run(migration.version, migration.name, new Date().toISOString());
        if (recorded.changes === 0) return false;
        db.exec(migration.sql);
        return true;
      })
      .immediate(),
  );
}

export function assertLedgerCurrent(db: Database.Database, path: string): void {
  assertCurrent(ledgerStore(path), currentVersion(db));
}

/** What `migrate --print-sql` shows of a SQLite ledger (`db` null: the file is not there yet, migrate creates it). */
export function sqliteLedgerMigrationSql(db: Database.Database | null, path: string): string {
  const first = db === null ? `-- ledger ${path} does not exist yet: migrate creates it (mode 0600) and runs\n` : '';
  return first + pendingMigrationsSql(ledgerStore(path), db === null ? 0 : currentVersion(db), 'ledger');
}
