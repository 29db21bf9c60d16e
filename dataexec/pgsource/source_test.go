package pgsource

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"math"
	"reflect"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/jmoiron/sqlx"
	_ "github.com/lib/pq"

	"github.com/askbi/askbi"
	"github.com/askbi/askbi/dataexec"
	"github.com/askbi/askbi/internal/pgtest"
	"github.com/askbi/askbi/workspace"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

// fixture is a fresh database holding the canary table t and sequence s,
// and a Source whose pool has one connection, so every query after the
// Source's lands on the backend the Source used.
type fixture struct {
	admin *sqlx.DB // superuser, for setup and checks
	pool  *sqlx.DB // the Source's pool
	src   *Source
}

var canary = [][]any{{int64(1), "a"}, {int64(2), "b"}, {int64(3), "c"}}

func mustFixture(tb testing.TB) *fixture {
	tb.Helper()
	dsn := pgtest.MustDatabase(tb)
	admin := mustOpen(tb, dsn, 2)
	mustExec(tb, admin,
		`CREATE TABLE t (id int PRIMARY KEY, v text)`,
		`INSERT INTO t VALUES (1, 'a'), (2, 'b'), (3, 'c')`,
		`CREATE SEQUENCE s`,
	)
	pool := mustOpen(tb, dsn, 1)
	src, err := New(pool, &Options{MaxConns: 1})
	if err != nil {
		tb.Fatal(err)
	}
	return &fixture{admin: admin, pool: pool, src: src}
}

func mustOpen(tb testing.TB, dsn string, conns int) *sqlx.DB {
	tb.Helper()
	db, err := OpenDB(dsn)
	if err != nil {
		tb.Fatal(err)
	}
	db.SetMaxOpenConns(conns)
	tb.Cleanup(func() { db.Close() })
	return db
}

func mustExec(tb testing.TB, db *sqlx.DB, stmts ...string) {
	tb.Helper()
	for _, s := range stmts {
		if _, err := db.Exec(s); err != nil {
			tb.Fatalf("%s: %v", s, err)
		}
	}
}

// assertUntouched checks that the canary table and sequence are as made.
func (f *fixture) assertUntouched(tb testing.TB) {
	tb.Helper()
	var rows [][]any
	r, err := f.admin.Query(`SELECT id, v FROM t ORDER BY id`)
	if err != nil {
		tb.Fatalf("read canary: %v", err)
	}
	defer r.Close()
	for r.Next() {
		var id int64
		var v string
		if err := r.Scan(&id, &v); err != nil {
			tb.Fatal(err)
		}
		rows = append(rows, []any{id, v})
	}
	if diff := cmp.Diff(canary, rows); diff != "" {
		tb.Errorf("canary table t changed (-want +got):\n%s", diff)
	}
	var seq struct {
		LastValue int64 `db:"last_value"`
		IsCalled  bool  `db:"is_called"`
	}
	if err := f.admin.Get(&seq, `SELECT last_value, is_called FROM s`); err != nil {
		tb.Fatalf("read sequence: %v", err)
	}
	if seq.IsCalled {
		tb.Errorf("sequence s advanced to %d", seq.LastValue)
	}
}

// session is the state of a backend that must not leak between queries.
type session struct {
	Prepared      int    `db:"prepared"`
	Listening     int    `db:"listening"`
	AdvisoryLocks int    `db:"advisory_locks"`
	Cursors       int    `db:"cursors"`
	TempTables    int    `db:"temp_tables"`
	Timeout       string `db:"statement_timeout"`
	ReadOnly      string `db:"read_only"`
	FreshTx       bool   `db:"fresh_tx"` // false when an older transaction is still open
}

// assertClean checks the pool's connection (the one the Source returned).
func (f *fixture) assertClean(tb testing.TB) {
	tb.Helper()
	var got session
	err := f.pool.Get(&got, `SELECT
  (SELECT count(*) FROM pg_prepared_statements) AS prepared,
  (SELECT count(*) FROM pg_listening_channels()) AS listening,
  (SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND pid = pg_backend_pid()) AS advisory_locks,
  (SELECT count(*) FROM pg_cursors) AS cursors,
  (SELECT count(*) FROM pg_class WHERE relnamespace = pg_my_temp_schema()) AS temp_tables,
  current_setting('statement_timeout') AS statement_timeout,
  current_setting('transaction_read_only') AS read_only,
  (SELECT xact_start = query_start FROM pg_stat_activity WHERE pid = pg_backend_pid()) AS fresh_tx`)
	if err != nil {
		tb.Fatalf("inspect session: %v", err)
	}
	want := session{Timeout: "0", ReadOnly: "off", FreshTx: true}
	if diff := cmp.Diff(want, got); diff != "" {
		tb.Errorf("connection not clean after the query (-want +got):\n%s", diff)
	}
}

func query(ctx context.Context, src *Source, sql string) (*dataexec.Table, error) {
	return src.Query(ctx, dataexec.Query{SQL: sql, MaxRows: 100, MaxBytes: 1 << 20})
}

// TestQueryAttacks runs what an attacker would try. Each must fail with the
// right code, leave t and s untouched, and leave a clean connection.
func TestQueryAttacks(t *testing.T) {
	tests := []struct {
		name string
		sql  string
		want askbi.Code
	}{
		{"commit then delete", "COMMIT; DELETE FROM t", askbi.InvalidArgument},
		{"end then drop", "END; DROP TABLE t", askbi.InvalidArgument},
		{"read write then delete", "SET TRANSACTION READ WRITE; DELETE FROM t; COMMIT", askbi.InvalidArgument},
		{"data-modifying cte", "WITH d AS (DELETE FROM t RETURNING *) SELECT * FROM d", askbi.InvalidArgument},
		{"for update", "SELECT * FROM t FOR UPDATE", askbi.InvalidArgument},
		{"for share in subquery", "SELECT * FROM (SELECT * FROM t FOR SHARE) x", askbi.InvalidArgument},
		{"select into", "SELECT * INTO x FROM t", askbi.InvalidArgument},
		{"nextval", "SELECT nextval('s')", askbi.InvalidArgument},
		{"nextval by functional notation", "SELECT ('s'::regclass).nextval", askbi.InvalidArgument},
		{"advisory lock", "SELECT pg_advisory_lock(1)", askbi.InvalidArgument},
		{"sleep", "SELECT pg_sleep(60)", askbi.InvalidArgument},
		{"qualified sleep", "SELECT pg_catalog.pg_sleep(1)", askbi.InvalidArgument},
		{"quoted sleep", `select "pg_sleep"(1)`, askbi.InvalidArgument},
		{"sleep in lateral", "SELECT * FROM t, LATERAL (SELECT pg_sleep(1)) x", askbi.InvalidArgument},
		{"set_config", "SELECT set_config('statement_timeout', '0', false)", askbi.InvalidArgument},
		{"do", "DO $$ BEGIN DELETE FROM t; END $$", askbi.InvalidArgument},
		{"explain analyze delete", "EXPLAIN ANALYZE DELETE FROM t", askbi.InvalidArgument},
		{"explain (analyze) select", "EXPLAIN (ANALYZE) SELECT * FROM t", askbi.InvalidArgument},
		{"explain delete", "EXPLAIN DELETE FROM t", askbi.InvalidArgument},
		{"prepare", "PREPARE p AS SELECT 1", askbi.InvalidArgument},
		{"listen", "LISTEN x", askbi.InvalidArgument},
		{"copy", "COPY t TO STDOUT", askbi.InvalidArgument},
		{"block comment", "SELECT 1 /* ; */; DELETE FROM t", askbi.InvalidArgument},
		{"dollar quote", "SELECT $$;$$; DELETE FROM t", askbi.InvalidArgument},
		{"line comment", "SELECT 1 -- x\n; DELETE FROM t", askbi.InvalidArgument},
		{"values then delete", "VALUES (1) ; DELETE FROM t", askbi.InvalidArgument},
		{"query_to_xml", "SELECT query_to_xml('delete from t', true, true, '')", askbi.InvalidArgument},
		{"dblink", "SELECT * FROM dblink('dbname=x', 'delete from t') AS d(x int)", askbi.InvalidArgument},
		{"lo_import", "SELECT lo_import('/etc/passwd')", askbi.InvalidArgument},
		{"pg_read_file", "SELECT pg_read_file('/etc/passwd')", askbi.InvalidArgument},
		{"call", "CALL p()", askbi.InvalidArgument},
		{"merge", "MERGE INTO t USING (SELECT 1 AS id) x ON t.id = x.id WHEN MATCHED THEN DELETE", askbi.InvalidArgument},
		{"insert select", "INSERT INTO t SELECT id + 10, v FROM t", askbi.InvalidArgument},
		{"create temp table", "CREATE TEMP TABLE x AS SELECT 1", askbi.InvalidArgument},
		{"set search_path", "SET search_path = pg_temp", askbi.InvalidArgument},
		{"reset all", "RESET ALL", askbi.InvalidArgument},
		{"show all", "SHOW ALL", askbi.InvalidArgument},
		{"1 MB of SQL", "SELECT 1 AS x" + strings.Repeat(", 1", 1<<19), askbi.InvalidArgument},
		{"parser depth", "SELECT 1" + strings.Repeat("+1", 5000), askbi.InvalidArgument},
		// The guard does not know this function, so the read-only
		// transaction has to stop it.
		{"write in a user function", "SELECT delete_all()", askbi.InvalidArgument},
		{"sequence in a user function", "SELECT bump()", askbi.InvalidArgument},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			f := mustFixture(t)
			mustExec(t, f.admin,
				`CREATE FUNCTION delete_all() RETURNS bigint LANGUAGE sql AS 'DELETE FROM t RETURNING 1'`,
				`CREATE FUNCTION bump() RETURNS bigint LANGUAGE sql AS $$SELECT nextval('s')$$`,
			)
			_, err := query(t.Context(), f.src, tc.sql)
			if got := askbi.ErrorCode(err); got != tc.want {
				t.Errorf("Query code = %q (%v), want %q", got, err, tc.want)
			}
			f.assertUntouched(t)
			f.assertClean(t)
		})
	}
}

// TestQueryResetsSession runs functions the guard cannot see into, which
// leave state on the session; the connection must come back clean anyway.
func TestQueryResetsSession(t *testing.T) {
	tests := []struct {
		name string
		fn   string // a function definition
	}{
		{"advisory lock", `CREATE FUNCTION f() RETURNS void LANGUAGE sql AS 'SELECT pg_advisory_lock(1)'`},
		{"session setting", `CREATE FUNCTION f() RETURNS text LANGUAGE sql AS $$SELECT set_config('statement_timeout', '5min', false)$$`},
		{"listen", `CREATE FUNCTION f() RETURNS void LANGUAGE plpgsql AS 'BEGIN EXECUTE ''LISTEN x''; END'`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			f := mustFixture(t)
			mustExec(t, f.admin, tc.fn)
			if _, err := query(t.Context(), f.src, "SELECT f()"); err != nil {
				t.Fatalf("Query: %v", err)
			}
			f.assertUntouched(t)
			f.assertClean(t)
		})
	}
}

// TestQueryTimeout checks that a query the guard allows but that runs too
// long is cancelled on the server at the deadline, or when the caller goes
// away.
func TestQueryTimeout(t *testing.T) {
	tests := []struct {
		name string
		sql  string
		// cancel, when set, cancels the context once the query runs,
		// instead of a deadline.
		cancel bool
	}{
		{"long aggregate", "SELECT count(*) FROM generate_series(1, 100000000) a, generate_series(1, 1000) b", false},
		{"sleep inside a function", "SELECT slow()", false},
		{"caller gone", "SELECT count(*) FROM generate_series(1, 100000000) a, generate_series(1, 1000) b", true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			f := mustFixture(t)
			f.pool.SetMaxOpenConns(2) // a spare connection to repeat a lost cancel
			mustExec(t, f.admin, `CREATE FUNCTION slow() RETURNS int LANGUAGE sql AS 'SELECT 1 FROM pg_sleep(600)'`)
			probe := "/* probe " + t.Name() + " */ " + tc.sql
			var err error
			if tc.cancel {
				ctx, cancel := context.WithCancel(t.Context())
				done := make(chan struct{})
				go func() {
					defer close(done)
					_, err = query(ctx, f.src, probe)
				}()
				waitActive(t, f.admin, probe)
				cancel()
				<-done
			} else {
				ctx, cancel := context.WithTimeout(t.Context(), time.Second)
				defer cancel()
				_, err = query(ctx, f.src, probe)
			}
			if got := askbi.ErrorCode(err); got != askbi.Timeout {
				t.Fatalf("Query code = %q (%v), want %q", got, err, askbi.Timeout)
			}
			want := "the query took longer than the 1s limit"
			if tc.cancel {
				want = "the query was cancelled"
			}
			if msg := askbi.ErrorMessage(err); msg != want {
				t.Errorf("message = %q, want %q", msg, want)
			}
			if activeCount(t, f.admin, probe) != 0 {
				t.Errorf("the query still runs on the server after Query returned")
			}
			f.assertUntouched(t)
			f.assertClean(t)
		})
	}
}

// waitActive waits until another backend runs sql.
func waitActive(tb testing.TB, db *sqlx.DB, sql string) {
	tb.Helper()
	for range 1000 {
		if activeCount(tb, db, sql) > 0 {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	tb.Error("the query never started")
}

func activeCount(tb testing.TB, db *sqlx.DB, sql string) int {
	tb.Helper()
	var n int
	if err := db.Get(&n, `SELECT count(*) FROM pg_stat_activity
WHERE state = 'active' AND strpos(query, $1) > 0 AND pid <> pg_backend_pid()`, sql); err != nil {
		tb.Fatal(err)
	}
	return n
}

// TestQueryResults checks that legitimate queries keep working and that
// cells come back as documented.
func TestQueryResults(t *testing.T) {
	ts := time.Date(2024, 5, 6, 7, 8, 9, 123456000, time.UTC)
	tests := []struct {
		name string
		sql  string
		want *dataexec.Table
	}{
		{"cte", "WITH x AS (SELECT id FROM t WHERE id > 1) SELECT id FROM x ORDER BY id",
			table([]string{"id"}, []any{int64(2)}, []any{int64(3)})},
		{"window", "SELECT id, sum(id) OVER (ORDER BY id) AS running FROM t ORDER BY id",
			table([]string{"id", "running"}, []any{int64(1), int64(1)}, []any{int64(2), int64(3)}, []any{int64(3), int64(6)})},
		{"ordered-set aggregate", "SELECT percentile_cont(0.5) WITHIN GROUP (ORDER BY id) AS median FROM t",
			table([]string{"median"}, []any{2.0})},
		{"values", "VALUES (1, 'a'), (2, 'b')",
			table([]string{"column1", "column2"}, []any{int64(1), "a"}, []any{int64(2), "b"})},
		{"table", "TABLE t",
			table([]string{"id", "v"}, canary...)},
		{"order by descending", "SELECT id FROM t ORDER BY id DESC",
			table([]string{"id"}, []any{int64(3)}, []any{int64(2)}, []any{int64(1)})},
		{"trailing semicolon", "SELECT 1 AS one;",
			table([]string{"one"}, []any{int64(1)})},
		{"trailing comment", "SELECT 1 AS one -- the end",
			table([]string{"one"}, []any{int64(1)})},
		{"semicolon in literal", "SELECT 'a;b' AS s",
			table([]string{"s"}, []any{"a;b"})},
		{"backslash in literal", "SELECT 'x\\'\n'; DELETE FROM t; --' AS s",
			table([]string{"s"}, []any{"x\\; DELETE FROM t; --"})},
		{"duplicate column names", "SELECT 1 AS a, 2 AS a",
			table([]string{"a", "a"}, []any{int64(1), int64(2)})},
		{"column named like the wrapper", "SELECT 7 AS askbi_q",
			table([]string{"askbi_q"}, []any{int64(7)})},
		{"null and zero kept", "SELECT NULL::int AS n, 0 AS z, 0.0::float8 AS f, ''::text AS e, false AS b",
			table([]string{"n", "z", "f", "e", "b"}, []any{nil, int64(0), 0.0, "", false})},
		{"numeric", "SELECT 1.50::numeric AS n, 12345678901234567890.5::numeric AS big",
			table([]string{"n", "big"}, []any{json.Number("1.50"), json.Number("12345678901234567890.5")})},
		{"numeric specials", "SELECT 'NaN'::numeric AS nan, 'Infinity'::numeric AS inf",
			table([]string{"nan", "inf"}, []any{math.NaN(), math.Inf(1)})},
		{"jsonb", `SELECT '{"a": [1, 2.5, "x", null, true]}'::jsonb AS j`,
			table([]string{"j"}, []any{map[string]any{"a": []any{json.Number("1"), json.Number("2.5"), "x", nil, true}}})},
		{"json", `SELECT '[1, {"b": 0}]'::json AS j`,
			table([]string{"j"}, []any{[]any{json.Number("1"), map[string]any{"b": json.Number("0")}}})},
		{"time types", "SELECT '2024-05-06 07:08:09.123456+00'::timestamptz AT TIME ZONE 'UTC' AS ts, '2024-05-06'::date AS d, '07:08:09.5'::time AS tm",
			table([]string{"ts", "d", "tm"}, []any{ts, time.Date(2024, 5, 6, 0, 0, 0, 0, time.UTC), "07:08:09.5"})},
		{"other types", "SELECT 'a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11'::uuid AS u, '\\x0102'::bytea AS b, interval '1 day 2 hours' AS i, ARRAY[1, 2] AS arr, 5::bigint AS big, 1.5::real AS r",
			table([]string{"u", "b", "i", "arr", "big", "r"}, []any{"a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11", "AQI=", "1 day 02:00:00", "{1,2}", int64(5), 1.5})},
		{"no rows", "SELECT id FROM t WHERE false",
			table([]string{"id"})},
	}
	f := mustFixture(t)
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := query(t.Context(), f.src, tc.sql)
			if err != nil {
				t.Fatalf("Query: %v", err)
			}
			if diff := cmp.Diff(tc.want, got, cmpopts.EquateNaNs()); diff != "" {
				t.Errorf("Query(%q) mismatch (-want +got):\n%s", tc.sql, diff)
			}
		})
	}
	f.assertUntouched(t)
	f.assertClean(t)
}

func table(cols []string, rows ...[]any) *dataexec.Table {
	if rows == nil {
		rows = [][]any{}
	}
	return &dataexec.Table{Columns: cols, Rows: rows}
}

func TestQueryExplain(t *testing.T) {
	f := mustFixture(t)
	got, err := query(t.Context(), f.src, "EXPLAIN SELECT * FROM t")
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"QUERY PLAN"}, got.Columns); diff != "" {
		t.Errorf("columns mismatch (-want +got):\n%s", diff)
	}
	if len(got.Rows) == 0 || !strings.HasPrefix(got.Rows[0][0].(string), "Seq Scan on t") {
		t.Errorf("EXPLAIN rows = %v, want a Seq Scan plan", got.Rows)
	}
}

// TestQueryCaps checks the row and byte caps at sizes and shapes the
// conformance suite does not (TestSourceConformance has the exact cap).
func TestQueryCaps(t *testing.T) {
	tests := []struct {
		name     string
		sql      string
		maxRows  int
		maxBytes int64
		rows     int
		reason   string // "" when not truncated
	}{
		{"20 million row cross join", "SELECT * FROM generate_series(1, 5000) a, generate_series(1, 4000) b", 1000, 1 << 20, 1000, dataexec.TruncatedRows},
		// Rows 1-9 take 107 bytes each as JSON; the tenth would pass 1000.
		{"byte cap", "SELECT g, repeat('x', 100) FROM generate_series(1, 100) g", 1000, 1000, 9, dataexec.TruncatedBytes},
		// The third row is refused on the server before it is sent.
		{"large row after small ones", "SELECT CASE WHEN g = 3 THEN repeat('x', 2 << 20) ELSE 'small' END AS v FROM generate_series(1, 5) g", 1000, 1 << 20, 2, dataexec.TruncatedBytes},
		{"explain row cap", "EXPLAIN SELECT * FROM t JOIN t t2 USING (id) JOIN t t3 USING (id)", 2, 1 << 20, 2, dataexec.TruncatedRows},
	}
	f := mustFixture(t)
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := f.src.Query(t.Context(), dataexec.Query{SQL: tc.sql, MaxRows: tc.maxRows, MaxBytes: tc.maxBytes})
			if err != nil {
				t.Fatalf("Query: %v", err)
			}
			type summary struct {
				Rows      int
				Truncated bool
				Reason    string
			}
			want := summary{tc.rows, tc.reason != "", tc.reason}
			if diff := cmp.Diff(want, summary{len(got.Rows), got.Truncated, got.TruncatedReason}); diff != "" {
				t.Errorf("mismatch (-want +got):\n%s", diff)
			}
			f.assertClean(t)
		})
	}
}

// TestQueryRowTooLarge checks that a first row over the byte cap is
// TooLarge, whether the server refuses it (its text is over the cap) or the
// reader does (its JSON is: each '<' becomes \u003c), and that a 200 MB
// value never reaches this process, whatever its type and however it is
// stored (the stored one compresses to about 2 MB: its stored size would
// pass).
func TestQueryRowTooLarge(t *testing.T) {
	tests := []struct {
		name string
		sql  string
	}{
		{"200 MB value", "SELECT repeat('x', 200 * 1024 * 1024) AS v"},
		{"200 MB stored beside fixed-length columns", "SELECT id, now() AS at, true AS ok, v FROM huge"},
		// Smaller values of other types, still far over the cap and over
		// what the test lets the query allocate here.
		{"48 MB of bytea text (24 MB stored)", "SELECT 1 AS id, decode(repeat('ab', 24 * 1024 * 1024), 'hex') AS v"},
		{"48 MB jsonb", "SELECT to_jsonb(repeat('x', 48 * 1024 * 1024)) AS v"},
		{"48 MB in an array", "SELECT ARRAY[repeat('x', 48 * 1024 * 1024)] AS v"},
		{"48 MB under a duplicated column name", "SELECT 1 AS v, repeat('x', 48 * 1024 * 1024) AS v"},
		{"columns over the cap together", "SELECT repeat('a', 600000) AS a, repeat('b', 600000) AS b"},
		{"JSON escapes", "SELECT repeat('<', 300000) AS v"},
		// Numerics' text is bounded (147 KB each); eight of them are
		// over the cap, so the check counts them again.
		{"numerics over the cap together", "SELECT " + strings.Repeat("1e131071::numeric + 0.5 AS n, ", 7) + "1e131071::numeric + 0.5 AS n"},
	}
	f := mustFixture(t)
	mustExec(t, f.admin, `CREATE TABLE huge (id int, v text)`, `INSERT INTO huge VALUES (1, repeat('x', 200 * 1024 * 1024))`)
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			// Building a 200 MB constant takes PostgreSQL seconds on a
			// loaded machine, twice (describe plans the query too).
			ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
			defer cancel()
			_, err := f.src.Query(ctx, dataexec.Query{SQL: tc.sql, MaxRows: 10, MaxBytes: 1 << 20})
			runtime.ReadMemStats(&after)
			if got := askbi.ErrorCode(err); got != askbi.TooLarge {
				t.Fatalf("Query code = %q (%v), want %q", got, err, askbi.TooLarge)
			}
			if msg, want := askbi.ErrorMessage(err), "a single row is larger than the 1 MiB result cap; select fewer or smaller columns"; msg != want {
				t.Errorf("message = %q, want %q", msg, want)
			}
			// The value must never reach this process: lib/pq would
			// allocate all of it.
			if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 32<<20 {
				t.Errorf("the query allocated %d MiB", alloc>>20)
			}
			f.assertClean(t)
		})
	}
}

// TestWrapBoundedColumns checks which columns the row-size check counts:
// never fixed-length ones; numeric and varchar(n) ones only when their
// bounds add up to more than the cap.
func TestWrapBoundedColumns(t *testing.T) {
	const sql = "SELECT 1 AS i, now() AS at, 'x'::text AS t, 1.5 AS n, 2.5::numeric(10, 2) AS p, 'y'::varchar(10) AS v, 'z'::varchar AS w"
	conn, cols := describeOnFixture(t, sql)
	tests := []struct {
		maxBytes int64
		counted  []string // the columns the check measures
	}{
		{1 << 20, []string{"askbi_3", "askbi_7"}},
		// The bounds are 147,457 + 12 + 40 bytes; varchar without a
		// length has none.
		{147509, []string{"askbi_3", "askbi_7"}},
		{147508, []string{"askbi_3", "askbi_4", "askbi_5", "askbi_6", "askbi_7"}},
	}
	for _, tc := range tests {
		q, args := wrap(sql, cols, nil, 10, tc.maxBytes)
		for i := 1; i <= len(cols); i++ {
			name := "askbi_" + strconv.Itoa(i)
			counted := strings.Contains(q, "octet_length("+name+")") || strings.Contains(q, "octet_length("+name+"::text)")
			if counted != slices.Contains(tc.counted, name) {
				t.Errorf("maxBytes %d: %s counted = %v, want %v in\n%s", tc.maxBytes, name, counted, !counted, q)
			}
		}
		if len(args) != 2 {
			t.Errorf("maxBytes %d: args = %v, want the row and byte caps", tc.maxBytes, args)
		}
		var n int
		if err := conn.GetContext(t.Context(), &n, "SELECT count(*) FROM ("+q+") AS w", args...); err != nil || n != 1 {
			t.Errorf("maxBytes %d: the wrapped query read %d rows, %v", tc.maxBytes, n, err)
		}
	}
}

// TestQueryErrors checks how errors from the server are reported.
func TestQueryErrors(t *testing.T) {
	tests := []struct {
		name string
		sql  string
		code askbi.Code
		msg  string
	}{
		{"undefined table", "SELECT * FROM nope", askbi.InvalidArgument, `relation "nope" does not exist`},
		{"undefined column", "SELECT nope FROM t", askbi.InvalidArgument, `column "nope" does not exist`},
		{"division by zero", "SELECT 1 / 0", askbi.InvalidArgument, "division by zero"},
		{"bad cast", "SELECT 'abc'::int", askbi.InvalidArgument, `invalid input syntax for type integer: "abc"`},
		{"write in a function", "SELECT delete_all()", askbi.InvalidArgument, "the query tried to write; only read-only queries are allowed"},
		{"hint", "SELECT round('x'::text, 1)", askbi.InvalidArgument, "(hint: No function matches"},
	}
	f := mustFixture(t)
	mustExec(t, f.admin, `CREATE FUNCTION delete_all() RETURNS bigint LANGUAGE sql AS 'DELETE FROM t RETURNING 1'`)
	var pid int
	if err := f.pool.Get(&pid, "SELECT pg_backend_pid()"); err != nil {
		t.Fatal(err)
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := query(t.Context(), f.src, tc.sql)
			if got := askbi.ErrorCode(err); got != tc.code {
				t.Fatalf("Query code = %q (%v), want %q", got, err, tc.code)
			}
			if msg := askbi.ErrorMessage(err); !strings.Contains(msg, tc.msg) {
				t.Errorf("message = %q, want it to contain %q", msg, tc.msg)
			}
			f.assertUntouched(t)
			f.assertClean(t)
		})
	}
	// A failed query must not cost the connection.
	var after int
	if err := f.pool.Get(&after, "SELECT pg_backend_pid()"); err != nil {
		t.Fatal(err)
	}
	if after != pid {
		t.Errorf("the pool replaced its connection after failed queries (backend %d, then %d)", pid, after)
	}
}

func TestQueryUnavailable(t *testing.T) {
	db := mustOpen(t, "postgres://nobody@127.0.0.1:1/none?sslmode=disable&connect_timeout=5", 1)
	src, err := New(db, nil)
	if err != nil {
		t.Fatal(err)
	}
	_, err = query(t.Context(), src, "SELECT 1")
	if got := askbi.ErrorCode(err); got != askbi.Unavailable {
		t.Errorf("Query code = %q (%v), want %q", got, err, askbi.Unavailable)
	}
}

func TestQueryConcurrent(t *testing.T) {
	f := mustFixture(t)
	f.pool.SetMaxOpenConns(3)
	var wg sync.WaitGroup
	for i := range 12 {
		wg.Go(func() {
			got, err := query(t.Context(), f.src, fmt.Sprintf("SELECT %d AS i, count(*) AS n FROM t", i))
			if err != nil {
				t.Error(err)
				return
			}
			if diff := cmp.Diff(table([]string{"i", "n"}, []any{int64(i), int64(3)}), got); diff != "" {
				t.Errorf("mismatch (-want +got):\n%s", diff)
			}
		})
	}
	wg.Wait()
}

// TestQueryAfterServerClosedConnections: after the server closed every
// pooled connection (as a restart does), the next query still succeeds:
// it runs once more, on a connection that answers, instead of failing
// with "the database is unavailable".
func TestQueryAfterServerClosedConnections(t *testing.T) {
	f := mustFixture(t)
	dsn := pgtest.MustDatabase(t)
	mustExec(t, mustOpen(t, dsn, 1), `CREATE TABLE t (id int PRIMARY KEY, v text)`, `INSERT INTO t VALUES (1, 'a')`)
	pool := mustOpen(t, dsn+"&application_name=askbi_victim", 4)
	pool.SetMaxIdleConns(4)
	src, err := New(pool, nil)
	if err != nil {
		t.Fatal(err)
	}
	var conns []*sqlx.Conn
	for range 4 {
		c, err := pool.Connx(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		if err := c.PingContext(t.Context()); err != nil {
			t.Fatal(err)
		}
		conns = append(conns, c)
	}
	for _, c := range conns {
		c.Close()
	}
	if idle := pool.Stats().Idle; idle != 4 {
		t.Fatalf("%d idle connections, want 4", idle)
	}
	for range 3 {
		var n int
		if err := f.admin.Get(&n, `SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity WHERE application_name = 'askbi_victim'`); err != nil {
			t.Fatal(err)
		}
		if err := f.admin.Get(&n, `SELECT count(*) FROM pg_stat_activity WHERE application_name = 'askbi_victim'`); err != nil {
			t.Fatal(err)
		}
		if n == 0 {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	for i := range 3 {
		if _, err := query(t.Context(), src, "SELECT id, v FROM t"); err != nil {
			t.Fatalf("query %d after the server closed the pooled connections: %v", i+1, err)
		}
	}
}

// TestPlainPool checks a Source over a pool opened without OpenDB (lib/pq's
// two round trips a statement): variables, the row cap and the size check
// work the same.
func TestPlainPool(t *testing.T) {
	db, err := sqlx.Open("postgres", pgtest.MustDatabase(t))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	src, err := New(db, nil)
	if err != nil {
		t.Fatal(err)
	}
	tab, err := src.Query(t.Context(), dataexec.Query{
		SQL:       "SELECT g AS id, 'row ' || g AS name FROM generate_series(1, {{n}}) g WHERE 'row ' || g <> {{skip}} ORDER BY g",
		Variables: map[string]dataexec.VariableValue{"n": {Type: workspace.VarNumber, Value: json.Number("5")}, "skip": {Type: workspace.VarString, Value: "row 2"}},
		MaxRows:   3,
	})
	if err != nil {
		t.Fatal(err)
	}
	want := [][]any{{int64(1), "row 1"}, {int64(3), "row 3"}, {int64(4), "row 4"}}
	if !reflect.DeepEqual(tab.Rows, want) || !tab.Truncated || tab.TruncatedReason != dataexec.TruncatedRows {
		t.Errorf("rows = %v (truncated %v %q), want %v cut at the row cap", tab.Rows, tab.Truncated, tab.TruncatedReason, want)
	}
	_, err = src.Query(t.Context(), dataexec.Query{SQL: "SELECT repeat('x', 2000000) AS v"})
	if got := askbi.ErrorCode(err); got != askbi.TooLarge {
		t.Errorf("a 2 MB row: code %q (%v), want %q", got, err, askbi.TooLarge)
	}
}

// TestQueryNoColumns checks that rows without columns are empty rows,
// not nil ones (JSON [] rather than null).
func TestQueryNoColumns(t *testing.T) {
	f := mustFixture(t)
	tab, err := query(t.Context(), f.src, "SELECT FROM generate_series(1, 2)")
	if err != nil {
		t.Fatal(err)
	}
	if len(tab.Rows) != 2 || tab.Rows[0] == nil || tab.Rows[1] == nil || len(tab.Rows[0]) != 0 {
		t.Errorf("rows = %#v, want two empty rows", tab.Rows)
	}
}

// TestTextBound checks textBound against the longest text values of
// bounded columns, as the server writes them.
func TestTextBound(t *testing.T) {
	const sql = `SELECT (-99999999.99)::numeric(10, 2) AS a, (-0.00999)::numeric(3, 5) AS b, (-99000)::numeric(2, -3) AS c,
		(-0.9)::numeric(1, 1) AS d, repeat('é', 10)::varchar(10) AS e, 'ü'::char(3) AS f, -1e131071::numeric - 0.1 AS g`
	conn, cols := describeOnFixture(t, sql)
	rows, err := conn.QueryContext(t.Context(), "SELECT a::text, b::text, c::text, d::text, e::text, f::text, g::text FROM ("+sql+") AS q")
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	texts := make([]string, len(cols))
	ptrs := make([]any, len(cols))
	for i := range texts {
		ptrs[i] = &texts[i]
	}
	if !rows.Next() {
		t.Fatal(rows.Err())
	}
	if err := rows.Scan(ptrs...); err != nil {
		t.Fatal(err)
	}
	for i, c := range cols {
		if b := textBound(c); b < int64(len(texts[i])) || b == 0 {
			t.Errorf("%s (%s): bound %d, but its text takes %d bytes", c.Name(), c.DatabaseTypeName(), b, len(texts[i]))
		}
	}
}

// describeOnFixture describes sql on a connection of a new fixture's pool,
// which it returns for more statements; the test closes it.
func describeOnFixture(t *testing.T, sql string) (*sqlx.Conn, []*sql.ColumnType) {
	t.Helper()
	conn, err := mustFixture(t).pool.Connx(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	cols, err := describe(t.Context(), conn, sql, nil)
	if err != nil {
		t.Fatal(err)
	}
	return conn, cols
}
