-- Layouts and compact provenance (issue 9).
--
-- Each layout loads into its own table (created by `settle-ingest migrate` from the layout);
-- file_loads says which. A row no longer carries its file's SHA-256, name and run as text with a
-- foreign key checked per row: it carries the load it came from (an integer) and its line.
-- `loads` has one row per load or reload of a content, with its run; file_loads.load_id names
-- the current one. Which file, which line, which run:
--   SELECT f.file_name, r.source_line, l.run_id
--     FROM settlement_rows r JOIN loads l USING (load_id) JOIN file_loads f USING (sha256)

ALTER TABLE file_loads ADD COLUMN target_table text NOT NULL DEFAULT 'settlement_rows';
ALTER TABLE file_loads ALTER COLUMN target_table DROP DEFAULT;

CREATE TABLE loads (
  load_id    integer GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  sha256     text NOT NULL REFERENCES file_loads (sha256),
  run_id     text NOT NULL,
  row_count  integer NOT NULL DEFAULT 0 CHECK (row_count >= 0),
  -- a reload's reason (run --reprocess); NULL for a file's first load
  reason     text,
  loaded_at  timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX loads_by_sha256 ON loads (sha256);

ALTER TABLE file_loads ADD COLUMN load_id integer UNIQUE;

-- what is already loaded: one load per content and run its rows carry, then the empty files
INSERT INTO loads (sha256, run_id, row_count, loaded_at)
  SELECT r.source_sha256, r.run_id, count(*), min(f.loaded_at)
    FROM settlement_rows r JOIN file_loads f ON f.sha256 = r.source_sha256
   GROUP BY r.source_sha256, r.run_id
   ORDER BY min(f.loaded_at), r.source_sha256;
INSERT INTO loads (sha256, run_id, row_count, loaded_at)
  SELECT f.sha256, f.run_id, 0, f.loaded_at FROM file_loads f
   WHERE NOT EXISTS (SELECT 1 FROM loads l WHERE l.sha256 = f.sha256);
UPDATE file_loads f SET load_id = (SELECT max(l.load_id) FROM loads l WHERE l.sha256 = f.sha256);

ALTER TABLE settlement_rows ADD COLUMN load_id integer;
UPDATE settlement_rows r SET load_id = l.load_id FROM loads l WHERE l.sha256 = r.source_sha256 AND l.run_id = r.run_id;
ALTER TABLE settlement_rows ALTER COLUMN load_id SET NOT NULL;
ALTER TABLE settlement_rows DROP COLUMN source_sha256, DROP COLUMN source_name, DROP COLUMN run_id;
CREATE INDEX settlement_rows_by_load ON settlement_rows (load_id);
