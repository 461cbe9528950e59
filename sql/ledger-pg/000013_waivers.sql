-- The same step as sql/ledger/000013_waivers.sql: the event kinds `waived` and `unwaived` (an
-- owed day waived by an operator, and taken back), and each run's process exit status (what the
-- scheduler saw) beside its loads' own.
ALTER TABLE ledger_events DROP CONSTRAINT ledger_events_event_check;
ALTER TABLE ledger_events ADD CONSTRAINT ledger_events_event_check CHECK (event IN (
  'arrived', 'claimed', 'loaded', 'skipped', 'held', 'rejected', 'failed',
  'released', 'expired', 'recovered', 'reprocessed', 'moved', 'not_ready', 'ignored',
  'waived', 'unwaived'));

-- NULL on runs from before it was kept
ALTER TABLE runs ADD COLUMN process_exit_status integer;
