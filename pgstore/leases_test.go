package pgstore_test

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jmoiron/sqlx"

	"github.com/askbi/askbi"
	"github.com/askbi/askbi/dataexec"
	"github.com/askbi/askbi/internal/pgtest"
	"github.com/askbi/askbi/pgstore"
)

// TestLeases: slots taken through two pools (two instances) count against
// one bound: of 20 concurrent takes on a bound of 3 exactly 3 succeed,
// each other one naming the key at its bound; all or nothing across a
// call's keys; a released slot comes back, and one whose holder died
// expires.
func TestLeases(t *testing.T) {
	ctx := context.Background()
	dbs := mustPools(t, 2)
	ls := []*pgstore.Leases{pgstore.NewLeases(dbs[0]), pgstore.NewLeases(dbs[1])}
	slots := []dataexec.Slot{{Key: "team:acme", Max: 3}, {Key: "connection:wh", Max: 5}}
	count := func(key string) (n int) {
		t.Helper()
		if err := dbs[0].Get(&n, `SELECT count(*) FROM concurrency_slots WHERE key = $1 AND holder IS NOT NULL AND expires_at >= now()`, key); err != nil {
			t.Fatal(err)
		}
		return n
	}

	var mu sync.Mutex
	var releases []func()
	var wg sync.WaitGroup
	refused := 0
	for i := range 20 {
		wg.Go(func() {
			rel, err := ls[i%2].Acquire(ctx, slots, time.Minute)
			mu.Lock()
			defer mu.Unlock()
			var full *dataexec.SlotFull
			switch {
			case err == nil:
				releases = append(releases, rel)
			case askbi.ErrorCode(err) == askbi.RateLimited && errors.As(err, &full) && full.Key == "team:acme":
				refused++
			default:
				t.Errorf("Acquire = %v", err)
			}
		})
	}
	wg.Wait()
	if len(releases) != 3 || refused != 17 {
		t.Fatalf("20 takes on a bound of 3 across two pools: %d taken, %d refused; want 3 and 17", len(releases), refused)
	}
	if n := count("connection:wh"); n != 3 {
		t.Errorf("the connection holds %d slots, want the 3 taken (a refused take leaves none)", n)
	}
	// The connection's own bound refuses a take that the team allows.
	if _, err := ls[0].Acquire(ctx, []dataexec.Slot{{Key: "team:globex", Max: 8}, {Key: "connection:wh", Max: 3}}, time.Minute); askbi.ErrorCode(err) != askbi.RateLimited {
		t.Errorf("a take past the connection's bound = %v, want rate_limited", err)
	}
	if n := count("team:globex"); n != 0 {
		t.Errorf("the refused take holds %d slots of team globex, want none (all or nothing)", n)
	}

	releases[0]()
	for deadline := time.Now().Add(5 * time.Second); count("team:acme") != 2; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("a released slot was not freed")
		}
	}
	if _, err := ls[1].Acquire(ctx, slots, time.Minute); err != nil {
		t.Errorf("a take after a release = %v", err)
	}
	// A holder that died never releases: its lease runs out.
	if _, err := dbs[0].Exec(`UPDATE concurrency_slots SET expires_at = now() - interval '1 second' WHERE holder IS NOT NULL`); err != nil {
		t.Fatal(err)
	}
	for range 3 {
		if _, err := ls[0].Acquire(ctx, slots, time.Minute); err != nil {
			t.Errorf("a take after the leases expired = %v", err)
		}
	}
	if n := count("team:acme"); n != 3 {
		t.Errorf("the team holds %d slots after the expiry, want the 3 new ones", n)
	}
	dbs[1].Close()
	if _, err := ls[1].Acquire(ctx, slots, time.Minute); askbi.ErrorCode(err) != askbi.Unavailable {
		t.Errorf("Acquire on a closed pool = %v, want unavailable", err)
	}
}

// BenchmarkLeases measures a data call's shared concurrency slots: Acquire
// of one team's and one source's slot and its release (whose delete runs
// in the background), from 8 goroutines at once, as 8 concurrent calls of
// one team take them, on one pool over loopback. A take must cost the
// same however many came before: compare the two runs.
//
//	ASKBI_REQUIRE_POSTGRES=1 go test -run '^$' -bench Leases -benchtime 3000x ./pgstore
//	ASKBI_REQUIRE_POSTGRES=1 go test -run '^$' -bench Leases -benchtime 30000x ./pgstore
func BenchmarkLeases(b *testing.B) {
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
	db.SetMaxOpenConns(16)
	db.SetMaxIdleConns(16)
	l := pgstore.NewLeases(db)
	slots := []dataexec.Slot{{Key: "team:acme", Max: 64}, {Key: "connection:wh", Max: 64}}
	var left atomic.Int64
	left.Store(int64(b.N))
	var wg sync.WaitGroup
	b.ResetTimer()
	for range 8 {
		wg.Go(func() {
			for left.Add(-1) >= 0 {
				release, err := l.Acquire(ctx, slots, time.Minute)
				if err != nil {
					b.Error(err)
					return
				}
				release()
			}
		})
	}
	wg.Wait()
}

// countedLeases counts the takes that reach the shared store.
type countedLeases struct {
	dataexec.Leases
	n atomic.Int64
}

func (c *countedLeases) Acquire(ctx context.Context, slots []dataexec.Slot, ttl time.Duration) (func(), error) {
	c.n.Add(1)
	return c.Leases.Acquire(ctx, slots, ttl)
}

// TestLeasePool: two instances, each keeping its slots in a
// dataexec.LeasePool, still share one bound (of 20 concurrent takes on a
// bound of 3, exactly 3 succeed); an instance that takes and releases
// over and over keeps its slot, with one take in the shared store for
// 100 calls; an idle slot goes back to the shared store after Idle, so
// the other instance can take it.
func TestLeasePool(t *testing.T) {
	ctx := context.Background()
	dbs := mustPools(t, 2)
	shared := []*countedLeases{{Leases: pgstore.NewLeases(dbs[0])}, {Leases: pgstore.NewLeases(dbs[1])}}
	pools := []*dataexec.LeasePool{
		dataexec.NewLeasePool(shared[0], &dataexec.LeasePoolOptions{Idle: 100 * time.Millisecond}),
		dataexec.NewLeasePool(shared[1], &dataexec.LeasePoolOptions{Idle: 100 * time.Millisecond}),
	}
	t.Cleanup(func() { pools[0].Close(); pools[1].Close() })
	slots := []dataexec.Slot{{Key: "team:acme", Max: 3}, {Key: "connection:wh", Max: 5}}
	held := func(key string) (n int) {
		t.Helper()
		if err := dbs[0].Get(&n, `SELECT count(*) FROM concurrency_slots WHERE key = $1 AND holder IS NOT NULL AND expires_at >= now()`, key); err != nil {
			t.Fatal(err)
		}
		return n
	}

	var mu sync.Mutex
	var releases []func()
	var wg sync.WaitGroup
	for i := range 20 {
		wg.Go(func() {
			rel, err := pools[i%2].Acquire(ctx, slots, time.Minute)
			mu.Lock()
			defer mu.Unlock()
			switch {
			case err == nil:
				releases = append(releases, rel)
			case askbi.ErrorCode(err) != askbi.RateLimited:
				t.Errorf("Acquire = %v", err)
			}
		})
	}
	wg.Wait()
	if len(releases) != 3 || held("team:acme") != 3 {
		t.Fatalf("20 takes on a bound of 3 across two pools: %d taken, %d held; want 3 and 3", len(releases), held("team:acme"))
	}
	for _, rel := range releases {
		rel()
	}

	before := shared[0].n.Load()
	for i := range 100 {
		rel, err := pools[0].Acquire(ctx, slots, time.Minute)
		if err != nil {
			t.Fatalf("call %d: %v", i, err)
		}
		rel()
	}
	if n := shared[0].n.Load() - before; n > 2 {
		t.Errorf("100 calls one after another took %d slots from the shared store; want at most the 2 keys' first", n)
	}
	for deadline := time.Now().Add(10 * time.Second); held("team:acme") != 0; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("idle slots were not given back: %d held", held("team:acme"))
		}
	}
	if rel, err := pools[1].Acquire(ctx, []dataexec.Slot{{Key: "team:acme", Max: 3}}, time.Minute); err != nil {
		t.Errorf("the other instance after the idle slots went back: %v", err)
	} else {
		rel()
	}
}
