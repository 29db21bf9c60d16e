// Package workspacetest holds the conformance suite for [workspace.Catalog] and
// [workspace.CatalogWriter]. A host runs it against its own catalog adapter:
//
//	func TestCatalog(t *testing.T) {
//		workspacetest.Run(t, func(t *testing.T, f workspacetest.Fixture) workspace.Catalog {
//			return newCatalogHolding(t, f) // a fresh store seeded with f
//		})
//	}
//
// There is one Run for both interfaces. Its Writer tests run when the
// catalog newCatalog returns is also a workspace.CatalogWriter, found by the
// same type assertion the Executor makes, so the suite proves exactly the
// methods the Executor will call. For a read-only catalog each Writer test
// is skipped and says why; a catalog meant to be writable that shows those
// skips has a method with the wrong signature.
package workspacetest

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/askbi/askbi"
	"github.com/askbi/askbi/access"
	"github.com/askbi/askbi/workspace"
)

// Fixture is the workspace a catalog under test must hold, and nothing
// else, when newCatalog returns it. Timestamps are whole microseconds in
// UTC, so SQL stores can keep them exactly.
type Fixture struct {
	Connections []workspace.Connection
	Dashboards  []workspace.Dashboard
	Datasets    []workspace.Dataset
	Charts      []workspace.Chart
}

// Memory returns an in-memory catalog holding f and nothing else: the
// suite's catalog for [workspace.MemoryCatalog] itself, and a ready
// workspace for the tests of a layer above.
func (f Fixture) Memory() *workspace.MemoryCatalog {
	c := workspace.NewMemoryCatalog()
	for _, x := range f.Connections {
		c.PutConnection(x)
	}
	for _, x := range f.Dashboards {
		c.PutDashboard(x)
	}
	for _, x := range f.Datasets {
		c.PutDataset(x)
	}
	for _, x := range f.Charts {
		c.PutChart(x)
	}
	return c
}

// T0 is the time the fixture's timestamps count from.
var T0 = time.Date(2026, 11, 30, 8, 0, 0, 0, time.UTC)

func at(min int) time.Time { return T0.Add(time.Duration(min) * time.Minute) }

// NewFixture returns the suite's workspace: team acme (projects growth and
// finance) and team globex (project ops), with connections, dashboards,
// datasets, saved charts, alice's preview chart-draft, bob's preview
// chart-bob and chart-legacy, a preview with no recorded creator (saved
// before creators were), which no user reaches.
func NewFixture() Fixture {
	return Fixture{
		Connections: []workspace.Connection{
			{ID: "conn-wh", TeamID: "acme", Name: "Warehouse", Type: "postgres", Active: true, CreatedAt: at(0), UpdatedAt: at(1)},
			{ID: "conn-fin", TeamID: "acme", ProjectID: "finance", Name: "Finance DB", Type: "postgres", CreatedAt: at(0), UpdatedAt: at(2)},
			{ID: "conn-gx", TeamID: "globex", Name: "Helpdesk", Type: "mcp", Active: true, CreatedAt: at(0), UpdatedAt: at(3)},
		},
		Dashboards: []workspace.Dashboard{
			{ID: "dash-growth", TeamID: "acme", ProjectID: "growth", Name: "Growth overview", CreatedAt: at(0), UpdatedAt: at(10)},
			{ID: "dash-fin", TeamID: "acme", ProjectID: "finance", Name: "Finance", CreatedAt: at(0), UpdatedAt: at(11)},
			{ID: "dash-ops", TeamID: "globex", ProjectID: "ops", Name: "Ops signups", CreatedAt: at(0), UpdatedAt: at(12)},
		},
		Datasets: []workspace.Dataset{
			{ID: "ds-signups", TeamID: "acme", ProjectID: "growth", Name: "Weekly signups", Version: 3,
				Request: workspace.Request{
					ConnectionID: "conn-wh",
					SQL:          "SELECT week, country, signups FROM signups WHERE country = {{country}} LIMIT {{n}}",
					Fields: workspace.Fields{
						{Name: "week", Path: []string{"week"}},
						{Name: "signups", Path: []string{"column_2"}},
					},
					Variables: []workspace.Variable{
						{Name: "country", Type: workspace.VarString, Default: "US"},
						{Name: "n", Type: workspace.VarNumber, Default: float64(7)},
						{Name: "since", Type: workspace.VarDate},
					},
				},
				CreatedAt: at(0), UpdatedAt: at(20)},
			{ID: "ds-mrr", TeamID: "acme", ProjectID: "finance", Name: "MRR", Version: 1,
				Request:   workspace.Request{ConnectionID: "conn-fin", SQL: "SELECT month, mrr FROM mrr"},
				CreatedAt: at(0), UpdatedAt: at(21)},
			{ID: "ds-conv", TeamID: "acme", ProjectID: "growth", Name: "Conversion 50% cohort", Version: 1,
				// A scoped dataset: a declared scope and a saved filter,
				// which the catalog keeps and reports in search.
				Request: workspace.Request{ConnectionID: "conn-wh", SQL: "SELECT 1",
					Filters: []workspace.Filter{{Field: "plan", Op: workspace.OpIn, Value: []any{"pro", "team"}}}},
				Scope: &workspace.Scope{Filters: []workspace.Filter{{Field: "page_path", Op: workspace.OpEq, Value: "/pricing"}},
					UnscopedID: "ds-signups"},
				CreatedAt: at(0), UpdatedAt: at(22)},
			{ID: "ds-tickets", TeamID: "globex", ProjectID: "ops", Name: "Tickets by day", Version: 2,
				Request: workspace.Request{
					ConnectionID: "conn-gx", Tool: "tickets_by_day",
					Arguments: json.RawMessage(`{"days":30,"status":["open","closed"]}`),
					Fields:    workspace.Fields{{Name: "day", Path: []string{"column_0"}}, {Name: "count", Path: []string{"column_1", "0"}}},
				},
				CreatedAt: at(0), UpdatedAt: at(23)},
		},
		Charts: []workspace.Chart{
			{ID: "chart-signups", TeamID: "acme", ProjectID: "growth", DashboardID: "dash-growth", Name: "Signups by week",
				Type: workspace.ChartLine, DatasetID: "ds-signups", XField: "week", YFields: []string{"signups"}, CreatedAt: at(0), UpdatedAt: at(30)},
			{ID: "chart-country", TeamID: "acme", ProjectID: "growth", DashboardID: "dash-growth", Name: "Signups by country",
				Type: workspace.ChartBar, DatasetID: "ds-signups", XField: "week", YFields: []string{"signups"}, CreatedAt: at(0), UpdatedAt: at(31)},
			{ID: "chart-mrr", TeamID: "acme", ProjectID: "finance", DashboardID: "dash-fin", Name: "MRR trend",
				Type: workspace.ChartArea, DatasetID: "ds-mrr", XField: "month", YFields: []string{"mrr"}, CreatedAt: at(0), UpdatedAt: at(32)},
			{ID: "chart-draft", TeamID: "acme", ProjectID: "growth", Name: "Draft signups",
				Type: workspace.ChartBar, DatasetID: "ds-signups", XField: "week", YFields: []string{"signups"},
				Filters:   []workspace.Filter{{Field: "week", Op: workspace.OpGte, Value: "2026-11-01"}},
				CreatedBy: "alice", CreatedAt: at(0), UpdatedAt: at(33)},
			{ID: "chart-tickets", TeamID: "globex", ProjectID: "ops", DashboardID: "dash-ops", Name: "Tickets",
				Type: workspace.ChartKPI, DatasetID: "ds-tickets", YFields: []string{"count"}, CreatedAt: at(0), UpdatedAt: at(34)},
			// The two most recent: a catalog that left them out only after
			// its LIMIT would return too few rows.
			{ID: "chart-bob", TeamID: "acme", ProjectID: "growth", Name: "Bob's signups draft",
				Type: workspace.ChartLine, DatasetID: "ds-signups", XField: "week", YFields: []string{"signups"},
				CreatedBy: "bob", CreatedAt: at(0), UpdatedAt: at(35)},
			{ID: "chart-legacy", TeamID: "acme", ProjectID: "growth", Name: "Legacy signups draft",
				Type: workspace.ChartLine, DatasetID: "ds-signups", XField: "week", YFields: []string{"signups"},
				CreatedAt: at(0), UpdatedAt: at(36)},
		},
	}
}

// CmpOptions compare catalog values as the suite does: times by instant,
// JSON arguments by meaning, nil and empty alike.
var CmpOptions = cmp.Options{
	cmp.FilterPath(func(p cmp.Path) bool { return p.Last().Type() != reflect.TypeFor[json.RawMessage]() }, cmpopts.EquateEmpty()),
	cmp.Comparer(func(a, b time.Time) bool { return a.Equal(b) }),
	cmp.Comparer(func(a, b json.RawMessage) bool {
		if len(a) == 0 || len(b) == 0 {
			return len(a) == len(b)
		}
		var x, y any
		return json.Unmarshal(a, &x) == nil && json.Unmarshal(b, &y) == nil && cmp.Equal(x, y)
	}),
}

// Run proves that the catalogs newCatalog makes behave as [workspace.Catalog]
// documents and, when they are also a [workspace.CatalogWriter], as that
// documents (the Writer subtests). Each subtest gets a fresh catalog
// holding NewFixture().
func Run(t *testing.T, newCatalog func(t *testing.T, f Fixture) workspace.Catalog) {
	ctx := context.Background()
	fx := NewFixture()
	newCat := func(t *testing.T) workspace.Catalog {
		t.Helper()
		return newCatalog(t, NewFixture())
	}

	t.Run("Get", func(t *testing.T) {
		c := newCat(t)
		for _, want := range fx.Connections {
			got, err := c.Connection(ctx, want.ID)
			mustMatch(t, "Connection", want, got, err)
		}
		for _, want := range fx.Dashboards {
			got, err := c.Dashboard(ctx, want.ID)
			mustMatch(t, "Dashboard", want, got, err)
		}
		for _, want := range fx.Datasets {
			got, err := c.Dataset(ctx, want.ID)
			mustMatch(t, "Dataset", want, got, err)
		}
		for _, want := range fx.Charts {
			got, err := c.Chart(ctx, want.ID)
			mustMatch(t, "Chart", want, got, err)
		}
	})

	t.Run("GetUnknown", func(t *testing.T) {
		c := newCat(t)
		_, err1 := c.Connection(ctx, "nope")
		_, err2 := c.Dashboard(ctx, "nope")
		_, err3 := c.Dataset(ctx, "nope")
		_, err4 := c.Chart(ctx, "nope")
		for i, err := range []error{err1, err2, err3, err4} {
			if askbi.ErrorCode(err) != askbi.NotFound {
				t.Errorf("get %d of unknown ID = %v, want not_found", i, err)
			}
		}
	})

	t.Run("Search", func(t *testing.T) {
		c := newCat(t)
		rows := map[string]workspace.SearchRow{
			"conn-wh":       {Entity: fx.Connections[0].Ref(), Name: "Warehouse", UpdatedAt: at(1), ConnectionName: "Warehouse", ConnectionType: "postgres", Active: true},
			"conn-fin":      {Entity: fx.Connections[1].Ref(), Name: "Finance DB", UpdatedAt: at(2), ConnectionName: "Finance DB", ConnectionType: "postgres"},
			"dash-growth":   {Entity: fx.Dashboards[0].Ref(), Name: "Growth overview", UpdatedAt: at(10), ChartCount: 2},
			"dash-fin":      {Entity: fx.Dashboards[1].Ref(), Name: "Finance", UpdatedAt: at(11), ChartCount: 1},
			"ds-signups":    {Entity: fx.Datasets[0].Ref(), Name: "Weekly signups", UpdatedAt: at(20), ConnectionName: "Warehouse", ConnectionType: "postgres", Active: true},
			"ds-mrr":        {Entity: fx.Datasets[1].Ref(), Name: "MRR", UpdatedAt: at(21), ConnectionName: "Finance DB", ConnectionType: "postgres"},
			"ds-conv":       {Entity: fx.Datasets[2].Ref(), Name: "Conversion 50% cohort", UpdatedAt: at(22), ConnectionName: "Warehouse", ConnectionType: "postgres", Active: true, Scope: fx.Datasets[2].Conditions()},
			"chart-signups": {Entity: fx.Charts[0].Ref(), Name: "Signups by week", UpdatedAt: at(30), ChartType: workspace.ChartLine, DashboardName: "Growth overview"},
			"chart-country": {Entity: fx.Charts[1].Ref(), Name: "Signups by country", UpdatedAt: at(31), ChartType: workspace.ChartBar, DashboardName: "Growth overview"},
			"chart-mrr":     {Entity: fx.Charts[2].Ref(), Name: "MRR trend", UpdatedAt: at(32), ChartType: workspace.ChartArea, DashboardName: "Finance"},
			"chart-draft":   {Entity: fx.Charts[3].Ref(), Name: "Draft signups", UpdatedAt: at(33), ChartType: workspace.ChartBar},
			"chart-bob":     {Entity: fx.Charts[5].Ref(), Name: "Bob's signups draft", UpdatedAt: at(35), ChartType: workspace.ChartLine},
		}
		pick := func(ids ...string) []workspace.SearchRow {
			out := []workspace.SearchRow{}
			for _, id := range ids {
				out = append(out, rows[id])
			}
			return out
		}
		all := access.AllProjects()
		for _, tc := range []struct {
			name string
			q    workspace.CatalogQuery
			want []workspace.SearchRow
		}{
			{"recent first", workspace.CatalogQuery{TeamID: "acme", Projects: all, UserID: "alice", Limit: 50},
				pick("chart-draft", "chart-mrr", "chart-country", "chart-signups", "ds-conv", "ds-mrr", "ds-signups", "dash-fin", "dash-growth", "conn-fin", "conn-wh")},
			{"limit", workspace.CatalogQuery{TeamID: "acme", Projects: all, UserID: "alice", Limit: 2}, pick("chart-draft", "chart-mrr")},
			{"case-insensitive", workspace.CatalogQuery{TeamID: "acme", Text: "SIGNUPS", Projects: all, UserID: "alice", Limit: 50},
				pick("chart-draft", "chart-country", "chart-signups", "ds-signups")},
			{"types", workspace.CatalogQuery{TeamID: "acme", Text: "signups", Types: []access.EntityType{access.TypeDataset, access.TypeDashboard}, Projects: all, UserID: "alice", Limit: 50},
				pick("ds-signups")},
			{"connections", workspace.CatalogQuery{TeamID: "acme", Types: []access.EntityType{access.TypeConnection}, Projects: all, UserID: "alice", Limit: 50},
				pick("conn-fin", "conn-wh")},
			{"one project and team-wide", workspace.CatalogQuery{TeamID: "acme", Projects: access.ProjectSet("growth"), UserID: "alice", Limit: 50},
				pick("chart-draft", "chart-country", "chart-signups", "ds-conv", "ds-signups", "dash-growth", "conn-wh")},
			{"no projects", workspace.CatalogQuery{TeamID: "acme", Projects: access.Projects{}, UserID: "alice", Limit: 50}, pick("conn-wh")},
			{"percent is literal", workspace.CatalogQuery{TeamID: "acme", Text: "50%", Projects: all, UserID: "alice", Limit: 50}, pick("ds-conv")},
			{"underscore is literal", workspace.CatalogQuery{TeamID: "acme", Text: "_", Projects: all, UserID: "alice", Limit: 50}, pick()},
			{"other team's names", workspace.CatalogQuery{TeamID: "acme", Text: "ops", Projects: all, UserID: "alice", Limit: 50}, pick()},
			{"unknown team", workspace.CatalogQuery{TeamID: "initech", Projects: all, UserID: "alice", Limit: 50}, pick()},
			// A preview is its creator's alone; one with no creator is
			// nobody's, and a query without a user lists no preview.
			{"another user's previews", workspace.CatalogQuery{TeamID: "acme", Text: "draft", Projects: all, UserID: "bob", Limit: 50}, pick("chart-bob")},
			{"a user with no previews", workspace.CatalogQuery{TeamID: "acme", Text: "draft", Projects: all, UserID: "vic", Limit: 50}, pick()},
			{"no user", workspace.CatalogQuery{TeamID: "acme", Text: "signups", Projects: all, Limit: 50},
				pick("chart-country", "chart-signups", "ds-signups")},
			{"another user's previews, limit", workspace.CatalogQuery{TeamID: "acme", Projects: all, UserID: "bob", Limit: 2}, pick("chart-bob", "chart-mrr")},
		} {
			t.Run(tc.name, func(t *testing.T) {
				got, err := c.Search(ctx, tc.q)
				if err != nil {
					t.Fatalf("Search: %v", err)
				}
				if diff := cmp.Diff(tc.want, got, CmpOptions); diff != "" {
					t.Errorf("Search mismatch (-want +got):\n%s", diff)
				}
			})
		}
	})

	t.Run("Writer", func(t *testing.T) { runWriter(t, newCatalog) })
}

// runWriter proves the CatalogWriter methods. Each test skips when the
// catalog is read-only.
func runWriter(t *testing.T, newCatalog func(t *testing.T, f Fixture) workspace.Catalog) {
	ctx := context.Background()
	fx := NewFixture()
	newWriter := func(t *testing.T) (workspace.Catalog, workspace.CatalogWriter) {
		t.Helper()
		c := newCatalog(t, NewFixture())
		w, ok := c.(workspace.CatalogWriter)
		if !ok {
			t.Skipf("%T is not a workspace.CatalogWriter, so the Executor treats it as read-only; the writer tests do not apply", c)
		}
		return c, w
	}

	t.Run("CreateDataset", func(t *testing.T) {
		c, w := newWriter(t)
		want := fx.Datasets[0]
		want.ID, want.Name, want.CreatedAt, want.UpdatedAt = "", "Signups copy", at(40), at(40)
		got, err := w.CreateDataset(ctx, want)
		if err != nil {
			t.Fatalf("CreateDataset: %v", err)
		}
		if got.ID == "" {
			t.Fatal("CreateDataset assigned no ID")
		}
		want.ID = got.ID
		if diff := cmp.Diff(want, got, CmpOptions); diff != "" {
			t.Errorf("CreateDataset mismatch (-want +got):\n%s", diff)
		}
		stored, err := c.Dataset(ctx, got.ID)
		mustMatch(t, "Dataset", want, stored, err)

		again := want
		again.Name = "Replaced"
		again.Request.SQL = "SELECT 2"
		if _, err := w.CreateDataset(ctx, again); askbi.ErrorCode(err) != askbi.Conflict {
			t.Errorf("CreateDataset(existing ID) = %v, want conflict", err)
		}
		stored, err = c.Dataset(ctx, got.ID)
		mustMatch(t, "Dataset after conflict", want, stored, err)
	})

	t.Run("CreateDatasetSameIDConcurrently", func(t *testing.T) {
		// Of concurrent creates of one ID exactly one wins, and what is
		// stored is the winner's dataset and request together, never the
		// name of one call with the request of another.
		c, w := newWriter(t)
		const n = 8
		var wg sync.WaitGroup
		errs := make([]error, n)
		sets := make([]workspace.Dataset, n)
		for i := range n {
			sets[i] = workspace.Dataset{ID: "ds-race", TeamID: "acme", ProjectID: "growth", Name: fmt.Sprintf("Race %d", i), Version: 1,
				Request:   workspace.Request{ConnectionID: "conn-wh", SQL: fmt.Sprintf("SELECT %d", i), Fields: workspace.Fields{{Name: "n", Path: []string{"column_0"}}}},
				CreatedAt: at(50), UpdatedAt: at(50 + i)}
			wg.Go(func() { _, errs[i] = w.CreateDataset(ctx, sets[i]) })
		}
		wg.Wait()
		winner := -1
		for i, err := range errs {
			switch askbi.ErrorCode(err) {
			case "":
				if winner >= 0 {
					t.Errorf("creates %d and %d of one ID both succeeded", winner, i)
				}
				winner = i
			case askbi.Conflict:
			default:
				t.Errorf("CreateDataset = %v, want success or conflict", err)
			}
		}
		if winner < 0 {
			t.Fatal("no concurrent create succeeded")
		}
		got, err := c.Dataset(ctx, "ds-race")
		mustMatch(t, "Dataset", sets[winner], got, err)
	})

	t.Run("FailedCreateDatasetLeavesNothing", func(t *testing.T) {
		// A create that fails (here: its context is already cancelled)
		// leaves no dataset and no request behind; one that succeeds
		// despite it stores both.
		c, w := newWriter(t)
		cctx, cancel := context.WithCancel(ctx)
		cancel()
		want := workspace.Dataset{ID: "ds-cancelled", TeamID: "acme", ProjectID: "growth", Name: "Cancelled save", Version: 1,
			Request: workspace.Request{ConnectionID: "conn-wh", SQL: "SELECT 1"}, CreatedAt: at(60), UpdatedAt: at(60)}
		if _, err := w.CreateDataset(cctx, want); err == nil {
			got, err := c.Dataset(ctx, want.ID)
			mustMatch(t, "Dataset created under a cancelled context", want, got, err)
			return
		}
		if _, err := c.Dataset(ctx, want.ID); askbi.ErrorCode(err) != askbi.NotFound {
			t.Errorf("Dataset after a failed create = %v, want not_found", err)
		}
		rows, err := c.Search(ctx, workspace.CatalogQuery{TeamID: "acme", Text: "cancelled save", Projects: access.AllProjects(), Limit: 5})
		if err != nil || len(rows) != 0 {
			t.Errorf("Search after a failed create = %+v, %v; want nothing", rows, err)
		}
		if _, err := w.CreateDataset(ctx, want); err != nil {
			t.Errorf("CreateDataset after a failed create of the same ID = %v, want it to succeed", err)
		}
	})

	t.Run("CreateChart", func(t *testing.T) {
		c, w := newWriter(t)
		want := workspace.Chart{TeamID: "acme", ProjectID: "growth", Name: "New preview", Type: workspace.ChartPie,
			DatasetID: "ds-signups", XField: "week", YFields: []string{"signups"}, CreatedBy: "vic", CreatedAt: at(41), UpdatedAt: at(41)}
		got, err := w.CreateChart(ctx, want)
		if err != nil {
			t.Fatalf("CreateChart: %v", err)
		}
		if got.ID == "" || got.Status() != workspace.StatusPreview {
			t.Fatalf("CreateChart = %+v, want an assigned ID and a preview", got)
		}
		want.ID = got.ID
		stored, err := c.Chart(ctx, got.ID)
		mustMatch(t, "Chart", want, stored, err)
		if _, err := w.CreateChart(ctx, want); askbi.ErrorCode(err) != askbi.Conflict {
			t.Errorf("CreateChart(existing ID) = %v, want conflict", err)
		}
		// The new preview is its creator's: listed to vic, to nobody else.
		q := workspace.CatalogQuery{TeamID: "acme", Text: "new preview", Projects: access.AllProjects(), UserID: "vic", Limit: 5}
		rows, err := c.Search(ctx, q)
		if err != nil || len(rows) != 1 || rows[0].Entity != want.Ref() {
			t.Errorf("Search by its creator = %+v, %v; want the preview, private to vic", rows, err)
		}
		q.UserID = "alice"
		if rows, err := c.Search(ctx, q); err != nil || len(rows) != 0 {
			t.Errorf("Search by another user = %+v, %v; want nothing", rows, err)
		}
	})

	t.Run("UpdateChart", func(t *testing.T) {
		c, w := newWriter(t)
		orig := fx.Charts[0]
		change := orig
		change.Name, change.Type, change.XField, change.YFields, change.UpdatedAt = "Renamed", workspace.ChartArea, "country", []string{"signups", "week"}, at(42)
		change.DatasetID = "ds-conv"
		// Fields UpdateChart must leave alone:
		change.TeamID, change.ProjectID, change.DashboardID, change.CreatedAt = "globex", "ops", "", at(99)
		got, err := w.UpdateChart(ctx, change)
		if err != nil {
			t.Fatalf("UpdateChart: %v", err)
		}
		want := orig
		want.Name, want.Type, want.XField, want.YFields, want.UpdatedAt = "Renamed", workspace.ChartArea, "country", []string{"signups", "week"}, at(42)
		want.DatasetID = "ds-conv"
		if diff := cmp.Diff(want, got, CmpOptions); diff != "" {
			t.Errorf("UpdateChart mismatch (-want +got):\n%s", diff)
		}
		stored, err := c.Chart(ctx, orig.ID)
		mustMatch(t, "Chart", want, stored, err)
		change.ID = "nope"
		if _, err := w.UpdateChart(ctx, change); askbi.ErrorCode(err) != askbi.NotFound {
			t.Errorf("UpdateChart(unknown) = %v, want not_found", err)
		}

		// A preview's creator stays as stored.
		draft := fx.Charts[3]
		change = draft
		change.Name, change.UpdatedAt, change.CreatedBy = "Renamed draft", at(42), "mallory"
		want = draft
		want.Name, want.UpdatedAt = "Renamed draft", at(42)
		got, err = w.UpdateChart(ctx, change)
		mustMatch(t, "UpdateChart of a preview", want, got, err)
		stored, err = c.Chart(ctx, draft.ID)
		mustMatch(t, "Chart", want, stored, err)
	})

	t.Run("PlaceChart", func(t *testing.T) {
		c, w := newWriter(t)
		got, err := w.PlaceChart(ctx, "chart-draft", "dash-fin", at(43))
		if err != nil {
			t.Fatalf("PlaceChart: %v", err)
		}
		want := fx.Charts[3]
		want.DashboardID, want.ProjectID, want.UpdatedAt = "dash-fin", "finance", at(43)
		if diff := cmp.Diff(want, got, CmpOptions); diff != "" {
			t.Errorf("PlaceChart mismatch (-want +got):\n%s", diff)
		}
		stored, err := c.Chart(ctx, "chart-draft")
		mustMatch(t, "Chart", want, stored, err)

		for _, tc := range []struct {
			name, chart, dash string
			want              askbi.Code
		}{
			{"again", "chart-draft", "dash-growth", askbi.Conflict},
			{"saved chart", "chart-signups", "dash-fin", askbi.Conflict},
			{"unknown chart", "nope", "dash-fin", askbi.NotFound},
			{"unknown dashboard", "chart-draft", "nope", askbi.NotFound},
		} {
			if _, err := w.PlaceChart(ctx, tc.chart, tc.dash, at(44)); askbi.ErrorCode(err) != tc.want {
				t.Errorf("PlaceChart(%s) = %v, want %s", tc.name, err, tc.want)
			}
		}
		stored, err = c.Chart(ctx, "chart-draft")
		mustMatch(t, "Chart after failed placements", want, stored, err)

		// Placed, the chart is the team's: listed to every member who
		// reaches its project, as a saved chart.
		rows, err := c.Search(ctx, workspace.CatalogQuery{TeamID: "acme", Text: "draft signups", Projects: access.AllProjects(), UserID: "bob", Limit: 5})
		wantRows := []workspace.SearchRow{{Entity: want.Ref(), Name: "Draft signups", UpdatedAt: at(43), ChartType: workspace.ChartBar, DashboardName: "Finance"}}
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(wantRows, rows, CmpOptions); diff != "" || want.Ref().Private {
			t.Errorf("Search by another member after placement mismatch (-want +got):\n%s", diff)
		}
	})

	t.Run("PlaceChartConcurrently", func(t *testing.T) {
		_, w := newWriter(t)
		const n = 8
		var wg sync.WaitGroup
		errs := make([]error, n)
		for i := range n {
			wg.Go(func() {
				dash := "dash-growth"
				if i%2 == 1 {
					dash = "dash-fin"
				}
				_, errs[i] = w.PlaceChart(ctx, "chart-draft", dash, at(45))
			})
		}
		wg.Wait()
		ok := 0
		for _, err := range errs {
			switch askbi.ErrorCode(err) {
			case "":
				ok++
			case askbi.Conflict:
			default:
				t.Errorf("PlaceChart = %v, want success or conflict", err)
			}
		}
		if ok != 1 {
			t.Errorf("%d concurrent placements succeeded, want exactly 1", ok)
		}
	})

	t.Run("DeleteDashboard", func(t *testing.T) {
		c, w := newWriter(t)
		if err := w.DeleteDashboard(ctx, "dash-growth"); err != nil {
			t.Fatalf("DeleteDashboard: %v", err)
		}
		if _, err := c.Dashboard(ctx, "dash-growth"); askbi.ErrorCode(err) != askbi.NotFound {
			t.Errorf("Dashboard(deleted) = %v, want not_found", err)
		}
		for _, id := range []string{"chart-signups", "chart-country"} {
			if _, err := c.Chart(ctx, id); askbi.ErrorCode(err) != askbi.NotFound {
				t.Errorf("Chart(%s) of deleted dashboard = %v, want not_found", id, err)
			}
		}
		for _, id := range []string{"chart-mrr", "chart-draft"} {
			if _, err := c.Chart(ctx, id); err != nil {
				t.Errorf("Chart(%s) = %v, want it kept", id, err)
			}
		}
		if _, err := c.Dataset(ctx, "ds-signups"); err != nil {
			t.Errorf("Dataset of deleted dashboard's charts = %v, want it kept", err)
		}
		if err := w.DeleteDashboard(ctx, "dash-growth"); askbi.ErrorCode(err) != askbi.NotFound {
			t.Errorf("DeleteDashboard(again) = %v, want not_found", err)
		}
	})

	t.Run("SearchChartCountAfterPlacement", func(t *testing.T) {
		c, w := newWriter(t)
		if _, err := w.PlaceChart(ctx, "chart-draft", "dash-growth", at(46)); err != nil {
			t.Fatal(err)
		}
		got, err := c.Search(ctx, workspace.CatalogQuery{TeamID: "acme", Text: "growth overview", Types: []access.EntityType{access.TypeDashboard}, Projects: access.AllProjects(), Limit: 5})
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != 1 || got[0].ChartCount != 3 {
			t.Errorf("Search = %+v, want one dashboard with 3 charts", got)
		}
	})
}

func mustMatch[T any](t *testing.T, what string, want, got T, err error) {
	t.Helper()
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	if diff := cmp.Diff(want, got, CmpOptions); diff != "" {
		t.Fatalf("%s mismatch (-want +got):\n%s", what, diff)
	}
}

// SQLDataset is a dataset of tests: one SQL request on connection conn
// whose output fields pass the named columns through, version 1,
// updated at.
func SQLDataset(id, team, project, conn, name, sql string, at time.Time, fields ...string) workspace.Dataset {
	var fs workspace.Fields
	for _, f := range fields {
		fs = append(fs, workspace.Field{Name: f, Path: []string{f}})
	}
	return workspace.Dataset{ID: id, TeamID: team, ProjectID: project, Name: name, Version: 1, UpdatedAt: at,
		Request: workspace.Request{ConnectionID: conn, SQL: sql, Fields: fs}}
}
