package access_test

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/askbi/askbi"
	"github.com/askbi/askbi/access"
	"github.com/askbi/askbi/access/accesstest"
)

func TestMemoryRateLimiter(t *testing.T) {
	accesstest.RunRateLimiter(t, func(t *testing.T, rate float64, burst int) access.RateLimiter {
		return access.NewMemoryRateLimiter(&access.RateOptions{Rate: rate, Burst: burst})
	})
	accesstest.RunTokenSource(t, func(t *testing.T, rate float64, burst int) access.TokenSource {
		return access.NewMemoryRateLimiter(&access.RateOptions{Rate: rate, Burst: burst})
	})
}

// TestLeasingRateLimiter: taking tokens in batches keeps the limit (the
// same suite as any limiter, with batches of 1 and of 3).
func TestLeasingRateLimiter(t *testing.T) {
	for _, batch := range []int{1, 3} {
		t.Run(fmt.Sprint("batch ", batch), func(t *testing.T) {
			accesstest.RunRateLimiter(t, func(t *testing.T, rate float64, burst int) access.RateLimiter {
				src := access.NewMemoryRateLimiter(&access.RateOptions{Rate: rate, Burst: burst})
				return access.NewLeasingRateLimiter(src, &access.LeasingOptions{Rate: rate, Batch: batch})
			})
		})
	}
}

// counted is a TokenSource that counts its Takes.
type counted struct {
	access.TokenSource
	mu    sync.Mutex
	takes int
}

func (c *counted) Take(ctx context.Context, key string, n int) (int, time.Duration, error) {
	c.mu.Lock()
	c.takes++
	c.mu.Unlock()
	return c.TokenSource.Take(ctx, key, n)
}

// TestLeasingRoundTrips: a batch of 10 costs one Take per 10 requests;
// tokens left unused past Hold are dropped, not spent later; a source
// that fails passes its error through.
func TestLeasingRoundTrips(t *testing.T) {
	ctx := context.Background()
	now := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	clock := func() time.Time { return now }
	src := &counted{TokenSource: access.NewMemoryRateLimiter(&access.RateOptions{Rate: 0.001, Burst: 1000, Now: clock})}
	l := access.NewLeasingRateLimiter(src, &access.LeasingOptions{Batch: 10, Hold: time.Second, Now: clock})
	for i := range 100 {
		if err := l.Allow(ctx, "k"); err != nil {
			t.Fatalf("request %d: %v", i, err)
		}
	}
	if src.takes != 10 {
		t.Errorf("100 requests made %d Takes; want 10", src.takes)
	}
	l.Allow(ctx, "k") // takes 10, spends 1
	now = now.Add(2 * time.Second)
	l.Allow(ctx, "k") // the 9 left expired: takes again
	if src.takes != 12 {
		t.Errorf("after Hold, %d Takes; want a new one (12)", src.takes)
	}
	if left, _, _ := src.TokenSource.Take(ctx, "k", 1000); left != 1000-120 {
		t.Errorf("the source has %d tokens left; want 880: 12 batches taken, none given back", left)
	}
	down := access.NewLeasingRateLimiter(failing{}, nil)
	if err := down.Allow(ctx, "k"); askbi.ErrorCode(err) != askbi.Unavailable {
		t.Errorf("a failing source: %v; want unavailable", err)
	}
}

type failing struct{}

func (failing) Take(context.Context, string, int) (int, time.Duration, error) {
	return 0, 0, askbi.Errorf(askbi.Unavailable, "down")
}

// switchable is a shared limiter whose store can be taken down.
type switchable struct {
	mu    sync.Mutex
	down  bool
	calls int
	next  access.RateLimiter
}

func (s *switchable) set(down bool) { s.mu.Lock(); s.down = down; s.mu.Unlock() }

func (s *switchable) Allow(ctx context.Context, key string) error {
	s.mu.Lock()
	s.calls++
	down := s.down
	s.mu.Unlock()
	if down {
		return askbi.Errorf(askbi.Unavailable, "the rate limit cannot be checked right now")
	}
	return s.next.Allow(ctx, key)
}

// TestFallbackRateLimiter: the shared limiter decides while it answers;
// while it is unavailable the per-process one does (the limit still
// holds), the shared one is tried again only after Retry, and each change
// is logged once, not once per request.
func TestFallbackRateLimiter(t *testing.T) {
	ctx := context.Background()
	c := &clock{t: t0}
	shared := &switchable{next: access.NewMemoryRateLimiter(&access.RateOptions{Burst: 2, Rate: 0.001, Now: c.Now})}
	local := access.NewMemoryRateLimiter(&access.RateOptions{Burst: 3, Rate: 0.001, Now: c.Now})
	var logs bytes.Buffer
	f := access.NewFallbackRateLimiter(shared, local, &access.FallbackOptions{Retry: 5 * time.Second,
		Logger: slog.New(slog.NewTextHandler(&logs, nil)), Now: c.Now})
	codes := func(n int) []askbi.Code {
		var out []askbi.Code
		for range n {
			out = append(out, askbi.ErrorCode(f.Allow(ctx, "k")))
		}
		return out
	}
	eq := func(got []askbi.Code, want ...askbi.Code) bool {
		if len(got) != len(want) {
			return false
		}
		for i := range got {
			if got[i] != want[i] {
				return false
			}
		}
		return true
	}
	if got := codes(3); !eq(got, "", "", askbi.RateLimited) {
		t.Fatalf("shared budget of 2: %v", got)
	}
	shared.set(true)
	before := shared.calls
	// The local budget of 3 serves, and still limits.
	if got := codes(5); !eq(got, "", "", "", askbi.RateLimited, askbi.RateLimited) {
		t.Errorf("during the outage: %v, want the local budget of 3", got)
	}
	if n := shared.calls - before; n != 1 {
		t.Errorf("the shared limiter was asked %d times within Retry, want once", n)
	}
	c.advance(6 * time.Second)
	codes(3) // asks the shared one again, which is still down
	if n := shared.calls - before; n != 2 {
		t.Errorf("the shared limiter was asked %d times after Retry, want twice", n)
	}
	shared.set(false)
	c.advance(6 * time.Second)
	if got := codes(1); !eq(got, askbi.RateLimited) {
		t.Errorf("after the outage: %v, want the shared budget's answer (still spent)", got)
	}
	for _, want := range []struct {
		text string
		n    int
	}{{"the shared limiter is unavailable", 1}, {"the shared limiter answers again", 1}} {
		if got := strings.Count(logs.String(), want.text); got != want.n {
			t.Errorf("log has %q %d times, want %d:\n%s", want.text, got, want.n, logs.String())
		}
	}
	// A cancelled request is not passed to the local limiter as if the
	// shared one were down.
	shared.set(true)
	c.advance(6 * time.Second)
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if err := f.Allow(cctx, "k"); askbi.ErrorCode(err) != askbi.Unavailable {
		t.Errorf("cancelled = %v", err)
	}
	if strings.Count(logs.String(), "the shared limiter is unavailable") != 1 {
		t.Errorf("a cancelled request logged an outage:\n%s", logs.String())
	}
}
