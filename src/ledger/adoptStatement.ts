import { LIVE } from './claimStatement.js';

/**
 * The live rows holding a decoded content under any delivered bytes: a plain copy (its bytes
 * are the content, also on rows from before content hashes were kept) or a gzipped, zipped or
 * encrypted delivery of it. Two `?`, both the content's hash.
 */
export const HOLDS_LIVE_CONTENT = (alias: string) => `(${alias}.sha256 = ? OR ${alias}.content_sha256 = ?) AND ${LIVE(alias)}`;

/**
 * `adopt`'s ONE statement. Its delivered bytes already live is refused by the partial unique
 * index, as a claim is; its content live under other bytes (a run loading a re-compressed
 * copy meanwhile) by the NOT EXISTS, since the claim key alone cannot see that. SQLite and
 * PostgreSQL run the same text (the SELECT's WHERE also keeps SQLite's upsert unambiguous).
 */
export const ADOPT_SQL = `
INSERT INTO processed_files (name, sha256, content_sha256, state, run_id, size, row_count, location, first_seen_at, updated_at)
SELECT ?, ?, ?, 'loaded', ?, ?, ?, ?, ?, ?
WHERE NOT EXISTS (SELECT 1 FROM processed_files live WHERE ${HOLDS_LIVE_CONTENT('live')})
ON CONFLICT DO NOTHING`;
