package dataexec_test

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/askbi/askbi"
	"github.com/askbi/askbi/access"
	"github.com/askbi/askbi/dataexec"
	"github.com/askbi/askbi/workspace"
)

// Example runs the main flow both adapters use: read a dataset (then from
// the cache), check and create a chart preview, place it on a dashboard,
// and find it with workspace search.
func Example() {
	ctx := context.Background()
	dir := access.NewMemoryDirectory()
	dir.AddProject("acme", "growth")
	dir.SetMember("acme", "alice", access.RoleOwner, access.AllProjects())

	cat := workspace.NewMemoryCatalog()
	cat.PutConnection(workspace.Connection{ID: "wh", TeamID: "acme", Name: "Warehouse", Type: "postgres", Active: true})
	cat.PutDashboard(workspace.Dashboard{ID: "d1", TeamID: "acme", ProjectID: "growth", Name: "Growth overview"})
	cat.PutDataset(workspace.Dataset{ID: "ds1", TeamID: "acme", ProjectID: "growth", Name: "Weekly signups", Version: 1,
		Request: workspace.Request{ConnectionID: "wh", SQL: "SELECT week, signups FROM weekly_signups"}})
	warehouse := dataexec.NewTableSource(map[string]*dataexec.Table{
		"SELECT week, signups FROM weekly_signups": {
			Columns: []string{"week", "signups"},
			Rows:    [][]any{{"2026-11-02", int64(120)}, {"2026-11-09", int64(0)}, {"2026-11-16", int64(95)}},
		},
	})
	now := func() time.Time { return time.Date(2026, 11, 30, 8, 12, 0, 0, time.UTC) }
	exec := dataexec.NewExecutor(cat, dataexec.SourceMap{"wh": warehouse}, &dataexec.Options{Now: now})
	// Each request passes the gate once; the executor takes its live
	// principal.
	gate := access.NewGate(access.NewChecker(dir, nil), nil)
	alice, _ := gate.Begin(ctx, access.Principal{UserID: "alice", TeamID: "acme", Auth: access.AuthSession})

	res, _ := exec.RunDataset(ctx, alice, "ds1", dataexec.Params{})
	fmt.Println(res.Columns, res.RowCount, "rows, cached:", res.Cached)
	res, _ = exec.RunDataset(ctx, alice, "ds1", dataexec.Params{})
	fmt.Println("again, cached:", res.Cached, "from", res.DataDate.Format(time.DateTime))

	preview, _ := exec.CreateChartPreview(ctx, alice, dataexec.ChartSpec{
		DatasetID: "ds1", Name: "Signups", Type: workspace.ChartBar, XField: "week", YFields: []string{"signups"},
	})
	data, _ := json.Marshal(preview.Data.Series)
	fmt.Println(preview.Status, preview.Data.Labels, string(data))

	placed, _ := exec.PlaceChart(ctx, alice, preview.Chart.ID, "d1")
	fmt.Println(placed.Status, "on", placed.Dashboard.Name)

	refs, _ := exec.Search(ctx, alice, dataexec.SearchQuery{Text: "signups"})
	for _, r := range refs {
		fmt.Printf("%s %q: %s\n", r.Type, r.Name, r.Info)
	}

	_, err := exec.RunDataset(ctx, alice, "someone-elses", dataexec.Params{})
	fmt.Println(askbi.ErrorCode(err), askbi.ErrorMessage(err))
	// Output:
	// [week signups] 3 rows, cached: false
	// again, cached: true from 2026-11-30 08:12:00
	// preview [2026-11-02 2026-11-09 2026-11-16] [{"name":"signups","values":[120,0,95]}]
	// saved on Growth overview
	// chart "Signups": Growth overview · bar chart
	// dataset "Weekly signups": Warehouse · PostgreSQL
	// not_found dataset not found
}

// ExampleExecutor_Explore shows that a preview must return rows before a
// dataset is saved, and that output fields map nested source values.
func ExampleExecutor_Explore() {
	ctx := context.Background()
	dir := access.NewMemoryDirectory()
	dir.AddProject("acme", "growth")
	dir.SetMember("acme", "alice", access.RoleOwner, access.AllProjects())
	cat := workspace.NewMemoryCatalog()
	cat.PutConnection(workspace.Connection{ID: "analytics", TeamID: "acme", Name: "Analytics", Type: "mcp", Active: true})
	cat.PutDashboard(workspace.Dashboard{ID: "d1", TeamID: "acme", ProjectID: "growth", Name: "Growth overview"})
	tool := dataexec.NewTableSource(map[string]*dataexec.Table{
		"top_pages": {Columns: []string{"column_0", "column_1"}, Rows: [][]any{
			{"/pricing", []any{json.Number("310"), json.Number("12")}},
			{"/docs", []any{json.Number("0"), nil}},
		}},
		"no_pages": {Columns: []string{"column_0", "column_1"}},
	})
	exec := dataexec.NewExecutor(cat, dataexec.SourceMap{"analytics": tool}, nil)
	gate := access.NewGate(access.NewChecker(dir, nil), nil)
	alice, _ := gate.Begin(ctx, access.Principal{UserID: "alice", TeamID: "acme", Auth: access.AuthSession})

	var fields workspace.Fields
	_ = json.Unmarshal([]byte(`{"page": ["column_0"], "visitors": ["column_1", "0"]}`), &fields)
	save := dataexec.Exploration{Operation: dataexec.ExploreSave, ConnectionID: "analytics", Tool: "no_pages", Fields: fields,
		Name: "Top pages", DashboardID: "d1"}
	_, err := exec.Explore(ctx, alice, save)
	fmt.Println(askbi.ErrorCode(err)+":", askbi.ErrorMessage(err))

	save.Tool = "top_pages"
	saved, err := exec.Explore(ctx, alice, save)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(saved.Dataset.Name, "·", saved.Dataset.Info)
	fmt.Println(saved.Preview.Columns, saved.Preview.Rows())
	// Output:
	// invalid_result: the preview returned no rows, so nothing was saved; widen the query or its date range
	// Top pages · Analytics · MCP
	// [page visitors] [[/pricing 310] [/docs 0]]
}
