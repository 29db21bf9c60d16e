package connections_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/askbi/askbi/access"
	"github.com/askbi/askbi/connections"
	"github.com/askbi/askbi/connections/remote"
	"github.com/askbi/askbi/connections/signin"
	"github.com/askbi/askbi/dataexec"
	"github.com/askbi/askbi/dataexec/mcpsource"
	"github.com/askbi/askbi/seal"
	"github.com/askbi/askbi/workspace"
)

func ExampleService() {
	// A remote MCP server with one read-only tool (a team's analytics
	// server, say), over Streamable HTTP.
	server := mcp.NewServer(&mcp.Implementation{Name: "analytics", Version: "1"}, nil)
	server.AddTool(&mcp.Tool{Name: "top_pages", Description: "Top pages.", Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true},
		InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{StructuredContent: map[string]any{"rows": []any{[]any{"/pricing", []any{1200, 34}}}}}, nil
		})
	srv := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return server }, &mcp.StreamableHTTPOptions{Stateless: true}))
	defer srv.Close()

	ctx := context.Background()
	dir := access.NewMemoryDirectory()
	dir.SetMember("acme", "alice", access.RoleOwner, access.AllProjects())
	gate := access.NewGate(access.NewChecker(dir, nil), nil)
	keys, _ := seal.NewStaticKeyring("k1", map[string][]byte{"k1": seal.GenerateKey()})
	catalog := workspace.NewMemoryCatalog()
	svc := connections.NewService(connections.NewMemoryStore(), keys, gate, &connections.Options{Catalog: catalog})
	sign := signin.New(svc, keys, nil) // opens the sealed token to reach the server
	alice := access.Principal{UserID: "alice", TeamID: "acme", Auth: access.AuthSession}

	c, err := svc.Create(ctx, alice, connections.Input{Name: "Analytics", URL: srv.URL, Token: "t0ken"})
	if err != nil {
		panic(err)
	}
	c, _ = svc.Discover(ctx, alice, c.ID, nil, sign)
	fmt.Println(c.Active, c.HasToken, c.Discovery.Tools)
	svc.SetAccess(ctx, alice, c.ID, "top_pages", true)

	// A dataset request on the approved tool, with output field paths.
	exec := dataexec.NewExecutor(catalog, mcpsource.Sources(remote.New(svc, sign, nil), nil), nil)
	live, _ := gate.Begin(ctx, alice)
	var fields workspace.Fields
	json.Unmarshal([]byte(`{"page": ["column_0"], "visitors": ["column_1", "0"]}`), &fields)
	res, err := exec.Explore(ctx, live, dataexec.Exploration{Operation: dataexec.ExplorePreview, ConnectionID: c.ID, Tool: "top_pages", Fields: fields})
	fmt.Println(res.Preview.Columns, res.Preview.Rows(), err)
	// Output:
	// true true 1
	// [page visitors] [[/pricing 1200]] <nil>
}
