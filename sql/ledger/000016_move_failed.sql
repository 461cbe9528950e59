-- A decided file whose move out of the intake failed (a login that cannot make duplicates/ on a
-- chrooted server, a folder without write rights) is no longer silent: the event kind
-- `move_failed`, appended by the run whose move failed, naming where it was going and why, and
-- the run that decided the outcome. SQLite cannot change a CHECK in place, so the append-only
-- table is rebuilt with the same rows (as in 000013). (The same step as
-- sql/ledger-pg/000016_move_failed.sql.)
CREATE TABLE ledger_events_v16 (
  id       INTEGER PRIMARY KEY,
  run_id   TEXT REFERENCES runs (run_id),
  at       TEXT NOT NULL,
  event    TEXT NOT NULL CHECK (event IN (
             'arrived', 'claimed', 'loaded', 'skipped', 'held', 'rejected', 'failed',
             'released', 'expired', 'recovered', 'reprocessed', 'moved', 'not_ready', 'ignored',
             'waived', 'unwaived', 'move_failed')),
  name     TEXT NOT NULL,
  sha256   TEXT,
  details  TEXT NOT NULL DEFAULT '{}',
  partner  TEXT NOT NULL DEFAULT 'default'
);
INSERT INTO ledger_events_v16 (id, run_id, at, event, name, sha256, details, partner)
  SELECT id, run_id, at, event, name, sha256, details, partner FROM ledger_events;
DROP TRIGGER ledger_events_no_update;
DROP TRIGGER ledger_events_no_delete;
DROP TABLE ledger_events;
ALTER TABLE ledger_events_v16 RENAME TO ledger_events;
CREATE INDEX ledger_events_by_run ON ledger_events (run_id);
CREATE INDEX ledger_events_by_sha256 ON ledger_events (sha256);
CREATE INDEX ledger_events_by_name ON ledger_events (name);
CREATE INDEX ledger_events_by_partner ON ledger_events (partner, event, at);
CREATE TRIGGER ledger_events_no_update BEFORE UPDATE ON ledger_events
BEGIN SELECT RAISE(ABORT, 'ledger_events is append-only'); END;
CREATE TRIGGER ledger_events_no_delete BEFORE DELETE ON ledger_events
BEGIN SELECT RAISE(ABORT, 'ledger_events is append-only'); END;
