-- The weekly review straight from a SQLite ledger, without the tool: per ISO 8601 week (the
-- same weeks as `settle-ingest report skips`), the files skipped (duplicates), held, rejected,
-- failed, not ready and ignored, newest week first, over the last 8 weeks (as the tool):
--   sqlite3 -header -column /srv/settle/settle-ledger.sqlite < ops/weekly-skips.sql
-- or over N weeks:
--   sqlite3 -header -column -cmd '.parameter set :weeks 12' /srv/settle/settle-ledger.sqlite < ops/weekly-skips.sql
-- SQLite's own %W is not the ISO week (1 Jan 2027 would be 2027-W00), and %V needs SQLite
-- 3.46: the week is worked out from its Thursday, which decides both its year and its number.
WITH reviewed AS (
  SELECT event, name, date(at, '-3 days', 'weekday 4') AS thursday
    FROM ledger_events
   WHERE event IN ('skipped', 'held', 'rejected', 'failed', 'not_ready', 'ignored')
     AND at >= strftime('%Y-%m-%dT%H:%M:%fZ', 'now', '-' || (7 * coalesce(:weeks, 8)) || ' days')
)
SELECT printf('%s-W%02d', strftime('%Y', thursday), (strftime('%j', thursday) - 1) / 7 + 1) AS week,
       sum(event = 'skipped')                                        AS skipped,
       sum(event = 'held')                                           AS held,
       sum(event = 'rejected')                                       AS rejected,
       sum(event = 'failed')                                         AS failed,
       sum(event = 'not_ready')                                      AS not_ready,
       sum(event = 'ignored')                                        AS ignored,
       group_concat(CASE WHEN event = 'skipped' THEN name END, ', ') AS skipped_files
  FROM reviewed
 GROUP BY week
 ORDER BY week DESC;
