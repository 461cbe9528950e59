import { localDay } from '../calendar/dueDays.js';
import type { LedgerQueries } from '../ledger/ledger.js';

/**
 * The first of a partner's days that can be owed (a day before it never is): the local day of its
 * first run, or today for a partner that has never run (`ran` false), whose owed days start with
 * its first run.
 */
export async function firstOwedDay(
  ledger: LedgerQueries,
  partner: string,
  timeZone: string,
  now: number,
): Promise<{ day: string; ran: boolean }> {
  const firstRun = await ledger.firstRunAt(partner);
  return { day: localDay(firstRun ? Date.parse(firstRun) : now, timeZone), ran: firstRun !== undefined };
}
