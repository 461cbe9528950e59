-- The same step as sql/ledger/000012_ignored_streak.sql: the partner's runs in a row that saw an ignored name.
ALTER TABLE ignored_names ADD COLUMN runs_in_a_row integer NOT NULL DEFAULT 1;
ALTER TABLE ignored_names ADD COLUMN streak_since timestamptz;
UPDATE ignored_names SET streak_since = last_at;
