-- The tokens a batch took (RateLimiter.Take): a LeasingRateLimiter takes
-- several at once and spends them without a round trip each.
ALTER TABLE rate_buckets ADD COLUMN granted integer NOT NULL DEFAULT 0;
