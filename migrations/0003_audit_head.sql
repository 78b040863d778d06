-- The audit chain's head: one row, updated by every append in the appending
-- transaction. Its row lock lines concurrent appends up on PostgreSQL (SQLite
-- writers are serial anyway), so no two entries ever claim the same place.
CREATE TABLE audit_head (
    id   INTEGER PRIMARY KEY,
    seq  BIGINT NOT NULL,
    hash TEXT NOT NULL
);

INSERT INTO audit_head (id, seq, hash)
VALUES (
    1,
    (SELECT COALESCE(MAX(seq), 0) FROM audit_log),
    COALESCE(
        (SELECT hash FROM audit_log ORDER BY seq DESC LIMIT 1),
        '0000000000000000000000000000000000000000000000000000000000000000'
    )
);
