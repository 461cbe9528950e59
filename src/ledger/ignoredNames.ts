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
 * every one is marked as seen by `runId`, one UPDATE per chunk for those unchanged.
 */
export async function markIgnored(
  db: SqlPort,
  partner: string,
  runId: string,
  entries: IgnoredEntry[],
  at: string,
): Promise<IgnoredEntry[]> {
  const changed: IgnoredEntry[] = [];
  for (const part of chunks(entries)) {
    const rows = await db.all(`SELECT name, arrival, reason FROM ignored_names WHERE partner = ? AND name IN (${marks(part.length)})`, [
      partner,
      ...part.map((e) => e.name),
    ]);
    const known = new Map(rows.map((r) => [String(r.name), `${String(r.arrival)}\n${String(r.reason)}`]));
    const unchanged: string[] = [];
    for (const e of part) {
      if (known.get(e.name) === `${e.arrival}\n${e.reason}`) {
        unchanged.push(e.name);
        continue;
      }
      changed.push(e);
      await db.run(
        `INSERT INTO ignored_names (partner, name, arrival, reason, first_run, first_at, last_run, last_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)
         ON CONFLICT (partner, name) DO UPDATE SET arrival = excluded.arrival, reason = excluded.reason, last_run = excluded.last_run, last_at = excluded.last_at`,
        [partner, e.name, e.arrival, e.reason, runId, at, runId, at],
      );
    }
    if (unchanged.length > 0) {
      await db.run(`UPDATE ignored_names SET last_run = ?, last_at = ? WHERE partner = ? AND name IN (${marks(unchanged.length)})`, [
        runId,
        at,
        partner,
        ...unchanged,
      ]);
    }
  }
  return changed;
}

/** The ignored names `runId` was the last run to see, with why and when. */
export const IGNORED_SEEN_BY_SQL = 'SELECT name, reason, last_at FROM ignored_names WHERE last_run = ? ORDER BY name';

/** The ignored names some run saw at or after a time, with the last that did (and a partner filter after it). */
export const IGNORED_SINCE_SQL = 'SELECT name, reason, last_at, last_run, partner FROM ignored_names WHERE last_at >= ?';
