-- The console's lists at a million payments (see BENCHMARKS.md): payments
-- by status and by amount in keyset order, tickets of one owner counted
-- per class. (status, updated_at) served no query and moved on every
-- update; (status, created_at) moves only when the status does.
DROP INDEX payments_status_updated;
CREATE INDEX payments_status_created ON payments (status, created_at, payment_no);
CREATE INDEX payments_amount ON payments (amount_minor, created_at, payment_no);
CREATE INDEX discrepancies_owner_class ON discrepancies (owner, class);
