-- A delivery has two hashes: `sha256`, the bytes as delivered (gzip, zip, OpenPGP: the claim
-- key, as before), and `content_sha256`, the content inside them (the finance database's file
-- marker). Equal for a plain file; NULL on rows from before it was kept, and on a delivery that
-- could not be decoded.
ALTER TABLE processed_files ADD COLUMN content_sha256 TEXT;
CREATE INDEX processed_files_by_content ON processed_files (content_sha256);
