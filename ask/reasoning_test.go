package ask_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/askbi/askbi/ask"
	"github.com/askbi/askbi/ask/provider/mock"
)

// Seed 000 Test Plan, components item 29: the model's private reasoning
// (ModelReply.Reasoning; the mock returns some with every reply) never
// reaches the events, the saved history, the opened conversation or the
// model's next requests, in a turn with tools and one resumed by an
// approval.
func TestPrivateReasoningDropped(t *testing.T) {
	e := newEnv(t, nil)
	ctx := context.Background()
	conv := e.MustConversation(t, alice)
	var events []ask.Event
	events = append(events, e.MustSend(t, alice, conv, "show signups by week", nil)...)
	proposal := e.MustSend(t, alice, conv, "delete the Revenue dashboard", nil)
	events = append(events, proposal...)
	ev := find(proposal, ask.EventToolApprovalRequired)
	if ev == nil {
		t.Fatalf("no approval asked: %v", types(proposal))
	}
	approved, err := approve(e, alice, conv, ev.Tool, string(ev.Tool.Arguments))
	if err != nil {
		t.Fatal(err)
	}
	events = append(events, approved...)

	// The mock reasoned about each of these questions.
	for _, want := range []string{"show signups by week", "delete the Revenue dashboard"} {
		r, _ := e.model.Complete(ctx, ask.ModelRequest{Messages: []ask.Message{{Role: ask.RoleUser, Text: want}}}, nil)
		if !strings.HasPrefix(r.Reasoning, mock.ReasoningMarker) || !strings.Contains(r.Reasoning, want) {
			t.Fatalf("the mock's reasoning about %q is %q; the test would see no leak", want, r.Reasoning)
		}
	}
	entries, err := e.convs.Entries(ctx, conv, 100)
	if err != nil {
		t.Fatal(err)
	}
	runs, err := e.convs.ToolRuns(ctx, conv)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]any{"events": events, "saved history": entries, "work summary": runs,
		"opened conversation": e.MustOpen(t, alice, conv), "model requests": e.model.Requests()}
	for where, v := range seen {
		b, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(string(b), mock.ReasoningMarker) {
			t.Errorf("the model's private reasoning reached the %s: %s", where, b)
		}
	}
	if len(entries) == 0 || find(events, ask.EventMessageCompleted) == nil {
		t.Fatalf("nothing was said or saved: %v", types(events))
	}
}
