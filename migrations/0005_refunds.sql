-- Refunds: their own rows and ledger, never a status flip of the payment.
-- The payment carries what is refunded and what is reserved by refunds in
-- flight; a refund request reserves with one conditional UPDATE, so the
-- sum can never exceed the amount.
ALTER TABLE payments ADD COLUMN refunded_minor BIGINT NOT NULL DEFAULT 0;
ALTER TABLE payments ADD COLUMN reserved_minor BIGINT NOT NULL DEFAULT 0;

CREATE TABLE refunds (
    refund_no          TEXT PRIMARY KEY,
    payment_no         TEXT NOT NULL,
    provider           TEXT NOT NULL,
    amount_minor       BIGINT NOT NULL CHECK (amount_minor > 0),
    currency           TEXT NOT NULL,
    -- REQUESTED, PENDING, SUCCEEDED, FAILED
    status             TEXT NOT NULL,
    provider_refund_id TEXT NULL,
    idem_scope         TEXT NOT NULL,
    idem_key           TEXT NOT NULL,
    reason             TEXT NOT NULL,
    requested_by       TEXT NOT NULL,
    version            BIGINT NOT NULL DEFAULT 0,
    last_error         TEXT NULL,
    created_at         BIGINT NOT NULL,
    updated_at         BIGINT NOT NULL,
    finished_at        BIGINT NULL,
    UNIQUE (provider, provider_refund_id),
    UNIQUE (idem_scope, idem_key)
);
CREATE INDEX refunds_payment ON refunds (payment_no, created_at);
CREATE INDEX refunds_status ON refunds (status, updated_at);

-- The ledger: one row per refund that succeeded, written in the same
-- transaction as the refund's move, so it grows once per refund.
CREATE TABLE refund_ledger (
    refund_no    TEXT PRIMARY KEY,
    payment_no   TEXT NOT NULL,
    amount_minor BIGINT NOT NULL,
    currency     TEXT NOT NULL,
    source       TEXT NOT NULL,
    evidence_ref TEXT NOT NULL,
    created_at   BIGINT NOT NULL
);
CREATE INDEX refund_ledger_payment ON refund_ledger (payment_no);

-- Refund tasks (request, status query) name their refund.
ALTER TABLE provider_tasks ADD COLUMN refund_no TEXT NULL;
-- Refund notifications are stored with the payment callbacks and name the
-- refund they report.
ALTER TABLE payment_callbacks ADD COLUMN refund_no TEXT NULL;
