package main

import (
	"encoding/json"
	"net/http"
	"slices"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/askbi/askbi/ask"
	"github.com/askbi/askbi/dataexec"
	"github.com/askbi/askbi/internal/pgtest"
	"github.com/askbi/askbi/workspace"
)

// TestCatalogSurvivesRestart: on PostgreSQL, a dataset saved through MCP
// explore_data and a preview placed through chat are still there after a
// restart on the same database and data folder, and the demo workspace is
// not seeded again over what users changed.
func TestCatalogSurvivesRestart(t *testing.T) {
	dbURL, dataDir := pgtest.MustDatabase(t), t.TempDir()
	edit := func(c *config) { c.inMemory, c.databaseURL, c.dataDir = false, dbURL, dataDir }
	ta := MustApp(t, edit)

	cs := ta.connect(t, ta.apiKey(t, "alice"))
	res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "explore_data", Arguments: map[string]any{
		"operation": "save", "connection_id": "conn_acme_wh", "name": "Signups per country, saved",
		"sql": sqlByCountry, "dashboard_id": "dash_growth"}})
	if err != nil || res.IsError {
		t.Fatalf("explore_data save: %v %+v", err, res)
	}
	var saved struct{ Dataset dataexec.Ref }
	b, _ := json.Marshal(res.StructuredContent)
	if err := json.Unmarshal(b, &saved); err != nil || saved.Dataset.ID == "" {
		t.Fatalf("explore_data save answered %s", b)
	}
	cs.Close()

	alice := ta.session(t, "alice")
	conv := ta.MustConversation(t, alice)
	var preview string
	for _, e := range ta.MustTurn(t, "/ai/conversations/"+conv+"/messages", alice, map[string]any{"message": "show signups by week"}) {
		if e.Type == ask.EventToolCompleted && e.Tool.Name == "create_chart_preview" {
			var cr dataexec.ChartResult
			json.Unmarshal(e.Tool.Result, &cr)
			preview = cr.Chart.ID
		}
	}
	if preview == "" {
		t.Fatal("the turn made no chart preview")
	}
	chartPath := "/ai/conversations/" + conv + "/charts/" + preview
	ta.MustDo(t, http.StatusOK, "POST", chartPath+"/add-to-dashboard", alice, map[string]string{"dashboard_id": "dash_growth"}, nil)
	e := ta.MustStartDelete(t, alice, conv)
	ta.MustTurn(t, "/ai/conversations/"+conv+"/approvals/"+e.Tool.ApprovalID+"/approve", alice,
		map[string]any{"tool": "delete_dashboard", "arguments": e.Tool.Arguments})
	ta.srv.Close()
	ta.close()

	tb := MustApp(t, edit)
	alice = tb.session(t, "alice")
	var view struct{ Chart ask.ChartView }
	tb.MustDo(t, http.StatusOK, "GET", chartPath, alice, nil, &view)
	if view.Chart.Status != workspace.StatusSaved || view.Chart.Dashboard == nil || view.Chart.Dashboard.ID != "dash_growth" || view.Chart.Data == nil {
		t.Errorf("the placed preview after a restart = %+v, want saved on dash_growth with data", view.Chart.ChartResult)
	}
	cs = tb.connect(t, tb.apiKey(t, "alice"))
	defer cs.Close()
	res, err = cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "run_dataset", Arguments: map[string]any{"dataset_id": saved.Dataset.ID}})
	if err != nil || res.IsError {
		t.Errorf("run_dataset on the saved dataset after a restart: %v %+v", err, res)
	}
	dashboards := tb.MustDashboards(t, alice, "acme")
	if slices.Contains(dashboards, "Revenue") || !slices.Contains(dashboards, "Finance") {
		t.Errorf("dashboards after a restart = %v, want Revenue still deleted (the demo is seeded once)", dashboards)
	}
}
