package mysqlsource

import (
	"context"
	"crypto/rand"
	"database/sql"
	"database/sql/driver"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"
	"github.com/jmoiron/sqlx"

	"github.com/askbi/askbi/internal/mysqltest"
)

func TestMain(m *testing.M) { mysqltest.Main(m) }

// warehouse is a fresh database holding the canary table t, an admin
// pool on it (root), and the DSN of a SELECT-only user made by
// SQLForReadOnlyUser.
type warehouse struct {
	admin  *sqlx.DB
	name   string // the database
	reader string // the SELECT-only user's DSN
	user   string // its account, for grants in tests: 'name'@'%'
	login  string // its name
}

var canary = [][]any{{int64(1), "a"}, {int64(2), "b"}, {int64(3), "c"}}

func mustWarehouse(tb testing.TB) *warehouse {
	tb.Helper()
	dsn := mysqltest.MustDatabase(tb)
	admin := mustOpen(tb, dsn, 4)
	cfg, err := mysql.ParseDSN(dsn)
	if err != nil {
		tb.Fatal(err)
	}
	mustExec(tb, admin,
		`CREATE TABLE t (id int PRIMARY KEY, v text)`,
		`INSERT INTO t VALUES (1, 'a'), (2, 'b'), (3, 'c')`,
	)
	// Accounts belong to the server: a unique name, awkward to quote.
	user := `askbi reader '` + strings.ToLower(rand.Text()[:6]) + `\`
	password := `pa'ss \ "word`
	for range 2 { // the statements can be run again
		mustExec(tb, admin, SQLForReadOnlyUser(user, "%", password, cfg.DBName)...)
	}
	tb.Cleanup(func() { mustExec(tb, admin, "DROP USER "+quote(user)+"@'%'") })
	rcfg := cfg.Clone()
	rcfg.User, rcfg.Passwd = user, password
	return &warehouse{admin: admin, name: cfg.DBName, reader: rcfg.FormatDSN(), user: quote(user) + "@'%'", login: user}
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
			tb.Fatalf("%.80s: %v", s, err)
		}
	}
}

// source returns a Source connected as the reader, with opts, and a
// count of the connections its pool opened.
func (w *warehouse) source(tb testing.TB, opts *Options) (*Source, *atomic.Int64) {
	tb.Helper()
	cfg, err := ParseDSN(w.reader)
	if err != nil {
		tb.Fatal(err)
	}
	c, err := mysql.NewConnector(cfg)
	if err != nil {
		tb.Fatal(err)
	}
	dials := new(atomic.Int64)
	db := sqlx.NewDb(sql.OpenDB(countingConnector{c, dials}), "mysql")
	tb.Cleanup(func() { db.Close() })
	src, err := New(db, opts)
	if err != nil {
		tb.Fatal(err)
	}
	return src, dials
}

// countingConnector counts the connections a pool opens.
type countingConnector struct {
	driver.Connector
	n *atomic.Int64
}

func (c countingConnector) Connect(ctx context.Context) (driver.Conn, error) {
	c.n.Add(1)
	return c.Connector.Connect(ctx)
}

// assertUntouched checks that the canary table is as made.
func (w *warehouse) assertUntouched(tb testing.TB) {
	tb.Helper()
	var rows []struct {
		ID int64  `db:"id"`
		V  string `db:"v"`
	}
	if err := w.admin.Select(&rows, `SELECT id, v FROM t ORDER BY id`); err != nil {
		tb.Fatalf("read canary: %v", err)
	}
	var got [][]any
	for _, r := range rows {
		got = append(got, []any{r.ID, r.V})
	}
	if len(got) != len(canary) {
		tb.Errorf("canary table t changed: %v", got)
		return
	}
	for i := range got {
		if got[i][0] != canary[i][0] || got[i][1] != canary[i][1] {
			tb.Errorf("canary table t changed: %v", got)
			return
		}
	}
}

// hang is a stored function that sleeps for ten minutes, which the
// reader may call: a query the guard lets through that blocks.
func (w *warehouse) hang(tb testing.TB) {
	tb.Helper()
	mustExec(tb, w.admin, `CREATE FUNCTION hang() RETURNS int NO SQL SQL SECURITY INVOKER BEGIN DO SLEEP(600); RETURN 1; END`,
		`GRANT EXECUTE ON FUNCTION `+quoteName(w.name)+`.hang TO `+w.user)
}

// hanging counts the reader's sessions that run hang(): the server shows
// the statement of the function that runs, not the query.
func (w *warehouse) hanging(tb testing.TB) int {
	tb.Helper()
	var n int
	if err := w.admin.Get(&n, `SELECT count(*) FROM information_schema.PROCESSLIST
WHERE USER = ? AND COMMAND <> 'Sleep' AND INFO = 'DO SLEEP(600)'`, w.login); err != nil {
		tb.Fatal(err)
	}
	return n
}

// running counts the statements that hold marker and run on the server,
// except the caller's.
func running(tb testing.TB, admin *sqlx.DB, marker string) int {
	tb.Helper()
	var n int
	if err := admin.Get(&n, `SELECT count(*) FROM information_schema.PROCESSLIST
WHERE COMMAND <> 'Sleep' AND INSTR(INFO, ?) > 0 AND ID <> CONNECTION_ID()`, marker); err != nil {
		tb.Fatal(err)
	}
	return n
}

// waitFor waits until cond holds, polling, for at most bound.
func waitFor(tb testing.TB, bound time.Duration, what string, cond func() bool) {
	tb.Helper()
	deadline := time.Now().Add(bound)
	for !cond() {
		if time.Now().After(deadline) {
			tb.Fatalf("%s: not within %s", what, bound)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
