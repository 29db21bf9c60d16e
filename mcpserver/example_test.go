package mcpserver_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/askbi/askbi/access"
	"github.com/askbi/askbi/dataexec"
	"github.com/askbi/askbi/mcpserver"
	"github.com/askbi/askbi/workspace"
)

// Example serves the MCP endpoint over a small workspace and lists its
// tools as a read-only API key sees them: the write tools are hidden.
func Example() {
	ctx := context.Background()
	dir := access.NewMemoryDirectory()
	dir.AddProject("acme", "growth")
	dir.SetMember("acme", "alice", access.RoleOwner, access.AllProjects())
	gate := access.NewGate(access.NewChecker(dir, nil), nil)
	exec := dataexec.NewExecutor(workspace.NewMemoryCatalog(), dataexec.SourceMap{}, nil)
	keys := access.NewKeys(access.NewMemoryKeyStore(), dir, nil)
	alice, _ := gate.Begin(ctx, access.Principal{UserID: "alice", TeamID: "acme", Auth: access.AuthSession})
	secret, _, _ := keys.Create(ctx, alice, access.KeyRequest{Name: "notebook", Scopes: []string{"data:read"}, Projects: access.AllProjects()})

	srv := httptest.NewServer(mcpserver.New(exec, gate, keys.Verify, nil))
	defer srv.Close()
	client := mcp.NewClient(&mcp.Implementation{Name: "example", Version: "1"}, nil)
	cs, err := client.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: srv.URL,
		HTTPClient: &http.Client{Transport: bearer{secret}}}, nil)
	if err != nil {
		panic(err)
	}
	defer cs.Close()
	tools, err := cs.ListTools(ctx, nil)
	if err != nil {
		panic(err)
	}
	for _, t := range tools.Tools {
		fmt.Println(t.Name)
	}
	// Output:
	// search_workspace
	// get_workspace_activity
	// run_dataset
	// get_chart_data
	// explore_data
}

// ExampleMemoryTaskStore keeps a task of one owner, which another owner
// does not see, and cancels it.
func ExampleMemoryTaskStore() {
	ctx := context.Background()
	store := mcpserver.NewMemoryTaskStore(0)
	now := time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)
	t := mcpserver.Task{ID: "task_1", Owner: "alice's key", Tool: "run_dataset", Status: mcpserver.TaskWorking,
		CreatedAt: now, UpdatedAt: now, ExpiresAt: now.Add(mcpserver.DefaultTaskTTL), Heartbeat: now}
	if err := store.Create(ctx, t, mcpserver.DefaultTasksPerOwner); err != nil {
		panic(err)
	}
	_, err := store.Get(ctx, "task_1", "bob's key", now)
	fmt.Println("bob:", err)
	store.Cancel(ctx, "task_1", "alice's key", now)
	got, _ := store.Get(ctx, "task_1", "alice's key", now)
	fmt.Println("alice:", got.Status)
	// Output:
	// bob: not_found: task not found
	// alice: cancelled
}
