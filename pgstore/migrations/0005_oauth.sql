-- OAuth 2.1 for the MCP server. Tokens are stored by the SHA-256 of their
-- HMAC signature (token_hash), never as tokens; client secrets by their
-- SHA-256. A grant is one consent: one client, one user, one team.
CREATE TABLE oauth_clients (
    id            text COLLATE "C" PRIMARY KEY,
    secret_hash   bytea,
    auth_method   text NOT NULL,
    name          text NOT NULL,
    redirect_uris text[] NOT NULL,
    scopes        text[] NOT NULL,
    created_at    timestamptz NOT NULL
);

-- Authorization requests waiting on the consent page.
CREATE TABLE oauth_requests (
    id         text COLLATE "C" PRIMARY KEY,
    client_id  text NOT NULL,
    user_id    text NOT NULL,
    csrf_hash  bytea NOT NULL,
    query      text NOT NULL,
    expires_at timestamptz NOT NULL
);
CREATE INDEX oauth_requests_expiry ON oauth_requests (expires_at);

CREATE TABLE oauth_grants (
    id           text COLLATE "C" PRIMARY KEY,
    client_id    text NOT NULL,
    user_id      text NOT NULL,
    team_id      text NOT NULL,
    scopes       text[] NOT NULL,
    all_projects boolean NOT NULL,
    project_ids  text[] NOT NULL DEFAULT '{}',
    created_at   timestamptz NOT NULL,
    revoked_at   timestamptz
);
CREATE INDEX oauth_grants_user ON oauth_grants (user_id, created_at DESC, id DESC) WHERE revoked_at IS NULL;

-- Codes, access and refresh tokens. A used code or rotated refresh token
-- stays (used_at set) until it expires, so a replay is recognized.
CREATE TABLE oauth_tokens (
    token_hash       bytea PRIMARY KEY,
    kind             text NOT NULL CHECK (kind IN ('code', 'access', 'refresh')),
    grant_id         text NOT NULL REFERENCES oauth_grants (id) ON DELETE CASCADE,
    client_id        text NOT NULL,
    scopes           text[] NOT NULL,
    audience         text[] NOT NULL,
    redirect_uri     text NOT NULL DEFAULT '',
    challenge        text NOT NULL DEFAULT '',
    challenge_method text NOT NULL DEFAULT '',
    requested_at     timestamptz NOT NULL,
    expires_at       timestamptz NOT NULL,
    used_at          timestamptz
);
CREATE INDEX oauth_tokens_grant ON oauth_tokens (grant_id, kind);
CREATE INDEX oauth_tokens_expiry ON oauth_tokens (expires_at);
