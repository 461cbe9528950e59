-- The size:mtime of the upload a row was decided for: a later upload of the same name and
-- bytes is a resend to skip, not the same file whose move is still to finish.
ALTER TABLE processed_files ADD COLUMN arrival TEXT;
