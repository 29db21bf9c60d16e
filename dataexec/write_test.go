package dataexec_test

import (
	"context"
	"encoding/json"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/askbi/askbi"
	"github.com/askbi/askbi/access"
	"github.com/askbi/askbi/dataexec"
	"github.com/askbi/askbi/workspace"
	"github.com/askbi/askbi/workspace/workspacetest"
)

func TestSaveDataset(t *testing.T) {
	e := newEnv(t, nil)
	e.clock.Advance(time.Minute)
	save := dataexec.Exploration{Operation: dataexec.ExploreSave, Name: " Signups by plan ", DashboardID: "d-growth",
		ConnectionID: "wh", SQL: "SELECT day, country, signups FROM signups WHERE plan = 'pro'"}
	saved, err := e.exec.Explore(ctx, bob, save)
	if err != nil {
		t.Fatal(err)
	}
	wantRef := &dataexec.Ref{Type: access.TypeDataset, ID: saved.Dataset.ID, Name: "Signups by plan", ProjectID: "growth", Info: "Warehouse · PostgreSQL"}
	if diff := cmp.Diff(wantRef, saved.Dataset); diff != "" {
		t.Errorf("saved ref mismatch (-want +got):\n%s", diff)
	}
	if saved.Preview.RowCount != 4 {
		t.Errorf("preview has %d rows, want 4", saved.Preview.RowCount)
	}
	got, err := e.cat.Dataset(ctx, saved.Dataset.ID)
	if err != nil {
		t.Fatal(err)
	}
	req := workspace.Request{ConnectionID: save.ConnectionID, SQL: save.SQL}
	req.Fields = workspace.Fields{{Name: "day", Path: []string{"day"}}, {Name: "country", Path: []string{"country"}}, {Name: "signups", Path: []string{"signups"}}}
	want := workspace.Dataset{ID: saved.Dataset.ID, TeamID: "acme", ProjectID: "growth", Name: "Signups by plan", Version: 1,
		Request: req, CreatedAt: e.clock.Now(), UpdatedAt: e.clock.Now()}
	if diff := cmp.Diff(want, got, workspacetest.CmpOptions); diff != "" {
		t.Errorf("stored dataset mismatch (-want +got):\n%s", diff)
	}
	entries := e.audit.Entries()
	wantEntry := access.AuditEntry{Time: e.clock.Now(), Action: dataexec.ActionDatasetSave, UserID: "bob", TeamID: "acme",
		Auth: access.AuthSession, Target: got.Ref(), Outcome: access.OutcomeOK,
		Details: map[string]string{"connection_type": "postgres", "preview_rows": "4"}}
	if diff := cmp.Diff([]access.AuditEntry{wantEntry}, entries); diff != "" {
		t.Errorf("audit mismatch (-want +got):\n%s", diff)
	}

	// The saved dataset runs, and its fields now check filters up front.
	runs := e.calls()
	_, err = e.exec.RunDataset(ctx, bob, saved.Dataset.ID, dataexec.Params{Filters: []workspace.Filter{{Field: "revenue", Op: workspace.OpEq, Value: "x"}}})
	mustCode(t, err, askbi.InvalidArgument)
	if e.calls() != runs {
		t.Error("a filter on an unknown field ran the dataset")
	}
}

func TestSaveDatasetNeverSavesBadPreviews(t *testing.T) {
	ownerKey := apiKey("alice", "acme", "k-alice", access.AllProjects(), access.ScopeDataRead, access.ScopeDatasetsWrite)
	good := dataexec.Exploration{Operation: dataexec.ExploreSave, Name: "New", DashboardID: "d-growth", ConnectionID: "wh", SQL: "SELECT 1"}
	with := func(f func(*dataexec.Exploration)) dataexec.Exploration {
		nd := good
		f(&nd)
		return nd
	}
	for _, tc := range []struct {
		name    string
		p       access.Principal
		nd      dataexec.Exploration
		respond func(context.Context, dataexec.Query) (*dataexec.Table, error)
		opts    *dataexec.Options
		want    askbi.Code
		msg     string
		ran     bool
	}{
		{name: "empty preview", p: bob, nd: good, ran: true,
			respond: table(&dataexec.Table{Columns: []string{"a"}}),
			want:    askbi.InvalidResult, msg: "the preview returned no rows, so nothing was saved; widen the query or its date range"},
		{name: "mapping fails", p: bob, ran: true,
			nd: with(func(nd *dataexec.Exploration) {
				nd.Fields = workspace.Fields{{Name: "v", Path: []string{"signups", "0"}}}
			}),
			want: askbi.InvalidResult, msg: "field v: path signups.0 not found in row 1"},
		{name: "object cells without fields", p: bob, ran: true,
			respond: table(&dataexec.Table{Columns: []string{"payload"}, Rows: [][]any{{map[string]any{"a": 1.0}}}}),
			nd:      good, want: askbi.InvalidResult, msg: "column payload holds objects or arrays; add output fields that select values inside it"},
		{name: "text-only tool result", p: alice, ran: true,
			respond: table(&dataexec.Table{Columns: []string{"text"}, Rows: [][]any{{"Visitors were up 5% this week."}}}),
			nd:      with(func(nd *dataexec.Exploration) { nd.SQL, nd.Tool = "", "summary" }),
			want:    askbi.InvalidResult, msg: "the tool returned only text, which is not chart-ready data; add output fields that select named values"},
		{name: "duplicate column names", p: bob, ran: true,
			respond: table(&dataexec.Table{Columns: []string{"n", "n"}, Rows: [][]any{{1.0, 2.0}}}),
			nd:      good, want: askbi.InvalidResult,
			msg: "the result's column names cannot be used as fields (fields: field n appears twice); give each column a short, unique alias"},
		{name: "timed out preview", p: bob, nd: good, ran: true, opts: &dataexec.Options{Timeout: time.Millisecond},
			respond: func(ctx context.Context, _ dataexec.Query) (*dataexec.Table, error) {
				<-ctx.Done()
				return nil, ctx.Err()
			},
			want: askbi.Timeout, msg: "the source did not answer within 1ms; narrow the request or try again"},
		{name: "source error", p: bob, nd: good, ran: true,
			respond: func(context.Context, dataexec.Query) (*dataexec.Table, error) {
				return nil, askbi.Errorf(askbi.InvalidArgument, "only SELECT statements are allowed")
			},
			want: askbi.InvalidArgument, msg: "only SELECT statements are allowed"},
		{name: "bad name", p: bob, nd: with(func(nd *dataexec.Exploration) { nd.Name = " \t" }),
			want: askbi.InvalidArgument, msg: "name: must be 1 to 100 printable characters"},
		{name: "project connection on another project's dashboard", p: alice,
			nd:   with(func(nd *dataexec.Exploration) { nd.ConnectionID = "fin" }),
			want: askbi.InvalidArgument, msg: "dashboard_id: this connection is not available in the dashboard's project"},
		{name: "viewer", p: vic, nd: good, want: askbi.Forbidden, msg: "this action requires the editor role or above"},
		{name: "key without datasets:write", p: apiKey("alice", "acme", "k-r", access.AllProjects(), access.ScopeDataRead), nd: good,
			want: askbi.ScopeRequired, msg: "this action requires the datasets:write scope"},
		{name: "project key", p: apiKey("alice", "acme", "k-p", access.ProjectSet("growth"), access.ScopeDataRead, access.ScopeDatasetsWrite), nd: good,
			want: askbi.Forbidden, msg: "this action requires a team owner or admin with an all-project key"},
		{name: "editor out of the dashboard's project", p: bob, nd: with(func(nd *dataexec.Exploration) { nd.DashboardID = "d-fin" }),
			want: askbi.NotFound, msg: "dashboard not found"},
		{name: "other team's dashboard", p: ownerKey, nd: with(func(nd *dataexec.Exploration) { nd.DashboardID = "d-ops" }),
			want: askbi.NotFound, msg: "dashboard not found"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, tc.opts)
			if tc.respond != nil {
				e.src.Respond(tc.respond)
			}
			before := e.datasetCount(t)
			_, err := e.exec.Explore(ctx, tc.p, tc.nd)
			if askbi.ErrorCode(err) != tc.want || askbi.ErrorMessage(err) != tc.msg {
				t.Errorf("save = %v; want %s %q", err, tc.want, tc.msg)
			}
			if got := e.datasetCount(t); got != before {
				t.Errorf("datasets: %d, want %d (nothing saved)", got, before)
			}
			if ran := e.calls() > 0; ran != tc.ran {
				t.Errorf("source ran: %v, want %v", ran, tc.ran)
			}
			entries := e.audit.Entries()
			if len(entries) != 1 || entries[0].Outcome != string(tc.want) {
				t.Errorf("audit = %+v, want one %s entry", entries, tc.want)
			}
		})
	}
}

// failingCatalog is a catalog whose CreateDataset fails as a lost
// database connection would, after recording what it was asked to store.
type failingCatalog struct {
	*workspace.MemoryCatalog

	mu    sync.Mutex
	saves []workspace.Dataset // what each CreateDataset call was asked to store
}

func (c *failingCatalog) CreateDataset(_ context.Context, d workspace.Dataset) (workspace.Dataset, error) {
	c.mu.Lock()
	c.saves = append(c.saves, d)
	c.mu.Unlock()
	return workspace.Dataset{}, askbi.Errorf(askbi.Unavailable, "the database connection was lost")
}

// TestSaveDatasetCatalogFailure checks the Executor's half of
// an exploration save's atomicity: the dataset and its whole request go to the
// catalog in one CreateDataset call, never retried, and the catalog's
// error comes back as it is, with nothing reported or audited as saved.
// The catalog's half (a failed CreateDataset stores neither the dataset
// nor its request) is the real catalog's to prove, on PostgreSQL:
// pgstore's TestSaveDatasetRollback.
func TestSaveDatasetCatalogFailure(t *testing.T) {
	e := newEnv(t, nil)
	cat := &failingCatalog{MemoryCatalog: e.cat}
	exec := gated{e.exec.gate, dataexec.NewExecutor(cat, dataexec.SourceMap{"wh": e.src}, &dataexec.Options{Audit: e.audit, Now: e.clock.Now})}
	save := dataexec.Exploration{Operation: dataexec.ExploreSave, Name: "Signups by plan", DashboardID: "d-growth",
		ConnectionID: "wh", SQL: "SELECT day, country, signups FROM signups"}

	saved, err := exec.Explore(ctx, bob, save)
	if askbi.ErrorCode(err) != askbi.Unavailable || askbi.ErrorMessage(err) != "the database connection was lost" || saved != nil {
		t.Fatalf("save = %+v, %v; want nothing saved and the catalog's unavailable error", saved, err)
	}
	want := workspace.Request{ConnectionID: save.ConnectionID, SQL: save.SQL}
	want.Fields = workspace.Fields{{Name: "day", Path: []string{"day"}}, {Name: "country", Path: []string{"country"}}, {Name: "signups", Path: []string{"signups"}}}
	if len(cat.saves) != 1 {
		t.Fatalf("CreateDataset called %d times, want once", len(cat.saves))
	}
	if diff := cmp.Diff(want, cat.saves[0].Request, workspacetest.CmpOptions); diff != "" {
		t.Errorf("the one CreateDataset call did not carry the whole request (-want +got):\n%s", diff)
	}
	entries := e.audit.Entries()
	dash := access.Entity{Type: access.TypeDashboard, ID: "d-growth", TeamID: "acme", ProjectID: "growth"}
	if len(entries) != 1 || entries[0].Outcome != string(askbi.Unavailable) || entries[0].Target != dash {
		t.Errorf("audit = %+v, want one unavailable entry on the dashboard", entries)
	}
}

func table(t *dataexec.Table) func(context.Context, dataexec.Query) (*dataexec.Table, error) {
	return func(context.Context, dataexec.Query) (*dataexec.Table, error) { return t, nil }
}

func TestCreateChartPreview(t *testing.T) {
	e := newEnv(t, nil)
	spec := dataexec.ChartSpec{DatasetID: "signups", Name: "Signups by country", Type: workspace.ChartBar, XField: "country", YFields: []string{"signups"}}
	got, err := e.exec.CreateChartPreview(ctx, vic, spec)
	if err != nil {
		t.Fatal(err)
	}
	stored, err := e.cat.Chart(ctx, got.Chart.ID)
	if err != nil {
		t.Fatal(err)
	}
	wantChart := workspace.Chart{ID: got.Chart.ID, TeamID: "acme", ProjectID: "growth", Name: "Signups by country", Type: workspace.ChartBar,
		DatasetID: "signups", XField: "country", YFields: []string{"signups"}, CreatedBy: "vic", CreatedAt: t0, UpdatedAt: t0}
	if diff := cmp.Diff(wantChart, stored, workspacetest.CmpOptions); diff != "" {
		t.Errorf("stored chart mismatch (-want +got):\n%s", diff)
	}
	if got.Status != workspace.StatusPreview || got.Dashboard != nil || len(got.Datasets) != 1 || got.Datasets[0].ID != "signups" {
		t.Errorf("result = %+v, want a preview with its dataset and no dashboard", got)
	}
	if diff := cmp.Diff([]string{"US", "US", "DE", "DE"}, got.Data.Labels); diff != "" {
		t.Errorf("labels mismatch (-want +got):\n%s", diff)
	}

	text := &dataexec.Table{Columns: []string{"day", "country", "signups"}, Rows: [][]any{{"a", "US", "many"}, {"b", "DE", "few"}}}
	for _, tc := range []struct {
		name    string
		p       access.Principal
		spec    dataexec.ChartSpec
		respond func(context.Context, dataexec.Query) (*dataexec.Table, error)
		want    askbi.Code
		msg     string
		ran     bool
	}{
		{name: "empty result", p: vic, spec: spec, ran: true, respond: table(&dataexec.Table{Columns: []string{"day", "country", "signups"}}),
			want: askbi.InvalidResult, msg: "the query returned no rows; widen the date range or remove filters"},
		{name: "text-only measure", p: vic, spec: spec, ran: true, respond: table(text),
			want: askbi.InvalidResult, msg: "field signups has no numeric values; choose a numeric field or aggregate"},
		{name: "missing field", p: vic, ran: true, spec: dataexec.ChartSpec{DatasetID: "signups", Name: "x", Type: workspace.ChartBar, XField: "week", YFields: []string{"signups"}},
			want: askbi.InvalidResult, msg: "field week is not in the dataset; available fields: day, country, signups"},
		{name: "bad spec", p: vic, spec: dataexec.ChartSpec{DatasetID: "signups", Name: "x", Type: "radar", XField: "day", YFields: []string{"signups"}},
			want: askbi.InvalidArgument, msg: "chart_type: must be one of line, bar, area, pie, doughnut, table, kpi"},
		{name: "other team's dataset", p: vic, spec: dataexec.ChartSpec{DatasetID: "tickets", Name: "x", Type: workspace.ChartBar, XField: "day", YFields: []string{"signups"}},
			want: askbi.NotFound, msg: "dataset not found"},
		{name: "key without charts:preview", p: apiKey("alice", "acme", "k", access.AllProjects(), access.ScopeDataRead), spec: spec,
			want: askbi.ScopeRequired, msg: "this action requires the charts:preview scope"},
		{name: "editor's key", p: apiKey("bob", "acme", "k", access.AllProjects(), access.ScopeDataRead, access.ScopeChartsPreview), spec: spec,
			want: askbi.Forbidden, msg: "this action requires a team owner or admin with an all-project key"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, nil)
			if tc.respond != nil {
				e.src.Respond(tc.respond)
			}
			_, err := e.exec.CreateChartPreview(ctx, tc.p, tc.spec)
			if askbi.ErrorCode(err) != tc.want || askbi.ErrorMessage(err) != tc.msg {
				t.Errorf("CreateChartPreview = %v; want %s %q", err, tc.want, tc.msg)
			}
			if ran := e.calls() > 0; ran != tc.ran {
				t.Errorf("source ran: %v, want %v", ran, tc.ran)
			}
			rows, _ := e.cat.Search(ctx, workspace.CatalogQuery{TeamID: "acme", Types: []access.EntityType{access.TypeChart}, Projects: access.AllProjects(),
				UserID: tc.p.UserID, Limit: 50})
			if len(rows) != 2 {
				t.Errorf("acme has %d charts %s reaches, want the 2 seeded (nothing created)", len(rows), tc.p.UserID)
			}
		})
	}
}

func TestPlaceChart(t *testing.T) {
	e := newEnv(t, nil)
	preview, err := e.exec.CreateChartPreview(ctx, bob, dataexec.ChartSpec{DatasetID: "signups", Name: "By country", Type: workspace.ChartPie, XField: "country", YFields: []string{"signups"}})
	if err != nil {
		t.Fatal(err)
	}
	id := preview.Chart.ID

	_, err = e.exec.PlaceChart(ctx, vic, "c-vic", "d-growth")
	mustCode(t, err, askbi.Forbidden) // a viewer cannot edit the dashboard
	_, err = e.exec.PlaceChart(ctx, alice, id, "d-growth")
	mustCode(t, err, askbi.NotFound) // another member's preview, for the team's owner too
	_, err = e.exec.PlaceChart(ctx, bob, id, "d-fin")
	mustCode(t, err, askbi.NotFound) // out of bob's projects
	_, err = e.exec.PlaceChart(ctx, alice, "c-alice", "d-fin")
	mustCode(t, err, askbi.InvalidArgument) // another project than the dataset's
	_, err = e.exec.PlaceChart(ctx, bob, id, "d-ops")
	mustCode(t, err, askbi.NotFound) // another team's dashboard
	_, err = e.exec.PlaceChart(ctx, carol, id, "d-ops")
	mustCode(t, err, askbi.NotFound) // another team's chart

	e.clock.Advance(time.Minute)
	placed, err := e.exec.PlaceChart(ctx, bob, id, "d-growth")
	if err != nil {
		t.Fatal(err)
	}
	want := &dataexec.ChartResult{
		Status:    workspace.StatusSaved,
		Chart:     dataexec.Ref{Type: access.TypeChart, ID: id, Name: "By country", ProjectID: "growth", Info: "Growth overview · pie chart"},
		ChartType: workspace.ChartPie,
		Datasets:  []dataexec.Ref{{Type: access.TypeDataset, ID: "signups", Name: "Signups", ProjectID: "growth", Info: "Warehouse · PostgreSQL"}},
		Dashboard: &dataexec.Ref{Type: access.TypeDashboard, ID: "d-growth", Name: "Growth overview", ProjectID: "growth"},
	}
	if diff := cmp.Diff(want, placed); diff != "" {
		t.Errorf("PlaceChart mismatch (-want +got):\n%s", diff)
	}
	stored, err := e.cat.Chart(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	wantStored := workspace.Chart{ID: id, TeamID: "acme", ProjectID: "growth", DashboardID: "d-growth", Name: "By country", Type: workspace.ChartPie,
		DatasetID: "signups", XField: "country", YFields: []string{"signups"}, CreatedBy: "bob", CreatedAt: t0, UpdatedAt: t0.Add(time.Minute)}
	if diff := cmp.Diff(wantStored, stored, workspacetest.CmpOptions); diff != "" {
		t.Errorf("placed chart mismatch (-want +got):\n%s", diff)
	}
	_, err = e.exec.PlaceChart(ctx, bob, id, "d-growth")
	mustCode(t, err, askbi.Conflict)

	// A deleted chart is gone for good.
	if err := e.cat.DeleteDashboard(ctx, "d-growth"); err != nil {
		t.Fatal(err)
	}
	_, err = e.exec.PlaceChart(ctx, bob, id, "d-growth")
	mustCode(t, err, askbi.NotFound)

	var actions []string
	for _, a := range e.audit.Entries() {
		actions = append(actions, a.Action+" "+a.Outcome)
	}
	wantActions := []string{"chart.preview ok", "chart.place forbidden", "chart.place not_found", "chart.place not_found", "chart.place invalid_argument",
		"chart.place not_found", "chart.place not_found", "chart.place ok", "chart.place conflict", "chart.place not_found"}
	if diff := cmp.Diff(wantActions, actions); diff != "" {
		t.Errorf("audit mismatch (-want +got):\n%s", diff)
	}
}

func TestUpdateChart(t *testing.T) {
	e := newEnv(t, nil)
	change := dataexec.ChartChange{ChartID: "c-signups", Name: "Signups per day", Type: workspace.ChartArea}
	got, err := e.exec.UpdateChart(ctx, bob, change)
	if err != nil {
		t.Fatal(err)
	}
	if got.ChartType != workspace.ChartArea || got.Chart.Name != "Signups per day" || got.Dashboard == nil || got.Dashboard.ID != "d-growth" ||
		got.Status != workspace.StatusSaved || got.Chart.Info != "Growth overview · area chart" {
		t.Errorf("UpdateChart = %+v", got)
	}
	// Fields left out keep their values.
	if c, _ := e.cat.Chart(ctx, "c-signups"); c.DatasetID != "signups" || c.XField != "day" || !slices.Equal(c.YFields, []string{"signups"}) {
		t.Errorf("chart after the change = %+v, want its dataset and fields kept", c)
	}
	_, err = e.exec.UpdateChart(ctx, vic, change)
	mustCode(t, err, askbi.Forbidden) // a saved chart needs the dashboard edit right
	if _, err := e.exec.UpdateChart(ctx, vic, dataexec.ChartChange{ChartID: "c-vic", Type: workspace.ChartArea}); err != nil {
		t.Errorf("viewer updating her preview: %v", err)
	}
	_, err = e.exec.UpdateChart(ctx, bob, dataexec.ChartChange{ChartID: "c-signups", YFields: []string{"country"}})
	mustCode(t, err, askbi.InvalidResult)
	if c, _ := e.cat.Chart(ctx, "c-signups"); c.Name != "Signups per day" || c.YFields[0] != "signups" {
		t.Errorf("chart changed by a failed update: %+v", c)
	}
	_, err = e.exec.UpdateChart(ctx, bob, dataexec.ChartChange{ChartID: "nope", Name: "x"})
	mustCode(t, err, askbi.NotFound)

	var actions []string
	for _, a := range e.audit.Entries() {
		actions = append(actions, a.Action+" "+a.Outcome+" "+a.Target.ID)
	}
	wantActions := []string{"chart.update ok c-signups", "chart.update forbidden c-signups", "chart.update ok c-vic",
		"chart.update invalid_result c-signups", "chart.update not_found nope"}
	if diff := cmp.Diff(wantActions, actions); diff != "" {
		t.Errorf("audit mismatch (-want +got):\n%s", diff)
	}
}

func TestFieldsInRequestJSON(t *testing.T) {
	var r workspace.Request
	in := `{"connection_id":"mcp1","tool":"top_pages","arguments":{"days":7},"fields":{"page":["column_0"],"visitors":["column_1","0"]}}`
	if err := json.Unmarshal([]byte(in), &r); err != nil {
		t.Fatal(err)
	}
	want := workspace.Request{ConnectionID: "mcp1", Tool: "top_pages", Arguments: json.RawMessage(`{"days":7}`),
		Fields: workspace.Fields{{Name: "page", Path: []string{"column_0"}}, {Name: "visitors", Path: []string{"column_1", "0"}}}}
	if diff := cmp.Diff(want, r, cmpopts.EquateEmpty()); diff != "" {
		t.Errorf("Request mismatch (-want +got):\n%s", diff)
	}
}

// TestWritesOnReadOnlyCatalog: over a Catalog that is not a CatalogWriter,
// every write answers Unsupported before it reads the catalog or runs a
// query, changes nothing and is audited; reads still work.
func TestWritesOnReadOnlyCatalog(t *testing.T) {
	e := newEnv(t, nil)
	exec := gated{e.exec.gate, dataexec.NewExecutor(readOnly{e.cat}, dataexec.SourceMap{"wh": e.src, "fin": e.plain},
		&dataexec.Options{Audit: e.audit, Now: e.clock.Now})}
	spec := dataexec.ChartSpec{DatasetID: "signups", Name: "By country", Type: workspace.ChartPie, XField: "country", YFields: []string{"signups"}}
	for _, tc := range []struct {
		action string
		call   func() error
	}{
		{dataexec.ActionDatasetSave, func() error {
			_, err := exec.Explore(ctx, bob, dataexec.Exploration{Operation: dataexec.ExploreSave, Name: "New", DashboardID: "d-growth",
				ConnectionID: "wh", SQL: "SELECT day, country, signups FROM signups"})
			return err
		}},
		{dataexec.ActionChartPreview, func() error { _, err := exec.CreateChartPreview(ctx, bob, spec); return err }},
		{dataexec.ActionChartUpdate, func() error {
			_, err := exec.UpdateChart(ctx, bob, dataexec.ChartChange{ChartID: "c-signups", Type: workspace.ChartPie, XField: "country"})
			return err
		}},
		{dataexec.ActionChartPlace, func() error { _, err := exec.PlaceChart(ctx, bob, "c-draft", "d-growth"); return err }},
		{dataexec.ActionDashboardDelete, func() error { return exec.DeleteDashboard(ctx, bob, "d-growth") }},
	} {
		t.Run(tc.action, func(t *testing.T) {
			before, runs, audited := searchAll(t, e), e.calls(), len(e.audit.Entries())
			err := tc.call()
			if askbi.ErrorCode(err) != askbi.Unsupported || askbi.ErrorMessage(err) != "this workspace catalog is read-only" {
				t.Errorf("error = %v; want unsupported %q", err, "this workspace catalog is read-only")
			}
			if ran := e.calls() - runs; ran != 0 {
				t.Errorf("the source ran %d queries, want none", ran)
			}
			if diff := cmp.Diff(before, searchAll(t, e), workspacetest.CmpOptions); diff != "" {
				t.Errorf("the workspace changed (-before +after):\n%s", diff)
			}
			entries := e.audit.Entries()[audited:]
			if len(entries) != 1 || entries[0].Action != tc.action || entries[0].Outcome != string(askbi.Unsupported) {
				t.Errorf("audit = %+v, want one %s entry with outcome unsupported", entries, tc.action)
			}
		})
	}
	if _, err := exec.RunDataset(ctx, vic, "signups", dataexec.Params{}); err != nil {
		t.Errorf("RunDataset on a read-only catalog: %v", err)
	}
}

// searchAll is everything team acme's catalog search shows.
func searchAll(t *testing.T, e *env) []workspace.SearchRow {
	t.Helper()
	rows, err := e.cat.Search(ctx, workspace.CatalogQuery{TeamID: "acme", Projects: access.AllProjects(), Limit: 1000})
	if err != nil {
		t.Fatal(err)
	}
	return rows
}

func TestPlaceCharts(t *testing.T) {
	e := newEnv(t, nil)
	var ids []string
	for _, typ := range []workspace.ChartType{workspace.ChartPie, workspace.ChartBar, workspace.ChartLine} {
		cr, err := e.exec.CreateChartPreview(ctx, bob, dataexec.ChartSpec{DatasetID: "signups", Name: "Signups " + string(typ), Type: typ,
			XField: "country", YFields: []string{"signups"}})
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, cr.Chart.ID)
	}
	x := e.exec.x
	charts := func() map[string]string { // chart ID → dashboard
		rows, _ := e.cat.Search(ctx, workspace.CatalogQuery{TeamID: "acme", Types: []access.EntityType{access.TypeChart}, Projects: access.AllProjects(), UserID: "bob", Limit: 100})
		out := map[string]string{}
		for _, r := range rows {
			c, _ := e.cat.Chart(ctx, r.Entity.ID)
			out[c.ID] = c.DashboardID
		}
		return out
	}
	before := charts()

	// Refusals place nothing: a viewer, another member's preview or
	// another team's chart in the batch, a saved chart on another
	// dashboard in the batch, a dashboard of another project, none.
	p := func(who access.Principal, dash string, ids ...string) (*dataexec.Placed, error) {
		live, err := e.exec.gate.Begin(ctx, who)
		if err != nil {
			t.Fatal(err)
		}
		return x.PlaceCharts(ctx, live, ids, dash)
	}
	_, err := p(vic, "d-growth", "c-vic")
	mustCode(t, err, askbi.Forbidden)
	_, err = p(alice, "d-growth", ids...)
	mustCode(t, err, askbi.NotFound)
	_, err = p(bob, "d-growth", ids[0], "c-vic")
	mustCode(t, err, askbi.NotFound)
	_, err = p(bob, "d-growth", ids[0], "c-ops")
	mustCode(t, err, askbi.NotFound)
	_, err = p(alice, "d-fin", "c-alice")
	mustCode(t, err, askbi.InvalidArgument)
	_, err = p(bob, "d-growth")
	mustCode(t, err, askbi.InvalidArgument)
	e.cat.PutDashboard(workspace.Dashboard{ID: "d-other", TeamID: "acme", ProjectID: "growth", Name: "Other"})
	if _, err := e.exec.PlaceChart(ctx, bob, ids[2], "d-other"); err != nil {
		t.Fatal(err)
	}
	_, err = p(bob, "d-growth", ids...)
	mustCode(t, err, askbi.Conflict)
	after := charts()
	if after[ids[0]] != "" || after[ids[1]] != "" {
		t.Fatalf("a refused batch placed charts: %v", after)
	}

	// Placed once each; again, and with a chart placed since, is done and
	// changes nothing.
	if _, err := e.exec.PlaceChart(ctx, bob, ids[1], "d-growth"); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		placed, err := p(bob, "d-growth", ids[0], ids[1], ids[0])
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, cr := range placed.Charts {
			got = append(got, cr.Chart.ID+" "+string(cr.Status)+" "+cr.Dashboard.ID)
		}
		want := []string{ids[0] + " saved d-growth", ids[1] + " saved d-growth"}
		if diff := cmp.Diff(want, got); diff != "" || placed.Dashboard.ID != "d-growth" {
			t.Errorf("PlaceCharts mismatch (-want +got):\n%s", diff)
		}
	}
	after = charts()
	if len(after) != len(before) || after[ids[0]] != "d-growth" || after[ids[1]] != "d-growth" || after[ids[2]] != "d-other" {
		t.Errorf("charts after = %v, before %v: no duplicates, each placed once", after, before)
	}
	okPlace := 0
	for _, a := range e.audit.Entries() {
		if a.Action == dataexec.ActionChartPlace && a.Outcome == access.OutcomeOK {
			okPlace++
		}
	}
	if okPlace != 3 { // ids[2] on d-other, ids[1] alone, ids[0] in the batch
		t.Errorf("%d placements audited, want 3", okPlace)
	}
}

// TestPreviewKeepsFilters shows a preview drawing only the rows of the
// answer it was made from, on creation and on every read after.
func TestPreviewKeepsFilters(t *testing.T) {
	e := newEnv(t, nil)
	us := []workspace.Filter{{Field: "country", Op: workspace.OpEq, Value: "US"}}
	spec := dataexec.ChartSpec{DatasetID: "signups", Name: "US signups", Type: workspace.ChartLine, XField: "day", YFields: []string{"signups"}, Filters: us}
	cr, err := e.exec.CreateChartPreview(ctx, bob, spec)
	if err != nil {
		t.Fatal(err)
	}
	if n := len(cr.Data.Labels); n != 2 {
		t.Errorf("preview draws %d rows, want the 2 US rows", n)
	}
	stored, _ := e.cat.Chart(ctx, cr.Chart.ID)
	if diff := cmp.Diff(us, stored.Filters); diff != "" {
		t.Errorf("stored filters mismatch (-want +got):\n%s", diff)
	}
	read, err := e.exec.ChartData(ctx, bob, cr.Chart.ID, dataexec.Params{})
	if err != nil || len(read.Data.Labels) != 2 {
		t.Errorf("chart data = %+v, %v; want the 2 US rows", read, err)
	}
	spec.Filters = []workspace.Filter{{Field: "nope", Op: workspace.OpEq, Value: "US"}}
	_, err = e.exec.CreateChartPreview(ctx, bob, spec)
	mustCode(t, err, askbi.InvalidArgument)
}
