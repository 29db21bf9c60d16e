package access

import (
	"container/list"
	"context"
	"log/slog"
	"math"
	"sync"
	"time"

	"github.com/askbi/askbi"
)

// RateLimiter limits how often one principal may make requests. Hosts
// running several instances can share one (in Redis, say) behind this
// interface. Implementations must be safe for concurrent use.
type RateLimiter interface {
	// Allow spends one request of key's budget. It returns nil, or
	// RateLimited when the budget is spent; a shared limiter may return
	// Unavailable when its backend cannot be reached.
	Allow(ctx context.Context, key string) error
}

// RateOptions configures a [MemoryRateLimiter]. The zero value is valid.
type RateOptions struct {
	// Rate is how many requests per second each key regains. Default
	// DefaultRate (10).
	Rate float64
	// Burst is how many requests a key may make at once. Default
	// DefaultBurst (120).
	Burst int
	// MaxKeys bounds the keys tracked. When a new key arrives at the bound,
	// the least recently used key is forgotten, and starts with a full
	// bucket if it comes back; keep MaxKeys above the number of principals
	// active at once. Default 10,000.
	MaxKeys int
	// Now is the clock. Default time.Now.
	Now func() time.Time
}

// The default rate budget of a principal: an agent doing real work makes
// bursts of a few dozen tool calls (a search, then a run or chart per
// hit, in parallel) between pauses to think, so a burst of 120 absorbs
// two such rounds, and 10 per second sustains a busy agent; a runaway
// loop is still stopped within seconds. The concurrency bounds of
// dataexec.Executor and mcpserver, not this budget, protect the database
// from heavy calls.
const (
	DefaultRate  = 10
	DefaultBurst = 120
)

// MemoryRateLimiter is an in-memory token-bucket [RateLimiter] for one
// process, with a bounded number of keys. It is safe for concurrent use.
type MemoryRateLimiter struct {
	rate    float64
	burst   float64
	maxKeys int
	now     func() time.Time

	mu      sync.Mutex
	lru     *list.List // of *bucket, most recent first
	buckets map[string]*list.Element
}

type bucket struct {
	key    string
	tokens float64
	last   time.Time
}

// NewMemoryRateLimiter returns a limiter; opts may be nil.
func NewMemoryRateLimiter(opts *RateOptions) *MemoryRateLimiter {
	var o RateOptions
	if opts != nil {
		o = *opts
	}
	m := &MemoryRateLimiter{rate: o.Rate, burst: float64(o.Burst), maxKeys: o.MaxKeys, now: o.Now,
		lru: list.New(), buckets: map[string]*list.Element{}}
	if m.rate <= 0 {
		m.rate = DefaultRate
	}
	if m.burst <= 0 {
		m.burst = DefaultBurst
	}
	if m.maxKeys <= 0 {
		m.maxKeys = 10000
	}
	if m.now == nil {
		m.now = time.Now
	}
	return m
}

// Allow implements [RateLimiter].
func (m *MemoryRateLimiter) Allow(_ context.Context, key string) error {
	now := m.now()
	m.mu.Lock()
	defer m.mu.Unlock()
	b := m.bucket(key, now)
	if b.tokens < 1 {
		wait := math.Ceil((1 - b.tokens) / m.rate)
		return askbi.Retry(askbi.RateLimited, time.Duration(wait)*time.Second, "too many requests; try again in %.0f s", wait)
	}
	b.tokens--
	return nil
}

// Take implements [TokenSource] on this process's buckets, for tests and
// for a [LeasingRateLimiter] in one process.
func (m *MemoryRateLimiter) Take(_ context.Context, key string, n int) (int, time.Duration, error) {
	now := m.now()
	m.mu.Lock()
	defer m.mu.Unlock()
	b := m.bucket(key, now)
	taken := min(n, int(b.tokens))
	if taken <= 0 {
		return 0, time.Duration((1 - b.tokens) / m.rate * float64(time.Second)), nil
	}
	b.tokens -= float64(taken)
	return taken, 0, nil
}

// bucket returns key's bucket refilled to now, made full when new; m.mu
// is held.
func (m *MemoryRateLimiter) bucket(key string, now time.Time) *bucket {
	if el, ok := m.buckets[key]; ok {
		m.lru.MoveToFront(el)
		b := el.Value.(*bucket)
		if elapsed := now.Sub(b.last).Seconds(); elapsed > 0 {
			b.tokens = min(m.burst, b.tokens+elapsed*m.rate)
		}
		b.last = now
		return b
	}
	if m.lru.Len() >= m.maxKeys {
		old := m.lru.Remove(m.lru.Back()).(*bucket)
		delete(m.buckets, old.key)
	}
	b := &bucket{key: key, tokens: m.burst, last: now}
	m.buckets[key] = m.lru.PushFront(b)
	return b
}

// FallbackRateLimiter spends budgets of a shared limiter (one across
// instances, in PostgreSQL or Redis) and, while the shared one answers
// Unavailable, of a per-process one, so an outage of the shared store
// neither stops every request nor lifts the limit. Each change between
// the two is logged once. After a failure the shared limiter is tried
// again only once Retry has passed, so an outage costs one failed round
// trip per Retry, not one per request. It is safe for concurrent use.
type FallbackRateLimiter struct {
	shared, local RateLimiter
	retry         time.Duration
	log           *slog.Logger
	now           func() time.Time

	mu     sync.Mutex
	downAt time.Time // zero while the shared limiter answers
}

// FallbackOptions configures a [FallbackRateLimiter]. The zero value is
// valid.
type FallbackOptions struct {
	// Retry is how long the per-process limiter serves after the shared
	// one failed, before the shared one is tried again. Default 5 s.
	Retry time.Duration
	// Logger logs each change once. Default slog.Default().
	Logger *slog.Logger
	// Now is the clock. Default time.Now.
	Now func() time.Time
}

// NewFallbackRateLimiter returns a limiter on shared, falling back to
// local. opts may be nil.
func NewFallbackRateLimiter(shared, local RateLimiter, opts *FallbackOptions) *FallbackRateLimiter {
	f := &FallbackRateLimiter{shared: shared, local: local, retry: 5 * time.Second, log: slog.Default(), now: time.Now}
	if opts != nil {
		if opts.Retry > 0 {
			f.retry = opts.Retry
		}
		if opts.Logger != nil {
			f.log = opts.Logger
		}
		if opts.Now != nil {
			f.now = opts.Now
		}
	}
	return f
}

// Allow implements [RateLimiter]. A request cancelled while the shared
// limiter answers is refused as cancelled, never passed to the local one.
func (f *FallbackRateLimiter) Allow(ctx context.Context, key string) error {
	f.mu.Lock()
	down := !f.downAt.IsZero() && f.now().Sub(f.downAt) < f.retry
	f.mu.Unlock()
	if down {
		return f.local.Allow(ctx, key)
	}
	err := f.shared.Allow(ctx, key)
	if ctx.Err() != nil {
		return err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if askbi.ErrorCode(err) != askbi.Unavailable {
		if !f.downAt.IsZero() {
			f.downAt = time.Time{}
			f.log.InfoContext(ctx, "rate limit: the shared limiter answers again; one limit across instances")
		}
		return err
	}
	if f.downAt.IsZero() {
		f.log.WarnContext(ctx, "rate limit: the shared limiter is unavailable; each instance limits on its own until it answers", "err", err)
	}
	f.downAt = f.now()
	return f.local.Allow(ctx, key)
}
