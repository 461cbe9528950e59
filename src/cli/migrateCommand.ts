import type { Command } from 'commander';
import { resolveSettings, type RawFlags, type Settings } from '../config/settings.js';
import { ledgerFromSettings } from './ledgerFromSettings.js';
import { connectFinance } from '../load/connectFinance.js';
import { migrateFinance } from '../load/migrateFinance.js';
import { withConfigOptions } from './options.js';

export function registerMigrate(program: Command): void {
  withConfigOptions(program.command('migrate'))
    .description('create or upgrade the ledger and the finance schema')
    .action(async (flags: RawFlags) => {
      process.stdout.write(`${await migrateAll(resolveSettings(flags))}\n`);
    });
}

/** Migrates the finance schema and the ledger; returns the one-line report. */
export async function migrateAll(s: Settings): Promise<string> {
  const db = await connectFinance(s.databaseUrl, { timeoutSeconds: s.dbTimeoutSeconds, onLost: () => undefined });
  let finance;
  try {
    finance = await migrateFinance(db, s.schema);
  } finally {
    await db.end();
  }
  const ledger = await ledgerFromSettings(s, { create: true });
  await ledger.close();
  const applied = finance.applied.length ? `applied ${finance.applied.join(', ')}` : 'up to date';
  return `migrate done: finance schema ${s.schema} at version ${finance.current} (${applied}); ledger ${ledger.location} current`;
}
