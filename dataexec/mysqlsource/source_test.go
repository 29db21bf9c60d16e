package mysqlsource

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"
	"github.com/google/go-cmp/cmp"

	"github.com/askbi/askbi"
	"github.com/askbi/askbi/dataexec"
	"github.com/askbi/askbi/internal/mysqltest"
)

func query(ctx context.Context, src *Source, sql string) (*dataexec.Table, error) {
	return src.Query(ctx, dataexec.Query{SQL: sql, MaxRows: 100, MaxBytes: 1 << 20})
}

func table(cols []string, rows ...[]any) *dataexec.Table {
	if rows == nil {
		rows = [][]any{}
	}
	return &dataexec.Table{Columns: cols, Rows: rows}
}

// TestQueryAttacks runs the guard's whole attack list against the
// server, as the SELECT-only user: each is refused with invalid_argument
// before any connection is opened, and the canary table is untouched.
// Then what only the server can stop: a write or a sequence inside a
// stored function the guard cannot see into.
func TestQueryAttacks(t *testing.T) {
	w := mustWarehouse(t)
	mode := serverMode(t, w)
	src, dials := w.source(t, &Options{SQLMode: mode})
	for _, tc := range attacks {
		_, err := query(t.Context(), src, tc.sql)
		if got := askbi.ErrorCode(err); got != askbi.InvalidArgument {
			t.Errorf("%s: Query code = %q (%v), want %q", tc.name, got, err, askbi.InvalidArgument)
		}
	}
	if n := dials.Load(); n != 0 {
		t.Errorf("the refused queries opened %d connections", n)
	}
	w.assertUntouched(t)

	mustExec(t, w.admin,
		`CREATE SEQUENCE s`,
		`CREATE FUNCTION delete_all() RETURNS int MODIFIES SQL DATA BEGIN DELETE FROM t; RETURN 1; END`,
		`CREATE FUNCTION bump() RETURNS bigint MODIFIES SQL DATA BEGIN RETURN NEXTVAL(s); END`,
		`GRANT EXECUTE ON FUNCTION `+quoteName(w.name)+`.delete_all TO `+w.user,
		`GRANT EXECUTE ON FUNCTION `+quoteName(w.name)+`.bump TO `+w.user,
	)
	for _, sql := range []string{"SELECT delete_all()", "SELECT bump()"} {
		_, err := query(t.Context(), src, sql)
		if askbi.ErrorCode(err) != askbi.InvalidArgument || askbi.ErrorMessage(err) != "the query tried to write; only read-only queries are allowed" {
			t.Errorf("Query(%s) = %v, want the read-only transaction's refusal", sql, err)
		}
	}
	w.assertUntouched(t)
	var next int64
	if err := w.admin.Get(&next, `SELECT NEXTVAL(s)`); err != nil || next != 1 {
		t.Errorf("the sequence advanced: next value %d, %v", next, err)
	}
}

func serverMode(tb testing.TB, w *warehouse) string {
	tb.Helper()
	var mode string
	if err := w.admin.Get(&mode, `SELECT @@GLOBAL.sql_mode`); err != nil {
		tb.Fatal(err)
	}
	return mode
}

// TestSQLModePinned: the guard parses under the server's sql_mode and
// the session runs under the same, so a backslash or a double quote
// cannot mean one thing to the guard and another to the server. It
// changes the server's global sql_mode, so it runs alone (not parallel).
func TestSQLModePinned(t *testing.T) {
	w := mustWarehouse(t)
	original := serverMode(t, w)
	setGlobal := func(mode string) {
		t.Helper()
		if _, err := w.admin.Exec(`SET GLOBAL sql_mode = ?`, mode); err != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(func() { setGlobal(original) })
	const attack = `SELECT 'a\' , SLEEP(5) -- ' AS s`

	// The server's default: one string, whose text comes back.
	learnedDefault, _ := w.source(t, nil)
	got, err := query(t.Context(), learnedDefault, attack)
	if err != nil {
		t.Fatalf("Query under the default mode: %v", err)
	}
	if diff := cmp.Diff(table([]string{"s"}, []any{`a' , SLEEP(5) -- `}), got); diff != "" {
		t.Errorf("under the default mode (-want +got):\n%s", diff)
	}

	// NO_BACKSLASH_ESCAPES on the server: a new Source learns it, and the
	// call the server would run is refused.
	setGlobal(original + ",NO_BACKSLASH_ESCAPES")
	nbe, _ := w.source(t, nil)
	if _, err := query(t.Context(), nbe, attack); askbi.ErrorCode(err) != askbi.InvalidArgument || !strings.Contains(askbi.ErrorMessage(err), "SLEEP") {
		t.Errorf("Query under NO_BACKSLASH_ESCAPES = %v, want SLEEP refused", err)
	}
	got, err = query(t.Context(), nbe, `SELECT 'a\'' , SLEEP(5) -- ' AS s`)
	if err != nil {
		t.Fatalf("Query of a string under NO_BACKSLASH_ESCAPES: %v", err)
	}
	if diff := cmp.Diff(table([]string{"s"}, []any{`a\' , SLEEP(5) -- `}), got); diff != "" {
		t.Errorf("under NO_BACKSLASH_ESCAPES (-want +got):\n%s", diff)
	}
	// The Source that learned the default keeps parsing and pinning it:
	// the server, on a session pinned to it, reads the string too.
	if got, err := query(t.Context(), learnedDefault, attack); err != nil || len(got.Rows) != 1 || got.Rows[0][0] != `a' , SLEEP(5) -- ` {
		t.Errorf("the Source that learned the default mode: %v, %v; want the string", got, err)
	}

	// ANSI_QUOTES: "..." is a name to the server.
	setGlobal("ANSI_QUOTES")
	ansi, _ := w.source(t, nil)
	if _, err := query(t.Context(), ansi, `SELECT 1 AS "a\" , SLEEP(5) -- "`); askbi.ErrorCode(err) != askbi.InvalidArgument {
		t.Errorf("Query under ANSI_QUOTES = %v, want invalid_argument", err)
	}
	if got, err := query(t.Context(), ansi, `SELECT "id" FROM t ORDER BY "id"`); err != nil || len(got.Rows) != 3 || got.Rows[0][0] != int64(1) {
		t.Errorf(`Query of "id" under ANSI_QUOTES = %v, %v; want the column`, got, err)
	}

	// Options.SQLMode wins over the server's, on the session too.
	setGlobal(original)
	pinned, _ := w.source(t, &Options{SQLMode: "NO_BACKSLASH_ESCAPES"})
	got, err = query(t.Context(), pinned, `SELECT 'a\\b' AS s, @@SESSION.sql_mode AS m, @@SESSION.time_zone AS tz`)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(table([]string{"s", "m", "tz"}, []any{`a\\b`, "NO_BACKSLASH_ESCAPES", "+00:00"}), got); diff != "" {
		t.Errorf("the pinned session (-want +got):\n%s", diff)
	}

	// A mode that switches MariaDB to another dialect is refused (MySQL 8
	// has none).
	if !isMariaDB(mysqltest.Version(t)) {
		return
	}
	setGlobal("ORACLE")
	oracle, dials := w.source(t, nil)
	if _, err := query(t.Context(), oracle, "SELECT 1"); askbi.ErrorCode(err) != askbi.Unsupported {
		t.Errorf("Query under ORACLE = %v, want unsupported", err)
	}
	if dials.Load() != 1 {
		t.Errorf("%d connections; want the one that read the mode", dials.Load())
	}
}

// TestHangUpKillsQuery: when the caller goes away, the statement it
// started stops on the server (KILL QUERY from a second connection)
// within 2 seconds, and Query says so.
func TestHangUpKillsQuery(t *testing.T) {
	w := mustWarehouse(t)
	w.hang(t)
	src, _ := w.source(t, nil)
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() {
		_, err := query(ctx, src, "SELECT hang()")
		done <- err
	}()
	waitFor(t, time.Minute, "the query starts", func() bool { return w.hanging(t) > 0 })
	cancel()
	err := <-done
	if askbi.ErrorCode(err) != askbi.Timeout || askbi.ErrorMessage(err) != "the query was cancelled" {
		t.Errorf("Query = %v, want timeout: the query was cancelled", err)
	}
	waitFor(t, 2*time.Second, "the query is gone from the server", func() bool { return w.hanging(t) == 0 })
}

// TestQueryTimeout: a query the guard lets through but that runs too
// long ends at the deadline, on the server too.
func TestQueryTimeout(t *testing.T) {
	w := mustWarehouse(t)
	w.hang(t)
	src, _ := w.source(t, nil)
	ctx, cancel := context.WithTimeout(t.Context(), time.Second)
	defer cancel()
	_, err := query(ctx, src, "SELECT hang()")
	if askbi.ErrorCode(err) != askbi.Timeout || askbi.ErrorMessage(err) != "the query took longer than the 1s limit" {
		t.Errorf("Query = %v, want timeout after 1s", err)
	}
	if n := w.hanging(t); n != 0 {
		t.Errorf("%d statements still run after Query returned", n)
	}
}

// TestServerTimeout: the session's own timeout (max_statement_time on
// MariaDB) stops a statement whose caller never cancels it.
func TestServerTimeout(t *testing.T) {
	w := mustWarehouse(t)
	w.hang(t)
	db := mustOpen(t, w.reader, 1)
	conn, err := db.Connx(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	var version string
	if err := conn.GetContext(t.Context(), &version, "SELECT VERSION()"); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 500*time.Millisecond)
	err = setUp(ctx, conn, mustMode(t, serverMode(t, w)), version)
	cancel()
	if err != nil {
		t.Fatal(err)
	}
	// The client waits far longer: only the server can stop it soon.
	long, cancelLong := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancelLong()
	_, err = conn.ExecContext(long, "SELECT hang()")
	myErr, ok := errors.AsType[*mysql.MySQLError](err)
	if !ok || (myErr.Number != errStatementTimeout && myErr.Number != errExecutionTimeout) {
		t.Fatalf("the statement ended with %v, want the server's statement timeout", err)
	}
	if got := classify(context.Background(), err, 500*time.Millisecond); askbi.ErrorCode(got) != askbi.Timeout {
		t.Errorf("classify = %v, want timeout", got)
	}
}

// TestSessionClosed: a function the guard cannot see into leaves state on
// its session (a user variable, a named lock); the next call sees none
// of it, and the lock is released once the call's session is closed.
func TestSessionClosed(t *testing.T) {
	w := mustWarehouse(t)
	mustExec(t, w.admin,
		`CREATE FUNCTION leak() RETURNS int NO SQL SQL SECURITY INVOKER BEGIN SET @leak = 'left'; RETURN GET_LOCK('askbi_leak', 0); END`,
		`GRANT EXECUTE ON FUNCTION `+quoteName(w.name)+`.leak TO `+w.user)
	// On a session that stays open, the function leaves its variable.
	raw := mustOpen(t, w.reader, 1)
	conn, err := raw.Connx(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	var left string
	if _, err := conn.ExecContext(t.Context(), "SELECT leak()"); err != nil {
		t.Fatal(err)
	}
	if err := conn.GetContext(t.Context(), &left, "SELECT @leak"); err != nil || left != "left" {
		t.Fatalf("the function left %q, %v on its session; want %q", left, err, "left")
	}
	conn.Close()
	raw.Close()
	waitFor(t, 2*time.Second, "the raw session's lock is released", func() bool {
		var holder *int64
		if err := w.admin.Get(&holder, `SELECT IS_USED_LOCK('askbi_leak')`); err != nil {
			t.Fatal(err)
		}
		return holder == nil
	})

	src, _ := w.source(t, nil)
	got, err := query(t.Context(), src, "SELECT leak() AS l")
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(table([]string{"l"}, []any{int64(1)}), got); diff != "" {
		t.Fatalf("the function did not take its lock (-want +got):\n%s", diff)
	}
	got, err = query(t.Context(), src, "SELECT @leak AS v")
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(table([]string{"v"}, []any{nil}), got); diff != "" {
		t.Errorf("the next call sees the variable (-want +got):\n%s", diff)
	}
	waitFor(t, 2*time.Second, "the named lock is released", func() bool {
		var holder *int64
		if err := w.admin.Get(&holder, `SELECT IS_USED_LOCK('askbi_leak')`); err != nil {
			t.Fatal(err)
		}
		return holder == nil
	})
	if n := src.db.Stats().InUse; n != 0 {
		t.Errorf("%d connections still in use", n)
	}
}

// TestQueryResults checks that legitimate queries work and that cells
// come back as documented.
func TestQueryResults(t *testing.T) {
	w := mustWarehouse(t)
	mustExec(t, w.admin,
		`CREATE TABLE kinds (d DECIMAL(10, 2), f FLOAT, db DOUBLE, u BIGINT UNSIGNED, bits BIT(3), bin VARBINARY(4), bl BLOB,
			dt DATETIME(6), da DATE, tm TIME, e ENUM('a', 'b'), st SET('x', 'y'), y YEAR, b BOOLEAN)`,
		`INSERT INTO kinds VALUES (1.50, 0.1, 2.5, 18446744073709551615, b'101', X'0102', 'xy',
			'2024-05-06 07:08:09.123456', '2024-05-06', '07:08:09', 'b', 'x,y', 2024, TRUE)`)
	src, _ := w.source(t, nil)
	ts := time.Date(2024, 5, 6, 7, 8, 9, 123456000, time.UTC)
	tests := []struct {
		name string
		sql  string
		want *dataexec.Table
	}{
		{"cte", "WITH x AS (SELECT id FROM t WHERE id > 1) SELECT id FROM x ORDER BY id",
			table([]string{"id"}, []any{int64(2)}, []any{int64(3)})},
		{"window", "SELECT id, SUM(id) OVER (ORDER BY id) AS running FROM t ORDER BY id",
			table([]string{"id", "running"}, []any{int64(1), json.Number("1")}, []any{int64(2), json.Number("3")}, []any{int64(3), json.Number("6")})},
		{"union", "SELECT 1 AS n UNION SELECT 2 ORDER BY n DESC",
			table([]string{"n"}, []any{int64(2)}, []any{int64(1)})},
		{"union with its own limit", "SELECT 1 AS n UNION SELECT 2 ORDER BY n LIMIT 1",
			table([]string{"n"}, []any{int64(1)})},
		{"intersect", "SELECT id FROM t INTERSECT SELECT 2", table([]string{"id"}, []any{int64(2)})},
		{"order kept", "SELECT id FROM t ORDER BY id DESC",
			table([]string{"id"}, []any{int64(3)}, []any{int64(2)}, []any{int64(1)})},
		{"order kept under a limit above the cap", "SELECT id FROM t ORDER BY id DESC LIMIT 5000",
			table([]string{"id"}, []any{int64(3)}, []any{int64(2)}, []any{int64(1)})},
		{"limit with offset", "SELECT id FROM t ORDER BY id LIMIT 1, 1", table([]string{"id"}, []any{int64(2)})},
		{"trailing semicolon", "SELECT 1 AS one;", table([]string{"one"}, []any{int64(1)})},
		{"trailing comment", "SELECT 1 AS one -- the end", table([]string{"one"}, []any{int64(1)})},
		{"trailing hash comment", "SELECT 1 AS one # the end", table([]string{"one"}, []any{int64(1)})},
		{"semicolon in literal", "SELECT 'a;b' AS s", table([]string{"s"}, []any{"a;b"})},
		{"duplicate column names", "SELECT 1 AS a, 2 AS a", table([]string{"a", "a"}, []any{int64(1), int64(2)})},
		{"null and zero kept", "SELECT NULL AS n, 0 AS z, 0e0 AS f, '' AS e, FALSE AS b",
			table([]string{"n", "z", "f", "e", "b"}, []any{nil, int64(0), 0.0, "", int64(0)})},
		{"kinds", "SELECT * FROM kinds", table([]string{"d", "f", "db", "u", "bits", "bin", "bl", "dt", "da", "tm", "e", "st", "y", "b"},
			[]any{json.Number("1.50"), 0.1, 2.5, json.Number("18446744073709551615"), int64(5), "AQI=", "eHk=",
				ts, time.Date(2024, 5, 6, 0, 0, 0, 0, time.UTC), "07:08:09", "b", "x,y", int64(2024), int64(1)})},
		{"no rows", "SELECT id FROM t WHERE id > 10", table([]string{"id"})},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := query(t.Context(), src, tc.sql)
			if err != nil {
				t.Fatalf("Query: %v", err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("Query(%q) mismatch (-want +got):\n%s", tc.sql, diff)
			}
		})
	}
	w.assertUntouched(t)
}

// TestQueryCaps checks the row and byte caps at sizes and shapes the
// conformance suite does not.
func TestQueryCaps(t *testing.T) {
	w := mustWarehouse(t)
	src, _ := w.source(t, nil)
	tests := []struct {
		name     string
		sql      string
		maxRows  int
		maxBytes int64
		rows     int
		reason   string // "" when not truncated
	}{
		{"cross join", "SELECT a.id FROM t a, t b, t c, t d, t e, t f", 10, 1 << 20, 10, dataexec.TruncatedRows},
		{"100,000 generated rows", "WITH RECURSIVE g(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM g WHERE n < 100000) SELECT n FROM g", 1000, 1 << 20, 1000, dataexec.TruncatedRows},
		{"own limit above the cap", "SELECT id FROM t ORDER BY id LIMIT 1000", 2, 1 << 20, 2, dataexec.TruncatedRows},
		{"own limit at the cap", "SELECT id FROM t ORDER BY id LIMIT 3", 2, 1 << 20, 2, dataexec.TruncatedRows},
		// Rows take 107 bytes each as JSON; the tenth would pass 1000.
		{"byte cap", "WITH RECURSIVE g(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM g WHERE n < 100) SELECT n, REPEAT('x', 100) FROM g", 1000, 1000, 9, dataexec.TruncatedBytes},
		{"large row after small ones", "SELECT CASE WHEN id = 3 THEN REPEAT('x', 2 << 20) ELSE 'small' END AS v FROM t ORDER BY id", 1000, 1 << 20, 2, dataexec.TruncatedBytes},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := src.Query(t.Context(), dataexec.Query{SQL: tc.sql, MaxRows: tc.maxRows, MaxBytes: tc.maxBytes})
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
		})
	}
	_, err := src.Query(t.Context(), dataexec.Query{SQL: "SELECT REPEAT('x', 2 << 20) AS v", MaxBytes: 1 << 20})
	if askbi.ErrorCode(err) != askbi.TooLarge {
		t.Errorf("a 2 MiB row: %v, want too_large", err)
	}
}

// TestQueryErrors checks how the server's errors are reported: the
// user's own mistakes with the server's words, without the account.
func TestQueryErrors(t *testing.T) {
	w := mustWarehouse(t)
	src, _ := w.source(t, nil)
	tests := []struct {
		name string
		sql  string
		code askbi.Code
		msg  string
	}{
		{"unknown table", "SELECT * FROM nope", askbi.InvalidArgument, "nope' doesn't exist"},
		{"unknown column", "SELECT nope FROM t", askbi.InvalidArgument, "Unknown column 'nope'"},
		{"more than one row", "SELECT (SELECT id FROM t)", askbi.InvalidArgument, "Subquery returns more than 1 row"},
		{"duplicate names under a wrapped limit", "SELECT 1 AS a, 2 AS a FROM t LIMIT 5000", askbi.InvalidArgument, "Duplicate column name 'a'"},
		{"another database", "SELECT * FROM mysql.user", askbi.InvalidArgument, "denied to the connection's user"},
		{"a function without EXECUTE", "SELECT " + quoteName(w.name) + ".nothing()", askbi.InvalidArgument, "denied to the connection's user"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := query(t.Context(), src, tc.sql)
			if got := askbi.ErrorCode(err); got != tc.code {
				t.Fatalf("Query code = %q (%v), want %q", got, err, tc.code)
			}
			msg := askbi.ErrorMessage(err)
			if !strings.Contains(msg, tc.msg) || strings.Contains(msg, "askbi reader") {
				t.Errorf("message = %q, want it to contain %q and not the account", msg, tc.msg)
			}
		})
	}
}

func TestQueryUnavailable(t *testing.T) {
	for _, opts := range []*Options{nil, {SQLMode: "STRICT_TRANS_TABLES"}} {
		db := mustOpen(t, "nobody@unix(/nonexistent/mysqld.sock)/none", 1)
		src, err := New(db, opts)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := query(t.Context(), src, "SELECT 1"); askbi.ErrorCode(err) != askbi.Unavailable {
			t.Errorf("Query (%+v) = %v, want unavailable", opts, err)
		}
	}
}

func TestQueryConcurrent(t *testing.T) {
	w := mustWarehouse(t)
	src, _ := w.source(t, &Options{MaxConns: 4})
	var wg sync.WaitGroup
	for i := range 24 {
		wg.Go(func() {
			got, err := src.Query(t.Context(), dataexec.Query{SQL: "SELECT {{i}} AS i, COUNT(*) AS n FROM t",
				Variables: map[string]dataexec.VariableValue{"i": {Type: "number", Value: json.Number(string(rune('0' + i%10)))}}})
			if err != nil {
				t.Error(err)
				return
			}
			if diff := cmp.Diff(table([]string{"i", "n"}, []any{int64(i % 10), int64(3)}), got); diff != "" {
				t.Errorf("mismatch (-want +got):\n%s", diff)
			}
		})
	}
	wg.Wait()
}

func TestParseDSN(t *testing.T) {
	tests := []struct {
		in                        string
		net, addr, user, pass, db string
	}{
		{"mysql://reader:p%40ss@db.example:3307/warehouse", "tcp", "db.example:3307", "reader", "p@ss", "warehouse"},
		{"mariadb://reader@db.example/warehouse?tls=true", "tcp", "db.example:3306", "reader", "", "warehouse"},
		{"mysql://root@localhost/w?socket=/run/mysqld/mysqld.sock", "unix", "/run/mysqld/mysqld.sock", "root", "", "w"},
		{"reader:secret@tcp(10.0.0.1:3306)/warehouse?multiStatements=true&interpolateParams=true&allowAllFiles=true", "tcp", "10.0.0.1:3306", "reader", "secret", "warehouse"},
	}
	for _, tc := range tests {
		cfg, err := ParseDSN(tc.in)
		if err != nil {
			t.Errorf("ParseDSN(%q): %v", tc.in, err)
			continue
		}
		got := []string{cfg.Net, cfg.Addr, cfg.User, cfg.Passwd, cfg.DBName}
		if diff := cmp.Diff([]string{tc.net, tc.addr, tc.user, tc.pass, tc.db}, got); diff != "" {
			t.Errorf("ParseDSN(%q) mismatch (-want +got):\n%s", tc.in, diff)
		}
		// The Source's settings, whatever the DSN says.
		if !cfg.ParseTime || cfg.Loc != time.UTC || cfg.MultiStatements || cfg.InterpolateParams || cfg.AllowAllFiles {
			t.Errorf("ParseDSN(%q) settings: parseTime %v, loc %v, multiStatements %v, interpolateParams %v, allowAllFiles %v",
				tc.in, cfg.ParseTime, cfg.Loc, cfg.MultiStatements, cfg.InterpolateParams, cfg.AllowAllFiles)
		}
	}
	if _, err := ParseDSN("mysql://x@h/db?bogus=%zz"); err == nil {
		t.Error("ParseDSN accepted a malformed URL")
	}
}
