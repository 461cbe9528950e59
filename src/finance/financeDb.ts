import type pg from 'pg';
import { loadsThroughStaging, type Layout } from '../layout/model/layout.js';
import { endPostgres } from '../db/pgConnect.js';
import { connectFinance, type FinanceConnectOptions } from './connectFinance.js';
import { copyRows, judgeRows } from './copyRows.js';
import { loadFacts, type LoadFacts } from './financeFacts.js';
import { assertCanMigrate } from '../db/pgMigrate.js';
import { assertCanStage, assertPrivileges, readNeeds, reprocessNeeds, runNeeds } from './financePrivileges.js';
import { findFileMarker, type FileMarker } from './fileMarker.js';
import { keyPresence, type KeyPresence } from './keyPresence.js';
import { assertLayoutFitsTable } from './layoutTable.js';
import { assertFinanceCurrent, financeMigrationSql, migrateFinance, type FinanceMigration } from './migrateFinance.js';
import { reloadRows, type ReloadResult } from './reloadRows.js';
import type { StagedRows } from './stagedLoad.js';
import type { FinanceTarget, LoadRequest, LoadResult } from './target.js';

/**
 * What a command does with the finance database: `load` (run), `reprocess` (which also deletes
 * the rows it replaces), `read` (audit, adopt) and `judge` (`check` asking what a load of a
 * statement would do: it stages the rows as a load does, and rolls back) need it migrated and
 * their privileges; `migrate` checks its own privileges and brings the schema up to date.
 */
export type FinancePurpose = 'load' | 'reprocess' | 'read' | 'judge' | 'migrate';

const NEEDS = { load: runNeeds, reprocess: reprocessNeeds, read: readNeeds, judge: readNeeds } as const;

/**
 * The finance database as the rest of the tool sees it: one connection, bound to its schema and
 * to the layout whose table the rows go to. Every statement on it is one of these methods; the
 * modules behind them (COPY, tables, markers, key look-ups, privileges, migrations) take this
 * object, never the connection, schema and layout apart.
 */
export class FinanceDb implements FinanceTarget {
  private constructor(
    readonly client: pg.Client,
    readonly schema: string,
    readonly layout: Layout,
  ) {}

  /** Connects (see connectFinance.ts for what is transient and what is configuration). */
  static async connect(url: string | undefined, schema: string, layout: Layout, opts: FinanceConnectOptions): Promise<FinanceDb> {
    return new FinanceDb(await connectFinance(url, opts), schema, layout);
  }

  /** The same connection and schema, for another layout's table. */
  forLayout(layout: Layout): FinanceDb {
    return new FinanceDb(this.client, this.schema, layout);
  }

  /** `schema.table` of the layout, for messages */
  get table(): string {
    return `${this.schema}.${this.layout.table}`;
  }

  /**
   * Refuses to start (exit 2) unless the database is ready for the purpose: the role's
   * privileges, the schema's version, and for loading the layout's table with every column.
   */
  async assertReady(purpose: FinancePurpose): Promise<void> {
    if (purpose === 'migrate') return assertCanMigrate(this.client, this.schema);
    await assertPrivileges(this, NEEDS[purpose](this.layout.table));
    await assertFinanceCurrent(this);
    if (purpose !== 'read') await assertLayoutFitsTable(this);
    if (purpose !== 'read' && loadsThroughStaging(this.layout)) await assertCanStage(this);
  }

  /** Creates or upgrades the finance schema, then the layout's table. */
  migrate(): Promise<FinanceMigration> {
    return migrateFinance(this);
  }

  /** What `migrate` would run, without running it. */
  migrationSql(): Promise<string> {
    return financeMigrationSql(this);
  }

  /** Loads one staged content in ONE transaction with its file marker, or nothing of it. */
  load(req: LoadRequest): Promise<LoadResult> {
    return copyRows(this, req);
  }

  /** What a load of a good file would make of its rows, loading none: new and seen before, or the refusal it would meet (`check`). */
  judge(stagedPath: string, name: string): Promise<StagedRows> {
    return judgeRows(this, { stagedPath, name });
  }

  /** Replaces a loaded content's rows with a fresh load of it, in ONE transaction. */
  reload(req: LoadRequest, opts: { dryRun: boolean; reason: string }): Promise<ReloadResult> {
    return reloadRows(this, req, opts);
  }

  /** The database's own record that a content was loaded, if it has one. */
  fileMarker(sha256: string): Promise<FileMarker | null> {
    return findFileMarker(this, sha256);
  }

  /** Every file marker with the rows that really carry its load (`audit`). */
  loadFacts(): Promise<LoadFacts[]> {
    return loadFacts(this);
  }

  /** How many of a staged file's rows have their natural key in the layout's table (`adopt`); `fileName`: the name it was delivered under. */
  keyPresence(path: string, fileName: string, deliveredAt?: number): Promise<KeyPresence> {
    return keyPresence(this, path, fileName, deliveredAt);
  }

  /** Ends the connection; the server's own close of it is not waited for (endPostgres). */
  close(): Promise<void> {
    return endPostgres(this.client);
  }
}
