-- The approval policy: how many distinct approvers each action needs, with
-- amount thresholds per currency. Each version is a row: its body (JSON),
-- the body's digest, who proposed it and when, and when it was in force.
-- A change is itself a proposal (status PENDING) approved under the policy
-- in force; it gets its version number when it becomes ACTIVE. No active
-- row: the built-in default (version 0), which is one approver for all.
CREATE TABLE approval_policies (
    policy_id TEXT PRIMARY KEY,
    version BIGINT NULL,
    body_json TEXT NOT NULL,
    digest TEXT NOT NULL,
    reason TEXT NOT NULL,
    status TEXT NOT NULL,
    proposer_id TEXT NOT NULL,
    proposer_name TEXT NOT NULL,
    proposed_at BIGINT NOT NULL,
    required_approvals BIGINT NOT NULL CHECK (required_approvals >= 1),
    approval_count BIGINT NOT NULL DEFAULT 0,
    decided_by_name TEXT NULL,
    decided_at BIGINT NULL,
    active_from BIGINT NULL,
    active_until BIGINT NULL
);
CREATE UNIQUE INDEX approval_policies_version ON approval_policies (version);
CREATE UNIQUE INDEX approval_policies_one_pending ON approval_policies (status) WHERE status = 'PENDING';
CREATE UNIQUE INDEX approval_policies_one_active ON approval_policies (status) WHERE status = 'ACTIVE';

-- One row per (thing proposed, approver): the same person never counts
-- twice, and never for what they proposed. `subject` is fix, reopen or
-- policy; `subject_id` the proposal's id in its own table; `ordinal` is
-- 1 for the first approval of it, 2 for the second, ...
CREATE TABLE approvals (
    subject TEXT NOT NULL,
    subject_id TEXT NOT NULL,
    approver_id TEXT NOT NULL,
    approver_name TEXT NOT NULL,
    proposer_id TEXT NOT NULL,
    approved_at BIGINT NOT NULL,
    ordinal BIGINT NOT NULL,
    comment TEXT NOT NULL,
    PRIMARY KEY (subject, subject_id, approver_id),
    CONSTRAINT approvals_one_per_place UNIQUE (subject, subject_id, ordinal),
    CONSTRAINT approvals_not_own CHECK (approver_id <> proposer_id)
);

-- What a proposal needs is fixed when it is proposed, from the policy then
-- in force (its version kept beside it); a later policy never changes it.
-- approval_count is touched by every approval so that two approvers at
-- once take turns on the proposal's row.
ALTER TABLE fix_proposals ADD COLUMN required_approvals BIGINT NOT NULL DEFAULT 1 CHECK (required_approvals >= 1);
ALTER TABLE fix_proposals ADD COLUMN approval_count BIGINT NOT NULL DEFAULT 0;
ALTER TABLE fix_proposals ADD COLUMN policy_version BIGINT NOT NULL DEFAULT 0;
ALTER TABLE day_reopens ADD COLUMN required_approvals BIGINT NOT NULL DEFAULT 1 CHECK (required_approvals >= 1);
ALTER TABLE day_reopens ADD COLUMN approval_count BIGINT NOT NULL DEFAULT 0;
ALTER TABLE day_reopens ADD COLUMN policy_version BIGINT NOT NULL DEFAULT 0;
