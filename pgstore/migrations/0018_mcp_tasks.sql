-- MCP tasks (mcpserver.TaskStore): long data calls that became tasks,
-- seen by every instance. owner is the principal that started the task
-- (team, user, credential); result and error are the tool result's and
-- the JSON-RPC error's JSON, kept as sent. A row goes at expires_at.
CREATE TABLE mcp_tasks (
    id           text COLLATE "C" PRIMARY KEY,
    owner        text COLLATE "C" NOT NULL,
    tool         text NOT NULL,
    status       text NOT NULL CHECK (status IN ('working', 'completed', 'failed', 'cancelled')),
    message      text NOT NULL DEFAULT '',
    result       bytea,
    error        bytea,
    created_at   timestamptz NOT NULL,
    updated_at   timestamptz NOT NULL,
    expires_at   timestamptz NOT NULL,
    heartbeat_at timestamptz NOT NULL
);
CREATE INDEX mcp_tasks_owner ON mcp_tasks (owner, expires_at);
CREATE INDEX mcp_tasks_expiry ON mcp_tasks (expires_at);
