package usage_test

import (
	"context"
	"fmt"
	"time"

	"github.com/askbi/askbi"
	"github.com/askbi/askbi/access"
	"github.com/askbi/askbi/usage"
)

// A team's daily budget refuses the turn that would start past it, and
// the view shows what the team's model calls cost.
func ExampleService() {
	dir := access.NewMemoryDirectory()
	dir.SetMember("acme", "alice", access.RoleOwner, access.AllProjects())
	gate := access.NewGate(access.NewChecker(dir, nil), nil)
	store := usage.NewMemoryStore(nil) // pgstore's DB.Usage on PostgreSQL
	today := time.Date(2026, 12, 9, 9, 0, 0, 0, time.UTC)
	svc := usage.NewService(store, store, gate, &usage.Options{
		Now:    func() time.Time { return today },
		Prices: usage.Prices{"gpt-4o-mini": {Input: 0.15, Output: 0.60}}, // US dollars per million tokens
	})
	ctx := context.Background()
	alice := access.Principal{UserID: "alice", TeamID: "acme", Auth: access.AuthSession}
	if _, err := svc.SetBudget(ctx, alice, usage.BudgetChange{Period: usage.Day, Tokens: 10000}); err != nil {
		panic(err)
	}
	live, _ := gate.Begin(ctx, alice)
	// What Ask does after each model call (ask.Options.Usage):
	svc.Charge(ctx, live, usage.ModelCall{Provider: "openai", Model: "gpt-4o-mini", Tokens: usage.Tokens{InputTokens: 9500, OutputTokens: 600}})
	// ... and before a turn's first one:
	err := svc.Check(ctx, live)
	fmt.Println(askbi.ErrorCode(err))
	fmt.Println(askbi.ErrorMessage(err))
	r, _ := svc.Report(ctx, alice, today.Add(-time.Hour), today.Add(time.Hour))
	fmt.Printf("%s: %d tokens, $%.6f\n", r.Models[0].Model, r.Total.Tokens.Total(), r.Total.CostUSD)
	// Output:
	// budget_exceeded
	// This team's daily token budget of 10,000 tokens is used up (10,100 used). It was set by alice on 9 Dec 2026 and resets at 00:00 UTC on 10 Dec 2026. A team owner or admin can raise it.
	// gpt-4o-mini: 10100 tokens, $0.001785
}
