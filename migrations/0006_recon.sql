-- Reconciliation: a run per provider statement and business day, its rows
-- staged for matching (so memory does not grow with the statement), and
-- the discrepancy ticket's remaining fields.

CREATE TABLE recon_runs (
    run_id         TEXT PRIMARY KEY,
    provider       TEXT NOT NULL,
    -- YYYY-MM-DD in the configured business time zone
    business_date  TEXT NOT NULL,
    -- upload | import | pull
    source         TEXT NOT NULL,
    file_name      TEXT NULL,
    file_hash      TEXT NULL,
    -- RUNNING | FAILED | COMPLETED
    status         TEXT NOT NULL,
    -- where an interrupted pull goes on
    cursor         TEXT NULL,
    rows_read      BIGINT NOT NULL DEFAULT 0,
    -- what the statement's own summary says (JSON), and what was read
    summary_json   TEXT NULL,
    figures_json   TEXT NULL,
    error          TEXT NULL,
    started_by     TEXT NOT NULL,
    started_at     BIGINT NOT NULL,
    finished_at    BIGINT NULL
);
CREATE INDEX recon_runs_day ON recon_runs (provider, business_date, started_at);

CREATE TABLE recon_rows (
    run_id             TEXT NOT NULL,
    line_no            BIGINT NOT NULL,
    -- payment | refund
    kind               TEXT NOT NULL,
    provider_txn_id    TEXT NULL,
    payment_no         TEXT NULL,
    refund_no          TEXT NULL,
    provider_refund_id TEXT NULL,
    amount_minor       BIGINT NOT NULL,
    currency           TEXT NOT NULL,
    -- SUCCEEDED (paid / refunded), or the provider's other final word
    status             TEXT NOT NULL,
    occurred_at        BIGINT NULL,
    PRIMARY KEY (run_id, line_no)
);
CREATE INDEX recon_rows_txn ON recon_rows (run_id, provider_txn_id);
CREATE INDEX recon_rows_payment ON recon_rows (run_id, payment_no);
CREATE INDEX recon_rows_refund ON recon_rows (run_id, refund_no);

ALTER TABLE discrepancies ADD COLUMN run_id TEXT NULL;
ALTER TABLE discrepancies ADD COLUMN business_date TEXT NULL;
ALTER TABLE discrepancies ADD COLUMN order_no TEXT NULL;
ALTER TABLE discrepancies ADD COLUMN statement_file TEXT NULL;
ALTER TABLE discrepancies ADD COLUMN range_start BIGINT NULL;
ALTER TABLE discrepancies ADD COLUMN range_end BIGINT NULL;
ALTER TABLE discrepancies ADD COLUMN line_no BIGINT NULL;
ALTER TABLE discrepancies ADD COLUMN owner TEXT NULL;
-- JSON arrays: what Reckon did by itself, and what people attached
ALTER TABLE discrepancies ADD COLUMN actions TEXT NOT NULL DEFAULT '[]';
ALTER TABLE discrepancies ADD COLUMN conclusion TEXT NULL;
ALTER TABLE discrepancies ADD COLUMN evidence TEXT NOT NULL DEFAULT '[]';
ALTER TABLE discrepancies ADD COLUMN updated_at BIGINT NULL;
CREATE INDEX discrepancies_day ON discrepancies (provider, business_date);
