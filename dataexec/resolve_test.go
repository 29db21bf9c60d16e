package dataexec_test

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/askbi/askbi"
	"github.com/askbi/askbi/access"
	"github.com/askbi/askbi/dataexec"
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
