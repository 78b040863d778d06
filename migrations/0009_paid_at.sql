-- When a payment became SUCCEEDED: reconciliation counts a paid payment on
-- the business day it was paid (as statements do), not the day it was made.
ALTER TABLE payments ADD COLUMN paid_at BIGINT NULL;
UPDATE payments SET paid_at = (
    SELECT MIN(h.at) FROM payment_status_history h
    WHERE h.payment_no = payments.payment_no AND h.to_status = 'SUCCEEDED'
) WHERE status IN ('SUCCEEDED', 'REFUNDING', 'REFUNDED');
