import type { Command } from 'commander';
import { resolvePartners, type RawFlags, type Settings } from '../config/settings.js';
import { UsageError } from '../errors.js';
import { ledgerGroupId, shareLedgerWithGroup } from '../ledger/ledgerGroup.js';
import type { MigrationResult } from '../db/migrator.js';
import { refuseLedgerOnlyRootCouldWrite } from '../ledger/ledgerOwner.js';
import { isPostgresUrl, ledgerMigrationSql } from '../ledger/openLedger.js';
import { withResources } from './resources.js';
import { jsonDocument } from './jsonOutput.js';
import { withSettingOptions } from './options.js';

export interface MigrateResult {
  financeSchema: string;
  financeVersion: number;
  /** finance migrations applied by this call (none when it was up to date) */
  applied: number[];
  /** the (first) layout's table, and what migrate did to it (created, columns added; none when it fit) */
  table: string;
  tableChanges: string[];
  /** every partner's layout table (one entry per table), with the partners whose files go there */
  tables: { table: string; partners: string[]; tableChanges: string[] }[];
  ledger: string;
  ledgerVersion: number;
  /** ledger migrations applied by this call (none when it was up to date) */
  ledgerApplied: number[];
}

export function registerMigrate(program: Command): void {
  withSettingOptions(program.command('migrate'), 'migrate')
    .description('create or upgrade the ledger and the finance schema')
    .action(async (flags: RawFlags & { json?: boolean; printSql?: boolean }) => {
      const { partners } = resolvePartners(flags);
      if (flags.printSql) {
        process.stdout.write(`${await printSql(partners)}\n`);
        return;
      }
      const r = await migrateEverything(partners);
      process.stdout.write(`${flags.json ? jsonDocument({ ...r }) : migrateLine(r)}\n`);
    });
}

/** One layout per table: partners that share a layout (and so a table) migrate it once. */
function layoutsOf(partners: Settings[]): { settings: Settings; partners: string[] }[] {
  const byTable = new Map<string, { settings: Settings; partners: string[] }>();
  for (const p of partners) {
    const entry = byTable.get(p.layout.table) ?? { settings: p, partners: [] };
    entry.partners.push(p.partner);
    byTable.set(p.layout.table, entry);
  }
  return [...byTable.values()];
}

/** What migrate would run, changing nothing: on the finance database (its migrations, every layout's table), then on the ledger. */
function printSql(partners: Settings[]): Promise<string> {
  const settings = partners[0]!;
  return withResources(settings, async (r) => {
    const finance = await r.finance('migrate');
    const parts: string[] = [];
    for (const { settings: partner } of layoutsOf(partners)) parts.push(await finance.forLayout(partner.layout).migrationSql());
    parts.push(await ledgerMigrationSql(settings.ledger, settings.ledgerTimeoutSeconds * 1000));
    return parts.join('\n\n');
  });
}

/** Migrates the finance schema, every partner's layout table and the ledger. */
async function migrateEverything(partners: Settings[]): Promise<MigrateResult> {
  const settings = partners[0]!;
  if (settings.ledgerGroup !== undefined && isPostgresUrl(settings.ledger)) {
    throw new UsageError(
      '--ledger-group is for a SQLite ledger: for a PostgreSQL one, GRANT USAGE ON SCHEMA settle_ledger and SELECT ON ALL TABLES IN SCHEMA settle_ledger to the monitoring role',
    );
  }
  const gid = settings.ledgerGroup === undefined ? undefined : ledgerGroupId(settings.ledgerGroup);
  if (!isPostgresUrl(settings.ledger)) refuseLedgerOnlyRootCouldWrite(settings.ledger);
  return withResources(settings, async (commandResources) => {
    // the finance role's privileges are checked as it opens, the ledger's before its first
    // migration: the ledger goes first, so that a refusal of either comes before any change
    const db = await commandResources.finance('migrate');
    let ledgerMigration: MigrationResult = { applied: [], current: 0 };
    const ledger = await commandResources.ledger({ create: true, migrated: (result) => (ledgerMigration = result) });
    if (gid !== undefined) shareLedgerWithGroup(settings.ledger, settings.ledgerGroup!, gid);
    const tables: MigrateResult['tables'] = [];
    let first: Awaited<ReturnType<typeof db.migrate>> | undefined;
    for (const layout of layoutsOf(partners)) {
      const done = await db.forLayout(layout.settings.layout).migrate();
      first ??= done;
      tables.push({ table: done.table, partners: layout.partners, tableChanges: done.tableChanges });
    }
    return {
      financeSchema: settings.schema,
      financeVersion: first!.current,
      applied: first!.applied,
      table: first!.table,
      tableChanges: first!.tableChanges,
      tables,
      ledger: ledger.location,
      ledgerVersion: ledgerMigration.current,
      ledgerApplied: ledgerMigration.applied,
    };
  });
}

/** `given 1 new column(s)`, `given 1 new column(s), 2 column(s) changed`. */
function changedTable(changes: string[]): string {
  const added = changes.filter((c) => c.includes(' ADD COLUMN ')).length;
  const changed = changes.length - added;
  return [added > 0 ? `given ${added} new column(s)` : '', changed > 0 ? `${changed} column(s) widened` : ''].filter(Boolean).join(', ');
}

function tableWords(changes: string[]): string {
  if (changes.length === 0) return 'fits its layout';
  return changes[0]!.startsWith('CREATE') ? 'created' : changedTable(changes);
}

/** `applied 14, 15`, or `up to date`. */
const appliedWords = (applied: number[]): string => (applied.length ? `applied ${applied.join(', ')}` : 'up to date');

function migrateLine(r: MigrateResult): string {
  const applied = appliedWords(r.applied);
  const tables =
    r.tables.length <= 1
      ? `table ${r.table} ${tableWords(r.tableChanges)}`
      : r.tables.map((t) => `table ${t.table} (${t.partners.join(', ')}) ${tableWords(t.tableChanges)}`).join('; ');
  return `migrate done: finance schema ${r.financeSchema} at version ${r.financeVersion} (${applied}); ${tables}; ledger ${r.ledger} at version ${r.ledgerVersion} (${appliedWords(r.ledgerApplied)})`;
}

/** Migrates the finance schema and the ledger; returns the one-line report. */
export async function migrateAll(settings: Settings): Promise<string> {
  return migrateLine(await migrateEverything([settings]));
}
