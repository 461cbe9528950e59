-- The same step as sql/ledger/000015_partner_leases.sql: a lease per partner, held by the run
-- (or watch cycle) working it, so that a second host on this ledger skips the partner at once
-- and takes the next. A lease past lease_until is free (its holder crashed); so is one whose holder is provably gone on this
-- host (owner.ts ownerIsGone), as for claims.
CREATE TABLE partner_leases (
  partner text PRIMARY KEY,
  holder text NOT NULL,
  owner_host text NOT NULL,
  owner_pid integer NOT NULL,
  owner_started_at text NOT NULL,
  run_id text,
  taken_at timestamptz NOT NULL,
  lease_until timestamptz NOT NULL
);
