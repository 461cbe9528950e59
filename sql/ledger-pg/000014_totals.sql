-- The same step as sql/ledger/000014_totals.sql: each loaded file keeps the control totals it
-- proved before its rows were loaded, a JSON list of {total, group, rows, agrees}; NULL when its
-- layout states none, or on rows from before they were kept.
ALTER TABLE processed_files ADD COLUMN totals text;
