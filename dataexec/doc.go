// Package dataexec is askbi's one data path. The chat assistant (package
// ask) and the inbound MCP server (package mcpserver) both call its
// Executor with the live principal of their request (access.Gate.Begin:
// live membership and the rate limit, once per request). The Executor
// decides every right on that principal and runs dataset, chart and
// exploration requests within bounded limits: a deadline, a request
// size, a row cap and a byte cap, with a cache of fresh results and a
// last-good fallback.
//
// A host plugs in three things: its workspace catalog (package workspace:
// dashboards, charts, datasets, connections; also a
// workspace.CatalogWriter when the Executor may change them, else every
// write answers Unsupported), its Sources (one Source per connection: the
// PostgreSQL source in dataexec/pgsource, the remote MCP tool source of
// dataexec/mcpsource, or the in-memory [TableSource], each proven by
// sourcetest.Run), and optionally an AuditSink.
//
// # Quick start
//
//	cat := workspace.NewMemoryCatalog()
//	cat.PutConnection(workspace.Connection{ID: "wh", TeamID: "acme", Name: "Warehouse", Type: "postgres", Active: true})
//	cat.PutDataset(workspace.Dataset{ID: "signups", TeamID: "acme", ProjectID: "growth", Name: "Signups", Version: 1,
//		Request: workspace.Request{ConnectionID: "wh", SQL: "SELECT day, signups FROM signups"}})
//	exec := dataexec.NewExecutor(cat, dataexec.SourceMap{"wh": pgSource}, nil)
//	gate := access.NewGate(access.NewChecker(dir, nil), nil)
//	live, err := gate.Begin(ctx, principal) // once per request
//	res, err := exec.RunDataset(ctx, live, "signups", dataexec.Params{})
//
// # Data rules
//
// Output field paths (Request.Fields) are applied once per fresh request
// and the mapped rows are cached; see Fields for the path rules. Variables
// are referenced as {{name}}; the Executor validates their values and puts
// them into tool arguments itself, but leaves SQL to its source, the one
// that knows the dialect (a [VariableBinder]: pgsource sends them as bind
// parameters). Package dataexec holds no SQL dialect. Filters apply to the mapped rows. Before a chart is created, a bounded
// sample is built into chart data; empty results and value fields with no
// finite number give InvalidResult with a correction, never a success.
// Empty, invalid or timed-out previews never create datasets.
package dataexec
