-- Every move into archive/, duplicates/ or rejected/, keyed by where the file landed. Two
-- runs that both saw one file land at the same place (a move one of them finished, or one
-- resumed after a crash) can record it only once: this insert decides which run counts it.
CREATE TABLE moves (
  location  text NOT NULL,
  name      text NOT NULL,
  sha256    text NOT NULL,
  -- the intake file's size and mtime: a later resend landing at a path that was cleared meanwhile is a new arrival
  arrival   text NOT NULL,
  run_id    text NOT NULL REFERENCES runs (run_id),
  at        timestamptz NOT NULL,
  PRIMARY KEY (location, sha256, arrival)
);
