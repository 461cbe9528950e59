-- An ignored name that stays in the intake run after run is named as waiting too long, like a held
-- file: its row counts the partner's runs in a row that saw it, and since when. (The same step as
-- sql/ledger-pg/000012_ignored_streak.sql.)
ALTER TABLE ignored_names ADD COLUMN runs_in_a_row INTEGER NOT NULL DEFAULT 1;
ALTER TABLE ignored_names ADD COLUMN streak_since TEXT;
UPDATE ignored_names SET streak_since = last_at;
