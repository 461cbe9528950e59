import type pg from 'pg';
import type { Logger } from 'pino';
import type { Settings } from '../config/settings.js';
import { connectFinance } from '../load/connectFinance.js';
import { runNeeds, assertPrivileges } from '../load/financePrivileges.js';
import { assertFinanceCurrent, assertLayoutFitsTable } from '../load/migrateFinance.js';

/**
 * The finance database, ready for loading: reachable, migrated, and with the columns the
 * layout names. Checked before anything is downloaded or claimed. `stop` cancels a
 * statement that is stuck waiting when the run is asked to stop.
 */
export async function openFinanceForLoading(s: Settings, logger: Logger, stop?: AbortSignal): Promise<pg.Client> {
  const db = await connectFinance(s.databaseUrl, {
    timeoutSeconds: s.dbTimeoutSeconds,
    onLost: (err) => logger.error({ event: 'db-connection-error', reason: err.message }, 'finance database connection error'),
    stop,
  });
  try {
    await assertPrivileges(db, s.schema, runNeeds(s.layout.table));
    await assertFinanceCurrent(db, s.schema);
    await assertLayoutFitsTable(db, s.schema, s.layout);
    return db;
  } catch (err) {
    await db.end().catch(() => undefined);
    throw err;
  }
}
