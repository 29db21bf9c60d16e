package pgstore_test

import (
	"context"
	"slices"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jmoiron/sqlx"

	"github.com/askbi/askbi"
	"github.com/askbi/askbi/access"
	"github.com/askbi/askbi/access/accesstest"
	"github.com/askbi/askbi/internal/pgtest"
	"github.com/askbi/askbi/pgstore"
)

// mustPools returns n connection pools on one fresh, migrated database:
// n instances of a server sharing it.
func mustPools(t *testing.T, n int) []*sqlx.DB {
	t.Helper()
	url := pgtest.MustDatabase(t)
	var dbs []*sqlx.DB
	for range n {
		db, err := sqlx.Open("postgres", url)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { db.Close() })
		dbs = append(dbs, db)
	}
	if err := pgstore.Migrate(context.Background(), dbs[0]); err != nil {
		t.Fatal(err)
	}
	return dbs
}

// sharedLimiter spreads its calls over limiters on three pools of one
// database, as three instances would.
type sharedLimiter []*pgstore.RateLimiter

func (s sharedLimiter) Allow(ctx context.Context, key string) error {
	i := int(counter.Add(1)) % len(s)
	return s[i].Allow(ctx, key)
}

func TestRateLimiter(t *testing.T) {
	accesstest.RunRateLimiter(t, func(t *testing.T, rate float64, burst int) access.RateLimiter {
		var s sharedLimiter
		for _, db := range mustPools(t, 3) {
			s = append(s, pgstore.NewRateLimiter(db, &access.RateOptions{Rate: rate, Burst: burst}))
		}
		return s
	})
	accesstest.RunTokenSource(t, func(t *testing.T, rate float64, burst int) access.TokenSource {
		var s sharedLimiter
		for _, db := range mustPools(t, 3) {
			s = append(s, pgstore.NewRateLimiter(db, &access.RateOptions{Rate: rate, Burst: burst}))
		}
		return s
	})
	// Three instances, each leasing in batches of 2, share one burst.
	accesstest.RunRateLimiter(t, func(t *testing.T, rate float64, burst int) access.RateLimiter {
		var s leasingLimiters
		for _, db := range mustPools(t, 3) {
			src := pgstore.NewRateLimiter(db, &access.RateOptions{Rate: rate, Burst: burst})
			s = append(s, access.NewLeasingRateLimiter(src, &access.LeasingOptions{Rate: rate, Batch: 2}))
		}
		return s
	})
}

func (s sharedLimiter) Take(ctx context.Context, key string, n int) (int, time.Duration, error) {
	i := int(counter.Add(1)) % len(s)
	return s[i].Take(ctx, key, n)
}

// leasingLimiters spreads calls over three instances' leasing limiters.
type leasingLimiters []*access.LeasingRateLimiter

func (s leasingLimiters) Allow(ctx context.Context, key string) error {
	i := int(counter.Add(1)) % len(s)
	return s[i].Allow(ctx, key)
}

// TestRateLimiterRefill: a spent bucket refills on the database's clock
// (here moved back by hand, as time passing would), at most to the
// burst; Purge deletes only buckets idle long enough to be full.
func TestRateLimiterRefill(t *testing.T) {
	ctx := context.Background()
	db := mustPools(t, 1)[0]
	l := pgstore.NewRateLimiter(db, &access.RateOptions{Rate: 1, Burst: 3})
	spend := func() (n int) {
		for l.Allow(ctx, "k") == nil {
			n++
			if n > 10 {
				t.Fatal("the bucket never runs out")
			}
		}
		return n
	}
	if n := spend(); n != 3 {
		t.Fatalf("a new key allowed %d calls, want its burst of 3", n)
	}
	age := func(seconds float64) {
		if _, err := db.Exec(`UPDATE rate_buckets SET updated_at = updated_at - $1 * interval '1 second'`, seconds); err != nil {
			t.Fatal(err)
		}
	}
	age(2)
	if n := spend(); n != 2 {
		t.Errorf("after 2 s at 1 per second %d calls, want 2", n)
	}
	age(60)
	if n := spend(); n != 3 {
		t.Errorf("after a minute %d calls, want the burst of 3, no more", n)
	}
	if n, err := l.Purge(ctx); err != nil || n != 0 {
		t.Errorf("Purge of a bucket just used = %d, %v; want 0", n, err)
	}
	age(10)
	if n, err := l.Purge(ctx); err != nil || n != 1 {
		t.Errorf("Purge of an idle bucket = %d, %v; want 1", n, err)
	}
	// Down: the database refuses the call, which reads as unavailable, so
	// access.FallbackRateLimiter can serve from the local budget.
	db.Close()
	if err := l.Allow(ctx, "k"); askbi.ErrorCode(err) != askbi.Unavailable {
		t.Errorf("Allow on a closed pool = %v, want unavailable", err)
	}
}

var counter atomic.Int64

// BenchmarkRateLimiter measures what the shared limit adds to a request:
// one Allow on PostgreSQL (one statement on a warm pool, over loopback)
// against the per-process limiter, in the same run. p50-ns and p99-ns
// are the latency percentiles of single calls.
//
//	go test -run '^$' -bench RateLimiter -benchtime 5000x ./pgstore
func BenchmarkRateLimiter(b *testing.B) {
	ctx := context.Background()
	url := pgtest.MustDatabase(b)
	db, err := sqlx.Open("postgres", url)
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	if err := pgstore.Migrate(ctx, db); err != nil {
		b.Fatal(err)
	}
	opts := &access.RateOptions{Rate: 1e9, Burst: 1 << 30}
	for _, bc := range []struct {
		name string
		l    access.RateLimiter
	}{
		{"memory", access.NewMemoryRateLimiter(opts)},
		{"postgres", pgstore.NewRateLimiter(db, opts)},
	} {
		b.Run(bc.name, func(b *testing.B) {
			lat := make([]time.Duration, 0, b.N)
			for i := 0; b.Loop(); i++ {
				start := time.Now()
				if err := bc.l.Allow(ctx, "key"+strconv.Itoa(i%64)); err != nil {
					b.Fatal(err)
				}
				lat = append(lat, time.Since(start))
			}
			slices.Sort(lat)
			b.ReportMetric(float64(lat[len(lat)/2].Nanoseconds()), "p50-ns")
			b.ReportMetric(float64(lat[len(lat)*99/100].Nanoseconds()), "p99-ns")
		})
	}
}
