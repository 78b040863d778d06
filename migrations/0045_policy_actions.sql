-- The approval policy reaches the actions that are not proposals of their
-- own: a change of the settings, a role grant, and actions held until
-- approved (a sink's pause, a large bulk resend, a user's creation, a
-- token that can write). Each counts its approvals in `approvals` as a fix
-- does: the count it needs fixed when proposed, approval_count touched by
-- every approval so two approvers at once take turns on the row.
ALTER TABLE config_versions ADD COLUMN required_approvals BIGINT NOT NULL DEFAULT 1 CHECK (required_approvals >= 1);
ALTER TABLE config_versions ADD COLUMN approval_count BIGINT NOT NULL DEFAULT 0;

-- A console grant of a deciding role gets its own id, so the confirmations
-- of an earlier grant of the same user never count for a later one.
ALTER TABLE users ADD COLUMN role_grant_id TEXT NULL;
ALTER TABLE users ADD COLUMN role_confirmations BIGINT NOT NULL DEFAULT 0;
ALTER TABLE users ADD COLUMN role_confirmations_required BIGINT NOT NULL DEFAULT 1 CHECK (role_confirmations_required >= 1);
-- A grant pending before this migration gets its id now (one confirmation,
-- as it was made), so a second admin can still confirm it.
UPDATE users SET role_grant_id = 'grant-' || id WHERE role <> 'operator' AND role_confirmed_at IS NULL;

-- An action held until approved. `params_json` is what runs when the last
-- approval needed is given, in that approval's transaction; a secret's
-- hash it carries (a new user's password, a new token's) is cleared when
-- the action is decided. `outcome` says what ran (a job's id, a user's).
CREATE TABLE held_actions (
    action_id TEXT PRIMARY KEY,
    action TEXT NOT NULL,
    object_id TEXT NOT NULL,
    summary TEXT NOT NULL,
    reason TEXT NOT NULL,
    params_json TEXT NOT NULL,
    status TEXT NOT NULL,
    proposer_id TEXT NOT NULL,
    proposer_name TEXT NOT NULL,
    proposed_at BIGINT NOT NULL,
    required_approvals BIGINT NOT NULL CHECK (required_approvals >= 1),
    approval_count BIGINT NOT NULL DEFAULT 0,
    policy_version BIGINT NOT NULL DEFAULT 0,
    decided_by_name TEXT NULL,
    decided_at BIGINT NULL,
    outcome TEXT NULL,
    CHECK (status IN ('PENDING', 'DONE', 'REJECTED', 'WITHDRAWN')),
    CHECK (action IN ('SINK_PAUSE', 'BULK_RESEND', 'USER_CREATE', 'TOKEN_CREATE'))
);
CREATE INDEX held_actions_pending ON held_actions (status, proposed_at);
-- One pending action per thing it acts on (a sink, a username, a token name).
CREATE UNIQUE INDEX held_actions_one_pending ON held_actions (action, object_id) WHERE status = 'PENDING';
