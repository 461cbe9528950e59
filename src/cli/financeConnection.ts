import type pg from 'pg';
import type { Logger } from 'pino';
import type { Settings } from '../config/settings.js';
import { connectFinance } from '../load/connectFinance.js';
import { readNeeds, runNeeds, assertPrivileges } from '../load/financePrivileges.js';
import { assertFinanceCurrent, assertLayoutFitsTable } from '../load/migrateFinance.js';

/**
 * What a command does with the finance database: `load` (run, reprocess) and `read` (audit,
 * adopt) need it migrated and their privileges; `migrate` checks its own privileges and brings
 * the schema up to date.
 */
export type FinancePurpose = 'load' | 'read' | 'migrate';

/**
 * The finance database, ready for its purpose: for loading, also with the columns the layout
 * names. Checked before anything is downloaded or claimed. `stop` cancels a statement that is
 * stuck waiting when the run is asked to stop.
 */
export async function openFinance(
  s: Settings,
  purpose: FinancePurpose,
  logger: Logger | undefined,
  stop?: AbortSignal,
): Promise<pg.Client> {
  const db = await connectFinance(s.databaseUrl, {
    timeoutSeconds: s.dbTimeoutSeconds,
    // an idle connection that breaks is logged where there is a log; otherwise the next query says so
    onLost: logger
      ? (err) => logger.error({ event: 'db-connection-error', reason: err.message }, 'finance database connection error')
      : () => undefined,
    stop,
  });
  try {
    if (purpose === 'migrate') return db;
    await assertPrivileges(db, s.schema, purpose === 'load' ? runNeeds(s.layout.table) : readNeeds(s.layout.table));
    await assertFinanceCurrent(db, s.schema);
    if (purpose === 'load') await assertLayoutFitsTable(db, s.schema, s.layout);
    return db;
  } catch (err) {
    await db.end().catch(() => undefined);
    throw err;
  }
}
