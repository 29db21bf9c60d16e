package mcpserver_test

import (
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/askbi/askbi/access"
	"github.com/askbi/askbi/workspace"
)

// TestScopeInSummaries: results built from a scoped dataset say its
// scope, so an agent does not take part of the data for all of it.
func TestScopeInSummaries(t *testing.T) {
	e := newEnv(t, nil, "")
	ds, err := e.catalog.Dataset(t.Context(), "ds_signups")
	if err != nil {
		t.Fatal(err)
	}
	ds.Scope = &workspace.Scope{Filters: []workspace.Filter{{Field: "page_path", Op: workspace.OpEq, Value: "/pricing"}}}
	e.catalog.PutDataset(ds)
	cs := e.MustConnect(t, e.MustKey(t, "alice", "acme", access.AllProjects(), access.AllScopes...))
	for tool, args := range map[string]map[string]any{
		"run_dataset":    {"dataset_id": "ds_signups"},
		"get_chart_data": {"chart_id": "chart_signups"},
	} {
		_, res := call(t, cs, tool, args)
		if text := res.Content[0].(*mcp.TextContent).Text; !strings.Contains(text, "(scope: page_path = /pricing)") {
			t.Errorf("%s summary %q does not say the scope", tool, text)
		}
	}
}
