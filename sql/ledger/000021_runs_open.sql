-- Every partner's run first looks at the runs without an end (sqlLedger.ts `openRuns`: a run of
-- a dead process is closed as `died` by the next one). Without an index that walked every run
-- ever recorded: about 30 ms of the ledger server's time a partner's run at a year's 365,000 runs
-- (1,000 partners a night), half a minute a night; with this partial index, which holds only the
-- runs without an end, a few hundredths of a millisecond (docs/SCALING.md, "What breaks first").
-- Adds only. (The same step as sql/ledger-pg/000021_runs_open.sql.)
CREATE INDEX IF NOT EXISTS runs_open ON runs (started_at) WHERE ended_at IS NULL;
