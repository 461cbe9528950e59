import type { Command } from 'commander';
import { resolveSettings, type RawFlags, type Settings } from '../config/settings.js';
import { withResources } from './resources.js';
import { migrateFinance } from '../load/migrateFinance.js';
import { assertMigratePrivileges } from '../load/financePrivileges.js';
import { jsonDocument } from './jsonOutput.js';
import { withSettingOptions } from './options.js';

export interface MigrateResult {
  financeSchema: string;
  financeVersion: number;
  /** finance migrations applied by this call (none when it was up to date) */
  applied: number[];
  ledger: string;
}

export function registerMigrate(program: Command): void {
  withSettingOptions(program.command('migrate'), 'migrate')
    .description('create or upgrade the ledger and the finance schema')
    .option('--json', 'one JSON object')
    .action(async (flags: RawFlags & { json?: boolean }) => {
      const r = await migrateEverything(resolveSettings(flags));
      process.stdout.write(`${flags.json ? jsonDocument({ ...r }) : migrateLine(r)}\n`);
    });
}

/** Migrates the finance schema and the ledger. */
async function migrateEverything(s: Settings): Promise<MigrateResult> {
  return withResources(s, async (r) => {
    const db = await r.finance('migrate');
    await assertMigratePrivileges(db, s.schema);
    const finance = await migrateFinance(db, s.schema);
    const ledger = await r.ledger({ create: true });
    return { financeSchema: s.schema, financeVersion: finance.current, applied: finance.applied, ledger: ledger.location };
  });
}

function migrateLine(r: MigrateResult): string {
  const applied = r.applied.length ? `applied ${r.applied.join(', ')}` : 'up to date';
  return `migrate done: finance schema ${r.financeSchema} at version ${r.financeVersion} (${applied}); ledger ${r.ledger} current`;
}

/** Migrates the finance schema and the ledger; returns the one-line report. */
export async function migrateAll(s: Settings): Promise<string> {
  return migrateLine(await migrateEverything(s));
}
