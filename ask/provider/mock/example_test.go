package mock_test

import (
	"context"
	"fmt"

	"github.com/askbi/askbi/ask"
	"github.com/askbi/askbi/ask/provider/mock"
)

// Example shows the scripted model's first step of "show signups by
// week": it searches the workspace for a dataset named like "signups".
func Example() {
	m := mock.New()
	reply, err := m.Complete(context.Background(), ask.ModelRequest{
		Messages: []ask.Message{{Role: ask.RoleUser, Text: "show signups by week"}},
	}, nil)
	if err != nil {
		panic(err)
	}
	for _, c := range reply.ToolCalls {
		fmt.Println(c.Name, string(c.Arguments))
	}
	fmt.Println(len(m.Requests()), "request recorded")
	// Output:
	// search_workspace {"query":"signup","types":["dataset"]}
	// 1 request recorded
}
