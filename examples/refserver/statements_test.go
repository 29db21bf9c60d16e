package main

import (
	"net/http"
	"testing"

	"github.com/jmoiron/sqlx"

	"github.com/askbi/askbi/internal/pgtest"
)

// TestStatementsPerCall counts, with pg_stat_statements, the PostgreSQL
// statements the reference server runs for MCP run_dataset calls on one
// database: a call costs no statement for shared state (membership,
// catalog, rate limit and concurrency slots are kept in the process, the
// rate tokens and slots taken in batches, and forgotten on a change
// notification), hit or miss; a miss's warehouse query is the SQL
// source's own statements (pgsource: the read-only transaction with its
// limits, the query, the reset), run as the warehouse's reader role.
func TestStatementsPerCall(t *testing.T) {
	dbURL := pgtest.MustDatabase(t)
	db, err := sqlx.Open("postgres", dbURL)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.Exec(`CREATE EXTENSION IF NOT EXISTS pg_stat_statements`); err != nil {
		t.Skipf("SKIPPING: pg_stat_statements is not loaded by this server (%v)", err)
	}
	// A generous rate, as a host serving agents sets it: the budget is
	// not what this counts.
	p := MustStart(t, MustBinary(t), nil, "-database-url", dbURL, "-data-dir", t.TempDir(), "-rate", "1000", "-rate-burst", "2000")
	key := p.apiKey(t, "alice")
	run := func(refresh bool) {
		t.Helper()
		status, code := p.mcpCall(t, key, "run_dataset", map[string]any{"dataset_id": "ds_weekly_signups", "refresh": refresh})
		if status != http.StatusOK || code != "" {
			t.Fatalf("run_dataset: %d %s", status, code)
		}
	}
	// Warm: the key, the member, the dataset and its connection read once,
	// a batch of rate tokens and the slots taken, the cache filled.
	run(true)
	run(false)
	// count is the statements run so far: of the state (as the
	// database's owner) and of the warehouse (its reader role).
	count := func() (state, warehouse float64) {
		t.Helper()
		if err := db.QueryRow(`SELECT coalesce(sum(calls) FILTER (WHERE u.rolname = current_user), 0),
				coalesce(sum(calls) FILTER (WHERE u.rolname <> current_user), 0)
			FROM pg_stat_statements s JOIN pg_roles u ON u.oid = s.userid
			WHERE s.dbid = (SELECT oid FROM pg_database WHERE datname = current_database()) AND s.query NOT LIKE '%pg_stat_statements%'`).Scan(&state, &warehouse); err != nil {
			t.Fatal(err)
		}
		return state, warehouse
	}
	const n = 100
	for _, tc := range []struct {
		name      string
		refresh   bool
		warehouse float64 // its statements a call
	}{
		{"hit", false, 0},
		{"miss", true, 10},
	} {
		if _, err := db.Exec(`SELECT pg_stat_statements_reset()`); err != nil {
			t.Fatal(err)
		}
		s0, w0 := count()
		for range n {
			run(tc.refresh)
		}
		s1, w1 := count()
		state, warehouse := (s1-s0)/n, (w1-w0)/n
		t.Logf("%s: %.2f statements a call for shared state, %.2f of the warehouse", tc.name, state, warehouse)
		if state > 0.05 || warehouse > tc.warehouse {
			var rows []struct {
				Calls float64 `db:"calls"`
				Query string  `db:"query"`
			}
			db.Select(&rows, `SELECT calls, left(query, 120) AS query FROM pg_stat_statements
				WHERE dbid = (SELECT oid FROM pg_database WHERE datname = current_database()) ORDER BY calls DESC LIMIT 12`)
			t.Errorf("a %s costs %.2f statements of shared state (want at most 0.05) and %.2f of the warehouse (want at most %.0f): %+v",
				tc.name, state, warehouse, tc.warehouse, rows)
		}
	}
}
