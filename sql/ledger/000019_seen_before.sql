-- Rows seen before (docs/DESIGN.md "Statements without ids"): a statement's rows that another file
-- had loaded already, proven identical to the loaded rows, are counted and not loaded again. Each
-- loaded file keeps how many (`seen_before`; `row_count` stays its new rows, as the finance
-- database's file marker counts them), and so does each run. NULL: no such row, or a row from
-- before they were kept. (The same step as sql/ledger-pg/000019_seen_before.sql.)
ALTER TABLE processed_files ADD COLUMN seen_before INTEGER;
ALTER TABLE runs ADD COLUMN seen_before INTEGER;

-- A file loaded with 0 new rows holds its content's claim key when its rows were seen before: it
-- is a statement, not a "no activity" day, so the same bytes under another name are a resend.
DROP INDEX processed_files_live_content;
CREATE UNIQUE INDEX processed_files_live_content
  ON processed_files (sha256)
  WHERE state = 'claimed' OR (state = 'loaded' AND (COALESCE(row_count, -1) <> 0 OR COALESCE(seen_before, 0) <> 0));

-- The claims a run's start reads (processed_files in state 'claimed', startOfRun.ts and status)
-- found without walking a year's files (docs/SCALING.md, "The ledger after a year": 3.4 s of
-- server time a run at 10,000,000 rows without it, under 8 ms with it).
CREATE INDEX IF NOT EXISTS processed_files_claimed ON processed_files (id) WHERE state = 'claimed';
