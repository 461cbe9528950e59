-- Each run, file, event and move records its partner (DESIGN.md, "Partners, and the deliveries
-- they owe"). Rows from before partners were kept belong to `default`, the one partner of a
-- config without "partners". The same step in both stores (sql/ledger/ and sql/ledger-pg/
-- 000009; from 000008 on the two sets are numbered alike).
ALTER TABLE runs ADD COLUMN partner text NOT NULL DEFAULT 'default';
ALTER TABLE processed_files ADD COLUMN partner text NOT NULL DEFAULT 'default';
ALTER TABLE ledger_events ADD COLUMN partner text NOT NULL DEFAULT 'default';
ALTER TABLE moves ADD COLUMN partner text NOT NULL DEFAULT 'default';
ALTER TABLE move_intents ADD COLUMN partner text NOT NULL DEFAULT 'default';
-- a partner's runs (status, report runs --partner) and its deliveries (status, report deliveries)
CREATE INDEX runs_by_partner ON runs (partner, started_at);
CREATE INDEX ledger_events_by_partner ON ledger_events (partner, event, at);
