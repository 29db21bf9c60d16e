package workspace_test

import (
	"context"
	"fmt"

	"github.com/askbi/askbi/access"
	"github.com/askbi/askbi/workspace"
)

// A workspace in memory: a dashboard, a saved chart and a preview, and
// what a search by one member finds (another member's preview is left
// out).
func ExampleMemoryCatalog() {
	ctx := context.Background()
	cat := workspace.NewMemoryCatalog()
	cat.PutConnection(workspace.Connection{ID: "wh", TeamID: "acme", Name: "Warehouse", Type: "postgres", Active: true})
	cat.PutDashboard(workspace.Dashboard{ID: "d1", TeamID: "acme", ProjectID: "growth", Name: "Growth overview"})
	cat.PutDataset(workspace.Dataset{ID: "ds1", TeamID: "acme", ProjectID: "growth", Name: "Weekly signups", Version: 1,
		Request: workspace.Request{ConnectionID: "wh", SQL: "SELECT week, signups FROM weekly_signups",
			Filters: []workspace.Filter{{Field: "country", Op: workspace.OpEq, Value: "DE"}}}})
	cat.PutChart(workspace.Chart{ID: "c1", TeamID: "acme", ProjectID: "growth", DashboardID: "d1", Name: "Signups",
		Type: workspace.ChartLine, DatasetID: "ds1", XField: "week", YFields: []string{"signups"}})
	cat.PutChart(workspace.Chart{ID: "c2", TeamID: "acme", ProjectID: "growth", Name: "Signups draft", CreatedBy: "bob",
		Type: workspace.ChartBar, DatasetID: "ds1", XField: "week", YFields: []string{"signups"}})

	rows, err := cat.Search(ctx, workspace.CatalogQuery{TeamID: "acme", Text: "signups", Projects: access.AllProjects(), UserID: "alice", Limit: 10})
	if err != nil {
		panic(err)
	}
	for _, r := range rows {
		fmt.Println(r.Entity.Type, r.Name, r.Scope)
	}
	preview, _ := cat.Chart(ctx, "c2")
	fmt.Println(preview.Status(), "of", preview.CreatedBy, "reached by alice:", preview.Ref().ReachedBy("alice"))
	// Output:
	// chart Signups []
	// dataset Weekly signups [{country eq DE}]
	// preview of bob reached by alice: false
}
