import type { FileState } from './types.js';

/**
 * The statements that decide a row of processed_files, each ONE statement that SQLite and
 * PostgreSQL run as the same text: the claim (and the condition that makes a content live),
 * adopt's record, a held file's and a skipped duplicate's row. The reads and the finalizing
 * updates are in sqlLedger.ts.
 */

/** States a new claim may take over: the earlier decision about this (name, content) was not final for the content. */
export const RECLAIMABLE: FileState[] = ['duplicate', 'held', 'rejected', 'failed'];

/**
 * The rows that hold a content's claim key: a claim, or a load with rows, new or seen before (a
 * file loaded with 0 rows, a partner's "no activity" day, is never the original of a resend). The
 * partial unique index `processed_files_live_content` has the same condition.
 */
export const LIVE = (alias: string) =>
  `(${alias}.state = 'claimed' OR (${alias}.state = 'loaded' AND (COALESCE(${alias}.row_count, -1) <> 0 OR COALESCE(${alias}.seen_before, 0) <> 0)))`;

/**
 * The claim: ONE statement. It inserts the (name, content) as claimed, or takes over a
 * non-live row of the same (name, content). While the content is live (claimed or loaded)
 * under another name, the partial unique index on sha256 refuses the insert: the port
 * reports a unique violation, which is a lost claim. The NOT EXISTS keeps a re-claim from
 * even trying while a committed twin is live. SQLite and PostgreSQL run the same text.
 */
export const CLAIM_SQL = `
INSERT INTO processed_files (name, sha256, state, run_id, size, arrival, owner_host, owner_pid, owner_started_at,
                             lease_until, first_seen_at, updated_at, content_sha256, partner)
VALUES (?, ?, 'claimed', ?, ?, ?, ?, ?, ?, ledger_after(?), ledger_now(), ledger_now(), ?, ?)
ON CONFLICT (name, sha256) DO UPDATE SET
  state = 'claimed', partner = excluded.partner, content_sha256 = excluded.content_sha256, run_id = excluded.run_id, size = excluded.size, arrival = excluded.arrival, owner_host = excluded.owner_host,
  owner_pid = excluded.owner_pid, owner_started_at = excluded.owner_started_at,
  lease_until = excluded.lease_until, location = NULL, reason = NULL, row_count = NULL, seen_before = NULL, totals = NULL,
  updated_at = excluded.updated_at
WHERE processed_files.state IN (${RECLAIMABLE.map((s) => `'${s}'`).join(', ')})
  AND NOT EXISTS (SELECT 1 FROM processed_files live
                  WHERE live.sha256 = excluded.sha256 AND ${LIVE('live')})
RETURNING id, lease_until`;

/** Clears a claim's owner and lease as it becomes final. */
export const END_CLAIM = `owner_host = NULL, owner_pid = NULL, owner_started_at = NULL, lease_until = NULL`;

/**
 * The live rows holding a decoded content under any delivered bytes: a plain copy (its bytes
 * are the content, also on rows from before content hashes were kept) or a gzipped, zipped or
 * encrypted delivery of it. Two `?`, both the content's hash. Each side of the OR carries the
 * live condition itself, so that SQLite searches each by its index (the partial one on sha256,
 * processed_files_by_content); `(a OR b) AND live` scanned the whole table, once per file.
 */
export const HOLDS_LIVE_CONTENT = (alias: string) =>
  `((${alias}.sha256 = ? AND ${LIVE(alias)}) OR (${alias}.content_sha256 = ? AND ${LIVE(alias)}))`;

/**
 * `adopt`'s ONE statement. Its delivered bytes already live is refused by the partial unique
 * index, as a claim is; its content live under other bytes (a run loading a re-compressed
 * copy meanwhile) by the NOT EXISTS, since the claim key alone cannot see that. SQLite and
 * PostgreSQL run the same text (the SELECT's WHERE also keeps SQLite's upsert unambiguous).
 */
export const ADOPT_SQL = `
INSERT INTO processed_files (name, sha256, content_sha256, state, run_id, size, row_count, location, first_seen_at, updated_at, partner)
SELECT ?, ?, ?, 'loaded', ?, ?, ?, ?, ledger_now(), ledger_now(), ?
WHERE NOT EXISTS (SELECT 1 FROM processed_files live WHERE ${HOLDS_LIVE_CONTENT('live')})
ON CONFLICT DO NOTHING`;

// The rows a held file and a skipped duplicate leave. Neither ever overwrites a live row
// (claimed, or loaded): that row is another run's.

/** The (name, bytes) is held: created, or an earlier non-live row of it updated. */
export const HELD_SQL = `
INSERT INTO processed_files (name, sha256, state, run_id, size, first_seen_at, updated_at, content_sha256, partner)
VALUES (?, ?, 'held', ?, ?, ledger_now(), ledger_now(), ?, ?)
ON CONFLICT (name, sha256) DO UPDATE SET state = 'held', partner = excluded.partner, run_id = excluded.run_id,
  reason = NULL, location = NULL, updated_at = excluded.updated_at, content_sha256 = excluded.content_sha256
WHERE processed_files.state NOT IN ('claimed', 'loaded')`;

/** The (name, bytes) is a duplicate, moved to `location`. */
export const DUPLICATE_SQL = `
INSERT INTO processed_files (name, sha256, state, run_id, size, arrival, location, first_seen_at, updated_at, content_sha256, partner)
VALUES (?, ?, 'duplicate', ?, ?, ?, ?, ledger_now(), ledger_now(), ?, ?)
ON CONFLICT (name, sha256) DO UPDATE SET state = 'duplicate', partner = excluded.partner, run_id = excluded.run_id, reason = NULL,
  arrival = excluded.arrival, location = excluded.location, updated_at = excluded.updated_at
WHERE processed_files.state NOT IN ('claimed', 'loaded')`;

/**
 * The (name, bytes) is a duplicate whose move to duplicates/ failed: its row without a location,
 * for the next run to finish the move (claimFile). Once per upload: a row already recorded so
 * for this very arrival (another run's, at the same moment) is left as it is, and the skip is that run's.
 */
export const UNMOVED_DUPLICATE_SQL = `
INSERT INTO processed_files (name, sha256, state, run_id, size, arrival, location, first_seen_at, updated_at, content_sha256, partner)
VALUES (?, ?, 'duplicate', ?, ?, ?, NULL, ledger_now(), ledger_now(), ?, ?)
ON CONFLICT (name, sha256) DO UPDATE SET state = 'duplicate', partner = excluded.partner, run_id = excluded.run_id, reason = NULL,
  arrival = excluded.arrival, location = NULL, updated_at = excluded.updated_at
WHERE processed_files.state NOT IN ('claimed', 'loaded')
  AND NOT (processed_files.state = 'duplicate' AND processed_files.location IS NULL
           AND COALESCE(processed_files.arrival, '') = excluded.arrival)`;
