package ask_test

import (
	"context"
	"encoding/json"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/askbi/askbi/ask"
)

// script is a model that gives its replies in order, then "ok", and
// keeps the requests.
type script struct {
	mu      sync.Mutex
	replies []ask.ModelReply
	reqs    []ask.ModelRequest
}

func (s *script) Complete(_ context.Context, req ask.ModelRequest, _ func(string)) (ask.ModelReply, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.reqs = append(s.reqs, req)
	if len(s.replies) == 0 {
		return ask.ModelReply{Text: "ok"}, nil
	}
	r := s.replies[0]
	s.replies = s.replies[1:]
	return r, nil
}

func (s *script) requests() []ask.ModelRequest {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]ask.ModelRequest(nil), s.reqs...)
}

func call(name, args string) ask.ModelReply {
	return ask.ModelReply{ToolCalls: []ask.ToolCall{{ID: "m1", Name: name, Arguments: json.RawMessage(args)}}}
}

// TestStaticPrefix (seed 004): the system prompt and the tool list are
// the same bytes for every user, day and turn, also after a tool found
// that setup is needed, so that providers cache them; the date, like the
// selection and memory, is in the request's last user message.
func TestStaticPrefix(t *testing.T) {
	model := &script{replies: []ask.ModelReply{
		call("list_connections", `{"provider":"PostHog","capability":"web_analytics"}`),
		call("create_chart_preview", `{"name":"Pageviews","dataset_id":"ds-weekly","chart_type":"line","x_field":"week","y_fields":["signups"]}`),
	}}
	e, _ := connEnvModel(t, model)
	conv := e.MustConversation(t, alice)
	events := e.MustSend(t, alice, conv, "show pageviews from PostHog by week", nil)
	e.clock.Advance(48 * time.Hour)
	e.MustSend(t, bob, e.MustConversation(t, bob), "hello", refs(chartRef("c-weekly")))
	e.MustSend(t, alice, conv, "and now?", nil)

	reqs := model.requests()
	if len(reqs) != 5 {
		t.Fatalf("%d model requests; want 5", len(reqs))
	}
	first, _ := json.Marshal(reqs[0].Tools)
	for i, r := range reqs {
		if r.System != reqs[0].System {
			t.Errorf("request %d's system prompt differs from the first:\n%s", i, cmp.Diff(reqs[0].System, r.System))
		}
		if b, _ := json.Marshal(r.Tools); string(b) != string(first) {
			t.Errorf("request %d's tool list differs from the first:\n%s", i, cmp.Diff(string(first), string(b)))
		}
		if strings.Contains(r.System, "2026") || strings.Contains(r.System, "alice") {
			t.Errorf("request %d's system prompt holds request context: %q", i, r.System)
		}
	}
	for i, want := range map[int]string{0: "Today is Monday, 30 November 2026 (UTC).", 3: "Today is Wednesday, 2 December 2026 (UTC)."} {
		if last := lastUser(reqs[i]); !strings.HasPrefix(last, "<request_context from=\"product\">\n"+want+"\n</request_context>\n") {
			t.Errorf("request %d's last user message %q; want it to open with the date %q", i, shorten(last), want)
		}
	}
	// The chart tool, still offered, was refused after setup was found
	// needed: not run, not proposed, no step of the work summary.
	for _, ev := range events {
		if ev.Tool != nil && ev.Tool.Name == "create_chart_preview" {
			t.Errorf("a chart tool call became event %s after setup was found needed", ev.Type)
		}
	}
	out := reqs[2].Messages[len(reqs[2].Messages)-1]
	if out.Role != ask.RoleTool || !strings.Contains(out.Text, "not connected yet") {
		t.Errorf("the model heard %q of its chart call; want it refused", out.Text)
	}
}

func lastUser(r ask.ModelRequest) string {
	for i := len(r.Messages) - 1; i >= 0; i-- {
		if r.Messages[i].Role == ask.RoleUser {
			return r.Messages[i].Text
		}
	}
	return ""
}

func shorten(s string) string {
	if len(s) > 200 {
		return s[:200] + "…"
	}
	return s
}

// TestTurnUsage: a turn keeps the tokens of its model calls, summed, with
// the prompt cache's share as the provider reported it.
func TestTurnUsage(t *testing.T) {
	first := call("run_dataset", `{"dataset_id":"ds-weekly"}`)
	first.Usage = ask.Usage{InputTokens: 3000, CachedInputTokens: 2048, CacheWriteTokens: 0, OutputTokens: 40}
	model := &script{replies: []ask.ModelReply{first,
		{Text: "Signups rose.", Usage: ask.Usage{InputTokens: 3500, CachedInputTokens: 2900, OutputTokens: 12}}}}
	e := newEnv(t, model)
	conv := e.MustConversation(t, alice)
	e.MustSend(t, alice, conv, "how are signups?", nil)
	turns, err := e.convs.Turns(t.Context(), conv)
	if err != nil || len(turns) != 1 {
		t.Fatalf("Turns: %v, %v", turns, err)
	}
	want := ask.Usage{InputTokens: 6500, CachedInputTokens: 4948, OutputTokens: 52}
	if diff := cmp.Diff(want, turns[0].Usage); diff != "" {
		t.Errorf("turn usage mismatch (-want +got):\n%s", diff)
	}
}
