-- The payment engine: payments, raw callbacks, effects, outbox, history,
-- alerts, discrepancies, idempotency keys and provider tasks.
-- Portable SQL for SQLite and PostgreSQL; times are BIGINT microseconds UTC;
-- flags are INTEGER 0/1; raw bodies are BYTEA (a BLOB on SQLite).

CREATE TABLE payments (
    payment_no       TEXT PRIMARY KEY,
    order_no         TEXT NOT NULL,
    attempt_no       INTEGER NOT NULL,
    provider         TEXT NOT NULL,
    provider_txn_id  TEXT NULL,
    amount_minor     BIGINT NOT NULL CHECK (amount_minor > 0),
    currency         TEXT NOT NULL,
    status           TEXT NOT NULL,
    version          BIGINT NOT NULL DEFAULT 0,
    -- The status before the last change, set by the same UPDATE (history).
    prev_status      TEXT NULL,
    description      TEXT NULL,
    created_by       TEXT NOT NULL,
    awaiting_recon   INTEGER NOT NULL DEFAULT 0,
    created_at       BIGINT NOT NULL,
    updated_at       BIGINT NOT NULL,
    UNIQUE (order_no, attempt_no),
    UNIQUE (provider, provider_txn_id)
);
CREATE INDEX payments_status_updated ON payments (status, updated_at);

CREATE TABLE payment_callbacks (
    id                TEXT PRIMARY KEY,
    callback_id       TEXT NOT NULL,
    provider          TEXT NOT NULL,
    payment_no        TEXT NULL,
    provider_txn_id   TEXT NULL,
    callback_status   TEXT NOT NULL,
    headers_json      TEXT NOT NULL,
    payload           BYTEA NOT NULL,
    payload_hash      TEXT NOT NULL,
    verify_result     TEXT NOT NULL,
    processing_status TEXT NOT NULL,
    outcome           TEXT NULL,
    retry_count       INTEGER NOT NULL DEFAULT 0,
    next_retry_at     BIGINT NULL,
    lease_until       BIGINT NULL,
    trace_id          TEXT NOT NULL,
    error_message     TEXT NULL,
    received_at       BIGINT NOT NULL,
    processed_at      BIGINT NULL,
    UNIQUE (provider, callback_id)
);
CREATE INDEX payment_callbacks_payment ON payment_callbacks (payment_no, received_at);
CREATE INDEX payment_callbacks_due ON payment_callbacks (processing_status, next_retry_at);

CREATE TABLE payment_effects (
    effect_id   TEXT PRIMARY KEY,
    payment_no  TEXT NOT NULL,
    effect_type TEXT NOT NULL,
    created_at  BIGINT NOT NULL,
    UNIQUE (payment_no, effect_type)
);

CREATE TABLE payment_status_history (
    id           TEXT PRIMARY KEY,
    payment_no   TEXT NOT NULL,
    from_status  TEXT NOT NULL,
    to_status    TEXT NOT NULL,
    source       TEXT NOT NULL,
    evidence_ref TEXT NOT NULL,
    trace_id     TEXT NOT NULL,
    at           BIGINT NOT NULL
);
CREATE INDEX payment_status_history_payment ON payment_status_history (payment_no, at);

-- One event; one delivery row per configured sink.
CREATE TABLE outbox_events (
    message_id     TEXT PRIMARY KEY,
    aggregate_type TEXT NOT NULL,
    aggregate_id   TEXT NOT NULL,
    event_type     TEXT NOT NULL,
    payload        TEXT NOT NULL,
    available_at   BIGINT NOT NULL,
    created_at     BIGINT NOT NULL
);
CREATE INDEX outbox_events_aggregate ON outbox_events (aggregate_id, created_at);

CREATE TABLE outbox_deliveries (
    message_id      TEXT NOT NULL,
    sink            TEXT NOT NULL,
    status          TEXT NOT NULL,
    attempts        INTEGER NOT NULL DEFAULT 0,
    next_attempt_at BIGINT NOT NULL,
    lease_until     BIGINT NULL,
    last_error      TEXT NULL,
    published_at    BIGINT NULL,
    PRIMARY KEY (message_id, sink)
);
CREATE INDEX outbox_deliveries_due ON outbox_deliveries (status, next_attempt_at);

-- Work for the provider: create a payment, query its status.
CREATE TABLE provider_tasks (
    task_id     TEXT PRIMARY KEY,
    kind        TEXT NOT NULL,
    payment_no  TEXT NOT NULL,
    status      TEXT NOT NULL,
    attempts    INTEGER NOT NULL DEFAULT 0,
    next_run_at BIGINT NOT NULL,
    lease_until BIGINT NULL,
    last_error  TEXT NULL,
    created_at  BIGINT NOT NULL,
    updated_at  BIGINT NOT NULL
);
CREATE INDEX provider_tasks_due ON provider_tasks (status, next_run_at);
CREATE INDEX provider_tasks_payment ON provider_tasks (payment_no);

CREATE TABLE alerts (
    alert_id        TEXT PRIMARY KEY,
    dedupe_key      TEXT NOT NULL UNIQUE,
    kind            TEXT NOT NULL,
    severity        TEXT NOT NULL,
    payment_no      TEXT NULL,
    message         TEXT NOT NULL,
    trace_id        TEXT NULL,
    created_at      BIGINT NOT NULL,
    acknowledged_at BIGINT NULL,
    acknowledged_by TEXT NULL
);
CREATE INDEX alerts_open ON alerts (acknowledged_at, created_at);

CREATE TABLE discrepancies (
    discrepancy_id         TEXT PRIMARY KEY,
    dedupe_key             TEXT NOT NULL UNIQUE,
    class                  TEXT NOT NULL,
    severity               TEXT NOT NULL,
    status                 TEXT NOT NULL,
    provider               TEXT NOT NULL,
    payment_no             TEXT NULL,
    provider_txn_id        TEXT NULL,
    trace_id               TEXT NULL,
    local_amount_minor     BIGINT NULL,
    local_currency         TEXT NULL,
    local_status           TEXT NULL,
    provider_amount_minor  BIGINT NULL,
    provider_currency      TEXT NULL,
    provider_status        TEXT NULL,
    source                 TEXT NOT NULL,
    details                TEXT NOT NULL,
    found_at               BIGINT NOT NULL,
    closed_at              BIGINT NULL
);
CREATE INDEX discrepancies_open ON discrepancies (status, severity, found_at);

-- Merchant API idempotency: the first response to a key is the answer.
CREATE TABLE idempotency_keys (
    scope           TEXT NOT NULL,
    idem_key        TEXT NOT NULL,
    request_hash    TEXT NOT NULL,
    response_status INTEGER NOT NULL,
    response_body   TEXT NOT NULL,
    created_at      BIGINT NOT NULL,
    PRIMARY KEY (scope, idem_key)
);
