-- Outbound OAuth for remote MCP connections (package dataexec/mcpsource):
-- the verified provider a connection was set up for, the conversation
-- that set it up (repeated "Connect" clicks there reuse it), and its
-- sign-in state, shown without secrets. The tokens and client
-- registration stay in the sealed token columns.
ALTER TABLE mcp_connections
    ADD COLUMN provider text NOT NULL DEFAULT '',
    ADD COLUMN setup_conversation text NOT NULL DEFAULT '',
    ADD COLUMN sign_in json;

-- Started sign-ins, from StartOAuth to the callback. A flow is taken
-- once (DELETE ... RETURNING), so a replayed state finds nothing. The
-- PKCE verifier and the client registration are sealed in secret.
CREATE TABLE mcp_oauth_flows (
    id                text COLLATE "C" PRIMARY KEY,
    connection_id     text NOT NULL,
    team_id           text NOT NULL,
    user_id           text NOT NULL,
    conversation_id   text NOT NULL,
    secret_key_id     text NOT NULL,
    secret_nonce      bytea NOT NULL,
    secret_ciphertext bytea NOT NULL,
    created_at        timestamptz NOT NULL,
    expires_at        timestamptz NOT NULL
);
CREATE INDEX mcp_oauth_flows_expires ON mcp_oauth_flows (expires_at);
