-- Scheduled work runs once across instances (issue 29): one row per job of
-- the workers' beats that no row lease makes once (bank matching, the
-- day closes, the SLA pass, ...). The instance holding a job's lease runs
-- it until `lease_until` and renews it each beat; a stopped instance's
-- lease lapses and the next instance to beat takes it.

CREATE TABLE job_leases (
    job          TEXT PRIMARY KEY,
    holder       TEXT NOT NULL,
    lease_until  BIGINT NOT NULL,
    taken_at     BIGINT NOT NULL
);
