package ask_test

import (
	"context"
	"encoding/json"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/askbi/askbi"
	"github.com/askbi/askbi/access"
	"github.com/askbi/askbi/access/accesstest"
	"github.com/askbi/askbi/ask"
	"github.com/askbi/askbi/ask/provider/mock"
	"github.com/askbi/askbi/dataexec"
	"github.com/askbi/askbi/internal/fakeclock"
	"github.com/askbi/askbi/workspace"
	"github.com/askbi/askbi/workspace/workspacetest"
)

// clock is the tests' settable clock.
type clock = fakeclock.Clock

type sharing struct {
	mu    sync.Mutex
	level ask.Sharing
}

func (s *sharing) Sharing(context.Context, string) (ask.Sharing, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.level, nil
}

func (s *sharing) set(l ask.Sharing) {
	s.mu.Lock()
	s.level = l
	s.mu.Unlock()
}

// env is an assistant over a small two-team workspace:
//   - acme (growth, finance): alice owner, bob editor (growth), vic viewer;
//   - globex (ops): carol owner.
type env struct {
	a         *ask.Assistant
	gate      *access.Gate
	model     *mock.Provider
	dir       *access.MemoryDirectory
	cat       *workspace.MemoryCatalog
	convs     *ask.MemoryConversationStore
	approvals *ask.MemoryApprovalStore
	audit     *access.MemoryAudit
	clock     *clock
	sharing   *sharing
	tables    map[string]*dataexec.Table
}

var (
	alice = access.Principal{UserID: "alice", TeamID: "acme", Auth: access.AuthSession}
	bob   = access.Principal{UserID: "bob", TeamID: "acme", Auth: access.AuthSession}
	vic   = access.Principal{UserID: "vic", TeamID: "acme", Auth: access.AuthSession}
	carol = access.Principal{UserID: "carol", TeamID: "globex", Auth: access.AuthSession}
)

const (
	sqlWeekly  = "SELECT week, signups FROM weekly"
	sqlCountry = "SELECT country, signups FROM by_country"
	sqlMRR     = "SELECT month, mrr FROM mrr"
	sqlTickets = "SELECT day, opened FROM tickets"
)

// envOption changes how newEnv builds the assistant.
type envOption func(*envConfig)

type envConfig struct {
	limiter access.RateLimiter
	stores  ask.Stores
	opts    ask.Options
	extra   []ask.Tool
	// wrap, when set, replaces each product tool (to count its runs).
	wrap func(ask.Tool) ask.Tool
}

// stores are e's in-memory stores as ask.New takes them.
func (e *env) stores() ask.Stores {
	return ask.Stores{Conversations: e.convs, Turns: e.convs, Context: e.convs, ToolRuns: e.convs, Approvals: e.approvals, Receipts: e.approvals}
}

func newEnv(t testing.TB, provider ask.Provider, options ...envOption) *env {
	t.Helper()
	e := &env{dir: accesstest.Teams(), cat: workspace.NewMemoryCatalog(), audit: access.NewMemoryAudit(1000),
		convs: ask.NewMemoryConversationStore(), approvals: ask.NewMemoryApprovalStore(),
		clock: fakeclock.New(time.Date(2026, 11, 30, 9, 0, 0, 0, time.UTC)), sharing: &sharing{level: ask.SharingRows}}
	at := e.clock.Now().Add(-time.Hour)
	c := e.cat
	c.PutConnection(workspace.Connection{ID: "wh", TeamID: "acme", Name: "Warehouse", Type: "postgres", Active: true, UpdatedAt: at})
	c.PutConnection(workspace.Connection{ID: "gx", TeamID: "globex", Name: "Globex DB", Type: "postgres", Active: true, UpdatedAt: at})
	c.PutDashboard(workspace.Dashboard{ID: "d-growth", TeamID: "acme", ProjectID: "growth", Name: "Growth overview", UpdatedAt: at})
	c.PutDashboard(workspace.Dashboard{ID: "d-revenue", TeamID: "acme", ProjectID: "finance", Name: "Revenue", UpdatedAt: at})
	c.PutDashboard(workspace.Dashboard{ID: "d-ops", TeamID: "globex", ProjectID: "ops", Name: "Support", UpdatedAt: at})
	ds := func(id, team, project, conn, name, sql string, fields ...string) {
		c.PutDataset(workspacetest.SQLDataset(id, team, project, conn, name, sql, at, fields...))
	}
	ds("ds-weekly", "acme", "growth", "wh", "Weekly signups", sqlWeekly, "week", "signups")
	ds("ds-country", "acme", "growth", "wh", "Signups by country", sqlCountry, "country", "signups")
	ds("ds-mrr", "acme", "finance", "wh", "MRR", sqlMRR, "month", "mrr")
	ds("ds-tickets", "globex", "ops", "gx", "Tickets by day", sqlTickets, "day", "opened")
	chart := func(id, team, project, dash, name string, typ workspace.ChartType, dsID, x, y string) {
		c.PutChart(workspace.Chart{ID: id, TeamID: team, ProjectID: project, DashboardID: dash, Name: name, Type: typ,
			DatasetID: dsID, XField: x, YFields: []string{y}, UpdatedAt: at})
	}
	chart("c-weekly", "acme", "growth", "d-growth", "Weekly signups", workspace.ChartLine, "ds-weekly", "week", "signups")
	chart("c-country", "acme", "growth", "d-growth", "Signups by country", workspace.ChartBar, "ds-country", "country", "signups")
	chart("c-mrr", "acme", "finance", "d-revenue", "MRR", workspace.ChartLine, "ds-mrr", "month", "mrr")
	chart("c-tickets", "globex", "ops", "d-ops", "Tickets", workspace.ChartBar, "ds-tickets", "day", "opened")
	e.tables = map[string]*dataexec.Table{
		sqlWeekly:  {Columns: []string{"week", "signups"}, Rows: [][]any{{"2026-11-02", int64(1201)}, {"2026-11-09", int64(1342)}, {"2026-11-16", int64(1450)}}},
		sqlCountry: {Columns: []string{"country", "signups"}, Rows: [][]any{{"US", int64(3410)}, {"DE", int64(3322)}}},
		sqlMRR:     {Columns: []string{"month", "mrr"}, Rows: [][]any{{"2026-10", json.Number("60500.00")}}},
		sqlTickets: {Columns: []string{"day", "opened"}, Rows: [][]any{{"2026-11-01", int64(4)}}},
	}
	cfg := envConfig{limiter: access.NewMemoryRateLimiter(&access.RateOptions{Burst: 1 << 30, Rate: 1 << 30}),
		stores: e.stores()}
	for _, o := range options {
		o(&cfg)
	}
	src := dataexec.NewTableSource(e.tables)
	e.gate = access.NewGate(access.NewChecker(e.dir, nil), cfg.limiter)
	exec := dataexec.NewExecutor(c, dataexec.SourceMap{"wh": src, "gx": src}, &dataexec.Options{Audit: e.audit, Now: e.clock.Now})
	product := ask.ProductTools(exec)
	if cfg.wrap != nil {
		for i := range product {
			product[i] = cfg.wrap(product[i])
		}
	}
	reg, err := ask.NewRegistry(append(product, cfg.extra...)...)
	if err != nil {
		t.Fatal(err)
	}
	if provider == nil {
		e.model = mock.New()
		provider = e.model
	}
	o := cfg.opts
	o.Now, o.Sharing = e.clock.Now, e.sharing
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	e.a = ask.New(provider, e.gate, exec, cfg.stores, reg, &o)
	return e
}

// MustConversation starts a conversation for p.
func (e *env) MustConversation(t *testing.T, p access.Principal) string {
	t.Helper()
	c, err := e.a.CreateConversation(context.Background(), p)
	if err != nil {
		t.Fatal(err)
	}
	return c.ID
}

// send runs a turn and returns its events and error.
func (e *env) send(p access.Principal, conv, msg string, ctxRefs *[]ask.ContextRef) ([]ask.Event, error) {
	emit, events := ask.Collect()
	err := e.a.Send(context.Background(), p, ask.SendRequest{ConversationID: conv, Message: msg, Context: ctxRefs}, emit)
	return events(), err
}

// MustSend is send that fails the test on error.
func (e *env) MustSend(t *testing.T, p access.Principal, conv, msg string, ctxRefs *[]ask.ContextRef) []ask.Event {
	t.Helper()
	events, err := e.send(p, conv, msg, ctxRefs)
	if err != nil {
		t.Fatalf("Send(%q): %v", msg, err)
	}
	return events
}

func types(events []ask.Event) []ask.EventType {
	var out []ask.EventType
	for _, e := range events {
		if e.Type != ask.EventMessageDelta {
			out = append(out, e.Type)
		}
	}
	return out
}

func find(events []ask.Event, typ ask.EventType) *ask.Event {
	for i := range events {
		if events[i].Type == typ {
			return &events[i]
		}
	}
	return nil
}

func refs(rs ...ask.ContextRef) *[]ask.ContextRef { return &rs }

func chartRef(id string) ask.ContextRef { return ask.ContextRef{Type: access.TypeChart, ID: id} }

func mustCode(t *testing.T, err error, want askbi.Code) {
	t.Helper()
	if got := askbi.ErrorCode(err); got != want {
		t.Errorf("error = %v, want code %q", err, want)
	}
}

// MustOpen opens a conversation.
func (e *env) MustOpen(t *testing.T, p access.Principal, conv string) *ask.View {
	t.Helper()
	v, err := e.a.Open(context.Background(), p, conv)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func (e *env) audited(action string) int {
	n := 0
	for _, en := range e.audit.Entries() {
		if en.Action == action && en.Outcome == access.OutcomeOK {
			n++
		}
	}
	return n
}
