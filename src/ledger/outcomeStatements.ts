/**
 * The rows a held file and a skipped duplicate leave, one statement each for both ledger
 * stores. Neither ever overwrites a live row (claimed, or loaded): that row is another run's.
 */

/** The (name, bytes) is held: created, or an earlier non-live row of it updated. */
export const HELD_SQL = `
INSERT INTO processed_files (name, sha256, state, run_id, size, first_seen_at, updated_at, content_sha256)
VALUES (?, ?, 'held', ?, ?, ?, ?, ?)
ON CONFLICT (name, sha256) DO UPDATE SET state = 'held', run_id = excluded.run_id,
  reason = NULL, location = NULL, updated_at = excluded.updated_at, content_sha256 = excluded.content_sha256
WHERE processed_files.state NOT IN ('claimed', 'loaded')`;

/** The (name, bytes) is a duplicate, moved to `location`. */
export const DUPLICATE_SQL = `
INSERT INTO processed_files (name, sha256, state, run_id, size, arrival, location, first_seen_at, updated_at, content_sha256)
VALUES (?, ?, 'duplicate', ?, ?, ?, ?, ?, ?, ?)
ON CONFLICT (name, sha256) DO UPDATE SET state = 'duplicate', run_id = excluded.run_id, reason = NULL,
  arrival = excluded.arrival, location = excluded.location, updated_at = excluded.updated_at
WHERE processed_files.state NOT IN ('claimed', 'loaded')`;
