-- The ledger in PostgreSQL, for several hosts sharing it: the same tables and rules as the
-- SQLite ledger (sql/ledger/). Runs with search_path set to the ledger schema.

CREATE TABLE runs (
  run_id      text PRIMARY KEY,
  mode        text NOT NULL CHECK (mode IN ('scheduled', 'manual', 'reprocess')),
  host        text NOT NULL,
  pid         integer NOT NULL,
  started_at  timestamptz NOT NULL,
  ended_at    timestamptz,
  loaded      integer,
  skipped     integer,
  held        integer,
  rejected    integer,
  failed      integer,
  not_ready   integer,
  reprocessed integer,
  row_count   bigint,
  exit_status integer
);

CREATE TABLE processed_files (
  id                bigserial PRIMARY KEY,
  name              text NOT NULL,
  sha256            text NOT NULL CHECK (sha256 ~ '^[0-9a-f]{64}$'),
  state             text NOT NULL
                    CHECK (state IN ('claimed', 'loaded', 'duplicate', 'held', 'rejected', 'failed')),
  run_id            text NOT NULL REFERENCES runs (run_id),
  size              bigint NOT NULL,
  row_count         bigint,
  reason            text,
  owner_host        text,
  owner_pid         integer,
  owner_started_at  text,
  lease_until       timestamptz,
  location          text,
  first_seen_at     timestamptz NOT NULL,
  updated_at        timestamptz NOT NULL,
  UNIQUE (name, sha256)
);

-- The content is the claim key: while one name of some content is claimed or loaded,
-- no other name of the same bytes can be.
CREATE UNIQUE INDEX processed_files_live_content
  ON processed_files (sha256) WHERE state IN ('claimed', 'loaded');

CREATE TABLE ledger_events (
  id       bigserial PRIMARY KEY,
  run_id   text REFERENCES runs (run_id),
  at       timestamptz NOT NULL,
  event    text NOT NULL CHECK (event IN (
             'arrived', 'claimed', 'loaded', 'skipped', 'held', 'rejected', 'failed',
             'released', 'expired', 'recovered', 'reprocessed', 'moved', 'not_ready')),
  name     text NOT NULL,
  sha256   text,
  details  jsonb NOT NULL DEFAULT '{}'
);
CREATE INDEX ledger_events_by_run ON ledger_events (run_id);
CREATE INDEX ledger_events_by_sha256 ON ledger_events (sha256);
CREATE INDEX ledger_events_by_name ON ledger_events (name);

CREATE FUNCTION ledger_events_append_only() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  RAISE EXCEPTION 'ledger_events is append-only';
END
$$;
CREATE TRIGGER ledger_events_append_only BEFORE UPDATE OR DELETE ON ledger_events
  FOR EACH ROW EXECUTE FUNCTION ledger_events_append_only();
