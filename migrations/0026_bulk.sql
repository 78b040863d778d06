-- Bulk work under the two-person rule: a bulk proposal (one fix for many
-- tickets, each item an ordinary fix_proposals row carrying its id, so the
-- proposer check, stale detection and execution stay the single ticket's),
-- and bulk jobs that work a list of tickets or items in the background,
-- one transaction per item, with progress and a cancel.

CREATE TABLE bulk_proposals (
    bulk_id        TEXT PRIMARY KEY,
    kind           TEXT NOT NULL,
    reason         TEXT NOT NULL,
    evidence       TEXT NOT NULL,
    proposer_id    TEXT NOT NULL,
    proposer_name  TEXT NOT NULL,
    proposed_at    BIGINT NOT NULL
);
CREATE INDEX bulk_proposals_at ON bulk_proposals (proposed_at);

ALTER TABLE fix_proposals ADD COLUMN bulk_id TEXT NULL;
CREATE INDEX fix_proposals_bulk ON fix_proposals (bulk_id, proposed_at);

CREATE TABLE bulk_jobs (
    job_id          TEXT PRIMARY KEY,
    -- ASSIGN | COMMENT | CLOSE | PROPOSE | APPROVE | REJECT
    kind            TEXT NOT NULL,
    -- the bulk proposal it proposes, approves or rejects
    bulk_id         TEXT NULL,
    -- what every item gets: owner, comment, conclusion, fix (JSON)
    params_json     TEXT NOT NULL,
    requested_by_id TEXT NOT NULL,
    requested_by    TEXT NOT NULL,
    -- RUNNING | CANCELLING | DONE | CANCELLED | FAILED
    status          TEXT NOT NULL,
    total           BIGINT NOT NULL,
    done            BIGINT NOT NULL DEFAULT 0,
    skipped         BIGINT NOT NULL DEFAULT 0,
    failed          BIGINT NOT NULL DEFAULT 0,
    error           TEXT NULL,
    started_at      BIGINT NOT NULL,
    updated_at      BIGINT NOT NULL,
    finished_at     BIGINT NULL
);
CREATE INDEX bulk_jobs_started ON bulk_jobs (started_at);

-- One row per ticket (or proposal item) a job works, fixed when it starts:
-- PENDING until worked, then DONE | SKIPPED | FAILED with why.
CREATE TABLE bulk_job_items (
    job_id     TEXT NOT NULL,
    seq        BIGINT NOT NULL,
    target_id  TEXT NOT NULL,
    status     TEXT NOT NULL,
    detail     TEXT NULL,
    at         BIGINT NULL,
    PRIMARY KEY (job_id, seq)
);
CREATE INDEX bulk_job_items_pending ON bulk_job_items (job_id, status, seq);
