-- Each partner's run reads its own recent moves (sqlLedger.ts `movesSince`: the landed files it
-- looks at again). Without an index it walked every partner's moves of every night: 665 to 744 ms
-- of the ledger server's time a partner's run at a year's 3,650,000 moves, 5.3 ms at 10,000
-- (docs/SCALING.md, "What breaks first"); with it, about a millisecond. Adds only.
-- (The same step as sql/ledger-pg/000020_moves_by_partner.sql.)
CREATE INDEX IF NOT EXISTS moves_by_partner ON moves (partner, at);
