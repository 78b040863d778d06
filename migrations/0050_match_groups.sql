-- Grouped matches on the bank side: several payouts that together are one
-- bank credit (N:1), or one payout paid as several credits (1:N), found by
-- the matching pass and proposed, never applied, until people approve. One
-- row per group found for an anchor (the credit of an N:1, the payout of a
-- 1:N) and set of members, so a pass repeated finds it already recorded and
-- a rejected group is not proposed again. `status`: PROPOSED (its fix
-- proposal waits, or was rejected or expired: the proposal says which),
-- MATCHED once approved, AMBIGUOUS (more than one covering set: nothing
-- proposed, the anchor's ticket says so) or TOO_MANY (more candidates than
-- the search takes). `members_key` names the members (for AMBIGUOUS, every
-- covering set), sorted.
CREATE TABLE match_groups (
    group_id     TEXT PRIMARY KEY,
    -- N_TO_ONE (payouts → one credit) | ONE_TO_N (one payout → credits)
    shape        TEXT NOT NULL,
    provider     TEXT NOT NULL,
    currency     TEXT NOT NULL,
    total_minor  BIGINT NOT NULL,
    anchor       TEXT NOT NULL,
    members_key  TEXT NOT NULL,
    status       TEXT NOT NULL,
    -- the anchor's ticket, where the proposal or the ambiguity is written
    ticket_id    TEXT NULL,
    proposal_id  TEXT NULL,
    found_at     BIGINT NOT NULL,
    decided_at   BIGINT NULL
);
CREATE UNIQUE INDEX match_groups_found ON match_groups (anchor, members_key);
CREATE INDEX match_groups_ticket ON match_groups (ticket_id);

-- A group's sides: the anchor and each member, a payout (provider,
-- payout_id) or a bank credit (entry_id), with its amount and day as the
-- group was found, and the dedupe key of its ticket (BANK_ONLY or
-- PAYOUT_MISSING), so every member's ticket resolves with the group and
-- shows its proposal.
CREATE TABLE match_group_members (
    group_id     TEXT NOT NULL REFERENCES match_groups (group_id) ON DELETE CASCADE,
    -- ANCHOR | MEMBER
    role         TEXT NOT NULL,
    -- PAYOUT | CREDIT
    side         TEXT NOT NULL,
    provider     TEXT NULL,
    payout_id    TEXT NULL,
    entry_id     TEXT NULL,
    amount_minor BIGINT NOT NULL,
    on_date      TEXT NOT NULL,
    ticket_key   TEXT NOT NULL,
    PRIMARY KEY (group_id, ticket_key)
);
CREATE INDEX match_group_members_ticket ON match_group_members (ticket_key);

-- The approved group a payout or a bank credit was settled in.
ALTER TABLE payouts ADD COLUMN group_id TEXT NULL;
ALTER TABLE bank_entries ADD COLUMN group_id TEXT NULL;
