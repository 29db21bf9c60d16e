// Package asktest holds conformance suites for the storage interfaces of
// package ask, one suite per interface. The in-memory stores and the
// PostgreSQL stores of the reference server run them, and a host runs them
// against its own adapter. Every suite takes a function making fresh,
// empty [ask.Stores] and proves one field, using the others to set up what
// it needs (the conversations of a TurnStore, the approvals of a
// ReceiptStore), since the stores of one ask.Stores share state:
//
//	func newStores(t *testing.T) ask.Stores { return mystore.NewAskStores(mustDB(t)) }
//
//	func TestConversationStore(t *testing.T) { asktest.RunConversationStore(t, newStores) }
//	func TestTurnStore(t *testing.T)         { asktest.RunTurnStore(t, newStores) }
//	func TestContextStore(t *testing.T)      { asktest.RunContextStore(t, newStores) }
//	func TestToolRunStore(t *testing.T)      { asktest.RunToolRunStore(t, newStores) }
//	func TestApprovalStore(t *testing.T)     { asktest.RunApprovalStore(t, newStores) }
//	func TestReceiptStore(t *testing.T)      { asktest.RunReceiptStore(t, newStores) }
//
// JSON fields (Output, Result, a tool call's Arguments) must come back as
// the same JSON value, not byte for byte, so a store may keep them as
// jsonb; Approval.Arguments is canonical JSON that was hashed, and must come
// back byte for byte. Times must come back as the same instant; the suites
// use whole seconds.
package asktest

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/askbi/askbi"
	"github.com/askbi/askbi/access"
	"github.com/askbi/askbi/ask"
	"github.com/askbi/askbi/dataexec"
	"github.com/askbi/askbi/workspace"
)

// t0 is the suites' clock: the time everything starts at.
var t0 = time.Date(2026, 11, 30, 8, 0, 0, 0, time.UTC)

// diffOptions compare times as instants, JSON as values, and nil and empty
// slices as equal.
var diffOptions = cmp.Options{
	cmp.FilterPath(func(p cmp.Path) bool { return p.Last().Type() != reflect.TypeFor[json.RawMessage]() }, cmpopts.EquateEmpty()),
	cmp.Comparer(func(a, b time.Time) bool { return a.Equal(b) }),
	cmp.Comparer(sameJSON),
}

// sameJSON reports whether a and b hold the same JSON value, or are both
// empty.
func sameJSON(a, b json.RawMessage) bool {
	if len(a) == 0 || len(b) == 0 {
		return len(a) == len(b)
	}
	var va, vb any
	if json.Unmarshal(a, &va) != nil || json.Unmarshal(b, &vb) != nil {
		return string(a) == string(b)
	}
	return reflect.DeepEqual(va, vb)
}

// wantCode fails t unless err carries code ("" for success).
func wantCode(t *testing.T, err error, code askbi.Code, call string) {
	t.Helper()
	if got := askbi.ErrorCode(err); got != code {
		if code == "" {
			t.Fatalf("%s: %v, want success", call, err)
		}
		t.Fatalf("%s = %v, want %s", call, err, code)
	}
}

func conv(id, team, user string, updated time.Time) ask.Conversation {
	return ask.Conversation{ID: id, TeamID: team, UserID: user, Title: "About " + id, CreatedAt: t0, UpdatedAt: updated}
}

func mustCreate(t *testing.T, s ask.ConversationStore, cs ...ask.Conversation) {
	t.Helper()
	ctx := context.Background()
	for _, c := range cs {
		wantCode(t, s.CreateConversation(ctx, c), "", "CreateConversation("+c.ID+")")
	}
}

func mustAppend(t *testing.T, s ask.TurnStore, e ask.Entry) ask.Entry {
	t.Helper()
	ctx := context.Background()
	got, err := s.AppendEntry(ctx, e)
	wantCode(t, err, "", "AppendEntry("+e.ID+")")
	return got
}

func mustEntries(t *testing.T, s ask.TurnStore, id string, limit int) []ask.Entry {
	t.Helper()
	ctx := context.Background()
	got, err := s.Entries(ctx, id, limit)
	wantCode(t, err, "", fmt.Sprintf("Entries(%s, %d)", id, limit))
	return got
}

func mustTurns(t *testing.T, s ask.TurnStore, id string) []ask.Turn {
	t.Helper()
	ctx := context.Background()
	got, err := s.Turns(ctx, id)
	wantCode(t, err, "", "Turns("+id+")")
	return got
}

func mustContext(t *testing.T, s ask.ContextStore, id string) []ask.ContextRef {
	t.Helper()
	ctx := context.Background()
	got, err := s.Context(ctx, id)
	wantCode(t, err, "", "Context("+id+")")
	return got
}

func mustRuns(t *testing.T, s ask.ToolRunStore, id string) []ask.ToolRun {
	t.Helper()
	ctx := context.Background()
	got, err := s.ToolRuns(ctx, id)
	wantCode(t, err, "", "ToolRuns("+id+")")
	return got
}

func ids(cs []ask.Conversation) []string {
	out := []string{}
	for _, c := range cs {
		out = append(out, c.ID)
	}
	return out
}

func entry(convID, id string, role ask.Role, at time.Time) ask.Entry {
	e := ask.Entry{ID: id, ConversationID: convID, TurnID: "turn1", Role: role, Text: "text of " + id, CreatedAt: at}
	if role == ask.RoleUser {
		// A user message's attachments are kept as given.
		e.Sharing = ask.SharingRows
		e.Attachments = []ask.AttachmentInfo{{Name: "signups.csv", Type: "text/csv", Size: 9, Text: "a,b\n1,2\n"},
			{Name: "big.log", Type: "text/plain", Size: 30000, Truncated: true}, {Name: "chart.png", Type: "image/png", Size: 70}}
		// So are the items it was sent with, in order.
		e.Context = []ask.SentItem{{EntityType: access.TypeChart, ID: "c-weekly", Name: "Weekly signups", Label: "Chart: Weekly signups"},
			{EntityType: access.TypeDashboard, ID: "d-growth", Name: "Growth \"overview\" ✓", Label: "Dashboard: Growth \"overview\" ✓"}}
	}
	return e
}

func ref(typ access.EntityType, id string) ask.ContextRef { return ask.ContextRef{Type: typ, ID: id} }

func run(convID, callID string, at time.Time) ask.ToolRun {
	return ask.ToolRun{CallID: callID, ConversationID: convID, TurnID: "turn1", Tool: "run_dataset", Label: "Previewed data",
		State: ask.RunRunning, Retry: true, CreatedAt: at, UpdatedAt: at}
}

// deleteDrops proves that ConversationStore.DeleteConversation drops what
// put stored for a conversation (count then sees 0) and nothing of
// another's, and that a conversation created again under the deleted ID
// starts empty.
func deleteDrops(t *testing.T, s ask.Stores, what string, put func(t *testing.T, convID string), count func(t *testing.T, convID string) int) {
	t.Helper()
	ctx := context.Background()
	mustCreate(t, s.Conversations, conv("x", "acme", "alice", t0), conv("y", "acme", "alice", t0))
	put(t, "x")
	put(t, "y")
	if got := count(t, "x"); got == 0 {
		t.Fatalf("x has no %s before DeleteConversation", what)
	}
	wantCode(t, s.Conversations.DeleteConversation(ctx, "x"), "", "DeleteConversation(x)")
	if got := count(t, "x"); got != 0 {
		t.Errorf("x has %d %s after DeleteConversation, want 0", got, what)
	}
	if got := count(t, "y"); got != 1 {
		t.Errorf("y has %d %s after deleting x, want 1", got, what)
	}
	mustCreate(t, s.Conversations, conv("x", "acme", "alice", t0))
	if got := count(t, "x"); got != 0 {
		t.Errorf("x created again has %d %s, want 0", got, what)
	}
}

// RunConversationStore proves that the Conversations of the stores made
// by newStores behave as [ask.ConversationStore] documents. Each subtest
// gets fresh, empty stores.
//
// Beyond the interface's comments it expects a limit of 0 to list nothing.
// That DeleteConversation drops turns, entries, context and tool runs is
// proved by the suites of those stores.
func RunConversationStore(t *testing.T, newStores func(t *testing.T) ask.Stores) {
	ctx := context.Background()

	t.Run("CreateAndGet", func(t *testing.T) {
		s := newStores(t).Conversations
		want := conv("c1", "acme", "alice", t0.Add(time.Minute))
		mustCreate(t, s, want)
		got, err := s.Conversation(ctx, "c1")
		wantCode(t, err, "", "Conversation(c1)")
		if diff := cmp.Diff(want, got, diffOptions); diff != "" {
			t.Errorf("Conversation mismatch (-want +got):\n%s", diff)
		}
		again := conv("c1", "globex", "carol", t0)
		wantCode(t, s.CreateConversation(ctx, again), askbi.Conflict, "CreateConversation(existing c1)")
		got, _ = s.Conversation(ctx, "c1")
		if diff := cmp.Diff(want, got, diffOptions); diff != "" {
			t.Errorf("Conversation after conflict mismatch (-want +got):\n%s", diff)
		}
		_, err = s.Conversation(ctx, "nope")
		wantCode(t, err, askbi.NotFound, "Conversation(unknown)")
	})

	t.Run("ListNewestFirstLimitedAndIsolated", func(t *testing.T) {
		s := newStores(t).Conversations
		mustCreate(t, s,
			conv("a1", "acme", "alice", t0),
			conv("a2", "acme", "alice", t0.Add(2*time.Hour)),
			conv("a3", "acme", "alice", t0.Add(time.Hour)),
			conv("b1", "acme", "bob", t0.Add(3*time.Hour)),
			conv("g1", "globex", "alice", t0.Add(3*time.Hour)),
		)
		tests := []struct {
			team, user string
			limit      int
			want       []string
		}{
			{"acme", "alice", 10, []string{"a2", "a3", "a1"}},
			{"acme", "alice", 3, []string{"a2", "a3", "a1"}},
			{"acme", "alice", 2, []string{"a2", "a3"}},
			{"acme", "alice", 1, []string{"a2"}},
			{"acme", "alice", 0, []string{}},
			{"acme", "bob", 10, []string{"b1"}},
			{"globex", "alice", 10, []string{"g1"}},
			{"globex", "bob", 10, []string{}},
		}
		for _, tt := range tests {
			t.Run(fmt.Sprintf("%s/%s/%d", tt.team, tt.user, tt.limit), func(t *testing.T) {
				got, err := s.Conversations(ctx, tt.team, tt.user, tt.limit)
				wantCode(t, err, "", "Conversations")
				if diff := cmp.Diff(tt.want, ids(got)); diff != "" {
					t.Errorf("Conversations mismatch (-want +got):\n%s", diff)
				}
			})
		}
		got, _ := s.Conversations(ctx, "acme", "alice", 1)
		if diff := cmp.Diff([]ask.Conversation{conv("a2", "acme", "alice", t0.Add(2*time.Hour))}, got, diffOptions); diff != "" {
			t.Errorf("listed conversation mismatch (-want +got):\n%s", diff)
		}
	})

	t.Run("UpdateSetsTitleAndUpdatedAtOnly", func(t *testing.T) {
		s := newStores(t).Conversations
		a1, a2 := conv("a1", "acme", "alice", t0), conv("a2", "acme", "alice", t0.Add(time.Hour))
		mustCreate(t, s, a1, a2)
		wantCode(t, s.UpdateConversation(ctx, ask.Conversation{ID: "a1", TeamID: "globex", UserID: "mallory",
			Title: "Renamed", CreatedAt: t0.Add(time.Hour), UpdatedAt: t0.Add(2 * time.Hour)}), "", "UpdateConversation(a1)")
		want := a1
		want.Title, want.UpdatedAt = "Renamed", t0.Add(2*time.Hour)
		got, err := s.Conversation(ctx, "a1")
		wantCode(t, err, "", "Conversation(a1)")
		if diff := cmp.Diff(want, got, diffOptions); diff != "" {
			t.Errorf("updated conversation mismatch (-want +got):\n%s", diff)
		}
		list, _ := s.Conversations(ctx, "acme", "alice", 10)
		if diff := cmp.Diff([]string{"a1", "a2"}, ids(list)); diff != "" {
			t.Errorf("order after update mismatch (-want +got):\n%s", diff)
		}
		wantCode(t, s.UpdateConversation(ctx, conv("nope", "acme", "alice", t0)), askbi.NotFound, "UpdateConversation(unknown)")
		if _, err := s.Conversation(ctx, "nope"); askbi.ErrorCode(err) != askbi.NotFound {
			t.Errorf("UpdateConversation(unknown) created it: %v", err)
		}
	})

	t.Run("Delete", func(t *testing.T) {
		s := newStores(t).Conversations
		mustCreate(t, s, conv("x", "acme", "alice", t0), conv("y", "acme", "alice", t0))
		wantCode(t, s.DeleteConversation(ctx, "x"), "", "DeleteConversation(x)")
		_, err := s.Conversation(ctx, "x")
		wantCode(t, err, askbi.NotFound, "Conversation(deleted)")
		wantCode(t, s.DeleteConversation(ctx, "x"), askbi.NotFound, "DeleteConversation(deleted)")
		wantCode(t, s.DeleteConversation(ctx, "nope"), askbi.NotFound, "DeleteConversation(unknown)")
		if list, _ := s.Conversations(ctx, "acme", "alice", 10); !cmp.Equal([]string{"y"}, ids(list)) {
			t.Errorf("Conversations after delete = %v, want [y]", ids(list))
		}
	})
}

// RunTurnStore proves that the Turns of the stores made by newStores
// behave as [ask.TurnStore] documents, their conversations kept by
// Conversations. Each subtest gets fresh, empty stores.
//
// Beyond the interface's comments it expects that saving a turn again
// keeps the CreatedAt it was first saved with (so the list keeps its
// order), that an unknown conversation has empty lists rather than errors
// (those methods name no code), and that a limit of 0 lists nothing.
func RunTurnStore(t *testing.T, newStores func(t *testing.T) ask.Stores) {
	ctx := context.Background()

	t.Run("Turns", func(t *testing.T) {
		st := newStores(t)
		s := st.Turns
		mustCreate(t, st.Conversations, conv("c1", "acme", "alice", t0), conv("c2", "acme", "alice", t0))
		t1 := ask.Turn{ID: "t1", ConversationID: "c1", State: ask.TurnRunning, CreatedAt: t0, UpdatedAt: t0}
		t2 := ask.Turn{ID: "t2", ConversationID: "c1", State: ask.TurnAwaitingApproval, CreatedAt: t0.Add(time.Minute), UpdatedAt: t0.Add(time.Minute)}
		t0b := ask.Turn{ID: "t0", ConversationID: "c1", State: ask.TurnCompleted, CreatedAt: t0.Add(-time.Minute), UpdatedAt: t0}
		other := ask.Turn{ID: "t9", ConversationID: "c2", State: ask.TurnRunning, CreatedAt: t0, UpdatedAt: t0}
		for _, tu := range []ask.Turn{t1, t2, t0b, other} {
			wantCode(t, s.SaveTurn(ctx, tu), "", "SaveTurn("+tu.ID+")")
		}
		t1.State, t1.ErrorCode, t1.UpdatedAt = ask.TurnFailed, string(askbi.Timeout), t0.Add(2*time.Minute)
		t1.Usage = ask.Usage{InputTokens: 5200, CachedInputTokens: 4096, CacheWriteTokens: 12, OutputTokens: 310}
		again := t1
		again.CreatedAt = t0.Add(time.Hour) // a turn keeps its first CreatedAt, and its place
		wantCode(t, s.SaveTurn(ctx, again), "", "SaveTurn(t1 again)")
		if diff := cmp.Diff([]ask.Turn{t0b, t1, t2}, mustTurns(t, s, "c1"), diffOptions); diff != "" {
			t.Errorf("Turns mismatch (-want +got):\n%s", diff)
		}
		if diff := cmp.Diff([]ask.Turn{other}, mustTurns(t, s, "c2"), diffOptions); diff != "" {
			t.Errorf("Turns of c2 mismatch (-want +got):\n%s", diff)
		}
		wantCode(t, s.SaveTurn(ctx, ask.Turn{ID: "t1", ConversationID: "nope", State: ask.TurnRunning, CreatedAt: t0}), askbi.NotFound, "SaveTurn(unknown conversation)")
		if got := mustTurns(t, s, "nope"); len(got) != 0 {
			t.Errorf("Turns(unknown) = %v, want none", got)
		}
		got, err := s.Turn(ctx, "c1", "t1")
		wantCode(t, err, "", "Turn(c1, t1)")
		if diff := cmp.Diff(t1, got, diffOptions); diff != "" {
			t.Errorf("Turn mismatch (-want +got):\n%s", diff)
		}
		for _, k := range [][2]string{{"c2", "t1"}, {"c1", "t9"}, {"nope", "t1"}, {"c1", "nope"}} {
			_, err := s.Turn(ctx, k[0], k[1])
			wantCode(t, err, askbi.NotFound, "Turn("+k[0]+", "+k[1]+")")
		}
	})

	// RenewTurn is a running turn's lease: it moves UpdatedAt only while
	// the turn runs, and says when it no longer does.
	t.Run("RenewTurn", func(t *testing.T) {
		st := newStores(t)
		s := st.Turns
		mustCreate(t, st.Conversations, conv("c1", "acme", "alice", t0))
		running := ask.Turn{ID: "t1", ConversationID: "c1", State: ask.TurnRunning, CreatedAt: t0, UpdatedAt: t0}
		ended := ask.Turn{ID: "t2", ConversationID: "c1", State: ask.TurnFailed, ErrorCode: string(askbi.Unavailable), CreatedAt: t0, UpdatedAt: t0}
		for _, tu := range []ask.Turn{running, ended} {
			wantCode(t, s.SaveTurn(ctx, tu), "", "SaveTurn("+tu.ID+")")
		}
		later := t0.Add(5 * time.Second)
		ok, err := s.RenewTurn(ctx, "c1", "t1", later)
		wantCode(t, err, "", "RenewTurn(running)")
		if !ok {
			t.Errorf("RenewTurn(running) = false, want true")
		}
		ok, err = s.RenewTurn(ctx, "c1", "t2", later)
		wantCode(t, err, "", "RenewTurn(ended)")
		if ok {
			t.Errorf("RenewTurn(ended) = true, want false")
		}
		running.UpdatedAt = later
		if diff := cmp.Diff([]ask.Turn{running, ended}, mustTurns(t, s, "c1"), diffOptions); diff != "" {
			t.Errorf("Turns after RenewTurn mismatch (-want +got):\n%s", diff)
		}
		for _, k := range [][2]string{{"c1", "nope"}, {"nope", "t1"}} {
			_, err := s.RenewTurn(ctx, k[0], k[1], later)
			wantCode(t, err, askbi.NotFound, "RenewTurn("+k[0]+", "+k[1]+")")
		}
	})

	t.Run("EntriesSeqAndLimit", func(t *testing.T) {
		st := newStores(t)
		s := st.Turns
		mustCreate(t, st.Conversations, conv("c1", "acme", "alice", t0), conv("c2", "acme", "alice", t0))
		var all []ask.Entry
		var last int64
		for i, role := range []ask.Role{ask.RoleUser, ask.RoleAssistant, ask.RoleTool, ask.RoleAssistant, ask.RoleUser} {
			in := entry("c1", fmt.Sprintf("e%d", i), role, t0.Add(time.Duration(i)*time.Second))
			got := mustAppend(t, s, in)
			if got.Seq <= last {
				t.Fatalf("AppendEntry(e%d).Seq = %d, want more than %d", i, got.Seq, last)
			}
			last = got.Seq
			in.Seq = got.Seq
			if diff := cmp.Diff(in, got, diffOptions); diff != "" {
				t.Errorf("AppendEntry(e%d) mismatch (-want +got):\n%s", i, diff)
			}
			all = append(all, in)
			// Another conversation's history does not interleave.
			mustAppend(t, s, entry("c2", fmt.Sprintf("o%d", i), ask.RoleUser, t0))
		}
		for _, limit := range []int{0, 1, 3, 5, 10} {
			t.Run(fmt.Sprint(limit), func(t *testing.T) {
				want := all[max(len(all)-limit, 0):]
				if diff := cmp.Diff(want, mustEntries(t, s, "c1", limit), diffOptions); diff != "" {
					t.Errorf("Entries(c1, %d) mismatch (-want +got):\n%s", limit, diff)
				}
			})
		}
		_, err := s.AppendEntry(ctx, entry("nope", "e9", ask.RoleUser, t0))
		wantCode(t, err, askbi.NotFound, "AppendEntry(unknown conversation)")
		if got := mustEntries(t, s, "nope", 10); len(got) != 0 {
			t.Errorf("Entries(unknown) = %v, want none", got)
		}
	})

	t.Run("ConcurrentAppendsGetDistinctSeqs", func(t *testing.T) {
		st := newStores(t)
		s := st.Turns
		mustCreate(t, st.Conversations, conv("c1", "acme", "alice", t0), conv("c2", "acme", "alice", t0))
		const n = 25 // per conversation
		seqs := make([]int64, 2*n)
		errs := make([]error, 2*n)
		var wg sync.WaitGroup
		for i := range 2 * n {
			wg.Go(func() {
				var e ask.Entry
				e, errs[i] = s.AppendEntry(ctx, entry([]string{"c1", "c2"}[i%2], fmt.Sprintf("e%03d", i), ask.RoleUser, t0))
				seqs[i] = e.Seq
			})
		}
		wg.Wait()
		for i, err := range errs {
			wantCode(t, err, "", fmt.Sprintf("AppendEntry(e%03d)", i))
		}
		for c, id := range []string{"c1", "c2"} {
			got := mustEntries(t, s, id, 2*n)
			if len(got) != n {
				t.Fatalf("Entries(%s) holds %d entries, want %d", id, len(got), n)
			}
			returned := map[string]int64{}
			for i := c; i < 2*n; i += 2 {
				returned[fmt.Sprintf("e%03d", i)] = seqs[i]
			}
			stored := map[string]int64{}
			for i, e := range got {
				if i > 0 && e.Seq <= got[i-1].Seq {
					t.Errorf("Entries(%s)[%d].Seq = %d after %d; want increasing", id, i, e.Seq, got[i-1].Seq)
				}
				stored[e.ID] = e.Seq
			}
			if diff := cmp.Diff(returned, stored); diff != "" {
				t.Errorf("stored Seqs of %s differ from those AppendEntry returned (-returned +stored):\n%s", id, diff)
			}
		}
	})

	t.Run("EntryJSONRoundTrips", func(t *testing.T) {
		st := newStores(t)
		s := st.Turns
		mustCreate(t, st.Conversations, conv("c1", "acme", "alice", t0))
		asked := entry("c1", "e1", ask.RoleAssistant, t0)
		asked.ToolCalls = []ask.ToolCall{
			{ID: "call1", Name: "run_dataset", Arguments: json.RawMessage(`{"dataset_id": "ds1", "refresh": false, "limit": 20}`)},
			{ID: "call2", Name: "create_chart_preview", Arguments: json.RawMessage(`{"zeta":{"b":[1,2.5,null],"a":"grüße \u00e9 😀"},"alpha":true}`)},
			{ID: "call3", Name: "search_workspace", Arguments: json.RawMessage(`{}`)},
		}
		output := entry("c1", "e2", ask.RoleTool, t0.Add(time.Second))
		output.Text = ""
		output.ToolCallID, output.Tool, output.Sharing = "call1", "run_dataset", ask.SharingAggregates
		output.Output = json.RawMessage(` {"fields": [{"name": "week", "type": "date"}], "rows": [["2026-11-23", 41.5], ["<&>", -0.25]], "truncated": false} `)
		for _, e := range []ask.Entry{asked, output} {
			mustAppend(t, s, e)
		}
		got := mustEntries(t, s, "c1", 10)
		if len(got) != 2 {
			t.Fatalf("Entries holds %d entries, want 2", len(got))
		}
		asked.Seq, output.Seq = got[0].Seq, got[1].Seq
		if diff := cmp.Diff([]ask.Entry{asked, output}, got, diffOptions); diff != "" {
			t.Errorf("Entries mismatch (-want +got):\n%s", diff)
		}
	})

	t.Run("StoredValuesAreCopies", func(t *testing.T) {
		st := newStores(t)
		s := st.Turns
		mustCreate(t, st.Conversations, conv("c1", "acme", "alice", t0))
		e := entry("c1", "e1", ask.RoleAssistant, t0)
		e.ToolCalls = []ask.ToolCall{{ID: "call1", Name: "run_dataset", Arguments: json.RawMessage(`{"a":1}`)}}
		e.Output = json.RawMessage(`{"b":2}`)
		got := mustAppend(t, s, e)
		want := got
		want.ToolCalls = []ask.ToolCall{{ID: "call1", Name: "run_dataset", Arguments: json.RawMessage(`{"a":1}`)}}
		want.Output = json.RawMessage(`{"b":2}`)
		e.ToolCalls[0].Arguments[5], e.Output[5] = '7', '7'
		e.ToolCalls[0].ID = "changed"
		got.ToolCalls[0].Arguments[5], got.Output[5] = '8', '8'
		got.ToolCalls[0].Name = "changed"
		stored := mustEntries(t, s, "c1", 1)
		if diff := cmp.Diff([]ask.Entry{want}, stored, diffOptions); diff != "" {
			t.Errorf("Entries after changing values passed and returned mismatch (-want +got):\n%s", diff)
		}
		stored[0].ToolCalls[0].Arguments[5] = '9'
		if diff := cmp.Diff([]ask.Entry{want}, mustEntries(t, s, "c1", 1), diffOptions); diff != "" {
			t.Errorf("Entries after changing a listed value mismatch (-want +got):\n%s", diff)
		}
	})

	t.Run("DeleteConversationDropsTurns", func(t *testing.T) {
		st := newStores(t)
		s := st.Turns
		deleteDrops(t, st, "turns", func(t *testing.T, id string) {
			wantCode(t, s.SaveTurn(ctx, ask.Turn{ID: "turn1", ConversationID: id, State: ask.TurnRunning, CreatedAt: t0, UpdatedAt: t0}), "", "SaveTurn")
		}, func(t *testing.T, id string) int { return len(mustTurns(t, s, id)) })
	})

	t.Run("DeleteConversationDropsEntries", func(t *testing.T) {
		st := newStores(t)
		s := st.Turns
		deleteDrops(t, st, "entries", func(t *testing.T, id string) {
			mustAppend(t, s, entry(id, "e-"+id, ask.RoleUser, t0))
		}, func(t *testing.T, id string) int { return len(mustEntries(t, s, id, 10)) })
	})
}

// RunContextStore proves that the Context of the stores made by newStores
// behaves as [ask.ContextStore] documents, its conversations kept by
// Conversations. Each subtest gets fresh, empty stores.
//
// Beyond the interface's comments it expects what SPEC.md asks of the
// active context (repeated refs are dropped, the first kept), and that an
// unknown conversation has an empty context rather than an error.
func RunContextStore(t *testing.T, newStores func(t *testing.T) ask.Stores) {
	ctx := context.Background()

	t.Run("SetContextReplaces", func(t *testing.T) {
		st := newStores(t)
		s := st.Context
		mustCreate(t, st.Conversations, conv("c1", "acme", "alice", t0), conv("c2", "acme", "alice", t0))
		a, b, c, d := ref(access.TypeChart, "ch1"), ref(access.TypeDashboard, "d1"), ref(access.TypeDataset, "ds1"), ref(access.TypeChart, "ch2")
		// A chart and a dashboard may share an ID; they are different refs.
		sameID := ref(access.TypeDashboard, "ch1")
		wantCode(t, s.SetContext(ctx, "c2", []ask.ContextRef{d}), "", "SetContext(c2)")
		steps := []struct {
			name string
			set  []ask.ContextRef
			want []ask.ContextRef
		}{
			{"initial", []ask.ContextRef{a, b, c}, []ask.ContextRef{a, b, c}},
			{"reorder, drop and add", []ask.ContextRef{c, d, a}, []ask.ContextRef{c, d, a}},
			{"same ID other type", []ask.ContextRef{a, sameID}, []ask.ContextRef{a, sameID}},
			{"repeats dropped", []ask.ContextRef{b, b, a, b}, []ask.ContextRef{b, a}},
			{"empty clears", []ask.ContextRef{}, nil},
			{"set again", []ask.ContextRef{d}, []ask.ContextRef{d}},
			{"nil clears", nil, nil},
		}
		for _, st := range steps {
			wantCode(t, s.SetContext(ctx, "c1", st.set), "", "SetContext("+st.name+")")
			if diff := cmp.Diff(st.want, mustContext(t, s, "c1"), diffOptions); diff != "" {
				t.Errorf("Context after %s mismatch (-want +got):\n%s", st.name, diff)
			}
		}
		if diff := cmp.Diff([]ask.ContextRef{d}, mustContext(t, s, "c2"), diffOptions); diff != "" {
			t.Errorf("Context of c2 mismatch (-want +got):\n%s", diff)
		}
		wantCode(t, s.SetContext(ctx, "nope", []ask.ContextRef{a}), askbi.NotFound, "SetContext(unknown)")
		wantCode(t, s.SetContext(ctx, "nope", nil), askbi.NotFound, "SetContext(unknown, nil)")
		if got := mustContext(t, s, "nope"); len(got) != 0 {
			t.Errorf("Context(unknown) = %v, want none", got)
		}
	})

	t.Run("ConcurrentSetContextIsAtomic", func(t *testing.T) {
		st := newStores(t)
		s := st.Context
		mustCreate(t, st.Conversations, conv("c1", "acme", "alice", t0))
		var sets [][]ask.ContextRef
		for i := range 20 {
			set := []ask.ContextRef{}
			for j := range 4 {
				set = append(set, ref(access.TypeChart, fmt.Sprintf("ch%d", (i+j*3)%7)))
			}
			sets = append(sets, set)
		}
		var wg sync.WaitGroup
		errs := make([]error, len(sets))
		for i, set := range sets {
			wg.Go(func() { errs[i] = s.SetContext(ctx, "c1", set) })
		}
		wg.Wait()
		for i, err := range errs {
			wantCode(t, err, "", fmt.Sprintf("SetContext(set %d)", i))
		}
		got := mustContext(t, s, "c1")
		for _, set := range sets {
			if cmp.Equal(set, got) {
				return
			}
		}
		t.Errorf("Context after concurrent SetContext = %v, which is none of the sets written", got)
	})

	t.Run("StoredValuesAreCopies", func(t *testing.T) {
		st := newStores(t)
		s := st.Context
		mustCreate(t, st.Conversations, conv("c1", "acme", "alice", t0))
		refs := []ask.ContextRef{ref(access.TypeChart, "ch1")}
		wantCode(t, s.SetContext(ctx, "c1", refs), "", "SetContext")
		refs[0].ID = "changed"
		listed := mustContext(t, s, "c1")
		listed[0].ID = "changed too"
		if diff := cmp.Diff([]ask.ContextRef{ref(access.TypeChart, "ch1")}, mustContext(t, s, "c1")); diff != "" {
			t.Errorf("Context after changing values mismatch (-want +got):\n%s", diff)
		}
	})

	t.Run("DeleteConversationDropsContext", func(t *testing.T) {
		st := newStores(t)
		s := st.Context
		deleteDrops(t, st, "context refs", func(t *testing.T, id string) {
			wantCode(t, s.SetContext(ctx, id, []ask.ContextRef{ref(access.TypeChart, "ch1")}), "", "SetContext")
		}, func(t *testing.T, id string) int { return len(mustContext(t, s, id)) })
	})
}

// RunToolRunStore proves that the ToolRuns of the stores made by newStores
// behave as [ask.ToolRunStore] documents, their conversations kept by
// Conversations. Each subtest gets fresh, empty stores.
//
// Beyond the interface's comments it expects that saving a run again keeps
// the CreatedAt it was first saved with (so the list keeps its order), and
// that an unknown conversation has no runs rather than an error.
func RunToolRunStore(t *testing.T, newStores func(t *testing.T) ask.Stores) {
	ctx := context.Background()

	t.Run("ToolRuns", func(t *testing.T) {
		st := newStores(t)
		s := st.ToolRuns
		mustCreate(t, st.Conversations, conv("c1", "acme", "alice", t0), conv("c2", "acme", "alice", t0))
		r1, r2, early := run("c1", "call1", t0), run("c1", "call2", t0.Add(time.Minute)), run("c1", "call0", t0.Add(-time.Minute))
		other := run("c2", "call9", t0)
		for _, r := range []ask.ToolRun{r1, r2, early, other} {
			wantCode(t, s.SaveToolRun(ctx, r), "", "SaveToolRun("+r.CallID+")")
		}
		r1.State, r1.ErrorCode, r1.ErrorMessage, r1.Retry = ask.RunFailed, string(askbi.Timeout), "The operation timed out.", false
		r1.ApprovalID, r1.Result, r1.UpdatedAt = "apr1", json.RawMessage(`{"status":"unavailable"}`), t0.Add(2*time.Minute)
		again := r1
		again.CreatedAt = t0.Add(time.Hour) // a run keeps its first CreatedAt, and its place
		wantCode(t, s.SaveToolRun(ctx, again), "", "SaveToolRun(call1 again)")
		if diff := cmp.Diff([]ask.ToolRun{early, r1, r2}, mustRuns(t, s, "c1"), diffOptions); diff != "" {
			t.Errorf("ToolRuns mismatch (-want +got):\n%s", diff)
		}
		if diff := cmp.Diff([]ask.ToolRun{other}, mustRuns(t, s, "c2"), diffOptions); diff != "" {
			t.Errorf("ToolRuns of c2 mismatch (-want +got):\n%s", diff)
		}
		wantCode(t, s.SaveToolRun(ctx, run("nope", "call1", t0)), askbi.NotFound, "SaveToolRun(unknown conversation)")
		if got := mustRuns(t, s, "nope"); len(got) != 0 {
			t.Errorf("ToolRuns(unknown) = %v, want none", got)
		}
	})

	t.Run("ResultJSONRoundTrips", func(t *testing.T) {
		st := newStores(t)
		s := st.ToolRuns
		mustCreate(t, st.Conversations, conv("c1", "acme", "alice", t0))
		r := run("c1", "call2", t0)
		r.State, r.ApprovalID = ask.RunCompleted, "apr1"
		r.Result = json.RawMessage(`{"status": "preview", "chart": {"id": "ch9", "name": "Signups"}, "datasets": [{"id": "ds1"}]}`)
		wantCode(t, s.SaveToolRun(ctx, r), "", "SaveToolRun")
		if diff := cmp.Diff([]ask.ToolRun{r}, mustRuns(t, s, "c1"), diffOptions); diff != "" {
			t.Errorf("ToolRuns mismatch (-want +got):\n%s", diff)
		}
	})

	t.Run("StoredValuesAreCopies", func(t *testing.T) {
		st := newStores(t)
		s := st.ToolRuns
		mustCreate(t, st.Conversations, conv("c1", "acme", "alice", t0))
		r := run("c1", "call1", t0)
		r.Result = json.RawMessage(`{"c":3}`)
		wantCode(t, s.SaveToolRun(ctx, r), "", "SaveToolRun")
		r.Result[5] = '7'
		runs := mustRuns(t, s, "c1")
		runs[0].Result[5] = '8'
		if got := mustRuns(t, s, "c1"); len(got) != 1 || string(got[0].Result) != `{"c":3}` {
			t.Errorf("ToolRuns after changing values = %+v, want Result {\"c\":3}", got)
		}
	})

	t.Run("DeleteConversationDropsToolRuns", func(t *testing.T) {
		st := newStores(t)
		s := st.ToolRuns
		deleteDrops(t, st, "tool runs", func(t *testing.T, id string) {
			wantCode(t, s.SaveToolRun(ctx, run(id, "call-"+id, t0)), "", "SaveToolRun")
		}, func(t *testing.T, id string) int { return len(mustRuns(t, s, id)) })
	})
}

// args is canonical JSON whose member order jsonb would change: a store
// must keep it byte for byte.
const args = `{"aa":1,"b":[1,2.5,"grüße"],"c":{"y":null,"x":"<&>"}}`

var argsHash = func() string { sum := sha256.Sum256([]byte(args)); return hex.EncodeToString(sum[:]) }()

// now is when the approval suites consume, reject and store receipts.
var now = t0.Add(time.Minute)

// approval is a pending approval of call callID, its targets named as
// its card showed them (with a dataset's scope).
func approval(id, callID string) ask.Approval {
	return ask.Approval{ID: id, UserID: "alice", TeamID: "acme", ConversationID: "c1", TurnID: "turn1",
		ToolCallID: callID, Tool: "create_dashboard", Target: "mcp:conn_1/create.dashboard@f1", ArgsHash: argsHash, Arguments: json.RawMessage(args),
		Targets: []dataexec.Ref{{Type: access.TypeDashboard, ID: "d1", Name: "Revenue", ProjectID: "finance", Info: "1 chart"},
			{Type: access.TypeDataset, ID: "ds1", Name: "EU signups", Scope: &dataexec.ScopeRef{
				Filters: []workspace.Filter{{Field: "country", Op: workspace.OpIn, Value: []any{"DE", "FR"}}}, Text: "country in (DE, FR)"}}},
		State: ask.ApprovalPending, CreatedAt: t0, ExpiresAt: t0.Add(5 * time.Minute)}
}

func bound(a ask.Approval) ask.Binding {
	return ask.Binding{UserID: a.UserID, TeamID: a.TeamID, ConversationID: a.ConversationID, Tool: a.Tool, Target: a.Target, ArgsHash: a.ArgsHash}
}

func mustCreateApprovals(t *testing.T, s ask.ApprovalStore, as ...ask.Approval) {
	t.Helper()
	ctx := context.Background()
	for _, a := range as {
		wantCode(t, s.CreateApproval(ctx, a), "", "CreateApproval("+a.ID+")")
	}
}

func mustApproval(t *testing.T, s ask.ApprovalStore, id string) ask.Approval {
	t.Helper()
	ctx := context.Background()
	a, err := s.Approval(ctx, id)
	wantCode(t, err, "", "Approval("+id+")")
	return a
}

func wantState(t *testing.T, s ask.ApprovalStore, id string, want ask.ApprovalState) {
	t.Helper()
	if got := mustApproval(t, s, id).State; got != want {
		t.Errorf("Approval(%s).State = %s, want %s", id, got, want)
	}
}

func mustConsume(t *testing.T, s ask.ApprovalStore, a ask.Approval) ask.Approval {
	t.Helper()
	ctx := context.Background()
	got, err := s.Consume(ctx, a.ID, bound(a), now)
	wantCode(t, err, "", "Consume("+a.ID+")")
	return got
}

func wantArgs(t *testing.T, got ask.Approval) {
	t.Helper()
	if string(got.Arguments) != args {
		t.Errorf("Arguments of %s = %s, want %s byte for byte", got.ID, got.Arguments, args)
	}
}

// RunApprovalStore proves that the Approvals of the stores made by
// newStores behave as [ask.ApprovalStore] documents, their receipts kept by
// Receipts. Each subtest gets fresh, empty stores.
//
// Beyond the interface's comments it expects CreateApproval to store every
// approval as pending whatever its State, and Reject to burn an approval
// even when another approval of its tool call was consumed (it runs
// nothing).
func RunApprovalStore(t *testing.T, newStores func(t *testing.T) ask.Stores) {
	ctx := context.Background()

	t.Run("CreateAndGet", func(t *testing.T) {
		// Every field comes back, the targets the card showed included.
		s := newStores(t).Approvals
		want := approval("a1", "call1")
		in := want
		in.State = ""
		mustCreateApprovals(t, s, in)
		got := mustApproval(t, s, "a1")
		if diff := cmp.Diff(want, got, diffOptions); diff != "" {
			t.Errorf("Approval mismatch (-want +got):\n%s", diff)
		}
		wantArgs(t, got)
		wantCode(t, s.CreateApproval(ctx, approval("a1", "call2")), askbi.Conflict, "CreateApproval(existing)")
		if got := mustApproval(t, s, "a1"); got.ToolCallID != "call1" {
			t.Errorf("CreateApproval(existing) changed it: %+v", got)
		}
		_, err := s.Approval(ctx, "nope")
		wantCode(t, err, askbi.NotFound, "Approval(unknown)")
	})

	t.Run("CreateStoresPending", func(t *testing.T) {
		s := newStores(t).Approvals
		for _, st := range []ask.ApprovalState{ask.ApprovalConsumed, ask.ApprovalRejected} {
			a := approval("a-"+string(st), "call-"+string(st))
			a.State = st
			mustCreateApprovals(t, s, a)
			wantState(t, s, a.ID, ask.ApprovalPending)
			mustConsume(t, s, a)
		}
	})

	t.Run("ConsumeOnce", func(t *testing.T) {
		s := newStores(t).Approvals
		a := approval("a1", "call1")
		mustCreateApprovals(t, s, a)
		got := mustConsume(t, s, a)
		want := a
		want.State = ask.ApprovalConsumed
		if diff := cmp.Diff(want, got, diffOptions); diff != "" {
			t.Errorf("Consume mismatch (-want +got):\n%s", diff)
		}
		wantArgs(t, got)
		if diff := cmp.Diff(want, mustApproval(t, s, "a1"), diffOptions); diff != "" {
			t.Errorf("Approval after Consume mismatch (-want +got):\n%s", diff)
		}
		_, err := s.Consume(ctx, "a1", bound(a), now)
		wantCode(t, err, askbi.ApprovalInvalid, "Consume(replay)")
		_, err = s.Reject(ctx, "a1", bound(a), now)
		wantCode(t, err, askbi.ApprovalInvalid, "Reject(consumed)")
		wantState(t, s, "a1", ask.ApprovalConsumed)
	})

	t.Run("BindingMismatch", func(t *testing.T) {
		a := approval("a1", "call1")
		other := func(change func(*ask.Binding)) ask.Binding {
			b := bound(a)
			change(&b)
			return b
		}
		otherHash := sha256.Sum256([]byte(`{"aa":2,"b":[1,2.5,"grüße"],"c":{"y":null,"x":"<&>"}}`))
		tests := []struct {
			name string
			b    ask.Binding
		}{
			{"user", other(func(b *ask.Binding) { b.UserID = "bob" })},
			{"team", other(func(b *ask.Binding) { b.TeamID = "globex" })},
			{"conversation", other(func(b *ask.Binding) { b.ConversationID = "c2" })},
			{"tool", other(func(b *ask.Binding) { b.Tool = "delete_dashboard" })},
			// A remote tool's target: another connection, or the same tool
			// after its definition widened (a new fingerprint).
			{"target connection", other(func(b *ask.Binding) { b.Target = "mcp:conn_2/create.dashboard@f1" })},
			{"target fingerprint", other(func(b *ask.Binding) { b.Target = "mcp:conn_1/create.dashboard@f2" })},
			{"empty target", other(func(b *ask.Binding) { b.Target = "" })},
			{"arguments", other(func(b *ask.Binding) { b.ArgsHash = hex.EncodeToString(otherHash[:]) })},
			{"empty user", other(func(b *ask.Binding) { b.UserID = "" })},
			{"empty arguments hash", other(func(b *ask.Binding) { b.ArgsHash = "" })},
			{"nothing", ask.Binding{}},
		}
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				s := newStores(t).Approvals
				mustCreateApprovals(t, s, a)
				_, err := s.Consume(ctx, "a1", tt.b, now)
				wantCode(t, err, askbi.ApprovalInvalid, "Consume(mismatched)")
				_, err = s.Reject(ctx, "a1", tt.b, now)
				wantCode(t, err, askbi.ApprovalInvalid, "Reject(mismatched)")
				wantState(t, s, "a1", ask.ApprovalPending)
				mustConsume(t, s, a)
			})
		}
	})

	t.Run("Expiry", func(t *testing.T) {
		a := approval("a1", "call1")
		for _, at := range []struct {
			name string
			now  time.Time
		}{
			{"at expiry", a.ExpiresAt},
			{"a second after", a.ExpiresAt.Add(time.Second)},
			{"a day after", a.ExpiresAt.Add(24 * time.Hour)},
		} {
			t.Run(at.name, func(t *testing.T) {
				s := newStores(t).Approvals
				mustCreateApprovals(t, s, a)
				_, err := s.Consume(ctx, "a1", bound(a), at.now)
				wantCode(t, err, askbi.ApprovalInvalid, "Consume(expired)")
				_, err = s.Reject(ctx, "a1", bound(a), at.now)
				wantCode(t, err, askbi.ApprovalInvalid, "Reject(expired)")
				wantState(t, s, "a1", ask.ApprovalPending)
				_, err = s.Consume(ctx, "a1", bound(a), a.ExpiresAt.Add(-time.Second))
				wantCode(t, err, "", "Consume(a second before expiry)")
			})
		}
	})

	t.Run("RejectBurns", func(t *testing.T) {
		s := newStores(t).Approvals
		a := approval("a1", "call1")
		mustCreateApprovals(t, s, a)
		got, err := s.Reject(ctx, "a1", bound(a), now)
		wantCode(t, err, "", "Reject")
		want := a
		want.State = ask.ApprovalRejected
		if diff := cmp.Diff(want, got, diffOptions); diff != "" {
			t.Errorf("Reject mismatch (-want +got):\n%s", diff)
		}
		wantState(t, s, "a1", ask.ApprovalRejected)
		_, err = s.Consume(ctx, "a1", bound(a), now)
		wantCode(t, err, askbi.ApprovalInvalid, "Consume(rejected)")
		_, err = s.Reject(ctx, "a1", bound(a), now)
		wantCode(t, err, askbi.ApprovalInvalid, "Reject(rejected)")
		wantState(t, s, "a1", ask.ApprovalRejected)
	})

	t.Run("UnknownID", func(t *testing.T) {
		s := newStores(t).Approvals
		a := approval("a1", "call1")
		mustCreateApprovals(t, s, a)
		_, err := s.Consume(ctx, "nope", bound(a), now)
		wantCode(t, err, askbi.ApprovalInvalid, "Consume(unknown)")
		_, err = s.Reject(ctx, "nope", bound(a), now)
		wantCode(t, err, askbi.ApprovalInvalid, "Reject(unknown)")
		wantState(t, s, "a1", ask.ApprovalPending)
	})

	t.Run("ParallelConsumeOneWins", func(t *testing.T) {
		s := newStores(t).Approvals
		a := approval("a1", "call1")
		mustCreateApprovals(t, s, a)
		errs := make([]error, 50)
		var wg sync.WaitGroup
		for i := range errs {
			wg.Go(func() { _, errs[i] = s.Consume(ctx, "a1", bound(a), now) })
		}
		wg.Wait()
		if got := successes(t, errs, askbi.ApprovalInvalid); got != 1 {
			t.Errorf("%d of %d parallel Consumes succeeded, want 1", got, len(errs))
		}
		wantState(t, s, "a1", ask.ApprovalConsumed)
	})

	t.Run("ParallelConsumeAndRejectOneWins", func(t *testing.T) {
		s := newStores(t).Approvals
		a := approval("a1", "call1")
		mustCreateApprovals(t, s, a)
		errs := make([]error, 50)
		states := make([]ask.ApprovalState, len(errs))
		var wg sync.WaitGroup
		for i := range errs {
			wg.Go(func() {
				var got ask.Approval
				if i%2 == 0 {
					got, errs[i] = s.Consume(ctx, "a1", bound(a), now)
				} else {
					got, errs[i] = s.Reject(ctx, "a1", bound(a), now)
				}
				states[i] = got.State
			})
		}
		wg.Wait()
		if got := successes(t, errs, askbi.ApprovalInvalid); got != 1 {
			t.Fatalf("%d of %d parallel Consumes and Rejects succeeded, want 1", got, len(errs))
		}
		for i, err := range errs {
			if err == nil {
				wantState(t, s, "a1", states[i])
			}
		}
	})

	t.Run("OtherApprovalOfConsumedCall", func(t *testing.T) {
		s := newStores(t).Approvals
		first, second, third := approval("a1", "call1"), approval("a2", "call1"), approval("a3", "call1")
		mustCreateApprovals(t, s, first, second, third)
		mustConsume(t, s, first)
		_, err := s.Consume(ctx, "a2", bound(second), now)
		wantCode(t, err, askbi.Conflict, "Consume(other approval of a consumed call)")
		wantState(t, s, "a2", ask.ApprovalPending)
		pending, err := s.Pending(ctx, "c1", now)
		wantCode(t, err, "", "Pending")
		if len(pending) != 0 {
			t.Errorf("Pending lists %d approvals of a call that already ran", len(pending))
		}
		_, err = s.Consume(ctx, "a2", ask.Binding{}, now)
		wantCode(t, err, askbi.ApprovalInvalid, "Consume(other approval of a consumed call, mismatched)")
		_, err = s.Reject(ctx, "a3", bound(third), now)
		wantCode(t, err, "", "Reject(other approval of a consumed call)")
		wantState(t, s, "a3", ask.ApprovalRejected)
		wantState(t, s, "a1", ask.ApprovalConsumed)
	})

	t.Run("ParallelApprovalsOfOneCallOneWins", func(t *testing.T) {
		s := newStores(t).Approvals
		as := []ask.Approval{approval("a1", "call1"), approval("a2", "call1"), approval("a3", "call1")}
		mustCreateApprovals(t, s, as...)
		errs := make([]error, 10*len(as))
		var wg sync.WaitGroup
		for i := range errs {
			a := as[i%len(as)]
			wg.Go(func() { _, errs[i] = s.Consume(ctx, a.ID, bound(a), now) })
		}
		wg.Wait()
		if got := successes(t, errs, askbi.ApprovalInvalid, askbi.Conflict); got != 1 {
			t.Errorf("%d of %d parallel Consumes of one call's approvals succeeded, want 1", got, len(errs))
		}
		consumed := 0
		for _, a := range as {
			if mustApproval(t, s, a.ID).State == ask.ApprovalConsumed {
				consumed++
			}
		}
		if consumed != 1 {
			t.Errorf("%d approvals of one call are consumed, want 1", consumed)
		}
	})

	t.Run("Release", func(t *testing.T) {
		st := newStores(t)
		s := st.Approvals
		a1, a2, a3, a4 := approval("a1", "call1"), approval("a2", "call1"), approval("a3", "call3"), approval("a4", "call4")
		mustCreateApprovals(t, s, a1, a2, a3, a4)
		mustConsume(t, s, a1)
		wantCode(t, s.Release(ctx, "a1"), "", "Release(consumed)")
		wantState(t, s, "a1", ask.ApprovalPending)
		pending, err := s.Pending(ctx, "c1", now)
		wantCode(t, err, "", "Pending")
		if len(pending) != 4 {
			t.Errorf("Pending after Release lists %d approvals, want 4", len(pending))
		}
		// The call is free again: any of its approvals can now be consumed.
		mustConsume(t, s, a2)
		wantCode(t, s.Release(ctx, "a1"), askbi.Conflict, "Release(pending)")
		wantCode(t, s.Release(ctx, "nope"), askbi.NotFound, "Release(unknown)")
		mustConsume(t, s, a3)
		wantCode(t, st.Receipts.PutReceipt(ctx, ask.Receipt{ApprovalID: "a3", ToolCallID: "call3", CreatedAt: now}), "", "PutReceipt(a3)")
		wantCode(t, s.Release(ctx, "a3"), askbi.Conflict, "Release(with a receipt)")
		wantState(t, s, "a3", ask.ApprovalConsumed)
		_, err = s.Reject(ctx, "a4", bound(a4), now)
		wantCode(t, err, "", "Reject(a4)")
		wantCode(t, s.Release(ctx, "a4"), askbi.Conflict, "Release(rejected)")
		wantState(t, s, "a4", ask.ApprovalRejected)
	})

	t.Run("Pending", func(t *testing.T) {
		s := newStores(t).Approvals
		at := func(a ask.Approval, created, expires time.Duration) ask.Approval {
			a.CreatedAt, a.ExpiresAt = t0.Add(created), t0.Add(expires)
			return a
		}
		first := at(approval("p1", "call1"), 0, 10*time.Minute)
		second := at(approval("p2", "call2"), 2*time.Second, 10*time.Minute)
		early := at(approval("p0", "call0"), -time.Minute, 10*time.Minute)
		consumed := approval("c", "call3")
		rejected := approval("r", "call4")
		expired := at(approval("e", "call5"), 0, time.Minute)
		boundary := at(approval("b", "call6"), time.Second, 2*time.Minute)
		elsewhere := approval("o", "call7")
		elsewhere.ConversationID = "c2"
		mustCreateApprovals(t, s, second, first, early, consumed, rejected, expired, boundary, elsewhere)
		mustConsume(t, s, consumed)
		if _, err := s.Reject(ctx, "r", bound(rejected), now); err != nil {
			t.Fatalf("Reject: %v", err)
		}
		list := func(conv string, at time.Time) []string {
			t.Helper()
			got, err := s.Pending(ctx, conv, at)
			wantCode(t, err, "", "Pending("+conv+")")
			out := []string{}
			for _, a := range got {
				if a.State != ask.ApprovalPending {
					t.Errorf("Pending listed %s in state %s", a.ID, a.State)
				}
				out = append(out, a.ID)
			}
			return out
		}
		tests := []struct {
			conv string
			now  time.Time
			want []string
		}{
			{"c1", t0.Add(2 * time.Minute), []string{"p0", "p1", "p2"}},
			{"c1", t0.Add(2*time.Minute - time.Second), []string{"p0", "p1", "b", "p2"}},
			{"c1", t0.Add(10 * time.Minute), []string{}},
			{"c2", t0.Add(2 * time.Minute), []string{"o"}},
			{"nope", t0, []string{}},
		}
		for _, tt := range tests {
			if diff := cmp.Diff(tt.want, list(tt.conv, tt.now)); diff != "" {
				t.Errorf("Pending(%s, %v) mismatch (-want +got):\n%s", tt.conv, tt.now, diff)
			}
		}
		got, err := s.Pending(ctx, "c1", t0.Add(2*time.Minute))
		wantCode(t, err, "", "Pending")
		if len(got) > 0 {
			if diff := cmp.Diff(early, got[0], diffOptions); diff != "" {
				t.Errorf("pending approval mismatch (-want +got):\n%s", diff)
			}
			wantArgs(t, got[0])
		}
	})

	t.Run("DeleteConversation", func(t *testing.T) {
		st := newStores(t)
		s := st.Approvals
		a, pending, other := approval("a1", "call1"), approval("a2", "call2"), approval("a3", "call1")
		other.ConversationID = "c2"
		mustCreateApprovals(t, s, a, pending, other)
		mustConsume(t, s, a)
		wantCode(t, st.Receipts.PutReceipt(ctx, ask.Receipt{ApprovalID: "a1", ToolCallID: "call1", Result: json.RawMessage(`{}`), CreatedAt: now}), "", "PutReceipt(a1)")
		wantCode(t, s.DeleteConversation(ctx, "c1"), "", "DeleteConversation(c1)")
		for _, id := range []string{"a1", "a2"} {
			_, err := s.Approval(ctx, id)
			wantCode(t, err, askbi.NotFound, "Approval("+id+") after delete")
		}
		_, err := st.Receipts.Receipt(ctx, "a1")
		wantCode(t, err, askbi.NotFound, "Receipt(a1) after delete")
		// The other conversation's approval of a call with the same ID is
		// untouched, and can still be consumed.
		mustConsume(t, s, other)
		wantCode(t, s.DeleteConversation(ctx, "nope"), "", "DeleteConversation(unknown)")
	})

	t.Run("StoredValuesAreCopies", func(t *testing.T) {
		s := newStores(t).Approvals
		a := approval("a1", "call1")
		a.Arguments = json.RawMessage(args)
		mustCreateApprovals(t, s, a)
		a.Arguments[2] = 'z'
		got := mustApproval(t, s, "a1")
		wantArgs(t, got)
		got.Arguments[2] = 'z'
		wantArgs(t, mustApproval(t, s, "a1"))
		consumed := mustConsume(t, s, approval("a1", "call1"))
		consumed.Arguments[2] = 'z'
		wantArgs(t, mustApproval(t, s, "a1"))
	})
}

// RunReceiptStore proves that the Receipts of the stores made by newStores
// behave as [ask.ReceiptStore] documents, their approvals kept by Approvals.
// Each subtest gets fresh, empty stores.
//
// Beyond the interface's comments it expects PutReceipt to be Conflict for
// an approval that is not consumed or belongs to another tool call.
func RunReceiptStore(t *testing.T, newStores func(t *testing.T) ask.Stores) {
	ctx := context.Background()

	t.Run("Receipts", func(t *testing.T) {
		st := newStores(t)
		s, approvals := st.Receipts, st.Approvals
		a1, a2, a3, a4 := approval("a1", "call1"), approval("a2", "call1"), approval("a3", "call2"), approval("a4", "call3")
		mustCreateApprovals(t, approvals, a1, a2, a3, a4)
		mustConsume(t, approvals, a1)
		mustConsume(t, approvals, a3)
		want := ask.Receipt{ApprovalID: "a1", ToolCallID: "call1", Summary: "Added chart \"Weekly\"",
			Result: json.RawMessage(`{"dashboard": {"id": "d9"}, "status": "saved"}`), CreatedAt: now}
		wantCode(t, s.PutReceipt(ctx, want), "", "PutReceipt(a1)")
		got, err := s.Receipt(ctx, "a1")
		wantCode(t, err, "", "Receipt(a1)")
		if diff := cmp.Diff(want, got, diffOptions); diff != "" {
			t.Errorf("Receipt mismatch (-want +got):\n%s", diff)
		}

		conflicts := []struct {
			name string
			r    ask.Receipt
		}{
			{"same approval again", ask.Receipt{ApprovalID: "a1", ToolCallID: "call1", Result: json.RawMessage(`{"status":"other"}`), CreatedAt: now}},
			{"the call under another approval", ask.Receipt{ApprovalID: "a2", ToolCallID: "call1", Result: json.RawMessage(`{}`), CreatedAt: now}},
			{"the call under another consumed approval", ask.Receipt{ApprovalID: "a3", ToolCallID: "call1", Result: json.RawMessage(`{}`), CreatedAt: now}},
			{"a pending approval", ask.Receipt{ApprovalID: "a4", ToolCallID: "call3", Result: json.RawMessage(`{}`), CreatedAt: now}},
		}
		for _, c := range conflicts {
			wantCode(t, s.PutReceipt(ctx, c.r), askbi.Conflict, "PutReceipt("+c.name+")")
		}
		got, _ = s.Receipt(ctx, "a1")
		if diff := cmp.Diff(want, got, diffOptions); diff != "" {
			t.Errorf("Receipt after conflicts mismatch (-want +got):\n%s", diff)
		}
		for _, id := range []string{"a2", "a4", "nope"} {
			_, err := s.Receipt(ctx, id)
			wantCode(t, err, askbi.NotFound, "Receipt("+id+") without one")
		}
		wantCode(t, s.PutReceipt(ctx, ask.Receipt{ApprovalID: "nope", ToolCallID: "call1", CreatedAt: now}), askbi.NotFound, "PutReceipt(unknown approval)")

		// The refused receipt for a3 changed nothing: its own still fits.
		failed := ask.Receipt{ApprovalID: "a3", ToolCallID: "call2", ErrorCode: string(askbi.Timeout),
			ErrorMessage: "The operation timed out.", CreatedAt: now.Add(time.Second)}
		wantCode(t, s.PutReceipt(ctx, failed), "", "PutReceipt(a3)")
		got, err = s.Receipt(ctx, "a3")
		wantCode(t, err, "", "Receipt(a3)")
		if diff := cmp.Diff(failed, got, diffOptions); diff != "" {
			t.Errorf("Receipt of a failed call mismatch (-want +got):\n%s", diff)
		}
	})

	t.Run("ParallelPutReceiptOneWins", func(t *testing.T) {
		st := newStores(t)
		s, approvals := st.Receipts, st.Approvals
		a := approval("a1", "call1")
		mustCreateApprovals(t, approvals, a)
		mustConsume(t, approvals, a)
		rs := make([]ask.Receipt, 20)
		errs := make([]error, len(rs))
		var wg sync.WaitGroup
		for i := range rs {
			rs[i] = ask.Receipt{ApprovalID: "a1", ToolCallID: "call1", Result: json.RawMessage(fmt.Sprintf(`{"n":%d}`, i)), CreatedAt: now}
			wg.Go(func() { errs[i] = s.PutReceipt(ctx, rs[i]) })
		}
		wg.Wait()
		if got := successes(t, errs, askbi.Conflict); got != 1 {
			t.Fatalf("%d of %d parallel PutReceipts succeeded, want 1", got, len(errs))
		}
		got, err := s.Receipt(ctx, "a1")
		wantCode(t, err, "", "Receipt")
		for i, err := range errs {
			if err == nil {
				if diff := cmp.Diff(rs[i], got, diffOptions); diff != "" {
					t.Errorf("Receipt is not the one stored (-want +got):\n%s", diff)
				}
			}
		}
	})

	t.Run("StoredValuesAreCopies", func(t *testing.T) {
		st := newStores(t)
		s, approvals := st.Receipts, st.Approvals
		mustCreateApprovals(t, approvals, approval("a1", "call1"))
		mustConsume(t, approvals, approval("a1", "call1"))
		r := ask.Receipt{ApprovalID: "a1", ToolCallID: "call1", Result: json.RawMessage(`{"n":1}`), CreatedAt: now}
		wantCode(t, s.PutReceipt(ctx, r), "", "PutReceipt")
		r.Result[5] = '2'
		got1, _ := s.Receipt(ctx, "a1")
		got1.Result[5] = '3'
		if got2, _ := s.Receipt(ctx, "a1"); string(got2.Result) != `{"n":1}` {
			t.Errorf("Receipt after changing values = %s, want {\"n\":1}", got2.Result)
		}
	})
}

// successes counts the nil errors in errs and fails t for an error whose
// code is not one of losers.
func successes(t *testing.T, errs []error, losers ...askbi.Code) int {
	t.Helper()
	n := 0
	for _, err := range errs {
		switch code := askbi.ErrorCode(err); {
		case err == nil:
			n++
		case !slices.Contains(losers, code):
			t.Errorf("got %v, want success or one of %v", err, losers)
		}
	}
	return n
}
