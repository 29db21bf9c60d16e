-- Ask: conversations with their turns, history, active context and work
-- summary; approvals and their receipts.
--
-- IDs use the "C" collation so ties order as Go's strings.Compare does.
-- JSON fields are json, not jsonb: json keeps the text as given, so what
-- was stored comes back byte for byte (jsonb reorders object keys and
-- rejects \u0000). The n identity columns record insertion order, which
-- breaks ties in created_at.

CREATE TABLE conversations (
    id         text COLLATE "C" PRIMARY KEY,
    team_id    text NOT NULL,
    user_id    text NOT NULL,
    title      text NOT NULL,
    created_at timestamptz NOT NULL,
    updated_at timestamptz NOT NULL,
    -- Seq of the newest entry. AppendEntry increments it under the row
    -- lock, so concurrent appends get distinct, increasing Seqs.
    last_seq   bigint NOT NULL DEFAULT 0
);
CREATE INDEX conversations_owner ON conversations (team_id, user_id, updated_at DESC, id DESC);

-- A turn, entry, context row or tool run lives and dies with its
-- conversation; turns and runs are identified within it.
CREATE TABLE conversation_turns (
    conversation_id text COLLATE "C" NOT NULL REFERENCES conversations (id) ON DELETE CASCADE,
    id              text COLLATE "C" NOT NULL,
    n               bigint GENERATED ALWAYS AS IDENTITY,
    state           text NOT NULL,
    error_code      text NOT NULL,
    created_at      timestamptz NOT NULL,
    updated_at      timestamptz NOT NULL,
    PRIMARY KEY (conversation_id, id)
);

CREATE TABLE conversation_entries (
    conversation_id text COLLATE "C" NOT NULL REFERENCES conversations (id) ON DELETE CASCADE,
    seq             bigint NOT NULL,
    id              text NOT NULL,
    turn_id         text NOT NULL,
    role            text NOT NULL,
    text            text NOT NULL,
    tool_calls      json, -- [{"id", "name", "arguments"}], arguments as given
    tool_call_id    text NOT NULL,
    tool            text NOT NULL,
    output          json,
    sharing         text NOT NULL,
    created_at      timestamptz NOT NULL,
    PRIMARY KEY (conversation_id, seq)
);

CREATE TABLE conversation_context (
    conversation_id text COLLATE "C" NOT NULL REFERENCES conversations (id) ON DELETE CASCADE,
    entity_type     text NOT NULL,
    entity_id       text NOT NULL,
    position        integer NOT NULL,
    PRIMARY KEY (conversation_id, entity_type, entity_id)
);

CREATE TABLE tool_runs (
    conversation_id text COLLATE "C" NOT NULL REFERENCES conversations (id) ON DELETE CASCADE,
    call_id         text COLLATE "C" NOT NULL,
    n               bigint GENERATED ALWAYS AS IDENTITY,
    turn_id         text NOT NULL,
    tool            text NOT NULL,
    label           text NOT NULL,
    state           text NOT NULL,
    error_code      text NOT NULL,
    error_message   text NOT NULL,
    retry           boolean NOT NULL,
    approval_id     text NOT NULL,
    result          json,
    created_at      timestamptz NOT NULL,
    updated_at      timestamptz NOT NULL,
    PRIMARY KEY (conversation_id, call_id)
);

-- Approvals are not tied to the conversations table: the approval store
-- stands alone, and an approval outlives nothing but its TTL.
CREATE TABLE approvals (
    id              text COLLATE "C" PRIMARY KEY,
    n               bigint GENERATED ALWAYS AS IDENTITY,
    user_id         text NOT NULL,
    team_id         text NOT NULL,
    conversation_id text NOT NULL,
    turn_id         text NOT NULL,
    tool_call_id    text NOT NULL,
    tool            text NOT NULL,
    args_hash       text NOT NULL,
    arguments       json, -- the hashed canonical JSON, byte for byte
    state           text NOT NULL CHECK (state IN ('pending', 'consumed', 'rejected')),
    created_at      timestamptz NOT NULL,
    expires_at      timestamptz NOT NULL
);
CREATE INDEX approvals_pending ON approvals (conversation_id, created_at, n) WHERE state = 'pending';
-- At most one approval of a tool call is ever consumed: a second Consume
-- fails on this index (Conflict), also across processes.
CREATE UNIQUE INDEX approvals_one_consumed ON approvals (conversation_id, tool_call_id) WHERE state = 'consumed';

CREATE TABLE approval_receipts (
    approval_id     text COLLATE "C" PRIMARY KEY REFERENCES approvals (id) ON DELETE CASCADE,
    conversation_id text NOT NULL,
    tool_call_id    text NOT NULL,
    result          json,
    error_code      text NOT NULL,
    created_at      timestamptz NOT NULL,
    UNIQUE (conversation_id, tool_call_id)
);
