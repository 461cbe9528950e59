-- An ignored name is a partner's: keyed by (partner, name), its rows belonging to `default`.
-- (The same step as sql/ledger/000010_ignored_names_partner.sql.)
ALTER TABLE ignored_names ADD COLUMN partner text NOT NULL DEFAULT 'default';
ALTER TABLE ignored_names DROP CONSTRAINT ignored_names_pkey;
ALTER TABLE ignored_names ADD PRIMARY KEY (partner, name);
