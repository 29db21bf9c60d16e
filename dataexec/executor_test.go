package dataexec_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/askbi/askbi"
	"github.com/askbi/askbi/access"
	"github.com/askbi/askbi/dataexec"
	"github.com/askbi/askbi/workspace"
)

var ctx = context.Background()

// resultView lets cmp compare Results: their exported fields and Rows.
var resultView = cmp.Transformer("Result", func(r dataexec.Result) any {
	return struct {
		Dataset *dataexec.Ref
		Columns []string
		Rows    [][]any
		Meta    dataexec.Meta
	}{r.Dataset, r.Columns, r.Rows(), r.Meta}
})

func TestRunDataset(t *testing.T) {
	e := newEnv(t, nil)
	got := mustRun(t, e, vic, "signups", dataexec.Params{})
	want := dataexec.NewResult([]string{"day", "country", "signups"}, [][]any{
		{"2026-11-01", "US", int64(12)}, {"2026-11-02", "US", int64(0)},
		{"2026-11-03", "DE", nil}, {"2026-11-04", "DE", int64(7)},
	}, dataexec.Meta{DataDate: t0})
	want.Dataset = &dataexec.Ref{Type: access.TypeDataset, ID: "signups", Name: "Signups", ProjectID: "growth", Info: "Warehouse · PostgreSQL"}
	if diff := cmp.Diff(want, got, resultView); diff != "" {
		t.Errorf("RunDataset mismatch (-want +got):\n%s", diff)
	}
	wantQuery := dataexec.Query{SQL: "SELECT day, country, signups FROM signups WHERE plan = {{plan}}", MaxRows: 1000, MaxBytes: 1 << 20,
		Variables: map[string]dataexec.VariableValue{"plan": {Type: workspace.VarString, Value: "pro"}}}
	if diff := cmp.Diff(wantQuery, e.src.LastQuery()); diff != "" {
		t.Errorf("source query mismatch (-want +got):\n%s", diff)
	}

	got = mustRun(t, e, vic, "signups", dataexec.Params{
		Filters:   []workspace.Filter{{Field: "signups", Op: workspace.OpGte, Value: json.Number("0")}},
		Variables: map[string]any{"plan": "it's free"},
	})
	if got.RowCount != 3 || got.Cached {
		t.Errorf("filtered run = %d rows, cached %v; want 3 fresh rows", got.RowCount, got.Cached)
	}
	wantQuery.Variables["plan"] = dataexec.VariableValue{Type: workspace.VarString, Value: "it's free"}
	if diff := cmp.Diff(wantQuery, e.src.LastQuery()); diff != "" {
		t.Errorf("source query mismatch (-want +got):\n%s", diff)
	}
}

func TestRunDatasetCache(t *testing.T) {
	e := newEnv(t, nil)
	first := mustRun(t, e, vic, "signups", dataexec.Params{})
	e.clock.Advance(4 * time.Minute)
	hit := mustRun(t, e, bob, "signups", dataexec.Params{})
	if e.calls() != 1 || !hit.Cached || !hit.DataDate.Equal(t0) {
		t.Fatalf("second run: calls %d, cached %v, data date %v; want 1 call, cached, %v", e.calls(), hit.Cached, hit.DataDate, t0)
	}
	if diff := cmp.Diff(first.Rows(), hit.Rows()); diff != "" {
		t.Errorf("cached rows mismatch (-want +got):\n%s", diff)
	}
	e.clock.Advance(time.Minute + time.Second) // past the 5 minute TTL
	expired := mustRun(t, e, vic, "signups", dataexec.Params{})
	if e.calls() != 2 || expired.Cached || !expired.DataDate.Equal(e.clock.Now()) {
		t.Errorf("after TTL: calls %d, cached %v; want a fresh run", e.calls(), expired.Cached)
	}
}

func TestRunDatasetCacheKey(t *testing.T) {
	e := newEnv(t, nil)
	base := dataexec.Params{
		Filters:   []workspace.Filter{{Field: "country", Op: workspace.OpEq, Value: "US"}},
		Variables: map[string]any{"plan": "pro"},
	}
	mustRun(t, e, vic, "signups", base)
	for _, tc := range []struct {
		name   string
		params dataexec.Params
		change func()
		miss   bool
	}{
		{"same request hits", base, nil, false},
		{"default equals explicit value", dataexec.Params{Filters: base.Filters}, nil, false},
		{"other variable value", dataexec.Params{Filters: base.Filters, Variables: map[string]any{"plan": "free"}}, nil, true},
		{"other filter", dataexec.Params{Filters: []workspace.Filter{{Field: "country", Op: workspace.OpEq, Value: "DE"}}}, nil, true},
		{"no filter", dataexec.Params{}, nil, true},
		{"new version", base, func() {
			ds, _ := e.cat.Dataset(ctx, "signups")
			ds.Version++
			e.cat.PutDataset(ds)
		}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.change != nil {
				tc.change()
			}
			before := e.calls()
			res := mustRun(t, e, vic, "signups", tc.params)
			if ran := e.calls() - before; (ran == 1) != tc.miss || res.Cached == tc.miss {
				t.Errorf("ran %d queries, cached %v; want miss=%v", ran, res.Cached, tc.miss)
			}
		})
	}
}

func TestRunDatasetRefresh(t *testing.T) {
	e := newEnv(t, nil)
	mustRun(t, e, vic, "signups", dataexec.Params{})
	readKey := apiKey("alice", "acme", "key-read", access.AllProjects(), access.ScopeDataRead)
	refreshKey := apiKey("alice", "acme", "key-refresh", access.AllProjects(), access.ScopeDataRead, access.ScopeDataRefresh)
	for _, tc := range []struct {
		name string
		p    access.Principal
		want askbi.Code
		runs int
	}{
		{"session viewer", vic, "", 1},
		{"key without data:refresh", readKey, askbi.ScopeRequired, 0},
		{"key with data:refresh", refreshKey, "", 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := e.calls()
			res, err := e.exec.RunDataset(ctx, tc.p, "signups", dataexec.Params{Refresh: true})
			mustCode(t, err, tc.want)
			if got := e.calls() - before; got != tc.runs {
				t.Errorf("refresh ran %d queries, want %d", got, tc.runs)
			}
			if err == nil && res.Cached {
				t.Error("refresh result is cached")
			}
		})
	}
	// Without refresh the read-only key is served from the cache.
	res, err := e.exec.RunDataset(ctx, readKey, "signups", dataexec.Params{})
	if err != nil || !res.Cached {
		t.Errorf("RunDataset(read key) = %+v, %v; want a cached result", res, err)
	}
}

func TestRunDatasetFallback(t *testing.T) {
	e := newEnv(t, nil)
	good := mustRun(t, e, vic, "signups", dataexec.Params{})
	e.src.Fail(askbi.Errorf(askbi.Unavailable, "the database is unreachable"))
	e.clock.Advance(2 * time.Minute)

	t.Run("failed refresh", func(t *testing.T) {
		res := mustRun(t, e, vic, "signups", dataexec.Params{Refresh: true})
		want := good.Meta
		want.Cached = true
		want.Warning = "showing data from 2026-11-30 08:12 UTC; refresh failed: the database is unreachable"
		if diff := cmp.Diff(want, res.Meta); diff != "" {
			t.Errorf("fallback meta mismatch (-want +got):\n%s", diff)
		}
		if diff := cmp.Diff(good.Rows(), res.Rows()); diff != "" {
			t.Errorf("fallback rows mismatch (-want +got):\n%s", diff)
		}
	})
	t.Run("failed fresh run after TTL", func(t *testing.T) {
		e.clock.Advance(10 * time.Minute)
		res := mustRun(t, e, vic, "signups", dataexec.Params{})
		if !strings.HasPrefix(res.Warning, "showing data from 2026-11-30 08:12 UTC") || !res.DataDate.Equal(t0) {
			t.Errorf("fallback = %q from %v", res.Warning, res.DataDate)
		}
	})
	t.Run("no last good result", func(t *testing.T) {
		_, err := e.exec.RunDataset(ctx, vic, "signups", dataexec.Params{Variables: map[string]any{"plan": "free"}})
		mustCode(t, err, askbi.Unavailable)
	})
	t.Run("last good result too old", func(t *testing.T) {
		e.clock.Advance(25 * time.Hour)
		_, err := e.exec.RunDataset(ctx, vic, "signups", dataexec.Params{})
		mustCode(t, err, askbi.Unavailable)
	})
}

func TestBadInput(t *testing.T) {
	e := newEnv(t, &dataexec.Options{MaxRequestBytes: 4 << 10})
	tooMany := make([]workspace.Filter, 21)
	for i := range tooMany {
		tooMany[i] = workspace.Filter{Field: "day", Op: workspace.OpEq, Value: "x"}
	}
	run := func(p access.Principal, id string, params dataexec.Params) func() error {
		return func() error { _, err := e.exec.RunDataset(ctx, p, id, params); return err }
	}
	chart := func(p access.Principal, id string) func() error {
		return func() error { _, err := e.exec.ChartData(ctx, p, id, dataexec.Params{}); return err }
	}
	keyGrowth := apiKey("alice", "acme", "k-growth", access.ProjectSet("growth"), access.ScopeDataRead)
	for _, tc := range []struct {
		name     string
		call     func() error
		wantCode askbi.Code
		wantMsg  string
	}{
		{"unknown dataset", run(vic, "nope", dataexec.Params{}), askbi.NotFound, "dataset not found"},
		{"other team's dataset", run(vic, "tickets", dataexec.Params{}), askbi.NotFound, "dataset not found"},
		{"dataset in a project out of reach", run(bob, "mrr", dataexec.Params{}), askbi.NotFound, "dataset not found"},
		{"dataset outside the key's projects", run(keyGrowth, "mrr", dataexec.Params{}), askbi.NotFound, "dataset not found"},
		{"empty dataset ID", run(vic, "", dataexec.Params{}), askbi.InvalidArgument, "dataset_id is required"},
		{"unknown chart", chart(vic, "nope"), askbi.NotFound, "chart not found"},
		{"other team's chart", chart(vic, "c-ops"), askbi.NotFound, "chart not found"},
		{"unknown filter field", run(vic, "signups", dataexec.Params{Filters: []workspace.Filter{{Field: "revenue", Op: workspace.OpEq, Value: 1.0}}}),
			askbi.InvalidArgument, `filters[0].field: unknown field "revenue"`},
		{"unknown filter op", run(vic, "signups", dataexec.Params{Filters: []workspace.Filter{{Field: "day", Op: "between", Value: "x"}}}),
			askbi.InvalidArgument, `filters[0].op (day): unknown op "between"; use eq, ne, gt, gte, lt, lte, contains or in`},
		{"wrong filter value type", run(vic, "signups", dataexec.Params{Filters: []workspace.Filter{{Field: "signups", Op: workspace.OpGt, Value: true}}}),
			askbi.InvalidArgument, "filters[0].value (signups): must be a number or string"},
		{"too many filters", run(vic, "signups", dataexec.Params{Filters: tooMany}), askbi.InvalidArgument, "filters: at most 20 filters"},
		{"unknown variable", run(vic, "signups", dataexec.Params{Variables: map[string]any{"region": "EU"}}),
			askbi.InvalidArgument, `variables: "region" is not declared by this dataset`},
		{"wrong variable type", run(vic, "signups", dataexec.Params{Variables: map[string]any{"plan": 3.0}}),
			askbi.InvalidArgument, "variables: plan must be a string"},
		{"hostile variable", run(vic, "signups", dataexec.Params{Variables: map[string]any{"plan": `\' OR 1=1 --`}}),
			askbi.InvalidArgument, "variables: plan must be valid text without backslashes"},
		{"oversized request", run(vic, "signups", dataexec.Params{Filters: []workspace.Filter{{Field: "country", Op: workspace.OpEq, Value: strings.Repeat("x", 5000)}}}),
			askbi.TooLarge, "the request is larger than 4 KiB; shorten the query, arguments, filters or variables"},
		{"connection type without a source", run(vic, "shop", dataexec.Params{}), askbi.Unsupported, "this connection's source type is not supported here"},
		{"principal of another team", run(carol, "signups", dataexec.Params{}), askbi.NotFound, "dataset not found"},
		{"unauthenticated", run(access.Principal{}, "signups", dataexec.Params{}), askbi.Unauthenticated, "no user or team"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := e.calls()
			err := tc.call()
			if askbi.ErrorCode(err) != tc.wantCode || askbi.ErrorMessage(err) != tc.wantMsg {
				t.Errorf("error = %v; want %s %q", err, tc.wantCode, tc.wantMsg)
			}
			if e.calls() != before {
				t.Errorf("the source ran %d queries, want none", e.calls()-before)
			}
		})
	}
}

// TestFilterPassThroughDataset covers a dataset without declared fields:
// its columns are only known after the run, so an unknown filter field is
// found then, and nothing is cached.
func TestFilterPassThroughDataset(t *testing.T) {
	e := newEnv(t, nil)
	e.plain.Table(&dataexec.Table{Columns: []string{"month", "mrr"}, Rows: [][]any{{"2026-10", 100.5}, {"2026-11", 120.0}}})
	bad := dataexec.Params{Filters: []workspace.Filter{{Field: "revenue", Op: workspace.OpGt, Value: 1.0}}}
	for range 2 {
		_, err := e.exec.RunDataset(ctx, vic, "mrr", bad)
		mustCode(t, err, askbi.InvalidArgument)
	}
	if e.calls() != 2 {
		t.Errorf("ran %d queries, want 2 (a failed run is not cached)", e.calls())
	}
	res := mustRun(t, e, vic, "mrr", dataexec.Params{Filters: []workspace.Filter{{Field: "mrr", Op: workspace.OpGt, Value: 110.0}}})
	if diff := cmp.Diff([][]any{{"2026-11", 120.0}}, res.Rows()); diff != "" {
		t.Errorf("rows mismatch (-want +got):\n%s", diff)
	}
}

func TestTruncation(t *testing.T) {
	t.Run("row cap", func(t *testing.T) {
		e := newEnv(t, &dataexec.Options{MaxRows: 2})
		res := mustRun(t, e, vic, "signups", dataexec.Params{})
		if res.RowCount != 2 || !res.Truncated || res.TruncatedReason != dataexec.TruncatedRows {
			t.Errorf("result = %+v, want 2 rows truncated by row_cap", res.Meta)
		}
	})
	t.Run("row cap is clamped", func(t *testing.T) {
		e := newEnv(t, &dataexec.Options{MaxRows: 1 << 30})
		mustRun(t, e, vic, "signups", dataexec.Params{})
		if got := e.src.queries[0].MaxRows; got != dataexec.HardMaxRows {
			t.Errorf("MaxRows passed to the source = %d, want %d", got, dataexec.HardMaxRows)
		}
	})
	t.Run("byte cap", func(t *testing.T) {
		e := newEnv(t, &dataexec.Options{MaxBytes: 80})
		res := mustRun(t, e, vic, "signups", dataexec.Params{})
		if res.RowCount != 2 || !res.Truncated || res.TruncatedReason != dataexec.TruncatedBytes {
			t.Errorf("result = %+v, want 2 rows truncated by byte_cap", res.Meta)
		}
		cols, _ := json.Marshal(res.Columns)
		rows, _ := json.Marshal(res.Rows())
		if n := len(cols) + len(rows); n > 80 {
			t.Errorf("serialized columns and rows are %d bytes, over the 80 byte cap", n)
		}
	})
}

func TestTimeout(t *testing.T) {
	e := newEnv(t, &dataexec.Options{Timeout: time.Millisecond})
	e.src.Respond(func(ctx context.Context, q dataexec.Query) (*dataexec.Table, error) {
		<-ctx.Done() // a query that never finishes on its own
		return nil, ctx.Err()
	})
	_, err := e.exec.RunDataset(ctx, vic, "signups", dataexec.Params{})
	mustCode(t, err, askbi.Timeout)
	if want := "the source did not answer within 1ms; narrow the request or try again"; askbi.ErrorMessage(err) != want {
		t.Errorf("message = %q, want %q", askbi.ErrorMessage(err), want)
	}
}

func TestChartData(t *testing.T) {
	e := newEnv(t, nil)
	got, err := e.exec.ChartData(ctx, vic, "c-signups", dataexec.Params{})
	if err != nil {
		t.Fatal(err)
	}
	f := func(v float64) *float64 { return &v }
	want := &dataexec.ChartResult{
		Status:    workspace.StatusSaved,
		Chart:     dataexec.Ref{Type: access.TypeChart, ID: "c-signups", Name: "Signups by day", ProjectID: "growth", Info: "Growth overview · line chart"},
		ChartType: workspace.ChartLine,
		Datasets:  []dataexec.Ref{{Type: access.TypeDataset, ID: "signups", Name: "Signups", ProjectID: "growth", Info: "Warehouse · PostgreSQL"}},
		Dashboard: &dataexec.Ref{Type: access.TypeDashboard, ID: "d-growth", Name: "Growth overview", ProjectID: "growth"},
		Data: &dataexec.ChartData{
			Type:   workspace.ChartLine,
			XField: "day",
			Labels: []string{"2026-11-01", "2026-11-02", "2026-11-03", "2026-11-04"},
			Series: []dataexec.Series{{Name: "signups", Values: []*float64{f(12), f(0), nil, f(7)}}},
			Meta:   dataexec.Meta{RowCount: 4, DataDate: t0},
		},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("ChartData mismatch (-want +got):\n%s", diff)
	}

	// Reading a chart never fails on empty data.
	got, err = e.exec.ChartData(ctx, vic, "c-signups", dataexec.Params{Filters: []workspace.Filter{{Field: "country", Op: workspace.OpEq, Value: "FR"}}})
	if err != nil || len(got.Data.Labels) != 0 {
		t.Errorf("ChartData(no rows) = %+v, %v; want empty data", got, err)
	}
}

func TestPreview(t *testing.T) {
	e := newEnv(t, &dataexec.Options{PreviewRows: 3})
	e.src.Table(&dataexec.Table{
		Columns: []string{"page", "stats"},
		Rows: [][]any{
			{"/a", []any{json.Number("1"), map[string]any{"v": json.Number("10")}}},
			{"/b", []any{json.Number("0"), nil}},
			{"/c", []any{json.Number("3")}},
			{"/d", []any{json.Number("4")}},
		},
	})
	req := dataexec.Exploration{Operation: dataexec.ExplorePreview, ConnectionID: "wh", SQL: "SELECT page, stats FROM pages"}
	out, err := e.exec.Explore(ctx, bob, req)
	if err != nil {
		t.Fatal(err)
	}
	if raw := out.Preview; raw.RowCount != 3 || !raw.Truncated || raw.Rows()[0][1] == nil {
		t.Errorf("raw preview = %+v, want 3 rows with nested cells, truncated", raw)
	}
	req.Fields = workspace.Fields{{Name: "page", Path: []string{"column_0"}}, {Name: "visitors", Path: []string{"column_1", "0"}}}
	out, err = e.exec.Explore(ctx, bob, req)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([][]any{{"/a", json.Number("1")}, {"/b", json.Number("0")}, {"/c", json.Number("3")}}, out.Preview.Rows()); diff != "" {
		t.Errorf("mapped preview mismatch (-want +got):\n%s", diff)
	}
	if e.calls() != 2 {
		t.Errorf("previews ran %d queries, want 2 (never cached)", e.calls())
	}

	for _, tc := range []struct {
		name string
		p    access.Principal
		req  dataexec.Exploration
		want askbi.Code
	}{
		{"viewer cannot explore", vic, req, askbi.Forbidden},
		{"project key cannot explore", apiKey("alice", "acme", "k", access.ProjectSet("growth"), access.ScopeDataRead), req, askbi.Forbidden},
		{"other team's connection", bob, previewOf("gx", "SELECT 1"), askbi.NotFound},
		{"project connection out of reach", bob, previewOf("fin", "SELECT 1"), askbi.NotFound},
		{"inactive connection", bob, dataexec.Exploration{Operation: dataexec.ExplorePreview, ConnectionID: "off", Tool: "list"}, askbi.Unavailable},
		{"no source", bob, previewOf("legacy", "SELECT 1"), askbi.Unsupported},
		{"sql and tool", bob, dataexec.Exploration{Operation: dataexec.ExplorePreview, ConnectionID: "wh", SQL: "SELECT 1", Tool: "x"}, askbi.InvalidArgument},
		{"neither", bob, previewOf("wh", ""), askbi.InvalidArgument},
		{"no connection", bob, previewOf("", "SELECT 1"), askbi.InvalidArgument},
		{"reference the source cannot bind", bob, previewOf("wh", "SELECT '{{x}}'"), askbi.InvalidArgument},
		{"undeclared variable", bob, previewOf("wh", "SELECT {{x}}"), askbi.InvalidArgument},
		{"bad field path", bob, dataexec.Exploration{Operation: dataexec.ExplorePreview, ConnectionID: "wh", SQL: "SELECT 1", Fields: workspace.Fields{{Name: "a"}}}, askbi.InvalidArgument},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := e.calls()
			_, err := e.exec.Explore(ctx, tc.p, tc.req)
			mustCode(t, err, tc.want)
			if e.calls() != before {
				t.Error("the source ran")
			}
		})
	}
}

// previewOf is the exploration that previews sql on connection id.
func previewOf(id, sql string) dataexec.Exploration {
	return dataexec.Exploration{Operation: dataexec.ExplorePreview, ConnectionID: id, SQL: sql}
}

// TestSQLVariablesNeedABinder: SQL that declares or references variables
// never reaches a source that cannot bind them, which would run it as
// written; SQL without variables does, with none.
func TestSQLVariablesNeedABinder(t *testing.T) {
	e := newEnv(t, nil)
	exec := gated{e.exec.gate, dataexec.NewExecutor(e.cat, dataexec.SourceMap{"wh": plainSource{e.src}}, &dataexec.Options{Now: e.clock.Now})}
	const msg = "this connection's source cannot bind {{variables}} in SQL; write the values into the query"
	e.cat.PutDataset(workspace.Dataset{ID: "declared", TeamID: "acme", ProjectID: "growth", Name: "Declared", Version: 1,
		Request: workspace.Request{ConnectionID: "wh", SQL: "SELECT 1", Variables: []workspace.Variable{{Name: "x", Type: workspace.VarString, Default: "a"}}}})
	for _, tc := range []struct {
		name string
		call func() error
	}{
		{"dataset with a variable", func() error { _, err := exec.RunDataset(ctx, vic, "signups", dataexec.Params{}); return err }},
		{"reference without a declaration", func() error {
			_, err := exec.Explore(ctx, bob, previewOf("wh", "SELECT {{x}}"))
			return err
		}},
		{"declaration without a reference", func() error { _, err := exec.RunDataset(ctx, vic, "declared", dataexec.Params{}); return err }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := e.calls()
			err := tc.call()
			if askbi.ErrorCode(err) != askbi.Unsupported || askbi.ErrorMessage(err) != msg {
				t.Errorf("error = %v; want unsupported %q", err, msg)
			}
			if e.calls() != before {
				t.Error("the source ran")
			}
		})
	}
	if _, err := exec.Explore(ctx, bob, previewOf("wh", "SELECT 1")); err != nil {
		t.Fatalf("preview without variables: %v", err)
	}
	if q := e.src.LastQuery(); q.SQL != "SELECT 1" || q.Variables != nil {
		t.Errorf("source query = %+v, want SELECT 1 without variables", q)
	}
}

// plainSource hides every method of a source but Query.
type plainSource struct{ dataexec.Source }

func TestInspect(t *testing.T) {
	e := newEnv(t, nil)
	inspect := func(p access.Principal, connectionID, table string) ([]dataexec.Relation, error) {
		out, err := e.exec.Explore(ctx, p, dataexec.Exploration{Operation: dataexec.ExploreInspect, ConnectionID: connectionID, Table: table})
		if err != nil {
			return nil, err
		}
		return out.Tables, nil
	}
	rels, err := inspect(bob, "wh", "signups")
	if err != nil {
		t.Fatal(err)
	}
	if len(rels) != 1 || len(rels[0].Columns) != 3 {
		t.Errorf("inspect(signups) = %+v, want one relation with 3 columns", rels)
	}
	_, err = inspect(bob, "wh", "secrets")
	mustCode(t, err, askbi.NotFound)
	_, err = inspect(alice, "fin", "")
	mustCode(t, err, askbi.Unsupported)
	_, err = inspect(vic, "wh", "")
	mustCode(t, err, askbi.Forbidden)
}

func TestConnections(t *testing.T) {
	e := newEnv(t, nil)
	names := func(p access.Principal) ([]string, error) {
		ex, err := e.exec.Explore(ctx, p, dataexec.Exploration{Operation: dataexec.ExploreInspect})
		if err != nil {
			return nil, err
		}
		var out []string
		for _, r := range ex.Connections {
			out = append(out, r.Name+": "+r.Info)
		}
		return out, err
	}
	got, err := names(bob)
	if err != nil {
		t.Fatal(err)
	}
	// bob reaches growth only, so the finance connection is left out.
	if diff := cmp.Diff([]string{"Warehouse: PostgreSQL · active", "Old shop: MySQL · active", "Pending: MCP · inactive"}, got); diff != "" {
		t.Errorf("Connections mismatch (-want +got):\n%s", diff)
	}
	_, err = names(vic)
	mustCode(t, err, askbi.Forbidden)
	_, err = names(apiKey("alice", "acme", "k", access.ProjectSet("growth"), access.ScopeDataRead))
	mustCode(t, err, askbi.Forbidden)
}

// TestNeedsLivePrincipal: a principal that did not pass the gate is
// refused, and runs no query.
func TestNeedsLivePrincipal(t *testing.T) {
	e := newEnv(t, nil)
	_, err := e.exec.x.RunDataset(ctx, vic, "signups", dataexec.Params{})
	mustCode(t, err, askbi.Internal)
	_, err = e.exec.x.Search(ctx, vic, dataexec.SearchQuery{})
	mustCode(t, err, askbi.Internal)
	if e.calls() != 0 {
		t.Error("an unresolved principal ran a query")
	}
}

func TestLiveMembership(t *testing.T) {
	e := newEnv(t, nil)
	mustRun(t, e, bob, "signups", dataexec.Params{})
	if _, err := e.exec.Explore(ctx, bob, previewOf("wh", "SELECT 1")); askbi.ErrorCode(err) == askbi.Forbidden {
		t.Fatalf("editor cannot explore: %v", err)
	}
	bobKey := apiKey("bob", "acme", "k-bob", access.AllProjects(), access.ScopeDataRead)
	mustRun(t, e, bobKey, "signups", dataexec.Params{})

	// Downgraded to viewer: exploring stops at once.
	e.dir.SetMember("acme", "bob", access.RoleViewer, access.ProjectSet("growth"))
	_, err := e.exec.Explore(ctx, bob, previewOf("wh", "SELECT 1"))
	mustCode(t, err, askbi.Forbidden)
	// Moved to another project: the cached dataset is out of reach at once.
	e.dir.SetMember("acme", "bob", access.RoleEditor, access.ProjectSet("finance"))
	_, err = e.exec.RunDataset(ctx, bob, "signups", dataexec.Params{})
	mustCode(t, err, askbi.NotFound)
	// Removed: sessions and keys stop working at once, cache or not.
	e.dir.RemoveMember("acme", "bob")
	for _, p := range []access.Principal{bob, bobKey} {
		_, err = e.exec.RunDataset(ctx, p, "signups", dataexec.Params{})
		mustCode(t, err, askbi.Forbidden)
		_, err = e.exec.Search(ctx, p, dataexec.SearchQuery{})
		mustCode(t, err, askbi.Forbidden)
	}
}
