import Database from 'better-sqlite3';
import { existsSync, readFileSync, statSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname } from 'node:path';
import { assertNotWorldWritableFolder, createPrivateFile } from '../privateFiles.js';
import { nowIso, nowMs } from '../clock.js';
import { SettleError, TransientError, UsageError } from '../errors.js';
import { latestMigration } from '../db/migrationFiles.js';
import type { MigrationResult } from '../db/migrator.js';
import { userName } from './ledgerOwner.js';
import { assertLedgerCurrent, migrateLedger, sqliteLedgerMigrationSql } from './migrateLedger.js';
import { SqlLedger } from './sqlLedger.js';
import type { Durability, SqlPort, SqlRow } from './sqlPort.js';

/** How long a write waits for another process's write before giving up. */
export const DEFAULT_BUSY_TIMEOUT_MS = 15_000;

const sqliteCode = (err: unknown) => (err as { code?: string }).code ?? '';

/**
 * The addon of the better-sqlite3 that `from` (a module's URL or path) resolves: where npm builds
 * or fetches it (its path), else where `bindings` finds it from better-sqlite3's own folder (a
 * build of another kind; the addon itself).
 */
export function sqliteAddonFrom(from: string): string | object {
  const require = createRequire(from);
  try {
    return require.resolve('better-sqlite3/build/Release/better_sqlite3.node');
  } catch {
    const root = dirname(require.resolve('better-sqlite3/package.json'));
    const bindings = createRequire(`${root}/package.json`)('bindings') as (o: { bindings: string; module_root: string }) => object;
    return bindings({ bindings: 'better_sqlite3.node', module_root: root });
  }
}

let addon: string | object | undefined;

/**
 * better-sqlite3's options with its native addon (`nativeBinding`): the package's JavaScript is
 * joined into the bundle (scripts/bundle.mjs) and compiled with its code cache, where its own look
 * for the addon (the `bindings` package, which searches from its caller's file) would search from
 * the bundle. Its types know the addon only by path; the package takes the loaded one too.
 */
function withAddon<O extends Database.Options>(options: O): O {
  return { ...options, nativeBinding: (addon ??= sqliteAddonFrom(import.meta.url)) as string };
}

/**
 * Why this user may not open the ledger when the file is another user's: its owner and mode, and
 * the fix (a ledger root made, for a service user, is the usual case).
 */
function ownerHint(path: string): string {
  const uid = process.getuid?.();
  let file;
  try {
    file = statSync(path);
  } catch {
    return '';
  }
  if (uid === undefined || file.uid === uid) return '';
  const owner = userName(file.uid);
  const me = userName(uid);
  const mode = (file.mode & 0o777).toString(8).padStart(4, '0');
  return `: it belongs to ${owner} (mode ${mode}) and this command runs as ${me}: chown ${me.startsWith('uid ') ? uid : me} ${path}, or run as ${owner}`;
}

function translateOpenError(err: unknown, path: string, busyTimeoutMs: number, forWriting = true): SettleError {
  const code = sqliteCode(err);
  const msg = (err as Error).message;
  if (code.startsWith('SQLITE_BUSY') || code === 'SQLITE_LOCKED') {
    return new TransientError(`ledger ${path} is locked by another process (waited ${busyTimeoutMs / 1000}s)`, { cause: err });
  }
  if (code === 'SQLITE_NOTADB' || code === 'SQLITE_CORRUPT') {
    return new UsageError(`ledger ${path} is not a SQLite ledger (${msg})`, { cause: err });
  }
  if (code.startsWith('SQLITE_READONLY') || code.startsWith('SQLITE_CANTOPEN') || code.startsWith('SQLITE_IOERR')) {
    return new UsageError(`ledger ${path} cannot be opened for ${forWriting ? 'writing' : 'reading'} (${msg})${ownerHint(path)}`, {
      cause: err,
    });
  }
  return new UsageError(`ledger ${path}: ${msg}`, { cause: err });
}

/**
 * The SQLite store behind the ledger's port: one file, WAL, synchronous=FULL, a busy timeout.
 * Once a run is under way a failed statement (disk full, I/O error) is exit 1 with its cause,
 * not a configuration problem; a lock held past the timeout says so.
 */
class SqlitePort implements SqlPort {
  /** one host's file: partners are never leased, runs go on as before */
  readonly sharedAcrossHosts = false;
  /** prepared once per SQL text: a run over thousands of files repeats a handful of statements */
  private readonly statements = new Map<string, Database.Statement>();
  /** the same, set to give arrays (a statement's raw mode is its own, so these are prepared apart) */
  private readonly rawStatements = new Map<string, Database.Statement>();

  constructor(
    readonly location: string,
    private readonly db: Database.Database,
    private readonly busyTimeoutMs: number,
  ) {
    withLedgerClock(db);
  }

  private guard<T>(fn: () => T): T {
    try {
      return fn();
    } catch (err) {
      const code = sqliteCode(err);
      if (err instanceof SettleError || code.startsWith('SQLITE_CONSTRAINT')) throw err;
      if (code.startsWith('SQLITE_BUSY') || code === 'SQLITE_LOCKED') throw translateOpenError(err, this.location, this.busyTimeoutMs);
      if (code.startsWith('SQLITE_')) {
        throw new TransientError(`ledger ${this.location}: a statement failed (${(err as Error).message})`, { cause: err });
      }
      throw err;
    }
  }

  private statement(sql: string): Database.Statement {
    let st = this.statements.get(sql);
    if (!st) {
      st = this.db.prepare(sql);
      this.statements.set(sql, st);
    }
    return st;
  }

  async all(sql: string, params: unknown[] = []): Promise<SqlRow[]> {
    return this.guard(() => this.statement(sql).all(...params) as SqlRow[]);
  }

  async arrays(sql: string, params: unknown[] = []): Promise<unknown[][]> {
    return this.guard(() => {
      let st = this.rawStatements.get(sql);
      if (!st) {
        st = this.db.prepare(sql).raw(true);
        this.rawStatements.set(sql, st);
      }
      return st.all(...params) as unknown[][];
    });
  }

  async run(sql: string, params: unknown[] = []): Promise<number> {
    return this.guard(() => this.statement(sql).run(...params).changes);
  }

  /**
   * IMMEDIATE: the write lock is taken at BEGIN, so two writers queue instead of deadlocking.
   * An unsynced commit is WAL's synchronous=NORMAL for that one transaction: its frames are
   * written, not synced; the next FULL commit's sync of the log carries them to the disk first.
   */
  async transaction<T>(fn: () => Promise<T>, durability: Durability = 'synced'): Promise<T> {
    if (durability === 'unsynced') this.db.pragma('synchronous = NORMAL');
    try {
      this.guard(() => this.db.exec('BEGIN IMMEDIATE'));
      try {
        const result = await fn();
        this.guard(() => this.db.exec('COMMIT'));
        return result;
      } catch (err) {
        if (this.db.inTransaction) this.db.exec('ROLLBACK');
        throw err;
      }
    } finally {
      if (durability === 'unsynced') this.db.pragma('synchronous = FULL');
    }
  }

  isUniqueViolation(err: unknown): boolean {
    return sqliteCode(err) === 'SQLITE_CONSTRAINT_UNIQUE';
  }

  async close(): Promise<void> {
    this.db.close();
  }
}

/**
 * The ledger's clock on a SQLite connection (sqlPort.ts: `ledger_now()`, `ledger_after(?)`): one
 * host's file keeps that host's time (src/clock.ts), as ISO text, which compares as time does.
 */
export function withLedgerClock(db: Database.Database): Database.Database {
  db.function('ledger_now', () => nowIso());
  db.function('ledger_after', (seconds: unknown) => new Date(nowMs() + Number(seconds) * 1000).toISOString());
  return db;
}

const READ_ONLY_WAL = /^SQLITE_(READONLY|CANTOPEN)/;

/**
 * The ledger for reading only (`status`, the reports), also for a monitoring user who may read
 * the file and nothing more. A WAL ledger opened read-only needs its `-shm` file, which SQLite
 * removes when the last writer closes and which such a user cannot create: then the ledger is
 * read from one copy of the file in memory. With no writer open there is no write-ahead log,
 * so that copy holds everything the ledger does.
 */
function openReadOnly(path: string, busyTimeoutMs: number): Database.Database {
  const db = new Database(path, withAddon({ readonly: true, fileMustExist: true, timeout: busyTimeoutMs }));
  try {
    db.prepare('SELECT count(*) FROM sqlite_master').get();
    return db;
  } catch (err) {
    db.close();
    if (!READ_ONLY_WAL.test(sqliteCode(err))) throw err;
  }
  const bytes = readFileSync(path);
  // the header's WAL marks (bytes 18 and 19): an image in memory has no log beside it
  if (bytes.length > 19 && bytes[18] === 2 && bytes[19] === 2) bytes[18] = bytes[19] = 1;
  return new Database(bytes, withAddon({ readonly: true }));
}

/**
 * Opens the SQLite ledger. `run` and the reports need it to exist and be current; `migrate`
 * creates it; `readOnly` never writes to it (see openReadOnly).
 */
export function openSqliteLedger(
  path: string,
  opts: { create: boolean; readOnly?: boolean; busyTimeoutMs?: number; migrated?: (result: MigrationResult) => void },
): SqlLedger {
  return new SqlLedger(openSqliteStore(path, opts));
}

/** The SQLite store itself, under the ledger's rules or read by `ledger copy` (see openSqliteLedger). */
export function openSqliteStore(
  path: string,
  opts: { create: boolean; readOnly?: boolean; busyTimeoutMs?: number; migrated?: (result: MigrationResult) => void },
): SqlPort {
  const busyTimeoutMs = opts.busyTimeoutMs ?? DEFAULT_BUSY_TIMEOUT_MS;
  if (!opts.create && !existsSync(path)) {
    throw new UsageError(`ledger ${path} does not exist: run \`settle-ingest migrate\` first`);
  }
  let db: Database.Database | undefined;
  let readOnly = false;
  try {
    assertNotWorldWritableFolder(path, 'ledger');
    if (opts.readOnly && !opts.create) {
      readOnly = true;
      db = openReadOnly(path, busyTimeoutMs);
      assertLedgerCurrent(db, path);
      return new SqlitePort(path, db, busyTimeoutMs);
    }
    if (opts.create) createPrivateFile(path);
    db = new Database(path, withAddon({ fileMustExist: !opts.create, timeout: busyTimeoutMs }));
    db.pragma('journal_mode = WAL');
    db.pragma('synchronous = FULL');
    db.pragma('foreign_keys = ON');
    if (opts.create) {
      const applied = migrateLedger(db, path);
      opts.migrated?.({ applied, current: latestMigration('ledger') });
    } else assertLedgerCurrent(db, path);
    return new SqlitePort(path, db, busyTimeoutMs);
  } catch (err) {
    db?.close();
    if (err instanceof SettleError) throw err;
    throw translateOpenError(err, path, busyTimeoutMs, !readOnly);
  }
}

/** What `migrate --print-sql` shows of a SQLite ledger: its pending migrations, read without writing. */
export function sqliteMigrationSql(path: string, busyTimeoutMs = DEFAULT_BUSY_TIMEOUT_MS): string {
  if (!existsSync(path)) return sqliteLedgerMigrationSql(null, path);
  let db: Database.Database | undefined;
  try {
    db = openReadOnly(path, busyTimeoutMs);
    return sqliteLedgerMigrationSql(db, path);
  } catch (err) {
    if (err instanceof SettleError) throw err;
    throw translateOpenError(err, path, busyTimeoutMs, false);
  } finally {
    db?.close();
  }
}

/** What `ledger backup` made: the copy, its ledger version and size. */
export interface LedgerBackup {
  from: string;
  to: string;
  version: number;
  bytes: number;
}

/**
 * A consistent copy of a SQLite ledger while runs may be writing it (SQLite's online backup, as
 * `sqlite3 LEDGER ".backup TO"` makes), into a new file of mode 0600 that is checked whole
 * (`PRAGMA integrity_check`) before it is called a backup. An existing file is never replaced.
 */
export async function backupSqliteLedger(path: string, to: string, busyTimeoutMs = DEFAULT_BUSY_TIMEOUT_MS): Promise<LedgerBackup> {
  if (!existsSync(path)) throw new UsageError(`ledger ${path} does not exist`);
  if (existsSync(to)) throw new UsageError(`${to} exists: a backup is written to a new file only`);
  let db: Database.Database | undefined;
  try {
    db = openReadOnly(path, busyTimeoutMs);
    const version = (db.prepare('SELECT max(version) AS version FROM schema_migrations').get() as { version: number }).version;
    createPrivateFile(to);
    await db.backup(to);
    const copy = new Database(to, withAddon({ readonly: true, fileMustExist: true }));
    try {
      const check = copy.pragma('integrity_check', { simple: true });
      if (check !== 'ok') throw new TransientError(`backup ${to} of ledger ${path} is not whole (integrity_check: ${String(check)})`);
    } finally {
      copy.close();
    }
    return { from: path, to, version, bytes: statSync(to).size };
  } catch (err) {
    if (err instanceof SettleError) throw err;
    throw translateOpenError(err, path, busyTimeoutMs, false);
  } finally {
    db?.close();
  }
}
