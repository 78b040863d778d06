-- A report a provider's verified notification said is ready (Adyen's
-- REPORT_AVAILABLE): one row per provider and file, so a notification sent
-- again records nothing new. The statement beat fetches and imports it;
-- its tries, the next try and the lease of the instance fetching it are
-- kept here, and the run that read it.
CREATE TABLE report_pushes (
    provider TEXT NOT NULL,
    file_name TEXT NOT NULL,
    url TEXT NOT NULL,
    made_at BIGINT NULL,
    received_at BIGINT NOT NULL,
    tries BIGINT NOT NULL DEFAULT 0,
    next_at BIGINT NOT NULL,
    lease_until BIGINT NOT NULL DEFAULT 0,
    done BIGINT NOT NULL DEFAULT 0,
    run_id TEXT NULL,
    last_error TEXT NULL,
    PRIMARY KEY (provider, file_name)
);
CREATE INDEX report_pushes_due ON report_pushes (done, next_at);
