-- (status, severity, found_at) serves nothing that the queue's
-- (status, severity_rank, found_at, discrepancy_id) does not, and every
-- ticket a reconciliation writes paid for an entry in it. (Making the two
-- owner indexes partial, `WHERE owner IS NOT NULL`, was tried and dropped:
-- the "unassigned" list went from 15 to 110 ms at 100,000 tickets.)
DROP INDEX discrepancies_open;
