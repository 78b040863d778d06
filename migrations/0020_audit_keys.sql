-- The key whose HMAC an audit entry's hash is (the key itself lives outside
-- the database). NULL for entries written before the log was keyed, which
-- stay plain SHA-256 and may only come before every keyed entry.
ALTER TABLE audit_log ADD COLUMN key_id TEXT;
