package pgstore

import (
	"context"
	"math"
	"time"

	"github.com/jmoiron/sqlx"

	"github.com/askbi/askbi"
	"github.com/askbi/askbi/access"
)

// RateLimiter is an [access.RateLimiter] in PostgreSQL: one token bucket a
// key, shared by every instance on the database, so a principal's budget
// is one budget however many instances serve it. Each Allow is one
// statement (one round trip) that refills the bucket on the database's
// clock and spends a token when there is one. It returns Unavailable when
// the database cannot be reached; wrap it in [access.FallbackRateLimiter] to
// keep a per-process limit through an outage. It is safe for concurrent
// use.
type RateLimiter struct {
	db    *sqlx.DB
	rate  float64
	burst float64
}

// NewRateLimiter returns a limiter on a migrated database with the budget
// of opts (nil: [access.DefaultRate] per second, [access.DefaultBurst] at
// once). opts.MaxKeys and opts.Now do not apply: idle buckets are deleted
// by Purge, and time is the database's.
func NewRateLimiter(db *sqlx.DB, opts *access.RateOptions) *RateLimiter {
	l := &RateLimiter{db: db, rate: access.DefaultRate, burst: access.DefaultBurst}
	if opts != nil && opts.Rate > 0 {
		l.rate = opts.Rate
	}
	if opts != nil && opts.Burst > 0 {
		l.burst = float64(opts.Burst)
	}
	return l
}

// allowSQL refills key's bucket by the time since its last update (at
// most to the burst) and spends one token when a whole one is there. A
// new key starts full. The statement both decides and records, under the
// row's lock, so concurrent calls on every instance are counted once each.
const allowSQL = `
INSERT INTO rate_buckets AS b (key, tokens, allowed, updated_at) VALUES ($1, $2 - 1, true, now())
ON CONFLICT (key) DO UPDATE SET
    allowed = LEAST($2, b.tokens + GREATEST(EXTRACT(EPOCH FROM now() - b.updated_at), 0) * $3) >= 1,
    tokens = LEAST($2, b.tokens + GREATEST(EXTRACT(EPOCH FROM now() - b.updated_at), 0) * $3)
        - CASE WHEN LEAST($2, b.tokens + GREATEST(EXTRACT(EPOCH FROM now() - b.updated_at), 0) * $3) >= 1 THEN 1 ELSE 0 END,
    updated_at = now()
RETURNING tokens, allowed`

// Allow implements [access.RateLimiter].
func (l *RateLimiter) Allow(ctx context.Context, key string) error {
	var row struct {
		Tokens  float64 `db:"tokens"`
		Allowed bool    `db:"allowed"`
	}
	if err := l.db.GetContext(ctx, &row, allowSQL, key, l.burst, l.rate); err != nil {
		if ctx.Err() != nil {
			return askbi.Errorf(askbi.Unavailable, "the request was cancelled")
		}
		return &askbi.Error{Code: askbi.Unavailable, Op: "pgstore.RateLimiter.Allow", Message: "the rate limit cannot be checked right now", Err: err}
	}
	if !row.Allowed {
		wait := math.Ceil((1 - row.Tokens) / l.rate)
		return askbi.Retry(askbi.RateLimited, time.Duration(wait)*time.Second, "too many requests; try again in %.0f s", wait)
	}
	return nil
}

// takeSQL is allowSQL for up to $4 tokens at once: it refills the
// bucket and takes as many whole tokens as it holds, up to $4.
const takeSQL = `
INSERT INTO rate_buckets AS b (key, tokens, allowed, granted, updated_at)
    VALUES ($1, $2 - LEAST($4, floor($2)), true, LEAST($4, floor($2)), now())
ON CONFLICT (key) DO UPDATE SET
    granted = LEAST($4, floor(LEAST($2, b.tokens + GREATEST(EXTRACT(EPOCH FROM now() - b.updated_at), 0) * $3))),
    tokens = LEAST($2, b.tokens + GREATEST(EXTRACT(EPOCH FROM now() - b.updated_at), 0) * $3)
        - LEAST($4, floor(LEAST($2, b.tokens + GREATEST(EXTRACT(EPOCH FROM now() - b.updated_at), 0) * $3))),
    allowed = true,
    updated_at = now()
RETURNING tokens, granted`

// Take implements [access.TokenSource]: one statement takes up to n of
// key's tokens, for an [access.LeasingRateLimiter] to spend n requests
// with one round trip.
func (l *RateLimiter) Take(ctx context.Context, key string, n int) (int, time.Duration, error) {
	var row struct {
		Tokens  float64 `db:"tokens"`
		Granted int     `db:"granted"`
	}
	if err := l.db.GetContext(ctx, &row, takeSQL, key, l.burst, l.rate, n); err != nil {
		if ctx.Err() != nil {
			return 0, 0, askbi.Errorf(askbi.Unavailable, "the request was cancelled")
		}
		return 0, 0, &askbi.Error{Code: askbi.Unavailable, Op: "pgstore.RateLimiter.Take", Message: "the rate limit cannot be checked right now", Err: err}
	}
	if row.Granted == 0 {
		return 0, time.Duration((1 - row.Tokens) / l.rate * float64(time.Second)), nil
	}
	return row.Granted, 0, nil
}

// Purge deletes the buckets that have been idle long enough to be full
// again: a key that comes back starts full, as it would have been. Hosts
// run it periodically.
func (l *RateLimiter) Purge(ctx context.Context) (int, error) {
	idle := time.Duration(l.burst/l.rate*float64(time.Second)) + time.Second
	res, err := l.db.ExecContext(ctx, `DELETE FROM rate_buckets WHERE updated_at < now() - $1 * interval '1 second'`, idle.Seconds())
	if err != nil {
		return 0, internal("pgstore.RateLimiter.Purge", err)
	}
	n, err := res.RowsAffected()
	return int(n), err
}
