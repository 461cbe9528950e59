import type { IgnoredEntry } from './ledger.js';
import { marks } from './sqlRows.js';
import type { SqlPort } from './sqlPort.js';

/** Names per statement: well under SQLite's and PostgreSQL's limits on parameters. */
const CHUNK = 500;

function chunks<T>(list: T[]): T[][] {
  const out: T[][] = [];
  for (let i = 0; i < list.length; i += CHUNK) out.push(list.slice(i, i + CHUNK));
  return out;
}

/**
 * The statements behind Ledger.recordIgnored, inside one of SqlLedger's transactions: the partner's
 * names new to the ledger or changed since their last record come back (they get an `ignored` event);
 * every one is marked as seen by `runId`, one UPDATE per chunk for those unchanged. Each keeps its
 * streak: the runs in a row that saw it, one more when `previousRun` (the partner's run before
 * this one) saw it too, else a new streak from now.
 */
export async function markIgnored(
  db: SqlPort,
  partner: string,
  runId: string,
  previousRun: string | null,
  entries: IgnoredEntry[],
): Promise<IgnoredEntry[]> {
  const streak = [runId, previousRun, runId, previousRun];
  const changed: IgnoredEntry[] = [];
  for (const part of chunks(entries)) {
    const rows = await db.all(`SELECT name, arrival, reason FROM ignored_names WHERE partner = ? AND name IN (${marks(part.length)})`, [
      partner,
      ...part.map((ignoredEntry) => ignoredEntry.name),
    ]);
    const known = new Map(rows.map((sqlRow) => [String(sqlRow.name), `${String(sqlRow.arrival)}\n${String(sqlRow.reason)}`]));
    const unchanged: string[] = [];
    for (const entry of part) {
      if (known.get(entry.name) === `${entry.arrival}\n${entry.reason}`) {
        unchanged.push(entry.name);
        continue;
      }
      changed.push(entry);
      await db.run(
        `INSERT INTO ignored_names (partner, name, arrival, reason, first_run, first_at, last_run, last_at, runs_in_a_row, streak_since)
         VALUES (?, ?, ?, ?, ?, ledger_now(), ?, ledger_now(), 1, ledger_now())
         ON CONFLICT (partner, name) DO UPDATE SET arrival = excluded.arrival, reason = excluded.reason, ${STREAK},
           last_run = excluded.last_run, last_at = excluded.last_at`,
        [partner, entry.name, entry.arrival, entry.reason, runId, runId, ...streak],
      );
    }
    if (unchanged.length > 0) {
      await db.run(
        `UPDATE ignored_names SET ${STREAK}, last_run = ?, last_at = ledger_now() WHERE partner = ? AND name IN (${marks(unchanged.length)})`,
        [...streak, runId, partner, ...unchanged],
      );
    }
  }
  return changed;
}

/** The streak's columns: this run again (a second listing) keeps it, the run before extends it, else it starts anew. Four `?`. */
const STREAK = `runs_in_a_row = CASE WHEN ignored_names.last_run = ? THEN ignored_names.runs_in_a_row
                                     WHEN ignored_names.last_run = ? THEN ignored_names.runs_in_a_row + 1 ELSE 1 END,
  streak_since = CASE WHEN ignored_names.last_run IN (?, ?) THEN ignored_names.streak_since ELSE ledger_now() END`;

/** The partner's run before `runId` that listed its intake (a run that could not start saw nothing). Three `?`. */
export const PREVIOUS_RUN_SQL = `SELECT run_id FROM runs WHERE partner = ? AND run_id <> ? AND (status IS NULL OR status <> 'not_started')
  AND started_at <= (SELECT started_at FROM runs WHERE run_id = ?) ORDER BY started_at DESC LIMIT 1`;

/** An ignored name's streak: the partner's runs in a row that saw it, and since when. */
export const IGNORED_STREAK_SQL = 'SELECT runs_in_a_row, streak_since FROM ignored_names WHERE partner = ? AND name = ?';

/** The ignored names `runId` was the last run to see, with why and when. */
export const IGNORED_SEEN_BY_SQL = 'SELECT name, reason, last_at FROM ignored_names WHERE last_run = ? ORDER BY name';

/** The ignored names some run saw at or after a time, with the last that did (and a partner filter after it). */
export const IGNORED_SINCE_SQL = 'SELECT name, reason, last_at, last_run, partner FROM ignored_names WHERE last_at >= ?';
