-- Remote MCP connections (package dataexec/mcpsource): a team's
-- connections with their sealed tokens, the tools each discovery found,
-- and each tool's approval. Every change runs under the connection row's
-- lock (SELECT ... FOR UPDATE), so concurrent edits, approvals and
-- discovery merges never overwrite each other, also across processes.
--
-- Approvals of remote tool calls also bind the tool's target (connection,
-- remote name, fingerprint).

CREATE TABLE mcp_connections (
    id               text COLLATE "C" PRIMARY KEY,
    team_id          text NOT NULL,
    name             text NOT NULL,
    url              text NOT NULL,
    auth             text NOT NULL CHECK (auth IN ('none', 'bearer', 'oauth')),
    has_token        boolean NOT NULL,
    -- The bearer token, sealed (AES-256-GCM, the memory keyring), bound
    -- to team and connection ID; never returned.
    token_key_id     text NOT NULL,
    token_nonce      bytea,
    token_ciphertext bytea,
    active           boolean NOT NULL,
    tool_focus       text NOT NULL,
    discovery        json NOT NULL,
    version          bigint NOT NULL,
    created_at       timestamptz NOT NULL,
    updated_at       timestamptz NOT NULL
);
CREATE UNIQUE INDEX mcp_connections_team_name ON mcp_connections (team_id, lower(name));

-- One row per discovered tool. doc is the mcpsource.Tool as JSON (the
-- remote definition, untrusted, and its access); json keeps it byte for
-- byte. allowed repeats doc's access switch for queries.
CREATE TABLE mcp_tools (
    connection_id text COLLATE "C" NOT NULL REFERENCES mcp_connections (id) ON DELETE CASCADE,
    name          text COLLATE "C" NOT NULL,
    position      integer NOT NULL,
    allowed       boolean NOT NULL,
    doc           json NOT NULL,
    PRIMARY KEY (connection_id, name)
);

ALTER TABLE approvals ADD COLUMN target text NOT NULL DEFAULT '';
