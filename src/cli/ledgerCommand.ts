import type { Command } from 'commander';
import { OPTION_TABLE } from '../config/optionTable.js';
import { UsageError } from '../errors.js';
import { copyLedger, type LedgerCopy } from '../ledger/copyLedger.js';
import { isPostgresUrl } from '../ledger/openLedger.js';
import { backupSqliteLedger } from '../ledger/sqliteLedger.js';
import { jsonDocument } from './jsonOutput.js';
import { withCommandFlags } from './options.js';

interface CopyFlags {
  from?: string;
  to?: string;
  json?: boolean;
}

/** `ledger copy done: FROM to TO, verified: runs 12, …; events digest HEX`. */
function copyLine(copy: LedgerCopy): string {
  const tables = copy.tables.map((t) => `${t.table} ${t.rows}`).join(', ');
  const events = copy.tables.find((t) => t.table === 'ledger_events');
  return `ledger copy done: ${copy.from} to ${copy.to} (schema settle_ledger), verified: ${tables}${events ? `; events digest ${events.digest}` : ''}`;
}

export function registerLedger(program: Command): void {
  const ledger = program
    .command('ledger')
    .description("the ledger itself: back up a SQLite ledger, move a SQLite ledger's history to PostgreSQL");
  withCommandFlags(ledger.command('backup'))
    .description(
      "a consistent copy of a SQLite ledger, also while runs write it (SQLite's online backup), into a new file (mode 0600), checked whole; a PostgreSQL ledger is backed up with pg_dump",
    )
    .action(async (flags: CopyFlags) => {
      if (flags.from === undefined || flags.to === undefined) {
        throw new UsageError('ledger backup needs --from SQLITE_FILE and --to FILE: the ledger, and the new file for its copy');
      }
      if (isPostgresUrl(flags.from)) {
        throw new UsageError(
          `a PostgreSQL ledger is backed up with pg_dump: pg_dump --schema=settle_ledger --format=custom --file=FILE URL`,
        );
      }
      const backup = await backupSqliteLedger(flags.from, flags.to, OPTION_TABLE.ledgerTimeout.default * 1000);
      process.stdout.write(
        `${flags.json ? jsonDocument({ ...backup }) : `ledger backup done: ${backup.from} (version ${backup.version}) to ${backup.to}, ${backup.bytes} bytes, checked whole`}\n`,
      );
    });
  withCommandFlags(ledger.command('copy'))
    .description(
      "copy a SQLite ledger's whole history (runs, files and claims, events, moves, ignored names, leases) into a new, empty PostgreSQL ledger, and verify it (every table's rows and digest read back)",
    )
    .action(async (flags: CopyFlags) => {
      if (flags.from === undefined || flags.to === undefined) {
        throw new UsageError('ledger copy needs --from SQLITE_FILE and --to postgres://…: the ledger to copy, and the new one');
      }
      if (isPostgresUrl(flags.from)) throw new UsageError(`--from is the SQLite ledger's file (${flags.from} is a PostgreSQL URL)`);
      if (!isPostgresUrl(flags.to)) throw new UsageError(`--to is the PostgreSQL ledger's postgres:// URL (${flags.to} is not one)`);
      const copy = await copyLedger(flags.from, flags.to, OPTION_TABLE.ledgerTimeout.default * 1000);
      process.stdout.write(`${flags.json ? jsonDocument({ ...copy }) : copyLine(copy)}\n`);
    });
}
