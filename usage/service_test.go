package usage_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/askbi/askbi"
	"github.com/askbi/askbi/access"
	"github.com/askbi/askbi/usage"
)

// env is a service over one in-memory store, team acme (alice owner,
// ada admin, bob editor, vic viewer) and globex (carol owner), on a
// clock the test moves.
type env struct {
	svc   *usage.Service
	store *usage.MemoryStore
	now   time.Time
}

func newEnv(t *testing.T, prices usage.Prices) *env {
	t.Helper()
	dir := access.NewMemoryDirectory()
	dir.AddProject("acme", "growth")
	dir.SetMember("acme", "alice", access.RoleOwner, access.AllProjects())
	dir.SetMember("acme", "ada", access.RoleAdmin, access.AllProjects())
	dir.SetMember("acme", "bob", access.RoleEditor, access.ProjectSet("growth"))
	dir.SetMember("acme", "vic", access.RoleViewer, access.ProjectSet("growth"))
	dir.SetMember("globex", "carol", access.RoleOwner, access.AllProjects())
	e := &env{store: usage.NewMemoryStore(nil), now: time.Date(2026, 12, 9, 15, 0, 0, 0, time.UTC)}
	e.svc = usage.NewService(e.store, e.store, access.NewGate(access.NewChecker(dir, nil), nil), &usage.Options{
		Prices: prices, Now: func() time.Time { return e.now }, Members: dir,
		TeamName: func(_ context.Context, id string) string { return map[string]string{"acme": "Acme"}[id] },
	})
	return e
}

func session(user, team string) access.Principal {
	return access.Principal{UserID: user, TeamID: team, Auth: access.AuthSession}
}

// live is p as the gate returns it.
func (e *env) live(t *testing.T, p access.Principal) access.Principal {
	t.Helper()
	dir := access.NewMemoryDirectory()
	dir.SetMember(p.TeamID, p.UserID, access.RoleViewer, access.AllProjects())
	live, err := access.NewGate(access.NewChecker(dir, nil), nil).Begin(context.Background(), p)
	if err != nil {
		t.Fatal(err)
	}
	return live
}

// TestReportOwnRowOnly: an owner or admin sees every member of the team;
// an editor or a viewer sees their own row alone, and nothing of another
// member's tools, clients or connections. (Broken once by leaving the
// member's UserID out of the query: vic then saw alice's row and tools.)
// Each report names the team for people (Options.TeamName).
func TestReportOwnRowOnly(t *testing.T) {
	e := newEnv(t, nil)
	ctx := context.Background()
	for _, u := range []string{"alice", "bob", "vic"} {
		e.store.Record(ctx, access.AuditEntry{Time: e.now.Add(-time.Hour), Action: access.ActionMCPToolCall, UserID: u, TeamID: "acme",
			Auth: access.AuthAPIKey, CredentialID: "k-" + u, Outcome: access.OutcomeOK, Details: map[string]string{"tool": "tool_of_" + u}})
		e.store.Charge(ctx, usage.Charge{Time: e.now.Add(-time.Hour), TeamID: "acme", UserID: u, Model: "m", Tokens: usage.Tokens{InputTokens: 10}})
	}
	from, to := e.now.Add(-24*time.Hour), e.now
	for _, tc := range []struct {
		user  string
		users []string
	}{{"alice", []string{"alice", "bob", "vic"}}, {"ada", []string{"alice", "bob", "vic"}}, {"bob", []string{"bob"}}, {"vic", []string{"vic"}}} {
		r, err := e.svc.Report(ctx, session(tc.user, "acme"), from, to)
		if err != nil {
			t.Fatal(err)
		}
		var users, tools, creds []string
		for _, u := range r.Users {
			users = append(users, u.UserID)
		}
		for _, x := range r.Tools {
			tools = append(tools, strings.TrimPrefix(x.Tool, "tool_of_"))
		}
		for _, c := range r.Clients {
			creds = append(creds, strings.TrimPrefix(c.CredentialID, "k-"))
		}
		if diff := cmp.Diff(tc.users, users); diff != "" {
			t.Errorf("%s sees users (-want +got):\n%s", tc.user, diff)
		}
		if r.TeamName != "Acme" {
			t.Errorf("%s's report names the team %q, want Acme", tc.user, r.TeamName)
		}
		if len(tc.users) == 1 && (!cmp.Equal(tc.users, tools) || !cmp.Equal(tc.users, creds) || r.UserID != tc.user || r.Total.Tokens.InputTokens != 10) {
			t.Errorf("%s sees tools %v, clients %v, total %+v (report of %q); want their own only", tc.user, tools, creds, r.Total, r.UserID)
		}
	}
	// Another team's member sees nothing of acme.
	r, err := e.svc.Report(ctx, session("carol", "globex"), from, to)
	if err != nil || len(r.Users) != 0 || r.TeamID != "globex" {
		t.Errorf("carol's report: %+v, %v; want globex's, empty", r, err)
	}
	if b, _ := json.Marshal(r); strings.Contains(string(b), "null") {
		t.Errorf("an empty report has null lists: %s", b)
	}
	// A token cannot read usage: it is for people signed in.
	key := access.Principal{UserID: "alice", TeamID: "acme", Auth: access.AuthAPIKey, CredentialID: "k", Scopes: access.AllScopes, Projects: access.AllProjects()}
	if _, err := e.svc.Report(ctx, key, from, to); askbi.ErrorCode(err) != askbi.Forbidden {
		t.Errorf("an API key's report: %v, want forbidden", err)
	}
	for _, bad := range [][2]time.Time{{to, from}, {from, from}, {to.Add(-93 * 24 * time.Hour), to}} {
		if _, err := e.svc.Report(ctx, session("alice", "acme"), bad[0], bad[1]); askbi.ErrorCode(err) != askbi.InvalidArgument {
			t.Errorf("Report(%s, %s): %v, want invalid_argument", bad[0], bad[1], err)
		}
	}
}

// TestSetBudgetOwnersAndAdmins: owners and admins set and remove
// budgets; an editor or viewer is refused, and nothing changes; a
// budget for someone who is not a member of the team (another team's
// carol, a mistyped zed) is refused. (Broken once by giving
// RightSetBudgets to editors: bob's budget then stood; and by skipping
// the member check: zed's budget was set.)
func TestSetBudgetOwnersAndAdmins(t *testing.T) {
	e := newEnv(t, nil)
	ctx := context.Background()
	for _, u := range []string{"bob", "vic"} {
		if _, err := e.svc.SetBudget(ctx, session(u, "acme"), usage.BudgetChange{Period: usage.Day, Tokens: 1}); askbi.ErrorCode(err) != askbi.Forbidden {
			t.Errorf("%s sets a budget: %v, want forbidden", u, err)
		}
	}
	st, err := e.svc.SetBudget(ctx, session("ada", "acme"), usage.BudgetChange{Period: usage.Month, Tokens: 5000})
	if err != nil {
		t.Fatal(err)
	}
	want := usage.BudgetStatus{Budget: usage.Budget{TeamID: "acme", Period: usage.Month, Tokens: 5000, SetBy: "ada", SetAt: e.now},
		ResetsAt: time.Date(2027, 1, 1, 0, 0, 0, 0, time.UTC)}
	if diff := cmp.Diff(want, st); diff != "" {
		t.Errorf("SetBudget mismatch (-want +got):\n%s", diff)
	}
	if _, err := e.svc.SetBudget(ctx, session("alice", "acme"), usage.BudgetChange{UserID: "bob", Period: usage.Day, Tokens: 100}); err != nil {
		t.Fatal(err)
	}
	// Members read the team's budget and their own.
	for _, tc := range []struct {
		user string
		n    int
	}{{"alice", 2}, {"bob", 2}, {"vic", 1}} {
		got, err := e.svc.Budgets(ctx, session(tc.user, "acme"))
		if err != nil || len(got) != tc.n {
			t.Errorf("%s's budgets: %+v, %v; want %d", tc.user, got, err, tc.n)
		}
	}
	for _, bad := range []usage.BudgetChange{{Period: "week", Tokens: 1}, {Period: usage.Day}, {Period: usage.Day, Tokens: -5},
		{Period: usage.Day, Tokens: usage.MaxBudgetTokens + 1}, {UserID: " bob", Period: usage.Day, Tokens: 1},
		{UserID: "carol", Period: usage.Day, Tokens: 1}, {UserID: "zed", Period: usage.Day, Tokens: 1}} {
		if _, err := e.svc.SetBudget(ctx, session("alice", "acme"), bad); askbi.ErrorCode(err) != askbi.InvalidArgument {
			t.Errorf("SetBudget(%+v): %v, want invalid_argument", bad, err)
		}
	}
	if err := e.svc.DeleteBudget(ctx, session("bob", "acme"), "bob", usage.Day); askbi.ErrorCode(err) != askbi.Forbidden {
		t.Errorf("bob removes his budget: %v, want forbidden", err)
	}
	if err := e.svc.DeleteBudget(ctx, session("alice", "acme"), "bob", usage.Day); err != nil {
		t.Fatal(err)
	}
	if err := e.svc.DeleteBudget(ctx, session("alice", "acme"), "bob", usage.Day); askbi.ErrorCode(err) != askbi.NotFound {
		t.Errorf("removing it again: %v, want not_found", err)
	}
}

// TestCheckRefusesPastBudget: a turn is refused once the period's tokens
// reach the team's budget, with a message that names the budget, who
// set it and when it resets; it passes again in the next period. A
// user's budget applies to that user alone. (Broken once by comparing
// with > instead of >=: the turn at exactly the budget then passed.)
func TestCheckRefusesPastBudget(t *testing.T) {
	e := newEnv(t, nil)
	ctx := context.Background()
	alice, bob := e.live(t, session("alice", "acme")), e.live(t, session("bob", "acme"))
	e.now = time.Date(2026, 12, 9, 8, 0, 0, 0, time.UTC)
	if _, err := e.svc.SetBudget(ctx, session("alice", "acme"), usage.BudgetChange{Period: usage.Day, Tokens: 1000}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.svc.SetBudget(ctx, session("alice", "acme"), usage.BudgetChange{UserID: "bob", Period: usage.Month, Tokens: 300}); err != nil {
		t.Fatal(err)
	}
	e.now = time.Date(2026, 12, 9, 15, 0, 0, 0, time.UTC)
	if err := e.svc.Check(ctx, alice); err != nil {
		t.Fatalf("Check before any use: %v", err)
	}
	if err := e.svc.Charge(ctx, alice, usage.ModelCall{Model: "m", Tokens: usage.Tokens{InputTokens: 900, OutputTokens: 99}}); err != nil {
		t.Fatal(err)
	}
	if err := e.svc.Check(ctx, alice); err != nil {
		t.Fatalf("Check at 999 of 1,000: %v", err)
	}
	e.svc.Charge(ctx, bob, usage.ModelCall{Model: "m", Tokens: usage.Tokens{OutputTokens: 1}})
	err := e.svc.Check(ctx, alice)
	want := "Acme's daily token budget of 1,000 tokens is used up (1,000 used). It was set by alice on 9 Dec 2026 and resets at 00:00 UTC on 10 Dec 2026. A team owner or admin can raise it."
	if askbi.ErrorCode(err) != askbi.BudgetExceeded || askbi.ErrorMessage(err) != want {
		t.Errorf("Check at the budget: %v (%q), want budget_exceeded %q", err, askbi.ErrorMessage(err), want)
	}
	if _, ok := askbi.RetryAfter(err); ok {
		t.Error("a used-up budget carries a retry hint; waiting a moment does not help")
	}
	// The next day the team's budget starts again; bob's monthly one
	// does not.
	e.now = time.Date(2026, 12, 10, 0, 0, 0, 0, time.UTC)
	if err := e.svc.Check(ctx, alice); err != nil {
		t.Errorf("Check the next day: %v", err)
	}
	e.svc.Charge(ctx, bob, usage.ModelCall{Model: "m", Tokens: usage.Tokens{InputTokens: 299}})
	err = e.svc.Check(ctx, bob)
	if want := "Your monthly token budget of 300 tokens is used up (300 used). It was set by alice on 9 Dec 2026 and resets at 00:00 UTC on 1 Jan 2027. A team owner or admin can raise it."; askbi.ErrorMessage(err) != want {
		t.Errorf("bob's own budget: %v, want %q", err, want)
	}
	if err := e.svc.Check(ctx, alice); err != nil {
		t.Errorf("bob's budget refuses alice: %v", err)
	}
}

// TestChargeCost: a charge records the tokens and their cost at the
// model's price; a model without one costs 0 and shows unpriced; a call
// that reported nothing records nothing.
func TestChargeCost(t *testing.T) {
	e := newEnv(t, usage.Prices{"gpt-4o-mini": {Input: 0.15, CachedInput: 0.075, Output: 0.6}})
	ctx := context.Background()
	alice := e.live(t, session("alice", "acme"))
	for _, m := range []usage.ModelCall{
		{Provider: "openai", Model: "gpt-4o-mini", Tokens: usage.Tokens{InputTokens: 2_000_000, CachedInputTokens: 1_000_000, OutputTokens: 1_000_000}},
		{Provider: "openai", Model: "unpriced", Tokens: usage.Tokens{InputTokens: 10}},
		{Provider: "openai", Model: "silent"},
	} {
		if err := e.svc.Charge(ctx, alice, m); err != nil {
			t.Fatal(err)
		}
	}
	r, err := e.svc.Report(ctx, session("alice", "acme"), e.now.Add(-time.Hour), e.now.Add(time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	want := []usage.ModelRow{
		{Provider: "openai", Model: "gpt-4o-mini", Calls: 1, Tokens: usage.Tokens{InputTokens: 2_000_000, CachedInputTokens: 1_000_000, OutputTokens: 1_000_000},
			CostUSD: 0.15 + 0.075 + 0.6, Priced: true},
		{Provider: "openai", Model: "unpriced", Calls: 1, Tokens: usage.Tokens{InputTokens: 10}},
	}
	if diff := cmp.Diff(want, r.Models); diff != "" {
		t.Errorf("models mismatch (-want +got):\n%s", diff)
	}
}
