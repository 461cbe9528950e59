-- The same step as sql/ledger/000005_nothing_silent.sql (test/integration/ledgerSchemas.test.ts
-- compares the two stores' schemas column by column).
ALTER TABLE runs ADD COLUMN status text CHECK (status IN ('running', 'finished', 'not_started', 'died'));
ALTER TABLE runs ADD COLUMN reason text;
ALTER TABLE runs ADD COLUMN ignored integer;
ALTER TABLE runs ADD COLUMN stale integer;
ALTER TABLE runs ADD COLUMN move_failed integer;

-- The landed file's size:mtime, as the move left it: a later run finds an archived file that
-- changed after its move (an upload that stalled, then resumed into the archive).
ALTER TABLE moves ADD COLUMN landed text;

CREATE TABLE move_intents (
  name         text NOT NULL,
  sha256       text NOT NULL,
  arrival      text NOT NULL,
  destination  text NOT NULL CHECK (destination IN ('archive', 'duplicates', 'rejected')),
  run_id       text NOT NULL REFERENCES runs (run_id),
  at           timestamptz NOT NULL,
  PRIMARY KEY (name, sha256, arrival)
);

ALTER TABLE ledger_events DROP CONSTRAINT ledger_events_event_check;
ALTER TABLE ledger_events ADD CONSTRAINT ledger_events_event_check CHECK (event IN (
  'arrived', 'claimed', 'loaded', 'skipped', 'held', 'rejected', 'failed',
  'released', 'expired', 'recovered', 'reprocessed', 'moved', 'not_ready', 'ignored'));
