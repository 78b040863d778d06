-- Who may see stored callbacks and refused webhooks unmasked: granted to a
-- user by an admin other than that user, each grant and each use audited.
-- Everyone else sees them masked (cards, e-mail, phone, IP, names, secrets).
ALTER TABLE users ADD COLUMN view_raw_at BIGINT NULL;
ALTER TABLE users ADD COLUMN view_raw_by TEXT NULL;
