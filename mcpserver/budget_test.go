package mcpserver_test

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/askbi/askbi/access"
	"github.com/askbi/askbi/dataexec"
	"github.com/askbi/askbi/mcpserver"
)

// sqlWide is an exploration preview of wide rows: its 100 rows (the
// executor's preview cap, so the preview is whole) are about 50 KB of
// JSON, more than the default budget.
const sqlWide = "SELECT week, detail FROM details"

// bigSource answers the test datasets with 1,000 rows each, about 80 KB
// and 120 KB of JSON: more than the default budget; and sqlWide.
func bigSource() dataexec.Source {
	weeks := &dataexec.Table{Columns: []string{"week", "signups"}}
	notes := &dataexec.Table{Columns: []string{"week", "note"}}
	wide := &dataexec.Table{Columns: []string{"week", "detail"}}
	for i := range 1000 {
		week := fmt.Sprintf("week %04d %s", i, strings.Repeat("w", 60))
		weeks.Rows = append(weeks.Rows, []any{week, int64(i * 1000)})
		notes.Rows = append(notes.Rows, []any{week, strings.Repeat("n", 40)})
		if i < 100 {
			wide.Rows = append(wide.Rows, []any{week, strings.Repeat("d", 400)})
		}
	}
	return dataexec.NewTableSource(map[string]*dataexec.Table{sqlSignups: weeks, sqlText: notes, sqlWide: wide})
}

var previewArgs = map[string]any{"dataset_id": "ds_signups", "chart_type": "line", "x_field": "week", "y_fields": []any{"signups"}, "name": "Signups preview"}

// toolResult is one tools/call answer as the client received it.
type toolResult struct {
	raw     json.RawMessage // the serialized tool result, as the budget counts it
	isError bool
	text    string
	data    map[string]any
}

// rows are the result's rows (run_dataset, explore_data) or labels
// (get_chart_data).
func (r toolResult) rows() []any {
	if rows, ok := r.data["rows"].([]any); ok {
		return rows
	}
	labels, _ := r.data["labels"].([]any)
	return labels
}

// mustCallRaw calls a tool over plain HTTP, keeping the bytes of the
// result.
func mustCallRaw(t *testing.T, url, token, tool string, args map[string]any) toolResult {
	t.Helper()
	body, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": map[string]any{"name": tool, "arguments": args}})
	resp, err := http.DefaultClient.Do(mcpRequest(t.Context(), url, token, string(body)))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var msg struct {
		Result json.RawMessage `json:"result"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&msg); err != nil || msg.Result == nil {
		t.Fatalf("%s: status %d, %v", tool, resp.StatusCode, err)
	}
	var res struct {
		IsError bool `json:"isError"`
		Content []struct {
			Text string `json:"text"`
		} `json:"content"`
		StructuredContent map[string]any `json:"structuredContent"`
	}
	if err := json.Unmarshal(msg.Result, &res); err != nil || len(res.Content) < 2 {
		t.Fatalf("%s: result %.200s: %v; want a summary and the JSON", tool, msg.Result, err)
	}
	// The second text is the structured content, whole (a client that
	// reads only content sees the same rows).
	var text map[string]any
	if err := json.Unmarshal([]byte(res.Content[1].Text), &text); err != nil || !cmp.Equal(res.StructuredContent, text) {
		t.Errorf("%s: the second text %.200q is not the structuredContent (%v)", tool, res.Content[1].Text, err)
	}
	return toolResult{raw: msg.Result, isError: res.IsError, text: res.Content[0].Text, data: res.StructuredContent}
}

// wantCut checks that r was cut by reason: flagged in structuredContent
// with the rows it returned, said in the text with how to narrow the
// call, and its rows the first ones of all.
func wantCut(t *testing.T, r toolResult, reason string, all []any) {
	t.Helper()
	rows := r.rows()
	if r.isError || r.data["truncated"] != true || r.data["truncated_reason"] != reason || r.data["row_count"] != float64(len(rows)) {
		t.Errorf("cut result: isError %v, truncated %v, truncated_reason %v, row_count %v with %d rows; want a %s cut",
			r.isError, r.data["truncated"], r.data["truncated_reason"], r.data["row_count"], len(rows), reason)
	}
	if len(rows) == 0 || len(rows) >= len(all) {
		t.Errorf("cut result has %d of %d rows", len(rows), len(all))
	}
	if diff := cmp.Diff(all[:min(len(rows), len(all))], rows); diff != "" {
		t.Errorf("cut rows are not the first rows (-want +got):\n%s", diff)
	}
	if !strings.Contains(r.text, "narrow the call") || (reason == mcpserver.TruncatedBudget && !strings.Contains(r.text, "response budget")) {
		t.Errorf("text %q does not say the result was cut and how to narrow it", r.text)
	}
}

// TestResultBudgetDefault: with the default budget, answers of each data
// tool larger than it come cut to fit it, never failed.
func TestResultBudgetDefault(t *testing.T) {
	e := newEnv(t, bigSource(), "")
	token := e.MustKey(t, "alice", "acme", access.AllProjects(), access.AllScopes...)
	whole := newEnvWith(t, bigSource(), "", func(o *mcpserver.Options, _ *access.TokenLookup) { o.MaxResultBytes = 1 << 20 })
	wholeToken := whole.MustKey(t, "alice", "acme", access.AllProjects(), access.AllScopes...)
	for _, tt := range []struct {
		tool string
		args map[string]any
	}{
		{"run_dataset", map[string]any{"dataset_id": "ds_signups"}},
		{"run_dataset", map[string]any{"dataset_id": "ds_notes"}},
		{"get_chart_data", map[string]any{"chart_id": "chart_signups"}},
		{"create_chart_preview", previewArgs},
		{"explore_data", map[string]any{"operation": "preview", "connection_id": "conn_acme", "sql": sqlWide}},
	} {
		t.Run(tt.tool, func(t *testing.T) {
			all := mustCallRaw(t, whole.url, wholeToken, tt.tool, tt.args)
			if all.data["truncated"] == true {
				t.Fatalf("with a 1 MiB budget the answer is cut: %s", all.text)
			}
			const max = mcpserver.DefaultResultBytes
			if len(all.raw) <= max {
				t.Fatalf("the whole answer is %d bytes, within the %d budget: no test", len(all.raw), max)
			}
			r := mustCallRaw(t, e.url, token, tt.tool, tt.args)
			if len(r.raw) > max {
				t.Errorf("answer is %d bytes, over the %d budget", len(r.raw), max)
			}
			wantCut(t, r, mcpserver.TruncatedBudget, all.rows())
			t.Logf("%s: %d of %d rows, %d bytes (whole %d): %s", tt.tool, len(r.rows()), len(all.rows()), len(r.raw), len(all.raw), r.text)
		})
	}
}

// TestResultBudgetBoundary: an answer exactly the size of the budget
// comes whole; one byte less and it is cut to the rows that fit. The
// same for the caller's limit.
func TestResultBudgetBoundary(t *testing.T) {
	e := newEnvWith(t, bigSource(), "", func(o *mcpserver.Options, _ *access.TokenLookup) { o.MaxResultBytes = 1 << 20 })
	token := e.MustKey(t, "alice", "acme", access.AllProjects(), access.AllScopes...)
	for _, tool := range []string{"run_dataset", "get_chart_data"} {
		t.Run(tool, func(t *testing.T) {
			args := func(extra ...any) map[string]any {
				a := map[string]any{"dataset_id": "ds_signups"}
				if tool == "get_chart_data" {
					a = map[string]any{"chart_id": "chart_signups"}
				}
				for i := 0; i < len(extra); i += 2 {
					a[extra[i].(string)] = extra[i+1]
				}
				return a
			}
			mustCallRaw(t, e.url, token, tool, args()) // from now on, answers are cached and say so
			all := mustCallRaw(t, e.url, token, tool, args())
			size := len(all.raw)
			at := mustCallRaw(t, e.url, token, tool, args("max_bytes", size))
			if at.data["truncated"] != false || len(at.rows()) != len(all.rows()) || len(at.raw) != size {
				t.Errorf("max_bytes %d (the whole answer): truncated %v, %d of %d rows, %d bytes", size, at.data["truncated"], len(at.rows()), len(all.rows()), len(at.raw))
			}
			past := mustCallRaw(t, e.url, token, tool, args("max_bytes", size-1))
			if len(past.raw) > size-1 {
				t.Errorf("max_bytes %d: answer is %d bytes", size-1, len(past.raw))
			}
			wantCut(t, past, mcpserver.TruncatedBudget, all.rows())
			if unused, row := size-1-len(past.raw), size/len(all.rows()); unused >= 2*row {
				t.Errorf("max_bytes %d: the cut answer leaves %d bytes unused, rows are about %d: more rows fit", size-1, unused, row)
			}

			n := len(all.rows())
			atLimit := mustCallRaw(t, e.url, token, tool, args("limit", n))
			if atLimit.data["truncated"] != false || len(atLimit.rows()) != n {
				t.Errorf("limit %d (all rows): truncated %v, %d rows", n, atLimit.data["truncated"], len(atLimit.rows()))
			}
			pastLimit := mustCallRaw(t, e.url, token, tool, args("limit", n-1))
			wantCut(t, pastLimit, mcpserver.TruncatedLimit, all.rows())
			if len(pastLimit.rows()) != n-1 {
				t.Errorf("limit %d: %d rows", n-1, len(pastLimit.rows()))
			}
		})
	}
}

// TestResultBudgetCannotRaise: the caller may lower the server's budget,
// never raise it: above it the call is refused, naming max_bytes, and
// tools/list shows the ceiling.
func TestResultBudgetCannotRaise(t *testing.T) {
	const budget = 5000
	e := newEnvWith(t, bigSource(), "", func(o *mcpserver.Options, _ *access.TokenLookup) { o.MaxResultBytes = budget })
	token := e.MustKey(t, "alice", "acme", access.AllProjects(), access.AllScopes...)
	for _, tool := range []string{"run_dataset", "get_chart_data", "create_chart_preview", "explore_data"} {
		args := map[string]any{"run_dataset": map[string]any{"dataset_id": "ds_signups"}, "get_chart_data": map[string]any{"chart_id": "chart_signups"},
			"create_chart_preview": maps.Clone(previewArgs),
			"explore_data":         map[string]any{"operation": "preview", "connection_id": "conn_acme", "sql": sqlSignups}}[tool].(map[string]any)
		t.Run(tool, func(t *testing.T) {
			args["max_bytes"] = budget + 1
			r := mustCallRaw(t, e.url, token, tool, args)
			if !r.isError || r.data["code"] != "invalid_argument" || !strings.Contains(r.data["message"].(string), "max_bytes") {
				t.Errorf("max_bytes %d over the server's %d: isError %v, code %v, message %v", budget+1, budget, r.isError, r.data["code"], r.data["message"])
			}
			args["max_bytes"] = budget
			if r := mustCallRaw(t, e.url, token, tool, args); r.isError || len(r.raw) > budget {
				t.Errorf("max_bytes %d: isError %v, %d bytes", budget, r.isError, len(r.raw))
			}
			delete(args, "max_bytes")
			if r := mustCallRaw(t, e.url, token, tool, args); r.isError || len(r.raw) > budget {
				t.Errorf("no max_bytes: isError %v, %d bytes over the %d budget", r.isError, len(r.raw), budget)
			}
		})
	}
	cs := e.MustConnect(t, token)
	lt, err := cs.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, tool := range lt.Tools {
		b, _ := json.Marshal(tool.InputSchema)
		budgeted := tool.Name != "search_workspace" && tool.Name != "get_workspace_activity"
		want := fmt.Sprintf(`"max_bytes":{"maximum":%d,"minimum":%d,"type":"integer"}`, budget, mcpserver.MinResultBytes)
		if strings.Contains(string(b), want) != budgeted {
			t.Errorf("%s input schema: %s; want max_bytes with maximum %d on the data tools only", tool.Name, b, budget)
		}
	}
}

// TestResultBudgetOAuth: an OAuth call's team label is inside the budget.
func TestResultBudgetOAuth(t *testing.T) {
	const budget = 5000
	e := newEnvWith(t, bigSource(), "", func(o *mcpserver.Options, authn *access.TokenLookup) {
		o.MaxResultBytes = budget
		o.TeamName = func(context.Context, string) string { return strings.Repeat("Acme ", 20) }
		asOAuth(o, authn)
	})
	token := e.MustKey(t, "alice", "acme", access.AllProjects(), access.AllScopes...)
	r := mustCallRaw(t, e.url, token, "run_dataset", map[string]any{"dataset_id": "ds_signups"})
	if _, ok := r.data["team"]; !ok || len(r.raw) > budget || r.data["truncated"] != true {
		t.Errorf("OAuth answer: team %v, %d bytes (budget %d), truncated %v", r.data["team"], len(r.raw), budget, r.data["truncated"])
	}
}
