-- The provider's fee on each statement row (WeChat Pay's 手续费, Alipay's
-- 服务费, Stripe's fee) in the row currency's minor units: positive for a
-- fee the merchant paid, negative for one given back; NULL where the
-- statement has no fee column.
ALTER TABLE recon_rows ADD COLUMN fee_minor BIGINT NULL;
