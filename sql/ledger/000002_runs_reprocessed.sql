-- Reprocessing runs count the files whose rows they replaced.
ALTER TABLE runs ADD COLUMN reprocessed INTEGER;
