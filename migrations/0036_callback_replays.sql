-- A replay's own result, kept beside the callback's original outcome: who
-- replayed it and when, what the replay did (its class and words) and any
-- error, one row per replay.
CREATE TABLE callback_replays (
    id              TEXT PRIMARY KEY,
    callback_row_id TEXT NOT NULL REFERENCES payment_callbacks (id),
    at              BIGINT NOT NULL,
    actor           TEXT NOT NULL,
    class           TEXT NOT NULL,
    detail          TEXT NOT NULL,
    error           TEXT NULL,
    job             TEXT NULL
);
CREATE INDEX callback_replays_row ON callback_replays (callback_row_id, at);
-- The callback's processing as received, kept when it is first replayed
-- (a replay moves its processing state on; these never move again).
ALTER TABLE payment_callbacks ADD COLUMN original_status TEXT NULL;
ALTER TABLE payment_callbacks ADD COLUMN original_outcome TEXT NULL;
ALTER TABLE payment_callbacks ADD COLUMN original_error TEXT NULL;
ALTER TABLE payment_callbacks ADD COLUMN original_processed_at BIGINT NULL;
-- How many times each distinct body of a redelivery arrived: identical
-- redeliveries are counted, not mistaken for other bytes.
ALTER TABLE callback_redeliveries ADD COLUMN deliveries BIGINT NOT NULL DEFAULT 1;
