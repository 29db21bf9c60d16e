package datahttp_test

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestPreviewPrivate: alice's chart preview is hers until she places it.
// To bob (an editor of its project) and vic (a viewer), by session or API
// key, the Data API's chart routes and placement, and MCP's
// search_workspace and get_chart_data, answer exactly as for a chart that
// does not exist, and nothing changes. Once alice places it, it is the
// team's.
func TestPreviewPrivate(t *testing.T) {
	e := MustEnv(t, 0)
	id := e.MustPreview(t, "alice")
	const unknown = "chart_nope"

	// answer is a Data API route's answer for chart c, with c's ID
	// replaced, so that a preview's and an unknown chart's compare.
	answer := func(method, route, token, c, body string) string {
		t.Helper()
		status, doc := e.do(t, method, strings.ReplaceAll(route, "{id}", c), token, body)
		b, _ := json.Marshal(doc)
		return http.StatusText(status) + " " + strings.ReplaceAll(string(b), c, "{id}")
	}
	routes := []struct{ method, route, body string }{
		{"GET", "/api/charts/{id}", ""},
		{"GET", "/api/charts/{id}/data", ""},
		{"POST", "/api/charts/{id}/add-to-dashboard", `{"dashboard_id":"dash_growth"}`},
	}
	// tool is an MCP tool's structured answer as who.
	connect := func(user string) *mcp.ClientSession {
		t.Helper()
		cs, err := mcp.NewClient(&mcp.Implementation{Name: "datahttp-test", Version: "1"}, nil).Connect(context.Background(),
			&mcp.StreamableClientTransport{Endpoint: e.mcpURL, HTTPClient: &http.Client{Transport: bearer(e.MustKey(t, user, "acme", "data:read"))}}, nil)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { cs.Close() })
		return cs
	}
	tool := func(cs *mcp.ClientSession, name string, args map[string]any) (bool, string) {
		t.Helper()
		res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: name, Arguments: args})
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		b, _ := json.Marshal(res.StructuredContent)
		return res.IsError, string(b)
	}
	listed := func(cs *mcp.ClientSession) bool {
		t.Helper()
		isErr, out := tool(cs, "search_workspace", map[string]any{"query": "By country"})
		if isErr || !strings.Contains(out, `"ds_country"`) {
			t.Fatalf("search_workspace = %s; want at least the dataset", out)
		}
		return strings.Contains(out, id)
	}

	for _, who := range []string{"bob", "vic"} {
		t.Run(who, func(t *testing.T) {
			for _, token := range []string{"session-" + who, e.MustKey(t, who, "acme", "data:read")} {
				for _, r := range routes {
					want := answer(r.method, r.route, token, unknown, r.body)
					if !strings.HasPrefix(want, "Not Found") && !strings.HasPrefix(want, "Forbidden") {
						t.Fatalf("%s %s of an unknown chart = %s", r.method, r.route, want)
					}
					if got := answer(r.method, r.route, token, id, r.body); got != want {
						t.Errorf("%s %s of alice's preview = %s; want what an unknown chart gets, %s", r.method, r.route, got, want)
					}
				}
			}
			cs := connect(who)
			if listed(cs) {
				t.Error("search_workspace lists alice's preview")
			}
			wantErr, want := tool(cs, "get_chart_data", map[string]any{"chart_id": unknown})
			gotErr, got := tool(cs, "get_chart_data", map[string]any{"chart_id": id})
			if !wantErr || !gotErr || got != strings.ReplaceAll(want, unknown, id) {
				t.Errorf("get_chart_data of alice's preview = %v %s; want what an unknown chart gets, %v %s", gotErr, got, wantErr, want)
			}
		})
	}
	if c, err := e.cat.Chart(context.Background(), id); err != nil || c.DashboardID != "" || c.CreatedBy != "alice" {
		t.Fatalf("alice's preview after the others' calls = %+v, %v", c, err)
	}

	// Alice reaches it, and once she places it, so does the team.
	if !listed(connect("alice")) {
		t.Error("search_workspace does not list alice's preview to alice")
	}
	if status, doc := e.do(t, "POST", "/api/charts/"+id+"/add-to-dashboard", "session-alice", `{"dashboard_id":"dash_growth"}`); status != 200 {
		t.Fatalf("alice's placement = %d %v", status, doc)
	}
	for _, who := range []string{"bob", "vic"} {
		if status, doc := e.do(t, "GET", "/api/charts/"+id+"/data", "session-"+who, ""); status != 200 {
			t.Errorf("%s reading the placed chart = %d %v", who, status, doc)
		}
		if !listed(connect(who)) {
			t.Errorf("search_workspace does not list the placed chart to %s", who)
		}
	}
	if diff := cmp.Diff(1, countAudit(e.audit, "chart.place", "ok")); diff != "" {
		t.Errorf("placements audited (-want +got):\n%s", diff)
	}
}
