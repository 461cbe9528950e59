-- The same step as sql/ledger/000008_ignored_names.sql (test/integration/ledgerSchemas.test.ts
-- compares the two stores' schemas column by column). This set has no 000007: from here on both
-- sets are numbered alike, and the migrator takes the versions it finds, gaps included.
CREATE TABLE ignored_names (
  name       text PRIMARY KEY,
  arrival    text NOT NULL,
  reason     text NOT NULL,
  first_run  text NOT NULL REFERENCES runs (run_id),
  first_at   timestamptz NOT NULL,
  last_run   text NOT NULL REFERENCES runs (run_id),
  last_at    timestamptz NOT NULL
);
CREATE INDEX ignored_names_by_last_run ON ignored_names (last_run);
