package askhttp_test

import (
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/askbi/askbi/internal/chattest"
	"github.com/askbi/askbi/workspace"

	"github.com/askbi/askbi/access"
	"github.com/askbi/askbi/access/accesstest"
	"github.com/askbi/askbi/ask"
	"github.com/askbi/askbi/ask/askhttp"
	"github.com/askbi/askbi/ask/provider/mock"
	"github.com/askbi/askbi/dataexec"
	"github.com/askbi/askbi/memory"
)

// The workspace of the tests, with the reference server's demo IDs and
// names, on accesstest.Teams; its users sign in with accesstest.Login.
var (
	users        = accesstest.Sessions
	token        = accesstest.Token
	authenticate = accesstest.Login
)

const (
	sqlWeeklySignups = "SELECT week, signups FROM weekly_signups"
	sqlByCountry     = "SELECT country, signups FROM signups_by_country"
	sqlMRR           = "SELECT month, mrr FROM mrr"
	sqlTickets       = "SELECT day, opened, closed FROM tickets"
)

// seed fills the catalog (dir holds accesstest.Teams), and returns the warehouse
// tables the datasets' SQL reads.
func seed(dir *access.MemoryDirectory, cat *workspace.MemoryCatalog, now time.Time) map[string]*dataexec.Table {

	at := now.Add(-24 * time.Hour).UTC()
	// The most recently changed items, so that the picker's Recent group
	// has a known order.
	changed := map[string]time.Duration{"chart_weekly_signups": 2 * time.Hour, "chart_mrr": 3 * time.Hour,
		"dash_growth": 4 * time.Hour, "ds_tickets": 5 * time.Hour, "chart_signups_country": 20 * time.Hour}
	updated := func(id string) time.Time {
		if ago, ok := changed[id]; ok {
			return now.Add(-ago).UTC()
		}
		return at
	}
	cat.PutConnection(workspace.Connection{ID: "conn_acme_wh", TeamID: "acme", Name: "Acme warehouse", Type: "postgres", Active: true, CreatedAt: at, UpdatedAt: at})
	cat.PutConnection(workspace.Connection{ID: "conn_globex_wh", TeamID: "globex", Name: "Globex warehouse", Type: "postgres", Active: true, CreatedAt: at, UpdatedAt: at})
	for _, d := range [][4]string{
		{"dash_growth", "acme", "growth", "Growth overview"}, {"dash_finance", "acme", "finance", "Finance"},
		{"dash_revenue", "acme", "finance", "Revenue"}, {"dash_support", "globex", "ops", "Support"},
	} {
		cat.PutDashboard(workspace.Dashboard{ID: d[0], TeamID: d[1], ProjectID: d[2], Name: d[3], CreatedAt: at, UpdatedAt: updated(d[0])})
	}
	for _, d := range [][6]string{
		{"ds_weekly_signups", "acme", "growth", "conn_acme_wh", "Weekly signups", sqlWeeklySignups},
		{"ds_signups_country", "acme", "growth", "conn_acme_wh", "Signups by country", sqlByCountry},
		{"ds_mrr", "acme", "finance", "conn_acme_wh", "MRR", sqlMRR},
		{"ds_tickets", "globex", "ops", "conn_globex_wh", "Tickets by day", sqlTickets},
	} {
		cat.PutDataset(workspace.Dataset{ID: d[0], TeamID: d[1], ProjectID: d[2], Name: d[4], Version: 1,
			Request: workspace.Request{ConnectionID: d[3], SQL: d[5]}, CreatedAt: at, UpdatedAt: updated(d[0])})
	}
	chart := func(id, team, project, dash, name string, typ workspace.ChartType, ds, x string, y ...string) {
		cat.PutChart(workspace.Chart{ID: id, TeamID: team, ProjectID: project, DashboardID: dash, Name: name, Type: typ,
			DatasetID: ds, XField: x, YFields: y, CreatedAt: at, UpdatedAt: updated(id)})
	}
	chart("chart_weekly_signups", "acme", "growth", "dash_growth", "Weekly signups", workspace.ChartLine, "ds_weekly_signups", "week", "signups")
	chart("chart_signups_country", "acme", "growth", "dash_growth", "Signups by country", workspace.ChartBar, "ds_signups_country", "country", "signups")
	chart("chart_mrr", "acme", "finance", "dash_finance", "MRR", workspace.ChartLine, "ds_mrr", "month", "mrr")
	chart("chart_tickets", "globex", "ops", "dash_support", "Tickets by day", workspace.ChartBar, "ds_tickets", "day", "opened", "closed")

	week := &dataexec.Table{Columns: []string{"week", "signups"}}
	for i, d := 0, time.Date(2026, 9, 7, 0, 0, 0, 0, time.UTC); i < 12; i, d = i+1, d.AddDate(0, 0, 7) {
		week.Rows = append(week.Rows, []any{d.Format("2006-01-02"), int64(1180 + 37*i)})
	}
	mrr := &dataexec.Table{Columns: []string{"month", "mrr"}}
	for m := 1; m <= 11; m++ {
		mrr.Rows = append(mrr.Rows, []any{fmt.Sprintf("2026-%02d", m), json.Number(fmt.Sprintf("%d.00", 42000+1850*m))})
	}
	return map[string]*dataexec.Table{
		sqlWeeklySignups: week,
		sqlByCountry:     {Columns: []string{"country", "signups"}, Rows: [][]any{{"US", int64(3410)}, {"DE", int64(3322)}, {"BR", int64(3305)}}},
		sqlMRR:           mrr,
		sqlTickets:       {Columns: []string{"day", "opened", "closed"}, Rows: [][]any{{"2026-11-01", int64(31), int64(29)}}},
	}
}

// config is what a test may change about the server.
type config struct {
	// provider is the model; nil makes an unavailable assistant. Default
	// the mock.
	provider ask.Provider
	// limiter is the rate limiter. Default access's.
	limiter access.RateLimiter
	// withdraw takes rights from roles (access.CheckerOptions.Withdraw).
	withdraw map[access.Right][]access.Role
	// opts are the handler's options.
	opts askhttp.Options
	// server, when set, changes the HTTP server before it starts.
	server func(*http.Server)
}

// testServer is askhttp over the workspace, behind a real HTTP server.
type testServer struct {
	chattest.Client
	dir   *access.MemoryDirectory
	cat   *workspace.MemoryCatalog
	model ask.Provider
	audit *access.MemoryAudit // the one audit log of the executor and memory
	// handler is the mux the server serves, for a test that calls it in
	// process.
	handler http.Handler
}

// MustServer builds the workspace with the SDK, serves askhttp.New over it
// at /ai/, and stops it when the test ends. edit, when set, changes the
// configuration first.
func MustServer(tb testing.TB, edit func(*config)) *testServer {
	tb.Helper()
	cfg := config{provider: mock.New()}
	if edit != nil {
		edit(&cfg)
	}
	log := slog.New(slog.NewTextHandler(tb.Output(), &slog.HandlerOptions{Level: slog.LevelError}))
	dir, cat := accesstest.Teams(), workspace.NewMemoryCatalog()
	src := dataexec.NewTableSource(seed(dir, cat, time.Now()))
	ts := &testServer{dir: dir, cat: cat, model: cfg.provider, audit: access.NewMemoryAudit(10000)}
	gate := access.NewGate(access.NewChecker(dir, &access.CheckerOptions{Withdraw: cfg.withdraw}), cfg.limiter)
	exec := dataexec.NewExecutor(cat, dataexec.SourceMap{"conn_acme_wh": src, "conn_globex_wh": src},
		&dataexec.Options{Audit: ts.audit, Logger: log})
	key := memory.GenerateKey()
	keyring, err := memory.NewStaticKeyring("k1", map[string][]byte{"k1": key})
	if err != nil {
		tb.Fatal(err)
	}
	memories := memory.NewService(memory.NewMemoryStore(), keyring, gate, &memory.Options{Policy: memory.StaticPolicy(true),
		Audit: ts.audit, Logger: log})
	tools, err := ask.NewRegistry(ask.ProductTools(exec)...)
	if err != nil {
		tb.Fatal(err)
	}
	assistant := ask.New(cfg.provider, gate, exec, ask.NewMemoryStores(), tools,
		&ask.Options{Memory: memories, Logger: log})
	opts := cfg.opts
	opts.Logger = log
	mux := http.NewServeMux()
	srv := httptest.NewUnstartedServer(mux)
	mux.Handle("/ai/", askhttp.New(assistant, memories, authenticate, &opts))
	if cfg.server != nil {
		cfg.server(srv.Config)
	}
	srv.Start()
	tb.Cleanup(srv.Close)
	ts.Client = chattest.Client{URL: srv.URL, HTTP: srv.Client()}
	ts.handler = mux
	return ts
}

// auditCount counts the executor's audit entries of action with outcome.
func (ts *testServer) auditCount(action, outcome string) int {
	n := 0
	for _, e := range ts.audit.Entries() {
		if e.Action == action && e.Outcome == outcome {
			n++
		}
	}
	return n
}
