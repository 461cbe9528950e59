import { Option, type Command } from 'commander';
import { resolve } from 'node:path';
import { DEFAULTS, resolveSettings, siblingFolder, type RawFlags, type Settings } from '../config/settings.js';
import { UsageError } from '../errors.js';
import { LocalIntake } from '../intake/localIntake.js';
import { globToRegExp } from '../intake/names.js';
import { SqliteLedger } from '../ledger/sqliteLedger.js';
import type { RunMode } from '../ledger/types.js';
import { connectFinance } from '../load/connectFinance.js';
import { assertFinanceCurrent, assertLayoutFitsTable } from '../load/migrateFinance.js';
import { runIngest, type IngestResult } from '../pipeline/runIngest.js';
import { createLogger } from './logger.js';
import { withConfigOptions, withFolderOptions } from './options.js';
import { summaryJson, summaryLine } from './summaryOutput.js';
import { TerminalStatus } from './terminal.js';

export interface RunFlags extends RawFlags {
  json?: boolean;
  mode?: RunMode;
}

export function registerRun(program: Command, setExit: (status: number) => void): void {
  withConfigOptions(withFolderOptions(program.command('run')))
    .description('one ingest run: every ready file in the intake loaded, skipped, held or rejected')
    .option('--stable-for <seconds>', `a file is complete when unchanged this long; 0 turns the wait off (env SETTLE_STABLE_FOR; default ${DEFAULTS.stableFor})`)
    .option('--max-wait <seconds>', `how long a run waits for growing files (env SETTLE_MAX_WAIT; default ${DEFAULTS.maxWait})`)
    .option('--claim-lease <seconds>', `how long a claim holds before another host may take it over (env SETTLE_CLAIM_LEASE; default ${DEFAULTS.claimLease})`)
    .option('--staging <dir>', 'private folder for staging copies (env SETTLE_STAGING; default the system temp folder)')
    .addOption(
      new Option('--mode <mode>', 'recorded in the ledger (default: manual on a terminal, else scheduled)').choices(['scheduled', 'manual']),
    )
    .option('--json', 'print the summary as one JSON object with one entry per file')
    .action(async (flags: RunFlags) => {
      const result = await ingestOnce(resolveSettings(flags), flags);
      process.stdout.write(`${flags.json ? summaryJson(result) : summaryLine(result)}\n`);
      setExit(result.exitStatus);
    });
}

/** The whole `run` command short of printing: also what `demo` runs. */
export async function ingestOnce(s: Settings, flags: RunFlags): Promise<IngestResult> {
  if (!s.intake) throw new UsageError('no intake: set --intake or SETTLE_INTAKE');
  if (s.intake.startsWith('sftp://')) throw new UsageError('an sftp:// intake is not supported by this release yet');
  if (s.ledger.startsWith('postgres://') || s.ledger.startsWith('postgresql://')) {
    throw new UsageError('a PostgreSQL ledger is not supported by this release yet: use a SQLite file');
  }
  const status = new TerminalStatus();
  const logger = createLogger({ level: s.logLevel, file: s.logFile, status });
  const intakeDir = resolve(s.intake);
  const intake = await LocalIntake.open({
    intake: intakeDir,
    archive: resolve(s.archive ?? siblingFolder(intakeDir, 'archive')),
    duplicates: resolve(s.duplicates ?? siblingFolder(intakeDir, 'duplicates')),
    rejected: resolve(s.rejected ?? siblingFolder(intakeDir, 'rejected')),
  });
  const ledger = SqliteLedger.open(s.ledger, { create: false, busyTimeoutMs: s.ledgerTimeoutSeconds * 1000 });
  try {
    const db = await connectFinance(s.databaseUrl, (err) => logger.error({ event: 'db-connection-error', reason: err.message }, 'finance database connection error'));
    try {
      await assertFinanceCurrent(db, s.schema);
      await assertLayoutFitsTable(db, s.schema, s.layout.columns.map((c) => c.name));
      return await runIngest({
        intake,
        ledger,
        db,
        schema: s.schema,
        layout: s.layout,
        pattern: globToRegExp(s.pattern),
        stableForSeconds: s.stableForSeconds,
        maxWaitSeconds: s.maxWaitSeconds,
        claimLeaseSeconds: s.claimLeaseSeconds,
        mode: flags.mode ?? (process.stdin.isTTY ? 'manual' : 'scheduled'),
        stagingRoot: s.staging,
        logger,
        onProgress: (file, rows) => status.show(`${file}: ${rows.toLocaleString('en-US')} rows`),
      });
    } finally {
      status.clear();
      await db.end().catch(() => undefined);
    }
  } finally {
    ledger.close();
    await intake.close();
  }
}
