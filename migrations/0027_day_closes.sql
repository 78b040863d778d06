-- The signed daily close. One record per close of a provider's business
-- day: its figures and the statements (runs, by file hash) it rests on,
-- who closed it, how and why, chained per provider (seq 1, 2, … with the
-- hash of the one before) and signed (an HMAC under the audit key). A day
-- has at most one CLOSED record; reopening marks it REOPENED (the record
-- itself never changes) and a later close adds the next one.
CREATE TABLE day_closes (
    provider       TEXT NOT NULL,
    seq            BIGINT NOT NULL,
    business_date  TEXT NOT NULL,
    -- CLOSED | REOPENED
    state          TEXT NOT NULL,
    -- auto | supervisor
    how            TEXT NOT NULL,
    closed_by      TEXT NOT NULL,
    reason         TEXT NULL,
    closed_at      BIGINT NOT NULL,
    -- the signed report's body, exactly as hashed (canonical JSON)
    body_json      TEXT NOT NULL,
    prev_hash      TEXT NOT NULL,
    hash           TEXT NOT NULL,
    key_id         TEXT NOT NULL,
    signature      TEXT NOT NULL,
    reopened_by    TEXT NULL,
    reopened_at    BIGINT NULL,
    PRIMARY KEY (provider, seq)
);
CREATE UNIQUE INDEX day_closes_one_closed ON day_closes (provider, business_date) WHERE state = 'CLOSED';
CREATE INDEX day_closes_day ON day_closes (business_date, provider);

-- Reopening a closed day under the two-person rule: one supervisor
-- proposes with a reason, a different one approves (or rejects).
CREATE TABLE day_reopens (
    reopen_id      TEXT PRIMARY KEY,
    provider       TEXT NOT NULL,
    business_date  TEXT NOT NULL,
    close_seq      BIGINT NOT NULL,
    reason         TEXT NOT NULL,
    proposer_id    TEXT NOT NULL,
    proposer_name  TEXT NOT NULL,
    proposed_at    BIGINT NOT NULL,
    -- PENDING | APPROVED | REJECTED
    status         TEXT NOT NULL,
    decided_by_id  TEXT NULL,
    decided_by_name TEXT NULL,
    decided_at     BIGINT NULL,
    CONSTRAINT day_reopens_not_own CHECK (decided_by_id IS NULL OR decided_by_id <> proposer_id)
);
CREATE UNIQUE INDEX day_reopens_one_pending ON day_reopens (provider, business_date) WHERE status = 'PENDING';
