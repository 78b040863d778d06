-- Accounts, merchant API tokens, sign-in throttling and the audit log.
-- Portable SQL: the same text runs on SQLite and PostgreSQL.
-- Times are BIGINT microseconds since the epoch, UTC.
-- Sessions live in the tower-sessions store's own table, created at start.

CREATE TABLE users (
    id                  TEXT PRIMARY KEY,
    username            TEXT NOT NULL UNIQUE,
    password_hash       TEXT NOT NULL,
    role                TEXT NOT NULL CHECK (role IN ('operator', 'supervisor', 'admin')),
    lang                TEXT NULL CHECK (lang IN ('en', 'zh')),
    disabled_at         BIGINT NULL,
    created_at          BIGINT NOT NULL,
    updated_at          BIGINT NOT NULL,
    password_changed_at BIGINT NOT NULL
);

CREATE TABLE api_tokens (
    id           TEXT PRIMARY KEY,
    name         TEXT NOT NULL UNIQUE,
    token_hash   TEXT NOT NULL UNIQUE,
    token_prefix TEXT NOT NULL,
    created_at   BIGINT NOT NULL,
    created_by   TEXT NOT NULL,
    revoked_at   BIGINT NULL,
    last_used_at BIGINT NULL
);

-- One row per throttled key: 'user:<name>' or 'addr:<ip>'.
CREATE TABLE login_throttle (
    throttle_key     TEXT PRIMARY KEY,
    failures         BIGINT NOT NULL,
    first_failure_at BIGINT NOT NULL,
    locked_until     BIGINT NOT NULL
);

-- Append-only. Each entry's hash covers its fields and the previous hash,
-- so an edited or deleted row breaks the chain.
CREATE TABLE audit_log (
    seq         BIGINT PRIMARY KEY,
    at          BIGINT NOT NULL,
    actor       TEXT NOT NULL,
    action      TEXT NOT NULL,
    object_type TEXT NOT NULL,
    object_id   TEXT NOT NULL,
    before_json TEXT NULL,
    after_json  TEXT NULL,
    prev_hash   TEXT NOT NULL,
    hash        TEXT NOT NULL
);

CREATE INDEX audit_log_object ON audit_log (object_type, object_id, seq);
CREATE INDEX audit_log_actor ON audit_log (actor, seq);
