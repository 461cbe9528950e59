import type { Logger } from '../logEvents.js';
import type { Settings } from '../config/settings.js';
import { FinanceDb, type FinancePurpose } from '../finance/financeDb.js';

/**
 * The finance database, ready for its purpose (see FinanceDb.assertReady): checked before
 * anything is downloaded or claimed. `stop` cancels a statement that is stuck waiting when the
 * run is asked to stop.
 */
export async function openFinance(
  settings: Settings,
  purpose: FinancePurpose,
  logger: Logger | undefined,
  stop?: AbortSignal,
): Promise<FinanceDb> {
  const db = await FinanceDb.connect(settings.databaseUrl, settings.schema, settings.layout, {
    timeoutSeconds: settings.dbTimeoutSeconds,
    // an idle connection that breaks is logged where there is a log; otherwise the next query says so
    onLost: logger
      ? (err) => logger.error({ event: 'db-connection-error', reason: err.message }, 'finance database connection error')
      : () => undefined,
    stop,
  });
  try {
    await db.assertReady(purpose);
    return db;
  } catch (err) {
    await db.close();
    throw err;
  }
}
