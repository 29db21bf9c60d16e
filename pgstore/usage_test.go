package pgstore_test

import (
	"context"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/askbi/askbi"
	"github.com/askbi/askbi/access"
	"github.com/askbi/askbi/internal/pgtest"
	"github.com/askbi/askbi/pgstore"
	"github.com/askbi/askbi/usage"
	"github.com/askbi/askbi/usage/usagetest"
)

// newUsageStore is a UsageStore on a fresh database, closed with the
// test.
func newUsageStore(t *testing.T) *pgstore.UsageStore {
	s := pgstore.NewUsageStore(MustStore(t), slog.New(slog.DiscardHandler))
	t.Cleanup(func() { s.Close() })
	return s
}

func TestUsageLedger(t *testing.T) {
	usagetest.RunLedger(t, func(t *testing.T) usage.Ledger { return newUsageStore(t) })
}

func TestUsageBudgets(t *testing.T) {
	usagetest.RunBudgets(t, func(t *testing.T) usage.Budgets { return newUsageStore(t) })
}

// TestAuditBatches: Record holds entries without a round trip and writes
// them within a second; Close writes what is left.
func TestAuditBatches(t *testing.T) {
	db := MustStore(t)
	s := pgstore.NewUsageStore(db, slog.New(slog.DiscardHandler))
	ctx := context.Background()
	count := func() int {
		var n int
		if err := db.GetContext(ctx, &n, `SELECT count(*) FROM audit_log`); err != nil {
			t.Fatal(err)
		}
		return n
	}
	e := access.AuditEntry{Time: time.Now(), Action: access.ActionMCPToolCall, UserID: "alice", TeamID: "acme", Outcome: access.OutcomeOK,
		Details: map[string]string{"tool": "run_dataset"}}
	if err := s.Record(ctx, e); err != nil {
		t.Fatal(err)
	}
	if n := count(); n != 0 {
		t.Errorf("%d entries written at once; want them held", n)
	}
	deadline := time.Now().Add(5 * time.Second)
	for count() == 0 && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
	}
	if n := count(); n != 1 {
		t.Errorf("%d entries written after a second, want 1", n)
	}
	for range 300 { // more than a batch
		s.Record(ctx, e)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if n := count(); n != 301 {
		t.Errorf("%d entries after Close, want 301", n)
	}
}

// TestBudgetAcrossInstances: two instances on one database share a
// budget: a turn's tokens charged on one count for the next turn on the
// other, so the team overshoots by at most the turn that crossed it; a
// budget set on one refuses on the other; the overshoot of turns that
// start at the same moment is bounded by those turns. (Broken once by
// having each instance read only the charges it wrote: the second
// instance then let the team run on past the budget.)
func TestBudgetAcrossInstances(t *testing.T) {
	url := pgtest.MustDatabase(t)
	ctx := context.Background()
	dir := access.NewMemoryDirectory()
	dir.SetMember("acme", "alice", access.RoleOwner, access.AllProjects())
	dir.SetMember("acme", "bob", access.RoleEditor, access.AllProjects())
	gate := access.NewGate(access.NewChecker(dir, nil), unlimited)
	now := time.Date(2026, 12, 9, 10, 0, 0, 0, time.UTC)
	var svc [2]*usage.Service
	for i := range svc {
		db, err := pgstore.Open(ctx, url, &pgstore.Options{Logger: slog.New(slog.DiscardHandler)})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { db.Close() })
		svc[i] = usage.NewService(db.Usage, db.Usage, gate, &usage.Options{Now: func() time.Time { return now }})
	}
	alice := access.Principal{UserID: "alice", TeamID: "acme", Auth: access.AuthSession}
	live, err := gate.Begin(ctx, alice)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := svc[0].SetBudget(ctx, alice, usage.BudgetChange{Period: usage.Day, Tokens: 1000}); err != nil {
		t.Fatal(err)
	}
	const turn = 300
	ran := 0
	for i := range 10 {
		s := svc[i%2]
		if err := s.Check(ctx, live); err != nil {
			if askbi.ErrorCode(err) != askbi.BudgetExceeded {
				t.Fatalf("turn %d: %v", i, err)
			}
			continue
		}
		ran++
		if err := s.Charge(ctx, live, usage.ModelCall{Model: "m", Tokens: usage.Tokens{InputTokens: turn - 10, OutputTokens: 10}}); err != nil {
			t.Fatal(err)
		}
	}
	if ran != 4 {
		t.Errorf("%d turns ran on two instances under a budget of 1,000, %d tokens each; want 4 (the fourth crosses it)", ran, turn)
	}
	spent, _ := svc[1].Report(ctx, alice, now.Add(-time.Hour), now.Add(time.Hour))
	if got := spent.Total.Tokens.Total(); got > 1000+turn {
		t.Errorf("the team spent %d tokens, more than the budget and one turn (%d)", got, 1000+turn)
	}

	// Turns that start at the same moment all pass: the overshoot is
	// bounded by them (docs/operations.md).
	now = now.AddDate(0, 0, 1)
	var wg sync.WaitGroup
	var mu sync.Mutex
	started := 0
	for i := range 8 {
		wg.Go(func() {
			s := svc[i%2]
			if s.Check(ctx, live) != nil {
				return
			}
			mu.Lock()
			started++
			mu.Unlock()
			s.Charge(ctx, live, usage.ModelCall{Model: "m", Tokens: usage.Tokens{InputTokens: turn}})
		})
	}
	wg.Wait()
	r, _ := svc[0].Report(ctx, alice, now.Add(-time.Hour), now.Add(time.Hour))
	if got := r.Total.Tokens.Total(); got > 1000+int64(started)*turn || got != int64(started)*turn {
		t.Errorf("8 turns at once: %d started, %d tokens; want each started turn's and no more than the budget and those turns", started, got)
	}
	if err := svc[1].Check(ctx, live); started*turn >= 1000 && askbi.ErrorCode(err) != askbi.BudgetExceeded {
		t.Errorf("after %d turns of %d tokens: %v, want budget_exceeded", started, turn, err)
	}
}
