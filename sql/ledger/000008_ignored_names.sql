-- The entries a run leaves alone (names the pattern does not take, links, odd names), recorded
-- once per name instead of once per run: an intake beside 50,000 neighbours must not add 50,000
-- ledger events every night. An `ignored` event is written when a name is new or changed (its
-- size:mtime or the reason); every run still counts and names each one, and `last_run` is the run
-- that saw it last. (The same step as sql/ledger-pg/000008_ignored_names.sql; the two sets are
-- numbered alike from here on.)
CREATE TABLE ignored_names (
  name       TEXT PRIMARY KEY,
  arrival    TEXT NOT NULL,
  reason     TEXT NOT NULL,
  first_run  TEXT NOT NULL REFERENCES runs (run_id),
  first_at   TEXT NOT NULL,
  last_run   TEXT NOT NULL REFERENCES runs (run_id),
  last_at    TEXT NOT NULL
);
CREATE INDEX ignored_names_by_last_run ON ignored_names (last_run);
