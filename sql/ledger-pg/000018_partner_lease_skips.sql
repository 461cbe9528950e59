-- The same step as sql/ledger/000016_partner_lease_skips.sql: what a run that skipped a starved
-- partner (its lease another's, no successful run within --max-age) saw: when, by which host, and
-- the files waiting in the partner's intake (JSON text), for `status` to name with the holder.
ALTER TABLE partner_leases ADD COLUMN skipped_at timestamptz;
ALTER TABLE partner_leases ADD COLUMN skipped_by text;
ALTER TABLE partner_leases ADD COLUMN waiting text;
