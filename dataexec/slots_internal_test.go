package dataexec

import (
	"context"
	"testing"

	"github.com/askbi/askbi"
	"github.com/askbi/askbi/access"
)

type freshSource struct{ n int }

func (*freshSource) Query(context.Context, Query) (*Table, error) { return &Table{}, nil }

// TestSlotsPerSource: a source made afresh for each call counts under its
// connection; one Source value shared by two connections counts once for
// both.
func TestSlotsPerSource(t *testing.T) {
	s := newSlots(ConcurrencyOptions{MaxPerPrincipal: 10, MaxPerTeam: 10, MaxPerSource: 1})
	alice, bob := access.Principal{UserID: "alice", TeamID: "acme"}, access.Principal{UserID: "bob", TeamID: "globex"}
	release, err := s.acquire(alice, &freshSource{}, "mcp_conn")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.acquire(bob, &freshSource{}, "mcp_conn"); askbi.ErrorCode(err) != askbi.RateLimited {
		t.Errorf("a second call on the same connection through a fresh Source = %v, want rate_limited", err)
	}
	release()
	shared := &freshSource{}
	release, err = s.acquire(alice, shared, "wh_acme")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.acquire(bob, shared, "wh_globex"); askbi.ErrorCode(err) != askbi.RateLimited {
		t.Errorf("a call on another connection of the same Source = %v, want rate_limited", err)
	}
	release()
	if r, err := s.acquire(bob, shared, "wh_globex"); err != nil {
		t.Errorf("after release: %v", err)
	} else {
		r()
	}
}
