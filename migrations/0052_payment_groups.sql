-- Grouped matches on the payments side: several local payments that
-- together are one statement row (PAYMENTS_TO_ROW, a combined payment), or
-- one payment captured as several rows (ROWS_TO_PAYMENT), in the same
-- match_groups as the bank's. A group of a run is of one provider account
-- and business day, so the day's re-run (and the next day's) finds the
-- approved ones and counts their rows and payments matched.
ALTER TABLE match_groups ADD COLUMN business_date TEXT NULL;
CREATE INDEX match_groups_day ON match_groups (provider, business_date);

-- A side that is a payment (payment_no), or a statement row (run_id,
-- line_no, provider_txn_id). Their side is PAYMENT or ROW.
ALTER TABLE match_group_members ADD COLUMN payment_no TEXT NULL;
ALTER TABLE match_group_members ADD COLUMN run_id TEXT NULL;
ALTER TABLE match_group_members ADD COLUMN line_no BIGINT NULL;
ALTER TABLE match_group_members ADD COLUMN provider_txn_id TEXT NULL;
