-- An owed day the partner confirms will never come is waived (`settle-ingest waive`), and taken
-- back with `--undo`: two new event kinds, `waived` and `unwaived`, append-only like every other,
-- named by the day and carrying the reason and the operator. SQLite cannot change a CHECK in
-- place, so the append-only table is rebuilt with the same rows (as in 000005). And each run
-- keeps, beside its loads' exit status, the exit status its process exited with: what the
-- scheduler saw (1 for an overdue day past errorAfter). (The same step as
-- sql/ledger-pg/000013_waivers.sql.)
CREATE TABLE ledger_events_v13 (
  id       INTEGER PRIMARY KEY,
  run_id   TEXT REFERENCES runs (run_id),
  at       TEXT NOT NULL,
  event    TEXT NOT NULL CHECK (event IN (
             'arrived', 'claimed', 'loaded', 'skipped', 'held', 'rejected', 'failed',
             'released', 'expired', 'recovered', 'reprocessed', 'moved', 'not_ready', 'ignored',
             'waived', 'unwaived')),
  name     TEXT NOT NULL,
  sha256   TEXT,
  details  TEXT NOT NULL DEFAULT '{}',
  partner  TEXT NOT NULL DEFAULT 'default'
);
INSERT INTO ledger_events_v13 (id, run_id, at, event, name, sha256, details, partner)
  SELECT id, run_id, at, event, name, sha256, details, partner FROM ledger_events;
DROP TRIGGER ledger_events_no_update;
DROP TRIGGER ledger_events_no_delete;
DROP TABLE ledger_events;
ALTER TABLE ledger_events_v13 RENAME TO ledger_events;
CREATE INDEX ledger_events_by_run ON ledger_events (run_id);
CREATE INDEX ledger_events_by_sha256 ON ledger_events (sha256);
CREATE INDEX ledger_events_by_name ON ledger_events (name);
CREATE INDEX ledger_events_by_partner ON ledger_events (partner, event, at);
CREATE TRIGGER ledger_events_no_update BEFORE UPDATE ON ledger_events
BEGIN SELECT RAISE(ABORT, 'ledger_events is append-only'); END;
CREATE TRIGGER ledger_events_no_delete BEFORE DELETE ON ledger_events
BEGIN SELECT RAISE(ABORT, 'ledger_events is append-only'); END;

-- NULL on runs from before it was kept
ALTER TABLE runs ADD COLUMN process_exit_status INTEGER;
