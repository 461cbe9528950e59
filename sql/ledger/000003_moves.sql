-- Every move into archive/, duplicates/ or rejected/, keyed by where the file landed. Two
-- runs that both saw one file land at the same place (a move one of them finished, or one
-- resumed after a crash) can record it only once: this insert decides which run counts it.
CREATE TABLE moves (
  location  TEXT NOT NULL,
  name      TEXT NOT NULL,
  sha256    TEXT NOT NULL,
  -- the intake file's size and mtime: a later resend landing at a path that was cleared meanwhile is a new arrival
  arrival   TEXT NOT NULL,
  run_id    TEXT NOT NULL REFERENCES runs (run_id),
  at        TEXT NOT NULL,
  PRIMARY KEY (location, sha256, arrival)
);
