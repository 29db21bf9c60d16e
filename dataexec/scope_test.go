package dataexec_test

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/askbi/askbi/access"
	"github.com/askbi/askbi/dataexec"
	"github.com/askbi/askbi/workspace"
)

func TestUncovered(t *testing.T) {
	page := workspace.Filter{Field: "page_path", Op: workspace.OpEq, Value: "/pricing"}
	regions := workspace.Filter{Field: "region", Op: workspace.OpIn, Value: []any{"EU", "UK"}}
	scope := []workspace.Filter{page, regions}
	for _, tc := range []struct {
		name    string
		filters []workspace.Filter
		words   string
		want    []workspace.Filter
	}{
		{"broader request", nil, "show signups by week", scope},
		{"named in words", nil, "signups on the pricing page in eu and uk", nil},
		{"one named", nil, "signups on /pricing", []workspace.Filter{regions}},
		{"inside a longer word", nil, "show the pricingpage for all regions", scope},
		{"the same filters", scope, "", nil},
		{"a narrower filter", []workspace.Filter{page, {Field: "region", Op: workspace.OpEq, Value: "EU"}}, "", nil},
		{"a wider filter", []workspace.Filter{page, {Field: "region", Op: workspace.OpIn, Value: []any{"EU", "US"}}}, "", []workspace.Filter{regions}},
		{"another field", []workspace.Filter{{Field: "path", Op: workspace.OpEq, Value: "/pricing"}}, "in eu, uk", []workspace.Filter{page}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, dataexec.Uncovered(scope, tc.filters, tc.words)); diff != "" {
				t.Errorf("Uncovered mismatch (-want +got):\n%s", diff)
			}
		})
	}
	if got, want := dataexec.ScopeText(scope), "page_path = /pricing, region in (EU, UK)"; got != want {
		t.Errorf("ScopeText = %q, want %q", got, want)
	}
}

// TestScopedDataset shows a dataset's scope (declared, and from its saved
// filters) in its info line and on every result built from it, and its
// saved filters applied to every run.
func TestScopedDataset(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t, nil)
	ds, err := e.cat.Dataset(ctx, "signups")
	if err != nil {
		t.Fatal(err)
	}
	ds.ID, ds.Name = "signups-us", "US signups"
	ds.Request.Filters = []workspace.Filter{{Field: "country", Op: workspace.OpEq, Value: "US"}}
	ds.Scope = &workspace.Scope{Filters: []workspace.Filter{{Field: "page_path", Op: workspace.OpEq, Value: "/pricing"}}, UnscopedID: "signups"}
	e.cat.PutDataset(ds)
	e.cat.PutChart(workspace.Chart{ID: "c-us", TeamID: "acme", ProjectID: "growth", Name: "US signups", Type: workspace.ChartLine,
		DatasetID: "signups-us", XField: "day", YFields: []string{"signups"}, CreatedBy: "alice"})

	wantText := "page_path = /pricing, country = US"
	wantInfo := "Warehouse · PostgreSQL · Scope: " + wantText
	res := mustRun(t, e, alice, "signups-us", dataexec.Params{})
	if res.RowCount != 2 {
		t.Errorf("rows = %d, want the 2 US rows: the saved filter applies", res.RowCount)
	}
	sc := res.Dataset.Scope
	if sc == nil || sc.Text != wantText || res.Dataset.Info != wantInfo || sc.Unscoped == nil || sc.Unscoped.ID != "signups" {
		t.Fatalf("result dataset = %+v, scope %+v", res.Dataset, sc)
	}
	// Naming the declared scope in a run's filters is allowed, though
	// page_path is no output field; it changes no rows.
	named := mustRun(t, e, alice, "signups-us", dataexec.Params{Filters: ds.Scope.Filters})
	if named.RowCount != 2 {
		t.Errorf("rows = %d with the scope named, want 2", named.RowCount)
	}
	refs, err := e.exec.Resolve(ctx, alice, []access.Entity{{Type: access.TypeDataset, ID: "signups-us"}})
	if err != nil || refs[0] == nil || refs[0].Info != wantInfo || refs[0].Scope == nil {
		t.Errorf("context ref = %+v, %v", refs[0], err)
	}
	found, err := e.exec.Search(ctx, alice, dataexec.SearchQuery{Text: "US signups", Types: []access.EntityType{access.TypeDataset}})
	if err != nil || len(found) != 1 || found[0].Info != wantInfo || found[0].Scope == nil || found[0].Scope.Text != wantText {
		t.Errorf("search = %+v, %v", found, err)
	}
	cr, err := e.exec.ChartData(ctx, alice, "c-us", dataexec.Params{})
	if err != nil || cr.Datasets[0].Scope == nil || cr.Datasets[0].Info != wantInfo {
		t.Errorf("chart result datasets = %+v, %v", cr, err)
	}
	// The unscoped dataset is named only to whom may read it.
	all := ds.Request
	all.Filters = nil
	e.cat.PutDataset(workspace.Dataset{ID: "secret", TeamID: "acme", ProjectID: "finance", Name: "All signups", Version: 1, Request: all})

	ds.Scope.UnscopedID = "secret"
	e.cat.PutDataset(ds)
	if res := mustRun(t, e, alice, "signups-us", dataexec.Params{}); res.Dataset.Scope.Unscoped == nil {
		t.Error("alice, who may read it, is not offered the unscoped dataset")
	}
	if res := mustRun(t, e, bob, "signups-us", dataexec.Params{}); res.Dataset.Scope == nil || res.Dataset.Scope.Unscoped != nil {
		t.Errorf("bob sees scope %+v; the unscoped dataset is in a project he cannot read", res.Dataset.Scope)
	}
}
