package askeval

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/askbi/askbi/access"
	"github.com/askbi/askbi/ask"
	"github.com/askbi/askbi/connections"
	"github.com/askbi/askbi/connresolve"
	"github.com/askbi/askbi/dataexec"
	"github.com/askbi/askbi/workspace"
)

// DemoNow is the demo workspace's today: the Monday after its newest
// data, so that "the last 4 weeks" means the same on every run.
var DemoNow = time.Date(2026, 11, 30, 9, 0, 0, 0, time.UTC)

// The demo warehouse's queries: the reference server's, byte for byte,
// so that the same datasets read the same built-in rows.
const (
	demoSQLWeeklySignups = `SELECT to_char(date_trunc('week', day), 'YYYY-MM-DD') AS week, sum(signups)::int AS signups FROM signups GROUP BY 1 ORDER BY 1`
	demoSQLByCountry     = `SELECT country, sum(signups)::int AS signups FROM signups GROUP BY 1 ORDER BY 2 DESC, 1`
	demoSQLMRR           = `SELECT to_char(month, 'YYYY-MM') AS month, mrr FROM mrr ORDER BY month`
	demoSQLTickets       = `SELECT to_char(day, 'YYYY-MM-DD') AS day, opened, closed FROM tickets ORDER BY day`
)

// Demo is the reference server's demo workspace as it runs without
// PostgreSQL (examples/refserver, demo.go: its catalog and built-in
// rows), built afresh on every call, so that what one run's approved
// change did (a deleted dashboard) never reaches the next. It is what
// the golden set ([Golden]) asks its questions of.
//
// Team Acme (projects Growth and Finance: datasets Weekly signups,
// Signups by country, EU signups by country, which is scoped to DE and
// FR, and MRR; their charts; the dashboards Growth overview, Finance and
// Revenue) and team Globex (project Ops: Tickets by day, on the Support
// dashboard). Its principals are alice (Acme owner, the default), bob
// (Acme editor, Growth only), vic (Acme viewer) and carol (Globex owner).
// The assistant has the product's tools and list_connections, over the
// installed PostgreSQL and MySQL source types and the verified provider
// catalog ([connresolve.Verified]), with no remote MCP connection; tool
// output reaches the model at [ask.SharingAggregates], the reference
// server's default, and its clock is [DemoNow].
//
// What the reference server has besides is left out: the activity
// feed, its demo MCP servers (so the Top pages dataset and chart, which
// read one, are not here), and its PostgreSQL warehouse, whose rows
// differ from the built-in ones.
func Demo(context.Context) (*Workspace, error) {
	cat := workspace.NewMemoryCatalog()
	at := DemoNow.Add(-24 * time.Hour)
	// When items last changed, as on the reference server: search lists
	// the most recently updated first.
	changed := map[string]time.Duration{"chart_weekly_signups": 2 * time.Hour, "chart_mrr": 3 * time.Hour,
		"dash_growth": 4 * time.Hour, "ds_tickets": 5 * time.Hour, "chart_signups_country": 20 * time.Hour}
	updated := func(id string) time.Time {
		if ago, ok := changed[id]; ok {
			return DemoNow.Add(-ago)
		}
		return at
	}
	for _, c := range []workspace.Connection{
		{ID: "conn_acme_wh", TeamID: "acme", Name: "Acme warehouse", Type: "demo", Active: true},
		{ID: "conn_globex_wh", TeamID: "globex", Name: "Globex warehouse", Type: "demo", Active: true},
	} {
		c.CreatedAt, c.UpdatedAt = at, at
		cat.PutConnection(c)
	}
	for _, d := range []workspace.Dashboard{
		{ID: "dash_growth", TeamID: "acme", ProjectID: "growth", Name: "Growth overview"},
		{ID: "dash_finance", TeamID: "acme", ProjectID: "finance", Name: "Finance"},
		{ID: "dash_revenue", TeamID: "acme", ProjectID: "finance", Name: "Revenue"},
		{ID: "dash_support", TeamID: "globex", ProjectID: "ops", Name: "Support"},
	} {
		d.CreatedAt, d.UpdatedAt = at, updated(d.ID)
		cat.PutDashboard(d)
	}
	sql := func(conn, q string) workspace.Request { return workspace.Request{ConnectionID: conn, SQL: q} }
	for _, d := range []workspace.Dataset{
		{ID: "ds_weekly_signups", TeamID: "acme", ProjectID: "growth", Name: "Weekly signups", Request: sql("conn_acme_wh", demoSQLWeeklySignups)},
		{ID: "ds_signups_country", TeamID: "acme", ProjectID: "growth", Name: "Signups by country", Request: sql("conn_acme_wh", demoSQLByCountry)},
		{ID: "ds_signups_eu", TeamID: "acme", ProjectID: "growth", Name: "EU signups by country",
			Request: workspace.Request{ConnectionID: "conn_acme_wh", SQL: demoSQLByCountry,
				Filters: []workspace.Filter{{Field: "country", Op: workspace.OpIn, Value: []any{"DE", "FR"}}}},
			Scope: &workspace.Scope{UnscopedID: "ds_signups_country"}},
		{ID: "ds_mrr", TeamID: "acme", ProjectID: "finance", Name: "MRR", Request: sql("conn_acme_wh", demoSQLMRR)},
		{ID: "ds_tickets", TeamID: "globex", ProjectID: "ops", Name: "Tickets by day", Request: sql("conn_globex_wh", demoSQLTickets)},
	} {
		d.Version, d.CreatedAt, d.UpdatedAt = 1, at, updated(d.ID)
		cat.PutDataset(d)
	}
	chart := func(id, team, project, dash, name string, typ workspace.ChartType, ds, x string, y ...string) {
		cat.PutChart(workspace.Chart{ID: id, TeamID: team, ProjectID: project, DashboardID: dash, Name: name, Type: typ,
			DatasetID: ds, XField: x, YFields: y, CreatedAt: at, UpdatedAt: updated(id)})
	}
	chart("chart_weekly_signups", "acme", "growth", "dash_growth", "Weekly signups", workspace.ChartLine, "ds_weekly_signups", "week", "signups")
	chart("chart_signups_country", "acme", "growth", "dash_growth", "Signups by country", workspace.ChartBar, "ds_signups_country", "country", "signups")
	chart("chart_mrr", "acme", "finance", "dash_finance", "MRR", workspace.ChartLine, "ds_mrr", "month", "mrr")
	chart("chart_tickets", "globex", "ops", "dash_support", "Tickets by day", workspace.ChartBar, "ds_tickets", "day", "opened", "closed")

	dir := access.NewMemoryDirectory()
	for _, p := range [][2]string{{"acme", "growth"}, {"acme", "finance"}, {"globex", "ops"}} {
		dir.AddProject(p[0], p[1])
	}
	dir.SetMember("acme", "alice", access.RoleOwner, access.AllProjects())
	dir.SetMember("acme", "bob", access.RoleEditor, access.ProjectSet("growth"))
	dir.SetMember("acme", "vic", access.RoleViewer, access.AllProjects())
	dir.SetMember("globex", "carol", access.RoleOwner, access.AllProjects())
	session := func(user, team string) access.Principal {
		return access.Principal{UserID: user, TeamID: team, Auth: access.AuthSession}
	}

	src := dataexec.NewTableSource(DemoTables())
	sources := dataexec.SourceMap{"conn_acme_wh": src, "conn_globex_wh": src}
	exec := dataexec.NewExecutor(cat, sources, nil)
	// The reference server's installed source types; "demo" is what its
	// built-in rows are typed as, standing in for PostgreSQL.
	postgres := connresolve.NativeSource{Type: "postgres", Name: "PostgreSQL", Providers: []string{"postgresql", "postgres", "supabase"},
		Capabilities: []connresolve.Capability{connresolve.Database}}
	mysql := connresolve.NativeSource{Type: "mysql", Name: "MySQL", Providers: []string{"mysql", "mariadb"},
		Capabilities: []connresolve.Capability{connresolve.Database}}
	demo := postgres
	demo.Type, demo.Name = "demo", ""
	resolver := connresolve.NewResolver(connresolve.CatalogConnections{Catalog: cat, Remote: noRemote{},
		Natives: []connresolve.NativeSource{demo, postgres, mysql}, Verified: connresolve.Verified},
		[]connresolve.NativeSource{postgres, mysql}, nil)
	return &Workspace{
		Catalog:  cat,
		Executor: exec,
		Sources:  sources,
		Gate:     access.NewGate(access.NewChecker(dir, nil), nil),
		Principals: map[string]access.Principal{
			"alice": session("alice", "acme"), "bob": session("bob", "acme"),
			"vic": session("vic", "acme"), "carol": session("carol", "globex"),
		},
		Default: "alice",
		Tools:   append(ask.ProductTools(exec), ask.ListConnections(resolver)),
		Options: ask.Options{Sharing: ask.StaticSharing(ask.SharingAggregates), Now: func() time.Time { return DemoNow }},
	}, nil
}

// DemoTables are the demo warehouse's built-in rows, keyed by the SQL of
// the dataset that reads them: the reference server's rows where no
// PostgreSQL is installed.
func DemoTables() map[string]*dataexec.Table {
	tables := map[string]*dataexec.Table{}
	week := &dataexec.Table{Columns: []string{"week", "signups"}}
	for i, d := 0, time.Date(2026, 9, 7, 0, 0, 0, 0, time.UTC); i < 12; i, d = i+1, d.AddDate(0, 0, 7) {
		week.Rows = append(week.Rows, []any{d.Format("2006-01-02"), int64(1180 + 37*i + (i%3)*21)})
	}
	tables[demoSQLWeeklySignups] = week
	tables[demoSQLByCountry] = &dataexec.Table{Columns: []string{"country", "signups"}, Rows: [][]any{
		{"US", int64(3410)}, {"DE", int64(3322)}, {"BR", int64(3305)}, {"FR", int64(3251)}, {"JP", int64(3190)},
	}}
	mrr := &dataexec.Table{Columns: []string{"month", "mrr"}}
	for m := 1; m <= 11; m++ {
		mrr.Rows = append(mrr.Rows, []any{fmt.Sprintf("2026-%02d", m), json.Number(fmt.Sprintf("%d.00", 42000+1850*m))})
	}
	tables[demoSQLMRR] = mrr
	tickets := &dataexec.Table{Columns: []string{"day", "opened", "closed"}}
	for d := 1; d <= 29; d++ {
		tickets.Rows = append(tickets.Rows, []any{fmt.Sprintf("2026-11-%02d", d), int64(30 + (d*7)%25), int64(28 + (d*11)%25)})
	}
	tables[demoSQLTickets] = tickets
	return tables
}

// noRemote is a team without remote MCP connections, for the resolver.
type noRemote struct{}

func (noRemote) Usable(context.Context, access.Principal) ([]connections.Connection, error) {
	return nil, nil
}

func (noRemote) AwaitingTools(context.Context, access.Principal) ([]connections.Connection, error) {
	return nil, nil
}
