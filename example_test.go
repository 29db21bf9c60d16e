package askbi_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"

	"github.com/askbi/askbi/access"
	"github.com/askbi/askbi/ask"
	"github.com/askbi/askbi/ask/askhttp"
	"github.com/askbi/askbi/ask/provider/mock"
	"github.com/askbi/askbi/dataexec"
	"github.com/askbi/askbi/mcpserver"
	"github.com/askbi/askbi/workspace"
)

// Example is a host on in-memory stores: the chat API (askhttp) and the
// MCP server (mcpserver) on one gate and one executor, one request each.
func Example() {
	ctx := context.Background()
	dir := access.NewMemoryDirectory()
	dir.AddProject("acme", "growth")
	dir.SetMember("acme", "alice", access.RoleOwner, access.AllProjects())
	gate := access.NewGate(access.NewChecker(dir, nil), nil)
	exec := dataexec.NewExecutor(workspace.NewMemoryCatalog(), dataexec.SourceMap{}, nil)
	keys := access.NewKeys(access.NewMemoryKeyStore(), dir, nil)
	tools, _ := ask.NewRegistry(ask.ProductTools(exec)...)
	assistant := ask.New(mock.New(), gate, exec, ask.NewMemoryStores(), tools, nil)

	// The host's login: here every request is alice's session.
	alice := access.Principal{UserID: "alice", TeamID: "acme", Auth: access.AuthSession}
	session := func(*http.Request) (access.Principal, error) { return alice, nil }
	mux := http.NewServeMux()
	mux.Handle("/ai/", askhttp.New(assistant, nil, session, nil))
	mux.Handle("/mcp", mcpserver.New(exec, gate, keys.Verify, nil))
	srv := httptest.NewServer(mux)
	defer srv.Close()
	res, err := http.Post(srv.URL+"/ai/conversations", "application/json", strings.NewReader("{}"))
	if err != nil {
		panic(err)
	}
	fmt.Println("chat:", res.Status)
	res.Body.Close()

	live, _ := gate.Begin(ctx, alice)
	secret, _, _ := keys.Create(ctx, live, access.KeyRequest{Name: "agent", Scopes: []string{"data:read"}, Projects: access.AllProjects()})
	req, _ := http.NewRequest("POST", srv.URL+"/mcp", strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`))
	req.Header.Set("Authorization", "Bearer "+secret)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	var list struct {
		Result struct{ Tools []struct{ Name string } }
	}
	if res, err = http.DefaultClient.Do(req); err != nil || json.NewDecoder(res.Body).Decode(&list) != nil {
		panic(err)
	}
	fmt.Println("mcp:", res.Status, list.Result.Tools[0].Name, "and", len(list.Result.Tools)-1, "more tools")
	// Output:
	// chat: 201 Created
	// mcp: 200 OK search_workspace and 4 more tools
}
