-- A payment held by reconciliation (LOCAL_ONLY: no effect delivered;
-- ONE_TO_MANY: locked) until a person decides. NULL: not held.
ALTER TABLE payments ADD COLUMN hold_reason TEXT NULL;
