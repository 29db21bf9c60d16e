package dataexec_test

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/askbi/askbi"
	"github.com/askbi/askbi/access"
	"github.com/askbi/askbi/dataexec"
	"github.com/askbi/askbi/workspace"
	"github.com/askbi/askbi/workspace/workspacetest"
)

// reaches reports what each executor path answers p about chart id: ok
// when it reaches the chart, or the error code and message it gave,
// which for a chart out of reach must be those of an unknown one.
func reaches(t *testing.T, e *env, p access.Principal, id string) map[string]string {
	t.Helper()
	out := map[string]string{}
	note := func(path string, err error) {
		if err == nil {
			out[path] = "ok"
			return
		}
		out[path] = string(askbi.ErrorCode(err)) + ": " + askbi.ErrorMessage(err)
	}
	_, err := e.exec.ChartData(ctx, p, id, dataexec.Params{})
	note("ChartData", err)
	_, err = e.exec.UpdateChart(ctx, p, dataexec.ChartChange{ChartID: id, Name: "Renamed"})
	note("UpdateChart", err)
	live, err := e.exec.gate.Begin(ctx, p)
	if err != nil {
		t.Fatal(err)
	}
	note("PlaceChart check", dataexec.PlaceChartAction.Check(e.exec.x, ctx, live, dataexec.Placement{ChartID: id, DashboardID: "d-growth"}))

	refs, err := e.exec.Resolve(ctx, p, []access.Entity{{Type: access.TypeChart, ID: id}})
	if err != nil {
		t.Fatal(err)
	}
	out["Resolve"] = "nil"
	if refs[0] != nil {
		out["Resolve"] = "ok"
	}
	now, err := e.exec.RefreshCharts(ctx, p, []dataexec.ChartResult{{Status: workspace.StatusPreview, Chart: dataexec.Ref{Type: access.TypeChart, ID: id}}})
	if err != nil {
		t.Fatal(err)
	}
	out["RefreshCharts"] = string(now[0].Status)
	found, err := e.exec.Search(ctx, p, dataexec.SearchQuery{Types: []access.EntityType{access.TypeChart}, Limit: dataexec.MaxSearchLimit})
	if err != nil {
		t.Fatal(err)
	}
	out["Search"] = "not listed"
	for _, r := range found {
		if r.ID == id {
			out["Search"] = "listed"
		}
	}
	// Last, since it places the chart when it may.
	_, err = e.exec.x.PlaceCharts(ctx, live, []string{id}, "d-growth")
	note("PlaceCharts", err)
	return out
}

// TestPreviewIsPrivate: a chart preview is its creator's until it is
// placed. To every other member, owners included, every path answers as
// it answers an unknown chart (the same code and message), runs no query
// and changes nothing; a preview with no recorded creator (saved before
// creators were) is out of everyone's reach. Once placed, the chart is the
// team's.
func TestPreviewIsPrivate(t *testing.T) {
	e := newEnv(t, nil)
	cr, err := e.exec.CreateChartPreview(ctx, alice, dataexec.ChartSpec{DatasetID: "signups", Name: "Alice's signups", Type: workspace.ChartBar,
		XField: "country", YFields: []string{"signups"}})
	if err != nil {
		t.Fatal(err)
	}
	id := cr.Chart.ID
	if c, err := e.cat.Chart(ctx, id); err != nil || c.CreatedBy != "alice" {
		t.Fatalf("stored preview = %+v, %v; want alice as its creator", c, err)
	}
	e.cat.PutChart(workspace.Chart{ID: "c-legacy", TeamID: "acme", ProjectID: "growth", Name: "Legacy draft",
		Type: workspace.ChartBar, DatasetID: "signups", XField: "country", YFields: []string{"signups"}})

	stored, _ := e.cat.Chart(ctx, id)
	e.dir.SetMember("acme", "owner2", access.RoleOwner, access.AllProjects())
	for _, tc := range []struct {
		name string
		who  access.Principal
		id   string
	}{
		{"an editor of its project", bob, id},
		{"a viewer", vic, id},
		{"an editor's key", apiKey("bob", "acme", "k", access.AllProjects(), access.AllScopes...), id},
		{"another owner of the team", session("owner2", "acme"), id},
		// No recorded creator: nobody, not even who made it.
		{"no creator, alice", alice, "c-legacy"},
		{"no creator, bob", bob, "c-legacy"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// What tc.who is told of a chart that does not exist.
			unknown := reaches(t, e, tc.who, "no-such-chart")
			for path, got := range unknown {
				if got == "ok" || got == "listed" || got == "saved" || got == "preview" {
					t.Fatalf("%s of an unknown chart = %s", path, got)
				}
			}
			calls := e.calls()
			if diff := cmp.Diff(unknown, reaches(t, e, tc.who, tc.id)); diff != "" {
				t.Errorf("the preview is told apart from an unknown chart (-unknown +preview):\n%s", diff)
			}
			if n := e.calls() - calls; n != 0 {
				t.Errorf("%d queries ran", n)
			}
		})
	}
	if now, _ := e.cat.Chart(ctx, id); !cmp.Equal(stored, now, workspacetest.CmpOptions) {
		t.Errorf("the preview changed: %+v, was %+v", now, stored)
	}

	// Its creator reaches it on every path (PlaceCharts last: it places).
	want := map[string]string{"ChartData": "ok", "UpdateChart": "ok", "PlaceChart check": "ok", "PlaceCharts": "ok",
		"Resolve": "ok", "RefreshCharts": "preview", "Search": "listed"}
	if diff := cmp.Diff(want, reaches(t, e, alice, id)); diff != "" {
		t.Errorf("alice on her preview (-want +got):\n%s", diff)
	}

	// reaches placed it on d-growth: now it is the team's.
	if c, err := e.cat.Chart(ctx, id); err != nil || c.DashboardID != "d-growth" {
		t.Fatalf("chart after placement = %+v, %v", c, err)
	}
	want = map[string]string{"ChartData": "ok", "UpdateChart": "ok", "PlaceChart check": "conflict: the chart is already on a dashboard",
		"PlaceCharts": "ok", "Resolve": "ok", "RefreshCharts": "saved", "Search": "listed"}
	if diff := cmp.Diff(want, reaches(t, e, bob, id)); diff != "" {
		t.Errorf("bob on the placed chart (-want +got):\n%s", diff)
	}
}
