package ask_test

import (
	"context"
	"encoding/json"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/askbi/askbi/access"
	"github.com/askbi/askbi/ask"
	"github.com/askbi/askbi/connections"
	"github.com/askbi/askbi/connresolve"
)

// demoAnalytics is a verified OAuth provider for the resolver of
// flowEnv; its endpoint is never reached (the connection's URL is the
// test's server).
var demoAnalytics = connresolve.Provider{Name: "Demo Analytics", Capabilities: []connresolve.Capability{connresolve.WebAnalytics},
	MCPURL: "https://demo-analytics.example/mcp", OAuth: true}

// flowConns is the host's Connections of flowEnv: the remote MCP
// connections Ask can use now.
type flowConns struct{ c **conns }

func (f flowConns) Connections(ctx context.Context, p access.Principal) ([]connresolve.Connected, error) {
	return connresolve.MCPConnections(ctx, (*f.c).tools, p, []connresolve.Provider{demoAnalytics})
}

// flowEnv is an assistant with list_connections and the remote tools of
// a "Demo Analytics" connection to r, saved but not usable yet: connect
// discovers its tools and allows pageviews_by_week, as sign-in and an
// admin would. The model is provider (nil: the mock).
func flowEnv(t *testing.T, r *mcpRemote, provider ask.Provider) (e *env, connect func()) {
	t.Helper()
	var svc *conns
	tool := ask.ListConnections(connresolve.NewResolver(flowConns{&svc}, nil, &connresolve.ResolverOptions{Verified: []connresolve.Provider{demoAnalytics}}))
	e = newEnv(t, provider, withRemote(&svc), func(c *envConfig) { c.extra = append(c.extra, tool) })
	svc = newConns(e, nil)
	c, err := svc.Create(t.Context(), alice, connections.Input{Name: "Demo Analytics", Provider: "Demo Analytics", URL: r.URL, Token: "remote-token"})
	if err != nil {
		t.Fatal(err)
	}
	return e, func() {
		t.Helper()
		if _, err := svc.Discover(t.Context(), alice, c.ID, nil, svc.sign); err != nil {
			t.Fatal(err)
		}
		if _, err := svc.SetAccess(t.Context(), alice, c.ID, "pageviews_by_week", true); err != nil {
			t.Fatal(err)
		}
		if _, err := svc.SetAccess(t.Context(), alice, c.ID, "top_referrers", true); err != nil {
			t.Fatal(err)
		}
	}
}

func flowRemote(t *testing.T) *mcpRemote {
	t.Helper()
	r := newMCPRemote(t)
	r.set(remoteTool("top_referrers", "Referring sites by visits: {referrer, visits}.", annReadOnly),
		remoteTool("pageviews_by_week", "Pageviews per ISO week: {week, pageviews}.", annReadOnly))
	return r
}

func init() {
	kindAnswers["pageviews_by_week"] = &mcp.CallToolResult{StructuredContent: map[string]any{"rows": []any{
		map[string]any{"week": "2026-09-07", "pageviews": 4200}, map[string]any{"week": "2026-09-14", "pageviews": 4630},
		map[string]any{"week": "2026-09-21", "pageviews": 5060}}}}
}

// cards are the setup cards of a conversation as it opens, in order.
func cards(t *testing.T, e *env, conv string) []ask.ConnectionSetup {
	t.Helper()
	var out []ask.ConnectionSetup
	for _, r := range e.MustOpen(t, alice, conv).WorkSummary {
		var s ask.ConnectionSetup
		if json.Unmarshal(r.Result, &s) == nil && s.Type == ask.ConnectionSetupType {
			out = append(out, s)
		}
	}
	return out
}

func inert(cs []ask.ConnectionSetup) []bool {
	var out []bool
	for _, c := range cs {
		out = append(out, c.Inert)
	}
	return out
}

// Seed 000: "Continue request checks fresh data before continuing", and
// "I added the connection" grants nothing. While the provider is still
// not connected, either answers with a new card (its missing access) and
// runs nothing; once it is, Continue request goes on with the original
// question: the mock runs the connected provider's tool that fits it and
// says what came back, and the older cards offer no actions.
func TestContinueRequestResumes(t *testing.T) {
	r := flowRemote(t)
	e, connect := flowEnv(t, r, nil)
	conv := e.MustConversation(t, alice)
	const question = "show pageviews from Demo Analytics by week"
	if s := setupOf(t, e.MustSend(t, alice, conv, question, nil)); !s.NeedsSetup || s.Options[0].State != connresolve.StateMCPOAuthSetup {
		t.Fatalf("first card %+v; want the OAuth setup", s)
	}

	for _, msg := range []string{ask.AddedConnection, ask.ContinueRequest} {
		before := len(e.model.Requests())
		events := e.MustSend(t, alice, conv, msg, nil)
		s := setupOf(t, events)
		if !s.NeedsSetup || s.Inert {
			t.Errorf("%s with nothing connected: card %+v; want setup needed again, with its actions", msg, s)
		}
		if done := find(events, ask.EventMessageCompleted); done == nil || done.Text != s.Missing {
			t.Errorf("%s: answer %v; want the missing access: %q", msg, done, s.Missing)
		}
		if n := len(e.model.Requests()) - before; n != 0 || r.called("pageviews_by_week") != 0 {
			t.Errorf("%s with nothing connected: %d model requests, the tool ran %d times; want none (the button grants nothing)",
				msg, n, r.called("pageviews_by_week"))
		}
	}
	if diff := cmp.Diff([]bool{true, true, false}, inert(cards(t, e, conv))); diff != "" {
		t.Errorf("cards inert (-want +got):\n%s", diff)
	}

	connect()
	before := len(e.model.Requests())
	events := e.MustSend(t, alice, conv, ask.ContinueRequest, nil)
	var ran []string
	for _, ev := range events {
		if ev.Type == ask.EventToolCompleted {
			ran = append(ran, ev.Tool.Name)
		}
	}
	if diff := cmp.Diff([]string{"list_connections", "Demo_Analytics__pageviews_by_week"}, ran); diff != "" {
		t.Fatalf("Continue request ran (-want +got):\n%s", diff)
	}
	if s := setupOf(t, events); s.NeedsSetup || !s.Inert {
		t.Errorf("the fresh check's card %+v; want connected, without actions (the request continued)", s)
	}
	if r.called("pageviews_by_week") != 1 || r.called("top_referrers") != 0 {
		t.Errorf("pageviews_by_week ran %d times, top_referrers %d; want the fitting tool once", r.called("pageviews_by_week"), r.called("top_referrers"))
	}
	const answer = "pageviews_by_week on Demo Analytics returned 3 rows of pageviews by week, from 4,200 on 7 Sep to 5,060 on 21 Sep."
	if done := find(events, ask.EventMessageCompleted); done == nil || done.Text != answer {
		t.Errorf("answer %v; want %q", done, answer)
	}
	// The model was told, as the product's note, which question to
	// continue; the connection's tools were offered.
	req := e.model.Requests()[before]
	var user string
	for _, m := range req.Messages {
		if m.Role == ask.RoleUser {
			user = m.Text
		}
	}
	if !strings.Contains(user, "</request_context>\n"+`<continue_request from="product" provider="Demo Analytics">`) || !strings.Contains(user, "\n"+question+"\n</continue_request>") {
		t.Errorf("the continued turn's user message %q; want the product's note quoting the question", user)
	}
	if !slicesContainsTool(req.Tools, "Demo_Analytics__pageviews_by_week") {
		t.Error("the connection's approved tool was not offered")
	}
	if diff := cmp.Diff([]bool{true, true, true, true}, inert(cards(t, e, conv))); diff != "" {
		t.Errorf("after the request continued, cards inert (-want +got):\n%s", diff)
	}
}

func slicesContainsTool(tools []ask.ToolSpec, name string) bool {
	for _, t := range tools {
		if t.Name == name {
			return true
		}
	}
	return false
}

// scripted is a model that calls list_connections for the first
// question it sees, then only answers "ok"; it keeps the requests.
type scripted struct {
	mu   sync.Mutex
	reqs []ask.ModelRequest
}

func (s *scripted) Complete(_ context.Context, req ask.ModelRequest, _ func(string)) (ask.ModelReply, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.reqs = append(s.reqs, req)
	if len(s.reqs) == 1 {
		return ask.ModelReply{ToolCalls: []ask.ToolCall{{ID: "c1", Name: "list_connections",
			Arguments: json.RawMessage(`{"provider":"Demo Analytics","capability":"web_analytics"}`)}}}, nil
	}
	return ask.ModelReply{Text: "ok"}, nil
}

// The fresh check and the note are Ask's, for any model: a model that
// never calls list_connections again still gets the check run, its
// result in the history, the question to continue and the connection's
// tools.
func TestContinueRequestAnyModel(t *testing.T) {
	r := flowRemote(t)
	model := &scripted{}
	e, connect := flowEnv(t, r, model)
	conv := e.MustConversation(t, alice)
	e.MustSend(t, alice, conv, "show pageviews from Demo Analytics by week", nil)
	connect()
	events := e.MustSend(t, alice, conv, ask.ContinueRequest, nil)
	if s := setupOf(t, events); s.NeedsSetup {
		t.Fatalf("the check found %+v; want connected", s)
	}
	last := model.reqs[len(model.reqs)-1]
	var user, check string
	for i, m := range last.Messages {
		if m.Role == ask.RoleUser {
			user = m.Text
		}
		if m.Role == ask.RoleTool && i == len(last.Messages)-1 {
			check = m.Text
		}
	}
	if !strings.Contains(user, "<continue_request from=\"product\"") || !strings.Contains(user, "show pageviews from Demo Analytics by week") {
		t.Errorf("user message %q; want the product's note of the question", user)
	}
	if !strings.HasPrefix(check, `<tool_output tool="list_connections"`) || !strings.Contains(check, `"needs_setup":false`) {
		t.Errorf("the model's last message %q; want the fresh check's result", check)
	}
	if !slicesContainsTool(last.Tools, "Demo_Analytics__pageviews_by_week") {
		t.Error("the connection's approved tool was not offered")
	}
	if !strings.Contains(last.System, "<continue_request") {
		t.Error("the instructions do not say what the note is")
	}
}
