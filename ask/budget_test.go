package ask_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/askbi/askbi"
	"github.com/askbi/askbi/access"
	"github.com/askbi/askbi/access/accesstest"
	"github.com/askbi/askbi/ask/provider/mock"
	"github.com/askbi/askbi/telemetry"
	"github.com/askbi/askbi/usage"
)

// withUsage gives the assistant *svc, a usage service on store, on
// clock now, and an audit sink.
func withUsage(svc **usage.Service, store *usage.MemoryStore, now func() time.Time, audit access.AuditSink) envOption {
	return func(c *envConfig) {
		gate := access.NewGate(access.NewChecker(accesstest.Teams(), nil), nil)
		*svc = usage.NewService(store, store, gate, &usage.Options{Now: now,
			Prices: usage.Prices{mock.ModelName: {Input: 1, Output: 4}}})
		c.opts.Usage, c.opts.Audit = *svc, audit
	}
}

// TestBudgetRefusesBeforeTheModel: once the day's tokens reach the
// team's budget, a message is refused budget_exceeded before the model
// is called or anything saved, with a message that says who set the
// budget and when it resets; a turn already waiting on an approval
// finishes, model call included; the next day the team asks again. The
// demo model reports an estimate of its tokens, which is what the
// budget counts.
func TestBudgetRefusesBeforeTheModel(t *testing.T) {
	store := usage.NewMemoryStore(nil)
	var e *env
	var svc *usage.Service
	now := func() time.Time { return e.clock.Now() }
	e = newEnv(t, nil, withUsage(&svc, store, now, store))
	ctx := context.Background()

	// A turn that waits for an approval, started before the budget.
	waiting, te := proposeDelete(t, e, alice)
	conv := e.MustConversation(t, alice)
	e.MustSend(t, alice, conv, "show signups by week", nil)
	spent, _ := store.Spent(ctx, "acme", "", time.Time{})
	if spent == 0 {
		t.Fatal("the demo model reported no tokens: nothing for a budget to count")
	}
	if _, err := svc.SetBudget(ctx, alice, usage.BudgetChange{Period: usage.Day, Tokens: spent}); err != nil {
		t.Fatal(err)
	}

	calls := len(e.model.Requests())
	before := e.MustOpen(t, bob, e.MustConversation(t, bob))
	events, err := e.send(alice, conv, "show MRR by month", nil)
	if askbi.ErrorCode(err) != askbi.BudgetExceeded || !strings.HasPrefix(askbi.ErrorMessage(err), "This team's daily token budget of ") ||
		!strings.Contains(askbi.ErrorMessage(err), "set by alice on 30 Nov 2026 and resets at 00:00 UTC on 1 Dec 2026") {
		t.Errorf("a message past the budget: %v (%q), want budget_exceeded naming who set it and when it resets", err, askbi.ErrorMessage(err))
	}
	if n := len(e.model.Requests()); n != calls {
		t.Errorf("the refused message called the model %d times", n-calls)
	}
	if len(events) != 0 {
		t.Errorf("the refused message sent events %v", types(events))
	}
	if v := e.MustOpen(t, alice, conv); len(v.Messages) != 2 {
		t.Errorf("the refused message was saved: %d messages, want the 2 of the first turn", len(v.Messages))
	}
	// bob's message is the team's too.
	if _, err := e.send(bob, before.Conversation.ID, "show signups by week", nil); askbi.ErrorCode(err) != askbi.BudgetExceeded {
		t.Errorf("bob past the team's budget: %v, want budget_exceeded", err)
	}

	// The turn that was waiting finishes: its approval runs and the
	// model answers.
	calls = len(e.model.Requests())
	if _, err := approve(e, alice, waiting, te, `{"dashboard_id":"d-revenue"}`); err != nil {
		t.Fatalf("approving the waiting turn past the budget: %v", err)
	}
	if len(e.model.Requests()) == calls {
		t.Error("the waiting turn did not finish with a model call")
	}

	// The next day the budget starts again.
	e.clock.Set(time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC))
	if _, err := e.send(alice, conv, "show MRR by month", nil); err != nil {
		t.Errorf("the next day: %v", err)
	}

	// The usage view counts the turns, the refusals and the tokens.
	r, err := svc.Report(ctx, alice, time.Date(2026, 11, 30, 0, 0, 0, 0, time.UTC), time.Date(2026, 12, 2, 0, 0, 0, 0, time.UTC))
	if err != nil {
		t.Fatal(err)
	}
	byUser := map[string]usage.UserRow{}
	for _, u := range r.Users {
		byUser[u.UserID] = u
	}
	if a := byUser["alice"]; a.ChatTurns != 5 || a.ChatErrors != 1 || a.ModelCalls == 0 || a.CostUSD == 0 {
		t.Errorf("alice's row: %+v, want 5 turns (1 refused), model calls and a cost", a)
	}
	if b := byUser["bob"]; b.ChatTurns != 1 || b.ChatErrors != 1 || b.ModelCalls != 0 {
		t.Errorf("bob's row: %+v, want 1 refused turn and no model call", b)
	}
	if len(r.Models) != 1 || r.Models[0].Model != mock.ModelName || r.Models[0].Provider != mock.ProviderName || !r.Models[0].Priced {
		t.Errorf("models: %+v, want the priced demo model", r.Models)
	}
}

// TestTurnSpansAndAudit: a turn's span holds each model call (GenAI
// conventions: the demo model's names, its tokens, finish reason) and
// each tool run; the audit log records the turn and its tools by name,
// never the message or the arguments.
func TestTurnSpansAndAudit(t *testing.T) {
	spans := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(spans))
	audit := access.NewMemoryAudit(0)
	e := newEnv(t, nil, func(c *envConfig) {
		c.opts.Telemetry = telemetry.New(&telemetry.Options{TracerProvider: tp})
		c.opts.Audit = audit
	})
	conv := e.MustConversation(t, alice)
	e.MustSend(t, alice, conv, "show signups by week", nil)

	var names []string
	var root tracetest.SpanStub
	for _, s := range spans.GetSpans() {
		names = append(names, s.Name)
		if s.Name == "invoke_agent Ask" {
			root = s
		}
	}
	want := []string{"chat askbi-demo", "execute_tool search_workspace", "chat askbi-demo", "execute_tool run_dataset",
		"chat askbi-demo", "execute_tool create_chart_preview", "chat askbi-demo", "invoke_agent Ask"}
	if diff := cmp.Diff(want, names); diff != "" {
		t.Fatalf("spans mismatch (-want +got):\n%s", diff)
	}
	for _, s := range spans.GetSpans()[:len(want)-1] {
		if s.Parent.SpanID() != root.SpanContext.SpanID() {
			t.Errorf("%s is not a child of the turn's span", s.Name)
		}
	}
	model := attrMap(spans.GetSpans()[0])
	if model["gen_ai.provider.name"] != "mock" || model["gen_ai.request.model"] != "askbi-demo" || model["gen_ai.usage.input_tokens"].(int64) == 0 ||
		!cmp.Equal(model["gen_ai.response.finish_reasons"], []string{"tool_calls"}) {
		t.Errorf("model span attributes %v", model)
	}
	var actions []string
	for _, en := range audit.Entries() {
		actions = append(actions, en.Action+" "+en.Details["tool"]+en.Details["op"])
		for k, v := range en.Details {
			if strings.Contains(v, "signups") {
				t.Errorf("audit entry %s holds the message in %s: %q", en.Action, k, v)
			}
		}
	}
	wantActions := []string{"chat.tool_call search_workspace", "chat.tool_call run_dataset", "chat.tool_call create_chart_preview", "chat.turn send"}
	if diff := cmp.Diff(wantActions, actions); diff != "" {
		t.Errorf("audit mismatch (-want +got):\n%s", diff)
	}
}

func attrMap(s tracetest.SpanStub) map[string]any {
	m := map[string]any{}
	for _, kv := range s.Attributes {
		m[string(kv.Key)] = kv.Value.AsInterface()
	}
	return m
}
