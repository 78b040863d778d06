-- Alert channels (issue 28, C): which alerts were routed to the channels,
-- each alert's fate per channel (sent at once, or held for a digest), and
-- each (channel, kind)'s grouping window.

ALTER TABLE alerts ADD COLUMN routed_at BIGINT NULL;
ALTER TABLE alerts ADD COLUMN route_lease_until BIGINT NULL;
-- Alerts raised before there were channels are history, not news: they are
-- not sent when the first channel is configured.
UPDATE alerts SET routed_at = created_at;
CREATE INDEX alerts_unrouted ON alerts (created_at) WHERE routed_at IS NULL;

-- One row per alert and channel it matched. status: HELD (waiting for its
-- window's end or quiet hours' end) | SENT (message_id carried it).
CREATE TABLE alert_routes (
    alert_id   TEXT NOT NULL,
    channel    TEXT NOT NULL,
    kind       TEXT NOT NULL,
    status     TEXT NOT NULL,
    message_id TEXT NULL,
    routed_at  BIGINT NOT NULL,
    sent_at    BIGINT NULL,
    PRIMARY KEY (alert_id, channel)
);
CREATE INDEX alert_routes_held ON alert_routes (status, channel, kind);
CREATE INDEX alert_routes_message ON alert_routes (message_id);

-- A (channel, kind) whose last message went out at open_from: until
-- open_until its further alerts are held for one digest.
CREATE TABLE alert_windows (
    channel    TEXT NOT NULL,
    kind       TEXT NOT NULL,
    open_from  BIGINT NOT NULL,
    open_until BIGINT NOT NULL,
    PRIMARY KEY (channel, kind)
);
