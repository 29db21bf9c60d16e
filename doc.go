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
// [ErrorMessage], never the cause.
//
// # Packages
//
//   - access: principals, roles, scopes, access decisions, the request
//     gate, API keys; access/accesstest proves its stores.
//   - seal: the keyring and AES-GCM sealing of every secret at rest.
//   - workspace: the host's workspace catalog (dashboards, charts,
//     datasets, connections) and its in-memory implementation;
//     workspace/workspacetest proves a catalog.
//   - dataexec: bounded execution, cache, field mapping, chart data,
//     search and the product actions; dataexec/sourcetest proves a
//     source.
//   - dataexec/pgsource: the PostgreSQL source with its read-only guard.
//   - dataexec/mysqlsource: the MySQL and MariaDB source, with a guard on
//     TiDB's MySQL parser as strict as PostgreSQL's.
//   - dataexec/mcpsource: the go-sdk client of remote MCP servers and the
//     dataset Source on a remote tool.
//   - dataexec/datahttp: the Data API and the routes of the pages that
//     results link to.
//   - connections: a team's remote MCP connections (create, edit,
//     delete, bounded discovery, per-tool access, fingerprints, the
//     change feed); connections/connectionstest proves its store.
//   - connections/signin: the sign-in of connections, the one holder of
//     their secrets (bearer tokens, OAuth, refresh with rotation);
//     connections/signin/signintest proves its store and refreshes.
//   - connections/remote: the approved remote tools Ask and datasets
//     call.
//   - connections/connhttp: the connection routes over HTTP (with the
//     resolver's setup card and the OAuth callback).
//   - connresolve: the resolution of a question into a connection or its
//     setup, and the verified MCP provider catalog.
//   - mcpserver: the inbound MCP server (six tools, Streamable HTTP, the
//     chart app of MCP Apps, long data calls as tasks);
//     mcpserver/tasktest proves its task store; mcpserver/chartimage
//     draws create_chart_preview's optional PNG (gonum/plot, linked only
//     by a host that opts in).
//   - mcpserver/oauth: the OAuth 2.1 authorization server of the MCP
//     server (client ID metadata documents, dynamic registration);
//     mcpserver/oauth/oauthtest proves its store.
//   - chartview: the chart component (embedded JavaScript and CSS) that
//     the page and the MCP chart app both draw with.
//   - ask: the Ask orchestrator (turns, context, tools, approvals, events);
//     ask/asktest proves its stores; ask/provider picks the model a
//     configuration names, and ask/provider/mock,
//     ask/provider/openai and ask/provider/anthropic are the models.
//   - ask/askhttp: the chat HTTP API (JSON and Server-Sent Events).
//   - ask/askeval: the evaluation harness: cases as files, runs against
//     any model, scoring on the rows the tools returned, reports; the
//     golden set of the demo workspace.
//   - memory: explicit, encrypted, personal memory; memory/memorytest
//     proves its store.
//   - usage: usage records, the usage view of Ask and MCP together, and
//     token budgets per team or user; usage/usagetest proves its stores;
//     usage/usagehttp is the view and the budgets over HTTP.
//   - telemetry: OpenTelemetry spans and metrics of MCP requests, Ask
//     turns, model calls, tool runs and data queries, on the host's
//     providers; telemetry/otelexport builds the Prometheus and OTLP
//     exporters a server wires.
//   - httpserve: server limits, readiness and drain around the handlers.
//   - pgstore: every store of the SDK on PostgreSQL, with the limits and
//     the change feed several instances share.
//   - examples/refserver: the reference server that wires them together;
//     examples/oauthclient runs the outbound OAuth headlessly.
//   - cmd/mcpload: the load and fault benchmark of the MCP endpoint.
//   - cmd/askeval: the evaluation command: a set of cases against the
//     demo workspace on any provider, a report as Markdown and JSON.
//
// Example (below) mounts the chat API and the MCP server on in-memory
// stores in one host.
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
