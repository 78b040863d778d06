-- An alert whose cause has gone is resolved, not left open: an SLA alert
-- (and an alert raised under its ticket's own key) when its ticket closes.
-- The list pages newest first by (created_at, alert_id), or by kind.

ALTER TABLE alerts ADD COLUMN resolved_at BIGINT NULL;
ALTER TABLE alerts ADD COLUMN resolved_reason TEXT NULL;

-- Alerts whose ticket closed before alerts could resolve: those raised
-- with the ticket (same key), then the SLA alerts (`sla:<ticket id>`).
UPDATE alerts SET
    resolved_at = (SELECT COALESCE(d.closed_at, d.updated_at, alerts.created_at)
                   FROM discrepancies d WHERE d.dedupe_key = alerts.dedupe_key),
    resolved_reason = 'ticket closed'
WHERE resolved_at IS NULL AND EXISTS (
    SELECT 1 FROM discrepancies d WHERE d.dedupe_key = alerts.dedupe_key AND d.status = 'CLOSED');
UPDATE alerts SET
    resolved_at = (SELECT COALESCE(d.closed_at, d.updated_at, alerts.created_at)
                   FROM discrepancies d WHERE d.discrepancy_id = SUBSTR(alerts.dedupe_key, 5)),
    resolved_reason = 'ticket closed'
WHERE kind = 'sla_overdue' AND resolved_at IS NULL AND EXISTS (
    SELECT 1 FROM discrepancies d
    WHERE d.discrepancy_id = SUBSTR(alerts.dedupe_key, 5) AND d.status = 'CLOSED');

CREATE INDEX alerts_listed ON alerts (created_at, alert_id);
CREATE INDEX alerts_kind ON alerts (kind, created_at, alert_id);
