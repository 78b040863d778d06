-- The balance side of a provider that keeps the merchant's money in an
-- account before the bank (WeChat Pay's fund-flow bill, Alipay's 账务明细):
-- a day's balance bill read and compared with the day's trade run, once
-- per provider and day. WAITING: the bill is not there yet; REFUSED: it
-- did not read or its totals disagreed (nothing of it kept); AGREED or
-- DIFFERS: the trade net against the balance's movements, per currency in
-- figures_json.
CREATE TABLE settlements (
    provider TEXT NOT NULL,
    business_date TEXT NOT NULL,
    state TEXT NOT NULL,
    run_id TEXT NULL,
    bill_type TEXT NULL,
    bill_sha256 TEXT NULL,
    movements BIGINT NOT NULL DEFAULT 0,
    figures_json TEXT NULL,
    error TEXT NULL,
    tries BIGINT NOT NULL DEFAULT 0,
    next_try_at BIGINT NOT NULL DEFAULT 0,
    updated_at BIGINT NOT NULL,
    PRIMARY KEY (provider, business_date),
    CHECK (state IN ('WAITING', 'REFUSED', 'AGREED', 'DIFFERS'))
);
