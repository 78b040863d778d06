-- The rest of the console: callback search and redeliveries counted,
-- payment search, bulk replays that can be left and returned to, alert
-- acknowledgements with a comment, and a run's phase for its progress bar.

ALTER TABLE payment_callbacks ADD COLUMN duplicates BIGINT NOT NULL DEFAULT 0;
CREATE INDEX payment_callbacks_received ON payment_callbacks (received_at, id);
CREATE INDEX payment_callbacks_txn ON payment_callbacks (provider_txn_id);
CREATE INDEX payment_callbacks_trace ON payment_callbacks (trace_id);
CREATE INDEX payment_callbacks_callback_id ON payment_callbacks (callback_id);
CREATE INDEX payment_callbacks_status ON payment_callbacks (processing_status, received_at, id);

CREATE INDEX payments_created ON payments (created_at, payment_no);
CREATE INDEX payments_txn ON payments (provider_txn_id);

ALTER TABLE alerts ADD COLUMN ack_comment TEXT NULL;

-- reading | matching | done
ALTER TABLE recon_runs ADD COLUMN phase TEXT NULL;
ALTER TABLE recon_runs ADD COLUMN bytes_total BIGINT NULL;
CREATE INDEX recon_runs_started ON recon_runs (started_at, run_id);

CREATE TABLE replay_jobs (
    job_id        TEXT PRIMARY KEY,
    provider      TEXT NOT NULL,
    from_at       BIGINT NOT NULL,
    to_at         BIGINT NOT NULL,
    requested_by  TEXT NOT NULL,
    -- RUNNING | DONE | FAILED
    status        TEXT NOT NULL,
    total         BIGINT NOT NULL DEFAULT 0,
    done          BIGINT NOT NULL DEFAULT 0,
    -- JSON object: replay class -> count
    classes_json  TEXT NOT NULL DEFAULT '{}',
    error         TEXT NULL,
    started_at    BIGINT NOT NULL,
    updated_at    BIGINT NOT NULL,
    finished_at   BIGINT NULL
);
CREATE INDEX replay_jobs_started ON replay_jobs (started_at);
