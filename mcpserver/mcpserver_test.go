package mcpserver_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/askbi/askbi/access"
	"github.com/askbi/askbi/access/accesstest"
	"github.com/askbi/askbi/dataexec"
	"github.com/askbi/askbi/mcpserver"
	"github.com/askbi/askbi/mcpserver/chartimage"
	"github.com/askbi/askbi/workspace"
	"github.com/askbi/askbi/workspace/workspacetest"
)

// env is a running MCP server over a small two-team workspace.
type env struct {
	url     string
	dir     *access.MemoryDirectory
	catalog *workspace.MemoryCatalog
	keys    *access.Keys
	checker *access.Checker
	audit   *access.MemoryAudit
	source  *countingSource
}

type countingSource struct {
	dataexec.Source
	calls int
}

func (c *countingSource) Query(ctx context.Context, q dataexec.Query) (*dataexec.Table, error) {
	c.calls++
	return c.Source.Query(ctx, q)
}

const (
	sqlSignups = "SELECT week, signups FROM weekly"
	sqlMRR     = "SELECT month, mrr FROM mrr"
	sqlTickets = "SELECT day, opened FROM tickets"
	sqlText    = "SELECT week, note FROM notes"
)

var now = time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)

// newEnv builds the workspace: acme (growth, finance) and globex (ops).
func newEnv(t testing.TB, src dataexec.Source, sourceType string) *env {
	t.Helper()
	return newEnvWith(t, src, sourceType, nil)
}

// newEnvWith is newEnv with configure, when not nil, changing the
// server's options and authentication before it starts.
func newEnvWith(t testing.TB, src dataexec.Source, sourceType string, configure func(*mcpserver.Options, *access.TokenLookup)) *env {
	t.Helper()
	e := &env{dir: accesstest.Teams(), catalog: workspace.NewMemoryCatalog(), audit: access.NewMemoryAudit(1000)}
	if src == nil {
		src = dataexec.NewTableSource(map[string]*dataexec.Table{
			sqlSignups: {Columns: []string{"week", "signups"}, Rows: [][]any{{"2026-11-02", int64(120)}, {"2026-11-09", int64(0)}, {"2026-11-16", int64(131)}}},
			sqlMRR:     {Columns: []string{"month", "mrr"}, Rows: [][]any{{"2026-10", json.Number("1000.50")}}},
			sqlTickets: {Columns: []string{"day", "opened"}, Rows: [][]any{{"2026-11-01", int64(4)}}},
			sqlText:    {Columns: []string{"week", "note"}, Rows: [][]any{{"2026-11-02", "quiet"}}},
		})
	}
	if sourceType == "" {
		sourceType = "postgres"
	}
	e.source = &countingSource{Source: src}
	c := e.catalog
	c.PutConnection(workspace.Connection{ID: "conn_acme", TeamID: "acme", Name: "Warehouse", Type: sourceType, Active: true, UpdatedAt: now})
	c.PutConnection(workspace.Connection{ID: "conn_globex", TeamID: "globex", Name: "Globex DB", Type: sourceType, Active: true, UpdatedAt: now})
	c.PutDashboard(workspace.Dashboard{ID: "dash_growth", TeamID: "acme", ProjectID: "growth", Name: "Growth overview", UpdatedAt: now})
	c.PutDashboard(workspace.Dashboard{ID: "dash_fin", TeamID: "acme", ProjectID: "finance", Name: "Finance", UpdatedAt: now})
	c.PutDashboard(workspace.Dashboard{ID: "dash_ops", TeamID: "globex", ProjectID: "ops", Name: "Support", UpdatedAt: now})
	ds := func(id, team, project, conn, name, sql string, fields ...string) {
		c.PutDataset(workspacetest.SQLDataset(id, team, project, conn, name, sql, now, fields...))
	}
	ds("ds_signups", "acme", "growth", "conn_acme", "Weekly signups", sqlSignups, "week", "signups")
	ds("ds_notes", "acme", "growth", "conn_acme", "Notes", sqlText, "week", "note")
	ds("ds_mrr", "acme", "finance", "conn_acme", "MRR", sqlMRR, "month", "mrr")
	ds("ds_tickets", "globex", "ops", "conn_globex", "Tickets by day", sqlTickets, "day", "opened")
	c.PutChart(workspace.Chart{ID: "chart_signups", TeamID: "acme", ProjectID: "growth", DashboardID: "dash_growth", Name: "Weekly signups",
		Type: workspace.ChartLine, DatasetID: "ds_signups", XField: "week", YFields: []string{"signups"}, UpdatedAt: now})
	c.PutChart(workspace.Chart{ID: "chart_mrr", TeamID: "acme", ProjectID: "finance", DashboardID: "dash_fin", Name: "MRR",
		Type: workspace.ChartLine, DatasetID: "ds_mrr", XField: "month", YFields: []string{"mrr"}, UpdatedAt: now})
	c.PutChart(workspace.Chart{ID: "chart_tickets", TeamID: "globex", ProjectID: "ops", DashboardID: "dash_ops", Name: "Tickets",
		Type: workspace.ChartBar, DatasetID: "ds_tickets", XField: "day", YFields: []string{"opened"}, UpdatedAt: now})

	activity := mcpserver.NewMemoryActivity()
	activity.Add("acme", mcpserver.ActivityItem{Time: now.Add(-time.Hour), Kind: "metric_evaluated", ProjectID: "growth",
		Entity: dataexec.Ref{Type: access.TypeChart, ID: "chart_signups", Name: "Weekly signups"}, Summary: "Signups rose 6%"})
	activity.Add("acme", mcpserver.ActivityItem{Time: now.Add(-2 * time.Hour), Kind: "chart_updated", ProjectID: "finance",
		Entity: dataexec.Ref{Type: access.TypeChart, ID: "chart_mrr", Name: "MRR"}, Summary: "MRR chart changed"})
	activity.Add("globex", mcpserver.ActivityItem{Time: now.Add(-time.Hour), Kind: "dataset_created", ProjectID: "ops",
		Entity: dataexec.Ref{Type: access.TypeDataset, ID: "ds_tickets", Name: "Tickets by day"}, Summary: "Dataset created"})

	e.checker = access.NewChecker(e.dir, nil)
	exec := dataexec.NewExecutor(e.catalog, dataexec.SourceMap{"conn_acme": e.source, "conn_globex": e.source}, nil)
	gate := access.NewGate(e.checker, access.NewMemoryRateLimiter(&access.RateOptions{Burst: 1000, Rate: 1000}))
	e.keys = access.NewKeys(access.NewMemoryKeyStore(), e.dir, nil)
	opts := &mcpserver.Options{
		BaseURL: "https://bi.example.com", Activity: activity, Audit: e.audit, Now: func() time.Time { return now },
		ChartImage: chartimage.PNG,
	}
	authn := access.TokenLookup(e.keys.Verify)
	if configure != nil {
		configure(opts, &authn)
	}
	srv := mcpserver.New(exec, gate, authn, opts)
	mux := http.NewServeMux()
	mux.Handle("/mcp", srv)
	mux.Handle("/.well-known/oauth-protected-resource/mcp", srv.ResourceMetadataHandler())
	hs := httptest.NewServer(mux)
	t.Cleanup(hs.Close)
	e.url = hs.URL + "/mcp"
	return e
}

// stored lists the IDs of every dataset and chart of both teams.
func (e *env) stored(t *testing.T) []string {
	t.Helper()
	var ids []string
	for _, team := range []string{"acme", "globex"} {
		rows, err := e.catalog.Search(context.Background(), workspace.CatalogQuery{TeamID: team, Projects: access.AllProjects(),
			Types: []access.EntityType{access.TypeDataset, access.TypeChart}, Limit: 1000})
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range rows {
			ids = append(ids, r.Entity.ID)
		}
	}
	slices.Sort(ids)
	return ids
}

// MustRevoke revokes user's API key secret.
func (e *env) MustRevoke(t testing.TB, user, team, secret string) {
	t.Helper()
	ctx := context.Background()
	owner, err := e.checker.Live(ctx, access.Principal{UserID: user, TeamID: team, Auth: access.AuthSession})
	if err != nil {
		t.Fatal(err)
	}
	p, err := e.keys.Verify(ctx, secret)
	if err != nil {
		t.Fatal(err)
	}
	if err := e.keys.Revoke(ctx, owner, p.CredentialID); err != nil {
		t.Fatal(err)
	}
}

// MustKey creates an API key for user in team.
func (e *env) MustKey(t testing.TB, user, team string, projects access.Projects, scopes ...access.Scope) string {
	t.Helper()
	owner, err := e.checker.Live(context.Background(), access.Principal{UserID: user, TeamID: team, Auth: access.AuthSession})
	if err != nil {
		t.Fatal(err)
	}
	names := make([]string, len(scopes))
	for i, s := range scopes {
		names[i] = string(s)
	}
	secret, _, err := e.keys.Create(context.Background(), owner, access.KeyRequest{Name: "test", Scopes: names, Projects: projects})
	if err != nil {
		t.Fatal(err)
	}
	return secret
}

// bearer adds an Authorization header to every request.
type bearer struct{ token string }

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return http.DefaultTransport.RoundTrip(r)
}

// MustConnect connects the official go-sdk client with token.
func (e *env) MustConnect(t testing.TB, token string) *mcp.ClientSession {
	t.Helper()
	return MustConnectTo(t, e.url, token)
}

// MustConnectTo connects the official go-sdk client to the MCP server at
// url with token.
func MustConnectTo(t testing.TB, url, token string) *mcp.ClientSession {
	t.Helper()
	client := mcp.NewClient(&mcp.Implementation{Name: "askbi-test", Version: "1"}, nil)
	cs, err := client.Connect(context.Background(), &mcp.StreamableClientTransport{
		Endpoint: url, HTTPClient: &http.Client{Transport: bearer{token}},
	}, nil)
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}

// call runs a tool that cs lists and returns its structured content as a
// map, checking it against the tool's declared output schema.
func call(t *testing.T, cs *mcp.ClientSession, name string, args map[string]any) (map[string]any, *mcp.CallToolResult) {
	t.Helper()
	return callListedBy(t, cs, cs, name, args)
}

// callUnlisted runs a tool that cs must not list (hidden by its scopes or
// role), checking the result against the output schema that lister, a
// session that lists it, declares.
func callUnlisted(t *testing.T, cs, lister *mcp.ClientSession, name string, args map[string]any) (map[string]any, *mcp.CallToolResult) {
	t.Helper()
	if slices.Contains(listed(t, cs), name) {
		t.Errorf("%s is listed to a caller that cannot call it", name)
	}
	return callListedBy(t, cs, lister, name, args)
}

func callListedBy(t *testing.T, cs, lister *mcp.ClientSession, name string, args map[string]any) (map[string]any, *mcp.CallToolResult) {
	t.Helper()
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	raw, err := json.Marshal(res.StructuredContent)
	if err != nil {
		t.Fatal(err)
	}
	var out map[string]any
	if err := json.Unmarshal(raw, &out); err != nil {
		t.Fatalf("%s: structuredContent %s is not an object", name, raw)
	}
	checkOutputSchema(t, lister, name, out)
	checkTextContent(t, name, res, out)
	return out, res
}

// checkTextContent checks that res's content is a short summary, then
// the serialized JSON of its structuredContent out (MCP: "a tool that
// returns structured content SHOULD also return the serialized JSON in a
// TextContent block"), so a client that passes only content to its model
// passes the data too.
func checkTextContent(t *testing.T, name string, res *mcp.CallToolResult, out map[string]any) {
	t.Helper()
	if len(res.Content) < 2 {
		t.Fatalf("%s: %d content blocks, want a summary and the JSON", name, len(res.Content))
	}
	if tc, ok := res.Content[0].(*mcp.TextContent); !ok || len(tc.Text) > 300 || strings.HasPrefix(tc.Text, "{") {
		t.Errorf("%s: first content %v is not a short summary", name, res.Content[0])
	}
	tc, ok := res.Content[1].(*mcp.TextContent)
	if !ok {
		t.Fatalf("%s: second content is %T, want the JSON as text", name, res.Content[1])
	}
	var text map[string]any
	if err := json.Unmarshal([]byte(tc.Text), &text); err != nil {
		t.Fatalf("%s: second content %.200q is not JSON: %v", name, tc.Text, err)
	}
	if diff := cmp.Diff(out, text); diff != "" {
		t.Errorf("%s: the text JSON is not the structuredContent (-structuredContent +text):\n%s", name, diff)
	}
}

// checkOutputSchema checks out against the output schema cs's tools/list
// declares for tool name; a tool missing from the list fails the test.
func checkOutputSchema(t *testing.T, cs *mcp.ClientSession, name string, out map[string]any) {
	t.Helper()
	lt, err := cs.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, tool := range lt.Tools {
		if tool.Name != name {
			continue
		}
		b, _ := json.Marshal(tool.OutputSchema)
		var s jsonschema.Schema
		if err := json.Unmarshal(b, &s); err != nil {
			t.Fatal(err)
		}
		r, err := s.Resolve(nil)
		if err != nil {
			t.Fatal(err)
		}
		if err := r.Validate(out); err != nil {
			t.Errorf("%s: structuredContent does not match outputSchema: %v", name, err)
		}
		return
	}
	t.Errorf("%s: not in tools/list, so its output schema is unknown", name)
}

// wantError checks a tool error result's structured code.
func wantError(t *testing.T, cs *mcp.ClientSession, name string, args map[string]any, code string) {
	t.Helper()
	out, res := call(t, cs, name, args)
	wantErrorResult(t, name, args, code, out, res)
}

// wantErrorResult checks the result of a call of name with args: an
// error with code and a message.
func wantErrorResult(t *testing.T, name string, args map[string]any, code string, out map[string]any, res *mcp.CallToolResult) {
	t.Helper()
	if !res.IsError || out["code"] != code {
		t.Errorf("%s(%v) = isError %v, %v; want code %s", name, args, res.IsError, out, code)
	}
	if msg, _ := out["message"].(string); msg == "" {
		t.Errorf("%s: error without a message", name)
	}
}

var toolOrder = []string{"search_workspace", "get_workspace_activity", "run_dataset", "get_chart_data", "create_chart_preview", "explore_data"}

func TestToolsListByScope(t *testing.T) {
	e := newEnv(t, nil, "")
	for mask := range 16 {
		var scopes []access.Scope
		for i, s := range access.AllScopes {
			if mask&(1<<i) != 0 {
				scopes = append(scopes, s)
			}
		}
		if len(scopes) == 0 {
			continue // a key needs a scope
		}
		t.Run(fmt.Sprint(scopes), func(t *testing.T) {
			key := e.MustKey(t, "alice", "acme", access.AllProjects(), scopes...)
			// tools is always an array, empty for a key that can list
			// nothing: clients refuse "tools": null.
			_, _, body := postMCP(t, e.url, key, `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`)
			var raw struct {
				Result struct {
					Tools json.RawMessage `json:"tools"`
				} `json:"result"`
			}
			if err := json.Unmarshal(body, &raw); err != nil || !bytes.HasPrefix(raw.Result.Tools, []byte("[")) {
				t.Errorf("tools/list answered tools %s (%v); want an array", raw.Result.Tools, err)
			}
			cs := e.MustConnect(t, key)
			lt, err := cs.ListTools(context.Background(), nil)
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, tool := range lt.Tools {
				got = append(got, tool.Name)
				if tool.Annotations == nil || tool.Annotations.DestructiveHint == nil || tool.OutputSchema == nil {
					t.Errorf("%s: missing annotations or output schema", tool.Name)
					continue
				}
				// None of the six deletes anything. explore_data saves
				// datasets, so it does not claim to be read-only; a chart
				// preview is a private draft, read-only for both adapters
				// (dataexec.ChartPreviewAction).
				writes := tool.Name == "explore_data"
				if *tool.Annotations.DestructiveHint || tool.Annotations.ReadOnlyHint == writes {
					t.Errorf("%s: readOnlyHint %v, destructiveHint %v", tool.Name, tool.Annotations.ReadOnlyHint, *tool.Annotations.DestructiveHint)
				}
			}
			var want []string
			for _, name := range toolOrder {
				ok := slices.Contains(scopes, access.ScopeDataRead)
				if name == "create_chart_preview" {
					ok = ok && slices.Contains(scopes, access.ScopeChartsPreview)
				}
				if ok {
					want = append(want, name)
				}
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("tools/list mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

// TestToolsListByRole: tools/list shows only the tools the caller's live
// role and key can call, by access.Allow's rules, besides its scopes:
// exploration and chart previews need a team owner or admin with an
// all-project key. A role change shows at once, on the same key.
func TestToolsListByRole(t *testing.T) {
	e := newEnv(t, nil, "")
	reads := []string{"search_workspace", "get_workspace_activity", "run_dataset", "get_chart_data"}
	for _, tc := range []struct {
		name, user string
		projects   access.Projects
		want       []string
	}{
		{"owner", "alice", access.AllProjects(), toolOrder},
		{"owner, one-project key", "alice", access.ProjectSet("growth"), reads},
		{"editor", "bob", access.ProjectSet("growth"), reads},
		{"viewer", "vic", access.AllProjects(), reads},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cs := e.MustConnect(t, e.MustKey(t, tc.user, "acme", tc.projects, access.AllScopes...))
			if diff := cmp.Diff(tc.want, listed(t, cs)); diff != "" {
				t.Errorf("tools/list mismatch (-want +got):\n%s", diff)
			}
		})
	}
	cs := e.MustConnect(t, e.MustKey(t, "vic", "acme", access.AllProjects(), access.AllScopes...))
	e.dir.SetMember("acme", "vic", access.RoleAdmin, access.AllProjects())
	if diff := cmp.Diff(toolOrder, listed(t, cs)); diff != "" {
		t.Errorf("tools/list after vic became an admin mismatch (-want +got):\n%s", diff)
	}
}

// TestToolsListPassesTheGate: tools/list reads the live role through the
// request gate, so it spends the rate budget like a call and, past it,
// is a JSON-RPC error with code rate_limited and Retry-After.
func TestToolsListPassesTheGate(t *testing.T) {
	e := newEnv(t, nil, "")
	token := e.MustKey(t, "alice", "acme", access.AllProjects(), access.ScopeDataRead)
	exec := dataexec.NewExecutor(e.catalog, dataexec.SourceMap{"conn_acme": e.source}, nil)
	gate := access.NewGate(e.checker, access.NewMemoryRateLimiter(&access.RateOptions{Burst: 1, Rate: 0.001, Now: func() time.Time { return now }}))
	hs := httptest.NewServer(mcpserver.New(exec, gate, e.keys.Verify, nil))
	t.Cleanup(hs.Close)
	list := `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`
	if status, _, b := postMCP(t, hs.URL, token, list); status != http.StatusOK || !strings.Contains(string(b), `"tools":[`) {
		t.Fatalf("first tools/list: %d %.200s", status, b)
	}
	status, h, b := postMCP(t, hs.URL, token, list)
	var re rpcError
	if json.Unmarshal(b, &re) != nil || re.Error.Data.Code != "rate_limited" || h.Get("Retry-After") == "" {
		t.Errorf("second tools/list past the budget: %d %v %s; want a rate_limited JSON-RPC error with Retry-After", status, h, b)
	}
}

// listed are the names cs's tools/list shows.
func listed(t *testing.T, cs *mcp.ClientSession) []string {
	t.Helper()
	lt, err := cs.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tool := range lt.Tools {
		names = append(names, tool.Name)
	}
	return names
}

// TestToolsListBudget serializes the real tools/list answer for the
// widest credential (an owner's all-project key with every scope): at
// most 8,000 characters and eight tools (seed 000); and it holds all six.
func TestToolsListBudget(t *testing.T) {
	e := newEnv(t, nil, "")
	token := e.MustKey(t, "alice", "acme", access.AllProjects(), access.AllScopes...)
	body := `{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{}}`
	resp, err := http.DefaultClient.Do(mcpRequest(t.Context(), e.url, token, body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var msg struct {
		Result json.RawMessage `json:"result"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&msg); err != nil {
		t.Fatal(err)
	}
	var list struct {
		Tools []json.RawMessage `json:"tools"`
	}
	if err := json.Unmarshal(msg.Result, &list); err != nil {
		t.Fatal(err)
	}
	if len(list.Tools) > 8 {
		t.Errorf("tools/list has %d tools, over the eight allowed", len(list.Tools))
	}
	if len(list.Tools) != len(toolOrder) {
		t.Errorf("tools/list has %d tools, want the %d of the widest credential", len(list.Tools), len(toolOrder))
	}
	n := len(msg.Result)
	t.Logf("serialized tools/list: %d characters (budget 8000, goal 6000)", n)
	if n > 8000 {
		t.Errorf("serialized tools/list is %d characters, over the 8,000 budget", n)
	}
}

// TestUnauthenticated: every request without a valid credential gets
// 401 with the resource metadata; a refused token's challenge says
// error="invalid_token" (RFC 6750 §3), a request with no token at all
// gets the plain challenge (§3.1).
func TestUnauthenticated(t *testing.T) {
	e := newEnv(t, nil, "")
	revoked := e.MustKey(t, "alice", "acme", access.AllProjects(), access.AllScopes...)
	if _, err := e.keys.Verify(context.Background(), revoked); err != nil {
		t.Fatalf("the key does not work before it is revoked: %v", err)
	}
	e.MustRevoke(t, "alice", "acme", revoked)
	removed := e.MustKey(t, "bob", "acme", access.ProjectSet("growth"), access.ScopeDataRead)
	e.dir.RemoveMember("acme", "bob")
	const metadata = `resource_metadata="https://bi.example.com/.well-known/oauth-protected-resource/mcp"`
	for name, tc := range map[string]struct {
		header  string
		refused bool // a token was presented and refused
	}{
		"missing":          {"", false},
		"no token":         {"Bearer ", false},
		"not bearer":       {"Basic YWxpY2U6eA==", false},
		"malformed":        {"Bearer nope", true},
		"lower-case":       {"bearer nope", true},
		"session token":    {"Bearer askbi_session_abc", true},
		"revoked":          {"Bearer " + revoked, true},
		"removed member's": {"Bearer " + removed, true},
	} {
		t.Run(name, func(t *testing.T) {
			req := mcpRequest(t.Context(), e.url, "", `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`)
			if tc.header != "" {
				req.Header.Set("Authorization", tc.header)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != http.StatusUnauthorized {
				t.Errorf("status = %d, want 401", resp.StatusCode)
			}
			h := resp.Header.Values("WWW-Authenticate")
			want := `Bearer ` + metadata
			if tc.refused {
				want = `Bearer error="invalid_token", error_description="the credential is invalid, expired or revoked", ` + metadata
			}
			if diff := cmp.Diff([]string{want}, h); diff != "" {
				t.Errorf("WWW-Authenticate mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func TestEveryTool(t *testing.T) {
	e := newEnv(t, nil, "")
	cs := e.MustConnect(t, e.MustKey(t, "alice", "acme", access.AllProjects(), access.AllScopes...))

	out, _ := call(t, cs, "search_workspace", map[string]any{"query": "signups"})
	var names []string
	for _, r := range out["results"].([]any) {
		names = append(names, r.(map[string]any)["name"].(string))
	}
	if diff := cmp.Diff([]string{"Weekly signups", "Weekly signups"}, names); diff != "" {
		t.Errorf("search mismatch (-want +got):\n%s", diff)
	}

	out, _ = call(t, cs, "get_workspace_activity", map[string]any{})
	if items := out["items"].([]any); len(items) != 2 || out["team_id"] != "acme" {
		t.Errorf("activity = %v", out)
	}

	out, _ = call(t, cs, "run_dataset", map[string]any{"dataset_id": "ds_signups"})
	wantRows := []any{[]any{"2026-11-02", 120.0}, []any{"2026-11-09", 0.0}, []any{"2026-11-16", 131.0}}
	if diff := cmp.Diff(wantRows, out["rows"]); diff != "" {
		t.Errorf("run_dataset rows mismatch (-want +got):\n%s", diff)
	}
	if ds := out["dataset"].(map[string]any); ds["name"] != "Weekly signups" || ds["url"] != "https://bi.example.com/datasets/ds_signups" {
		t.Errorf("run_dataset dataset = %v", ds)
	}

	out, _ = call(t, cs, "get_chart_data", map[string]any{"chart_id": "chart_signups", "refresh": true})
	if u := out["chart"].(map[string]any)["url"]; u != "https://bi.example.com/charts/chart_signups" {
		t.Errorf("saved chart url = %v", u)
	}
	if diff := cmp.Diff([]any{"2026-11-02", "2026-11-09", "2026-11-16"}, out["labels"]); diff != "" {
		t.Errorf("labels mismatch (-want +got):\n%s", diff)
	}

	out, res := call(t, cs, "create_chart_preview", map[string]any{
		"dataset_id": "ds_signups", "chart_type": "bar", "x_field": "week", "y_fields": []any{"signups"}, "name": "Signups bar", "image": true,
	})
	if out["status"] != "preview" || len(res.Content) != 3 {
		t.Fatalf("create_chart_preview = %v, %d content blocks, want the summary, the JSON and the image", out, len(res.Content))
	}
	img, ok := res.Content[2].(*mcp.ImageContent)
	if !ok || img.MIMEType != "image/png" || len(img.Data) > 256<<10 || !bytes.HasPrefix(img.Data, []byte("\x89PNG")) {
		t.Errorf("image content = %T", res.Content[2])
	}
	chartID := out["chart"].(map[string]any)["id"].(string)
	// A preview links to its preview page, a saved chart to its chart
	// page: the executor's Links, made absolute against BaseURL.
	if u := out["chart"].(map[string]any)["url"]; u != "https://bi.example.com/previews/"+chartID {
		t.Errorf("preview url = %v, want its /previews/ page", u)
	}
	if c, err := e.catalog.Chart(context.Background(), chartID); err != nil || c.DashboardID != "" {
		t.Errorf("preview chart %v, %v: want stored and on no dashboard", c, err)
	}

	out, _ = call(t, cs, "explore_data", map[string]any{"operation": "inspect"})
	if conns := out["connections"].([]any); len(conns) != 1 || conns[0].(map[string]any)["id"] != "conn_acme" {
		t.Errorf("inspect connections = %v", out)
	}
	out, _ = call(t, cs, "explore_data", map[string]any{"operation": "preview", "connection_id": "conn_acme", "sql": sqlMRR})
	if out["row_count"] != 1.0 {
		t.Errorf("preview = %v", out)
	}
	out, _ = call(t, cs, "explore_data", map[string]any{"operation": "save", "connection_id": "conn_acme", "sql": sqlMRR, "name": "MRR copy", "dashboard_id": "dash_fin"})
	dsID := out["dataset"].(map[string]any)["id"].(string)
	if ds, err := e.catalog.Dataset(context.Background(), dsID); err != nil || ds.ProjectID != "finance" {
		t.Errorf("saved dataset %v, %v", ds, err)
	}

	// Every call was audited without argument values.
	entries := e.audit.Entries()
	var calls int
	for _, en := range entries {
		if en.Action != "mcp.tool_call" {
			continue
		}
		calls++
		if en.UserID != "alice" || en.Outcome != access.OutcomeOK || en.Details["tool"] == "" {
			t.Errorf("audit entry %+v", en)
		}
		b, _ := json.Marshal(en)
		if strings.Contains(string(b), "SELECT") || strings.Contains(string(b), "askbi_") {
			t.Errorf("audit entry holds an argument or secret: %s", b)
		}
	}
	if calls != 8 {
		t.Errorf("%d tool calls audited, want 8", calls)
	}
}

func TestDenials(t *testing.T) {
	e := newEnv(t, nil, "")
	alice := e.MustConnect(t, e.MustKey(t, "alice", "acme", access.AllProjects(), access.AllScopes...))
	aliceRead := e.MustConnect(t, e.MustKey(t, "alice", "acme", access.AllProjects(), access.ScopeDataRead))
	aliceGrowth := e.MustConnect(t, e.MustKey(t, "alice", "acme", access.ProjectSet("growth"), access.AllScopes...))
	bob := e.MustConnect(t, e.MustKey(t, "bob", "acme", access.ProjectSet("growth"), access.ScopeDataRead, access.ScopeDataRefresh, access.ScopeChartsPreview))
	vic := e.MustConnect(t, e.MustKey(t, "vic", "acme", access.AllProjects(), access.ScopeDataRead))
	carol := e.MustConnect(t, e.MustKey(t, "carol", "globex", access.AllProjects(), access.AllScopes...))
	preview := map[string]any{"dataset_id": "ds_signups", "chart_type": "line", "x_field": "week", "y_fields": []any{"signups"}, "name": "x"}

	before := e.source.calls
	stored := e.stored(t)
	type denial struct {
		name string
		cs   *mcp.ClientSession
		tool string
		args map[string]any
		code string
	}
	// Tools the caller's role or key cannot use are not listed, and
	// forbidden to call.
	for _, tt := range []denial{
		{"chart preview by an editor", bob, "create_chart_preview", preview, "forbidden"},
		{"chart preview on a selected-project key", aliceGrowth, "create_chart_preview", preview, "forbidden"},
		{"explore by a viewer", vic, "explore_data", map[string]any{"operation": "preview", "connection_id": "conn_acme", "sql": sqlMRR}, "forbidden"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			out, res := callUnlisted(t, tt.cs, alice, tt.tool, tt.args)
			wantErrorResult(t, tt.tool, tt.args, tt.code, out, res)
		})
	}
	for _, tt := range []denial{
		{"other team's dataset", carol, "run_dataset", map[string]any{"dataset_id": "ds_signups"}, "not_found"},
		{"other team's chart", alice, "get_chart_data", map[string]any{"chart_id": "chart_tickets"}, "not_found"},
		{"unknown dataset", alice, "run_dataset", map[string]any{"dataset_id": "ds_nope"}, "not_found"},
		{"other project on a selected-project key", aliceGrowth, "run_dataset", map[string]any{"dataset_id": "ds_mrr"}, "not_found"},
		{"other project for a limited member", bob, "get_chart_data", map[string]any{"chart_id": "chart_mrr"}, "not_found"},
		{"save into another team's dashboard", alice, "explore_data", map[string]any{"operation": "save", "connection_id": "conn_acme", "sql": sqlMRR, "name": "x", "dashboard_id": "dash_ops"}, "not_found"},
		{"explore another team's connection", alice, "explore_data", map[string]any{"operation": "preview", "connection_id": "conn_globex", "sql": sqlTickets}, "not_found"},
		{"activity of a project outside the key", aliceGrowth, "get_workspace_activity", map[string]any{"project_id": "finance"}, "not_found"},
		{"chart from a text-only field", alice, "create_chart_preview", map[string]any{"dataset_id": "ds_notes", "chart_type": "bar", "x_field": "week", "y_fields": []any{"note"}, "name": "x"}, "invalid_result"},
	} {
		t.Run(tt.name, func(t *testing.T) { wantError(t, tt.cs, tt.tool, tt.args, tt.code) })
	}
	// Only the text-only chart ran its query (to validate its sample).
	if got := e.source.calls - before; got != 1 {
		t.Errorf("denied calls ran %d source queries, want 1", got)
	}
	if diff := cmp.Diff(stored, e.stored(t)); diff != "" {
		t.Errorf("denied calls changed the catalog (-before +after):\n%s", diff)
	}

	// An unknown tool is a protocol error; one hidden for lack of a scope
	// is the step-up challenge (OAuth, TestStepUp) or scope_required (API
	// keys, TestScopeRequiredForKeys).
	_, err := aliceRead.CallTool(context.Background(), &mcp.CallToolParams{Name: "no_such_tool", Arguments: preview})
	if err == nil || !strings.Contains(err.Error(), "unknown tool") {
		t.Errorf("CallTool(no_such_tool) = %v, want unknown tool", err)
	}
}

// asOAuth makes the env's API keys verify as OAuth access tokens (Auth
// AuthOAuth), for the rules that differ between the two.
func asOAuth(_ *mcpserver.Options, authn *access.TokenLookup) {
	keys := *authn
	*authn = func(ctx context.Context, token string) (access.Principal, error) {
		p, err := keys(ctx, token)
		p.Auth = access.AuthOAuth
		return p, err
	}
}

// TestStepUp: an OAuth call that needs a scope the token lacks, by its
// tool or by its arguments, answers 403 with the insufficient_scope
// challenge naming the scopes the call needs, and runs nothing.
func TestStepUp(t *testing.T) {
	e := newEnvWith(t, nil, "", asOAuth)
	read := e.MustKey(t, "alice", "acme", access.AllProjects(), access.ScopeDataRead)
	full := e.MustKey(t, "alice", "acme", access.AllProjects(), access.AllScopes...)
	preview := map[string]any{"dataset_id": "ds_signups", "chart_type": "line", "x_field": "week", "y_fields": []any{"signups"}, "name": "x"}
	save := map[string]any{"operation": "save", "connection_id": "conn_acme", "sql": sqlMRR, "name": "x", "dashboard_id": "dash_fin"}
	before, stored := e.source.calls, e.stored(t)
	for _, tc := range []struct {
		name, token, tool string
		args              map[string]any
		scope             string // the challenge's scope; "" for no challenge
	}{
		{"hidden tool", read, "create_chart_preview", preview, "data:read charts:preview"},
		{"refresh without data:refresh", read, "run_dataset", map[string]any{"dataset_id": "ds_signups", "refresh": true}, "data:read data:refresh"},
		{"chart refresh without data:refresh", read, "get_chart_data", map[string]any{"chart_id": "chart_signups", "refresh": true}, "data:read data:refresh"},
		{"save without datasets:write", read, "explore_data", save, "data:read datasets:write"},
		{"no refresh", read, "run_dataset", map[string]any{"dataset_id": "ds_signups", "refresh": false}, ""},
		{"inspect", read, "explore_data", map[string]any{"operation": "inspect"}, ""},
		{"unknown tool", read, "no_such_tool", nil, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			body, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": map[string]any{"name": tc.tool, "arguments": tc.args}})
			status, h, _ := postMCP(t, e.url, tc.token, string(body))
			if tc.scope == "" {
				if status != http.StatusOK {
					t.Errorf("status %d, want 200", status)
				}
				return
			}
			want := `Bearer error="insufficient_scope", scope="` + tc.scope + `", resource_metadata="https://bi.example.com/.well-known/oauth-protected-resource/mcp"`
			if status != http.StatusForbidden || !strings.HasPrefix(h.Get("WWW-Authenticate"), want) {
				t.Errorf("status %d, WWW-Authenticate %q; want 403 and %q", status, h.Get("WWW-Authenticate"), want)
			}
		})
	}
	if got := e.source.calls - before; got != 1 { // the one refresh: false call
		t.Errorf("%d source queries, want 1", got)
	}
	if diff := cmp.Diff(stored, e.stored(t)); diff != "" {
		t.Errorf("refused calls changed the catalog (-before +after):\n%s", diff)
	}
	// With the scopes, the same calls run.
	body, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": map[string]any{"name": "run_dataset", "arguments": map[string]any{"dataset_id": "ds_signups", "refresh": true}}})
	if status, _, b := postMCP(t, e.url, full, string(body)); status != http.StatusOK || strings.Contains(string(b), "isError\":true") {
		t.Errorf("refresh with the scope: %d %s", status, b)
	}
}

// TestScopeRequiredForKeys: an API key's client cannot ask the user for
// more scopes, so a call that needs a scope the key lacks, by its tool or
// by its arguments, is a tool error scope_required naming the missing
// scopes (never the 403 step-up challenge, which clients report only as
// "Forbidden"), and runs nothing.
func TestScopeRequiredForKeys(t *testing.T) {
	e := newEnv(t, nil, "")
	cs := e.MustConnect(t, e.MustKey(t, "alice", "acme", access.AllProjects(), access.ScopeDataRead))
	full := e.MustConnect(t, e.MustKey(t, "alice", "acme", access.AllProjects(), access.AllScopes...))
	preview := map[string]any{"dataset_id": "ds_signups", "chart_type": "line", "x_field": "week", "y_fields": []any{"signups"}, "name": "x"}
	save := map[string]any{"operation": "save", "connection_id": "conn_acme", "sql": sqlMRR, "name": "x", "dashboard_id": "dash_fin"}
	before, stored := e.source.calls, e.stored(t)
	for _, tc := range []struct {
		name, tool string
		args       map[string]any
		missing    string
	}{
		{"a tool the key does not list", "create_chart_preview", preview, "charts:preview"},
		{"refresh without data:refresh", "run_dataset", map[string]any{"dataset_id": "ds_signups", "refresh": true}, "data:refresh"},
		{"chart refresh without data:refresh", "get_chart_data", map[string]any{"chart_id": "chart_signups", "refresh": true}, "data:refresh"},
		{"save without datasets:write", "explore_data", save, "datasets:write"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, res := callListedBy(t, cs, full, tc.tool, tc.args)
			msg, _ := out["message"].(string)
			if !res.IsError || out["code"] != "scope_required" || !strings.Contains(msg, tc.missing) {
				t.Errorf("%s(%v) = isError %v, %v; want scope_required naming %s", tc.tool, tc.args, res.IsError, out, tc.missing)
			}
		})
	}
	if got := e.source.calls - before; got != 0 {
		t.Errorf("refused calls ran %d source queries", got)
	}
	if diff := cmp.Diff(stored, e.stored(t)); diff != "" {
		t.Errorf("refused calls changed the catalog (-before +after):\n%s", diff)
	}
}

// TestTokenInQuery: a token is read from the Authorization header only.
func TestTokenInQuery(t *testing.T) {
	e := newEnv(t, nil, "")
	token := e.MustKey(t, "alice", "acme", access.AllProjects(), access.ScopeDataRead)
	list := `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`
	if status, _, _ := postMCP(t, e.url+"?access_token="+token, "", list); status != http.StatusUnauthorized {
		t.Errorf("token in the query only: status %d, want 401", status)
	}
	if status, _, _ := postMCP(t, e.url+"?access_token="+token, token, list); status != http.StatusBadRequest {
		t.Errorf("token in the query and the header: status %d, want 400", status)
	}
	if status, _, _ := postMCP(t, e.url, token, list); status != http.StatusOK {
		t.Errorf("token in the header: status %d, want 200", status)
	}
}

// mcpRequest is a POST of one JSON-RPC message to the MCP endpoint url,
// with the headers Streamable HTTP asks for and, unless token is empty,
// the bearer token.
func mcpRequest(ctx context.Context, url, token, body string) *http.Request {
	req, _ := http.NewRequestWithContext(ctx, "POST", url, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	return req
}

// postMCP posts one JSON-RPC message with token.
func postMCP(t *testing.T, url, token, body string) (int, http.Header, []byte) {
	t.Helper()
	resp, err := http.DefaultClient.Do(mcpRequest(t.Context(), url, token, body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header, b
}

func TestLiveMembership(t *testing.T) {
	e := newEnv(t, nil, "")
	token := e.MustKey(t, "bob", "acme", access.ProjectSet("growth"), access.ScopeDataRead)
	cs := e.MustConnect(t, token)
	call(t, cs, "run_dataset", map[string]any{"dataset_id": "ds_signups"})

	// Losing the project hides its data at once, on the same connection.
	e.dir.SetMember("acme", "bob", access.RoleEditor, access.ProjectSet("finance"))
	wantError(t, cs, "run_dataset", map[string]any{"dataset_id": "ds_signups"}, "not_found")

	// A removed member's key is refused outright.
	e.dir.RemoveMember("acme", "bob")
	_, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "run_dataset", Arguments: map[string]any{"dataset_id": "ds_signups"}})
	if err == nil {
		t.Error("removed member's key still works")
	}
}

func TestBadInput(t *testing.T) {
	e := newEnv(t, nil, "")
	cs := e.MustConnect(t, e.MustKey(t, "alice", "acme", access.AllProjects(), access.AllScopes...))
	before := e.source.calls
	stored := e.stored(t)
	tests := []struct {
		name string
		tool string
		args map[string]any
	}{
		{"limit 0", "search_workspace", map[string]any{"limit": 0}},
		{"limit 51", "search_workspace", map[string]any{"limit": 51}},
		{"limit -1", "search_workspace", map[string]any{"limit": -1}},
		{"limit as a string", "search_workspace", map[string]any{"limit": "5"}},
		{"unknown field", "run_dataset", map[string]any{"dataset_id": "ds_signups", "sql": "DELETE FROM t"}},
		{"wrong type", "run_dataset", map[string]any{"dataset_id": 7}},
		{"missing required", "get_chart_data", map[string]any{}},
		{"bad filter op", "run_dataset", map[string]any{"dataset_id": "ds_signups", "filters": []any{map[string]any{"field": "week", "op": "like", "value": "x"}}}},
		{"filter on an unknown field", "run_dataset", map[string]any{"dataset_id": "ds_signups", "filters": []any{map[string]any{"field": "nope", "op": "eq", "value": "x"}}}},
		{"unknown variable", "run_dataset", map[string]any{"dataset_id": "ds_signups", "variables": map[string]any{"x": 1}}},
		{"bad chart type", "create_chart_preview", map[string]any{"dataset_id": "ds_signups", "chart_type": "radar", "y_fields": []any{"signups"}, "name": "x"}},
		{"bad operation", "explore_data", map[string]any{"operation": "drop"}},
		{"preview without a connection", "explore_data", map[string]any{"operation": "preview", "sql": sqlMRR}},
		{"bad date", "get_workspace_activity", map[string]any{"from": "yesterday"}},
		{"range backwards", "get_workspace_activity", map[string]any{"from": "2026-11-30T00:00:00Z", "to": "2026-11-01T00:00:00Z"}},
		{"huge sql", "explore_data", map[string]any{"operation": "preview", "connection_id": "conn_acme", "sql": strings.Repeat("x", 20001)}},
		{"long id", "run_dataset", map[string]any{"dataset_id": strings.Repeat("d", 101)}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) { wantError(t, cs, tt.tool, tt.args, "invalid_argument") })
	}
	if got := e.source.calls - before; got != 0 {
		t.Errorf("bad input ran %d source queries", got)
	}
	if diff := cmp.Diff(stored, e.stored(t)); diff != "" {
		t.Errorf("bad input changed the catalog (-before +after):\n%s", diff)
	}

	// A body over the limit is refused before it is parsed.
	token := e.MustKey(t, "alice", "acme", access.AllProjects(), access.AllScopes...)
	big := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"search_workspace","arguments":{"query":"` + strings.Repeat("a", 2<<20) + `"}}}`
	resp, err := http.DefaultClient.Do(mcpRequest(t.Context(), e.url, token, big))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusRequestEntityTooLarge {
		t.Errorf("huge body status = %d, want 413", resp.StatusCode)
	}
}

// TestDiscover speaks MCP revision 2026-07-28, whose server/discover
// replaces initialize, and checks that only tools and resources (the
// chart app) are declared.
func TestDiscover(t *testing.T) {
	e := newEnv(t, nil, "")
	token := e.MustKey(t, "vic", "acme", access.AllProjects(), access.ScopeDataRead)
	body := `{"jsonrpc":"2.0","id":1,"method":"server/discover","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}`
	req := mcpRequest(t.Context(), e.url, token, body)
	req.Header.Set("MCP-Protocol-Version", "2026-07-28")
	req.Header.Set("Mcp-Method", "server/discover")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var msg struct {
		Result struct {
			SupportedVersions []string       `json:"supportedVersions"`
			Capabilities      map[string]any `json:"capabilities"`
		} `json:"result"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&msg); err != nil {
		t.Fatalf("status %d: %v", resp.StatusCode, err)
	}
	if !slices.Contains(msg.Result.SupportedVersions, "2026-07-28") || !slices.Contains(msg.Result.SupportedVersions, "2025-06-18") {
		t.Errorf("supportedVersions = %v", msg.Result.SupportedVersions)
	}
	var caps []string
	for k := range msg.Result.Capabilities {
		caps = append(caps, k)
	}
	slices.Sort(caps)
	if diff := cmp.Diff([]string{"resources", "tools"}, caps); diff != "" {
		t.Errorf("capabilities mismatch (-want +got):\n%s", diff)
	}
}

// TestEnumsAreDataexecs: the tools' enums are dataexec's own, not copies.
func TestEnumsAreDataexecs(t *testing.T) {
	e := newEnv(t, nil, "")
	cs := e.MustConnect(t, e.MustKey(t, "alice", "acme", access.AllProjects(), access.AllScopes...))
	lt, err := cs.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	schemas := map[string]*jsonschema.Schema{}
	for _, tool := range lt.Tools {
		b, _ := json.Marshal(tool.InputSchema)
		var s jsonschema.Schema
		if err := json.Unmarshal(b, &s); err != nil {
			t.Fatal(err)
		}
		schemas[tool.Name] = &s
	}
	enum := func(s *jsonschema.Schema) []string {
		var out []string
		for _, v := range s.Enum {
			out = append(out, fmt.Sprint(v))
		}
		return out
	}
	strs := func(vs ...any) []string {
		var out []string
		for _, v := range vs {
			out = append(out, fmt.Sprint(v))
		}
		return out
	}
	var chartTypes, ops, types []any
	for _, c := range workspace.ChartTypes {
		chartTypes = append(chartTypes, c)
	}
	for _, o := range dataexec.FilterOps {
		ops = append(ops, o)
	}
	for _, ty := range dataexec.SearchTypes {
		types = append(types, ty)
	}
	for _, tc := range []struct {
		name string
		got  *jsonschema.Schema
		want []string
	}{
		{"create_chart_preview chart_type", schemas["create_chart_preview"].Properties["chart_type"], strs(chartTypes...)},
		{"run_dataset filter op", schemas["run_dataset"].Properties["filters"].Items.Properties["op"], strs(ops...)},
		{"get_chart_data filter op", schemas["get_chart_data"].Properties["filters"].Items.Properties["op"], strs(ops...)},
		{"search_workspace types", schemas["search_workspace"].Properties["types"].Items, strs(types...)},
		{"explore_data operation", schemas["explore_data"].Properties["operation"],
			strs(dataexec.ExploreInspect, dataexec.ExplorePreview, dataexec.ExploreSave)},
	} {
		if diff := cmp.Diff(tc.want, enum(tc.got)); diff != "" {
			t.Errorf("%s mismatch (-dataexec +tool):\n%s", tc.name, diff)
		}
	}
	for name, s := range schemas {
		if s.AdditionalProperties == nil || s.AdditionalProperties.Not == nil {
			t.Errorf("%s accepts unknown properties", name)
		}
	}
}

// TestOrigin: a present Origin that is neither BaseURL's nor one of
// Options.AllowedOrigins gets 403 (Streamable HTTP, 2025-11-25), before
// authentication; no Origin (a client outside a browser) is served.
func TestOrigin(t *testing.T) {
	e := newEnvWith(t, nil, "", func(o *mcpserver.Options, _ *access.TokenLookup) {
		o.AllowedOrigins = []string{"http://localhost:6274", "https://Inspector.example.com/"}
	})
	token := e.MustKey(t, "alice", "acme", access.AllProjects(), access.ScopeDataRead)
	list := `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`
	for _, tc := range []struct {
		origin, token string
		want          int
	}{
		{"", token, http.StatusOK},
		{"https://bi.example.com", token, http.StatusOK},
		{"http://localhost:6274", token, http.StatusOK},
		{"https://inspector.example.com", token, http.StatusOK},
		{"https://evil.example.com", token, http.StatusForbidden},
		{"https://evil.example.com", "", http.StatusForbidden},
		{"null", token, http.StatusForbidden},
		{"http://bi.example.com", token, http.StatusForbidden},
		{"https://bi.example.com:8443", token, http.StatusForbidden},
		{"https://bi.example.com.evil.example.com", token, http.StatusForbidden},
		{"http://localhost:6275", token, http.StatusForbidden},
		{"http://127.0.0.1:6274", token, http.StatusForbidden},
	} {
		t.Run(tc.origin+" "+fmt.Sprint(tc.token != ""), func(t *testing.T) {
			req := mcpRequest(t.Context(), e.url, tc.token, list)
			if tc.origin != "" {
				req.Header.Set("Origin", tc.origin)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			var re struct {
				Error struct {
					Data struct{ Code string } `json:"data"`
				} `json:"error"`
			}
			body, _ := io.ReadAll(resp.Body)
			if resp.StatusCode != tc.want {
				t.Fatalf("Origin %q: status %d %.200s, want %d", tc.origin, resp.StatusCode, body, tc.want)
			}
			if tc.want == http.StatusForbidden && (json.Unmarshal(body, &re) != nil || re.Error.Data.Code != "forbidden") {
				t.Errorf("Origin %q: body %s; want a JSON-RPC error with code forbidden", tc.origin, body)
			}
		})
	}
}

// TestOriginCORS: a browser page of an allowed origin can call the
// endpoint: its preflight is answered with the methods and headers
// Streamable HTTP uses, and its answers name that origin and expose the
// headers a client reads; another origin's preflight is refused like its
// requests, and a client outside a browser gets no CORS headers.
func TestOriginCORS(t *testing.T) {
	e := newEnvWith(t, nil, "", func(o *mcpserver.Options, _ *access.TokenLookup) {
		o.AllowedOrigins = []string{"http://localhost:6274"}
	})
	token := e.MustKey(t, "alice", "acme", access.AllProjects(), access.ScopeDataRead)
	do := func(req *http.Request) *http.Response {
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp
	}
	preflight := func(origin string) *http.Response {
		req, _ := http.NewRequestWithContext(t.Context(), http.MethodOptions, e.url, nil)
		req.Header.Set("Origin", origin)
		req.Header.Set("Access-Control-Request-Method", "POST")
		req.Header.Set("Access-Control-Request-Headers", "authorization, content-type, mcp-protocol-version")
		return do(req)
	}
	resp := preflight("http://localhost:6274")
	h := resp.Header
	if resp.StatusCode != http.StatusNoContent || h.Get("Access-Control-Allow-Origin") != "http://localhost:6274" ||
		!strings.Contains(h.Get("Access-Control-Allow-Methods"), "POST") || h.Get("Access-Control-Allow-Credentials") != "" {
		t.Errorf("allowed preflight: %d %v", resp.StatusCode, h)
	}
	for _, want := range []string{"Authorization", "Content-Type", "Mcp-Protocol-Version", "Mcp-Session-Id"} {
		if !strings.Contains(h.Get("Access-Control-Allow-Headers"), want) {
			t.Errorf("allowed preflight lets no %s header through: %q", want, h.Get("Access-Control-Allow-Headers"))
		}
	}
	if resp := preflight("https://evil.example.com"); resp.StatusCode != http.StatusForbidden || resp.Header.Get("Access-Control-Allow-Origin") != "" {
		t.Errorf("another origin's preflight: %d, Allow-Origin %q; want 403 and none", resp.StatusCode, resp.Header.Get("Access-Control-Allow-Origin"))
	}
	req := mcpRequest(t.Context(), e.url, token, `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`)
	req.Header.Set("Origin", "http://localhost:6274")
	if resp := do(req); resp.StatusCode != http.StatusOK || resp.Header.Get("Access-Control-Allow-Origin") != "http://localhost:6274" ||
		!strings.Contains(resp.Header.Get("Access-Control-Expose-Headers"), "WWW-Authenticate") {
		t.Errorf("allowed request: %d %v", resp.StatusCode, resp.Header)
	}
	req = mcpRequest(t.Context(), e.url, "", `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`)
	req.Header.Set("Origin", "http://localhost:6274")
	if resp := do(req); resp.StatusCode != http.StatusUnauthorized || resp.Header.Get("Access-Control-Allow-Origin") == "" {
		t.Errorf("allowed request without a token: %d, Allow-Origin %q; want 401 the page can read", resp.StatusCode, resp.Header.Get("Access-Control-Allow-Origin"))
	}
	if resp := do(mcpRequest(t.Context(), e.url, token, `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`)); resp.Header.Get("Access-Control-Allow-Origin") != "" {
		t.Errorf("a request without Origin got CORS headers: %v", resp.Header)
	}
}

// TestSchemaMessages: an input that fails a tool's schema is
// invalid_argument with a message in words that names the value by its
// path, never the validator's internals.
func TestSchemaMessages(t *testing.T) {
	e := newEnv(t, nil, "")
	cs := e.MustConnect(t, e.MustKey(t, "alice", "acme", access.AllProjects(), access.AllScopes...))
	filter := func(f ...map[string]any) map[string]any {
		fs := make([]any, len(f))
		for i, x := range f {
			fs[i] = x
		}
		return map[string]any{"dataset_id": "ds_signups", "filters": fs}
	}
	many := func(n int, v any) []any {
		out := make([]any, n)
		for i := range out {
			out[i] = v
		}
		return out
	}
	vars := map[string]any{}
	for i := range 21 {
		vars[fmt.Sprint("v", i)] = 1
	}
	preview := map[string]any{"dataset_id": "ds_signups", "chart_type": "line", "x_field": "week", "y_fields": []any{}, "name": "x"}
	for _, tc := range []struct {
		tool string
		args map[string]any
		want string
	}{
		{"search_workspace", map[string]any{"limit": 0}, "limit must be at least 1"},
		{"search_workspace", map[string]any{"limit": 51}, "limit must be at most 50"},
		{"search_workspace", map[string]any{"limit": "5"}, "limit must be an integer"},
		{"search_workspace", map[string]any{"limit": 2.5}, "limit must be an integer"},
		{"search_workspace", map[string]any{"limit": nil}, "limit must be an integer, not null"},
		{"search_workspace", map[string]any{"types": []any{"report"}}, "types[0] must be one of dashboard, chart, dataset, connection"},
		{"run_dataset", map[string]any{"dataset_id": "ds_signups", "sql": "DELETE FROM t"}, "sql is not a known argument"},
		{"get_chart_data", map[string]any{}, "chart_id is required"},
		{"run_dataset", map[string]any{"dataset_id": ""}, "dataset_id must not be empty"},
		{"run_dataset", map[string]any{"dataset_id": strings.Repeat("d", 101)}, "dataset_id must be at most 100 characters"},
		{"run_dataset", map[string]any{"dataset_id": "ds_signups", "max_bytes": 99999}, "max_bytes must be at most 40000"},
		{"run_dataset", filter(map[string]any{"field": "week", "op": "like", "value": "x"}), "filters[0].op must be one of eq, ne, gt, gte, lt, lte, contains, in"},
		{"run_dataset", filter(map[string]any{"field": "week", "op": "eq", "value": map[string]any{"a": 1}}), "filters[0].value must be a string, number, boolean, null or array"},
		{"run_dataset", filter(map[string]any{"field": "week", "op": "in", "value": many(101, 1)}), "filters[0].value must have at most 100 items"},
		{"run_dataset", filter(map[string]any{"field": "week", "op": "in", "value": []any{1, []any{2}}}), "filters[0].value[1] must be a string, number, boolean or null"},
		{"run_dataset", filter(map[string]any{"field": "week", "op": "eq", "value": 1}, map[string]any{"op": "eq", "value": 1}), "filters[1].field is required"},
		{"run_dataset", filter(map[string]any{"field": "week", "op": "eq", "value": 1, "x": 1}), "filters[0].x is not a known property"},
		{"get_chart_data", map[string]any{"chart_id": "chart_signups", "filters": many(21, map[string]any{"field": "week", "op": "eq", "value": 1})}, "filters must have at most 20 items"},
		{"run_dataset", map[string]any{"dataset_id": "ds_signups", "variables": vars}, "variables must have at most 20 properties"},
		{"create_chart_preview", preview, "y_fields must have at least 1 item"},
	} {
		t.Run(tc.want, func(t *testing.T) {
			out, res := call(t, cs, tc.tool, tc.args)
			if !res.IsError || out["code"] != "invalid_argument" || out["message"] != tc.want {
				t.Errorf("%s(%v) = isError %v, %v; want invalid_argument %q", tc.tool, tc.args, res.IsError, out, tc.want)
			}
		})
	}
	// Arguments that are not an object, as a raw client may send them;
	// none at all are an empty object.
	token := e.MustKey(t, "alice", "acme", access.AllProjects(), access.AllScopes...)
	body := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"search_workspace","arguments":[1]}}`
	if _, _, b := postMCP(t, e.url, token, body); !strings.Contains(string(b), `"structuredContent":{"code":"invalid_argument","message":"arguments must be an object"}`) {
		t.Errorf("arguments [1]: %.300s; want invalid_argument \"arguments must be an object\"", b)
	}
	if r := mustCallRaw(t, e.url, token, "search_workspace", nil); r.isError {
		t.Errorf("no arguments: %v", r.data)
	}
}

// TestNoBooleanSchemas: no schema of tools/list holds a bare true or
// false where a schema object is expected (additionalProperties aside):
// the MCP Inspector's --strict check refuses them as unportable.
func TestNoBooleanSchemas(t *testing.T) {
	e := newEnv(t, nil, "")
	token := e.MustKey(t, "alice", "acme", access.AllProjects(), access.AllScopes...)
	_, _, body := postMCP(t, e.url, token, `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`)
	var msg struct {
		Result struct {
			Tools []struct {
				Name         string `json:"name"`
				InputSchema  any    `json:"inputSchema"`
				OutputSchema any    `json:"outputSchema"`
			} `json:"tools"`
		} `json:"result"`
	}
	if err := json.Unmarshal(body, &msg); err != nil || len(msg.Result.Tools) != len(toolOrder) {
		t.Fatalf("tools/list %.200s: %v", body, err)
	}
	var walk func(tool, path string, s any)
	walk = func(tool, path string, s any) {
		switch v := s.(type) {
		case bool:
			t.Errorf("%s: %s is the bare schema %v", tool, path, v)
		case map[string]any:
			for _, k := range []string{"items", "not", "contains", "propertyNames", "if", "then", "else"} {
				if sub, ok := v[k]; ok {
					walk(tool, path+"."+k, sub)
				}
			}
			if sub, ok := v["additionalProperties"].(map[string]any); ok {
				walk(tool, path+".additionalProperties", sub)
			}
			for _, k := range []string{"anyOf", "allOf", "oneOf", "prefixItems"} {
				list, _ := v[k].([]any)
				for i, sub := range list {
					walk(tool, fmt.Sprintf("%s.%s[%d]", path, k, i), sub)
				}
			}
			for _, k := range []string{"properties", "$defs", "patternProperties"} {
				m, _ := v[k].(map[string]any)
				for name, sub := range m {
					walk(tool, path+"."+k+"."+name, sub)
				}
			}
		}
	}
	for _, tool := range msg.Result.Tools {
		walk(tool.Name, "inputSchema", tool.InputSchema)
		walk(tool.Name, "outputSchema", tool.OutputSchema)
	}
}

// TestChartImageFailure (seed 000 Test Plan: "optional image failure
// preserves the chart link"): when the PNG of create_chart_preview cannot
// be drawn, or the host offers no images (Options.ChartImage nil), the
// preview is created and stored all the same, its reference, link and
// data come back, and the answer says the image is unavailable instead of
// carrying one.
func TestChartImageFailure(t *testing.T) {
	tests := []struct {
		name      string
		draw      func(string, *dataexec.ChartData) ([]byte, error)
		wantError string
	}{
		{"drawing fails", func(string, *dataexec.ChartData) ([]byte, error) { return nil, errors.New("the renderer failed") }, "could not be drawn"},
		{"no drawer", nil, "draws no chart images"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t, nil, "")
			exec := dataexec.NewExecutor(e.catalog, dataexec.SourceMap{"conn_acme": e.source, "conn_globex": e.source}, nil)
			srv := mcpserver.New(exec, access.NewGate(e.checker, nil), e.keys.Verify, &mcpserver.Options{BaseURL: "https://bi.example.com", ChartImage: tt.draw})
			hs := httptest.NewServer(srv)
			t.Cleanup(hs.Close)
			cs := MustConnectTo(t, hs.URL, e.MustKey(t, "alice", "acme", access.AllProjects(), access.AllScopes...))
			out, res := call(t, cs, "create_chart_preview", map[string]any{
				"dataset_id": "ds_signups", "chart_type": "bar", "x_field": "week", "y_fields": []any{"signups"}, "name": "Signups bar", "image": true,
			})
			chart, _ := out["chart"].(map[string]any)
			id, _ := chart["id"].(string)
			if res.IsError || out["status"] != "preview" || id == "" || chart["url"] != "https://bi.example.com/previews/"+id {
				t.Fatalf("create_chart_preview with a failing image = isError %v, %v; want the preview and its link", res.IsError, out)
			}
			if c, err := e.catalog.Chart(context.Background(), id); err != nil || c.Name != "Signups bar" || c.DashboardID != "" {
				t.Errorf("the preview chart %v, %v: want it stored, on no dashboard", c, err)
			}
			if ds, _ := out["datasets"].([]any); len(ds) != 1 || len(out["labels"].([]any)) != 3 {
				t.Errorf("datasets %v, labels %v: want the dataset reference and the chart's data", out["datasets"], out["labels"])
			}
			if msg, _ := out["image_error"].(string); !strings.Contains(msg, tt.wantError) {
				t.Errorf("image_error = %q; want it to say %q", msg, tt.wantError)
			}
			if text := res.Content[0].(*mcp.TextContent).Text; !strings.Contains(text, "image is unavailable") || !strings.Contains(text, chart["url"].(string)) {
				t.Errorf("summary %q: want the link and that the image is unavailable", text)
			}
			for _, c := range res.Content {
				if _, ok := c.(*mcp.ImageContent); ok {
					t.Error("an image came with the failure")
				}
			}
		})
	}
}
