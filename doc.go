// Package askbi gives a BI or analytics product two AI surfaces over one set
// of access checks and one data executor:
//
//   - Ask, an in-product AI data assistant that works on the exact
//     dashboards, charts and datasets the user selected, runs allowlisted
//     tools, and holds every mutating call behind a single-use approval the
//     server enforces.
//   - An inbound MCP server that opens the product's data to outside agents
//     through six bounded tools, under API keys or OAuth 2.1 with scopes.
//
// This root package holds only the overview and the error vocabulary. Every
// askbi error is an *Error with a stable Code; adapters map codes to their
// outputs (HTTP statuses, MCP tool results, chat events), and users only see
// ErrorMessage, never the cause.
//
// # Packages
//
//   - access: principals, roles, scopes, access decisions, API keys.
//   - dataexec: the workspace catalog, bounded execution, cache, field
//     mapping, chart data and search; dataexec/pgsource is the PostgreSQL
//     source with its read-only guard.
//   - mcpserver: the inbound MCP server (six tools, Streamable HTTP).
//   - ask: the Ask orchestrator (turns, context, tools, approvals, events);
//     ask/provider/... holds the mock, OpenAI-compatible and Anthropic
//     models.
//   - memory: explicit, encrypted, personal memory.
//   - examples/refserver: the reference server that wires them together.
//
// # Quick start
//
// A host implements access.Directory over its own membership tables (or uses
// access.MemoryDirectory). Every request passes one gate, which reads live
// membership and spends the rate limit once, and every decision is
// access.Allow on the live principal it returns:
//
//	dir := access.NewMemoryDirectory()
//	dir.SetMember("acme", "alice", access.RoleOwner, access.AllProjects())
//	gate := access.NewGate(access.NewChecker(dir, nil), nil)
//	live, err := gate.Begin(ctx, access.Principal{UserID: "alice", TeamID: "acme", Auth: access.AuthSession})
//	err = access.Allow(live, access.RightRead, access.Entity{Type: access.TypeDashboard, ID: "d1", TeamID: "acme", ProjectID: "growth"})
//	if askbi.ErrorCode(err) == askbi.NotFound { ... }
//
// The executor and the MCP server then stand on the same checks:
//
//	exec := dataexec.NewExecutor(catalog, dataexec.SourceMap{"warehouse": src}, nil)
//	keys := access.NewKeys(access.NewMemoryKeyStore(), dir, nil)
//	http.Handle("/mcp", mcpserver.New(exec, gate, keys.Verify, nil))
//
// and so does the assistant:
//
//	tools, _ := ask.NewRegistry(ask.ProductTools(exec)...)
//	assistant := ask.New(mock.New(), gate, exec, ask.NewMemoryStores(), tools, nil)
package askbi
