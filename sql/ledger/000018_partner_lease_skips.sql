-- What a run that skipped a partner saw (the same step as sql/ledger-pg/000016_partner_lease_skips.sql):
-- a partner whose lease another holds, with no successful run for longer than --max-age, is starved;
-- the skipping run lists the partner's intake and leaves here when, by which host, and the files
-- waiting there (JSON: a count, the first names, the oldest file's time; or why they could not be
-- listed), so that `status`, which reads the ledger alone, names them with the holder. Gone with
-- the lease row when the lease is released or taken over.
ALTER TABLE partner_leases ADD COLUMN skipped_at TEXT;
ALTER TABLE partner_leases ADD COLUMN skipped_by TEXT;
ALTER TABLE partner_leases ADD COLUMN waiting TEXT;
