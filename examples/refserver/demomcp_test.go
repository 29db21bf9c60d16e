package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/askbi/askbi"
	"github.com/askbi/askbi/access"
	"github.com/askbi/askbi/ask"
	"github.com/askbi/askbi/connections"
	"github.com/askbi/askbi/dataexec"
	"github.com/askbi/askbi/internal/chattest"
	"github.com/askbi/askbi/internal/pgtest"
)

// The demo's remote MCP connection works with no setup, on both storages:
// its dataset runs the tool through the outbound client, maps the tuples
// and draws the chart; the connection is in search; another team cannot
// see it; a restart re-seeds it.
func TestDemoMCPConnection(t *testing.T) {
	for _, tc := range []struct {
		name string
		edit func(*config)
	}{
		{"in memory", nil},
		{"PostgreSQL", func(c *config) { c.inMemory, c.databaseURL = false, pgtest.MustDatabase(t) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for run := range 2 { // the second start re-seeds over the first's state
				ta := MustApp(t, tc.edit)
				live, err := ta.gate.Begin(t.Context(), access.Principal{UserID: "alice", TeamID: teamAcme, Auth: access.AuthSession})
				if err != nil {
					t.Fatal(err)
				}
				res, err := ta.executor.RunDataset(t.Context(), live, demoTopPagesDS, dataexec.Params{Refresh: true})
				if err != nil {
					t.Fatalf("run %d: RunDataset(top pages): %v", run, err)
				}
				got, _ := json.Marshal([]any{res.Columns, res.Rows()[0]})
				if want := `[["page","visitors","signups"],["/pricing",6020,70]]`; string(got) != want {
					t.Errorf("top pages = %s; want %s", got, want)
				}
				cr, err := ta.executor.ChartData(t.Context(), live, "chart_top_pages", dataexec.Params{})
				if err != nil || len(cr.Data.Labels) != 5 {
					t.Errorf("ChartData(top pages) = %+v, %v; want 5 bars", cr, err)
				}
				var groups struct {
					Groups []struct {
						Name  string
						Items []struct{ ID string }
					}
				}
				ta.MustDo(t, http.StatusOK, "GET", "/ai/context?teamId=acme&query=analytics&type=connection", ta.session(t, "alice"), nil, &groups)
				found := false
				for _, g := range groups.Groups {
					for _, it := range g.Items {
						found = found || it.ID == demoMCPConn
					}
				}
				if !found {
					t.Errorf("context search for analytics = %+v; want the demo connection", groups)
				}
				var list struct{ Connections []connections.Connection }
				ta.MustDo(t, http.StatusOK, "GET", "/ai/connections", ta.session(t, "carol"), nil, &list)
				if len(list.Connections) != 0 {
					t.Errorf("Globex sees %d connections; want none", len(list.Connections))
				}
				var page connections.ToolPage
				ta.MustDo(t, http.StatusOK, "GET", "/ai/connections/"+demoMCPConn+"/tools", ta.session(t, "alice"), nil, &page)
				states := map[string]connections.ToolState{}
				for _, v := range page.Tools {
					states[v.Name] = v.State
				}
				want := map[string]connections.ToolState{"top_pages": "allowed", "weekly_active_users": "allowed", "traffic_summary": "allowed",
					"create_annotation": "allowed", "delete_project_data": "blocked"}
				if diff := cmp.Diff(want, states); diff != "" {
					t.Errorf("demo tool states (-want +got):\n%s", diff)
				}
				// The mutating demo tool waits for the user's approval, then runs.
				alice := ta.session(t, "alice")
				conv := ta.MustConversation(t, alice)
				events := ta.MustTurn(t, "/ai/conversations/"+conv+"/messages", alice,
					map[string]any{"message": `use the create_annotation tool with {"text": "launch"}`})
				ev := chattest.MustToolEvent(t, events, ask.EventToolApprovalRequired, "Acme_analytics__create_annotation")
				events = ta.MustTurn(t, "/ai/conversations/"+conv+"/approvals/"+ev.Tool.ApprovalID+"/approve", alice,
					map[string]any{"tool": ev.Tool.Name, "arguments": ev.Tool.Arguments})
				chattest.MustToolEvent(t, events, ask.EventToolCompleted, "Acme_analytics__create_annotation")
				ta.srv.Close()
				ta.close()
			}
		})
	}
}

// The inbound MCP server's explore_data works on an MCP connection: inspect
// lists its approved read-only tools beside tables, preview and save take
// a tool, arguments and output fields, and text-only answers are refused.
func TestExploreDataOnMCPConnection(t *testing.T) {
	ta := MustApp(t, nil)
	client := mcp.NewClient(&mcp.Implementation{Name: "explore-test", Version: "1"}, nil)
	cs, err := client.Connect(t.Context(), &mcp.StreamableClientTransport{Endpoint: ta.url + "/mcp",
		HTTPClient: &http.Client{Transport: bearerRT{ta.apiKey(t, "alice")}}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	call := func(args map[string]any) (map[string]any, bool) {
		t.Helper()
		res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "explore_data", Arguments: args})
		if err != nil {
			t.Fatal(err)
		}
		b, _ := json.Marshal(res.StructuredContent)
		var out map[string]any
		json.Unmarshal(b, &out)
		return out, res.IsError
	}
	out, isErr := call(map[string]any{"operation": "inspect", "connection_id": demoMCPConn})
	var tools []string
	for _, tb := range out["tables"].([]any) {
		m := tb.(map[string]any)
		tools = append(tools, m["kind"].(string)+":"+m["name"].(string))
	}
	if diff := cmp.Diff([]string{"mcp_tool:top_pages", "mcp_tool:traffic_summary", "mcp_tool:weekly_active_users"}, tools); isErr || diff != "" {
		t.Errorf("inspect (error %v) mismatch (-want +got):\n%s", isErr, diff)
	}
	req := map[string]any{"connection_id": demoMCPConn, "tool": "top_pages", "arguments": map[string]any{"days": 7},
		"fields": map[string]any{"page": []any{"column_0"}, "visitors": []any{"column_1", 0}}}
	with := func(op string, extra map[string]any) map[string]any {
		m := map[string]any{"operation": op}
		for k, v := range req {
			m[k] = v
		}
		for k, v := range extra {
			m[k] = v
		}
		return m
	}
	out, isErr = call(with("preview", nil))
	if isErr || out["row_count"] != 5.0 || fmt.Sprint(out["columns"]) != "[page visitors]" {
		t.Errorf("preview = %v (error %v); want 5 rows", out, isErr)
	}
	out, isErr = call(with("save", map[string]any{"name": "Top pages this week", "dashboard_id": "dash_growth"}))
	ds, _ := out["dataset"].(map[string]any)
	if isErr || ds == nil {
		t.Fatalf("save = %v (error %v)", out, isErr)
	}
	res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "run_dataset", Arguments: map[string]any{"dataset_id": ds["id"]}})
	if err != nil || res.IsError {
		t.Fatalf("run_dataset on the saved MCP dataset: %v %+v", err, res)
	}
	out, isErr = call(map[string]any{"operation": "preview", "connection_id": demoMCPConn, "tool": "traffic_summary"})
	if !isErr || out["code"] != "invalid_result" {
		t.Errorf("preview of a text-only tool = %v (error %v); want invalid_result", out, isErr)
	}
	out, isErr = call(map[string]any{"operation": "preview", "connection_id": demoMCPConn, "tool": "create_annotation", "arguments": map[string]any{"text": "x"}})
	if !isErr || out["code"] != "invalid_argument" {
		t.Errorf("preview of a mutating tool = %v (error %v); want invalid_argument (read-only tools only)", out, isErr)
	}
}

// TestDenyLoopbackFlag: -deny-loopback refuses MCP servers on this
// machine when a connection is saved; the server still starts, without
// the demo connection (its servers are on loopback), whose dataset then
// answers unavailable. Off (the default), the demo connection works.
func TestDenyLoopbackFlag(t *testing.T) {
	alice := access.Principal{UserID: "alice", TeamID: teamAcme, Auth: access.AuthSession}
	for _, deny := range []bool{false, true} {
		t.Run(fmt.Sprintf("deny %v", deny), func(t *testing.T) {
			ta := MustApp(t, func(c *config) { c.denyLoopback = deny })
			_, err := ta.conns.Create(t.Context(), alice, connections.Input{Name: "Local", URL: "http://localhost:9/mcp"})
			if got, want := askbi.ErrorCode(err) == askbi.InvalidArgument, deny; got != want {
				t.Errorf("Create(localhost) = %v; want refused %v", err, want)
			}
			_, err = ta.conns.Get(t.Context(), alice, demoMCPConn)
			if got, want := askbi.ErrorCode(err) == askbi.NotFound, deny; got != want {
				t.Errorf("the demo connection: %v; want it missing %v", err, want)
			}
			live, _ := ta.gate.Begin(t.Context(), alice)
			_, err = ta.executor.RunDataset(t.Context(), live, demoTopPagesDS, dataexec.Params{Refresh: true})
			if got, want := err != nil, deny; got != want {
				t.Errorf("RunDataset(top pages) = %v; want failing %v", err, want)
			}
		})
	}
}
