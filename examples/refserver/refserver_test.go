package main

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
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

	"github.com/askbi/askbi/internal/chattest"

	"github.com/google/go-cmp/cmp"
	"github.com/jmoiron/sqlx"

	"github.com/askbi/askbi"
	"github.com/askbi/askbi/access"
	"github.com/askbi/askbi/ask"
	"github.com/askbi/askbi/internal/pgtest"
	"github.com/askbi/askbi/memory"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

// testApp is the app served over real HTTP.
type testApp struct {
	*app
	chattest.Client
	url string
	srv *httptest.Server
}

// MustApp starts the app in memory (or as edit changes cfg) behind an
// HTTP server with the production timeouts.
func MustApp(tb testing.TB, edit func(*config)) *testApp {
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
	ts.Start()
	tb.Cleanup(func() {
		ts.Close()
		a.close()
	})
	return &testApp{app: a, Client: chattest.Client{URL: base, HTTP: ts.Client()}, url: base, srv: ts}
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

func TestCredentialsFile(t *testing.T) {
	ta := MustApp(t, nil)
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

// TestAuthentication: the chat routes are mounted behind the server's
// sessions, so they need a session token and refuse API keys, and the MCP
// endpoint refuses session tokens.
func TestAuthentication(t *testing.T) {
	ta := MustApp(t, nil)
	routes := []struct{ method, path string }{
		{"GET", "/ai/status"},
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
				status, h, b := ta.Do(t, r.method, r.path, tok, `{"message":"hi"}`)
				if status != http.StatusUnauthorized {
					t.Fatalf("status %d, want 401; body %s", status, b)
				}
				if e := chattest.MustError(t, b); e.Code != askbi.Unauthenticated {
					t.Errorf("code %q, want unauthenticated", e.Code)
				}
				if !strings.HasPrefix(h.Get("WWW-Authenticate"), "Bearer") {
					t.Errorf("WWW-Authenticate %q", h.Get("WWW-Authenticate"))
				}
			})
		}
	}

	mcp := func(token string) int {
		status, _, _ := ta.Do(t, "POST", "/mcp", token, `{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{}}`,
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

// startDelete asks to delete the Revenue dashboard and returns the
// approval event.
func startDelete(t *testing.T, ta *testApp, token, conv string) ask.Event {
	t.Helper()
	events := ta.MustTurn(t, "/ai/conversations/"+conv+"/messages", token, map[string]any{"message": "delete the Revenue dashboard"})
	want := []string{"tool.running", "tool.completed", "tool.approval_required", "request.completed"}
	if diff := cmp.Diff(want, chattest.Types(events)); diff != "" {
		t.Fatalf("event types mismatch (-want +got):\n%s", diff)
	}
	e := chattest.MustToolEvent(t, events, ask.EventToolApprovalRequired, "delete_dashboard")
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
	var doc struct{ Groups []ask.ContextGroup }
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

// TestMemoryAudit: memory changes are recorded on the executor's audit
// sink, as session actions on a memory of the member's team, without
// their text.
func TestMemoryAudit(t *testing.T) {
	ta := MustApp(t, nil)
	alice, bob := ta.session(t, "alice"), ta.session(t, "bob")
	var added struct{ Item memory.Item }
	ta.MustDo(t, http.StatusCreated, "POST", "/ai/memory", alice, map[string]string{"text": "I report in EUR"}, &added)
	ta.MustDo(t, http.StatusNotFound, "PUT", "/ai/memory/"+added.Item.ID, bob, map[string]string{"text": "Fiscal year starts in April"}, nil)
	var got []access.AuditEntry
	for _, e := range ta.audit.Entries() {
		if e.Target.Type != access.TypeMemory {
			continue
		}
		j, _ := json.Marshal(e)
		if bytes.Contains(j, []byte("EUR")) || bytes.Contains(j, []byte("April")) {
			t.Errorf("audit entry holds memory text: %s", j)
		}
		if e.Time.IsZero() {
			t.Errorf("audit entry without a time: %+v", e)
		}
		e.Time, e.Duration = time.Time{}, 0 // durations are real now
		got = append(got, e)
	}
	want := []access.AuditEntry{
		{Action: memory.ActionAdd, UserID: "alice", TeamID: "acme", Auth: access.AuthSession,
			Target: access.Entity{Type: access.TypeMemory, ID: added.Item.ID, TeamID: "acme"}, Outcome: access.OutcomeOK},
		{Action: memory.ActionEdit, UserID: "bob", TeamID: "acme", Auth: access.AuthSession,
			Target: access.Entity{Type: access.TypeMemory, ID: added.Item.ID, TeamID: "acme"}, Outcome: string(askbi.NotFound)},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("memory audit mismatch (-want +got):\n%s", diff)
	}
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
	ta := MustApp(t, nil)
	for _, path := range []string{"/", "/web/app.js"} {
		status, h, b := ta.Do(t, "GET", path, "", nil)
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
	ta := MustApp(t, edit)
	if !strings.HasPrefix(ta.storage, "PostgreSQL") || ta.creds.WarehouseDatabaseURL == "" {
		t.Fatalf("storage %q, warehouse %q", ta.storage, ta.creds.WarehouseDatabaseURL)
	}
	alice := ta.session(t, "alice")
	conv := ta.MustConversation(t, alice)
	path := "/ai/conversations/" + conv + "/messages"

	events := ta.MustStream(t, path, alice, map[string]any{"message": "show signups by week"})
	chattest.CheckOrder(t, events)
	if diff := cmp.Diff(chattest.ShowSignupsWant, chattest.Types(events)); diff != "" {
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
	tb := MustApp(t, edit)
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
	if status, _, _ := tb.Do(t, "GET", "/ai/memory", ta.session(t, "alice"), nil); status != http.StatusUnauthorized {
		t.Errorf("old session token: status %d, want 401", status)
	}
}

// TestWarehouseRole: the SQL source's role reads the demo warehouse and
// none of askbi's own tables, which share the database with -database-url.
func TestWarehouseRole(t *testing.T) {
	dbURL := pgtest.MustDatabase(t)
	ta := MustApp(t, func(c *config) { c.inMemory, c.databaseURL, c.dataDir = false, dbURL, t.TempDir() })
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
