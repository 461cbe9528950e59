-- The same step as sql/ledger/000005_nothing_silent.sql (test/integration/ledgerSchemas.test.ts
-- compares the two stores' schemas column by column).
ALTER TABLE runs ADD COLUMN status text CHECK (status IN ('running', 'finished', 'not_started', 'died'));
ALTER TABLE runs ADD COLUMN reason text;
ALTER TABLE runs ADD COLUMN ignored integer;
ALTER TABLE runs ADD COLUMN stale integer;
ALTER TABLE runs ADD COLUMN move_failed integer;

ALTER TABLE processed_files ADD COLUMN moving_to text CHECK (moving_to IN ('archive', 'duplicates', 'rejected'));

ALTER TABLE ledger_events DROP CONSTRAINT ledger_events_event_check;
ALTER TABLE ledger_events ADD CONSTRAINT ledger_events_event_check CHECK (event IN (
  'arrived', 'claimed', 'loaded', 'skipped', 'held', 'rejected', 'failed',
  'released', 'expired', 'recovered', 'reprocessed', 'moved', 'not_ready', 'ignored'));
