-- The finance side. Runs with search_path set to the target schema (default `settle`).

-- One row per loaded content. Its primary key is the last line of defence against a
-- second load: it is written in the same transaction as the file's rows.
CREATE TABLE file_loads (
  sha256     text PRIMARY KEY CHECK (sha256 ~ '^[0-9a-f]{64}$'),
  file_name  text NOT NULL,
  run_id     text NOT NULL,
  row_count  integer NOT NULL CHECK (row_count >= 0),
  loaded_at  timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE settlement_rows (
  settlement_date   date NOT NULL,
  transaction_id    text NOT NULL,
  merchant_id       text NOT NULL,
  card_brand        text NOT NULL,
  transaction_type  text NOT NULL,
  gross_amount      numeric(18, 2) NOT NULL,
  fee_amount        numeric(18, 2) NOT NULL,
  net_amount        numeric(18, 2) NOT NULL,
  currency          char(3) NOT NULL,
  -- provenance
  source_sha256     text NOT NULL REFERENCES file_loads (sha256),
  source_name       text NOT NULL,
  source_line       integer NOT NULL,
  run_id            text NOT NULL,
  CONSTRAINT settlement_rows_natural_key UNIQUE (transaction_id)
);

CREATE INDEX settlement_rows_by_source ON settlement_rows (source_sha256);
