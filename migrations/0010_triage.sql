-- Triage: tickets ordered by severity, people's notes and evidence on them,
-- fix proposals under the two-person rule, and recorded amount adjustments.

-- Severity as a number, so "most severe first, oldest first" is an index
-- walk (keyset pagination) rather than a sort of every ticket.
ALTER TABLE discrepancies ADD COLUMN severity_rank INTEGER NOT NULL DEFAULT 1;
UPDATE discrepancies SET severity_rank = CASE severity
    WHEN 'CRITICAL' THEN 4 WHEN 'HIGH' THEN 3 WHEN 'MEDIUM' THEN 2 ELSE 1 END;
CREATE INDEX discrepancies_queue ON discrepancies (severity_rank DESC, found_at, discrepancy_id);
CREATE INDEX discrepancies_status_queue ON discrepancies (status, severity_rank DESC, found_at, discrepancy_id);
CREATE INDEX discrepancies_payment ON discrepancies (payment_no);
CREATE INDEX discrepancies_txn ON discrepancies (provider_txn_id);
CREATE INDEX discrepancies_order ON discrepancies (order_no);
CREATE INDEX discrepancies_owner ON discrepancies (owner, status);
CREATE INDEX discrepancies_run ON discrepancies (run_id);

-- What people wrote on a ticket: comments, assignments, evidence (text, a
-- reference, or a small file kept here), conclusions, low-risk actions.
CREATE TABLE ticket_notes (
    note_id        TEXT PRIMARY KEY,
    discrepancy_id TEXT NOT NULL,
    -- comment | assign | evidence_text | evidence_ref | evidence_file |
    -- conclusion | action | proposal
    kind           TEXT NOT NULL,
    body           TEXT NOT NULL,
    file_name      TEXT NULL,
    content_type   TEXT NULL,
    file_bytes     BYTEA NULL,
    file_size      BIGINT NULL,
    author         TEXT NOT NULL,
    at             BIGINT NOT NULL
);
CREATE INDEX ticket_notes_ticket ON ticket_notes (discrepancy_id, at);

-- A fix someone proposes and another supervisor decides. The database
-- refuses a decision by the proposer (the CHECK), and only one decision
-- is ever recorded (the approval is a conditional UPDATE on PENDING).
CREATE TABLE fix_proposals (
    proposal_id      TEXT PRIMARY KEY,
    discrepancy_id   TEXT NOT NULL,
    -- BACKFILL | CLOSE_PAYMENT | ACCEPT_AMOUNT | MERGE | RELEASE_HOLD
    kind             TEXT NOT NULL,
    payment_no       TEXT NULL,
    -- the payment's version when proposed; NULL: it did not exist
    payment_version  BIGINT NULL,
    before_json      TEXT NOT NULL,
    after_json       TEXT NOT NULL,
    reason           TEXT NOT NULL,
    evidence         TEXT NOT NULL,
    proposer_id      TEXT NOT NULL,
    proposer_name    TEXT NOT NULL,
    proposed_at      BIGINT NOT NULL,
    expires_at       BIGINT NOT NULL,
    -- PENDING | EXECUTED | REJECTED | FAILED | SUPERSEDED
    status           TEXT NOT NULL,
    -- set when execution found the payment changed since the proposal
    stale_reason     TEXT NULL,
    decided_by_id    TEXT NULL,
    decided_by_name  TEXT NULL,
    decided_at       BIGINT NULL,
    decision_comment TEXT NULL,
    result           TEXT NULL,
    CONSTRAINT fix_proposals_not_own CHECK (decided_by_id IS NULL OR decided_by_id <> proposer_id)
);
CREATE INDEX fix_proposals_queue ON fix_proposals (status, proposed_at);
CREATE INDEX fix_proposals_ticket ON fix_proposals (discrepancy_id, proposed_at);
-- At most one open proposal per ticket.
CREATE UNIQUE INDEX fix_proposals_one_pending ON fix_proposals (discrepancy_id) WHERE status = 'PENDING';

-- An accepted provider amount: the original stays on record here, the
-- payment carries the accepted one from then on.
CREATE TABLE payment_adjustments (
    adjustment_id     TEXT PRIMARY KEY,
    payment_no        TEXT NOT NULL,
    proposal_id       TEXT NOT NULL,
    before_minor      BIGINT NOT NULL,
    after_minor       BIGINT NOT NULL,
    difference_minor  BIGINT NOT NULL,
    currency          TEXT NOT NULL,
    at                BIGINT NOT NULL
);
CREATE INDEX payment_adjustments_payment ON payment_adjustments (payment_no);

CREATE INDEX audit_log_action ON audit_log (action, seq);
CREATE INDEX audit_log_at ON audit_log (at);
