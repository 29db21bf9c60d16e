package askeval_test

import (
	"context"
	"fmt"

	"github.com/askbi/askbi/access"
	"github.com/askbi/askbi/ask/askeval"
	"github.com/askbi/askbi/ask/provider/mock"
	"github.com/askbi/askbi/dataexec"
	"github.com/askbi/askbi/workspace"
)

// Example evaluates a host's own workspace: its catalog, its warehouse
// and its user, wired as in production, and a case it keeps as YAML
// beside its code, whose gold is a query on the warehouse. The model
// here is the deterministic mock; a host passes its real one
// (provider.New, openai.New, anthropic.New) and Options.Runs above 1.
func Example() {
	const orders = "SELECT month, orders FROM orders_by_month"
	cat := workspace.NewMemoryCatalog()
	cat.PutConnection(workspace.Connection{ID: "wh", TeamID: "shop", Name: "Warehouse", Type: "postgres", Active: true})
	cat.PutDataset(workspace.Dataset{ID: "ds_orders", TeamID: "shop", ProjectID: "sales", Name: "Orders by month", Version: 1,
		Request: workspace.Request{ConnectionID: "wh", SQL: orders}})
	warehouse := dataexec.SourceMap{"wh": dataexec.NewTableSource(map[string]*dataexec.Table{orders: {
		Columns: []string{"month", "orders"}, Rows: [][]any{{"2026-09", int64(410)}, {"2026-10", int64(452)}, {"2026-11", int64(498)}},
	}})}
	dir := access.NewMemoryDirectory()
	dir.AddProject("shop", "sales")
	dir.SetMember("shop", "ana", access.RoleEditor, access.AllProjects())

	// Each run asks on the workspace open returns: here the same one,
	// as no case approves a change.
	open := func(context.Context) (*askeval.Workspace, error) {
		return &askeval.Workspace{
			Catalog:    cat,
			Executor:   dataexec.NewExecutor(cat, warehouse, nil),
			Sources:    warehouse,
			Gate:       access.NewGate(access.NewChecker(dir, nil), nil),
			Principals: map[string]access.Principal{"ana": {UserID: "ana", TeamID: "shop", Auth: access.AuthSession}},
			Default:    "ana",
		}, nil
	}
	cases, err := askeval.ParseCases("orders.yaml", []byte(`
- id: orders-by-month
  category: trend
  question: show orders by month
  expect:
    datasets: [ds_orders]
    breakdown: month
    gold:
      connection: wh
      sql: SELECT month, orders FROM orders_by_month
`))
	if err != nil {
		panic(err)
	}
	report, err := askeval.New(mock.New(), open, &askeval.Options{Runs: 2, Provider: "mock"}).Run(context.Background(), cases)
	if err != nil {
		panic(err)
	}
	fmt.Printf("%d of %d runs passed\n", report.Total.Passed, report.Total.Runs)
	fmt.Println(report.Cases[0].Runs[0].Tools)
	// Output:
	// 2 of 2 runs passed
	// [search_workspace run_dataset create_chart_preview]
}
