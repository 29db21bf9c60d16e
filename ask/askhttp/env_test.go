package askhttp_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/askbi/askbi"
	"github.com/askbi/askbi/access"
	"github.com/askbi/askbi/ask"
	"github.com/askbi/askbi/ask/askhttp"
	"github.com/askbi/askbi/ask/provider/mock"
	"github.com/askbi/askbi/dataexec"
	"github.com/askbi/askbi/internal/httpjson"
	"github.com/askbi/askbi/memory"
)

// The workspace of the tests, with the reference server's demo IDs and
// names: team acme (projects growth and finance: alice owner, bob editor
// on growth only, vic viewer) and team globex (project ops: carol owner).
var users = map[string]access.Principal{
	"alice": {UserID: "alice", TeamID: "acme", Auth: access.AuthSession},
	"bob":   {UserID: "bob", TeamID: "acme", Auth: access.AuthSession},
	"vic":   {UserID: "vic", TeamID: "acme", Auth: access.AuthSession},
	"carol": {UserID: "carol", TeamID: "globex", Auth: access.AuthSession},
}

// token is the bearer token of the named user; authenticate knows only
// those of users.
func token(name string) string { return "test-session-" + name }

// authenticate is the host's product login of the tests: a bearer token of
// one of users, anything else Unauthenticated.
func authenticate(r *http.Request) (access.Principal, error) {
	bad := askbi.Errorf(askbi.Unauthenticated, "sign in: send Authorization: Bearer <token>")
	scheme, tok, ok := strings.Cut(r.Header.Get("Authorization"), " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return access.Principal{}, bad
	}
	name, ok := strings.CutPrefix(strings.TrimSpace(tok), "test-session-")
	p, known := users[name]
	if !ok || !known {
		return access.Principal{}, bad
	}
	return p, nil
}

const (
	sqlWeeklySignups = "SELECT week, signups FROM weekly_signups"
	sqlByCountry     = "SELECT country, signups FROM signups_by_country"
	sqlMRR           = "SELECT month, mrr FROM mrr"
	sqlTickets       = "SELECT day, opened, closed FROM tickets"
)

// seed fills the directory and the catalog, and returns the warehouse
// tables the datasets' SQL reads.
func seed(dir *access.MemoryDirectory, cat *dataexec.MemoryCatalog, now time.Time) map[string]*dataexec.Table {
	for _, p := range [][2]string{{"acme", "growth"}, {"acme", "finance"}, {"globex", "ops"}} {
		dir.AddProject(p[0], p[1])
	}
	dir.SetMember("acme", "alice", access.RoleOwner, access.AllProjects())
	dir.SetMember("acme", "bob", access.RoleEditor, access.ProjectSet("growth"))
	dir.SetMember("acme", "vic", access.RoleViewer, access.AllProjects())
	dir.SetMember("globex", "carol", access.RoleOwner, access.AllProjects())

	at := now.Add(-24 * time.Hour).UTC()
	// The most recently changed items, so that the picker's Recent group
	// has a known order.
	changed := map[string]time.Duration{"chart_weekly_signups": 2 * time.Hour, "chart_mrr": 3 * time.Hour,
		"dash_growth": 4 * time.Hour, "ds_tickets": 5 * time.Hour, "chart_signups_country": 20 * time.Hour}
	updated := func(id string) time.Time {
		if ago, ok := changed[id]; ok {
			return now.Add(-ago).UTC()
		}
		return at
	}
	cat.PutConnection(dataexec.Connection{ID: "conn_acme_wh", TeamID: "acme", Name: "Acme warehouse", Type: "postgres", Active: true, CreatedAt: at, UpdatedAt: at})
	cat.PutConnection(dataexec.Connection{ID: "conn_globex_wh", TeamID: "globex", Name: "Globex warehouse", Type: "postgres", Active: true, CreatedAt: at, UpdatedAt: at})
	for _, d := range [][4]string{
		{"dash_growth", "acme", "growth", "Growth overview"}, {"dash_finance", "acme", "finance", "Finance"},
		{"dash_revenue", "acme", "finance", "Revenue"}, {"dash_support", "globex", "ops", "Support"},
	} {
		cat.PutDashboard(dataexec.Dashboard{ID: d[0], TeamID: d[1], ProjectID: d[2], Name: d[3], CreatedAt: at, UpdatedAt: updated(d[0])})
	}
	for _, d := range [][6]string{
		{"ds_weekly_signups", "acme", "growth", "conn_acme_wh", "Weekly signups", sqlWeeklySignups},
		{"ds_signups_country", "acme", "growth", "conn_acme_wh", "Signups by country", sqlByCountry},
		{"ds_mrr", "acme", "finance", "conn_acme_wh", "MRR", sqlMRR},
		{"ds_tickets", "globex", "ops", "conn_globex_wh", "Tickets by day", sqlTickets},
	} {
		cat.PutDataset(dataexec.Dataset{ID: d[0], TeamID: d[1], ProjectID: d[2], Name: d[4], Version: 1,
			Request: dataexec.Request{ConnectionID: d[3], SQL: d[5]}, CreatedAt: at, UpdatedAt: updated(d[0])})
	}
	chart := func(id, team, project, dash, name string, typ dataexec.ChartType, ds, x string, y ...string) {
		cat.PutChart(dataexec.Chart{ID: id, TeamID: team, ProjectID: project, DashboardID: dash, Name: name, Type: typ,
			DatasetID: ds, XField: x, YFields: y, CreatedAt: at, UpdatedAt: updated(id)})
	}
	chart("chart_weekly_signups", "acme", "growth", "dash_growth", "Weekly signups", dataexec.ChartLine, "ds_weekly_signups", "week", "signups")
	chart("chart_signups_country", "acme", "growth", "dash_growth", "Signups by country", dataexec.ChartBar, "ds_signups_country", "country", "signups")
	chart("chart_mrr", "acme", "finance", "dash_finance", "MRR", dataexec.ChartLine, "ds_mrr", "month", "mrr")
	chart("chart_tickets", "globex", "ops", "dash_support", "Tickets by day", dataexec.ChartBar, "ds_tickets", "day", "opened", "closed")

	week := &dataexec.Table{Columns: []string{"week", "signups"}}
	for i, d := 0, time.Date(2026, 9, 7, 0, 0, 0, 0, time.UTC); i < 12; i, d = i+1, d.AddDate(0, 0, 7) {
		week.Rows = append(week.Rows, []any{d.Format("2006-01-02"), int64(1180 + 37*i)})
	}
	mrr := &dataexec.Table{Columns: []string{"month", "mrr"}}
	for m := 1; m <= 11; m++ {
		mrr.Rows = append(mrr.Rows, []any{fmt.Sprintf("2026-%02d", m), json.Number(fmt.Sprintf("%d.00", 42000+1850*m))})
	}
	return map[string]*dataexec.Table{
		sqlWeeklySignups: week,
		sqlByCountry:     {Columns: []string{"country", "signups"}, Rows: [][]any{{"US", int64(3410)}, {"DE", int64(3322)}, {"BR", int64(3305)}}},
		sqlMRR:           mrr,
		sqlTickets:       {Columns: []string{"day", "opened", "closed"}, Rows: [][]any{{"2026-11-01", int64(31), int64(29)}}},
	}
}

// config is what a test may change about the server.
type config struct {
	// provider is the model; nil makes an unavailable assistant. Default
	// the mock.
	provider ask.Provider
	// limiter is the rate limiter. Default access's.
	limiter access.RateLimiter
	// withdraw takes rights from roles (access.CheckerOptions.Withdraw).
	withdraw map[access.Right][]access.Role
	// opts are the handler's options.
	opts askhttp.Options
	// server, when set, changes the HTTP server before it starts.
	server func(*http.Server)
}

// testServer is askhttp over the workspace, behind a real HTTP server.
type testServer struct {
	url    string
	client *http.Client
	model  ask.Provider
	audit  *dataexec.MemoryAudit // the executor's sink
	memlog *memoryLog            // the memory service's audit events
}

// memoryLog records memory.AuditEvents.
type memoryLog struct {
	mu     sync.Mutex
	events []memory.AuditEvent
}

func (l *memoryLog) Events() []memory.AuditEvent {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]memory.AuditEvent(nil), l.events...)
}

// MustServer builds the workspace with the SDK, serves askhttp.New over it
// at /ai/, and stops it when the test ends. edit, when set, changes the
// configuration first.
func MustServer(tb testing.TB, edit func(*config)) *testServer {
	tb.Helper()
	cfg := config{provider: mock.New()}
	if edit != nil {
		edit(&cfg)
	}
	log := slog.New(slog.NewTextHandler(tb.Output(), &slog.HandlerOptions{Level: slog.LevelError}))
	dir, cat := access.NewMemoryDirectory(), dataexec.NewMemoryCatalog()
	src := dataexec.NewTableSource(seed(dir, cat, time.Now()))
	ts := &testServer{model: cfg.provider, audit: dataexec.NewMemoryAudit(10000), memlog: &memoryLog{}}
	gate := access.NewGate(access.NewChecker(dir, &access.CheckerOptions{Withdraw: cfg.withdraw}), cfg.limiter)
	exec := dataexec.NewExecutor(cat, dataexec.SourceMap{"conn_acme_wh": src, "conn_globex_wh": src},
		&dataexec.Options{Audit: ts.audit, Logger: log})
	key := memory.GenerateKey()
	keyring, err := memory.NewStaticKeyring("k1", map[string][]byte{"k1": key})
	if err != nil {
		tb.Fatal(err)
	}
	memories := memory.NewService(memory.NewMemoryStore(), keyring, gate, &memory.Options{Policy: memory.StaticPolicy(true),
		Audit: func(_ context.Context, e memory.AuditEvent) {
			ts.memlog.mu.Lock()
			ts.memlog.events = append(ts.memlog.events, e)
			ts.memlog.mu.Unlock()
		}})
	tools, err := ask.NewRegistry(ask.ProductTools(exec)...)
	if err != nil {
		tb.Fatal(err)
	}
	assistant := ask.New(cfg.provider, gate, exec, ask.NewMemoryConversationStore(), ask.NewMemoryApprovalStore(), tools,
		&ask.Options{Memory: memories, Logger: log})
	opts := cfg.opts
	opts.Logger = log
	mux := http.NewServeMux()
	mux.Handle("/ai/", askhttp.New(assistant, memories, authenticate, &opts))
	srv := httptest.NewUnstartedServer(mux)
	if cfg.server != nil {
		cfg.server(srv.Config)
	}
	srv.Start()
	tb.Cleanup(srv.Close)
	ts.url, ts.client = srv.URL, srv.Client()
	return ts
}

// do sends a request with token as its bearer credential (none when
// empty); body is sent as is when it is a string, else as JSON; header
// holds name, value pairs. It returns the status, the headers and the
// body.
func (ts *testServer) do(tb testing.TB, method, path, token string, body any, header ...string) (int, http.Header, []byte) {
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
	req, err := http.NewRequestWithContext(tb.Context(), method, ts.url+path, r)
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
	resp, err := ts.client.Do(req)
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
func (ts *testServer) MustDo(tb testing.TB, want int, method, path, token string, body, out any) {
	tb.Helper()
	status, _, b := ts.do(tb, method, path, token, body)
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
func (ts *testServer) MustConversation(tb testing.TB, token string) string {
	tb.Helper()
	var out struct{ Conversation ask.Conversation }
	ts.MustDo(tb, http.StatusCreated, "POST", "/ai/conversations", token, nil, &out)
	if out.Conversation.ID == "" {
		tb.Fatal("no conversation ID")
	}
	return out.Conversation.ID
}

// MustTurn posts a turn as JSON and returns its events.
func (ts *testServer) MustTurn(tb testing.TB, path, token string, body any) []ask.Event {
	tb.Helper()
	var out struct{ Events []ask.Event }
	ts.MustDo(tb, http.StatusOK, "POST", path, token, body, &out)
	return out.Events
}

// MustStream posts a turn as SSE and returns its events, parsed from the
// frames, checking each frame's event and id lines against its data.
func (ts *testServer) MustStream(tb testing.TB, path, token string, body any) []ask.Event {
	tb.Helper()
	status, h, b := ts.do(tb, "POST", path, token, body, "Accept", "text/event-stream")
	if status != http.StatusOK || h.Get("Content-Type") != "text/event-stream" {
		tb.Fatalf("POST %s: status %d, Content-Type %q; body %s", path, status, h.Get("Content-Type"), b)
	}
	return MustParseSSE(tb, b)
}

// MustParseSSE parses an event stream's frames into events.
func MustParseSSE(tb testing.TB, b []byte) []ask.Event {
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

// MustToolEvent returns the first event of type typ for tool name.
func MustToolEvent(tb testing.TB, events []ask.Event, typ ask.EventType, name string) ask.Event {
	tb.Helper()
	for _, e := range events {
		if e.Type == typ && e.Tool != nil && e.Tool.Name == name {
			return e
		}
	}
	tb.Fatalf("no %s event for %s in %v", typ, name, types(events))
	return ask.Event{}
}

// MustError decodes an error answer.
func MustError(tb testing.TB, b []byte) httpjson.ErrorBody {
	tb.Helper()
	var doc httpjson.ErrorDoc
	if err := json.Unmarshal(b, &doc); err != nil || doc.Error.Code == "" {
		tb.Fatalf("not an error answer: %s", b)
	}
	return doc.Error
}

// checkOrder checks that events are numbered from 1 and end the turn.
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
	"tool.running", "tool.completed", // run_dataset
	"tool.running", "tool.completed", // create_chart_preview
	"message.delta", "message.completed", "request.completed",
}

// MustStartDelete asks to delete the Revenue dashboard and returns the
// approval event.
func (ts *testServer) MustStartDelete(tb testing.TB, token, conv string) ask.Event {
	tb.Helper()
	events := ts.MustTurn(tb, "/ai/conversations/"+conv+"/messages", token, map[string]any{"message": "delete the Revenue dashboard"})
	want := []string{"tool.running", "tool.completed", "tool.approval_required", "request.completed"}
	if diff := cmp.Diff(want, types(events)); diff != "" {
		tb.Fatalf("event types mismatch (-want +got):\n%s", diff)
	}
	e := MustToolEvent(tb, events, ask.EventToolApprovalRequired, "delete_dashboard")
	if e.Tool.ApprovalID == "" || string(e.Tool.Arguments) != `{"dashboard_id":"dash_revenue"}` {
		tb.Fatalf("approval event: %+v", e.Tool)
	}
	if last := events[len(events)-1]; last.State != ask.TurnAwaitingApproval {
		tb.Errorf("turn state %q, want awaiting_approval", last.State)
	}
	return e
}

// MustDashboards returns the sorted names of the dashboards the context
// search finds for token in team.
func (ts *testServer) MustDashboards(tb testing.TB, token, team string) []string {
	tb.Helper()
	var doc struct{ Groups []ask.ContextGroup }
	ts.MustDo(tb, http.StatusOK, "GET", "/ai/context?teamId="+team+"&type=dashboard&limit=50", token, nil, &doc)
	var names []string
	for _, g := range doc.Groups {
		for _, it := range g.Items {
			names = append(names, it.Name)
		}
	}
	slices.Sort(names)
	return names
}

// auditCount counts the executor's audit entries of action with outcome.
func (ts *testServer) auditCount(action, outcome string) int {
	n := 0
	for _, e := range ts.audit.Entries() {
		if e.Action == action && e.Outcome == outcome {
			n++
		}
	}
	return n
}
