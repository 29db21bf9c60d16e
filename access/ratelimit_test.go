package access_test

import (
	"bytes"
	"context"
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
