// Package usagetest holds the conformance suites of [usage.Ledger] and
// [usage.Budgets]. A host runs them against its own adapters:
//
//	func TestLedger(t *testing.T) {
//		usagetest.RunLedger(t, func(t *testing.T) usage.Ledger { return newLedger(t) })
//	}
//	func TestBudgets(t *testing.T) {
//		usagetest.RunBudgets(t, func(t *testing.T) usage.Budgets { return newBudgets(t) })
//	}
package usagetest

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/askbi/askbi"
	"github.com/askbi/askbi/access"
	"github.com/askbi/askbi/usage"
)

// t0 is the suite's period start: entries and charges fall around it.
var t0 = time.Date(2026, 12, 7, 0, 0, 0, 0, time.UTC)

var timeEqual = cmp.Comparer(func(a, b time.Time) bool { return a.Equal(b) })

// flush writes what l holds, when it holds entries before writing them.
func flush(t *testing.T, l usage.Ledger) {
	t.Helper()
	if f, ok := l.(usage.Flusher); ok {
		if err := f.Flush(context.Background()); err != nil {
			t.Fatalf("Flush: %v", err)
		}
	}
}

// RunLedger proves that the ledgers made by newLedger behave as
// [usage.Ledger] documents: Spent sums the team's (or member's) tokens
// from a time on; Report counts, sums, and takes the latency percentiles
// of the period's entries and charges of one team, or of one member,
// and orders its rows; concurrent charges all count. Each subtest gets a
// fresh, empty ledger.
func RunLedger(t *testing.T, newLedger func(t *testing.T) usage.Ledger) {
	ctx := context.Background()

	t.Run("Spent", func(t *testing.T) {
		l := newLedger(t)
		for _, c := range []usage.Charge{
			charge("acme", "alice", t0.Add(-time.Microsecond), "m", 1000, 0, 100), // before the period
			charge("acme", "alice", t0, "m", 300, 0, 20),                          // at its start: counted
			charge("acme", "bob", t0.Add(time.Hour), "m", 50, 40, 5),
			charge("globex", "alice", t0.Add(time.Hour), "m", 7000, 0, 700),
		} {
			if err := l.Charge(ctx, c); err != nil {
				t.Fatal(err)
			}
		}
		for _, tc := range []struct {
			team, user string
			want       int64
		}{{"acme", "", 320 + 55}, {"acme", "alice", 320}, {"acme", "bob", 55}, {"acme", "carol", 0}, {"globex", "", 7700}, {"initech", "", 0}} {
			got, err := l.Spent(ctx, tc.team, tc.user, t0)
			if err != nil || got != tc.want {
				t.Errorf("Spent(%s, %q) = %d, %v; want %d", tc.team, tc.user, got, err, tc.want)
			}
		}
	})

	t.Run("Report", func(t *testing.T) {
		l := newLedger(t)
		record(t, l, fixture())
		q := usage.Query{From: t0, To: t0.Add(24 * time.Hour)}
		got, err := l.Report(ctx, "acme", q)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(wantTeam(q), got, timeEqual); diff != "" {
			t.Errorf("Report mismatch (-want +got):\n%s", diff)
		}
	})

	t.Run("ReportOfOneMember", func(t *testing.T) {
		l := newLedger(t)
		record(t, l, fixture())
		q := usage.Query{From: t0, To: t0.Add(24 * time.Hour), UserID: "bob"}
		got, err := l.Report(ctx, "acme", q)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(wantBob(q), got, timeEqual); diff != "" {
			t.Errorf("Report of bob mismatch (-want +got):\n%s", diff)
		}
	})

	t.Run("EmptyReport", func(t *testing.T) {
		l := newLedger(t)
		q := usage.Query{From: t0, To: t0.Add(time.Hour)}
		got, err := l.Report(ctx, "acme", q)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(usage.Report{TeamID: "acme", From: q.From, To: q.To}, got, timeEqual); diff != "" {
			t.Errorf("empty Report mismatch (-want +got):\n%s", diff)
		}
	})

	t.Run("ConcurrentCharges", func(t *testing.T) {
		l := newLedger(t)
		var wg sync.WaitGroup
		for i := range 40 {
			wg.Go(func() {
				if err := l.Charge(ctx, charge("acme", fmt.Sprint("u", i%4), t0.Add(time.Duration(i)*time.Second), "m", 10, 0, 1)); err != nil {
					t.Error(err)
				}
				if err := l.Record(ctx, access.AuditEntry{Time: t0, Action: access.ActionChatTurn, UserID: "u", TeamID: "acme", Outcome: access.OutcomeOK}); err != nil {
					t.Error(err)
				}
			})
		}
		wg.Wait()
		flush(t, l)
		got, err := l.Spent(ctx, "acme", "", t0)
		if err != nil || got != 40*11 {
			t.Errorf("Spent after 40 concurrent charges = %d, %v; want %d", got, err, 40*11)
		}
		r, err := l.Report(ctx, "acme", usage.Query{From: t0, To: t0.Add(time.Hour)})
		if err != nil || r.Total.ChatTurns != 40 || r.Total.ModelCalls != 40 {
			t.Errorf("Report after 40 concurrent records: %+v, %v; want 40 turns and 40 model calls", r.Total, err)
		}
	})
}

func charge(team, user string, at time.Time, model string, in, cached, out int64) usage.Charge {
	return usage.Charge{Time: at, TeamID: team, UserID: user, Provider: "openai", Model: model,
		Tokens: usage.Tokens{InputTokens: in, CachedInputTokens: cached, OutputTokens: out}, CostMicros: in + 10*out}
}

// records are a fixture's entries and charges.
type records struct {
	entries []access.AuditEntry
	charges []usage.Charge
}

func record(t *testing.T, l usage.Ledger, rs records) {
	t.Helper()
	ctx := context.Background()
	for _, e := range rs.entries {
		if err := l.Record(ctx, e); err != nil {
			t.Fatal(err)
		}
	}
	for _, c := range rs.charges {
		if err := l.Charge(ctx, c); err != nil {
			t.Fatal(err)
		}
	}
	flush(t, l)
}

// entry is an audit entry of acme at t0 + at.
func entry(action, user string, at time.Duration, took time.Duration, outcome string, details map[string]string) access.AuditEntry {
	return access.AuditEntry{Time: t0.Add(at), Action: action, UserID: user, TeamID: "acme", Auth: access.AuthSession,
		Target: access.Team("acme"), Outcome: outcome, Duration: took, Details: details}
}

func mcpCall(user, cred string, at, took time.Duration, tool, outcome string) access.AuditEntry {
	e := entry(access.ActionMCPToolCall, user, at, took, outcome, map[string]string{"tool": tool})
	e.Auth, e.CredentialID = access.AuthAPIKey, cred
	return e
}

// fixture is a day of acme's use, with entries and charges around it
// that the day's reports must leave out.
func fixture() records {
	ok, fail := access.OutcomeOK, string(askbi.Unavailable)
	ms := time.Millisecond
	var rs records
	add := func(es ...access.AuditEntry) { rs.entries = append(rs.entries, es...) }
	// Chat turns: alice 3 (one failed), bob 1.
	add(entry(access.ActionChatTurn, "alice", time.Hour, 2*time.Second, ok, map[string]string{"op": "send"}),
		entry(access.ActionChatTurn, "alice", 2*time.Hour, time.Second, fail, map[string]string{"op": "send"}),
		entry(access.ActionChatTurn, "alice", 3*time.Hour, time.Second, ok, map[string]string{"op": "approve"}),
		entry(access.ActionChatTurn, "bob", 4*time.Hour, time.Second, ok, map[string]string{"op": "send"}))
	// Chat tool calls: run_dataset 4 by alice (one failed), 10, 20, 30, 40 ms.
	for i := range 4 {
		out := ok
		if i == 3 {
			out = fail
		}
		add(entry(access.ActionChatToolCall, "alice", time.Hour+time.Duration(i)*time.Minute, time.Duration(10*(i+1))*ms, out, map[string]string{"tool": "run_dataset"}))
	}
	// MCP tool calls: bob's key k-bob calls run_dataset 20 times, 1..20 ms,
	// 5 failed; alice's key k-alice calls search_workspace twice at 1.5 ms.
	for i := range 20 {
		out := ok
		if i%4 == 0 {
			out = fail
		}
		add(mcpCall("bob", "k-bob", 5*time.Hour+time.Duration(i)*time.Second, time.Duration(i+1)*ms, "run_dataset", out))
	}
	// The later one names its client in its _meta (a 2026-07-28 client).
	named := mcpCall("alice", "k-alice", 7*time.Hour, 1500*time.Microsecond, "search_workspace", ok)
	named.Details["client"] = "Cursor"
	add(mcpCall("alice", "k-alice", 6*time.Hour, 1500*time.Microsecond, "search_workspace", ok), named)
	// bob's key initialized twice (the latest name wins); alice's grant
	// initialized and never called.
	initialize := func(user, cred string, auth access.AuthMethod, at time.Duration, client string) access.AuditEntry {
		e := entry(access.ActionMCPInitialize, user, at, ms, ok, map[string]string{"client": client, "client_version": "1"})
		e.Auth, e.CredentialID = auth, cred
		return e
	}
	add(initialize("bob", "k-bob", access.AuthAPIKey, 5*time.Hour-time.Minute, "Cursor"),
		initialize("bob", "k-bob", access.AuthAPIKey, 5*time.Hour+time.Minute, "Claude Code"),
		initialize("bob", "k-bob", access.AuthAPIKey, 5*time.Hour+2*time.Minute, ""), // a client that gave no name
		initialize("alice", "g-alice", access.AuthOAuth, 8*time.Hour, "MCP Inspector"))
	// Remote calls from Ask: two to conn-1 (renamed in between), one
	// failed to conn-2.
	remote := func(user string, at time.Duration, conn, name, outcome string, took time.Duration) access.AuditEntry {
		e := entry(access.ActionRemoteCall, user, at, took, outcome, map[string]string{"tool": "top_pages", "connection": name, "via": "ask"})
		e.Target = access.Entity{Type: access.TypeConnection, ID: conn, TeamID: "acme"}
		return e
	}
	add(remote("alice", 9*time.Hour, "conn-1", "Analytics", ok, 100*ms),
		remote("bob", 10*time.Hour, "conn-1", "Acme analytics", ok, 300*ms),
		remote("alice", 11*time.Hour, "conn-2", "Sentry", fail, 50*ms))
	// Other actions are not in the view.
	add(entry("memory.add", "alice", time.Hour, ms, ok, nil), entry("dataset.save", "bob", time.Hour, ms, ok, nil))
	// Outside the period or the team: left out.
	add(entry(access.ActionChatTurn, "alice", -time.Microsecond, time.Second, ok, nil),
		entry(access.ActionChatTurn, "alice", 24*time.Hour, time.Second, ok, nil))
	other := entry(access.ActionChatTurn, "carol", time.Hour, time.Second, ok, nil)
	other.TeamID = "globex"
	add(other)

	rs.charges = []usage.Charge{
		charge("acme", "alice", t0.Add(time.Hour), "gpt-4o-mini", 2000, 1500, 100),
		charge("acme", "alice", t0.Add(3*time.Hour), "gpt-4o-mini", 3000, 0, 200),
		charge("acme", "bob", t0.Add(4*time.Hour), "claude-sonnet-4-5", 1000, 0, 50),
		charge("acme", "alice", t0.Add(-time.Second), "gpt-4o-mini", 9999, 0, 9), // before
		charge("globex", "carol", t0.Add(time.Hour), "gpt-4o-mini", 8888, 0, 8),  // other team
	}
	rs.charges[2].Provider = "anthropic"
	return rs
}

// wantTeam is the fixture's report of the whole team.
func wantTeam(q usage.Query) usage.Report {
	tok := func(in, cached, out int64) usage.Tokens {
		return usage.Tokens{InputTokens: in, CachedInputTokens: cached, OutputTokens: out}
	}
	at := func(d time.Duration) time.Time { return t0.Add(d) }
	return usage.Report{TeamID: "acme", From: q.From, To: q.To,
		Total: usage.Totals{ChatTurns: 4, MCPCalls: 22, ModelCalls: 3, Tokens: tok(6000, 1500, 350), CostUSD: 0.0095},
		Users: []usage.UserRow{
			{UserID: "alice", ChatTurns: 3, ChatErrors: 1, MCPCalls: 2, ModelCalls: 2, Tokens: tok(5000, 1500, 300), CostUSD: 0.008, LastActive: at(7 * time.Hour)},
			{UserID: "bob", ChatTurns: 1, MCPCalls: 20, MCPErrors: 5, ModelCalls: 1, Tokens: tok(1000, 0, 50), CostUSD: 0.0015, LastActive: at(5*time.Hour + 19*time.Second)},
		},
		Tools: []usage.ToolRow{
			{Surface: "mcp", Tool: "run_dataset", Calls: 20, Errors: 5, ErrorRate: 0.25, P50MS: 10, P95MS: 19},
			{Surface: "chat", Tool: "run_dataset", Calls: 4, Errors: 1, ErrorRate: 0.25, P50MS: 20, P95MS: 40},
			{Surface: "mcp", Tool: "search_workspace", Calls: 2, P50MS: 1.5, P95MS: 1.5},
		},
		Models: []usage.ModelRow{
			{Provider: "openai", Model: "gpt-4o-mini", Calls: 2, Tokens: tok(5000, 1500, 300), CostUSD: 0.008},
			{Provider: "anthropic", Model: "claude-sonnet-4-5", Calls: 1, Tokens: tok(1000, 0, 50), CostUSD: 0.0015},
		},
		Clients: []usage.ClientRow{
			{UserID: "alice", Auth: access.AuthAPIKey, CredentialID: "k-alice", Client: "Cursor", Calls: 2, LastUsed: at(7 * time.Hour)},
			{UserID: "alice", Auth: access.AuthOAuth, CredentialID: "g-alice", Client: "MCP Inspector", LastUsed: at(8 * time.Hour)},
			{UserID: "bob", Auth: access.AuthAPIKey, CredentialID: "k-bob", Client: "Claude Code", Calls: 20, Errors: 5, LastUsed: at(5*time.Hour + 2*time.Minute)},
		},
		Connections: []usage.ConnectionRow{
			{ConnectionID: "conn-1", Name: "Acme analytics", Calls: 2, P50MS: 100, P95MS: 300, LastUsed: at(10 * time.Hour)},
			{ConnectionID: "conn-2", Name: "Sentry", Calls: 1, Errors: 1, P50MS: 50, P95MS: 50, LastUsed: at(11 * time.Hour)},
		},
	}
}

// wantBob is the fixture's report of bob alone: nothing of alice's.
func wantBob(q usage.Query) usage.Report {
	team := wantTeam(q)
	at := func(d time.Duration) time.Time { return t0.Add(d) }
	return usage.Report{TeamID: "acme", From: q.From, To: q.To, UserID: "bob",
		Total:   usage.Totals{ChatTurns: 1, MCPCalls: 20, ModelCalls: 1, Tokens: team.Users[1].Tokens, CostUSD: 0.0015},
		Users:   []usage.UserRow{team.Users[1]},
		Tools:   []usage.ToolRow{team.Tools[0]},
		Models:  []usage.ModelRow{team.Models[1]},
		Clients: []usage.ClientRow{team.Clients[2]},
		Connections: []usage.ConnectionRow{
			{ConnectionID: "conn-1", Name: "Acme analytics", Calls: 1, P50MS: 300, P95MS: 300, LastUsed: at(10 * time.Hour)},
		},
	}
}

// RunBudgets proves that the budget stores made by newBudgets behave as
// [usage.Budgets] documents: one budget per team, user and period,
// replaced by a new one; listed in order, one team's only; NotFound for
// a budget that is not there. Each subtest gets a fresh, empty store.
func RunBudgets(t *testing.T, newBudgets func(t *testing.T) usage.Budgets) {
	ctx := context.Background()
	set := time.Date(2026, 12, 1, 9, 30, 0, 123000, time.UTC)
	b := func(team, user string, p usage.Period, tokens int64) usage.Budget {
		return usage.Budget{TeamID: team, UserID: user, Period: p, Tokens: tokens, SetBy: "alice", SetAt: set}
	}

	t.Run("SetListReplaceDelete", func(t *testing.T) {
		s := newBudgets(t)
		for _, x := range []usage.Budget{b("acme", "bob", usage.Month, 30), b("acme", "", usage.Month, 20), b("acme", "", usage.Day, 10),
			b("acme", "bob", usage.Day, 40), b("acme", "alice", usage.Day, 50), b("globex", "", usage.Day, 60)} {
			if err := s.SetBudget(ctx, x); err != nil {
				t.Fatal(err)
			}
		}
		replaced := b("acme", "", usage.Day, 15)
		replaced.SetBy, replaced.SetAt = "owner2", set.Add(time.Hour)
		if err := s.SetBudget(ctx, replaced); err != nil {
			t.Fatal(err)
		}
		got, err := s.TeamBudgets(ctx, "acme")
		want := []usage.Budget{replaced, b("acme", "", usage.Month, 20), b("acme", "alice", usage.Day, 50),
			b("acme", "bob", usage.Day, 40), b("acme", "bob", usage.Month, 30)}
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(want, got, timeEqual); diff != "" {
			t.Errorf("TeamBudgets mismatch (-want +got):\n%s", diff)
		}
		if err := s.DeleteBudget(ctx, "acme", "bob", usage.Day); err != nil {
			t.Fatal(err)
		}
		if err := s.DeleteBudget(ctx, "acme", "bob", usage.Day); askbi.ErrorCode(err) != askbi.NotFound {
			t.Errorf("deleting it again: %v, want not_found", err)
		}
		if err := s.DeleteBudget(ctx, "globex", "bob", usage.Month); askbi.ErrorCode(err) != askbi.NotFound {
			t.Errorf("deleting another team's: %v, want not_found", err)
		}
		got, _ = s.TeamBudgets(ctx, "acme")
		if len(got) != 4 {
			t.Errorf("after a delete: %d budgets, want 4", len(got))
		}
		got, _ = s.TeamBudgets(ctx, "initech")
		if got == nil || len(got) != 0 {
			t.Errorf("a team without budgets: %#v, want an empty list", got)
		}
	})
}
