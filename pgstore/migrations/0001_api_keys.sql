-- API keys: only the SHA-256 of the key is stored, never the secret.
CREATE TABLE api_keys (
    id           text PRIMARY KEY,
    prefix       text NOT NULL UNIQUE,
    hash         bytea NOT NULL,
    name         text NOT NULL,
    user_id      text NOT NULL,
    team_id      text NOT NULL,
    scopes       text[] NOT NULL,
    all_projects boolean NOT NULL,
    project_ids  text[] NOT NULL DEFAULT '{}',
    created_at   timestamptz NOT NULL,
    last_used_at timestamptz,
    revoked_at   timestamptz
);
CREATE INDEX api_keys_owner ON api_keys (team_id, user_id, created_at DESC);
