-- Each loaded file keeps the control totals it proved before its rows were loaded (DESIGN.md
-- invariant 9, layout/totals.ts): a JSON list of {total, group, rows, agrees}, so that `audit`
-- can say a loaded file balanced. NULL: its layout states no totals, or the row is from before
-- they were kept. (The same step as sql/ledger-pg/000014_totals.sql.)
ALTER TABLE processed_files ADD COLUMN totals TEXT;
