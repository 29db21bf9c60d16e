package remote_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/askbi/askbi"
	"github.com/askbi/askbi/access"
	"github.com/askbi/askbi/dataexec"
	"github.com/askbi/askbi/dataexec/mcpsource"
	"github.com/askbi/askbi/dataexec/sourcetest"
	"github.com/askbi/askbi/internal/conntest"
	"github.com/askbi/askbi/workspace"
)

// sourceTools are the tools the conformance fixture asks for.
func sourceTools(r *conntest.Remote, running *atomic.Int64) []conntest.RemoteTool {
	n := func(req *mcp.CallToolRequest) int {
		var a struct{ N int }
		json.Unmarshal(req.Params.Arguments, &a)
		return a.N
	}
	structured := func(v any) *mcp.CallToolResult {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "ok"}}, StructuredContent: v}
	}
	return []conntest.RemoteTool{
		tool("rows", "n numbered rows", readOnly, objectSchema(`"n":{"type":"integer"}`), func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			rows := []any{}
			for i := 1; i <= n(req); i++ {
				rows = append(rows, map[string]any{"id": i, "name": fmt.Sprintf("row %d", i)})
			}
			return structured(map[string]any{"rows": rows}), nil
		}),
		tool("wide", "one wide row", readOnly, objectSchema(`"n":{"type":"integer"}`), func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return structured(map[string]any{"rows": []any{map[string]any{"text": strings.Repeat("x", n(req))}}}), nil
		}),
		tool("kinds", "every kind", readOnly, nil, answer(map[string]any{"rows": []any{map[string]any{
			"i": 1, "f": 1.5, "s": "x", "b": true, "n": nil, "o": map[string]any{"a": 1}, "a": []any{1, 2}}}})),
		tool("block", "blocks", readOnly, nil, func(ctx context.Context, _ *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			running.Add(1)
			defer running.Add(-1)
			select {
			case <-ctx.Done():
			case <-r.HTTPContext().Done():
			}
			return nil, context.Canceled
		}),
		tool("note", "mutating", mutating, nil, nil),
	}
}

func TestSourceConformance(t *testing.T) {
	sourcetest.Run(t, func(t *testing.T) (dataexec.Source, sourcetest.Fixture) {
		e := newEnv(t, nil)
		r := newRemote(t)
		var running atomic.Int64
		r.Set(sourceTools(r, &running)...)
		c := e.MustConnection(t, "Source", r, "")
		e.MustAllow(t, c.ID, "rows", "wide", "kinds", "block", "note")
		base := r.Requests.Load()
		q := func(tool string, args string) dataexec.Query {
			return dataexec.Query{Tool: tool, Arguments: json.RawMessage(args)}
		}
		return mcpsource.NewSource(e.Tools, c.ID), sourcetest.Fixture{
			Rows:  func(n int) dataexec.Query { return q("rows", fmt.Sprintf(`{"n":%d}`, n)) },
			Wide:  func(n int) dataexec.Query { return q("wide", fmt.Sprintf(`{"n":%d}`, n)) },
			Kinds: func() dataexec.Query { return q("kinds", `{}`) },
			Rejected: []dataexec.Query{
				{SQL: "SELECT 1"},
				q("", `{}`),
				q("../../x", `{}`),
				q("rows", `{"n":"many"}`),
				q("rows", `[1]`),
				q("note", `{}`), // approved, but not read-only
			},
			Ran: func() bool { return r.Requests.Load() > base },
			Block: func() (dataexec.Query, func() bool) {
				// The server learns of the cancel when its HTTP request
				// closes, a moment after Query returned: running allows it
				// that moment (bounded), so a source that left the request
				// open would still fail.
				return q("block", `{}`), func() bool {
					for range 200 {
						if running.Load() == 0 {
							return false
						}
						time.Sleep(10 * time.Millisecond)
					}
					return true
				}
			},
		}
	})
}

// mustExecutor is an executor on e's tools whose catalog holds acme's
// Growth dashboard and the MCP connections the service creates, and
// alice, live.
func mustExecutor(t *testing.T, e *conntest.Env) (*dataexec.Executor, access.Principal) {
	t.Helper()
	e.Catalog.PutDashboard(workspace.Dashboard{ID: "dash_growth", TeamID: "acme", ProjectID: "growth", Name: "Growth"})
	live, err := e.Gate.Begin(t.Context(), alice)
	if err != nil {
		t.Fatal(err)
	}
	return dataexec.NewExecutor(e.Catalog, mcpsource.Sources(e.Tools, nil), nil), live
}

func TestDatasets(t *testing.T) {
	e := newEnv(t, nil)
	r := newRemote(t)
	failing := atomic.Bool{}
	r.Set(
		tool("top_pages", "Top pages as (page, [visitors, signups]) tuples.", readOnly, nil,
			func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
				if failing.Load() {
					return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: "db down: at conn.go:12"}}}, nil
				}
				return &mcp.CallToolResult{StructuredContent: map[string]any{"rows": []any{
					[]any{"/pricing", []any{1200, 34}}, []any{"/docs", []any{800, 0}}, []any{"/", []any{0, nil}}}}}, nil
			}),
		tool("summary", "Prose only.", readOnly, nil, answer("Traffic rose 12% this week, mostly from search.")),
		tool("hidden", "Not approved.", readOnly, nil, nil),
	)
	c := e.MustConnection(t, "Analytics", r, "")
	e.MustAllow(t, c.ID, "top_pages", "summary")
	exec, p := mustExecutor(t, e)
	ctx := t.Context()
	save := func(tool string, fields string) (*dataexec.Explored, error) {
		in := dataexec.Exploration{Operation: dataexec.ExploreSave, ConnectionID: c.ID, Tool: tool, Arguments: json.RawMessage(`{"days":7}`),
			Name: "Top pages " + tool, DashboardID: "dash_growth"}
		if fields != "" {
			if err := json.Unmarshal([]byte(fields), &in.Fields); err != nil {
				t.Fatal(err)
			}
		}
		return exec.Explore(ctx, p, in)
	}

	// Response text alone is not chart-ready data.
	_, err := save("summary", "")
	if askbi.ErrorCode(err) != askbi.InvalidResult || !strings.Contains(askbi.ErrorMessage(err), "named columns") {
		t.Errorf("saving a text-only tool = %v; want invalid_result asking for named columns", err)
	}
	if _, err := exec.Explore(ctx, p, dataexec.Exploration{Operation: dataexec.ExplorePreview, ConnectionID: c.ID, Tool: "summary"}); askbi.ErrorCode(err) != askbi.InvalidResult {
		t.Errorf("previewing a text-only tool = %v; want invalid_result, never a one-cell table", err)
	}
	// Missing fields are their own failure.
	_, err = save("top_pages", `{"page": ["column_0"], "visitors": ["column_7"]}`)
	if kind, _ := dataexec.FailureOf(err); kind != dataexec.FailMissingFields || kind.Repair() != dataexec.RepairFixDataset {
		t.Errorf("a missing field path = %v (%s); want missing_fields, fix dataset", err, kind)
	}
	// An unapproved tool is unavailable, and nothing was saved by any of these.
	_, err = save("hidden", "")
	if kind, _ := dataexec.FailureOf(err); kind != dataexec.FailUnavailableTool {
		t.Errorf("saving on an unapproved tool = %v (%s); want unavailable_tool", err, kind)
	}
	if rows, _ := e.Catalog.Search(ctx, workspace.CatalogQuery{TeamID: "acme", Types: []access.EntityType{access.TypeDataset}, Projects: access.AllProjects(), Limit: 10}); len(rows) != 0 {
		t.Fatalf("failed saves left %d datasets", len(rows))
	}
	// Tuples with explicit field paths: zero and null kept.
	out, err := save("top_pages", `{"page": ["column_0"], "visitors": ["column_1", "0"], "signups": ["column_1", 1]}`)
	if err != nil {
		t.Fatalf("save with fields: %v", err)
	}
	res, err := exec.RunDataset(ctx, p, out.Dataset.ID, dataexec.Params{})
	if err != nil {
		t.Fatal(err)
	}
	got, _ := json.Marshal([]any{res.Columns, res.Rows()})
	if want := `[["page","visitors","signups"],[["/pricing",1200,34],["/docs",800,0],["/",0,null]]]`; string(got) != want {
		t.Errorf("RunDataset = %s; want %s", got, want)
	}
	// A failed refresh keeps the last good data, with a warning and its date.
	failing.Store(true)
	stale, err := exec.RunDataset(ctx, p, out.Dataset.ID, dataexec.Params{Refresh: true})
	if err != nil {
		t.Fatalf("a failed refresh: %v; want the last good data", err)
	}
	if stale.Warning == "" || !stale.DataDate.Equal(res.DataDate) || len(stale.Rows()) != 3 || strings.Contains(stale.Warning, "conn.go") {
		t.Errorf("after a failed refresh: warning %q, date %v (first %v), %d rows; want a safe warning and the first data", stale.Warning, stale.DataDate, res.DataDate, len(stale.Rows()))
	}
	// explore_data inspect lists the approved read-only tools beside tables.
	ex, err := exec.Explore(ctx, p, dataexec.Exploration{Operation: dataexec.ExploreInspect, ConnectionID: c.ID})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, rel := range ex.Tables {
		names = append(names, rel.Kind+":"+rel.Name)
	}
	if strings.Join(names, ",") != "mcp_tool:summary,mcp_tool:top_pages" {
		t.Errorf("inspect = %v; want the two approved read-only tools", names)
	}
	ex, _ = exec.Explore(ctx, p, dataexec.Exploration{Operation: dataexec.ExploreInspect})
	found := false
	for _, ref := range ex.Connections {
		found = found || ref.ID == c.ID
	}
	if !found {
		t.Errorf("inspect without a connection = %+v; want the MCP connection listed", ex.Connections)
	}
}
