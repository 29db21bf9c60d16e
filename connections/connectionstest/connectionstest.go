// Package connectionstest holds the conformance suite of
// [connections.Store] (Run). A host runs it against its own store:
//
//	func TestStore(t *testing.T) {
//		connectionstest.Run(t, func(t *testing.T) connections.Store { return newStore(t) })
//	}
//
// It proves what the Store documentation promises: round trips of every
// field, the team-unique name, NotFound, that Update writes nothing when
// its function fails, that concurrent Updates of one connection never
// lose a change (the row lock), and that an Update whose function waits
// holds up no other connection. Run it with -race.
package connectionstest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/askbi/askbi"
	"github.com/askbi/askbi/connections"
	"github.com/askbi/askbi/dataexec"
	"github.com/askbi/askbi/seal"
)

// Run proves that the stores newStore makes behave as [connections.Store]
// documents. Each case calls newStore for an empty store.
func Run(t *testing.T, newStore func(t *testing.T) connections.Store) {
	t.Run("RoundTrip", func(t *testing.T) {
		s := newStore(t)
		want := sample("conn_a", "acme", "Analytics")
		if err := s.Create(t.Context(), want); err != nil {
			t.Fatalf("Create: %v", err)
		}
		got, err := s.Get(t.Context(), "conn_a")
		if err != nil {
			t.Fatalf("Get: %v", err)
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("Get mismatch (-want +got):\n%s", diff)
		}
		empty := connections.State{Record: connections.Record{Connection: connections.Connection{ID: "conn_e", TeamID: "acme", Name: "Empty",
			URL: "http://127.0.0.1:9/mcp", Auth: connections.AuthNone, CreatedAt: at, UpdatedAt: at}}}
		if err := s.Create(t.Context(), empty); err != nil {
			t.Fatal(err)
		}
		got, _ = s.Get(t.Context(), "conn_e")
		if len(got.Tools) != 0 || got.Token.KeyID != "" || got.Discovery.Error != nil || got.SignIn != nil || got.SetupConversation != "" {
			t.Errorf("an empty connection came back as %+v", got)
		}
	})

	t.Run("Names", func(t *testing.T) {
		s := newStore(t)
		mustCreate(t, s, sample("conn_a", "acme", "Analytics"))
		for _, tc := range []struct {
			st   connections.State
			code askbi.Code
		}{
			{sample("conn_a", "globex", "Other"), askbi.Conflict},   // the ID is taken
			{sample("conn_b", "acme", "analytics"), askbi.Conflict}, // the name, in any case
			{sample("conn_c", "globex", "Analytics"), ""},           // another team may use it
		} {
			if err := s.Create(t.Context(), tc.st); askbi.ErrorCode(err) != tc.code && !(tc.code == "" && err == nil) {
				t.Errorf("Create(%s, %s, %q) = %v; want %q", tc.st.ID, tc.st.TeamID, tc.st.Name, err, tc.code)
			}
		}
		mustCreate(t, s, sample("conn_d", "acme", "CRM"))
		_, err := s.Update(t.Context(), "conn_d", func(st *connections.State) error { st.Name = "ANALYTICS"; return nil })
		if askbi.ErrorCode(err) != askbi.Conflict {
			t.Errorf("Update to a taken name = %v; want conflict", err)
		}
		if got, _ := s.Get(t.Context(), "conn_d"); got.Name != "CRM" {
			t.Errorf("a refused rename left the name %q", got.Name)
		}
	})

	t.Run("List", func(t *testing.T) {
		s := newStore(t)
		mustCreate(t, s, sample("conn_2", "acme", "Beta"))
		mustCreate(t, s, sample("conn_1", "acme", "Alpha"))
		mustCreate(t, s, sample("conn_3", "globex", "Alpha"))
		ids := func(team string) []string {
			sts, err := s.List(t.Context(), team)
			if err != nil {
				t.Fatalf("List: %v", err)
			}
			out := []string{}
			for _, st := range sts {
				out = append(out, st.ID)
				if len(st.Tools) != 2 {
					t.Errorf("List(%q) returned %s with %d tools; want 2", team, st.ID, len(st.Tools))
				}
			}
			return out
		}
		if diff := cmp.Diff([]string{"conn_1", "conn_2"}, ids("acme")); diff != "" {
			t.Errorf("List(acme) (-want +got):\n%s", diff)
		}
		if diff := cmp.Diff([]string{"conn_1", "conn_3", "conn_2"}, ids("")); diff != "" {
			t.Errorf("List(all) (-want +got):\n%s", diff)
		}
		if diff := cmp.Diff([]string{}, ids("initech")); diff != "" {
			t.Errorf("List(unknown team) (-want +got):\n%s", diff)
		}
	})

	t.Run("Update", func(t *testing.T) {
		s := newStore(t)
		mustCreate(t, s, sample("conn_a", "acme", "Analytics"))
		want, _ := s.Get(t.Context(), "conn_a")
		boom := errors.New("boom")
		if _, err := s.Update(t.Context(), "conn_a", func(st *connections.State) error {
			st.Name, st.Tools = "Changed", nil
			return boom
		}); !errors.Is(err, boom) {
			t.Errorf("Update whose fn fails = %v; want fn's error", err)
		}
		if got, _ := s.Get(t.Context(), "conn_a"); !cmp.Equal(want, got) {
			t.Errorf("a failed Update wrote: %s", cmp.Diff(want, got))
		}
		got, err := s.Update(t.Context(), "conn_a", func(st *connections.State) error {
			st.ID, st.TeamID, st.CreatedAt = "conn_x", "globex", at.Add(time.Hour) // kept as stored
			st.Tools = append(st.Tools[:1], connections.Tool{Name: "new.tool", Class: dataexec.ClassUnknown, Present: true})
			st.Tools[0].Access.Allowed = false
			st.Active, st.Version = false, 7
			st.Token = seal.Box{}
			st.HasToken = false
			st.SignIn.State, st.SignIn.StepUp = connections.SignInNeeded, nil
			return nil
		})
		if err != nil {
			t.Fatalf("Update: %v", err)
		}
		stored, _ := s.Get(t.Context(), "conn_a")
		if diff := cmp.Diff(got, stored); diff != "" {
			t.Errorf("Update's answer differs from what is stored (-answer +stored):\n%s", diff)
		}
		if stored.ID != "conn_a" || stored.TeamID != "acme" || !stored.CreatedAt.Equal(at) || len(stored.Tools) != 2 ||
			stored.Tools[1].Name != "new.tool" || stored.Tools[0].Access.Allowed || stored.Version != 7 || stored.HasToken ||
			stored.SignIn.State != connections.SignInNeeded || stored.SignIn.StepUp != nil || stored.Provider != "PostHog" {
			t.Errorf("after Update: %+v", stored)
		}
		if _, err := s.Update(t.Context(), "conn_missing", func(*connections.State) error { return nil }); askbi.ErrorCode(err) != askbi.NotFound {
			t.Errorf("Update of an unknown id = %v; want not_found", err)
		}
	})

	// The row lock: of many concurrent read-change-writes of one
	// connection, none is lost.
	t.Run("UpdateLock", func(t *testing.T) {
		s := newStore(t)
		st := sample("conn_a", "acme", "Analytics")
		st.Tools = nil
		for i := range 16 {
			st.Tools = append(st.Tools, connections.Tool{Name: fmt.Sprintf("t%02d", i), Class: dataexec.ClassReadOnly, Present: true})
		}
		mustCreate(t, s, st)
		var wg sync.WaitGroup
		for i := range 16 {
			wg.Go(func() {
				_, err := s.Update(context.Background(), "conn_a", func(st *connections.State) error {
					st.Tools[i].Access.Allowed = true
					st.Version++
					time.Sleep(time.Millisecond) // widen the window a lost update needs
					return nil
				})
				if err != nil {
					t.Errorf("Update: %v", err)
				}
			})
		}
		wg.Wait()
		got, _ := s.Get(t.Context(), "conn_a")
		allowed := 0
		for _, tl := range got.Tools {
			if tl.Access.Allowed {
				allowed++
			}
		}
		if allowed != 16 || got.Version != st.Version+16 {
			t.Errorf("after 16 concurrent updates: %d tools allowed, version %d; want 16 and %d", allowed, got.Version, st.Version+16)
		}
	})

	// Update's function may do I/O (an OAuth refresh): meanwhile only
	// that connection waits. Reads of it see what was stored before, and
	// other connections' Updates go on.
	t.Run("UpdateHoldsOneConnection", func(t *testing.T) {
		s := newStore(t)
		mustCreate(t, s, sample("conn_a", "acme", "Analytics"))
		mustCreate(t, s, sample("conn_b", "acme", "CRM"))
		inFn, release, slow := make(chan struct{}), make(chan struct{}), make(chan error, 1)
		go func() {
			_, err := s.Update(context.Background(), "conn_a", func(st *connections.State) error {
				close(inFn)
				<-release
				st.Name = "Slow"
				return nil
			})
			slow <- err
		}()
		<-inFn
		others := make(chan error, 1)
		go func() {
			ctx := context.Background()
			if st, err := s.Get(ctx, "conn_a"); err != nil || st.Name != "Analytics" {
				others <- fmt.Errorf("Get during the update = %q, %v; want the stored name", st.Name, err)
				return
			}
			if _, err := s.List(ctx, ""); err != nil {
				others <- err
				return
			}
			_, err := s.Update(ctx, "conn_b", func(st *connections.State) error { st.ToolFocus = "deals"; return nil })
			others <- err
		}()
		// A deadlock detector, not a speed target: the others need no
		// time at all, but a store that holds one lock for every
		// connection would wait here for ever.
		select {
		case err := <-others:
			if err != nil {
				t.Error(err)
			}
		case <-time.After(10 * time.Second):
			t.Error("Get, List or another connection's Update waited for the function of conn_a's Update")
			close(release)
			<-others
			<-slow
			return
		}
		close(release)
		if err := <-slow; err != nil {
			t.Fatalf("the slow Update: %v", err)
		}
		if got, _ := s.Get(t.Context(), "conn_a"); got.Name != "Slow" {
			t.Errorf("after the slow Update the name is %q; want Slow", got.Name)
		}
	})

	t.Run("Delete", func(t *testing.T) {
		s := newStore(t)
		mustCreate(t, s, sample("conn_a", "acme", "Analytics"))
		if err := s.Delete(t.Context(), "conn_a"); err != nil {
			t.Fatalf("Delete: %v", err)
		}
		if _, err := s.Get(t.Context(), "conn_a"); askbi.ErrorCode(err) != askbi.NotFound {
			t.Errorf("Get after Delete = %v; want not_found", err)
		}
		if err := s.Delete(t.Context(), "conn_a"); askbi.ErrorCode(err) != askbi.NotFound {
			t.Errorf("Delete again = %v; want not_found", err)
		}
		mustCreate(t, s, sample("conn_b", "acme", "Analytics")) // the name is free again
	})
}

var at = time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)

func boolp(b bool) *bool { return &b }

// sample is a connection with every field set.
func sample(id, team, name string) connections.State {
	return connections.State{
		Record: connections.Record{
			Connection: connections.Connection{ID: id, TeamID: team, Name: name, URL: "https://mcp.example.com/mcp?team=" + team,
				Auth: connections.AuthBearer, HasToken: true, Active: true, ToolFocus: "weekly signups", Version: 3, Provider: "PostHog",
				SignIn: &connections.SignIn{State: connections.SignedIn, Issuer: "https://auth.example.com", Scopes: []string{"read", "offline_access"},
					At: at, StepUp: []string{"write"}, Error: &connections.ErrorInfo{Code: askbi.Forbidden, Message: "refused", At: at}},
				Discovery: connections.Discovery{At: at, Tools: 2, Shown: 2, Excluded: 1, LeftOut: 4000, Unread: true,
					Error: &connections.ErrorInfo{Code: askbi.Unavailable, Message: "unreachable", At: at.Add(time.Minute)}},
				CreatedAt: at, UpdatedAt: at.Add(time.Second)},
			Token:             seal.Box{KeyID: "k1", Nonce: []byte{1, 2, 3}, Ciphertext: []byte{4, 5, 6, 0}},
			SetupConversation: "conv_1",
		},
		Tools: []connections.Tool{
			{Name: "top_pages", Title: "Top pages", Description: "Pages by visitors. <b>untrusted</b> \u0000 \"q\"",
				InputSchema: json.RawMessage(`{"properties":{"days":{"type":"integer"}},"type":"object"}`),
				Hints:       connections.Hints{ReadOnly: boolp(true), OpenWorld: boolp(false)}, Class: dataexec.ClassReadOnly,
				SchemaHash: "s1", DescriptionHash: "d1", Present: true, Selected: true,
				Access: connections.Access{Allowed: true, ApprovedClass: dataexec.ClassReadOnly, ApprovedSchemaHash: "s1",
					ApprovedDescriptionHash: "d0", ApprovedBy: "alice", ApprovedAt: at, DescriptionChanged: true}},
			{Name: "drop.all", Class: dataexec.ClassDestructive, Hints: connections.Hints{Destructive: boolp(true)}, Excluded: "bad schema",
				Access: connections.Access{Reapprove: "its input schema changed"}},
		},
	}
}

func mustCreate(t *testing.T, s connections.Store, st connections.State) {
	t.Helper()
	if err := s.Create(t.Context(), st); err != nil {
		t.Fatalf("Create(%s): %v", st.ID, err)
	}
}
