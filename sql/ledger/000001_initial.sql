-- The ledger: what was seen, who claimed it, how it ended. SQLite.

CREATE TABLE runs (
  run_id      TEXT PRIMARY KEY,
  mode        TEXT NOT NULL CHECK (mode IN ('scheduled', 'manual', 'reprocess')),
  host        TEXT NOT NULL,
  pid         INTEGER NOT NULL,
  started_at  TEXT NOT NULL,
  ended_at    TEXT,
  loaded      INTEGER,
  skipped     INTEGER,
  held        INTEGER,
  rejected    INTEGER,
  failed      INTEGER,
  not_ready   INTEGER,
  row_count   INTEGER,
  exit_status INTEGER
);

-- One row per distinct (name, content). `state` is the latest decision about it.
CREATE TABLE processed_files (
  id                INTEGER PRIMARY KEY,
  name              TEXT NOT NULL,
  sha256            TEXT NOT NULL CHECK (length(sha256) = 64),
  state             TEXT NOT NULL
                    CHECK (state IN ('claimed', 'loaded', 'duplicate', 'held', 'rejected', 'failed')),
  run_id            TEXT NOT NULL REFERENCES runs (run_id),
  size              INTEGER NOT NULL,
  row_count         INTEGER,
  reason            TEXT,
  -- the claim's owner and lease; set while state = 'claimed'
  owner_host        TEXT,
  owner_pid         INTEGER,
  owner_started_at  TEXT,
  lease_until       TEXT,
  -- where the file ended up (folder/name) once moved; NULL while it is still in intake
  location          TEXT,
  first_seen_at     TEXT NOT NULL,
  updated_at        TEXT NOT NULL,
  UNIQUE (name, sha256)
);

-- The content is the claim key: while one name of some content is claimed or loaded,
-- no other name of the same bytes can be.
CREATE UNIQUE INDEX processed_files_live_content
  ON processed_files (sha256) WHERE state IN ('claimed', 'loaded');

CREATE TABLE ledger_events (
  id       INTEGER PRIMARY KEY,
  run_id   TEXT REFERENCES runs (run_id),
  at       TEXT NOT NULL,
  event    TEXT NOT NULL CHECK (event IN (
             'arrived', 'claimed', 'loaded', 'skipped', 'held', 'rejected', 'failed',
             'released', 'expired', 'recovered', 'reprocessed', 'moved', 'not_ready')),
  name     TEXT NOT NULL,
  sha256   TEXT,
  details  TEXT NOT NULL DEFAULT '{}'
);
CREATE INDEX ledger_events_by_run ON ledger_events (run_id);
CREATE INDEX ledger_events_by_sha256 ON ledger_events (sha256);
CREATE INDEX ledger_events_by_name ON ledger_events (name);

CREATE TRIGGER ledger_events_no_update BEFORE UPDATE ON ledger_events
BEGIN SELECT RAISE(ABORT, 'ledger_events is append-only'); END;
CREATE TRIGGER ledger_events_no_delete BEFORE DELETE ON ledger_events
BEGIN SELECT RAISE(ABORT, 'ledger_events is append-only'); END;
