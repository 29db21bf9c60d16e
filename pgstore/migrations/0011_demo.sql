-- The reference server's product sessions (stand-ins for a host's login),
-- by the SHA-256 of their token, so every instance accepts every
-- instance's sessions.
CREATE TABLE sessions (
    hash       bytea PRIMARY KEY,
    team_id    text NOT NULL,
    user_id    text NOT NULL,
    created_at timestamptz NOT NULL DEFAULT now()
);
-- The demo's credentials, claimed once per database so that every
-- instance hands out the same ones. Values are sealed by the server.
CREATE TABLE demo_secrets (
    name       text PRIMARY KEY,
    value      text NOT NULL,
    updated_at timestamptz NOT NULL DEFAULT now()
);
