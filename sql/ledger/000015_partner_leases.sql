-- A lease per partner (the same step as sql/ledger-pg/000015_partner_leases.sql). Only the
-- PostgreSQL ledger, shared by several hosts, takes leases; a local ledger keeps the table so
-- that the two stores' schemas stay alike, and runs as before.
CREATE TABLE partner_leases (
  partner TEXT PRIMARY KEY,
  holder TEXT NOT NULL,
  owner_host TEXT NOT NULL,
  owner_pid INTEGER NOT NULL,
  owner_started_at TEXT NOT NULL,
  run_id TEXT,
  taken_at TEXT NOT NULL,
  lease_until TEXT NOT NULL
);
