package mysqlsource

import (
	"context"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/askbi/askbi"
	"github.com/askbi/askbi/access"
	"github.com/askbi/askbi/dataexec"
	"github.com/askbi/askbi/workspace"
)

// switchable is the Sources of TestBehindTheExecutor: the MySQL source,
// or, once broken, one whose server is gone; it counts the queries.
type switchable struct {
	mu      sync.Mutex
	src     *Source
	queries atomic.Int64
}

func (s *switchable) Source(context.Context, workspace.Connection) (dataexec.Source, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return counting{s.src, &s.queries}, nil
}

func (s *switchable) set(src *Source) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.src = src
}

type counting struct {
	*Source
	n *atomic.Int64
}

func (c counting) Query(ctx context.Context, q dataexec.Query) (*dataexec.Table, error) {
	c.n.Add(1)
	return c.Source.Query(ctx, q)
}

// TestBehindTheExecutor runs MySQL datasets through dataexec's Executor,
// as the MCP tools and Ask do: the row cap, the cache and refresh, the
// last good result when the server is gone, and a variable bound as a
// parameter.
func TestBehindTheExecutor(t *testing.T) {
	ctx := t.Context()
	w := mustWarehouse(t)
	src, _ := w.source(t, nil)
	cat := workspace.NewMemoryCatalog()
	cat.PutConnection(workspace.Connection{ID: "wh", TeamID: "acme", Name: "MySQL warehouse", Type: "mysql", Active: true})
	ds := func(id, sql string, vars ...workspace.Variable) {
		cat.PutDataset(workspace.Dataset{ID: id, TeamID: "acme", ProjectID: "growth", Name: id, Version: 1,
			Request: workspace.Request{ConnectionID: "wh", SQL: sql, Variables: vars}})
	}
	ds("canary", "SELECT id, v FROM t ORDER BY id")
	ds("many", "WITH RECURSIVE g(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM g WHERE n < 5000) SELECT n, 'x' AS v FROM g")
	ds("above", "SELECT id, v FROM t WHERE id > {{min}} ORDER BY id", workspace.Variable{Name: "min", Type: workspace.VarNumber, Default: 1})
	dir := access.NewMemoryDirectory()
	dir.AddProject("acme", "growth")
	dir.SetMember("acme", "alice", access.RoleOwner, access.AllProjects())
	alice, err := access.NewGate(access.NewChecker(dir, nil), nil).Begin(ctx, access.Principal{UserID: "alice", TeamID: "acme", Auth: access.AuthSession})
	if err != nil {
		t.Fatal(err)
	}
	now := time.Date(2026, 11, 30, 8, 12, 0, 0, time.UTC)
	sources := &switchable{src: src}
	exec := dataexec.NewExecutor(cat, sources, &dataexec.Options{Now: func() time.Time { return now }})

	res, err := exec.RunDataset(ctx, alice, "canary", dataexec.Params{})
	if err != nil || res.RowCount != 3 || res.Cached {
		t.Fatalf("RunDataset = %+v, %v; want 3 fresh rows", res, err)
	}
	res, err = exec.RunDataset(ctx, alice, "canary", dataexec.Params{})
	if err != nil || !res.Cached || sources.queries.Load() != 1 {
		t.Errorf("second RunDataset = %+v, %v after %d queries; want the cached result", res, err, sources.queries.Load())
	}
	res, err = exec.RunDataset(ctx, alice, "canary", dataexec.Params{Refresh: true})
	if err != nil || res.Cached || sources.queries.Load() != 2 {
		t.Errorf("refresh = %+v, %v after %d queries; want a fresh result", res, err, sources.queries.Load())
	}
	res, err = exec.RunDataset(ctx, alice, "many", dataexec.Params{})
	if err != nil || res.RowCount != 1000 || !res.Truncated || res.TruncatedReason != dataexec.TruncatedRows {
		t.Errorf("RunDataset(5000 rows) = %+v, %v; want the row cap", res.Meta, err)
	}
	res, err = exec.RunDataset(ctx, alice, "above", dataexec.Params{Variables: map[string]any{"min": 2}})
	if err != nil || res.RowCount != 1 || res.Rows()[0][1] != "c" {
		t.Errorf("RunDataset(min 2) = %+v, %v; want the row c", res, err)
	}

	// The server goes away: a refresh serves the last good result, and says so.
	gone, err := New(mustOpen(t, "nobody@unix(/nonexistent/mysqld.sock)/none", 1), &Options{SQLMode: "STRICT_TRANS_TABLES"})
	if err != nil {
		t.Fatal(err)
	}
	sources.set(gone)
	now = now.Add(2 * time.Minute)
	res, err = exec.RunDataset(ctx, alice, "canary", dataexec.Params{Refresh: true})
	if err != nil || res.RowCount != 3 || !strings.HasPrefix(res.Warning, "showing data from 2026-11-30 08:12 UTC; refresh failed: the database is unavailable") {
		t.Errorf("refresh without the server = %+v, %v; want the last good result with its warning", res, err)
	}
	if _, err := exec.RunDataset(ctx, alice, "above", dataexec.Params{Variables: map[string]any{"min": 0}}); askbi.ErrorCode(err) != askbi.Unavailable {
		t.Errorf("a request never run, without the server = %v; want unavailable", err)
	}
	w.assertUntouched(t)
}
