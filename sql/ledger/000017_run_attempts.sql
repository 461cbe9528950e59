-- How many tries a run that could not start stands for (the same step as
-- sql/ledger-pg/000016_run_attempts.sql): `watch` backs off a partner whose database, ledger or
-- server is away and tries again, each try counted on the one run recorded for the outage
-- rather than a run of its own. NULL: one try, as every run before this column.
ALTER TABLE runs ADD COLUMN attempts INTEGER;
