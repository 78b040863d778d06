-- Who made each console account and who gave it its current role. A role
-- that can decide (supervisor, admin) granted by an admin in the console
-- is pending until a second admin — neither the granter nor the grantee —
-- confirms it (role_confirmed_at set); a grant made on the server's host
-- (the command line, the demo) counts as confirmed when it is made. The
-- deciding statements join here: no one decides what was proposed by an
-- account they created, or whose role they granted or confirmed.
-- *_by is a name as the audit log writes it (a username, `cli`, `demo`);
-- *_by_id the console user's id, NULL when the host did it.
ALTER TABLE users ADD COLUMN created_by_id TEXT NULL;
ALTER TABLE users ADD COLUMN created_by TEXT NULL;
ALTER TABLE users ADD COLUMN role_granted_by_id TEXT NULL;
ALTER TABLE users ADD COLUMN role_granted_by TEXT NULL;
ALTER TABLE users ADD COLUMN role_granted_at BIGINT NULL;
ALTER TABLE users ADD COLUMN role_confirmed_by_id TEXT NULL;
ALTER TABLE users ADD COLUMN role_confirmed_by TEXT NULL;
ALTER TABLE users ADD COLUMN role_confirmed_at BIGINT NULL;

-- Accounts older than this record keep the roles they had: nobody can say
-- now who granted them, so they are marked confirmed as of the migration.
UPDATE users SET role_confirmed_by = 'before grants were recorded', role_confirmed_at = updated_at;
