import { UsageError } from '../errors.js';
import { latestMigration, readMigrations, type Migration, type MigrationSet } from './migrationFiles.js';

/**
 * The one migrator of both stores: the PostgreSQL schemas (the finance schema and a shared
 * ledger, `pgMigrate.ts`) and the SQLite ledger (`ledger/migrateLedger.ts`). It owns what they
 * have in common — the numbered migrations of a set, the version check and its messages, the
 * apply loop and what it returns; each store brings the transaction one migration runs in.
 *
 * The protocol, alike in both: each migration runs in a transaction of its own, which first
 * creates `schema_migrations` if it is missing and inserts the migration's own row; only when
 * that insert added the row does the migration's SQL run. Two migrators at once queue on the
 * store's lock, and the second finds the row there and skips the migration, never half-applying it.
 */
export interface MigrationStore {
  /** what every message names: `ledger /var/lib/settle/ledger.sqlite`, `finance schema "settle"` */
  readonly label: string;
  readonly set: MigrationSet;
}

/** What a migrate did: the versions it applied (none when the store was current), and the version after. */
export interface MigrationResult {
  applied: number[];
  current: number;
}

/** The set's migrations, oldest first, and the highest version this release knows. */
export function knownMigrations(set: MigrationSet): { migrations: Migration[]; latest: number } {
  const migrations = readMigrations(set);
  return { migrations, latest: migrations.at(-1)?.version ?? 0 };
}

/**
 * `migrate` may bring a store forward, never back: refused when it is at a version newer than
 * this release knows (a later release migrated it). Returns every migration of the set, each
 * applied or skipped by the store's transaction.
 */
export function migrationsToApply(store: MigrationStore, current: number): Migration[] {
  const { migrations, latest } = knownMigrations(store.set);
  if (current > latest) throw newerThanRelease(store, current, latest);
  return migrations;
}

/** The migrations `migrate` would apply to a store at `current` (refused, as migrate is, when it is newer than this release). */
export function pendingMigrations(store: MigrationStore, current: number): Migration[] {
  return migrationsToApply(store, current).filter((migration) => migration.version > current);
}

/**
 * What `migrate --print-sql` shows of a store: each pending migration under a comment naming it
 * (and what it runs with, `with search_path "settle"`), or a line saying the store is current.
 */
export function pendingMigrationsSql(store: MigrationStore, current: number, what: string, runsWith = ''): string {
  const pending = pendingMigrations(store, current);
  if (pending.length === 0) return `-- ${store.label} is at version ${current}: up to date`;
  return pending
    .map((m) => `-- ${what} migration ${m.version} (${m.name})${runsWith ? `, ${runsWith}` : ''}\n${m.sql.trim()}`)
    .join('\n\n');
}

/** Every command but `migrate` needs the store at exactly this release's version, rather than half-working against another. */
export function assertCurrent(store: MigrationStore, current: number): void {
  const latest = latestMigration(store.set);
  if (current < latest) {
    throw new UsageError(`${store.label} is at version ${current}, this release needs ${latest}: run \`settle-ingest migrate\` first`);
  }
  if (current > latest) throw newerThanRelease(store, current, latest);
}

function newerThanRelease(store: MigrationStore, current: number, latest: number): UsageError {
  return new UsageError(`${store.label} is at version ${current}, newer than this release knows (${latest}): upgrade settle-ingest`);
}

/**
 * The apply loop of a store whose transactions are synchronous (SQLite): `applyOne` runs one
 * migration in its transaction and says whether it applied it (false: its row was there).
 */
export function applyMigrations(store: MigrationStore, current: number, applyOne: (migration: Migration) => boolean): number[] {
  return migrationsToApply(store, current)
    .filter((migration) => applyOne(migration))
    .map((migration) => migration.version);
}

/** The same loop for a store whose transactions are asynchronous (PostgreSQL): one migration at a time, in order. */
export async function applyMigrationsInTurn(
  store: MigrationStore,
  current: number,
  applyOne: (migration: Migration) => Promise<boolean>,
): Promise<number[]> {
  const applied: number[] = [];
  for (const migration of migrationsToApply(store, current)) {
    if (await applyOne(migration)) applied.push(migration.version);
  }
  return applied;
}
