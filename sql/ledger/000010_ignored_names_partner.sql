-- An ignored name is a partner's: two partners' intakes may both hold a README.txt. The table of
-- 000008 was keyed by name alone; it is rebuilt keyed by (partner, name), its rows belonging to
-- `default` as every row from before partners does. (The same step as
-- sql/ledger-pg/000010_ignored_names_partner.sql.)
CREATE TABLE ignored_names_by_partner (
  partner    TEXT NOT NULL DEFAULT 'default',
  name       TEXT NOT NULL,
  arrival    TEXT NOT NULL,
  reason     TEXT NOT NULL,
  first_run  TEXT NOT NULL REFERENCES runs (run_id),
  first_at   TEXT NOT NULL,
  last_run   TEXT NOT NULL REFERENCES runs (run_id),
  last_at    TEXT NOT NULL,
  PRIMARY KEY (partner, name)
);
INSERT INTO ignored_names_by_partner (partner, name, arrival, reason, first_run, first_at, last_run, last_at)
  SELECT 'default', name, arrival, reason, first_run, first_at, last_run, last_at FROM ignored_names;
DROP TABLE ignored_names;
ALTER TABLE ignored_names_by_partner RENAME TO ignored_names;
CREATE INDEX ignored_names_by_last_run ON ignored_names (last_run);
