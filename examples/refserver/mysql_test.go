package main

import (
	"cmp"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"

	gocmp "github.com/google/go-cmp/cmp"

	"github.com/askbi/askbi/ask"
	"github.com/askbi/askbi/internal/mysqltest"
)

// TestMySQLWarehouse runs the reference server with -mysql-url on the
// harness's MariaDB: MySQL resolves to the connection, its datasets and
// chart answer through MCP (run_dataset, get_chart_data, explore_data
// inspect, preview and save) and through the chat (the mock model charts
// the selected dataset), all read through the SELECT-only user.
func TestMySQLWarehouse(t *testing.T) {
	t.Logf("MySQL warehouse: %s", mysqltest.Version(t))
	ta := MustApp(t, func(c *config) { c.mysqlURL = mysqltest.MustDatabase(t) })
	alice, key := ta.session(t, "alice"), ta.apiKey(t, "alice")

	for _, tc := range []struct {
		who, query string
		want       []string
	}{
		{"alice", "provider=MySQL", []string{"connected Acme MySQL warehouse"}},
		{"bob", "provider=MySQL", []string{"connected Acme MySQL warehouse"}},
		{"alice", "capability=database", []string{"connected Acme MySQL warehouse", "connected Acme warehouse"}},
		{"carol", "provider=MySQL", []string{"native_setup MySQL"}},
	} {
		var doc struct{ Setup ask.ConnectionSetup }
		ta.MustDo(t, http.StatusOK, "GET", "/ai/connections/setup?"+tc.query, ta.session(t, tc.who), nil, &doc)
		var got []string
		for _, o := range doc.Setup.Options {
			got = append(got, string(o.State)+" "+cmp.Or(o.ConnectionName, o.Provider))
		}
		slices.Sort(got)
		if diff := gocmp.Diff(tc.want, got); diff != "" {
			t.Errorf("%s %s (-want +got):\n%s", tc.who, tc.query, diff)
		}
	}

	run := ta.mustTool(t, key, "run_dataset", map[string]any{"dataset_id": "ds_mysql_orders"})
	rows, _ := run.Result.StructuredContent["rows"].([]any)
	if run.code() != "" || len(rows) != 12 || fmt.Sprint(rows[0]) != "[2026-09-07 1589]" {
		t.Errorf("run_dataset = %s, %d rows, first %v; want 12 weeks from 2026-09-07", run.code(), len(rows), rows)
	}
	chart := ta.mustTool(t, key, "get_chart_data", map[string]any{"chart_id": "chart_mysql_orders"})
	if chart.code() != "" || chart.Result.StructuredContent["chart"] == nil {
		t.Errorf("get_chart_data = %s %v", chart.code(), chart.Result.StructuredContent)
	}
	inspect := ta.mustTool(t, key, "explore_data", map[string]any{"operation": "inspect", "connection_id": connAcmeMySQL, "table": "orders"})
	if b, _ := json.Marshal(inspect.Result.StructuredContent["tables"]); inspect.code() != "" || !strings.Contains(string(b), `"name":"revenue","type":"decimal(10,2)"`) {
		t.Errorf("inspect = %s %s", inspect.code(), b)
	}
	preview := map[string]any{"operation": "preview", "connection_id": connAcmeMySQL,
		"sql": "SELECT region, SUM(orders) AS orders FROM orders WHERE day >= '2026-11-01' GROUP BY region ORDER BY region"}
	if p := ta.mustTool(t, key, "explore_data", preview); p.code() != "" || p.Result.StructuredContent["row_count"] != 4.0 {
		t.Errorf("preview = %s %v", p.code(), p.Result.StructuredContent)
	}
	// A hostile preview is refused by the guard, with its message.
	preview["sql"] = "SELECT region FROM orders WHERE SLEEP(5) = 0"
	if p := ta.mustTool(t, key, "explore_data", preview); p.code() != "invalid_argument" ||
		!strings.Contains(fmt.Sprint(p.Result.StructuredContent["message"]), "SLEEP is not allowed") {
		t.Errorf("hostile preview = %s %v; want invalid_argument naming SLEEP", p.code(), p.Result.StructuredContent)
	}
	preview["sql"] = "SELECT region, SUM(orders) AS orders FROM orders GROUP BY region ORDER BY region"
	save := map[string]any{"name": "Orders by region (MySQL)", "dashboard_id": "dash_growth"}
	for k, v := range preview {
		save[k] = v
	}
	save["operation"] = "save"
	saved := ta.mustTool(t, key, "explore_data", save)
	ds, _ := saved.Result.StructuredContent["dataset"].(map[string]any)
	if saved.code() != "" || ds == nil {
		t.Fatalf("save = %s %v", saved.code(), saved.Result.StructuredContent)
	}
	if r := ta.mustTool(t, key, "run_dataset", map[string]any{"dataset_id": ds["id"]}); r.code() != "" {
		t.Errorf("run_dataset on the saved MySQL dataset: %s", r.code())
	}

	// Ask: the mock model charts the selected MySQL dataset.
	conv := ta.MustConversation(t, alice)
	events := ta.MustTurn(t, "/ai/conversations/"+conv+"/messages", alice, map[string]any{"message": "how are orders going?",
		"context": []map[string]string{{"entity_type": "dataset", "id": "ds_mysql_orders"}}})
	var tools []string
	for _, e := range events {
		if e.Type == ask.EventToolCompleted {
			tools = append(tools, e.Tool.Name)
		}
		if e.Type == ask.EventToolFailed {
			t.Errorf("tool %s failed: %+v", e.Tool.Name, e.Tool)
		}
	}
	if diff := gocmp.Diff([]string{"run_dataset", "create_chart_preview"}, tools); diff != "" {
		t.Errorf("the chat's tools on the MySQL dataset (-want +got):\n%s", diff)
	}
}
