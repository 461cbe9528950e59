import type { Logger } from '../logEvents.js';
import type { Settings } from '../config/settings.js';
import type { FolderReader, Intake } from '../intake/intake.js';
import { openArchive, openIntake } from '../intake/openIntake.js';
import type { MigrationResult } from '../db/migrator.js';
import type { Ledger } from '../ledger/ledger.js';
import { openLedger } from '../ledger/openLedger.js';
import type { FinanceDb, FinancePurpose } from '../finance/financeDb.js';
import { openFinance } from './financeConnection.js';
import { createLogger } from './logger.js';
import { TerminalStatus } from './terminal.js';

/** What a command may open; each is opened on first call, in the order the command asks. */
export interface CommandResources {
  /** the progress line on a terminal, cleared when the command ends */
  readonly status: TerminalStatus;
  /** the logger: created on first use, so a command that logs nothing never opens the log file */
  logger(): Logger;
  /** the configured ledger, as the settings' partner's view: created or upgraded for `migrate`, required current otherwise */
  /** `readOnly`: the reports and `status`, for a monitoring user who may read the ledger and nothing more */
  /** `stop`: a stop request, which cuts a wait on a PostgreSQL ledger short (statementWatch.ts); `migrated`: for `migrate`, what the create or upgrade applied */
  ledger(opts?: { create: boolean; readOnly?: boolean; stop?: AbortSignal; migrated?: (result: MigrationResult) => void }): Promise<Ledger>;
  finance(purpose: FinancePurpose, stop?: AbortSignal): Promise<FinanceDb>;
  /** `stop`: a stop request, which gives up an SFTP request stuck then */
  intake(stop?: AbortSignal): Promise<Intake>;
  /** null when a local archive folder does not exist yet */
  archive(): Promise<FolderReader | null>;
}

/**
 * Runs `task` with the resources it opens, then closes them in reverse order of opening, even
 * when `task` throws; a failure to close is thrown only when `task` itself succeeded.
 */
export async function withResources<T>(
  settings: Settings,
  task: (r: CommandResources) => Promise<T>,
  /** `logger`: the one to use instead of the configured log (`doctor`, which writes nothing) */
  opts: { logger?: Logger } = {},
): Promise<T> {
  const closers: (() => Promise<void>)[] = [];
  const opened = async <R>(resource: Promise<R>, close: (r: R) => Promise<void>): Promise<R> => {
    const awaited = await resource;
    closers.unshift(() => close(awaited));
    return awaited;
  };
  const status = new TerminalStatus();
  let logger: Logger | undefined = opts.logger;
  const commandResources: CommandResources = {
    status,
    logger: () => (logger ??= createLogger({ level: settings.logLevel, file: settings.logFile, status, partner: settings.partner })),
    ledger: async (opts = { create: false }) =>
      (
        await opened(
          openLedger(settings.ledger, {
            create: opts.create,
            readOnly: opts.readOnly === true,
            timeoutMs: settings.ledgerTimeoutSeconds * 1000,
            stop: opts.stop,
            ...(opts.migrated ? { migrated: opts.migrated } : {}),
          }),
          (l) => l.close(),
        )
      ).forPartner(settings.partner),
    // only a run logs a connection that breaks while idle; the others learn it from their next query
    finance: (purpose, stop) =>
      opened(openFinance(settings, purpose, purpose === 'load' ? commandResources.logger() : undefined, stop), (db) => db.close()),
    intake: (stop) => opened(openIntake(settings, commandResources.logger(), stop), (i) => i.close()),
    archive: () => opened(openArchive(settings, commandResources.logger()), async (folderReader) => folderReader?.close()),
  };
  const closeAll = async () => {
    status.clear();
    let failure: { err: unknown } | undefined;
    for (const close of closers) {
      try {
        await close();
      } catch (err) {
        failure ??= { err };
      }
    }
    if (failure) throw failure.err;
  };
  let result: T;
  try {
    result = await task(commandResources);
  } catch (err) {
    await closeAll().catch(() => undefined);
    throw err;
  }
  await closeAll();
  return result;
}
