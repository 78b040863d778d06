-- Holds in a table of their own, not a column of `payments`. A
-- reconciliation holds thousands of payments scattered over the table
-- (5,000 LOCAL_ONLY of a million-payment day): each one rewrote a page of
-- `payments`, 20 MB of write-ahead log and page cache, about 150 ms of the
-- run's write; as rows here they are a few pages (7 ms). Every check of a
-- hold (the guarded move, refund reservations, outbox delivery, a fix's
-- approval) looks here by payment_no.
CREATE TABLE payment_holds (
    payment_no  TEXT PRIMARY KEY REFERENCES payments (payment_no),
    reason      TEXT NOT NULL,
    held_at     BIGINT NOT NULL
);
INSERT INTO payment_holds (payment_no, reason, held_at)
    SELECT payment_no, hold_reason, updated_at FROM payments WHERE hold_reason IS NOT NULL;
ALTER TABLE payments DROP COLUMN hold_reason;
