-- The same step as sql/ledger/000021_runs_open.sql: every partner's run looks at the runs without
-- an end (`openRuns`) by this partial index, which holds only them, instead of walking every run
-- of a year (about 30 ms of the server's time a partner's run at 365,000 runs; a few hundredths
-- of a millisecond with it, docs/SCALING.md "What breaks first"). Adds only.
CREATE INDEX IF NOT EXISTS runs_open ON runs (started_at) WHERE ended_at IS NULL;
