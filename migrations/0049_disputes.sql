-- A provider's dispute (chargeback, inquiry) as a lifecycle: one row per
-- provider and dispute id, moved only forward by the provider's event time
-- and status order (a late older event is kept in its history, not applied).
-- Money it moved is one row per balance movement (a Stripe balance
-- transaction, an Adyen chargeback or its reversal), inserted once by its
-- own id, so a redelivered or reordered event counts nothing twice.
CREATE TABLE disputes (
    provider TEXT NOT NULL,
    dispute_id TEXT NOT NULL,
    payment_no TEXT NULL,
    provider_txn_id TEXT NULL,
    amount_minor BIGINT NOT NULL,
    currency TEXT NOT NULL,
    reason TEXT NULL,
    status TEXT NOT NULL,
    provider_status TEXT NOT NULL,
    status_rank BIGINT NOT NULL,
    evidence_due_at BIGINT NULL,
    last_event_at BIGINT NOT NULL,
    opened_at BIGINT NOT NULL,
    closed_at BIGINT NULL,
    ticket_id TEXT NULL,
    updated_at BIGINT NOT NULL,
    PRIMARY KEY (provider, dispute_id)
);
CREATE INDEX disputes_payment ON disputes (payment_no);
CREATE INDEX disputes_open ON disputes (closed_at, provider);

-- Each verified dispute notification as it was read, applied or not.
CREATE TABLE dispute_events (
    provider TEXT NOT NULL,
    dispute_id TEXT NOT NULL,
    callback_row TEXT NOT NULL,
    event_type TEXT NOT NULL,
    status TEXT NOT NULL,
    provider_status TEXT NOT NULL,
    event_at BIGINT NOT NULL,
    applied BIGINT NOT NULL,
    received_at BIGINT NOT NULL,
    PRIMARY KEY (provider, callback_row)
);
CREATE INDEX dispute_events_dispute ON dispute_events (provider, dispute_id, event_at);

-- WITHDRAWN (taken from the balance), REINSTATED (given back), each with
-- the provider's dispute fee on it, at the provider's time of it.
CREATE TABLE dispute_movements (
    provider TEXT NOT NULL,
    movement_id TEXT NOT NULL,
    dispute_id TEXT NOT NULL,
    kind TEXT NOT NULL,
    amount_minor BIGINT NOT NULL,
    fee_minor BIGINT NOT NULL,
    currency TEXT NOT NULL,
    moved_at BIGINT NOT NULL,
    PRIMARY KEY (provider, movement_id)
);
CREATE INDEX dispute_movements_dispute ON dispute_movements (provider, dispute_id);
CREATE INDEX dispute_movements_day ON dispute_movements (provider, moved_at);

-- A ticket whose due time is not found_at + its class's hours (a
-- dispute's evidence due date); NULL: the class's SLA.
ALTER TABLE discrepancies ADD COLUMN sla_due_at BIGINT NULL;
CREATE INDEX discrepancies_sla_override ON discrepancies (sla_due_at) WHERE sla_due_at IS NOT NULL AND status <> 'CLOSED' AND sla_alerted_at IS NULL;
