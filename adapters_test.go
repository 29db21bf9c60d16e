package askbi_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/askbi/askbi/access"
	"github.com/askbi/askbi/ask"
	"github.com/askbi/askbi/dataexec"
	"github.com/askbi/askbi/mcpserver"
	"github.com/askbi/askbi/workspace"
)

// caller is a model that calls one tool with fixed arguments, then
// answers.
type caller struct {
	tool string
	args json.RawMessage
}

func (c caller) Complete(_ context.Context, req ask.ModelRequest, _ func(string)) (ask.ModelReply, error) {
	if last := req.Messages[len(req.Messages)-1]; last.Role == ask.RoleTool {
		return ask.ModelReply{Text: "done"}, nil
	}
	return ask.ModelReply{ToolCalls: []ask.ToolCall{{ID: "c1", Name: c.tool, Arguments: c.args}}}, nil
}

// TestSameWordsForBadArguments: the chat and an MCP client are told the
// same words for the same bad arguments of the same action, the
// explanation defined beside the actions' schemas
// (dataexec.ExplainArguments), not a validator's text.
func TestSameWordsForBadArguments(t *testing.T) {
	ctx := context.Background()
	dir := access.NewMemoryDirectory()
	dir.AddProject("acme", "growth")
	dir.SetMember("acme", "alice", access.RoleOwner, access.AllProjects())
	gate := access.NewGate(access.NewChecker(dir, nil), nil)
	exec := dataexec.NewExecutor(workspace.NewMemoryCatalog(), dataexec.SourceMap{}, nil)
	keys := access.NewKeys(access.NewMemoryKeyStore(), dir, nil)
	srv := httptest.NewServer(mcpserver.New(exec, gate, keys.Verify, nil))
	defer srv.Close()
	alice := access.Principal{UserID: "alice", TeamID: "acme", Auth: access.AuthSession}
	live, err := gate.Begin(ctx, alice)
	if err != nil {
		t.Fatal(err)
	}
	secret, _, err := keys.Create(ctx, live, access.KeyRequest{Name: "agent", Scopes: []string{"data:read"}, Projects: access.AllProjects()})
	if err != nil {
		t.Fatal(err)
	}
	filter := `{"dataset_id":"ds","filters":[{"field":"week","op":"like","value":"x"}]}`
	for _, tc := range []struct{ tool, args, want string }{
		{"search_workspace", `{"limit":0}`, "limit must be at least 1"},
		{"search_workspace", `{"limit":"5"}`, "limit must be an integer"},
		{"search_workspace", `{"types":["report"]}`, "types[0] must be one of dashboard, chart, dataset, connection"},
		{"search_workspace", `{"query":"x","sql":"DELETE FROM t"}`, "sql is not a known argument"},
		{"run_dataset", filter, "filters[0].op must be one of eq, ne, gt, gte, lt, lte, contains, in"},
		{"get_chart_data", `{}`, "chart_id is required"},
	} {
		t.Run(tc.want, func(t *testing.T) {
			tools, err := ask.NewRegistry(ask.ProductTools(exec)...)
			if err != nil {
				t.Fatal(err)
			}
			a := ask.New(caller{tc.tool, json.RawMessage(tc.args)}, gate, exec, ask.NewMemoryStores(), tools, nil)
			conv, err := a.CreateConversation(ctx, alice)
			if err != nil {
				t.Fatal(err)
			}
			emit, events := ask.Collect()
			if err := a.Send(ctx, alice, ask.SendRequest{ConversationID: conv.ID, Message: "go"}, emit); err != nil {
				t.Fatal(err)
			}
			var chat string
			for _, e := range events() {
				if e.Type == ask.EventToolFailed {
					chat = e.Error.Message
				}
			}

			body := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"` + tc.tool + `","arguments":` + tc.args + `}}`
			req, _ := http.NewRequest("POST", srv.URL, strings.NewReader(body))
			req.Header.Set("Authorization", "Bearer "+secret)
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Accept", "application/json, text/event-stream")
			res, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer res.Body.Close()
			var out struct {
				Result struct {
					StructuredContent struct{ Code, Message string }
				}
			}
			if err := json.NewDecoder(res.Body).Decode(&out); err != nil {
				t.Fatal(err)
			}
			if mcp := out.Result.StructuredContent.Message; chat != tc.want || mcp != tc.want {
				t.Errorf("the chat was told %q and the MCP client %q; want both %q", chat, mcp, tc.want)
			}
		})
	}
}
