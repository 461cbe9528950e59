-- A delivery has two hashes: the bytes as delivered (gzip, zip, OpenPGP) and the content inside
-- them. `sha256` stays the content's (a re-encrypted or re-compressed resend meets it); the
-- delivered bytes' hash is kept beside it, so that a load is told from a resend of its content
-- under the same name. NULL on rows from before: their delivered bytes were their content.
ALTER TABLE file_loads ADD COLUMN delivered_sha256 text CHECK (delivered_sha256 ~ '^[0-9a-f]{64}$');
