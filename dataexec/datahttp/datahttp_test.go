package datahttp_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/askbi/askbi"
	"github.com/askbi/askbi/access"
	"github.com/askbi/askbi/access/accesstest"
	"github.com/askbi/askbi/dataexec"
	"github.com/askbi/askbi/dataexec/datahttp"
	"github.com/askbi/askbi/mcpserver"
	"github.com/askbi/askbi/workspace"
)

// env is the Data API and the MCP server over one executor, as a host
// serves them: team acme (growth and finance: alice owner, bob editor on
// growth only, vic viewer) and team globex (carol owner).
type env struct {
	url     string // the Data API, at /api
	mcpURL  string
	exec    *dataexec.Executor
	cat     *workspace.MemoryCatalog
	checker *access.Checker
	keys    *access.Keys
	audit   *access.MemoryAudit
}

var sessions = accesstest.Sessions

const (
	sqlWeeks   = "SELECT week, signups FROM weekly_signups"
	sqlCountry = "SELECT country, signups FROM signups_by_country"
	sqlMRR     = "SELECT month, mrr FROM mrr"
	sqlTickets = "SELECT day, opened FROM tickets"
)

// MustEnv builds the workspace; maxRows is the executor's row cap.
func MustEnv(t *testing.T, maxRows int) *env {
	t.Helper()
	now := time.Date(2026, 11, 20, 12, 0, 0, 0, time.UTC)
	dir, cat := accesstest.Teams(), workspace.NewMemoryCatalog()
	weeks := &dataexec.Table{Columns: []string{"week", "signups"}}
	for i := range 12 {
		weeks.Rows = append(weeks.Rows, []any{time.Date(2026, 9, 7+7*i, 0, 0, 0, 0, time.UTC).Format("2006-01-02"), int64(1180 + 37*i)})
	}
	src := dataexec.NewTableSource(map[string]*dataexec.Table{
		sqlWeeks:   weeks,
		sqlCountry: {Columns: []string{"country", "signups"}, Rows: [][]any{{"US", int64(3410)}, {"DE", int64(3322)}, {"BR", int64(3305)}}},
		sqlMRR:     {Columns: []string{"month", "mrr"}, Rows: [][]any{{"2026-10", json.Number("1000.50")}}},
		sqlTickets: {Columns: []string{"day", "opened"}, Rows: [][]any{{"2026-11-01", int64(4)}}},
	})
	cat.PutConnection(workspace.Connection{ID: "conn_acme", TeamID: "acme", Name: "Warehouse", Type: "postgres", Active: true, UpdatedAt: now})
	cat.PutConnection(workspace.Connection{ID: "conn_globex", TeamID: "globex", Name: "Globex DB", Type: "postgres", Active: true, UpdatedAt: now})
	cat.PutDashboard(workspace.Dashboard{ID: "dash_growth", TeamID: "acme", ProjectID: "growth", Name: "Growth overview", UpdatedAt: now})
	cat.PutDashboard(workspace.Dashboard{ID: "dash_fin", TeamID: "acme", ProjectID: "finance", Name: "Finance", UpdatedAt: now})
	cat.PutDashboard(workspace.Dashboard{ID: "dash_ops", TeamID: "globex", ProjectID: "ops", Name: "Support", UpdatedAt: now})
	ds := func(id, team, project, conn, name, sql string) {
		cat.PutDataset(workspace.Dataset{ID: id, TeamID: team, ProjectID: project, Name: name, Version: 1, UpdatedAt: now,
			Request: workspace.Request{ConnectionID: conn, SQL: sql}})
	}
	ds("ds_weeks", "acme", "growth", "conn_acme", "Weekly signups", sqlWeeks)
	ds("ds_country", "acme", "growth", "conn_acme", "Signups by country", sqlCountry)
	ds("ds_mrr", "acme", "finance", "conn_acme", "MRR", sqlMRR)
	ds("ds_tickets", "globex", "ops", "conn_globex", "Tickets by day", sqlTickets)
	chart := func(id, team, project, dash, name, dsID, x, y string) {
		cat.PutChart(workspace.Chart{ID: id, TeamID: team, ProjectID: project, DashboardID: dash, Name: name,
			Type: workspace.ChartBar, DatasetID: dsID, XField: x, YFields: []string{y}, UpdatedAt: now})
	}
	chart("chart_weeks", "acme", "growth", "dash_growth", "Weekly signups", "ds_weeks", "week", "signups")
	chart("chart_mrr", "acme", "finance", "dash_fin", "MRR", "ds_mrr", "month", "mrr")
	chart("chart_tickets", "globex", "ops", "dash_ops", "Tickets", "ds_tickets", "day", "opened")
	// A Growth chart drawn from a Finance dataset: bob reaches the chart's
	// project but not its data.
	chart("chart_cross", "acme", "growth", "dash_growth", "MRR on Growth", "ds_mrr", "month", "mrr")

	e := &env{cat: cat, checker: access.NewChecker(dir, nil), audit: access.NewMemoryAudit(1000)}
	e.exec = dataexec.NewExecutor(cat, dataexec.SourceMap{"conn_acme": src, "conn_globex": src},
		&dataexec.Options{MaxRows: maxRows, Audit: e.audit, Links: dataexec.PublicLinks("https://bi.example.com")})
	gate := access.NewGate(e.checker, access.NewMemoryRateLimiter(&access.RateOptions{Burst: 1000, Rate: 1000}))
	e.keys = access.NewKeys(access.NewMemoryKeyStore(), dir, nil)
	// The host's authentication: a demo session, or an API key (whose
	// scopes the executor applies).
	authn := func(r *http.Request) (access.Principal, error) {
		tok, _ := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
		if name, ok := strings.CutPrefix(tok, "session-"); ok {
			if p, ok := sessions[name]; ok {
				return p, nil
			}
		}
		if p, err := e.keys.Verify(r.Context(), tok); err == nil {
			return p, nil
		}
		return access.Principal{}, askbi.Errorf(askbi.Unauthenticated, "sign in")
	}
	mux := http.NewServeMux()
	mux.Handle("/api/", datahttp.New(e.exec, gate, authn, nil))
	mux.Handle("/mcp", mcpserver.New(e.exec, gate, e.keys.Verify, &mcpserver.Options{BaseURL: "https://bi.example.com"}))
	hs := httptest.NewServer(mux)
	t.Cleanup(hs.Close)
	e.url, e.mcpURL = hs.URL, hs.URL+"/mcp"
	return e
}

// MustKey creates an API key of user in team with scopes.
func (e *env) MustKey(t *testing.T, user, team string, scopes ...string) string {
	t.Helper()
	owner, err := e.checker.Live(context.Background(), access.Principal{UserID: user, TeamID: team, Auth: access.AuthSession})
	if err != nil {
		t.Fatal(err)
	}
	secret, _, err := e.keys.Create(context.Background(), owner, access.KeyRequest{Name: "test", Scopes: scopes, Projects: access.AllProjects()})
	if err != nil {
		t.Fatal(err)
	}
	return secret
}

// do sends one request with token and returns the status and the body.
func (e *env) do(t *testing.T, method, path, token, body string, hdr ...string) (int, map[string]any) {
	t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, e.url+path, rd)
	if err != nil {
		t.Fatal(err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	var doc map[string]any
	if err := json.NewDecoder(res.Body).Decode(&doc); err != nil {
		t.Fatalf("%s %s: body is not JSON: %v", method, path, err)
	}
	return res.StatusCode, doc
}

func code(doc map[string]any) string {
	e, _ := doc["error"].(map[string]any)
	s, _ := e["code"].(string)
	return s
}

// TestAccess: the routes behind the pages answer 404 for what the user
// cannot see, exactly as for what does not exist.
func TestAccess(t *testing.T) {
	e := MustEnv(t, 0)
	for _, tc := range []struct {
		name, user, path string
		want             int
	}{
		{"own chart", "alice", "/api/charts/chart_weeks", 200},
		{"another team's chart", "carol", "/api/charts/chart_weeks", 404},
		{"another team's chart data", "carol", "/api/charts/chart_weeks/data", 404},
		{"another team's dataset", "carol", "/api/datasets/ds_weeks/data", 404},
		{"another team's dashboard", "carol", "/api/dashboards/dash_growth", 404},
		{"a project out of reach", "bob", "/api/charts/chart_mrr", 404},
		{"a dataset out of reach", "bob", "/api/datasets/ds_mrr/data", 404},
		{"a chart whose dataset is out of reach", "bob", "/api/charts/chart_cross", 404},
		{"its data too", "bob", "/api/charts/chart_cross/data", 404},
		{"a dashboard out of reach", "bob", "/api/dashboards/dash_fin", 404},
		{"unknown chart", "alice", "/api/charts/chart_nope", 404},
		{"viewer reads", "vic", "/api/charts/chart_cross", 200},
		{"no session", "", "/api/charts/chart_weeks", 401},
		{"unknown route, signed in", "alice", "/api/nope", 404},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tok := ""
			if tc.user != "" {
				tok = "session-" + tc.user
			}
			status, doc := e.do(t, "GET", tc.path, tok, "")
			if status != tc.want {
				t.Fatalf("GET %s as %q = %d %v, want %d", tc.path, tc.user, status, doc, tc.want)
			}
			if status == 404 && (code(doc) != "not_found" || strings.Contains(fmt.Sprint(doc), "MRR")) {
				t.Errorf("404 body %v: want not_found revealing nothing", doc)
			}
		})
	}
	status, doc := e.do(t, "GET", "/api/dashboards/dash_growth", "session-bob", "")
	d, _ := doc["dashboard"].(map[string]any)
	if status != 200 || d["name"] != "Growth overview" || d["url"] != "https://bi.example.com/dashboards/dash_growth" {
		t.Errorf("dashboard = %d %v", status, doc)
	}
	// Its charts, for the page to draw: those on it, and no other.
	var names []string
	charts, _ := doc["charts"].([]any)
	for _, c := range charts {
		c := c.(map[string]any)
		names = append(names, fmt.Sprint(c["name"]))
		if !strings.HasPrefix(fmt.Sprint(c["url"]), "https://bi.example.com/charts/") {
			t.Errorf("chart %v: no page URL", c)
		}
	}
	slices.Sort(names)
	if want := []string{"MRR on Growth", "Weekly signups"}; !slices.Equal(names, want) {
		t.Errorf("the dashboard's charts = %v, want %v", names, want)
	}
}

// MustPreview creates a preview of ds_country as user.
func (e *env) MustPreview(t *testing.T, user string) string {
	t.Helper()
	live, err := e.checker.Live(context.Background(), sessions[user])
	if err != nil {
		t.Fatal(err)
	}
	cr, err := e.exec.CreateChartPreview(context.Background(), live, dataexec.ChartSpec{DatasetID: "ds_country", Name: "By country",
		Type: workspace.ChartBar, XField: "country", YFields: []string{"signups"}})
	if err != nil {
		t.Fatal(err)
	}
	return cr.Chart.ID
}

// TestPreviewPage: the preview page's view offers placement only to a
// user who may edit a dashboard of its project; placing goes through the
// executor's placement (a viewer is refused and nothing changes), and the
// page stays valid afterwards, showing the chart saved.
func TestPreviewPage(t *testing.T) {
	e := MustEnv(t, 0)
	id := e.MustPreview(t, "alice")
	viewOf := func(user, id string) datahttp.View {
		t.Helper()
		status, doc := e.do(t, "GET", "/api/charts/"+id, "session-"+user, "")
		if status != 200 {
			t.Fatalf("view as %s = %d %v", user, status, doc)
		}
		var v datahttp.View
		b, _ := json.Marshal(doc)
		json.Unmarshal(b, &v)
		return v
	}
	view := func(user string) datahttp.View { t.Helper(); return viewOf(user, id) }
	names := func(refs []dataexec.Ref) []string {
		out := []string{}
		for _, r := range refs {
			out = append(out, r.Name)
		}
		return out
	}
	v := view("alice")
	if v.Chart.Status != workspace.StatusPreview || v.Chart.Data == nil || len(v.Chart.Data.Labels) != 3 {
		t.Errorf("preview view = %+v", v.Chart)
	}
	if diff := cmp.Diff([]string{"Growth overview"}, names(v.PlaceOn)); diff != "" {
		t.Errorf("alice's place_on mismatch (-want +got):\n%s", diff)
	}
	if v.Links.Chart != "https://bi.example.com/previews/"+id || v.Links.Datasets["ds_country"] != "https://bi.example.com/datasets/ds_country" {
		t.Errorf("preview links = %+v", v.Links)
	}
	// A read-only user sees her own preview with nowhere to place it,
	// and cannot place it by hand either. (Another member's preview she
	// does not see at all: TestPreviewPrivate.)
	vics := e.MustPreview(t, "vic")
	if got := viewOf("vic", vics).PlaceOn; len(got) != 0 {
		t.Errorf("viewer's place_on = %v, want none", names(got))
	}
	if status, doc := e.do(t, "POST", "/api/charts/"+vics+"/add-to-dashboard", "session-vic", `{"dashboard_id":"dash_growth"}`); status != 403 {
		t.Errorf("viewer's placement = %d %v, want 403", status, doc)
	}
	if c, _ := e.cat.Chart(context.Background(), vics); c.DashboardID != "" {
		t.Fatalf("the viewer's refused placement moved the chart to %q", c.DashboardID)
	}
	if status, doc := e.do(t, "POST", "/api/charts/"+id+"/add-to-dashboard", "session-alice", `{"dashboard_id":"dash_growth"}`,
		"Origin", "https://evil.example", "Sec-Fetch-Site", "cross-site"); status != 403 {
		t.Errorf("cross-origin placement = %d %v, want 403", status, doc)
	}
	if status, doc := e.do(t, "POST", "/api/charts/"+id+"/add-to-dashboard", "session-alice", `{"dashboard_id":"dash_nope"}`); status != 404 {
		t.Errorf("placement on an unknown dashboard = %d %v", status, doc)
	}
	if status, doc := e.do(t, "POST", "/api/charts/"+id+"/add-to-dashboard", "session-alice", `{}`); status != 400 || code(doc) != "invalid_argument" {
		t.Errorf("placement without a dashboard = %d %v", status, doc)
	}
	status, doc := e.do(t, "POST", "/api/charts/"+id+"/add-to-dashboard", "session-alice", `{"dashboard_id":"dash_growth"}`)
	if ch, _ := doc["chart"].(map[string]any); status != 200 || ch["status"] != "saved" {
		t.Fatalf("placement = %d %v", status, doc)
	}
	if n := countAudit(e.audit, dataexec.ActionChartPlace, access.OutcomeOK); n != 1 {
		t.Errorf("%d placements audited, want 1", n)
	}
	// The link the user followed still works, and now shows it saved.
	v = view("alice")
	if v.Chart.Status != workspace.StatusSaved || v.Chart.Dashboard == nil || v.Chart.Dashboard.ID != "dash_growth" || len(v.PlaceOn) != 0 {
		t.Errorf("view after placement = %+v, place_on %v", v.Chart, v.PlaceOn)
	}
	if v.Links.Chart != "https://bi.example.com/charts/"+id || v.Links.Dashboard != "https://bi.example.com/dashboards/dash_growth" {
		t.Errorf("links after placement = %+v", v.Links)
	}
	// Placing again is a conflict, not a second chart.
	if status, _ := e.do(t, "POST", "/api/charts/"+id+"/add-to-dashboard", "session-alice", `{"dashboard_id":"dash_growth"}`); status != 409 {
		t.Errorf("second placement = %d, want 409", status)
	}
}

func countAudit(a *access.MemoryAudit, action, outcome string) int {
	n := 0
	for _, en := range a.Entries() {
		if en.Action == action && en.Outcome == outcome {
			n++
		}
	}
	return n
}

// TestParams: filters, variables and refresh are read strictly, and a
// token's scopes apply as on MCP.
func TestParams(t *testing.T) {
	e := MustEnv(t, 0)
	q := func(kv ...string) string {
		v := url.Values{}
		for i := 0; i+1 < len(kv); i += 2 {
			v.Set(kv[i], kv[i+1])
		}
		return "?" + v.Encode()
	}
	status, doc := e.do(t, "GET", "/api/datasets/ds_country/data"+q("filters", `[{"field":"country","op":"eq","value":"DE"}]`), "session-alice", "")
	if diff := cmp.Diff([]any{[]any{"DE", 3322.0}}, doc["rows"]); status != 200 || diff != "" {
		t.Errorf("filtered = %d, rows mismatch (-want +got):\n%s", status, diff)
	}
	read := e.MustKey(t, "alice", "acme", "data:read")
	for _, tc := range []struct {
		name, path, token string
		status            int
		code              string
	}{
		{"bad filters", "/api/datasets/ds_country/data" + q("filters", `{"field":"country"}`), "session-alice", 400, "invalid_argument"},
		{"unknown filter key", "/api/datasets/ds_country/data" + q("filters", `[{"field":"country","op":"eq","value":"DE","x":1}]`), "session-alice", 400, "invalid_argument"},
		{"unknown filter field", "/api/datasets/ds_country/data" + q("filters", `[{"field":"nope","op":"eq","value":1}]`), "session-alice", 400, "invalid_argument"},
		{"bad variables", "/api/charts/chart_weeks/data" + q("variables", `[1]`), "session-alice", 400, "invalid_argument"},
		{"bad refresh", "/api/charts/chart_weeks/data" + q("refresh", "yes"), "session-alice", 400, "invalid_argument"},
		{"unknown parameter", "/api/charts/chart_weeks/data" + q("limit", "5"), "session-alice", 400, "invalid_argument"},
		{"API key reads", "/api/charts/chart_weeks/data", read, 200, ""},
		{"refresh needs data:refresh", "/api/charts/chart_weeks/data" + q("refresh", "true"), read, 403, "scope_required"},
		{"session refreshes", "/api/charts/chart_weeks/data" + q("refresh", "true"), "session-alice", 200, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			status, doc := e.do(t, "GET", tc.path, tc.token, "")
			if status != tc.status || code(doc) != tc.code {
				t.Errorf("GET %s = %d %s %v, want %d %s", tc.path, status, code(doc), doc, tc.status, tc.code)
			}
		})
	}
}

// TestSameAsMCP is seed 000's Test Plan item "The same chart and dataset
// request produces the same bounded data result through Data API and
// MCP": the same dataset and chart requests, with filters and a row cap
// that cuts them, give the same rows, truncation and data date both ways.
func TestSameAsMCP(t *testing.T) {
	e := MustEnv(t, 5) // a row cap that cuts the 12 weeks
	key := e.MustKey(t, "alice", "acme", "data:read", "data:refresh")
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "datahttp-test", Version: "1"}, nil).Connect(context.Background(),
		&mcp.StreamableClientTransport{Endpoint: e.mcpURL, HTTPClient: &http.Client{Transport: bearer(key)}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	tool := func(name string, args map[string]any) map[string]any {
		t.Helper()
		res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: name, Arguments: args})
		if err != nil || res.IsError {
			t.Fatalf("%s: %v %+v", name, err, res)
		}
		b, _ := json.Marshal(res.StructuredContent)
		var out map[string]any
		json.Unmarshal(b, &out)
		return out
	}
	// bounded is what both must agree on.
	bounded := func(doc map[string]any, keys ...string) map[string]any {
		out := map[string]any{}
		for _, k := range append(keys, "row_count", "truncated", "truncated_reason", "data_date", "warning") {
			out[k] = doc[k]
		}
		return out
	}
	filters := `[{"field":"signups","op":"gte","value":1200}]`
	for _, tc := range []struct {
		name, tool, path string
		args             map[string]any
		keys             []string
	}{
		{"dataset", "run_dataset", "/api/datasets/ds_weeks/data", map[string]any{"dataset_id": "ds_weeks"}, []string{"columns", "rows"}},
		{"dataset, filtered", "run_dataset", "/api/datasets/ds_weeks/data?filters=" + url.QueryEscape(filters),
			map[string]any{"dataset_id": "ds_weeks", "filters": json.RawMessage(filters)}, []string{"columns", "rows"}},
		{"chart", "get_chart_data", "/api/charts/chart_weeks/data", map[string]any{"chart_id": "chart_weeks"}, []string{"labels", "series"}},
		{"chart, filtered", "get_chart_data", "/api/charts/chart_weeks/data?filters=" + url.QueryEscape(filters),
			map[string]any{"chart_id": "chart_weeks", "filters": json.RawMessage(filters)}, []string{"labels", "series"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			status, api := e.do(t, "GET", tc.path, key, "")
			if status != 200 {
				t.Fatalf("Data API = %d %v", status, api)
			}
			viaMCP := tool(tc.tool, tc.args)
			want, got := bounded(viaMCP, tc.keys...), bounded(api, tc.keys...)
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("Data API and MCP differ (-mcp +api):\n%s", diff)
			}
			if got["truncated"] != true || got["data_date"] == nil || got["data_date"] == "" {
				t.Errorf("result = %v: want it cut by the row cap and dated", got)
			}
		})
	}
}

type bearer string

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+string(b))
	return http.DefaultTransport.RoundTrip(r)
}
