-- API tokens with an owner, scopes and an expiry. A token made before
-- this has none of the three: no owner, scopes NULL (every scope, so an
-- upgrade breaks no merchant integration; the server warns of each such
-- token at start) and no expiry. A new token always names its scopes.
ALTER TABLE api_tokens ADD COLUMN owner_id TEXT NULL;
-- Space-separated scope names (`payments:read recon:write`); NULL: a
-- token from before scopes, allowed every scope.
ALTER TABLE api_tokens ADD COLUMN scopes TEXT NULL;
ALTER TABLE api_tokens ADD COLUMN expires_at BIGINT NULL;
