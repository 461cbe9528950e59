-- The same step as sql/ledger/000007_content_hash.sql (test/integration/ledgerSchemas.test.ts
-- compares the two stores' schemas column by column).
ALTER TABLE processed_files ADD COLUMN content_sha256 text;
CREATE INDEX processed_files_by_content ON processed_files (content_sha256);
