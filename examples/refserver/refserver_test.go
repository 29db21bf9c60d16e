package main

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/askbi/askbi/internal/chattest"
	"github.com/askbi/askbi/internal/mysqltest"

	"github.com/google/go-cmp/cmp"
	"github.com/jmoiron/sqlx"

	"github.com/askbi/askbi"
	"github.com/askbi/askbi/access"
	"github.com/askbi/askbi/ask"
	"github.com/askbi/askbi/chartview"
	"github.com/askbi/askbi/httpserve"
	"github.com/askbi/askbi/internal/pgtest"
	"github.com/askbi/askbi/memory"
)

func TestMain(m *testing.M) { pgtest.Main(mysqltest.Wrap(m)) }

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
	cfg := config{inMemory: true, provider: "mock", sharing: "aggregates", memoryPolicy: "allow", dataDir: tb.TempDir(), demoSignIn: true}
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
	ts.Config = httpserve.NewServer(a.routes(), nil)
	ts.Start()
	tb.Cleanup(func() {
		ts.Close()
		a.close()
	})
	return &testApp{app: a, Client: chattest.Client{URL: base, HTTP: ts.Client()}, url: base, srv: ts}
}

// MustPrincipal returns the entry of the named demo principal in creds.
func MustPrincipal(tb testing.TB, creds credentials, name string) credentialEntry {
	tb.Helper()
	e, ok := creds.principal(name)
	if !ok {
		tb.Fatalf("no demo principal %q", name)
	}
	return e
}

// session returns the session token of the named demo principal.
func (ta *testApp) session(tb testing.TB, name string) string {
	tb.Helper()
	return MustPrincipal(tb, ta.creds, name).SessionToken
}

func (ta *testApp) apiKey(tb testing.TB, name string) string {
	tb.Helper()
	return MustPrincipal(tb, ta.creds, name).APIKey
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
	t.Run("processes starting at once agree on one key", func(t *testing.T) {
		// Several instances start on one data folder: none may read the
		// file half-written (TestInstancesShareDemo once saw "got 0
		// bytes"), and all get the key that won.
		path := filepath.Join(t.TempDir(), "memory-key")
		keys := make([][]byte, 16)
		errs := make([]error, len(keys))
		var wg sync.WaitGroup
		for i := range keys {
			wg.Go(func() { keys[i], errs[i] = devMemoryKey(path) })
		}
		wg.Wait()
		for i := range keys {
			if errs[i] != nil || !bytes.Equal(keys[i], keys[0]) {
				t.Fatalf("start %d: key %x, err %v; want the one key %x", i, keys[i], errs[i], keys[0])
			}
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
		{"mysql url", func(c *config) { c.mysqlURL = "mysql://nobody:secret@127.0.0.1:1/none?timeout=2s" }, "-mysql-url"},
		{"mysql url without a database", func(c *config) { c.mysqlURL = "mysql://nobody@127.0.0.1:1/" }, "-mysql-url: the URL names no database"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := config{inMemory: true, provider: "mock", sharing: "aggregates", memoryPolicy: "allow", dataDir: t.TempDir()}
			tc.edit(&cfg)
			_, err := newApp(t.Context(), cfg, "http://127.0.0.1:1", slog.New(slog.NewTextHandler(io.Discard, nil)))
			if err == nil || !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), "secret") {
				t.Errorf("err = %v, want one naming %s (and no password)", err, tc.want)
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

// TestWebPage: every file of the page is served with the strict CSP and
// its own content type; the page holds the controls the browser tests
// drive (labelled, with the live status region), loads nothing inline and
// only modules that exist; missing files, folders and unknown routes
// answer JSON errors.
func TestWebPage(t *testing.T) {
	ta := MustApp(t, nil)
	check := func(path string, b []byte, status int, h http.Header) {
		t.Helper()
		if status != http.StatusOK || len(b) == 0 {
			t.Errorf("GET %s: status %d, %d bytes", path, status, len(b))
		}
		if got := h.Get("Content-Security-Policy"); got != webCSP {
			t.Errorf("GET %s: CSP %q, want %q", path, got, webCSP)
		}
		if h.Get("X-Content-Type-Options") != "nosniff" {
			t.Errorf("GET %s: no nosniff", path)
		}
	}
	served := map[string][]byte{}
	err := fs.WalkDir(webFiles, "web", func(name string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		path := "/" + name
		status, h, b := ta.Do(t, "GET", path, "", nil)
		check(path, b, status, h)
		want := map[string]string{".js": "text/javascript", ".css": "text/css", ".html": "text/html", ".png": "image/png", ".svg": "image/svg+xml"}[filepath.Ext(name)]
		if !strings.HasPrefix(h.Get("Content-Type"), want) {
			t.Errorf("GET %s: Content-Type %q, want %s", path, h.Get("Content-Type"), want)
		}
		served[path] = b
		return nil
	})
	// The chart component is package chartview's, served beside them.
	for path, want := range map[string][]byte{"/web/js/chart-svg.js": chartview.JS, "/web/chart.css": chartview.CSS} {
		status, h, b := ta.Do(t, "GET", path, "", nil)
		check(path, b, status, h)
		if !bytes.Equal(b, want) {
			t.Errorf("GET %s is not chartview's file", path)
		}
		served[path] = b
	}
	if err != nil {
		t.Fatal(err)
	}
	status, h, index := ta.Do(t, "GET", "/", "", nil)
	check("/", index, status, h)
	// A browser asks for /favicon.ico on every page load unless a page
	// links its icon: both are the one icon, never a 404.
	status, h, icon := ta.Do(t, "GET", "/favicon.ico", "", nil)
	check("/favicon.ico", icon, status, h)
	if !strings.HasPrefix(h.Get("Content-Type"), "image/") || !bytes.Equal(icon, served["/web/favicon.svg"]) {
		t.Errorf("GET /favicon.ico: Content-Type %q, %d bytes; want the page's icon", h.Get("Content-Type"), len(icon))
	}
	for _, p := range []string{"/previews/chart_weekly_signups", "/charts/chart_weekly_signups", "/datasets/ds_weekly_signups", "/dashboards/dash_growth"} {
		status, h, b := ta.Do(t, "GET", p, ta.session(t, "alice"), nil)
		check(p, b, status, h)
	}

	// The structure the page promises.
	page := string(index)
	for _, want := range []string{
		`<form id="composer"`, `<label for="message"`, `<textarea id="message"`, `id="add-context"`,
		`id="send" class="send" aria-label="Send"`, `id="activity" class="activity" role="status" aria-live="polite"`,
		`id="close-answer"`, `id="transcript"`, `id="chips" class="chips" aria-label="Selected context"`,
		`<dialog id="picker"`, `<label for="picker-query"`, `<dialog id="confirm"`, `<dialog id="chats"`,
		`id="memory-page"`, `<label for="memory-new"`, `id="memory-empty"`, `id="demo-form"`, `<label for="token-input"`,
		`<script type="module" src="/web/js/app.js"></script>`, `<meta name="viewport"`,
		`<a href="#/connections" id="nav-connections">`, `<a href="#/mcp" id="nav-mcp">`, `<main id="connections-page"`,
		`id="connections-status" class="status-line" role="status" aria-live="polite"`, `id="connections-error" class="error" role="alert"`,
		`<main id="mcp-page"`, `<label for="mcp-url"`, `id="mcp-status" class="status-line" role="status" aria-live="polite"`, `id="mcp-empty"`,
		`<a href="#/usage" id="nav-usage">`, `<main id="usage-page"`, `<label for="usage-period"`, `<label for="budget-tokens"`,
	} {
		if !strings.Contains(page, want) {
			t.Errorf("the page lacks %s", want)
		}
	}
	for path, b := range served {
		text := string(b)
		if strings.HasSuffix(path, ".html") {
			if !strings.Contains(text, `<link rel="icon" href="/web/favicon.svg"`) {
				t.Errorf("%s does not link the page's icon", path)
			}
			if regexp.MustCompile(`<script(?:\s[^>]*)?>\s*[^<\s]`).MatchString(text) || regexp.MustCompile(`\son[a-z]+=`).MatchString(text) ||
				strings.Contains(text, "<style") || strings.Contains(text, " style=") {
				t.Errorf("%s has inline script or style, which the CSP blocks", path)
			}
			for _, m := range regexp.MustCompile(`(?:src|href)="(/web/[^"]+)"`).FindAllStringSubmatch(text, -1) {
				if served[m[1]] == nil {
					t.Errorf("%s loads %s, which is not served", path, m[1])
				}
			}
		}
		if strings.HasSuffix(path, ".js") {
			for _, m := range regexp.MustCompile(`from "\./([a-z-]+\.js)"`).FindAllStringSubmatch(text, -1) {
				if served["/web/js/"+m[1]] == nil {
					t.Errorf("%s imports %s, which is not served", path, m[1])
				}
			}
			if strings.Contains(text, ".innerHTML") || strings.Contains(text, "eval(") {
				t.Errorf("%s renders HTML from strings", path)
			}
		}
	}

	// What is not a file answers like every other route.
	for _, tc := range []struct {
		method, path string
		status       int
		code         askbi.Code
	}{
		{"GET", "/web/nope.js", 404, askbi.NotFound},
		{"GET", "/web/js/", 404, askbi.NotFound},
		{"GET", "/web/", 404, askbi.NotFound},
		{"GET", "/nope", 404, askbi.NotFound},
		{"POST", "/", 405, askbi.Unsupported},
		{"DELETE", "/web/app.css", 405, askbi.Unsupported},
		{"GET", "/ai/nope", 401, askbi.Unauthenticated},
	} {
		status, h, b := ta.Do(t, tc.method, tc.path, "", nil)
		if status != tc.status || chattest.MustError(t, b).Code != tc.code || !strings.HasPrefix(h.Get("Content-Type"), "application/json") {
			t.Errorf("%s %s: %d %s", tc.method, tc.path, status, b)
		}
	}
}

// TestDemoSignIn: the page's demo sign-in lists the demo users and hands
// out their sessions, only theirs, and is gone with -demo-sign-in off.
func TestDemoSignIn(t *testing.T) {
	ta := MustApp(t, nil)
	var list struct{ Principals []demoUser }
	ta.MustDo(t, http.StatusOK, "GET", "/demo/principals", "", nil, &list)
	var names []string
	for _, p := range list.Principals {
		names = append(names, p.Name)
	}
	if diff := cmp.Diff([]string{"alice", "bob", "vic", "carol"}, names); diff != "" {
		t.Errorf("demo users mismatch (-want +got):\n%s", diff)
	}
	b, _ := json.Marshal(list)
	if strings.Contains(string(b), sessionPrefix) {
		t.Error("the list holds session tokens")
	}
	var out struct {
		SessionToken string `json:"session_token"`
		Principal    demoUser
	}
	ta.MustDo(t, http.StatusOK, "POST", "/demo/sign-in", "", map[string]string{"name": "vic"}, &out)
	if out.SessionToken != ta.session(t, "vic") || out.Principal.Label != "Vic" {
		t.Errorf("sign-in = %+v", out)
	}
	ta.MustDo(t, http.StatusOK, "GET", "/ai/status", out.SessionToken, nil, nil)
	for _, name := range []string{"alice-read", "mallory", ""} {
		if status, _, _ := ta.Do(t, "POST", "/demo/sign-in", "", map[string]string{"name": name}); status == http.StatusOK {
			t.Errorf("signed in as %q", name)
		}
	}
	off := MustApp(t, func(c *config) { c.demoSignIn = false })
	for _, r := range []struct{ method, path string }{{"GET", "/demo/principals"}, {"POST", "/demo/sign-in"}} {
		status, _, b := off.Do(t, r.method, r.path, "", `{"name":"alice"}`)
		if status != http.StatusNotFound || strings.Contains(string(b), sessionPrefix) {
			t.Errorf("-demo-sign-in=false: %s %s: %d %s", r.method, r.path, status, b)
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
	e := ta.MustStartDelete(t, alice, conv)
	ta.MustTurn(t, "/ai/conversations/"+conv+"/approvals/"+e.Tool.ApprovalID+"/approve", alice,
		map[string]any{"tool": "delete_dashboard", "arguments": e.Tool.Arguments})
	if got := ta.MustDashboards(t, alice, "acme"); slices.Contains(got, "Revenue") {
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
	// Sessions and the demo's keys live in the database: the restart
	// hands out the same ones, which still work.
	if alice != ta.session(t, "alice") || tb.creds.Principals[0].APIKey != ta.creds.Principals[0].APIKey {
		t.Errorf("the restart handed out other demo credentials")
	}
	if status, _, body := tb.Do(t, "GET", "/ai/memory", ta.session(t, "alice"), nil); status != http.StatusOK {
		t.Errorf("the previous run's session token: %d %s, want 200", status, body)
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
