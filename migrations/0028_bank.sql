-- The third side: the bank's statements as imported (one row per file,
-- unique by the SHA-256 of its bytes so a second import of the same file
-- changes nothing), their entries, and the payouts the providers reported,
-- each payout matched to at most one bank credit.
CREATE TABLE bank_statements (
    statement_id   TEXT PRIMARY KEY,
    sha256         TEXT NOT NULL UNIQUE,
    format         TEXT NOT NULL,
    file_name      TEXT NULL,
    -- the account the bank reports (IBAN or its own id), as the file names it
    account        TEXT NULL,
    -- the bank's own id of the statement (CAMT Stmt/Id)
    bank_ref       TEXT NULL,
    entries        BIGINT NOT NULL,
    credits        BIGINT NOT NULL,
    imported_by    TEXT NOT NULL,
    imported_at    BIGINT NOT NULL
);

-- One booked entry of a bank statement: amounts positive in minor units,
-- the direction CRDT (money in) or DBIT; `provider_kind` is the payment
-- provider the entry's counterparty or text names (only those credits are
-- matched against payouts); `state` is UNMATCHED, MATCHED, BANK_ONLY or
-- OUT_OF_SCOPE (debits, and credits naming no provider).
CREATE TABLE bank_entries (
    entry_id       TEXT PRIMARY KEY,
    statement_id   TEXT NOT NULL REFERENCES bank_statements (statement_id) ON DELETE CASCADE,
    line_no        BIGINT NOT NULL,
    booked_on      TEXT NOT NULL,
    value_on       TEXT NULL,
    amount_minor   BIGINT NOT NULL,
    currency       TEXT NOT NULL,
    direction      TEXT NOT NULL,
    bank_ref       TEXT NULL,
    end_to_end_id  TEXT NULL,
    remittance     TEXT NULL,
    counterparty   TEXT NULL,
    provider_kind  TEXT NULL,
    state          TEXT NOT NULL
);
CREATE INDEX bank_entries_state ON bank_entries (state, booked_on);
CREATE INDEX bank_entries_statement ON bank_entries (statement_id, line_no);

-- A provider's payout to the bank (Stripe's po_…), as its statement pulls
-- saw it. `state`: PENDING until matched or past its window, then
-- PAYOUT_MATCHED, PAYOUT_MISSING or PAYOUT_AMOUNT_MISMATCH (NOT_SENT for a
-- failed or cancelled one); `entry_id` the bank credit it was matched to.
-- `net_state`: whether the payout equals the net of the transactions it
-- settles — UNCHECKED (to ask the provider), EQUAL, DIFFERS (a ticket), or
-- NOT_DERIVABLE (a manual payout, or a provider that cannot say);
-- `settled_net_minor` that net.
CREATE TABLE payouts (
    provider       TEXT NOT NULL,
    payout_id      TEXT NOT NULL,
    provider_kind  TEXT NOT NULL,
    amount_minor   BIGINT NOT NULL,
    currency       TEXT NOT NULL,
    arrival_on     TEXT NOT NULL,
    descriptor     TEXT NULL,
    status         TEXT NOT NULL,
    run_id         TEXT NULL,
    seen_at        BIGINT NOT NULL,
    state          TEXT NOT NULL,
    entry_id       TEXT NULL,
    decided_at     BIGINT NULL,
    automatic      INTEGER NOT NULL,
    net_state      TEXT NOT NULL,
    settled_net_minor BIGINT NULL,
    PRIMARY KEY (provider, payout_id)
);
CREATE INDEX payouts_state ON payouts (state, arrival_on);
CREATE INDEX payouts_net ON payouts (net_state);
