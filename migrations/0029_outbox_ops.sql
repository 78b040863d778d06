-- Outbox operations (issue 28, item 1): every delivery attempt kept, who
-- last resent a delivery, and resend / recover jobs with their items.

-- One row per delivery attempt, written in the transaction that updates
-- the delivery row. Bounded: the newest 50 per (message, sink) are kept
-- (the relay gives up after 12; only resends add more).
CREATE TABLE outbox_attempts (
    attempt_id  TEXT PRIMARY KEY,
    message_id  TEXT NOT NULL,
    sink        TEXT NOT NULL,
    at          BIGINT NOT NULL,
    status_code INTEGER NULL,
    latency_us  BIGINT NOT NULL,
    -- the answer's first bytes (at most 256, cut on a character boundary)
    answer_head TEXT NOT NULL,
    -- NULL: delivered
    error       TEXT NULL,
    -- RELAY (the schedule's own attempts) | RESEND (after a person's resend)
    origin      TEXT NOT NULL
);
CREATE INDEX outbox_attempts_delivery ON outbox_attempts (message_id, sink, at);

-- Who queued the delivery again, and when; NULL until a resend.
ALTER TABLE outbox_deliveries ADD COLUMN resent_by TEXT NULL;
ALTER TABLE outbox_deliveries ADD COLUMN resent_at BIGINT NULL;
CREATE INDEX outbox_deliveries_sink ON outbox_deliveries (sink, status);
CREATE INDEX outbox_events_created ON outbox_events (created_at, message_id);

-- A bulk resend (by a list filter) or a recover (a sink's DEAD deliveries
-- since a time): its deliveries fixed when it starts, queued again in the
-- background in small transactions, cancellable, resumed after a restart.
CREATE TABLE outbox_jobs (
    job_id       TEXT PRIMARY KEY,
    -- RESEND | RECOVER
    kind         TEXT NOT NULL,
    -- the filter it was started with (JSON)
    params_json  TEXT NOT NULL,
    requested_by TEXT NOT NULL,
    -- RUNNING | CANCELLING | DONE | CANCELLED | FAILED
    status       TEXT NOT NULL,
    total        BIGINT NOT NULL,
    done         BIGINT NOT NULL DEFAULT 0,
    skipped      BIGINT NOT NULL DEFAULT 0,
    error        TEXT NULL,
    started_at   BIGINT NOT NULL,
    updated_at   BIGINT NOT NULL,
    finished_at  BIGINT NULL
);
CREATE INDEX outbox_jobs_started ON outbox_jobs (started_at);

-- PENDING until worked, then DONE (queued again) | SKIPPED (already
-- pending: nothing to do).
CREATE TABLE outbox_job_items (
    job_id     TEXT NOT NULL,
    seq        BIGINT NOT NULL,
    message_id TEXT NOT NULL,
    sink       TEXT NOT NULL,
    status     TEXT NOT NULL,
    PRIMARY KEY (job_id, seq)
);
CREATE INDEX outbox_job_items_pending ON outbox_job_items (job_id, status, seq);
