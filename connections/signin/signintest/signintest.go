// Package signintest holds the conformance suites of package signin:
// [signin.FlowStore] (Run), and the refresh of a connection's tokens by
// instances sharing a connection store and leases ([RunRefresh]). A host
// runs them against its own stores:
//
//	func TestFlowStore(t *testing.T) {
//		signintest.Run(t, func(t *testing.T) signin.FlowStore { return newFlowStore(t) })
//	}
//
// Run them with -race: of concurrent takes of one flow exactly one must
// win, and of concurrent refreshes one must reach the provider.
package signintest

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/askbi/askbi"
	"github.com/askbi/askbi/connections/signin"
	"github.com/askbi/askbi/seal"
)

// at is the suite's fixed time.
var at = time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)

// Run proves that the flow stores newStore makes behave as
// [signin.FlowStore] documents: round trips, Conflict on a taken ID,
// single use (of concurrent takes of one flow exactly one wins), a taken
// flow put back, and purging expired flows only.
func Run(t *testing.T, newStore func(t *testing.T) signin.FlowStore) {
	flow := func(id string, expires time.Time) signin.Flow {
		return signin.Flow{ID: id, ConnectionID: "conn_a", TeamID: "acme", UserID: "alice", ConversationID: "conv_1",
			Secret:    seal.Box{KeyID: "k1", Nonce: []byte{1, 2}, Ciphertext: []byte{3, 0, 4}},
			CreatedAt: at, ExpiresAt: expires}
	}
	t.Run("RoundTrip", func(t *testing.T) {
		s := newStore(t)
		want := flow("fl1", at.Add(10*time.Minute))
		if err := s.CreateFlow(t.Context(), want); err != nil {
			t.Fatalf("CreateFlow: %v", err)
		}
		if err := s.CreateFlow(t.Context(), flow("fl1", at)); askbi.ErrorCode(err) != askbi.Conflict {
			t.Errorf("CreateFlow of a taken ID = %v; want conflict", err)
		}
		got, err := s.TakeFlow(t.Context(), "fl1")
		if err != nil {
			t.Fatalf("TakeFlow: %v", err)
		}
		got.CreatedAt, got.ExpiresAt = got.CreatedAt.UTC(), got.ExpiresAt.UTC()
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("TakeFlow mismatch (-want +got):\n%s", diff)
		}
		if _, err := s.TakeFlow(t.Context(), "fl1"); askbi.ErrorCode(err) != askbi.NotFound {
			t.Errorf("TakeFlow again = %v; want not_found (single use)", err)
		}
		if _, err := s.TakeFlow(t.Context(), "fl_unknown"); askbi.ErrorCode(err) != askbi.NotFound {
			t.Errorf("TakeFlow of an unknown ID = %v; want not_found", err)
		}
	})
	t.Run("SingleUse", func(t *testing.T) {
		s := newStore(t)
		if err := s.CreateFlow(t.Context(), flow("fl1", at.Add(time.Hour))); err != nil {
			t.Fatal(err)
		}
		var mu sync.Mutex
		wins := 0
		var wg sync.WaitGroup
		for range 8 {
			wg.Go(func() {
				if _, err := s.TakeFlow(context.Background(), "fl1"); err == nil {
					mu.Lock()
					wins++
					mu.Unlock()
				} else if askbi.ErrorCode(err) != askbi.NotFound {
					t.Errorf("TakeFlow: %v", err)
				}
			})
		}
		wg.Wait()
		if wins != 1 {
			t.Errorf("%d of 8 concurrent takes got the flow; want 1", wins)
		}
	})
	// A taken flow can be put back (a code exchange that got no answer)
	// and taken once more.
	t.Run("PutBack", func(t *testing.T) {
		s := newStore(t)
		want := flow("fl1", at.Add(10*time.Minute))
		if err := s.CreateFlow(t.Context(), want); err != nil {
			t.Fatal(err)
		}
		taken, err := s.TakeFlow(t.Context(), "fl1")
		if err != nil {
			t.Fatal(err)
		}
		if err := s.CreateFlow(t.Context(), taken); err != nil {
			t.Fatalf("CreateFlow of a taken flow = %v; want it put back", err)
		}
		got, err := s.TakeFlow(t.Context(), "fl1")
		if err != nil {
			t.Fatalf("TakeFlow of a flow put back: %v", err)
		}
		got.CreatedAt, got.ExpiresAt = got.CreatedAt.UTC(), got.ExpiresAt.UTC()
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("the flow put back mismatch (-want +got):\n%s", diff)
		}
		if _, err := s.TakeFlow(t.Context(), "fl1"); askbi.ErrorCode(err) != askbi.NotFound {
			t.Errorf("TakeFlow again = %v; want not_found", err)
		}
	})
	t.Run("Purge", func(t *testing.T) {
		s := newStore(t)
		for i, exp := range []time.Time{at.Add(-time.Minute), at.Add(-time.Second), at.Add(time.Minute)} {
			if err := s.CreateFlow(t.Context(), flow(fmt.Sprint("fl", i), exp)); err != nil {
				t.Fatal(err)
			}
		}
		n, err := s.PurgeFlows(t.Context(), at)
		if err != nil || n != 2 {
			t.Errorf("PurgeFlows = %d, %v; want 2", n, err)
		}
		if _, err := s.TakeFlow(t.Context(), "fl2"); err != nil {
			t.Errorf("the unexpired flow was purged: %v", err)
		}
		if _, err := s.TakeFlow(t.Context(), "fl0"); askbi.ErrorCode(err) != askbi.NotFound {
			t.Errorf("an expired flow survived the purge: %v", err)
		}
	})
}
