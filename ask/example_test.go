package ask_test

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/askbi/askbi/access"
	"github.com/askbi/askbi/ask"
	"github.com/askbi/askbi/ask/provider/mock"
	"github.com/askbi/askbi/dataexec"
	"github.com/askbi/askbi/workspace"
)

// Example runs two turns with the deterministic mock model: one that reads
// data and creates a chart preview, and one that proposes deleting a
// dashboard, which waits for the user's approval and then runs once.
func Example() {
	ctx := context.Background()
	dir := access.NewMemoryDirectory()
	dir.AddProject("acme", "growth")
	dir.SetMember("acme", "alice", access.RoleOwner, access.AllProjects())
	cat := workspace.NewMemoryCatalog()
	cat.PutConnection(workspace.Connection{ID: "wh", TeamID: "acme", Name: "Warehouse", Type: "postgres", Active: true})
	cat.PutDashboard(workspace.Dashboard{ID: "d1", TeamID: "acme", ProjectID: "growth", Name: "Revenue"})
	cat.PutDataset(workspace.Dataset{ID: "ds1", TeamID: "acme", ProjectID: "growth", Name: "Signups", Version: 1,
		Request: workspace.Request{ConnectionID: "wh", SQL: "SELECT week, signups FROM signups",
			Fields: workspace.Fields{{Name: "week", Path: []string{"week"}}, {Name: "signups", Path: []string{"signups"}}}}})
	warehouse := dataexec.NewTableSource(map[string]*dataexec.Table{"SELECT week, signups FROM signups": {
		Columns: []string{"week", "signups"}, Rows: [][]any{{"2026-11-02", int64(120)}, {"2026-11-09", int64(95)}},
	}})

	gate := access.NewGate(access.NewChecker(dir, nil), nil)
	exec := dataexec.NewExecutor(cat, dataexec.SourceMap{"wh": warehouse}, nil)
	tools, err := ask.NewRegistry(ask.ProductTools(exec)...)
	if err != nil {
		panic(err)
	}
	assistant := ask.New(mock.New(), gate, exec, ask.NewMemoryStores(), tools, nil)
	alice := access.Principal{UserID: "alice", TeamID: "acme", Auth: access.AuthSession}
	conv, _ := assistant.CreateConversation(ctx, alice)

	turn := func(run func(ask.Emit) error) []ask.Event {
		emit, events := ask.Collect()
		if err := run(emit); err != nil {
			fmt.Println("error:", err)
		}
		return events()
	}
	show := func(events []ask.Event) {
		for _, e := range events {
			switch e.Type {
			case ask.EventToolCompleted, ask.EventToolApprovalRequired:
				fmt.Printf("%s: %s\n", e.Type, e.Tool.Label)
			case ask.EventRequestCompleted:
				fmt.Printf("%s: %s\n", e.Type, e.State)
			}
		}
	}

	show(turn(func(emit ask.Emit) error {
		return assistant.Send(ctx, alice, ask.SendRequest{ConversationID: conv.ID, Message: "show signups by week"}, emit)
	}))
	events := turn(func(emit ask.Emit) error {
		return assistant.Send(ctx, alice, ask.SendRequest{ConversationID: conv.ID, Message: "delete the Revenue dashboard"}, emit)
	})
	show(events)

	// The user approves exactly what was shown.
	var pending *ask.ToolEvent
	for _, e := range events {
		if e.Type == ask.EventToolApprovalRequired {
			pending = e.Tool
		}
	}
	req := ask.ApproveRequest{ConversationID: conv.ID, ApprovalID: pending.ApprovalID, Tool: pending.Name, Arguments: json.RawMessage(pending.Arguments)}
	show(turn(func(emit ask.Emit) error { return assistant.Approve(ctx, alice, req, emit) }))
	_, err = cat.Dashboard(ctx, "d1")
	fmt.Println("dashboard after approval:", err != nil)
	// Output:
	// tool.completed: Searched the workspace
	// tool.completed: Previewed data
	// tool.completed: Created chart preview
	// request.completed: completed
	// tool.completed: Searched the workspace
	// tool.approval_required: Deleted dashboard
	// request.completed: awaiting_approval
	// tool.completed: Deleted dashboard
	// request.completed: completed
	// dashboard after approval: true
}
