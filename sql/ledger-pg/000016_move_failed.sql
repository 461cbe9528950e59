-- The same step as sql/ledger/000016_move_failed.sql: the event kind `move_failed`, a decided
-- file whose move out of the intake failed, recorded with where it was going and why.
ALTER TABLE ledger_events DROP CONSTRAINT ledger_events_event_check;
ALTER TABLE ledger_events ADD CONSTRAINT ledger_events_event_check CHECK (event IN (
  'arrived', 'claimed', 'loaded', 'skipped', 'held', 'rejected', 'failed',
  'released', 'expired', 'recovered', 'reprocessed', 'moved', 'not_ready', 'ignored',
  'waived', 'unwaived', 'move_failed'));
