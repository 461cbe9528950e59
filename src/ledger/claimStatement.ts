import type { FileState } from './types.js';

/** States a new claim may take over: the earlier decision about this (name, content) was not final for the content. */
export const RECLAIMABLE: FileState[] = ['duplicate', 'held', 'rejected', 'failed'];

/**
 * The rows that hold a content's claim key: a claim, or a load with rows (a file loaded with 0
 * rows, a partner's "no activity" day, is never the original of a resend). The partial unique
 * index `processed_files_live_content` has the same condition.
 */
export const LIVE = (alias: string) =>
  `(${alias}.state = 'claimed' OR (${alias}.state = 'loaded' AND COALESCE(${alias}.row_count, -1) <> 0))`;

/**
 * The claim: ONE statement. It inserts the (name, content) as claimed, or takes over a
 * non-live row of the same (name, content). While the content is live (claimed or loaded)
 * under another name, the partial unique index on sha256 refuses the insert: the port
 * reports a unique violation, which is a lost claim. The NOT EXISTS keeps a re-claim from
 * even trying while a committed twin is live. SQLite and PostgreSQL run the same text.
 */
export const CLAIM_SQL = `
INSERT INTO processed_files (name, sha256, state, run_id, size, arrival, owner_host, owner_pid, owner_started_at,
                             lease_until, first_seen_at, updated_at, content_sha256)
VALUES (?, ?, 'claimed', ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
ON CONFLICT (name, sha256) DO UPDATE SET
  state = 'claimed', content_sha256 = excluded.content_sha256, run_id = excluded.run_id, size = excluded.size, arrival = excluded.arrival, owner_host = excluded.owner_host,
  owner_pid = excluded.owner_pid, owner_started_at = excluded.owner_started_at,
  lease_until = excluded.lease_until, location = NULL, reason = NULL, row_count = NULL,
  updated_at = excluded.updated_at
WHERE processed_files.state IN (${RECLAIMABLE.map((s) => `'${s}'`).join(', ')})
  AND NOT EXISTS (SELECT 1 FROM processed_files live
                  WHERE live.sha256 = excluded.sha256 AND ${LIVE('live')})
RETURNING id`;

/** Clears a claim's owner and lease as it becomes final. */
export const END_CLAIM = `owner_host = NULL, owner_pid = NULL, owner_started_at = NULL, lease_until = NULL`;
