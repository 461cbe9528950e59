import type { Destination } from '../destination.js';
import type { MovedFile } from './ledger.js';
import type { SqlPort } from './sqlPort.js';

/** The statements of the ledger's record of moves, used inside SqlLedger's transactions. */

/** The once-only record of a landing: false when another run already recorded this very move. */
export async function insertMove(db: SqlPort, movedFile: MovedFile, location: string, partner: string): Promise<boolean> {
  const inserted = await db.run(
    'INSERT INTO moves (location, name, sha256, arrival, run_id, at, landed, partner) VALUES (?, ?, ?, ?, ?, ledger_now(), ?, ?) ON CONFLICT DO NOTHING',
    [location, movedFile.name, movedFile.sha256, movedFile.arrival, movedFile.runId, movedFile.landed ?? null, partner],
  );
  return inserted === 1;
}

/** The landing is recorded (by this run or another): the intent is done. */
export function dropIntent(db: SqlPort, movedFile: MovedFile): Promise<number> {
  return db.run('DELETE FROM move_intents WHERE name = ? AND sha256 = ? AND arrival = ?', [
    movedFile.name,
    movedFile.sha256,
    movedFile.arrival,
  ]);
}

/** Recorded before a decided file leaves the intake (the latest mover's); the record of its landing removes it. */
export function insertIntent(db: SqlPort, movedFile: MovedFile, destination: Destination, partner: string): Promise<number> {
  return db.run(
    `INSERT INTO move_intents (name, sha256, arrival, destination, run_id, at, partner) VALUES (?, ?, ?, ?, ?, ledger_now(), ?)
  ON CONFLICT (name, sha256, arrival) DO UPDATE SET destination = excluded.destination, run_id = excluded.run_id, at = excluded.at,
    partner = excluded.partner`,
    [movedFile.name, movedFile.sha256, movedFile.arrival, destination, movedFile.runId, partner],
  );
}

/** One partner's moves begun and not recorded, with whether the run that began each has ended, and where it ran. */
export const MOVE_INTENTS_SQL = `SELECT i.name, i.sha256, i.arrival, i.destination, i.run_id, i.at, r.ended_at, r.host, r.pid
  FROM move_intents i JOIN runs r ON r.run_id = i.run_id WHERE i.partner = ? ORDER BY i.at`;

/** A move of this very upload (name and size:mtime) by a run of the partner other than the asking one: begun (an intent) or recorded. */
export const MOVE_OF_ARRIVAL_SQL = `SELECT run_id, NULL AS location FROM move_intents WHERE name = ? AND arrival = ? AND partner = ? AND run_id <> ?
  UNION ALL SELECT run_id, location FROM moves WHERE name = ? AND arrival = ? AND partner = ? AND run_id <> ? LIMIT 1`;
