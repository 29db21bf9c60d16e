package dataexec_test

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/askbi/askbi"
	"github.com/askbi/askbi/access"
	"github.com/askbi/askbi/dataexec"
	"github.com/askbi/askbi/workspace"
)

func TestResolve(t *testing.T) {
	e := newEnv(t, nil)
	refs := []access.Entity{
		{Type: access.TypeDashboard, ID: "d-growth"},
		{Type: access.TypeChart, ID: "c-signups"},
		{Type: access.TypeChart, ID: "c-draft"},
		{Type: access.TypeDataset, ID: "signups"},
		{Type: access.TypeConnection, ID: "wh"},
		{Type: access.TypeDashboard, ID: "d-fin"}, // outside bob's projects
		{Type: access.TypeChart, ID: "c-ops"},     // another team
		{Type: access.TypeDataset, ID: "no-such"}, // gone
	}
	got, err := e.exec.Resolve(context.Background(), bob, refs)
	if err != nil {
		t.Fatal(err)
	}
	want := []*dataexec.Ref{
		{Type: access.TypeDashboard, ID: "d-growth", Name: "Growth overview", ProjectID: "growth", Info: "1 chart"},
		{Type: access.TypeChart, ID: "c-signups", Name: "Signups by day", ProjectID: "growth", Info: "Growth overview · line chart"},
		{Type: access.TypeChart, ID: "c-draft", Name: "Signups draft", ProjectID: "growth", Info: "Preview · bar chart"},
		{Type: access.TypeDataset, ID: "signups", Name: "Signups", ProjectID: "growth", Info: "Warehouse · PostgreSQL"},
		{Type: access.TypeConnection, ID: "wh", Name: "Warehouse", Info: "PostgreSQL · active"},
		nil, nil, nil,
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Resolve mismatch (-want +got):\n%s", diff)
	}
	if _, err := e.exec.Resolve(context.Background(), bob, []access.Entity{{Type: "team", ID: "acme"}}); askbi.ErrorCode(err) != askbi.InvalidArgument {
		t.Errorf("Resolve(team) = %v, want invalid_argument", err)
	}
}

func TestDeleteDashboard(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t, nil)
	mustCode(t, e.exec.DeleteDashboard(ctx, vic, "d-growth"), askbi.Forbidden)
	mustCode(t, e.exec.DeleteDashboard(ctx, bob, "d-fin"), askbi.NotFound)
	mustCode(t, e.exec.DeleteDashboard(ctx, alice, "d-ops"), askbi.NotFound)
	if _, err := e.cat.Dashboard(ctx, "d-growth"); err != nil {
		t.Fatalf("denied delete removed the dashboard: %v", err)
	}
	mustCode(t, e.exec.DeleteDashboard(ctx, bob, "d-growth"), "")
	if _, err := e.cat.Dashboard(ctx, "d-growth"); askbi.ErrorCode(err) != askbi.NotFound {
		t.Errorf("dashboard still there: %v", err)
	}
	if _, err := e.cat.Chart(ctx, "c-signups"); askbi.ErrorCode(err) != askbi.NotFound {
		t.Errorf("its chart still there: %v", err)
	}
}

// TestRefreshCharts: saved chart results come back as their charts stand
// now; a gone one as unavailable, with the links to its datasets that
// still exist.
func TestRefreshCharts(t *testing.T) {
	e := newEnv(t, nil)
	preview, err := e.exec.CreateChartPreview(ctx, alice, dataexec.ChartSpec{DatasetID: "signups", Name: "Draft", Type: workspace.ChartBar,
		XField: "country", YFields: []string{"signups"}})
	if err != nil {
		t.Fatal(err)
	}
	saved, err := e.exec.ChartData(ctx, alice, "c-signups", dataexec.Params{})
	if err != nil {
		t.Fatal(err)
	}
	ops := dataexec.ChartResult{Status: workspace.StatusSaved, Chart: dataexec.Ref{Type: access.TypeChart, ID: "c-ops", Name: "Tickets"},
		Datasets: []dataexec.Ref{{Type: access.TypeDataset, ID: "tickets", Name: "Tickets"}}}
	old := []dataexec.ChartResult{preview.WithoutData(), saved.WithoutData(), ops}

	if _, err := e.exec.PlaceChart(ctx, alice, preview.Chart.ID, "d-growth"); err != nil {
		t.Fatal(err)
	}
	if err := e.cat.DeleteDashboard(ctx, "d-growth"); err != nil { // takes both charts
		t.Fatal(err)
	}
	got, err := e.exec.RefreshCharts(ctx, alice, old)
	if err != nil {
		t.Fatal(err)
	}
	signups := dataexec.Ref{Type: access.TypeDataset, ID: "signups", Name: "Signups", ProjectID: "growth", Info: "Warehouse · PostgreSQL"}
	want := []dataexec.ChartResult{
		{Status: workspace.StatusUnavailable, Chart: preview.Chart, ChartType: workspace.ChartBar, Datasets: []dataexec.Ref{signups}},
		{Status: workspace.StatusUnavailable, Chart: saved.Chart, ChartType: workspace.ChartLine, Datasets: []dataexec.Ref{signups}},
		// Another team's chart tells nothing, not even its dataset.
		{Status: workspace.StatusUnavailable, Chart: ops.Chart, Datasets: []dataexec.Ref{}},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("RefreshCharts mismatch (-want +got):\n%s", diff)
	}

	// A chart that still exists shows as it is now.
	draft, err := e.exec.CreateChartPreview(ctx, alice, dataexec.ChartSpec{DatasetID: "signups", Name: "Again", Type: workspace.ChartBar,
		XField: "country", YFields: []string{"signups"}})
	if err != nil {
		t.Fatal(err)
	}
	e.cat.PutDashboard(workspace.Dashboard{ID: "d-new", TeamID: "acme", ProjectID: "growth", Name: "New"})
	if _, err := e.exec.PlaceChart(ctx, alice, draft.Chart.ID, "d-new"); err != nil {
		t.Fatal(err)
	}
	e.cat.DeleteDataset("signups")
	got, err = e.exec.RefreshCharts(ctx, alice, []dataexec.ChartResult{draft.WithoutData(), preview.WithoutData()})
	if err != nil {
		t.Fatal(err)
	}
	if got[0].Status != workspace.StatusSaved || got[0].Dashboard == nil || got[0].Dashboard.ID != "d-new" || len(got[0].Datasets) != 0 {
		t.Errorf("placed chart = %+v", got[0])
	}
	if got[1].Status != workspace.StatusUnavailable || len(got[1].Datasets) != 0 {
		t.Errorf("gone chart whose dataset went too = %+v", got[1])
	}
}
