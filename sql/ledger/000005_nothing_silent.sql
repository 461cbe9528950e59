-- Every run is kept with how it ended (finished, could not start, died) and why; its summary
-- counts also name ignored files, stale claims and failed moves.
ALTER TABLE runs ADD COLUMN status TEXT CHECK (status IN ('running', 'finished', 'not_started', 'died'));
ALTER TABLE runs ADD COLUMN reason TEXT;
ALTER TABLE runs ADD COLUMN ignored INTEGER;
ALTER TABLE runs ADD COLUMN stale INTEGER;
ALTER TABLE runs ADD COLUMN move_failed INTEGER;

-- A move out of the intake, recorded before it is made and removed with the record of its
-- landing: a crash in between is finished by the next run, which finds the file where it went.
-- The landed file's size:mtime, as the move left it: a later run finds an archived file that
-- changed after its move (an upload that stalled, then resumed into the archive).
ALTER TABLE moves ADD COLUMN landed TEXT;

CREATE TABLE move_intents (
  name         TEXT NOT NULL,
  sha256       TEXT NOT NULL,
  arrival      TEXT NOT NULL,
  destination  TEXT NOT NULL CHECK (destination IN ('archive', 'duplicates', 'rejected')),
  run_id       TEXT NOT NULL REFERENCES runs (run_id),
  at           TEXT NOT NULL,
  PRIMARY KEY (name, sha256, arrival)
);

-- A new event kind: `ignored` (a file in the intake that the pattern does not take). SQLite
-- cannot change a CHECK in place, so the append-only table is rebuilt with the same rows.
CREATE TABLE ledger_events_v5 (
  id       INTEGER PRIMARY KEY,
  run_id   TEXT REFERENCES runs (run_id),
  at       TEXT NOT NULL,
  event    TEXT NOT NULL CHECK (event IN (
             'arrived', 'claimed', 'loaded', 'skipped', 'held', 'rejected', 'failed',
             'released', 'expired', 'recovered', 'reprocessed', 'moved', 'not_ready', 'ignored')),
  name     TEXT NOT NULL,
  sha256   TEXT,
  details  TEXT NOT NULL DEFAULT '{}'
);
INSERT INTO ledger_events_v5 (id, run_id, at, event, name, sha256, details)
  SELECT id, run_id, at, event, name, sha256, details FROM ledger_events;
DROP TRIGGER ledger_events_no_update;
DROP TRIGGER ledger_events_no_delete;
DROP TABLE ledger_events;
ALTER TABLE ledger_events_v5 RENAME TO ledger_events;
CREATE INDEX ledger_events_by_run ON ledger_events (run_id);
CREATE INDEX ledger_events_by_sha256 ON ledger_events (sha256);
CREATE INDEX ledger_events_by_name ON ledger_events (name);
CREATE TRIGGER ledger_events_no_update BEFORE UPDATE ON ledger_events
BEGIN SELECT RAISE(ABORT, 'ledger_events is append-only'); END;
CREATE TRIGGER ledger_events_no_delete BEFORE DELETE ON ledger_events
BEGIN SELECT RAISE(ABORT, 'ledger_events is append-only'); END;
