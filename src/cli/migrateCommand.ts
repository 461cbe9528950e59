import type { Command } from 'commander';
import { resolveSettings, type RawFlags, type Settings } from '../config/settings.js';
import { withResources } from './resources.js';
import { jsonDocument } from './jsonOutput.js';
import { withSettingOptions } from './options.js';

export interface MigrateResult {
  financeSchema: string;
  financeVersion: number;
  /** finance migrations applied by this call (none when it was up to date) */
  applied: number[];
  /** the layout's table, and what migrate did to it (created, columns added; none when it fit) */
  table: string;
  tableChanges: string[];
  ledger: string;
}

export function registerMigrate(program: Command): void {
  withSettingOptions(program.command('migrate'), 'migrate')
    .description('create or upgrade the ledger and the finance schema')
    .option('--json', 'one JSON object')
    .option(
      '--print-sql',
      "print the SQL migrate would run on the finance database (pending migrations, the layout's table) and change nothing",
    )
    .action(async (flags: RawFlags & { json?: boolean; printSql?: boolean }) => {
      const s = resolveSettings(flags);
      if (flags.printSql) {
        process.stdout.write(`${await printSql(s)}\n`);
        return;
      }
      const r = await migrateEverything(s);
      process.stdout.write(`${flags.json ? jsonDocument({ ...r }) : migrateLine(r)}\n`);
    });
}

function printSql(s: Settings): Promise<string> {
  return withResources(s, async (r) => (await r.finance('migrate')).migrationSql());
}

/** Migrates the finance schema, the layout's table and the ledger. */
async function migrateEverything(s: Settings): Promise<MigrateResult> {
  return withResources(s, async (r) => {
    const finance = await (await r.finance('migrate')).migrate();
    const ledger = await r.ledger({ create: true });
    return {
      financeSchema: s.schema,
      financeVersion: finance.current,
      applied: finance.applied,
      table: finance.table,
      tableChanges: finance.tableChanges,
      ledger: ledger.location,
    };
  });
}

/** `given 1 new column(s)`, `given 1 new column(s), 2 column(s) changed`. */
function changedTable(changes: string[]): string {
  const added = changes.filter((c) => c.includes(' ADD COLUMN ')).length;
  const changed = changes.length - added;
  return [added > 0 ? `given ${added} new column(s)` : '', changed > 0 ? `${changed} column(s) widened` : ''].filter(Boolean).join(', ');
}

function migrateLine(r: MigrateResult): string {
  const applied = r.applied.length ? `applied ${r.applied.join(', ')}` : 'up to date';
  const table =
    r.tableChanges.length === 0 ? 'fits its layout' : r.tableChanges[0]!.startsWith('CREATE') ? 'created' : changedTable(r.tableChanges);
  return `migrate done: finance schema ${r.financeSchema} at version ${r.financeVersion} (${applied}); table ${r.table} ${table}; ledger ${r.ledger} current`;
}

/** Migrates the finance schema and the ledger; returns the one-line report. */
export async function migrateAll(s: Settings): Promise<string> {
  return migrateLine(await migrateEverything(s));
}
