-- The weekly review: skips (duplicates), holds, rejects and failures per week (Monday-first,
-- SQLite's %W, which any sqlite3 shell has), straight from the ledger.
--   sqlite3 -header -column /srv/settle/settle-ledger.sqlite < ops/weekly-skips.sql
SELECT strftime('%Y-W%W', at)                                  AS week,
       sum(event = 'skipped')                                  AS skipped,
       sum(event = 'held')                                     AS held,
       sum(event = 'rejected')                                 AS rejected,
       sum(event = 'failed')                                   AS failed,
       group_concat(CASE WHEN event = 'skipped' THEN name END, ', ') AS skipped_files
  FROM ledger_events
 WHERE event IN ('skipped', 'held', 'rejected', 'failed')
   AND at >= date('now', '-84 days')
 GROUP BY week
 ORDER BY week DESC;
