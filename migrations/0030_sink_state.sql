-- Sinks as endpoints (issue 28, helper B): each sink's operational state,
-- shared by every instance on one database. A paused sink's deliveries
-- are not leased (they wait, no attempt spent); the failure counters
-- raise one sink_failing alert per failing spell.

CREATE TABLE sink_state (
    sink                 TEXT PRIMARY KEY,
    -- set while paused; NULL when active
    paused_at            BIGINT NULL,
    paused_by            TEXT NULL,
    pause_reason         TEXT NULL,
    -- attempts failed in a row since the last delivery
    consecutive_failures BIGINT NOT NULL DEFAULT 0,
    -- first failure of the current spell (NULL after a delivery)
    failing_since        BIGINT NULL,
    -- when this spell's sink_failing alert was raised (NULL: not failing)
    failing_alerted_at   BIGINT NULL,
    last_success_at      BIGINT NULL,
    last_failure_at      BIGINT NULL,
    last_error           TEXT NULL
);

-- The sinks page counts each sink's deliveries by status on
-- outbox_deliveries_sink (sink, status), made by 0029.
