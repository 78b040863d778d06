-- Webhooks Reckon did not believe or could not read, kept for audit: the
-- reason, the headers and the first bytes of the body. Bounded twice: a
-- rate (excess refusals are only counted) and a number of rows kept per
-- provider (older ones pruned), so a flood of garbage cannot fill the disk.
CREATE TABLE refused_callbacks (
    id            TEXT PRIMARY KEY,
    provider      TEXT NOT NULL,
    -- unverified | malformed | content_type | too_large
    kind          TEXT NOT NULL,
    reason        TEXT NOT NULL,
    headers_json  TEXT NOT NULL,
    body_excerpt  BYTEA NOT NULL,
    body_len      BIGINT NOT NULL,
    body_hash     TEXT NOT NULL,
    -- What the unverified body claims, for a status query; not trusted.
    payment_no    TEXT NULL,
    trace_id      TEXT NOT NULL,
    received_at   BIGINT NOT NULL
);
CREATE INDEX refused_callbacks_provider ON refused_callbacks (provider, received_at);
