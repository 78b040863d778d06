-- What providers really send. A callback's business facts (payment, the
-- provider's transaction id, target status, amount, currency; for a refund
-- its refund facts) in one canonical text: a redelivery with a new
-- envelope (Alipay's notify_time and sign, Stripe's pending_webhooks,
-- WeChat Pay's re-encrypted resource) has other bytes and the same facts.
-- NULL for callbacks stored before; those are compared by their bytes.
ALTER TABLE payment_callbacks ADD COLUMN facts TEXT NULL;

-- Each distinct redelivery of a stored callback: its own bytes' hash and
-- when it came (byte-identical ones are only counted, in `duplicates`).
CREATE TABLE callback_redeliveries (
    callback_row_id TEXT NOT NULL REFERENCES payment_callbacks (id),
    payload_hash    TEXT NOT NULL,
    payload         BYTEA NOT NULL,
    same_facts      INTEGER NOT NULL,
    trace_id        TEXT NOT NULL,
    received_at     BIGINT NOT NULL,
    PRIMARY KEY (callback_row_id, payload_hash)
);

-- Replay nonces (WeChat Pay's Wechatpay-Nonce) seen within the signature
-- tolerance, shared by every instance and kept across restarts.
CREATE TABLE webhook_nonces (
    provider    TEXT NOT NULL,
    nonce       TEXT NOT NULL,
    expires_at  BIGINT NOT NULL,
    PRIMARY KEY (provider, nonce)
);
CREATE INDEX webhook_nonces_expiry ON webhook_nonces (expires_at);
