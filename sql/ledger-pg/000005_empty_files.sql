-- A file with a header and no rows (a partner's "no activity" day) is never a resend, even when
-- its bytes equal an earlier empty file's: once loaded with 0 rows, a content no longer holds
-- the claim key, so the next empty file under another name is claimed and loaded (0 rows) too.
-- The same step in both stores (sql/ledger/000006, sql/ledger-pg/000005).
DROP INDEX processed_files_live_content;
CREATE UNIQUE INDEX processed_files_live_content
  ON processed_files (sha256) WHERE state = 'claimed' OR (state = 'loaded' AND COALESCE(row_count, -1) <> 0);
