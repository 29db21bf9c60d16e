package main

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/askbi/askbi"
	"github.com/askbi/askbi/access"
	"github.com/askbi/askbi/dataexec"
	"github.com/askbi/askbi/mcpserver"
	"github.com/askbi/askbi/pgstore"
	"github.com/askbi/askbi/workspace"
)

// The demo workspace: team Acme (projects Growth and Finance) and team
// Globex (project Ops).
const (
	teamAcme   = "acme"
	teamGlobex = "globex"
	projGrowth = "growth"
	projFin    = "finance"
	projOps    = "ops"
)

var projectNames = map[string]string{projGrowth: "Growth", projFin: "Finance", projOps: "Ops"}

// demoPrincipal is one evaluator identity written to the credentials file.
type demoPrincipal struct {
	Name     string
	User     string
	Team     string
	Role     access.Role
	Projects access.Projects // the member's grants and the key's project set
	Scopes   []string
}

var demoPrincipals = []demoPrincipal{
	{"alice", "alice", teamAcme, access.RoleOwner, access.AllProjects(), []string{"data:read", "data:refresh", "charts:preview", "datasets:write"}},
	{"alice-read", "alice", teamAcme, access.RoleOwner, access.AllProjects(), []string{"data:read"}},
	{"bob", "bob", teamAcme, access.RoleEditor, access.ProjectSet(projGrowth), []string{"data:read", "data:refresh", "charts:preview"}},
	{"vic", "vic", teamAcme, access.RoleViewer, access.AllProjects(), []string{"data:read"}},
	{"carol", "carol", teamGlobex, access.RoleOwner, access.AllProjects(), []string{"data:read", "data:refresh", "charts:preview", "datasets:write"}},
}

// The demo warehouse. The same SQL runs on PostgreSQL and, without it, is
// answered from demoTables by the static source.
const (
	sqlWeeklySignups = `SELECT to_char(date_trunc('week', day), 'YYYY-MM-DD') AS week, sum(signups)::int AS signups FROM signups GROUP BY 1 ORDER BY 1`
	sqlByCountry     = `SELECT country, sum(signups)::int AS signups FROM signups GROUP BY 1 ORDER BY 2 DESC, 1`
	sqlMRR           = `SELECT to_char(month, 'YYYY-MM') AS month, mrr FROM mrr ORDER BY month`
	sqlTickets       = `SELECT to_char(day, 'YYYY-MM-DD') AS day, opened, closed FROM tickets ORDER BY day`
	// sqlSignupCountries has no number: when each country first signed up.
	sqlSignupCountries = `SELECT country, to_char(min(day), 'YYYY-MM-DD') AS first_signup FROM signups GROUP BY 1 ORDER BY 1`
)

// The demo warehouse lives in its own schema, which is all the SQL
// source's role can read: with -database-url, askbi's own tables share the
// database.
const (
	warehouseSchemaName = "warehouse"
	readerRole          = "askbi_reader"
)

// warehouseSchema creates and fills the demo warehouse; it is idempotent.
var warehouseSchema = []string{
	`CREATE SCHEMA IF NOT EXISTS warehouse`,
	`CREATE TABLE IF NOT EXISTS warehouse.signups (day date NOT NULL, country text NOT NULL, signups int NOT NULL)`,
	`CREATE TABLE IF NOT EXISTS warehouse.mrr (month date PRIMARY KEY, mrr numeric(12,2) NOT NULL)`,
	`CREATE TABLE IF NOT EXISTS warehouse.tickets (day date PRIMARY KEY, opened int NOT NULL, closed int NOT NULL)`,
	`INSERT INTO warehouse.signups SELECT d::date, c, 20 + (abs(hashtext(c || d::text)) % 40)
	   FROM generate_series(date '2026-09-07', date '2026-11-29', interval '1 day') d,
	        unnest(array['US','DE','FR','BR','JP']) c
	  WHERE NOT EXISTS (SELECT 1 FROM warehouse.signups)`,
	`INSERT INTO warehouse.mrr SELECT m::date, 42000 + 1850 * row_number() OVER (ORDER BY m)
	   FROM generate_series(date '2026-01-01', date '2026-11-01', interval '1 month') m
	  WHERE NOT EXISTS (SELECT 1 FROM warehouse.mrr)`,
	`INSERT INTO warehouse.tickets SELECT d::date, 30 + (abs(hashtext('o' || d::text)) % 25), 28 + (abs(hashtext('c' || d::text)) % 25)
	   FROM generate_series(date '2026-11-01', date '2026-11-29', interval '1 day') d
	  WHERE NOT EXISTS (SELECT 1 FROM warehouse.tickets)`,
}

// readerSearchPath runs after pgsource.SQLForReadOnlyRole: the reader
// resolves the demo SQL's table names in schema warehouse (in this
// database only), and keeps no grant on schema public from earlier
// versions, which seeded the warehouse there.
var readerSearchPath = []string{
	`DO $$ BEGIN EXECUTE format('ALTER ROLE %I IN DATABASE %I SET search_path = warehouse', '` + readerRole + `', current_database()); END $$`,
	// Only the tables it holds a grant on: a REVOKE on every table of
	// public would rewrite each one's catalog row, colliding with the
	// state migrations another instance runs there at the same time.
	`DO $$ DECLARE t regclass; BEGIN
  FOR t IN SELECT DISTINCT c.oid::regclass FROM pg_catalog.pg_class c
    JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace, aclexplode(c.relacl) a
    WHERE n.nspname = 'public' AND a.grantee = '` + readerRole + `'::regrole
  LOOP
    EXECUTE format('REVOKE ALL ON %s FROM ` + readerRole + `', t);
  END LOOP;
END $$`,
	`ALTER DEFAULT PRIVILEGES IN SCHEMA public REVOKE SELECT ON TABLES FROM ` + readerRole,
}

// demoDirectory is the demo's teams: their projects and members (stored
// in memory at each start, in PostgreSQL once).
func demoDirectory() pgstore.DirectorySeed {
	s := pgstore.DirectorySeed{Projects: [][2]string{{teamAcme, projGrowth}, {teamAcme, projFin}, {teamGlobex, projOps}}}
	for _, p := range demoPrincipals {
		s.Members = append(s.Members, pgstore.SeedMember{Team: p.Team, User: p.User, Role: p.Role, Projects: p.Projects})
	}
	return s
}

// memoryDirectory is a directory in memory holding s.
func memoryDirectory(s pgstore.DirectorySeed) *access.MemoryDirectory {
	dir := access.NewMemoryDirectory()
	for _, p := range s.Projects {
		dir.AddProject(p[0], p[1])
	}
	for _, m := range s.Members {
		dir.SetMember(m.Team, m.User, m.Role, m.Projects)
	}
	return dir
}

// seedWorkspace fills the activity feed, and returns the demo catalog
// (stored in memory at each start, in PostgreSQL once).
func seedWorkspace(act *mcpserver.MemoryActivity, sourceType string, now time.Time) pgstore.CatalogSeed {
	var cat pgstore.CatalogSeed
	at := now.Add(-24 * time.Hour).UTC()
	// When items last changed, as the activity feed below tells it, so
	// that "recent" means something in the context picker.
	changed := map[string]time.Duration{"chart_weekly_signups": 2 * time.Hour, "chart_mrr": 3 * time.Hour,
		"dash_growth": 4 * time.Hour, "ds_tickets": 5 * time.Hour, "chart_signups_country": 20 * time.Hour}
	updated := func(id string) time.Time {
		if ago, ok := changed[id]; ok {
			return now.Add(-ago).UTC()
		}
		return at
	}
	cat.Connections = []workspace.Connection{
		{ID: "conn_acme_wh", TeamID: teamAcme, Name: "Acme warehouse", Type: sourceType, Active: true, CreatedAt: at, UpdatedAt: at},
		{ID: "conn_globex_wh", TeamID: teamGlobex, Name: "Globex warehouse", Type: sourceType, Active: true, CreatedAt: at, UpdatedAt: at},
	}
	dash := func(id, team, project, name string) {
		cat.Dashboards = append(cat.Dashboards, workspace.Dashboard{ID: id, TeamID: team, ProjectID: project, Name: name, CreatedAt: at, UpdatedAt: updated(id)})
	}
	dash("dash_growth", teamAcme, projGrowth, "Growth overview")
	dash("dash_finance", teamAcme, projFin, "Finance")
	dash("dash_revenue", teamAcme, projFin, "Revenue")
	dash("dash_support", teamGlobex, projOps, "Support")
	ds := func(id, team, project, conn, name, sql string) {
		cat.Datasets = append(cat.Datasets, workspace.Dataset{ID: id, TeamID: team, ProjectID: project, Name: name, Version: 1,
			Request: workspace.Request{ConnectionID: conn, SQL: sql}, CreatedAt: at, UpdatedAt: updated(id)})
	}
	ds("ds_weekly_signups", teamAcme, projGrowth, "conn_acme_wh", "Weekly signups", sqlWeeklySignups)
	ds("ds_signups_country", teamAcme, projGrowth, "conn_acme_wh", "Signups by country", sqlByCountry)
	// A scoped dataset: its saved filter limits it to two countries, and
	// Ask offers Signups by country for a broader question.
	cat.Datasets = append(cat.Datasets, workspace.Dataset{ID: "ds_signups_eu", TeamID: teamAcme, ProjectID: projGrowth, Name: "EU signups by country", Version: 1,
		Request: workspace.Request{ConnectionID: "conn_acme_wh", SQL: sqlByCountry,
			Filters: []workspace.Filter{{Field: "country", Op: workspace.OpIn, Value: []any{"DE", "FR"}}}},
		Scope: &workspace.Scope{UnscopedID: "ds_signups_country"}, CreatedAt: at, UpdatedAt: updated("ds_signups_eu")})
	ds("ds_mrr", teamAcme, projFin, "conn_acme_wh", "MRR", sqlMRR)
	ds("ds_tickets", teamGlobex, projOps, "conn_globex_wh", "Tickets by day", sqlTickets)
	chart := func(id, team, project, dashID, name string, typ workspace.ChartType, dsID, x string, y ...string) {
		cat.Charts = append(cat.Charts, workspace.Chart{ID: id, TeamID: team, ProjectID: project, DashboardID: dashID, Name: name, Type: typ,
			DatasetID: dsID, XField: x, YFields: y, CreatedAt: at, UpdatedAt: updated(id)})
	}
	chart("chart_weekly_signups", teamAcme, projGrowth, "dash_growth", "Weekly signups", workspace.ChartLine, "ds_weekly_signups", "week", "signups")
	chart("chart_signups_country", teamAcme, projGrowth, "dash_growth", "Signups by country", workspace.ChartBar, "ds_signups_country", "country", "signups")
	chart("chart_mrr", teamAcme, projFin, "dash_finance", "MRR", workspace.ChartLine, "ds_mrr", "month", "mrr")
	chart("chart_tickets", teamGlobex, projOps, "dash_support", "Tickets by day", workspace.ChartBar, "ds_tickets", "day", "opened", "closed")

	item := func(team, project, kind string, ago time.Duration, ref dataexec.Ref, summary string) {
		act.Add(team, mcpserver.ActivityItem{Time: now.Add(-ago).UTC(), Kind: kind, ProjectID: project, Entity: ref, Summary: summary})
	}
	item(teamAcme, projGrowth, "metric_evaluated", 2*time.Hour, dataexec.Ref{Type: access.TypeChart, ID: "chart_weekly_signups", Name: "Weekly signups"}, "Weekly signups rose 6% week over week")
	item(teamAcme, projFin, "metric_evaluated", 3*time.Hour, dataexec.Ref{Type: access.TypeChart, ID: "chart_mrr", Name: "MRR"}, "MRR reached 62,350 in November")
	item(teamAcme, projGrowth, "chart_updated", 20*time.Hour, dataexec.Ref{Type: access.TypeChart, ID: "chart_signups_country", Name: "Signups by country"}, "Chart type changed to bar")
	item(teamGlobex, projOps, "dataset_created", 5*time.Hour, dataexec.Ref{Type: access.TypeDataset, ID: "ds_tickets", Name: "Tickets by day"}, "Dataset created")
	mcpDS, mcpChart := demoMCPDataset(at)
	cat.Datasets, cat.Charts = append(cat.Datasets, mcpDS), append(cat.Charts, mcpChart)
	return cat
}

// putSeed stores s in m.
func putSeed(m *workspace.MemoryCatalog, s pgstore.CatalogSeed) {
	for _, c := range s.Connections {
		m.PutConnection(c)
	}
	for _, d := range s.Dashboards {
		m.PutDashboard(d)
	}
	for _, d := range s.Datasets {
		m.PutDataset(d)
	}
	for _, c := range s.Charts {
		m.PutChart(c)
	}
}

// demoSource answers the demo datasets' SQL from built-in rows, for
// machines without PostgreSQL. Any other SQL is Unsupported.
type demoSource struct {
	tables map[string]*dataexec.Table
	*dataexec.TableSource
}

func newDemoSource() demoSource {
	tables := map[string]*dataexec.Table{}
	week := &dataexec.Table{Columns: []string{"week", "signups"}}
	for i, d := 0, time.Date(2026, 9, 7, 0, 0, 0, 0, time.UTC); i < 12; i, d = i+1, d.AddDate(0, 0, 7) {
		week.Rows = append(week.Rows, []any{d.Format("2006-01-02"), int64(1180 + 37*i + (i%3)*21)})
	}
	tables[sqlWeeklySignups] = week
	tables[sqlByCountry] = &dataexec.Table{Columns: []string{"country", "signups"}, Rows: [][]any{
		{"US", int64(3410)}, {"DE", int64(3322)}, {"BR", int64(3305)}, {"FR", int64(3251)}, {"JP", int64(3190)},
	}}
	mrr := &dataexec.Table{Columns: []string{"month", "mrr"}}
	for m := 1; m <= 11; m++ {
		mrr.Rows = append(mrr.Rows, []any{fmt.Sprintf("2026-%02d", m), json.Number(fmt.Sprintf("%d.00", 42000+1850*m))})
	}
	tables[sqlMRR] = mrr
	tickets := &dataexec.Table{Columns: []string{"day", "opened", "closed"}}
	for d := 1; d <= 29; d++ {
		tickets.Rows = append(tickets.Rows, []any{fmt.Sprintf("2026-11-%02d", d), int64(30 + (d*7)%25), int64(28 + (d*11)%25)})
	}
	tables[sqlTickets] = tickets
	// A query no demo dataset uses: the browser tests seed a dataset on it
	// (no numeric field, answered with a table).
	tables[sqlSignupCountries] = &dataexec.Table{Columns: []string{"country", "first_signup"}, Rows: [][]any{
		{"BR", "2026-09-07"}, {"DE", "2026-09-07"}, {"FR", "2026-09-07"}, {"JP", "2026-09-07"}, {"US", "2026-09-07"},
	}}
	return demoSource{tables, dataexec.NewTableSource(tables)}
}

// Query implements dataexec.Source.
func (s demoSource) Query(ctx context.Context, q dataexec.Query) (*dataexec.Table, error) {
	if _, ok := s.tables[strings.TrimSpace(q.SQL)]; !ok {
		return nil, askbi.Errorf(askbi.Unsupported, "SQL exploration needs PostgreSQL; this server runs on built-in demo rows")
	}
	return s.TableSource.Query(ctx, q)
}
