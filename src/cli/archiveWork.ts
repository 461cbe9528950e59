import type pg from 'pg';
import type { Logger } from 'pino';
import type { Settings } from '../config/settings.js';
import type { Intake } from '../intake/intake.js';
import { openArchive } from '../intake/openIntake.js';
import type { Ledger } from '../ledger/ledger.js';
import { connectFinance } from '../load/connectFinance.js';
import { readNeeds, assertPrivileges } from '../load/financePrivileges.js';
import { assertFinanceCurrent } from '../load/migrateFinance.js';
import { ledgerFromSettings } from './ledgerFromSettings.js';
import { createLogger } from './logger.js';
import { TerminalStatus } from './terminal.js';

export interface ArchiveWork {
  ledger: Ledger;
  db: pg.Client;
  /** null when a local archive folder does not exist yet */
  archive: Intake | null;
  logger: Logger;
}

/** `audit` and `adopt`: the ledger, the (current) finance database and the archive, closed after `fn`. */
export async function withArchiveWork<T>(s: Settings, fn: (w: ArchiveWork) => Promise<T>): Promise<T> {
  const logger = createLogger({ level: s.logLevel, file: s.logFile, status: new TerminalStatus() });
  const ledger = await ledgerFromSettings(s);
  let db: pg.Client | undefined;
  let archive: Intake | null = null;
  try {
    db = await connectFinance(s.databaseUrl, { timeoutSeconds: s.dbTimeoutSeconds, onLost: () => undefined });
    await assertPrivileges(db, s.schema, readNeeds(s.layout.table));
    await assertFinanceCurrent(db, s.schema);
    archive = await openArchive(s, logger);
    return await fn({ ledger, db, archive, logger });
  } finally {
    await archive?.close();
    await db?.end().catch(() => undefined);
    await ledger.close();
  }
}
