-- The same step as sql/ledger/000020_moves_by_partner.sql: each partner's run reads its own
-- recent moves (`movesSince`) by this index instead of walking every partner's moves of a year
-- (665 to 744 ms of the server's time a partner's run at 3,650,000 moves; about a millisecond
-- with it, docs/SCALING.md "What breaks first"). Adds only.
CREATE INDEX IF NOT EXISTS moves_by_partner ON moves (partner, at);
