package main

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/askbi/askbi/ask/askeval"
	"github.com/askbi/askbi/mcpserver"
)

// TestEvalDemo holds the evaluation harness's demo workspace
// (askeval.Demo, which cannot import this package) to this server's as
// it runs without PostgreSQL: the same connections, dashboards,
// datasets and charts, the same built-in rows, the same members. Only
// what reads the demo MCP servers (Top pages) is left out of it.
func TestEvalDemo(t *testing.T) {
	ctx := t.Context()
	ws, err := askeval.Demo(ctx)
	if err != nil {
		t.Fatal(err)
	}
	seed := seedWorkspace(mcpserver.NewMemoryActivity(), "demo", askeval.DemoNow)
	for _, c := range seed.Connections {
		got, err := ws.Catalog.Connection(ctx, c.ID)
		if err != nil || !cmp.Equal(c, got) {
			t.Errorf("connection %s: %v\n%s", c.ID, err, cmp.Diff(c, got))
		}
	}
	for _, d := range seed.Dashboards {
		got, err := ws.Catalog.Dashboard(ctx, d.ID)
		if err != nil || !cmp.Equal(d, got) {
			t.Errorf("dashboard %s: %v\n%s", d.ID, err, cmp.Diff(d, got))
		}
	}
	for _, d := range seed.Datasets {
		if d.ID == demoTopPagesDS {
			continue
		}
		got, err := ws.Catalog.Dataset(ctx, d.ID)
		if err != nil || !cmp.Equal(d, got) {
			t.Errorf("dataset %s: %v\n%s", d.ID, err, cmp.Diff(d, got))
		}
	}
	for _, c := range seed.Charts {
		if c.DatasetID == demoTopPagesDS {
			continue
		}
		got, err := ws.Catalog.Chart(ctx, c.ID)
		if err != nil || !cmp.Equal(c, got) {
			t.Errorf("chart %s: %v\n%s", c.ID, err, cmp.Diff(c, got))
		}
	}
	tables := newDemoSource().tables
	// A browser test's dataset reads it (no numeric field); the seeded
	// workspace has no dataset on it.
	delete(tables, sqlSignupCountries)
	if diff := cmp.Diff(tables, askeval.DemoTables()); diff != "" {
		t.Errorf("the built-in rows differ (-refserver +askeval):\n%s", diff)
	}
	for _, p := range demoPrincipals {
		if p.Name != p.User {
			continue // alice-read is alice with a narrower key
		}
		live, err := ws.Gate.Begin(ctx, ws.Principals[p.Name])
		if err != nil || live.TeamID != p.Team || live.Role != p.Role || !cmp.Equal(live.Projects, p.Projects) {
			t.Errorf("%s: %+v, %v; want team %s, role %s, projects %v", p.Name, live, err, p.Team, p.Role, p.Projects)
		}
	}
}
