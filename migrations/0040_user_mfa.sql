-- A console user's second factor: a TOTP secret (RFC 6238), sealed with
-- AES-256-GCM under a key derived from the audit key, which lives outside
-- the database (`key_id` names it), so a copy of the database alone does
-- not give the codes. A row with no `confirmed_at` is an enrolment begun
-- and not yet confirmed with a code; `last_step` is the last time step a
-- code was accepted for, so each code is taken once.
CREATE TABLE user_mfa (
    user_id      TEXT PRIMARY KEY REFERENCES users (id),
    secret       TEXT NOT NULL,
    key_id       TEXT NOT NULL,
    created_at   BIGINT NOT NULL,
    confirmed_at BIGINT NULL,
    last_step    BIGINT NOT NULL DEFAULT 0
);

-- Recovery codes, each good once: SHA-256 of the user id and the code (80
-- random bits, so a hash is not worth guessing), never the code itself.
CREATE TABLE user_mfa_recovery (
    user_id    TEXT NOT NULL REFERENCES users (id),
    code_hash  TEXT NOT NULL,
    created_at BIGINT NOT NULL,
    used_at    BIGINT NULL,
    PRIMARY KEY (user_id, code_hash)
);
