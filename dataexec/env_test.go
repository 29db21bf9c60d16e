package dataexec_test

import (
	"context"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/askbi/askbi"
	"github.com/askbi/askbi/access"
	"github.com/askbi/askbi/access/accesstest"
	"github.com/askbi/askbi/dataexec"
	"github.com/askbi/askbi/internal/fakeclock"
	"github.com/askbi/askbi/workspace"
)

// t0 is when every test's clock starts.
var t0 = time.Date(2026, 11, 30, 8, 12, 0, 0, time.UTC)

// clock is the tests' settable clock.
type clock = fakeclock.Clock

// fakeSource is a Source that counts its calls, records its queries and
// answers with respond (or the signups table). It honours MaxRows. It is a
// VariableBinder that knows no SQL (see References).
type fakeSource struct {
	mu      sync.Mutex
	calls   int
	queries []dataexec.Query
	respond func(ctx context.Context, q dataexec.Query) (*dataexec.Table, error)
}

func (f *fakeSource) Query(ctx context.Context, q dataexec.Query) (*dataexec.Table, error) {
	f.mu.Lock()
	f.calls++
	f.queries = append(f.queries, q)
	respond := f.respond
	f.mu.Unlock()
	if respond == nil {
		respond = func(context.Context, dataexec.Query) (*dataexec.Table, error) { return signupsTable(), nil }
	}
	t, err := respond(ctx, q)
	if err != nil {
		return nil, err
	}
	if q.MaxRows > 0 && len(t.Rows) > q.MaxRows {
		t = &dataexec.Table{Columns: t.Columns, Rows: t.Rows[:q.MaxRows], Truncated: true, TruncatedReason: dataexec.TruncatedRows}
	}
	return t, nil
}

// refRe finds {{name}} references, the fake's whole idea of SQL.
var refRe = regexp.MustCompile(`\{\{\s*([A-Za-z_][A-Za-z0-9_]*)\s*\}\}`)

// References implements dataexec.VariableBinder. The fake knows no quoting;
// it refuses a reference right after a single quote, to stand for any the
// source cannot bind (pgsource's tests cover the real cases). It is not a
// query: Calls does not count it.
func (f *fakeSource) References(sql string) ([]string, error) {
	if strings.Contains(sql, "'{{") {
		return nil, askbi.Errorf(askbi.InvalidArgument, "sql: variable must not be inside quotes")
	}
	var names []string
	for _, m := range refRe.FindAllStringSubmatch(sql, -1) {
		names = append(names, m[1])
	}
	return names, nil
}

// Calls returns how many queries ran.
func (f *fakeSource) Calls() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.calls
}

// LastQuery returns the last query.
func (f *fakeSource) LastQuery() dataexec.Query {
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.queries) == 0 {
		return dataexec.Query{}
	}
	return f.queries[len(f.queries)-1]
}

func (f *fakeSource) Respond(fn func(ctx context.Context, q dataexec.Query) (*dataexec.Table, error)) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.respond = fn
}

// Table makes the source answer every query with t.
func (f *fakeSource) Table(t *dataexec.Table) {
	f.Respond(func(context.Context, dataexec.Query) (*dataexec.Table, error) { return t, nil })
}

// Fail makes the source fail every query with err.
func (f *fakeSource) Fail(err error) {
	f.Respond(func(context.Context, dataexec.Query) (*dataexec.Table, error) { return nil, err })
}

// inspectingSource is a fakeSource that can also be inspected.
type inspectingSource struct{ fakeSource }

func (s *inspectingSource) Inspect(_ context.Context, table string, limit int) ([]dataexec.Relation, error) {
	rels := []dataexec.Relation{{Schema: "public", Name: "signups", Kind: "table"}, {Schema: "public", Name: "mrr", Kind: "view"}}
	if table == "" {
		return rels[:min(limit, len(rels))], nil
	}
	if table != "signups" && table != "public.signups" {
		return nil, askbi.Errorf(askbi.NotFound, "table not found")
	}
	r := rels[0]
	r.Columns = []dataexec.Column{{Name: "day", Type: "date"}, {Name: "country", Type: "text"}, {Name: "signups", Type: "bigint"}}
	return []dataexec.Relation{r}, nil
}

func signupsTable() *dataexec.Table {
	return &dataexec.Table{
		Columns: []string{"day", "country", "signups"},
		Rows: [][]any{
			{time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC), "US", int64(12)},
			{time.Date(2026, 11, 2, 0, 0, 0, 0, time.UTC), "US", int64(0)},
			{time.Date(2026, 11, 3, 0, 0, 0, 0, time.UTC), "DE", nil},
			{time.Date(2026, 11, 4, 0, 0, 0, 0, time.UTC), "DE", int64(7)},
		},
	}
}

// env is a workspace for executor tests:
//
//   - team acme, projects growth and finance: alice (owner), bob (editor,
//     growth only), vic (viewer, growth and finance);
//   - team globex, project ops: carol (owner).
//
// Charts: c-signups on d-growth, c-ops on d-ops, and the previews c-draft
// (bob's), c-vic and c-alice, each its creator's alone.
//
// Connections wh (acme, team-wide) and gx (globex) run on src; legacy
// (acme, mysql) has no source; fin (acme, finance) runs on src; off
// (acme) is inactive.
type env struct {
	cat   *workspace.MemoryCatalog
	dir   *access.MemoryDirectory
	src   *inspectingSource
	plain *fakeSource // the source of fin, which cannot be inspected
	exec  gated
	audit *access.MemoryAudit
	clock *clock
}

// newEnv returns a seeded env. opts may be nil; its Now and Audit are
// replaced by the env's. Its gate has a generous rate limit.
func newEnv(t testing.TB, opts *dataexec.Options) *env {
	t.Helper()
	e := &env{
		cat: workspace.NewMemoryCatalog(), dir: accesstest.Teams(), src: &inspectingSource{},
		plain: &fakeSource{}, audit: access.NewMemoryAudit(0), clock: fakeclock.New(t0),
	}
	e.dir.SetMember("acme", "vic", access.RoleViewer, access.ProjectSet("growth", "finance"))

	at := func(m int) time.Time { return t0.Add(time.Duration(-m) * time.Hour) }
	for _, c := range []workspace.Connection{
		{ID: "wh", TeamID: "acme", Name: "Warehouse", Type: "postgres", Active: true, UpdatedAt: at(50)},
		{ID: "fin", TeamID: "acme", ProjectID: "finance", Name: "Ledger", Type: "postgres", Active: true, UpdatedAt: at(51)},
		{ID: "legacy", TeamID: "acme", Name: "Old shop", Type: "mysql", Active: true, UpdatedAt: at(52)},
		{ID: "off", TeamID: "acme", Name: "Pending", Type: "mcp", UpdatedAt: at(53)},
		{ID: "gx", TeamID: "globex", Name: "Globex DB", Type: "postgres", Active: true, UpdatedAt: at(54)},
	} {
		e.cat.PutConnection(c)
	}
	for _, d := range []workspace.Dashboard{
		{ID: "d-growth", TeamID: "acme", ProjectID: "growth", Name: "Growth overview", UpdatedAt: at(10)},
		{ID: "d-fin", TeamID: "acme", ProjectID: "finance", Name: "Finance", UpdatedAt: at(11)},
		{ID: "d-ops", TeamID: "globex", ProjectID: "ops", Name: "Ops", UpdatedAt: at(12)},
	} {
		e.cat.PutDashboard(d)
	}
	signupsFields := workspace.Fields{{Name: "day", Path: []string{"day"}}, {Name: "country", Path: []string{"column_1"}}, {Name: "signups", Path: []string{"signups"}}}
	for _, d := range []workspace.Dataset{
		{ID: "signups", TeamID: "acme", ProjectID: "growth", Name: "Signups", Version: 1, UpdatedAt: at(20),
			Request: workspace.Request{ConnectionID: "wh",
				SQL:       "SELECT day, country, signups FROM signups WHERE plan = {{plan}}",
				Fields:    signupsFields,
				Variables: []workspace.Variable{{Name: "plan", Type: workspace.VarString, Default: "pro"}}}},
		{ID: "mrr", TeamID: "acme", ProjectID: "finance", Name: "MRR", Version: 1, UpdatedAt: at(21),
			Request: workspace.Request{ConnectionID: "fin", SQL: "SELECT month, mrr FROM mrr"}},
		{ID: "shop", TeamID: "acme", ProjectID: "growth", Name: "Shop orders", Version: 1, UpdatedAt: at(22),
			Request: workspace.Request{ConnectionID: "legacy", SQL: "SELECT 1"}},
		{ID: "tickets", TeamID: "globex", ProjectID: "ops", Name: "Tickets", Version: 1, UpdatedAt: at(23),
			Request: workspace.Request{ConnectionID: "gx", SQL: "SELECT day, signups FROM tickets", Fields: signupsFields}},
	} {
		e.cat.PutDataset(d)
	}
	for _, c := range []workspace.Chart{
		{ID: "c-signups", TeamID: "acme", ProjectID: "growth", DashboardID: "d-growth", Name: "Signups by day",
			Type: workspace.ChartLine, DatasetID: "signups", XField: "day", YFields: []string{"signups"}, UpdatedAt: at(30)},
		{ID: "c-draft", TeamID: "acme", ProjectID: "growth", Name: "Signups draft", CreatedBy: "bob",
			Type: workspace.ChartBar, DatasetID: "signups", XField: "country", YFields: []string{"signups"}, UpdatedAt: at(31)},
		{ID: "c-vic", TeamID: "acme", ProjectID: "growth", Name: "Vic's draft", CreatedBy: "vic",
			Type: workspace.ChartLine, DatasetID: "signups", XField: "day", YFields: []string{"signups"}, UpdatedAt: at(33)},
		{ID: "c-alice", TeamID: "acme", ProjectID: "growth", Name: "Alice's draft", CreatedBy: "alice",
			Type: workspace.ChartLine, DatasetID: "signups", XField: "day", YFields: []string{"signups"}, UpdatedAt: at(34)},
		{ID: "c-ops", TeamID: "globex", ProjectID: "ops", DashboardID: "d-ops", Name: "Tickets",
			Type: workspace.ChartBar, DatasetID: "tickets", XField: "day", YFields: []string{"signups"}, UpdatedAt: at(32)},
	} {
		e.cat.PutChart(c)
	}

	var o dataexec.Options
	if opts != nil {
		o = *opts
	}
	o.Now, o.Audit = e.clock.Now, e.audit
	sources := dataexec.SourceMap{"wh": e.src, "gx": e.src, "fin": e.plain, "off": e.src}
	limiter := access.NewMemoryRateLimiter(&access.RateOptions{Burst: 1 << 20, Rate: 1 << 20, Now: e.clock.Now})
	e.exec = gated{access.NewGate(access.NewChecker(e.dir, nil), limiter), dataexec.NewExecutor(e.cat, sources, &o)}
	return e
}

// gated calls the executor the way an adapter does: each call is one
// request that passes the gate once.
type gated struct {
	gate *access.Gate
	x    *dataexec.Executor
}

func (g gated) RunDataset(ctx context.Context, p access.Principal, id string, params dataexec.Params) (*dataexec.Result, error) {
	p, err := g.gate.Begin(ctx, p)
	if err != nil {
		return nil, err
	}
	return g.x.RunDataset(ctx, p, id, params)
}

func (g gated) ChartData(ctx context.Context, p access.Principal, id string, params dataexec.Params) (*dataexec.ChartResult, error) {
	p, err := g.gate.Begin(ctx, p)
	if err != nil {
		return nil, err
	}
	return g.x.ChartData(ctx, p, id, params)
}

func (g gated) Explore(ctx context.Context, p access.Principal, in dataexec.Exploration) (*dataexec.Explored, error) {
	p, err := g.gate.Begin(ctx, p)
	if err != nil {
		return nil, err
	}
	return g.x.Explore(ctx, p, in)
}

func (g gated) CreateChartPreview(ctx context.Context, p access.Principal, spec dataexec.ChartSpec) (*dataexec.ChartResult, error) {
	p, err := g.gate.Begin(ctx, p)
	if err != nil {
		return nil, err
	}
	return g.x.CreateChartPreview(ctx, p, spec)
}

func (g gated) UpdateChart(ctx context.Context, p access.Principal, in dataexec.ChartChange) (*dataexec.ChartResult, error) {
	p, err := g.gate.Begin(ctx, p)
	if err != nil {
		return nil, err
	}
	return g.x.UpdateChart(ctx, p, in)
}

func (g gated) PlaceChart(ctx context.Context, p access.Principal, chartID, dashboardID string) (*dataexec.ChartResult, error) {
	p, err := g.gate.Begin(ctx, p)
	if err != nil {
		return nil, err
	}
	return g.x.PlaceChart(ctx, p, chartID, dashboardID)
}

func (g gated) Resolve(ctx context.Context, p access.Principal, refs []access.Entity) ([]*dataexec.Ref, error) {
	p, err := g.gate.Begin(ctx, p)
	if err != nil {
		return nil, err
	}
	return g.x.Resolve(ctx, p, refs)
}

func (g gated) DeleteDashboard(ctx context.Context, p access.Principal, id string) error {
	p, err := g.gate.Begin(ctx, p)
	if err != nil {
		return err
	}
	return g.x.DeleteDashboard(ctx, p, id)
}

func (g gated) RefreshCharts(ctx context.Context, p access.Principal, saved []dataexec.ChartResult) ([]dataexec.ChartResult, error) {
	p, err := g.gate.Begin(ctx, p)
	if err != nil {
		return nil, err
	}
	return g.x.RefreshCharts(ctx, p, saved)
}

func (g gated) Search(ctx context.Context, p access.Principal, q dataexec.SearchQuery) ([]dataexec.Ref, error) {
	p, err := g.gate.Begin(ctx, p)
	if err != nil {
		return nil, err
	}
	return g.x.Search(ctx, p, q)
}

// calls is the number of queries every source ran.
func (e *env) calls() int { return e.src.Calls() + e.plain.Calls() }

func session(user, team string) access.Principal {
	return access.Principal{UserID: user, TeamID: team, Auth: access.AuthSession}
}

func apiKey(user, team, id string, projects access.Projects, scopes ...access.Scope) access.Principal {
	return access.Principal{UserID: user, TeamID: team, Auth: access.AuthAPIKey, CredentialID: id, Projects: projects, Scopes: scopes}
}

var (
	alice = session("alice", "acme")
	bob   = session("bob", "acme")
	vic   = session("vic", "acme")
	carol = session("carol", "globex")
)

// mustCode fails t unless err has code want (want "" means no error).
func mustCode(t testing.TB, err error, want askbi.Code) {
	t.Helper()
	if got := askbi.ErrorCode(err); got != want {
		t.Fatalf("error = %v (code %q), want code %q", err, got, want)
	}
}

// mustRun runs a dataset and fails t on error.
func mustRun(t testing.TB, e *env, p access.Principal, id string, params dataexec.Params) *dataexec.Result {
	t.Helper()
	res, err := e.exec.RunDataset(context.Background(), p, id, params)
	if err != nil {
		t.Fatalf("RunDataset(%s): %v", id, err)
	}
	return res
}

// datasetCount is the number of datasets of team acme.
func (e *env) datasetCount(t testing.TB) int {
	t.Helper()
	rows, err := e.cat.Search(context.Background(), workspace.CatalogQuery{TeamID: "acme", Types: []access.EntityType{access.TypeDataset}, Projects: access.AllProjects(), Limit: 1000})
	if err != nil {
		t.Fatal(err)
	}
	return len(rows)
}
