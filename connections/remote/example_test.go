package remote_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/askbi/askbi"
	"github.com/askbi/askbi/access"
	"github.com/askbi/askbi/connections"
	"github.com/askbi/askbi/connections/remote"
	"github.com/askbi/askbi/connections/signin"
	"github.com/askbi/askbi/seal"
)

// Ask's view of a team's remote tools: the approved ones, named for the
// model, and a call of one, checked again against its approval.
func Example() {
	// A remote MCP server with a read-only tool and a mutating one.
	server := mcp.NewServer(&mcp.Implementation{Name: "analytics", Version: "1"}, nil)
	server.AddTool(&mcp.Tool{Name: "top_pages", Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true}, InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "/pricing: 1200 visitors"}}}, nil
		})
	server.AddTool(&mcp.Tool{Name: "create_note", InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{}, nil
		})
	srv := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return server }, &mcp.StreamableHTTPOptions{Stateless: true}))
	defer srv.Close()

	ctx := context.Background()
	dir := access.NewMemoryDirectory()
	dir.SetMember("acme", "alice", access.RoleOwner, access.AllProjects())
	gate := access.NewGate(access.NewChecker(dir, nil), nil)
	keys, _ := seal.NewStaticKeyring("k1", map[string][]byte{"k1": seal.GenerateKey()})
	conns := connections.NewService(connections.NewMemoryStore(), keys, gate, nil)
	sign := signin.New(conns, keys, nil)
	tools := remote.New(conns, sign, nil)
	alice := access.Principal{UserID: "alice", TeamID: "acme", Auth: access.AuthSession}

	c, _ := conns.Create(ctx, alice, connections.Input{Name: "Site analytics", URL: srv.URL, Token: "t0ken"})
	conns.Discover(ctx, alice, c.ID, nil, sign)
	conns.SetAccess(ctx, alice, c.ID, "top_pages", true) // create_note stays off

	approved, _, _ := tools.ApprovedTools(ctx, alice)
	for _, at := range approved {
		fmt.Println(at.ModelName, at.Tool.Class)
	}
	res, err := tools.Call(ctx, alice, c.ID, "top_pages", approved[0].Tool.Fingerprint(), nil)
	fmt.Println(res.Text, err)
	_, err = tools.Call(ctx, alice, c.ID, "create_note", "", nil)
	fmt.Println(askbi.ErrorCode(err), askbi.ErrorMessage(err))
	// Output:
	// Site_analytics__top_pages read_only
	// /pricing: 1200 visitors <nil>
	// unavailable this tool is no longer approved for use; an admin can allow it again on the connection
}
