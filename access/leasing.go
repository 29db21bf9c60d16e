package access

import (
	"context"
	"math"
	"sync"
	"time"

	"github.com/askbi/askbi"
)

// TokenSource is a token bucket per key that several instances share
// and that gives out tokens in batches: pgstore.RateLimiter in
// PostgreSQL, or a host's own in Redis. Implementations must be safe for
// concurrent use, also across processes.
type TokenSource interface {
	// Take takes up to n tokens of key's bucket, as many as it holds
	// whole, and returns how many it took. With none it returns 0 and
	// how long until one is back. It returns Unavailable when the
	// bucket cannot be reached.
	Take(ctx context.Context, key string, n int) (taken int, wait time.Duration, err error)
}

// LeasingOptions configures a [LeasingRateLimiter]. The zero value is
// valid.
type LeasingOptions struct {
	// Rate is the source's rate in tokens per second, which sizes the
	// default Batch. Default DefaultRate.
	Rate float64
	// Batch is how many tokens one Take asks for: a principal's requests
	// on one instance cost one round trip to the source per Batch
	// requests. Default a fifth of a second of Rate (2 at the default
	// rate), at least 1 and at most 100.
	Batch int
	// Hold is how long tokens taken stay usable on this instance. Those
	// left after it are dropped: they were spent from the shared budget,
	// so a principal whose requests move to another instance loses at
	// most Batch of them per instance. Default 1 s.
	Hold time.Duration
	// MaxKeys bounds the keys holding tokens here; past it the oldest
	// holdings are dropped. Default 10,000.
	MaxKeys int
	// Now is the clock. Default time.Now.
	Now func() time.Time
}

// LeasingRateLimiter is a [RateLimiter] that takes a principal's tokens
// from a shared [TokenSource] in batches and spends them here, so most
// requests cost no round trip while the budget stays one across
// instances: no instance spends a token the source did not give it, so
// the shared rate is never exceeded, and it falls short by at most the
// tokens an instance held and did not use (Batch, for Hold). The source's
// errors (Unavailable) pass through: wrap it in a
// [FallbackRateLimiter] to keep a limit through an outage. It is safe
// for concurrent use.
type LeasingRateLimiter struct {
	src   TokenSource
	batch int
	hold  time.Duration
	max   int
	now   func() time.Time

	mu   sync.Mutex
	held map[string]*holding
}

// holding is one key's tokens here; mu serializes its refills, so
// requests that find it empty wait for one Take rather than each making
// their own.
type holding struct {
	mu      sync.Mutex
	tokens  int
	expires time.Time
}

// NewLeasingRateLimiter returns a limiter over src; opts may be nil.
func NewLeasingRateLimiter(src TokenSource, opts *LeasingOptions) *LeasingRateLimiter {
	var o LeasingOptions
	if opts != nil {
		o = *opts
	}
	if o.Rate <= 0 {
		o.Rate = DefaultRate
	}
	if o.Batch <= 0 {
		o.Batch = min(100, max(1, int(math.Round(o.Rate/5))))
	}
	if o.Hold <= 0 {
		o.Hold = time.Second
	}
	if o.MaxKeys <= 0 {
		o.MaxKeys = 10000
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	return &LeasingRateLimiter{src: src, batch: o.Batch, hold: o.Hold, max: o.MaxKeys, now: o.Now, held: map[string]*holding{}}
}

// Allow implements [RateLimiter].
func (l *LeasingRateLimiter) Allow(ctx context.Context, key string) error {
	h := l.holding(key)
	h.mu.Lock()
	defer h.mu.Unlock()
	now := l.now()
	if h.tokens > 0 && now.Before(h.expires) {
		h.tokens--
		return nil
	}
	taken, wait, err := l.src.Take(ctx, key, l.batch)
	if err != nil {
		return err
	}
	if taken == 0 {
		h.tokens = 0
		secs := max(1, math.Ceil(wait.Seconds()))
		return askbi.Retry(askbi.RateLimited, time.Duration(secs)*time.Second, "too many requests; try again in %.0f s", secs)
	}
	h.tokens, h.expires = taken-1, now.Add(l.hold)
	return nil
}

func (l *LeasingRateLimiter) holding(key string) *holding {
	l.mu.Lock()
	defer l.mu.Unlock()
	if h, ok := l.held[key]; ok {
		return h
	}
	if len(l.held) >= l.max {
		now := l.now()
		for k, h := range l.held {
			if h.mu.TryLock() {
				if !now.Before(h.expires) {
					delete(l.held, k)
				}
				h.mu.Unlock()
			}
		}
		for k := range l.held {
			if len(l.held) < l.max {
				break
			}
			delete(l.held, k)
		}
	}
	h := &holding{}
	l.held[key] = h
	return h
}
