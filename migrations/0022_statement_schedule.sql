-- The daily pulls of each provider's statement: one row per provider and
-- business day, its lease (an owner and an expiry, taken by one
-- conditional statement, so two instances never pull one day at once),
-- the tries so far and when the next may start (backoff while the bill is
-- not ready), and how the last try ended.
CREATE TABLE statement_pulls (
    provider       TEXT NOT NULL,
    business_date  TEXT NOT NULL,
    owner          TEXT NULL,
    lease_until    BIGINT NOT NULL,
    tries          BIGINT NOT NULL,
    next_at        BIGINT NOT NULL,
    last_at        BIGINT NULL,
    last_run_id    TEXT NULL,
    last_error     TEXT NULL,
    -- 1 once a run of the day COMPLETED
    done           INTEGER NOT NULL,
    PRIMARY KEY (provider, business_date)
);

-- The original statement of a run, as uploaded, imported or downloaded:
-- gzipped, with the SHA-256 of its bytes (the run's file_hash), kept for
-- the retention period as the evidence its tickets point at.
CREATE TABLE statement_files (
    run_id       TEXT PRIMARY KEY REFERENCES recon_runs (run_id) ON DELETE CASCADE,
    file_name    TEXT NOT NULL,
    sha256       TEXT NOT NULL,
    size_bytes   BIGINT NOT NULL,
    gzip         BYTEA NOT NULL,
    kept_at      BIGINT NOT NULL
);
CREATE INDEX statement_files_kept ON statement_files (kept_at);
