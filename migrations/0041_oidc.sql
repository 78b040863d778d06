-- Sign-in through an OpenID Provider. An identity is the provider's
-- (issuer, subject) pair, bound to one console user: made when the user is
-- created by the first sign-in, or on the host (`reckon user add
-- --oidc-subject`). A user has at most one identity per issuer.
CREATE TABLE user_identities (
    issuer        TEXT NOT NULL,
    subject       TEXT NOT NULL,
    user_id       TEXT NOT NULL REFERENCES users (id),
    created_at    BIGINT NOT NULL,
    last_login_at BIGINT NULL,
    PRIMARY KEY (issuer, subject)
);

CREATE UNIQUE INDEX user_identities_user ON user_identities (user_id, issuer);

-- Sign-ins sent to the provider and not back yet: the state the provider
-- echoes, the nonce its ID token must carry, the PKCE verifier, and a hash
-- of the browser's own cookie, so a callback is taken only once, only from
-- the browser that started it, and only for a few minutes.
CREATE TABLE oidc_flows (
    state      TEXT PRIMARY KEY,
    browser    TEXT NOT NULL,
    nonce      TEXT NOT NULL,
    verifier   TEXT NOT NULL,
    created_at BIGINT NOT NULL
);

CREATE INDEX oidc_flows_created ON oidc_flows (created_at);
