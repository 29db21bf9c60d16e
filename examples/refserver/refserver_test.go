package main

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/jmoiron/sqlx"

	"github.com/askbi/askbi"
	"github.com/askbi/askbi/access"
	"github.com/askbi/askbi/ask"
	"github.com/askbi/askbi/ask/provider/mock"
	"github.com/askbi/askbi/dataexec"
	"github.com/askbi/askbi/internal/pgtest"
	"github.com/askbi/askbi/memory"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

// testApp is the app served over real HTTP.
type testApp struct {
	*app
	url string
	srv *httptest.Server
}

// MustApp starts the app in memory (or as edit changes cfg) behind an
// HTTP server with the production timeouts (or as server changes them).
func MustApp(tb testing.TB, edit func(*config), server func(*http.Server)) *testApp {
	tb.Helper()
	cfg := config{inMemory: true, provider: "mock", sharing: "aggregates", memoryPolicy: "allow", dataDir: tb.TempDir()}
	if edit != nil {
		edit(&cfg)
	}
	ts := httptest.NewUnstartedServer(nil)
	base := "http://" + ts.Listener.Addr().String()
	a, err := newApp(tb.Context(), cfg, base, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		ts.Close()
		tb.Fatalf("newApp: %v", err)
	}
	ts.Config = newServer(a.routes())
	if server != nil {
		server(ts.Config)
	}
	ts.Start()
	tb.Cleanup(func() {
		ts.Close()
		a.close()
	})
	return &testApp{app: a, url: base, srv: ts}
}

// session returns the session token of the named demo principal.
func (ta *testApp) session(tb testing.TB, name string) string {
	tb.Helper()
	for _, p := range ta.creds.Principals {
		if p.Name == name {
			return p.SessionToken
		}
	}
	tb.Fatalf("no demo principal %q", name)
	return ""
}

func (ta *testApp) apiKey(tb testing.TB, name string) string {
	tb.Helper()
	for _, p := range ta.creds.Principals {
		if p.Name == name {
			return p.APIKey
		}
	}
	tb.Fatalf("no demo principal %q", name)
	return ""
}

// do sends a request; body is sent as is when it is a string, else as
// JSON. It returns the status, the headers and the body.
func (ta *testApp) do(tb testing.TB, method, path, token string, body any, header ...string) (int, http.Header, []byte) {
	tb.Helper()
	var r io.Reader
	switch b := body.(type) {
	case nil:
	case string:
		r = strings.NewReader(b)
	default:
		j, err := json.Marshal(b)
		if err != nil {
			tb.Fatal(err)
		}
		r = bytes.NewReader(j)
	}
	req, err := http.NewRequestWithContext(tb.Context(), method, ta.url+path, r)
	if err != nil {
		tb.Fatal(err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := ta.srv.Client().Do(req)
	if err != nil {
		tb.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		tb.Fatalf("%s %s: read: %v", method, path, err)
	}
	return resp.StatusCode, resp.Header, b
}

// MustDo is do that requires status want and decodes the answer into out
// (when not nil).
func (ta *testApp) MustDo(tb testing.TB, want int, method, path, token string, body, out any) {
	tb.Helper()
	status, _, b := ta.do(tb, method, path, token, body)
	if status != want {
		tb.Fatalf("%s %s: status %d, want %d; body %s", method, path, status, want, b)
	}
	if out != nil {
		if err := json.Unmarshal(b, out); err != nil {
			tb.Fatalf("%s %s: decode %s: %v", method, path, b, err)
		}
	}
}

// MustConversation creates a conversation and returns its ID.
func (ta *testApp) MustConversation(tb testing.TB, token string) string {
	tb.Helper()
	var out struct{ Conversation ask.Conversation }
	ta.MustDo(tb, http.StatusCreated, "POST", "/ai/conversations", token, nil, &out)
	if out.Conversation.ID == "" {
		tb.Fatal("no conversation ID")
	}
	return out.Conversation.ID
}

// MustTurn posts a turn as JSON and returns its events.
func (ta *testApp) MustTurn(tb testing.TB, path, token string, body any) []ask.Event {
	tb.Helper()
	var out struct{ Events []ask.Event }
	ta.MustDo(tb, http.StatusOK, "POST", path, token, body, &out)
	return out.Events
}

// MustStream posts a turn as SSE and returns its events, parsed from the
// frames, checking each frame's event and id lines against its data.
func (ta *testApp) MustStream(tb testing.TB, path, token string, body any) []ask.Event {
	tb.Helper()
	status, h, b := ta.do(tb, "POST", path, token, body, "Accept", "text/event-stream")
	if status != http.StatusOK || h.Get("Content-Type") != "text/event-stream" {
		tb.Fatalf("POST %s: status %d, Content-Type %q; body %s", path, status, h.Get("Content-Type"), b)
	}
	return parseSSE(tb, b)
}

func parseSSE(tb testing.TB, b []byte) []ask.Event {
	tb.Helper()
	var events []ask.Event
	for frame := range strings.SplitSeq(strings.TrimSpace(string(b)), "\n\n") {
		var name, id, data string
		for line := range strings.SplitSeq(frame, "\n") {
			switch {
			case strings.HasPrefix(line, ":"): // heartbeat comment
			case strings.HasPrefix(line, "event: "):
				name = strings.TrimPrefix(line, "event: ")
			case strings.HasPrefix(line, "id: "):
				id = strings.TrimPrefix(line, "id: ")
			case strings.HasPrefix(line, "data: "):
				data = strings.TrimPrefix(line, "data: ")
			default:
				tb.Fatalf("unexpected SSE line %q", line)
			}
		}
		if data == "" {
			continue
		}
		var e ask.Event
		if err := json.Unmarshal([]byte(data), &e); err != nil {
			tb.Fatalf("SSE data %q: %v", data, err)
		}
		if name != string(e.Type) || id != fmt.Sprint(e.Seq) {
			tb.Errorf("SSE frame event %q id %q, data says %q seq %d", name, id, e.Type, e.Seq)
		}
		events = append(events, e)
	}
	return events
}

// types lists the events' types with consecutive message.delta events
// collapsed into one.
func types(events []ask.Event) []string {
	var out []string
	for _, e := range events {
		if e.Type == ask.EventMessageDelta && len(out) > 0 && out[len(out)-1] == string(e.Type) {
			continue
		}
		out = append(out, string(e.Type))
	}
	return out
}

// toolEvent returns the first event of type typ for tool name.
func toolEvent(tb testing.TB, events []ask.Event, typ ask.EventType, name string) ask.Event {
	tb.Helper()
	for _, e := range events {
		if e.Type == typ && e.Tool != nil && e.Tool.Name == name {
			return e
		}
	}
	tb.Fatalf("no %s event for %s in %v", typ, name, types(events))
	return ask.Event{}
}

// errorOf decodes an error answer.
func errorOf(tb testing.TB, b []byte) errorBody {
	tb.Helper()
	var doc errorDoc
	if err := json.Unmarshal(b, &doc); err != nil || doc.Error.Code == "" {
		tb.Fatalf("not an error answer: %s", b)
	}
	return doc.Error
}

func checkOrder(tb testing.TB, events []ask.Event) {
	tb.Helper()
	if len(events) == 0 {
		tb.Fatal("no events")
	}
	for i, e := range events {
		if e.Seq != i+1 {
			tb.Errorf("event %d has seq %d", i, e.Seq)
		}
	}
	if last := events[len(events)-1]; last.Type != ask.EventRequestCompleted {
		tb.Errorf("last event is %s (%+v), want request.completed", last.Type, last.Error)
	}
}

// showSignupsWant is the event order of "show signups by week".
var showSignupsWant = []string{
	"tool.running", "tool.completed", // search_workspace
	"tool.running", "tool.completed", // preview_data
	"tool.running", "tool.completed", // create_chart_preview
	"message.delta", "message.completed", "request.completed",
}

func TestCredentialsFile(t *testing.T) {
	ta := MustApp(t, nil, nil)
	path := filepath.Join(t.TempDir(), "creds.json")
	if err := ta.writeCredentials(path); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o600 {
		t.Errorf("credentials file mode %v, want 0600", fi.Mode().Perm())
	}
	b, _ := os.ReadFile(path)
	var doc struct {
		BaseURL    string           `json:"base_url"`
		MCPURL     string           `json:"mcp_url"`
		Principals []map[string]any `json:"principals"`
	}
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	if doc.BaseURL != ta.url || doc.MCPURL != ta.url+"/mcp" {
		t.Errorf("base_url %q mcp_url %q", doc.BaseURL, doc.MCPURL)
	}
	got := map[string]map[string]any{}
	for _, p := range doc.Principals {
		got[fmt.Sprint(p["name"])] = p
	}
	fields := []string{"name", "user", "team", "role", "projects", "scopes", "api_key", "session_token"}
	for _, name := range []string{"alice", "alice-read", "bob", "vic", "carol"} {
		p, ok := got[name]
		if !ok {
			t.Errorf("principal %s missing", name)
			continue
		}
		for _, f := range fields {
			if v, ok := p[f]; !ok || v == "" || v == nil {
				t.Errorf("%s: field %s missing or empty", name, f)
			}
		}
		if tok, _ := p["session_token"].(string); !strings.HasPrefix(tok, sessionPrefix) {
			t.Errorf("%s: session_token %q lacks prefix %s", name, tok, sessionPrefix)
		}
	}
	if got["alice"]["session_token"] != got["alice-read"]["session_token"] {
		t.Error("alice-read should share alice's session (same user)")
	}
	if got["alice"]["session_token"] == got["bob"]["session_token"] {
		t.Error("alice and bob share a session token")
	}
	if diff := cmp.Diff(any([]any{"Growth"}), got["bob"]["projects"]); diff != "" {
		t.Errorf("bob's projects mismatch (-want +got):\n%s", diff)
	}
}

// TestAuthentication: chat routes need a session token, refuse API keys,
// and the MCP endpoint refuses session tokens.
func TestAuthentication(t *testing.T) {
	ta := MustApp(t, nil, nil)
	routes := []struct{ method, path string }{
		{"POST", "/ai/conversations"},
		{"GET", "/ai/conversations"},
		{"GET", "/ai/conversations/conv_x"},
		{"DELETE", "/ai/conversations/conv_x"},
		{"POST", "/ai/conversations/conv_x/messages"},
		{"POST", "/ai/conversations/conv_x/approvals/apr_x/approve"},
		{"POST", "/ai/conversations/conv_x/approvals/apr_x/reject"},
		{"POST", "/ai/conversations/conv_x/charts/chart_x/add-to-dashboard"},
		{"GET", "/ai/context?teamId=acme"},
		{"GET", "/ai/memory"},
		{"POST", "/ai/memory"},
		{"PUT", "/ai/memory/mem_x"},
		{"DELETE", "/ai/memory/mem_x"},
		{"DELETE", "/ai/memory"},
	}
	tokens := map[string]string{
		"none":          "",
		"unknown":       sessionPrefix + "NOPE",
		"api key":       ta.apiKey(t, "alice"),
		"garbage":       "x",
		"session typo":  ta.session(t, "alice") + "x",
		"empty bearer ": " ",
	}
	for name, tok := range tokens {
		for _, r := range routes {
			t.Run(name+" "+r.method+" "+r.path, func(t *testing.T) {
				status, h, b := ta.do(t, r.method, r.path, tok, `{"message":"hi"}`)
				if status != http.StatusUnauthorized {
					t.Fatalf("status %d, want 401; body %s", status, b)
				}
				if e := errorOf(t, b); e.Code != askbi.Unauthenticated {
					t.Errorf("code %q, want unauthenticated", e.Code)
				}
				if !strings.HasPrefix(h.Get("WWW-Authenticate"), "Bearer") {
					t.Errorf("WWW-Authenticate %q", h.Get("WWW-Authenticate"))
				}
			})
		}
	}

	mcp := func(token string) int {
		status, _, _ := ta.do(t, "POST", "/mcp", token, `{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{}}`,
			"Accept", "application/json, text/event-stream")
		return status
	}
	if s := mcp(ta.apiKey(t, "alice")); s != http.StatusOK {
		t.Errorf("/mcp with an API key: status %d, want 200", s)
	}
	if s := mcp(ta.session(t, "alice")); s != http.StatusUnauthorized {
		t.Errorf("/mcp with a session token: status %d, want 401", s)
	}
	// The session works on the chat API.
	ta.MustDo(t, http.StatusOK, "GET", "/ai/conversations", ta.session(t, "alice"), nil, nil)
}

func TestChatJSONAndSSE(t *testing.T) {
	ta := MustApp(t, nil, nil)
	alice := ta.session(t, "alice")
	conv := ta.MustConversation(t, alice)
	path := "/ai/conversations/" + conv + "/messages"

	events := ta.MustTurn(t, path, alice, map[string]any{"message": "show signups by week"})
	checkOrder(t, events)
	if diff := cmp.Diff(showSignupsWant, types(events)); diff != "" {
		t.Errorf("JSON event types mismatch (-want +got):\n%s", diff)
	}
	chart := toolEvent(t, events, ask.EventToolCompleted, "create_chart_preview")
	if chart.Tool.Label != "Created chart preview" || !strings.Contains(string(chart.Tool.Result), `"status":"preview"`) {
		t.Errorf("chart event: %+v", chart.Tool)
	}

	streamed := ta.MustStream(t, path, alice, map[string]any{"message": "show signups by week"})
	checkOrder(t, streamed)
	if diff := cmp.Diff(showSignupsWant, types(streamed)); diff != "" {
		t.Errorf("SSE event types mismatch (-want +got):\n%s", diff)
	}
	if streamed[0].TurnID == events[0].TurnID || streamed[0].ConversationID != conv {
		t.Errorf("SSE turn %q conversation %q", streamed[0].TurnID, streamed[0].ConversationID)
	}

	var view ask.View
	ta.MustDo(t, http.StatusOK, "GET", "/ai/conversations/"+conv, alice, nil, &view)
	var labels []string
	for _, r := range view.WorkSummary {
		labels = append(labels, r.Label+" "+string(r.State))
	}
	want := []string{"Searched the workspace completed", "Previewed data completed", "Created chart preview completed"}
	if diff := cmp.Diff(append(want, want...), labels); diff != "" {
		t.Errorf("work summary mismatch (-want +got):\n%s", diff)
	}
	if len(view.Messages) != 4 || view.Messages[0].Text != "show signups by week" || view.Messages[0].Role != ask.RoleUser {
		t.Errorf("messages: %+v", view.Messages)
	}
	if view.Conversation.Title != "show signups by week" || view.Context == nil || view.Pending == nil {
		t.Errorf("view: %+v", view)
	}

	var list struct{ Conversations []ask.Conversation }
	ta.MustDo(t, http.StatusOK, "GET", "/ai/conversations?limit=5", alice, nil, &list)
	if len(list.Conversations) != 1 || list.Conversations[0].ID != conv {
		t.Errorf("list: %+v", list.Conversations)
	}
	// Another user does not see it.
	bob := ta.session(t, "bob")
	status, _, b := ta.do(t, "GET", "/ai/conversations/"+conv, bob, nil)
	if status != http.StatusNotFound || errorOf(t, b).Code != askbi.NotFound {
		t.Errorf("bob opens alice's conversation: %d %s", status, b)
	}
	ta.MustDo(t, http.StatusOK, "GET", "/ai/conversations", bob, nil, &list)
	if len(list.Conversations) != 0 {
		t.Errorf("bob lists %d conversations", len(list.Conversations))
	}
	ta.MustDo(t, http.StatusNoContent, "DELETE", "/ai/conversations/"+conv, alice, nil, nil)
	ta.MustDo(t, http.StatusNotFound, "GET", "/ai/conversations/"+conv, alice, nil, nil)
}

// TestActiveContext: omitted keeps, a list replaces, [] clears.
func TestActiveContext(t *testing.T) {
	ta := MustApp(t, nil, nil)
	alice := ta.session(t, "alice")
	conv := ta.MustConversation(t, alice)
	path := "/ai/conversations/" + conv + "/messages"
	sel := []map[string]string{{"entity_type": "chart", "id": "chart_mrr"}, {"entity_type": "chart", "id": "chart_mrr"}}
	events := ta.MustTurn(t, path, alice, map[string]any{"message": "hello", "context": sel})
	if events[0].Type != ask.EventContextUpdated || len(events[0].Context) != 1 || events[0].Context[0].Label != "Chart: MRR" {
		t.Fatalf("first event: %+v", events[0])
	}
	ta.MustTurn(t, path, alice, map[string]any{"message": "hello again"})
	var view ask.View
	ta.MustDo(t, http.StatusOK, "GET", "/ai/conversations/"+conv, alice, nil, &view)
	if len(view.Context) != 1 || view.Context[0].ID != "chart_mrr" {
		t.Errorf("context after an omitted one: %+v", view.Context)
	}
	ta.MustTurn(t, path, alice, map[string]any{"message": "clear", "context": []any{}})
	ta.MustDo(t, http.StatusOK, "GET", "/ai/conversations/"+conv, alice, nil, &view)
	if len(view.Context) != 0 {
		t.Errorf("context after []: %+v", view.Context)
	}
	// Another team's chart is not found, and nothing changes.
	status, _, b := ta.do(t, "POST", path, alice, map[string]any{"message": "x", "context": []map[string]string{{"entity_type": "chart", "id": "chart_tickets"}}})
	if status != http.StatusNotFound {
		t.Errorf("another team's chart: %d %s", status, b)
	}
}

// startDelete asks to delete the Revenue dashboard and returns the
// approval event.
func startDelete(t *testing.T, ta *testApp, token, conv string) ask.Event {
	t.Helper()
	events := ta.MustTurn(t, "/ai/conversations/"+conv+"/messages", token, map[string]any{"message": "delete the Revenue dashboard"})
	want := []string{"tool.running", "tool.completed", "tool.approval_required", "request.completed"}
	if diff := cmp.Diff(want, types(events)); diff != "" {
		t.Fatalf("event types mismatch (-want +got):\n%s", diff)
	}
	e := toolEvent(t, events, ask.EventToolApprovalRequired, "delete_dashboard")
	if e.Tool.ApprovalID == "" || string(e.Tool.Arguments) != `{"dashboard_id":"dash_revenue"}` {
		t.Fatalf("approval event: %+v", e.Tool)
	}
	if last := events[len(events)-1]; last.State != ask.TurnAwaitingApproval {
		t.Errorf("turn state %q, want awaiting_approval", last.State)
	}
	return e
}

// dashboards returns the names of the dashboards search finds for token.
func dashboards(t *testing.T, ta *testApp, token, team string) []string {
	t.Helper()
	var doc struct{ Groups []contextGroup }
	ta.MustDo(t, http.StatusOK, "GET", "/ai/context?teamId="+team+"&type=dashboard&limit=50", token, nil, &doc)
	var names []string
	for _, g := range doc.Groups {
		for _, it := range g.Items {
			names = append(names, it.Name)
		}
	}
	slices.Sort(names)
	return names
}

func auditCount(ta *testApp, action, outcome string) int {
	n := 0
	for _, e := range ta.audit.Entries() {
		if e.Action == action && e.Outcome == outcome {
			n++
		}
	}
	return n
}

func TestApprove(t *testing.T) {
	ta := MustApp(t, nil, nil)
	alice := ta.session(t, "alice")
	conv := ta.MustConversation(t, alice)
	if got := dashboards(t, ta, alice, "acme"); !slices.Contains(got, "Revenue") {
		t.Fatalf("dashboards before: %v", got)
	}
	e := startDelete(t, ta, alice, conv)
	var view ask.View
	ta.MustDo(t, http.StatusOK, "GET", "/ai/conversations/"+conv, alice, nil, &view)
	if len(view.Pending) != 1 || view.Pending[0].ApprovalID != e.Tool.ApprovalID {
		t.Fatalf("pending approvals: %+v", view.Pending)
	}
	if got := dashboards(t, ta, alice, "acme"); !slices.Contains(got, "Revenue") {
		t.Fatal("the dashboard was deleted before approval")
	}
	approve := "/ai/conversations/" + conv + "/approvals/" + e.Tool.ApprovalID + "/approve"

	// Changed arguments: nothing runs.
	status, _, b := ta.do(t, "POST", approve, alice, map[string]any{"tool": "delete_dashboard", "arguments": map[string]string{"dashboard_id": "dash_finance"}})
	if status != http.StatusConflict || errorOf(t, b).Code != askbi.ApprovalInvalid {
		t.Errorf("changed arguments: %d %s", status, b)
	}
	// Another user: the conversation is not theirs.
	status, _, _ = ta.do(t, "POST", approve, ta.session(t, "bob"), map[string]any{"tool": "delete_dashboard", "arguments": e.Tool.Arguments})
	if status != http.StatusNotFound {
		t.Errorf("bob approves: %d", status)
	}

	events := ta.MustStream(t, approve, alice, map[string]any{"tool": "delete_dashboard", "arguments": e.Tool.Arguments})
	want := []string{"tool.running", "tool.completed", "message.delta", "message.completed", "request.completed"}
	if diff := cmp.Diff(want, types(events)); diff != "" {
		t.Errorf("approve event types mismatch (-want +got):\n%s", diff)
	}
	if got := dashboards(t, ta, alice, "acme"); slices.Contains(got, "Revenue") {
		t.Errorf("the Revenue dashboard is still there: %v", got)
	}
	if n := auditCount(ta, dataexec.ActionDashboardDelete, dataexec.OutcomeOK); n != 1 {
		t.Errorf("%d dashboard deletions audited, want 1", n)
	}

	// A retry answers from the receipt without running again.
	events = ta.MustTurn(t, approve, alice, map[string]any{"tool": "delete_dashboard", "arguments": e.Tool.Arguments})
	if diff := cmp.Diff([]string{"tool.completed", "request.completed"}, types(events)); diff != "" {
		t.Errorf("retry event types mismatch (-want +got):\n%s", diff)
	}
	if n := auditCount(ta, dataexec.ActionDashboardDelete, dataexec.OutcomeOK) + auditCount(ta, dataexec.ActionDashboardDelete, "not_found"); n != 1 {
		t.Errorf("%d dashboard deletions audited after the retry, want 1", n)
	}
	// Rejecting a consumed approval is invalid.
	status, _, b = ta.do(t, "POST", "/ai/conversations/"+conv+"/approvals/"+e.Tool.ApprovalID+"/reject", alice,
		map[string]any{"tool": "delete_dashboard", "arguments": e.Tool.Arguments})
	if status != http.StatusConflict || errorOf(t, b).Code != askbi.ApprovalInvalid {
		t.Errorf("reject after approve: %d %s", status, b)
	}
	ta.MustDo(t, http.StatusOK, "GET", "/ai/conversations/"+conv, alice, nil, &view)
	if len(view.Pending) != 0 {
		t.Errorf("pending after approval: %+v", view.Pending)
	}
}

func TestReject(t *testing.T) {
	ta := MustApp(t, nil, nil)
	alice := ta.session(t, "alice")
	conv := ta.MustConversation(t, alice)
	e := startDelete(t, ta, alice, conv)
	prefix := "/ai/conversations/" + conv + "/approvals/" + e.Tool.ApprovalID
	events := ta.MustTurn(t, prefix+"/reject", alice, map[string]any{"tool": "delete_dashboard", "arguments": e.Tool.Arguments})
	want := []string{"tool.rejected", "message.delta", "message.completed", "request.completed"}
	if diff := cmp.Diff(want, types(events)); diff != "" {
		t.Errorf("reject event types mismatch (-want +got):\n%s", diff)
	}
	if got := dashboards(t, ta, alice, "acme"); !slices.Contains(got, "Revenue") {
		t.Errorf("the Revenue dashboard is gone after a rejection: %v", got)
	}
	// The burnt approval cannot be approved.
	status, _, b := ta.do(t, "POST", prefix+"/approve", alice, map[string]any{"tool": "delete_dashboard", "arguments": e.Tool.Arguments})
	if status != http.StatusConflict || errorOf(t, b).Code != askbi.ApprovalInvalid {
		t.Errorf("approve after reject: %d %s", status, b)
	}
	if got := dashboards(t, ta, alice, "acme"); !slices.Contains(got, "Revenue") {
		t.Error("the Revenue dashboard is gone")
	}
	if n := auditCount(ta, dataexec.ActionDashboardDelete, dataexec.OutcomeOK); n != 0 {
		t.Errorf("%d deletions audited", n)
	}
	var view ask.View
	ta.MustDo(t, http.StatusOK, "GET", "/ai/conversations/"+conv, alice, nil, &view)
	last := view.WorkSummary[len(view.WorkSummary)-1]
	if last.Tool != "delete_dashboard" || last.State != ask.RunRejected {
		t.Errorf("work summary ends with %+v", last)
	}
}

func TestAddToDashboard(t *testing.T) {
	ta := MustApp(t, nil, nil)
	alice := ta.session(t, "alice")
	conv := ta.MustConversation(t, alice)
	events := ta.MustTurn(t, "/ai/conversations/"+conv+"/messages", alice, map[string]any{"message": "show signups by week"})
	var cr ask.ChartResult
	if err := json.Unmarshal(toolEvent(t, events, ask.EventToolCompleted, "create_chart_preview").Tool.Result, &cr); err != nil || cr.Chart == nil {
		t.Fatalf("chart result: %v %+v", err, cr)
	}
	path := "/ai/conversations/" + conv + "/charts/" + cr.Chart.ID + "/add-to-dashboard"

	status, _, b := ta.do(t, "POST", path, alice, map[string]any{"dashboard_id": "dash_finance"})
	if status != http.StatusBadRequest || !strings.Contains(errorOf(t, b).Message, "dashboard_id") {
		t.Errorf("dashboard in another project: %d %s", status, b)
	}
	status, _, _ = ta.do(t, "POST", path, ta.session(t, "bob"), map[string]any{"dashboard_id": "dash_growth"})
	if status != http.StatusNotFound {
		t.Errorf("bob adds alice's chart: %d", status)
	}
	var out struct{ Chart ask.ChartResult }
	ta.MustDo(t, http.StatusOK, "POST", path, alice, map[string]any{"dashboard_id": "dash_growth"}, &out)
	if out.Chart.Status != "saved" || out.Chart.Dashboard == nil || out.Chart.Dashboard.ID != "dash_growth" {
		t.Errorf("add to dashboard: %+v", out.Chart)
	}
	status, _, b = ta.do(t, "POST", path, alice, map[string]any{"dashboard_id": "dash_growth"})
	if status != http.StatusConflict || errorOf(t, b).Code != askbi.Conflict {
		t.Errorf("second add: %d %s", status, b)
	}
	status, _, _ = ta.do(t, "POST", "/ai/conversations/"+conv+"/charts/chart_mrr/add-to-dashboard", alice, map[string]any{"dashboard_id": "dash_finance"})
	if status != http.StatusNotFound {
		t.Errorf("a chart that is not this conversation's: %d", status)
	}
	var view ask.View
	ta.MustDo(t, http.StatusOK, "GET", "/ai/conversations/"+conv, alice, nil, &view)
	last := view.WorkSummary[len(view.WorkSummary)-1]
	if last.Label != "Added chart to dashboard" || last.State != ask.RunCompleted {
		t.Errorf("work summary ends with %+v", last)
	}
	for _, r := range view.WorkSummary {
		if r.Tool == "create_chart_preview" && !strings.Contains(string(r.Result), `"status":"saved"`) {
			t.Errorf("the preview is not shown as saved: %s", r.Result)
		}
	}
	if n := auditCount(ta, dataexec.ActionChartPlace, dataexec.OutcomeOK); n != 1 {
		t.Errorf("%d chart placements audited, want 1", n)
	}
}

func TestContextSearch(t *testing.T) {
	ta := MustApp(t, nil, nil)
	alice, bob := ta.session(t, "alice"), ta.session(t, "bob")
	search := func(token, query string) (int, []contextGroup, []byte) {
		status, _, b := ta.do(t, "GET", "/ai/context?"+query, token, nil)
		var doc struct{ Groups []contextGroup }
		if status == http.StatusOK {
			if err := json.Unmarshal(b, &doc); err != nil {
				t.Fatal(err)
			}
		}
		return status, doc.Groups, b
	}
	count := func(groups []contextGroup) int {
		n := 0
		for _, g := range groups {
			n += len(g.Items)
		}
		return n
	}

	status, groups, b := search(alice, "teamId=acme")
	if status != http.StatusOK {
		t.Fatalf("search: %d %s", status, b)
	}
	var names []string
	for _, g := range groups {
		names = append(names, g.Name)
	}
	if diff := cmp.Diff([]string{"Recent", "Dashboards", "Charts", "Datasets", "Connections"}, names); diff != "" {
		t.Errorf("group names mismatch (-want +got):\n%s", diff)
	}
	var recent []string
	for _, it := range groups[0].Items {
		recent = append(recent, it.ID)
	}
	if diff := cmp.Diff([]string{"chart_weekly_signups", "chart_mrr", "dash_growth", "chart_signups_country"}, recent[:4]); diff != "" {
		t.Errorf("recent items mismatch (-want +got):\n%s", diff)
	}
	if len(recent) != recentItems {
		t.Errorf("%d recent items, want %d", len(recent), recentItems)
	}
	byGroup := map[string]string{"Dashboards": "dashboard", "Charts": "chart", "Datasets": "dataset", "Connections": "connection"}
	seen := map[string]bool{}
	for _, g := range groups {
		for _, it := range g.Items {
			if seen[it.ID] {
				t.Errorf("%s appears twice", it.ID)
			}
			seen[it.ID] = true
			if want, ok := byGroup[g.Name]; ok && string(it.EntityType) != want {
				t.Errorf("%s in group %s", it.ID, g.Name)
			}
			if it.Info == "" || strings.Contains(it.Label, it.ID) || !strings.HasSuffix(it.Label, ": "+it.Name) {
				t.Errorf("item %+v: want an info line and a label without the ID", it)
			}
		}
	}
	if seen["chart_tickets"] || seen["dash_support"] {
		t.Error("another team's items in the results")
	}
	if n := count(groups); n != 10 {
		t.Errorf("%d items for alice, want the 10 Acme items (under the default limit of 20)", n)
	}

	_, groups, _ = search(alice, "teamId=acme&query=signups")
	if len(groups[0].Items) != 0 || len(groups[2].Items) != 2 || len(groups[3].Items) != 2 {
		t.Errorf("query groups: %+v", groups)
	}
	_, groups, _ = search(alice, "teamId=acme&type=dataset,connection")
	if n := count(groups); n != 4 || len(groups[1].Items)+len(groups[2].Items) != 0 {
		t.Errorf("type filter: %+v", groups)
	}
	_, groups, _ = search(alice, "teamId=acme&limit=2")
	if n := count(groups); n != 2 {
		t.Errorf("limit=2 gave %d items", n)
	}
	_, groups, _ = search(alice, "teamId=acme&limit=0")
	if n := count(groups); n != 10 {
		t.Errorf("limit=0 gave %d items", n)
	}
	// Bob reaches only the Growth project and team-wide items.
	_, groups, _ = search(bob, "teamId=acme&limit=50")
	for _, g := range groups {
		for _, it := range g.Items {
			if it.ProjectID != "" && it.ProjectID != projGrowth {
				t.Errorf("bob sees %s in project %s", it.ID, it.ProjectID)
			}
		}
	}

	for _, tc := range []struct {
		query  string
		status int
		code   askbi.Code
		field  string
	}{
		{"teamId=acme&limit=51", 400, askbi.InvalidArgument, "limit"},
		{"teamId=acme&limit=-1", 400, askbi.InvalidArgument, "limit"},
		{"teamId=acme&limit=ten", 400, askbi.InvalidArgument, "limit"},
		{"teamId=acme&type=user", 400, askbi.InvalidArgument, "type"},
		{"teamId=acme&query=" + strings.Repeat("x", 201), 400, askbi.InvalidArgument, "query"},
		{"", 400, askbi.InvalidArgument, "teamId"},
		{"teamId=globex", 404, askbi.NotFound, "team"},
		{"teamId=nope", 404, askbi.NotFound, "team"},
	} {
		t.Run(tc.query, func(t *testing.T) {
			status, _, b := search(alice, tc.query)
			e := errorOf(t, b)
			if status != tc.status || e.Code != tc.code || !strings.Contains(e.Message, tc.field) {
				t.Errorf("status %d %s, want %d %s naming %s", status, b, tc.status, tc.code, tc.field)
			}
		})
	}
	// Carol searches her own team.
	_, groups, _ = search(ta.session(t, "carol"), "teamId=globex")
	if n := count(groups); n != 4 {
		t.Errorf("carol sees %d items, want 4", n)
	}
}

func TestMemory(t *testing.T) {
	// Memory routes are rate limited like the rest; this test makes more
	// than a burst of requests.
	ta := MustApp(t, func(c *config) {
		c.limiterOverride = access.NewMemoryRateLimiter(&access.RateOptions{Burst: 1000, Rate: 1000})
	}, nil)
	alice, bob := ta.session(t, "alice"), ta.session(t, "bob")
	var list struct{ Items []memory.Item }
	ta.MustDo(t, http.StatusOK, "GET", "/ai/memory", alice, nil, &list)
	if list.Items == nil || len(list.Items) != 0 {
		t.Fatalf("initial list: %+v", list.Items)
	}
	var added struct{ Item memory.Item }
	ta.MustDo(t, http.StatusCreated, "POST", "/ai/memory", alice, map[string]string{"text": "  I report in EUR  "}, &added)
	if added.Item.ID == "" || added.Item.Text != "I report in EUR" {
		t.Fatalf("added: %+v", added.Item)
	}
	var edited struct{ Item memory.Item }
	ta.MustDo(t, http.StatusOK, "PUT", "/ai/memory/"+added.Item.ID, alice, map[string]string{"text": "I report in USD"}, &edited)
	if edited.Item.ID != added.Item.ID || edited.Item.Text != "I report in USD" {
		t.Errorf("edited: %+v", edited.Item)
	}
	// Bob cannot see, edit or delete alice's memory.
	ta.MustDo(t, http.StatusOK, "GET", "/ai/memory", bob, nil, &list)
	if len(list.Items) != 0 {
		t.Errorf("bob sees %d memories", len(list.Items))
	}
	ta.MustDo(t, http.StatusNotFound, "PUT", "/ai/memory/"+added.Item.ID, bob, map[string]string{"text": "mine"}, nil)
	ta.MustDo(t, http.StatusNotFound, "DELETE", "/ai/memory/"+added.Item.ID, bob, nil, nil)

	// /remember through the chat saves without a model call.
	conv := ta.MustConversation(t, alice)
	events := ta.MustTurn(t, "/ai/conversations/"+conv+"/messages", alice, map[string]any{"message": "/remember Fiscal year starts in April"})
	if diff := cmp.Diff([]string{"message.completed", "request.completed"}, types(events)); diff != "" {
		t.Errorf("/remember events mismatch (-want +got):\n%s", diff)
	}
	if events[0].Text != memory.SavedReply {
		t.Errorf("/remember answered %q", events[0].Text)
	}
	ta.MustDo(t, http.StatusOK, "GET", "/ai/memory", alice, nil, &list)
	var texts []string
	for _, it := range list.Items {
		texts = append(texts, it.Text)
	}
	if diff := cmp.Diff([]string{"I report in USD", "Fiscal year starts in April"}, texts); diff != "" {
		t.Errorf("memories mismatch (-want +got):\n%s", diff)
	}

	ta.MustDo(t, http.StatusNoContent, "DELETE", "/ai/memory/"+added.Item.ID, alice, nil, nil)
	ta.MustDo(t, http.StatusNotFound, "DELETE", "/ai/memory/"+added.Item.ID, alice, nil, nil)

	// Fill to the limit of 50; the 51st is too large, by the route and by
	// /remember.
	for i := len(texts) - 1; i < 50; i++ {
		ta.MustDo(t, http.StatusCreated, "POST", "/ai/memory", alice, map[string]string{"text": fmt.Sprintf("note %d", i)}, nil)
	}
	status, _, b := ta.do(t, "POST", "/ai/memory", alice, map[string]string{"text": "one too many"})
	if status != http.StatusRequestEntityTooLarge || errorOf(t, b).Code != askbi.TooLarge {
		t.Errorf("51st memory: %d %s", status, b)
	}
	status, _, b = ta.do(t, "POST", "/ai/conversations/"+conv+"/messages", alice, map[string]any{"message": "/remember one too many"})
	if status != http.StatusRequestEntityTooLarge || errorOf(t, b).Code != askbi.TooLarge {
		t.Errorf("51st memory by /remember: %d %s", status, b)
	}
	for _, tc := range []struct {
		body  string
		field string
	}{
		{`{}`, "text"},
		{`{"text": ""}`, "text"},
		{`{"text": "   "}`, "text"},
		{`{"text": "` + strings.Repeat("x", 501) + `"}`, "text"},
		{`{"text": 5}`, "text"},
		{`{"text": "x", "pinned": true}`, "pinned"},
	} {
		status, _, b := ta.do(t, "PUT", "/ai/memory/"+list.Items[0].ID, alice, tc.body)
		if e := errorOf(t, b); status != http.StatusBadRequest || e.Code != askbi.InvalidArgument || !strings.Contains(e.Message, tc.field) {
			t.Errorf("PUT %s: %d %s, want 400 naming %s", tc.body, status, b, tc.field)
		}
	}

	var deleted struct{ Deleted int }
	ta.MustDo(t, http.StatusOK, "DELETE", "/ai/memory", alice, nil, &deleted)
	if deleted.Deleted != 50 {
		t.Errorf("deleted %d, want 50", deleted.Deleted)
	}
	ta.MustDo(t, http.StatusOK, "GET", "/ai/memory", alice, nil, &list)
	if len(list.Items) != 0 {
		t.Errorf("%d memories left", len(list.Items))
	}

	// Every change is audited on the executor's sink, without its text.
	counts := map[string]int{}
	for _, e := range ta.audit.Entries() {
		if e.Target.Type != typeMemory {
			continue
		}
		counts[e.Action+" "+e.Outcome]++
		if e.Auth != "session" || e.TeamID != "acme" || e.Target.TeamID != e.TeamID {
			t.Errorf("audit entry %+v", e)
		}
		j, _ := json.Marshal(e)
		if bytes.Contains(j, []byte("EUR")) || bytes.Contains(j, []byte("April")) {
			t.Errorf("audit entry holds memory text: %s", j)
		}
	}
	want := map[string]int{
		"memory.add ok": 51, "memory.add too_large": 2, "memory.edit ok": 1, "memory.edit not_found": 1,
		"memory.edit invalid_argument": 2, "memory.delete ok": 1, "memory.delete not_found": 2, "memory.delete_all ok": 1,
	}
	if diff := cmp.Diff(want, counts); diff != "" {
		t.Errorf("memory audit mismatch (-want +got):\n%s", diff)
	}
}

// TestValidation: every payload is checked at the boundary and a failure
// names the field.
func TestValidation(t *testing.T) {
	ta := MustApp(t, nil, nil)
	alice := ta.session(t, "alice")
	conv := ta.MustConversation(t, alice)
	msgs := "/ai/conversations/" + conv + "/messages"
	approve := "/ai/conversations/" + conv + "/approvals/apr_aaaaaaaaaaaaaaaaaaaa/approve"
	ctx11 := make([]map[string]string, 11)
	for i := range ctx11 {
		ctx11[i] = map[string]string{"entity_type": "chart", "id": fmt.Sprintf("c%d", i)}
	}
	big := `{"message": "` + strings.Repeat("x", maxBodyBytes) + `"}`
	for _, tc := range []struct {
		name, method, path string
		body               any
		status             int
		code               askbi.Code
		field              string
	}{
		{"missing message", "POST", msgs, `{}`, 400, askbi.InvalidArgument, "message"},
		{"message wrong type", "POST", msgs, `{"message": 42}`, 400, askbi.InvalidArgument, "message"},
		{"headless wrong type", "POST", msgs, `{"message": "hi", "headless": "yes"}`, 400, askbi.InvalidArgument, "headless"},
		{"unknown field", "POST", msgs, `{"message": "hi", "model": "gpt"}`, 400, askbi.InvalidArgument, "model"},
		{"context not a list", "POST", msgs, `{"message": "hi", "context": {}}`, 400, askbi.InvalidArgument, "context"},
		{"11 context items", "POST", msgs, map[string]any{"message": "hi", "context": ctx11}, 400, askbi.InvalidArgument, "context"},
		{"bad entity type", "POST", msgs, `{"message": "hi", "context": [{"entity_type": "user", "id": "u"}]}`, 400, askbi.InvalidArgument, "context[0].entity_type"},
		{"missing context id", "POST", msgs, `{"message": "hi", "context": [{"entity_type": "chart"}]}`, 400, askbi.InvalidArgument, "context[0].id"},
		{"unknown context field", "POST", msgs, `{"message": "hi", "context": [{"entity_type": "chart", "id": "c", "name": "x"}]}`, 400, askbi.InvalidArgument, "name"},
		{"empty body", "POST", msgs, ``, 400, askbi.InvalidArgument, "body"},
		{"malformed", "POST", msgs, `{"message": `, 400, askbi.InvalidArgument, "body"},
		{"two objects", "POST", msgs, `{"message": "a"} {"message": "b"}`, 400, askbi.InvalidArgument, "body"},
		{"not an object", "POST", msgs, `["hi"]`, 400, askbi.InvalidArgument, "body"},
		{"body too large", "POST", msgs, big, 413, askbi.TooLarge, "body"},
		{"message too long", "POST", msgs, map[string]string{"message": strings.Repeat("x", 4001)}, 413, askbi.TooLarge, "message"},
		{"unknown conversation", "POST", "/ai/conversations/conv_nope/messages", `{"message": "hi"}`, 404, askbi.NotFound, "conversation"},
		{"approve without tool", "POST", approve, `{"arguments": {}}`, 400, askbi.InvalidArgument, "tool"},
		{"approve without arguments", "POST", approve, `{"tool": "delete_dashboard"}`, 400, askbi.InvalidArgument, "arguments"},
		{"approve arguments not an object", "POST", approve, `{"tool": "delete_dashboard", "arguments": "x"}`, 400, askbi.InvalidArgument, "arguments"},
		{"approve malformed id", "POST", "/ai/conversations/" + conv + "/approvals/nope/approve", `{"tool": "t", "arguments": {}}`, 400, askbi.InvalidArgument, "approval_id"},
		{"approve unknown id", "POST", approve, `{"tool": "t", "arguments": {}}`, 409, askbi.ApprovalInvalid, "approval"},
		{"add without dashboard", "POST", "/ai/conversations/" + conv + "/charts/c/add-to-dashboard", `{}`, 400, askbi.InvalidArgument, "dashboard_id"},
		{"create with a field", "POST", "/ai/conversations", `{"title": "x"}`, 400, askbi.InvalidArgument, "title"},
		{"list limit not a number", "GET", "/ai/conversations?limit=many", nil, 400, askbi.InvalidArgument, "limit"},
		{"list limit too big", "GET", "/ai/conversations?limit=101", nil, 400, askbi.InvalidArgument, "limit"},
		{"memory without text", "POST", "/ai/memory", `{"note": "x"}`, 400, askbi.InvalidArgument, "note"},
		{"memory text missing", "POST", "/ai/memory", `{}`, 400, askbi.InvalidArgument, "text"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, accept := range []string{"application/json", "text/event-stream"} {
				status, h, b := ta.do(t, tc.method, tc.path, alice, tc.body, "Accept", accept)
				if ct := h.Get("Content-Type"); ct != "application/json" {
					t.Errorf("Accept %s: Content-Type %q, want a JSON error", accept, ct)
				}
				e := errorOf(t, b)
				if status != tc.status || e.Code != tc.code || !strings.Contains(e.Message, tc.field) {
					t.Errorf("Accept %s: %d %s, want %d %s naming %q", accept, status, b, tc.status, tc.code, tc.field)
				}
			}
		})
	}
}

// slowModel delays every model call, as a slow provider would.
type slowModel struct {
	ask.Provider
	delay time.Duration
}

func (m slowModel) Complete(ctx context.Context, req ask.ModelRequest, onText func(string)) (ask.ModelReply, error) {
	t := time.NewTimer(m.delay)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ask.ModelReply{}, ctx.Err()
	case <-t.C:
	}
	return m.Provider.Complete(ctx, req, onText)
}

// TestTurnOutlivesServerTimeouts: a turn longer than the server's
// ReadTimeout and WriteTimeout is neither cancelled nor cut, as SSE and as
// JSON: without the per-request write deadlines, both answers would be cut
// after WriteTimeout. The stream's window is shortened to 2 × timeout, so
// the stream, 4 × timeout long, lives only because every write moves it.
func TestTurnOutlivesServerTimeouts(t *testing.T) {
	const timeout = 150 * time.Millisecond
	ta := MustApp(t, func(c *config) { c.modelOverride = slowModel{mock.New(), timeout} }, func(s *http.Server) {
		s.ReadTimeout, s.WriteTimeout = timeout, timeout
	})
	ta.streamWindow = 2 * timeout
	alice := ta.session(t, "alice")
	conv := ta.MustConversation(t, alice)
	path := "/ai/conversations/" + conv + "/messages"
	// Four model calls: the turn takes at least 4 × timeout.
	began := time.Now()
	events := ta.MustStream(t, path, alice, map[string]any{"message": "show signups by week"})
	if d := time.Since(began); d < 4*timeout {
		t.Fatalf("the turn took %v; the test needs it longer than %v", d, 4*timeout)
	}
	checkOrder(t, events)
	if diff := cmp.Diff(showSignupsWant, types(events)); diff != "" {
		t.Errorf("SSE event types mismatch (-want +got):\n%s", diff)
	}
	events = ta.MustTurn(t, path, alice, map[string]any{"message": "show signups by week"})
	checkOrder(t, events)
}

// blockingModel blocks until its call's context ends, and reports that.
type blockingModel struct {
	started, cancelled chan struct{}
}

func (m blockingModel) Complete(ctx context.Context, _ ask.ModelRequest, _ func(string)) (ask.ModelReply, error) {
	close(m.started)
	<-ctx.Done()
	close(m.cancelled)
	return ask.ModelReply{}, ctx.Err()
}

// TestDisconnectCancelsTurn: a client that leaves stops the model call.
func TestDisconnectCancelsTurn(t *testing.T) {
	m := blockingModel{started: make(chan struct{}), cancelled: make(chan struct{})}
	ta := MustApp(t, func(c *config) { c.modelOverride = m }, nil)
	alice := ta.session(t, "alice")
	conv := ta.MustConversation(t, alice)

	ctx, cancel := context.WithCancel(t.Context())
	req, _ := http.NewRequestWithContext(ctx, "POST", ta.url+"/ai/conversations/"+conv+"/messages", strings.NewReader(`{"message": "hello"}`))
	req.Header.Set("Authorization", "Bearer "+alice)
	req.Header.Set("Accept", "text/event-stream")
	done := make(chan error, 1)
	go func() {
		resp, err := ta.srv.Client().Do(req)
		if err == nil {
			_, err = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
		}
		done <- err
	}()
	waitFor(t, m.started, "the model call")
	cancel()
	waitFor(t, m.cancelled, "the model call's cancellation")
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Errorf("client: %v", err)
	}
}

func waitFor(t *testing.T, c <-chan struct{}, what string) {
	t.Helper()
	select {
	case <-c:
	case <-time.After(30 * time.Second):
		t.Fatalf("timed out waiting for %s", what)
	}
}

func TestErrorStatuses(t *testing.T) {
	want := map[askbi.Code]int{
		askbi.InvalidArgument: 400, askbi.Unauthenticated: 401, askbi.Forbidden: 403, askbi.ScopeRequired: 403,
		askbi.NotFound: 404, askbi.Conflict: 409, askbi.RateLimited: 429, askbi.TooLarge: 413, askbi.Timeout: 504,
		askbi.Unavailable: 503, askbi.Unsupported: 501, askbi.InvalidResult: 422, askbi.ApprovalRequired: 409,
		askbi.ApprovalInvalid: 409, askbi.Internal: 500,
	}
	if diff := cmp.Diff(want, httpStatus); diff != "" {
		t.Errorf("status table mismatch (-want +got):\n%s", diff)
	}
	for _, c := range askbi.Codes {
		if _, ok := httpStatus[c]; !ok {
			t.Errorf("code %s has no status", c)
		}
	}

	// A foreign error is internal: logged with detail, shown without.
	var logs bytes.Buffer
	a := &app{log: slog.New(slog.NewTextHandler(&logs, nil))}
	rec := httptest.NewRecorder()
	a.writeError(rec, httptest.NewRequest("GET", "/ai/memory", nil), fmt.Errorf("pq: password authentication failed for user secret_user"))
	if rec.Code != 500 || strings.Contains(rec.Body.String(), "secret_user") || errorOf(t, rec.Body.Bytes()).Code != askbi.Internal {
		t.Errorf("internal error answer: %d %s", rec.Code, rec.Body)
	}
	if !strings.Contains(logs.String(), "secret_user") {
		t.Errorf("the detail was not logged: %s", logs.String())
	}
}

func TestMemoryKey(t *testing.T) {
	t.Run("development key persists", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "sub", "memory-key")
		k1, err := devMemoryKey(path)
		if err != nil {
			t.Fatal(err)
		}
		k2, err := devMemoryKey(path)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(k1, k2) || len(k1) != memory.KeySize {
			t.Error("the development key changed between runs")
		}
		if fi, err := os.Stat(path); err != nil || fi.Mode().Perm() != 0o600 {
			t.Errorf("key file: %v %v", fi.Mode(), err)
		}
	})
	t.Run("ASKBI_MEMORY_KEY", func(t *testing.T) {
		key := memory.GenerateKey()
		t.Setenv(memoryKeyEnv, base64.StdEncoding.EncodeToString(key))
		a := &app{log: slog.New(slog.NewTextHandler(io.Discard, nil))}
		ring, err := a.memoryKeyring(config{dataDir: t.TempDir()}, false)
		if err != nil {
			t.Fatal(err)
		}
		if _, got := ring.Current(); !bytes.Equal(got, key) {
			t.Error("the keyring does not use ASKBI_MEMORY_KEY")
		}
	})
	t.Run("bad ASKBI_MEMORY_KEY", func(t *testing.T) {
		t.Setenv(memoryKeyEnv, "not-a-key-c2VjcmV0")
		a := &app{log: slog.New(slog.NewTextHandler(io.Discard, nil))}
		_, err := a.memoryKeyring(config{dataDir: t.TempDir()}, false)
		if err == nil || strings.Contains(err.Error(), "c2VjcmV0") {
			t.Errorf("err = %v; want an error that does not echo the key", err)
		}
	})
}

func TestFlags(t *testing.T) {
	for _, tc := range []struct {
		name string
		edit func(*config)
		want string
	}{
		{"sharing", func(c *config) { c.sharing = "everything" }, "-sharing"},
		{"memory policy", func(c *config) { c.memoryPolicy = "maybe" }, "-memory-policy"},
		{"provider", func(c *config) { c.provider = "gemini"; c.model = "x" }, "-provider"},
		{"assistant roles", func(c *config) { c.assistantRoles = "owner,guest" }, "-assistant-roles"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := config{inMemory: true, provider: "mock", sharing: "aggregates", memoryPolicy: "allow", dataDir: t.TempDir()}
			tc.edit(&cfg)
			_, err := newApp(t.Context(), cfg, "http://127.0.0.1:1", slog.New(slog.NewTextHandler(io.Discard, nil)))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("err = %v, want one naming %s", err, tc.want)
			}
		})
	}
	t.Run("openai", func(t *testing.T) {
		t.Setenv("ASKBI_TEST_KEY", "sk-test-secret")
		cfg := config{inMemory: true, provider: "openai", model: "local", providerBaseURL: "http://127.0.0.1:9/v1",
			providerKeyEnv: "ASKBI_TEST_KEY", sharing: "rows", memoryPolicy: "deny", dataDir: t.TempDir()}
		a, err := newApp(t.Context(), cfg, "http://127.0.0.1:1", slog.New(slog.NewTextHandler(io.Discard, nil)))
		if err != nil {
			t.Fatal(err)
		}
		defer a.close()
		if strings.Contains(a.model, "sk-test-secret") || !strings.Contains(a.model, "ASKBI_TEST_KEY") {
			t.Errorf("model description %q", a.model)
		}
	})
}

// TestWebPage: the demo page is served with a strict CSP.
func TestWebPage(t *testing.T) {
	ta := MustApp(t, nil, nil)
	for _, path := range []string{"/", "/web/app.js"} {
		status, h, b := ta.do(t, "GET", path, "", nil)
		if status != 200 || len(b) == 0 || !strings.Contains(h.Get("Content-Security-Policy"), "default-src 'self'") {
			t.Errorf("GET %s: %d, CSP %q", path, status, h.Get("Content-Security-Policy"))
		}
	}
}

// TestPostgres runs the chat and memory API on PostgreSQL state, and
// checks that it survives a restart.
func TestPostgres(t *testing.T) {
	dbURL := pgtest.MustDatabase(t)
	dataDir := t.TempDir()
	edit := func(c *config) { c.inMemory, c.databaseURL, c.dataDir = false, dbURL, dataDir }
	ta := MustApp(t, edit, nil)
	if !strings.HasPrefix(ta.storage, "PostgreSQL") || ta.creds.WarehouseDatabaseURL == "" {
		t.Fatalf("storage %q, warehouse %q", ta.storage, ta.creds.WarehouseDatabaseURL)
	}
	alice := ta.session(t, "alice")
	conv := ta.MustConversation(t, alice)
	path := "/ai/conversations/" + conv + "/messages"

	events := ta.MustStream(t, path, alice, map[string]any{"message": "show signups by week"})
	checkOrder(t, events)
	if diff := cmp.Diff(showSignupsWant, types(events)); diff != "" {
		t.Errorf("event types mismatch (-want +got):\n%s\nevents: %+v", diff, events)
	}
	e := startDelete(t, ta, alice, conv)
	ta.MustTurn(t, "/ai/conversations/"+conv+"/approvals/"+e.Tool.ApprovalID+"/approve", alice,
		map[string]any{"tool": "delete_dashboard", "arguments": e.Tool.Arguments})
	if got := dashboards(t, ta, alice, "acme"); slices.Contains(got, "Revenue") {
		t.Errorf("the Revenue dashboard is still there: %v", got)
	}
	var added struct{ Item memory.Item }
	ta.MustDo(t, http.StatusCreated, "POST", "/ai/memory", alice, map[string]string{"text": "I report in EUR"}, &added)
	ta.MustTurn(t, path, alice, map[string]any{"message": "/remember Fiscal year starts in April"})
	ta.srv.Close()
	ta.close()

	// A restart on the same database and data folder keeps conversations
	// and memories (sealed under the development key kept there).
	tb := MustApp(t, edit, nil)
	alice = tb.session(t, "alice")
	var view ask.View
	tb.MustDo(t, http.StatusOK, "GET", "/ai/conversations/"+conv, alice, nil, &view)
	var labels []string
	for _, r := range view.WorkSummary {
		labels = append(labels, r.Label+" "+string(r.State))
	}
	want := []string{"Searched the workspace completed", "Previewed data completed", "Created chart preview completed",
		"Searched the workspace completed", "Deleted dashboard completed"}
	if diff := cmp.Diff(want, labels); diff != "" {
		t.Errorf("work summary after restart mismatch (-want +got):\n%s", diff)
	}
	var list struct{ Items []memory.Item }
	tb.MustDo(t, http.StatusOK, "GET", "/ai/memory", alice, nil, &list)
	var texts []string
	for _, it := range list.Items {
		texts = append(texts, it.Text)
	}
	if diff := cmp.Diff([]string{"I report in EUR", "Fiscal year starts in April"}, texts); diff != "" {
		t.Errorf("memories after restart mismatch (-want +got):\n%s", diff)
	}
	// The previous run's session tokens no longer work.
	if status, _, _ := tb.do(t, "GET", "/ai/memory", ta.session(t, "alice"), nil); status != http.StatusUnauthorized {
		t.Errorf("old session token: status %d, want 401", status)
	}
}

// TestWarehouseRole: the SQL source's role reads the demo warehouse and
// none of askbi's own tables, which share the database with -database-url.
func TestWarehouseRole(t *testing.T) {
	dbURL := pgtest.MustDatabase(t)
	ta := MustApp(t, func(c *config) { c.inMemory, c.databaseURL, c.dataDir = false, dbURL, t.TempDir() }, nil)
	db, err := sqlx.Open("postgres", ta.readerURL)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var n int
	if err := db.GetContext(t.Context(), &n, "SELECT count(*) FROM signups"); err != nil || n == 0 {
		t.Errorf("reader on the warehouse: %d rows, %v", n, err)
	}
	for _, table := range []string{"api_keys", "memories", "conversations", "approvals", "public.api_keys"} {
		if err := db.GetContext(t.Context(), &n, "SELECT count(*) FROM "+table); err == nil {
			t.Errorf("the reader can read %s", table)
		}
	}
}
