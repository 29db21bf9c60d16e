package dataexec

import (
	"bytes"
	"context"
	"log/slog"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/askbi/askbi"
	"github.com/askbi/askbi/access"
)

type freshSource struct{ n int }

func (*freshSource) Query(context.Context, Query) (*Table, error) { return &Table{}, nil }

// TestSlotsPerSource: a source made afresh for each call counts under its
// connection; one Source value shared by two connections counts once for
// both.
func TestSlotsPerSource(t *testing.T) {
	s := newSlots(ConcurrencyOptions{MaxPerPrincipal: 10, MaxPerTeam: 10, MaxPerSource: 1}, time.Second)
	alice, bob := access.Principal{UserID: "alice", TeamID: "acme"}, access.Principal{UserID: "bob", TeamID: "globex"}
	release, err := s.acquire(context.Background(), alice, &freshSource{}, "mcp_conn")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.acquire(context.Background(), bob, &freshSource{}, "mcp_conn"); askbi.ErrorCode(err) != askbi.RateLimited {
		t.Errorf("a second call on the same connection through a fresh Source = %v, want rate_limited", err)
	}
	release()
	shared := &freshSource{}
	release, err = s.acquire(context.Background(), alice, shared, "wh_acme")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.acquire(context.Background(), bob, shared, "wh_globex"); askbi.ErrorCode(err) != askbi.RateLimited {
		t.Errorf("a call on another connection of the same Source = %v, want rate_limited", err)
	}
	release()
	if r, err := s.acquire(context.Background(), bob, shared, "wh_globex"); err != nil {
		t.Errorf("after release: %v", err)
	} else {
		r()
	}
}

// fakeLeases is a Leases whose answer a test sets.
type fakeLeases struct {
	err      error
	taken    [][]Slot
	released int
}

func (f *fakeLeases) Acquire(_ context.Context, slots []Slot, _ time.Duration) (func(), error) {
	if f.err != nil {
		return nil, f.err
	}
	f.taken = append(f.taken, slots)
	return func() { f.released++ }, nil
}

// TestSlotsShared: a call takes its team's and connection's slots in the
// shared Leases too, under their bounds; a shared refusal is the bound's
// own rate_limited, and frees the local slots; while the shared slots are
// unavailable the local bounds still hold, and the outage is logged once.
func TestSlotsShared(t *testing.T) {
	ctx := context.Background()
	shared := &fakeLeases{}
	var logs bytes.Buffer
	s := newSlots(ConcurrencyOptions{MaxPerPrincipal: 2, MaxPerTeam: 3, MaxPerSource: 4, Shared: shared,
		Logger: slog.New(slog.NewTextHandler(&logs, nil))}, 15*time.Second)
	alice := access.Principal{UserID: "alice", TeamID: "acme"}
	rel, err := s.acquire(ctx, alice, nil, "wh")
	if err != nil {
		t.Fatal(err)
	}
	if want := [][]Slot{{{"team:acme", 3}, {"connection:wh", 4}}}; !slices.EqualFunc(shared.taken, want, slices.Equal) {
		t.Errorf("shared slots taken = %v, want %v", shared.taken, want)
	}
	rel()
	if shared.released != 1 || s.team["acme"] != 0 {
		t.Errorf("after release: %d shared released, %d local team slots; want 1 and 0", shared.released, s.team["acme"])
	}

	for _, tc := range []struct{ key, msg string }{
		{"team:acme", "your team already has 3 queries running"},
		{"connection:wh", "this data source is busy (4 queries running)"},
	} {
		shared.err = &askbi.Error{Code: askbi.RateLimited, Err: &SlotFull{Key: tc.key}}
		_, err := s.acquire(ctx, alice, nil, "wh")
		if askbi.ErrorCode(err) != askbi.RateLimited || !strings.HasPrefix(askbi.ErrorMessage(err), tc.msg) {
			t.Errorf("shared %s full = %v, want rate_limited %q", tc.key, err, tc.msg)
		}
		if s.principal["acme/alice"] != 0 {
			t.Errorf("a shared refusal kept %d local slots", s.principal["acme/alice"])
		}
	}

	shared.err = askbi.Errorf(askbi.Unavailable, "down")
	for i := range 3 {
		_, err := s.acquire(ctx, alice, nil, "wh")
		switch {
		case i < 2 && err != nil:
			t.Errorf("call %d while the shared slots are down = %v, want the local bound to serve", i, err)
		case i == 2 && askbi.ErrorCode(err) != askbi.RateLimited:
			t.Errorf("call past the local bound while the shared slots are down = %v, want rate_limited", err)
		}
	}
	if n := strings.Count(logs.String(), "slots are unavailable"); n != 1 {
		t.Errorf("the outage was logged %d times, want once:\n%s", n, logs.String())
	}
}
