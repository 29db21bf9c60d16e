// Package accesstest holds conformance suites for the storage interfaces of
// package access. A host runs them against its own adapter:
//
//	func TestKeyStore(t *testing.T) {
//		accesstest.RunKeyStore(t, func(t *testing.T) access.KeyStore { return newStore(t) })
//	}
package accesstest

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/askbi/askbi"
	"github.com/askbi/askbi/access"
)

// RunKeyStore proves that the stores made by newStore behave as
// [access.KeyStore] documents. Each subtest gets a fresh, empty store.
func RunKeyStore(t *testing.T, newStore func(t *testing.T) access.KeyStore) {
	ctx := context.Background()
	t0 := time.Date(2026, 11, 30, 8, 0, 0, 0, time.UTC)
	key := func(id, prefix, team, user string, created time.Time) access.Key {
		return access.Key{
			ID: id, Prefix: prefix, Hash: []byte("0123456789abcdef0123456789abcdef"),
			Name: "key " + id, UserID: user, TeamID: team,
			Scopes:    []access.Scope{access.ScopeDataRead, access.ScopeDataRefresh},
			Projects:  access.ProjectSet("growth", "finance"),
			CreatedAt: created,
		}
	}
	opts := cmp.Options{cmpopts.EquateEmpty(), cmp.Comparer(func(a, b time.Time) bool { return a.Equal(b) })}

	t.Run("CreateAndLookup", func(t *testing.T) {
		s := newStore(t)
		want := key("k1", "pfx1", "acme", "alice", t0)
		if err := s.Create(ctx, want); err != nil {
			t.Fatalf("Create: %v", err)
		}
		got, err := s.ByPrefix(ctx, "pfx1")
		if err != nil {
			t.Fatalf("ByPrefix: %v", err)
		}
		if diff := cmp.Diff(want, got, opts); diff != "" {
			t.Errorf("ByPrefix mismatch (-want +got):\n%s", diff)
		}
		all := key("k2", "pfx2", "acme", "alice", t0.Add(time.Second))
		all.Projects = access.AllProjects()
		if err := s.Create(ctx, all); err != nil {
			t.Fatalf("Create: %v", err)
		}
		got, err = s.ByPrefix(ctx, "pfx2")
		if err != nil {
			t.Fatalf("ByPrefix: %v", err)
		}
		if diff := cmp.Diff(all, got, opts); diff != "" {
			t.Errorf("all-project key mismatch (-want +got):\n%s", diff)
		}
	})

	t.Run("UnknownPrefix", func(t *testing.T) {
		s := newStore(t)
		if _, err := s.ByPrefix(ctx, "nope"); askbi.ErrorCode(err) != askbi.NotFound {
			t.Errorf("ByPrefix(unknown) = %v, want not_found", err)
		}
	})

	t.Run("Duplicates", func(t *testing.T) {
		s := newStore(t)
		if err := s.Create(ctx, key("k1", "pfx1", "acme", "alice", t0)); err != nil {
			t.Fatal(err)
		}
		for _, k := range []access.Key{key("k1", "other", "acme", "alice", t0), key("k2", "pfx1", "acme", "alice", t0)} {
			if err := s.Create(ctx, k); askbi.ErrorCode(err) != askbi.Conflict {
				t.Errorf("Create(%s, %s) = %v, want conflict", k.ID, k.Prefix, err)
			}
		}
	})

	t.Run("ListNewestFirstAndIsolated", func(t *testing.T) {
		s := newStore(t)
		for _, k := range []access.Key{
			key("k1", "p1", "acme", "alice", t0),
			key("k2", "p2", "acme", "alice", t0.Add(time.Hour)),
			key("k3", "p3", "acme", "bob", t0),
			key("k4", "p4", "globex", "alice", t0),
		} {
			if err := s.Create(ctx, k); err != nil {
				t.Fatal(err)
			}
		}
		got, err := s.List(ctx, "acme", "alice")
		if err != nil {
			t.Fatal(err)
		}
		var ids []string
		for _, k := range got {
			ids = append(ids, k.ID)
		}
		if diff := cmp.Diff([]string{"k2", "k1"}, ids); diff != "" {
			t.Errorf("List mismatch (-want +got):\n%s", diff)
		}
		got, err = s.List(ctx, "initech", "alice")
		if err != nil || len(got) != 0 {
			t.Errorf("List(other team) = %v, %v; want empty", got, err)
		}
	})

	t.Run("RevokeAndTouch", func(t *testing.T) {
		s := newStore(t)
		if err := s.Create(ctx, key("k1", "p1", "acme", "alice", t0)); err != nil {
			t.Fatal(err)
		}
		used := t0.Add(time.Minute)
		if err := s.Touch(ctx, "k1", used); err != nil {
			t.Fatalf("Touch: %v", err)
		}
		revoked := t0.Add(2 * time.Minute)
		if err := s.Revoke(ctx, "k1", revoked); err != nil {
			t.Fatalf("Revoke: %v", err)
		}
		if err := s.Revoke(ctx, "k1", revoked.Add(time.Hour)); err != nil {
			t.Fatalf("second Revoke: %v", err)
		}
		got, err := s.ByPrefix(ctx, "p1")
		if err != nil {
			t.Fatal(err)
		}
		if !got.LastUsedAt.Equal(used) || !got.RevokedAt.Equal(revoked) {
			t.Errorf("LastUsedAt, RevokedAt = %v, %v; want %v, %v", got.LastUsedAt, got.RevokedAt, used, revoked)
		}
		if err := s.Revoke(ctx, "nope", revoked); askbi.ErrorCode(err) != askbi.NotFound {
			t.Errorf("Revoke(unknown) = %v, want not_found", err)
		}
		if err := s.Touch(ctx, "nope", revoked); askbi.ErrorCode(err) != askbi.NotFound {
			t.Errorf("Touch(unknown) = %v, want not_found", err)
		}
	})

	t.Run("ConcurrentCreateSamePrefix", func(t *testing.T) {
		s := newStore(t)
		var wg sync.WaitGroup
		errs := make([]error, 8)
		for i := range errs {
			wg.Go(func() {
				errs[i] = s.Create(ctx, key("k"+string(rune('a'+i)), "same", "acme", "alice", t0))
			})
		}
		wg.Wait()
		ok := 0
		for _, err := range errs {
			switch askbi.ErrorCode(err) {
			case "":
				ok++
			case askbi.Conflict:
			default:
				t.Errorf("Create = %v, want nil or conflict", err)
			}
		}
		if ok != 1 {
			t.Errorf("%d creates of one prefix succeeded, want 1", ok)
		}
	})
}

// RunRateLimiter proves that the limiters made by newLimiter, each with a
// budget of burst requests at once and rate per second after that, behave
// as [access.RateLimiter] documents: a key's burst is spent once, however
// many goroutines (or, for a shared limiter, instances: newLimiter may
// return a second view of one store) spend it at once; the refusal is
// RateLimited with a retry hint; keys do not share budgets. A test of
// refilling needs the limiter's clock and stays with each limiter.
func RunRateLimiter(t *testing.T, newLimiter func(t *testing.T, rate float64, burst int) access.RateLimiter) {
	ctx := context.Background()
	t.Run("Burst", func(t *testing.T) {
		l := newLimiter(t, 0.001, 5)
		for i := range 5 {
			if err := l.Allow(ctx, "k"); err != nil {
				t.Fatalf("call %d within the burst = %v", i+1, err)
			}
		}
		err := l.Allow(ctx, "k")
		if askbi.ErrorCode(err) != askbi.RateLimited {
			t.Fatalf("call past the burst = %v, want rate_limited", err)
		}
		if s, ok := askbi.RetryAfter(err); !ok || s <= 0 {
			t.Errorf("rate_limited without a retry hint: %v", err)
		}
		if err := l.Allow(ctx, "other"); err != nil {
			t.Errorf("another key = %v, want its own budget", err)
		}
	})
	t.Run("Concurrent", func(t *testing.T) {
		l := newLimiter(t, 0.001, 5)
		var mu sync.Mutex
		allowed, refused := 0, 0
		var wg sync.WaitGroup
		for range 36 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				err := l.Allow(ctx, "k")
				mu.Lock()
				defer mu.Unlock()
				switch askbi.ErrorCode(err) {
				case "":
					allowed++
				case askbi.RateLimited:
					refused++
				default:
					t.Errorf("Allow = %v", err)
				}
			}()
		}
		wg.Wait()
		if allowed != 5 || refused != 31 {
			t.Errorf("36 concurrent calls on a burst of 5: %d allowed, %d refused; want 5 and 31", allowed, refused)
		}
	})
}

// RunTokenSource proves that the sources made by newSource, each with a
// budget of burst tokens at once and rate per second after that, behave
// as [access.TokenSource] documents: Take gives as many whole tokens as
// the bucket holds up to what was asked, none (with a wait) once it is
// empty, never more than the burst however many goroutines (or, for a
// shared source, instances) take at once, and a key's tokens are its
// own.
func RunTokenSource(t *testing.T, newSource func(t *testing.T, rate float64, burst int) access.TokenSource) {
	ctx := context.Background()
	t.Run("Batches", func(t *testing.T) {
		s := newSource(t, 0.001, 5)
		for i, want := range []int{3, 2, 0} {
			got, wait, err := s.Take(ctx, "k", 3)
			if err != nil || got != want {
				t.Fatalf("take %d of 3 = %d, %v; want %d", i+1, got, err, want)
			}
			if want == 0 && wait <= 0 {
				t.Errorf("an empty bucket gave no wait")
			}
		}
		if got, _, err := s.Take(ctx, "other", 10); err != nil || got != 5 {
			t.Errorf("another key took %d, %v; want its own 5", got, err)
		}
	})
	t.Run("Concurrent", func(t *testing.T) {
		s := newSource(t, 0.001, 15)
		var mu sync.Mutex
		total := 0
		var wg sync.WaitGroup
		for range 20 {
			wg.Go(func() {
				got, _, err := s.Take(ctx, "k", 2)
				if err != nil {
					t.Errorf("Take = %v", err)
				}
				mu.Lock()
				total += got
				mu.Unlock()
			})
		}
		wg.Wait()
		if total != 15 {
			t.Errorf("20 concurrent takes of 2 on a burst of 15 took %d; want 15", total)
		}
	})
}
