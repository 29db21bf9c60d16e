package mcpsource_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/askbi/askbi"
	"github.com/askbi/askbi/dataexec/mcpsource"
)

// A session lists a remote server's tools and calls one (here a go-sdk
// server on loopback, which the outbound policy allows unless
// ClientOptions.DenyLoopback); the answer reads as rows.
func ExampleClient_Open() {
	remote := mcp.NewServer(&mcp.Implementation{Name: "warehouse", Version: "1"}, nil)
	mcp.AddTool(remote, &mcp.Tool{Name: "weekly_signups", Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true}},
		func(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, any, error) {
			return nil, map[string]any{"rows": []any{
				map[string]any{"week": "2026-11-02", "signups": 120},
				map[string]any{"week": "2026-11-09", "signups": 98},
			}}, nil
		})
	srv := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return remote }, nil))
	defer srv.Close()

	ctx := context.Background()
	se, err := mcpsource.NewClient(nil).Open(ctx, srv.URL, mcpsource.Credential{}, 1<<20)
	if err != nil {
		panic(err)
	}
	defer se.Close()
	_, err = se.ListTools(ctx, 10, 1<<20, func(page []*mcp.Tool) {
		for _, t := range page {
			fmt.Println(t.Name, "read-only:", t.Annotations.ReadOnlyHint)
		}
	})
	if err != nil {
		panic(err)
	}
	res, err := se.CallTool(ctx, "weekly_signups", nil)
	if err != nil {
		panic(err)
	}
	table, err := mcpsource.CallResult{Structured: res.StructuredContent}.Table()
	fmt.Println(table.Columns, table.Rows, err)
	// Output:
	// weekly_signups read-only: true
	// [signups week] [[120 2026-11-02] [98 2026-11-09]] <nil>
}

// A server that refuses the credential gets a safe error of its own
// kind; the server's words (here a stack trace) never reach the user.
func ExampleClient_Open_refused() {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "invalid token\ngoroutine 1 [running]:\n\t/srv/secret/auth.go:42", http.StatusUnauthorized)
	}))
	defer srv.Close()

	_, err := mcpsource.NewClient(nil).Open(context.Background(), srv.URL, mcpsource.Credential{Bearer: "expired"}, 1<<20)
	fmt.Println(askbi.ErrorCode(err))
	fmt.Println(askbi.ErrorMessage(err))
	// Output:
	// forbidden
	// the MCP server refused the connection's credentials; sign in again or update the token
}
