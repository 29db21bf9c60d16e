-- Per-principal rate budgets shared by every instance on this database:
-- one token bucket per key, refilled on the database's clock.
-- Unlogged: a crash forgets the buckets (every key starts full again),
-- and no write waits for the WAL.
CREATE UNLOGGED TABLE rate_buckets (
    key        text PRIMARY KEY,
    tokens     double precision NOT NULL,
    allowed    boolean NOT NULL,
    updated_at timestamptz NOT NULL
);
CREATE INDEX rate_buckets_updated ON rate_buckets (updated_at);
