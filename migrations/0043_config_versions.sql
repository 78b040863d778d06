-- The settings that decide money, versioned: each version is the canonical
-- document of those settings (body_json) and its SHA-256 (digest). A
-- version comes from the host (its file and environment changed since the
-- host's last version: recorded at start, by `host`) or from the console
-- (proposed by one person, approved by another under the two-person rule).
-- A console proposal is PENDING with no number; it is ADOPTED with the
-- next number when approved (a host version is ADOPTED when recorded), or
-- REJECTED. The version in force is the one with the highest number.
-- base_version: the version a console proposal changes; it is approved
-- only while that version is still in force.
CREATE TABLE config_versions (
    id TEXT PRIMARY KEY,
    version BIGINT NULL,
    status TEXT NOT NULL,
    source TEXT NOT NULL,
    digest TEXT NOT NULL,
    body_json TEXT NOT NULL,
    base_version BIGINT NULL,
    reason TEXT NULL,
    proposed_by_id TEXT NULL,
    proposed_by TEXT NOT NULL,
    approved_by_id TEXT NULL,
    approved_by TEXT NULL,
    created_at BIGINT NOT NULL,
    decided_at BIGINT NULL,
    activated_at BIGINT NULL,
    CHECK (status IN ('PENDING', 'ADOPTED', 'REJECTED')),
    CHECK (source IN ('host', 'console')),
    CHECK (approved_by_id IS NULL OR proposed_by_id IS NULL OR approved_by_id <> proposed_by_id)
);
CREATE UNIQUE INDEX config_versions_number ON config_versions (version);
-- One console proposal waits at a time.
CREATE UNIQUE INDEX config_versions_one_pending ON config_versions (status) WHERE status = 'PENDING';

-- The version each run and each daily close used (NULL: before versions).
ALTER TABLE recon_runs ADD COLUMN config_version BIGINT NULL;
ALTER TABLE day_closes ADD COLUMN config_version BIGINT NULL;
