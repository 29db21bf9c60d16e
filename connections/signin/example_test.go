package signin_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/askbi/askbi/access"
	"github.com/askbi/askbi/connections"
	"github.com/askbi/askbi/connections/signin"
	"github.com/askbi/askbi/internal/oauthfake"
	"github.com/askbi/askbi/seal"
)

// A save and connect: the connection is saved inactive and its sign-in
// starts; the browser signs in with the provider, which sends it back to
// the callback; the callback completes the sign-in, lists the server's
// tools with the new token, and only then activates the connection.
func Example() {
	// A provider: an MCP server with one tool, behind its authorization
	// server (a fake one on loopback here).
	server := mcp.NewServer(&mcp.Implementation{Name: "analytics", Version: "1"}, nil)
	server.AddTool(&mcp.Tool{Name: "top_pages", Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true}, InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{}, nil
		})
	provider, err := oauthfake.New(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return server },
		&mcp.StreamableHTTPOptions{Stateless: true}), nil)
	if err != nil {
		panic(err)
	}
	defer provider.Close()

	ctx := context.Background()
	dir := access.NewMemoryDirectory()
	dir.SetMember("acme", "alice", access.RoleOwner, access.AllProjects())
	gate := access.NewGate(access.NewChecker(dir, nil), nil)
	keys, _ := seal.NewStaticKeyring("k1", map[string][]byte{"k1": seal.GenerateKey()})
	conns := connections.NewService(connections.NewMemoryStore(), keys, gate, nil)
	sign := signin.New(conns, keys, &signin.Options{RedirectURL: "https://bi.example.com/ai/connections/oauth/callback"})
	alice := access.Principal{UserID: "alice", TeamID: "acme", Auth: access.AuthSession}

	c, start, err := sign.Connect(ctx, alice, connections.Input{Name: "Analytics", URL: provider.MCPURL}, "")
	if err != nil {
		panic(err)
	}
	fmt.Println(c.Active, c.SignIn.State)

	// The browser at start.AuthorizationURL: the provider approves at once
	// and redirects to the callback, which the host hands on with the
	// browser's binding (a cookie).
	hc := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := hc.Get(start.AuthorizationURL)
	if err != nil {
		panic(err)
	}
	resp.Body.Close()
	back, _ := url.Parse(resp.Header.Get("Location"))
	q := back.Query()
	res, err := sign.CompleteOAuth(ctx, signin.OAuthCallback{State: q.Get("state"), Code: q.Get("code"), Iss: q.Get("iss"), Binding: start.Binding})
	fmt.Println(res.Connection.Active, res.Connection.SignIn.State, res.Connection.Discovery.Tools, err)
	// Output:
	// false needed
	// true signed_in 1 <nil>
}
