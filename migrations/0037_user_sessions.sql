-- The register of console sessions: one row per sign-in, keyed by an id of
-- its own kept in the browser's session record. A session is live while
-- its row is not ended, was seen within the idle timeout and is younger
-- than the absolute lifetime; ending a row ends the session wherever its
-- cookie is. Rows are kept after they end, as the record of who was signed
-- in from where.

CREATE TABLE user_sessions (
    id           TEXT PRIMARY KEY,
    user_id      TEXT NOT NULL REFERENCES users (id),
    created_at   BIGINT NOT NULL,
    last_seen_at BIGINT NOT NULL,
    address      TEXT NOT NULL,
    user_agent   TEXT NOT NULL,
    ended_at     BIGINT NULL,
    -- signed_out, ended, password, role, disabled, mfa_reset, idle, lifetime
    end_reason   TEXT NULL,
    ended_by     TEXT NULL
);

CREATE INDEX user_sessions_user ON user_sessions (user_id, ended_at);

-- The attempt that set a sign-in lock, so its start is recorded once
-- however many refused attempts follow it.
ALTER TABLE login_throttle ADD COLUMN locked_by TEXT NOT NULL DEFAULT '';
