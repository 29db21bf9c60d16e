-- Explicit personal memory. Package memory seals the text with AES-256-GCM
-- before it reaches the database: the row holds the key ID, nonce and
-- ciphertext, never plaintext. chars is the plaintext's length in
-- characters, kept in clear so the limits can be checked under the
-- per-member advisory lock; it is bound into the ciphertext.
CREATE TABLE memories (
    id         text COLLATE "C" PRIMARY KEY,
    team_id    text NOT NULL,
    user_id    text NOT NULL,
    key_id     text NOT NULL,
    nonce      bytea NOT NULL,
    ciphertext bytea NOT NULL,
    chars      integer NOT NULL CHECK (chars >= 0),
    created_at timestamptz NOT NULL,
    updated_at timestamptz NOT NULL
);
CREATE INDEX memories_owner ON memories (team_id, user_id, created_at, id);
