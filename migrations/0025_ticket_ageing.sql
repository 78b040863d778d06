-- Ticket ageing and SLA (issue 27, item 2).

-- When the SLA alert of a ticket was raised: the worker's pass marks the
-- ticket in the same statement that picks it, so the alert is raised once.
ALTER TABLE discrepancies ADD COLUMN sla_alerted_at BIGINT NULL;

-- The day's change: tickets found, and tickets closed, in a time range.
CREATE INDEX discrepancies_found ON discrepancies (found_at);
CREATE INDEX discrepancies_closed ON discrepancies (closed_at);

-- Open tickets only (a small part of the table once days are worked):
-- their ages per class for the dashboard, walked without the closed ones.
CREATE INDEX discrepancies_open_age ON discrepancies (provider, class, found_at) WHERE status <> 'CLOSED';

-- The SLA pass's queue: open tickets not yet alerted, oldest first. An
-- entry leaves it when its alert is raised or the ticket closes.
CREATE INDEX discrepancies_sla_due ON discrepancies (found_at) WHERE status <> 'CLOSED' AND sla_alerted_at IS NULL;
