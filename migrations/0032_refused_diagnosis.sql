-- Refused webhooks as the console shows them (issue 28, D): where each came
-- from (the peer address the server saw) and, where the reason allows one,
-- a diagnosis (its kind, and a sentence for people).
ALTER TABLE refused_callbacks ADD COLUMN source_addr TEXT NULL;
ALTER TABLE refused_callbacks ADD COLUMN diagnosis TEXT NULL;
ALTER TABLE refused_callbacks ADD COLUMN diagnosis_detail TEXT NULL;
-- The list of every provider, newest first.
CREATE INDEX refused_callbacks_received ON refused_callbacks (received_at, id);
-- Signature failures counted per provider in 10-second buckets, every one
-- of them (also those the rate bound did not keep a row of): the spike alert
-- reads a sliding window of them. Old buckets are pruned.
CREATE TABLE refused_tally (
    provider  TEXT NOT NULL,
    bucket    BIGINT NOT NULL,
    failures  BIGINT NOT NULL,
    PRIMARY KEY (provider, bucket)
);
-- A provider's current spell of failures over the threshold: it goes on while
-- the threshold is passed again within the window; one alert per spell.
CREATE TABLE refused_spells (
    provider     TEXT PRIMARY KEY,
    spell_start  BIGINT NOT NULL,
    last_over    BIGINT NOT NULL
);
