package pgsource

import (
	"crypto/rand"
	"errors"
	"net/url"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/jmoiron/sqlx"
	"github.com/lib/pq"

	"github.com/askbi/askbi"
	"github.com/askbi/askbi/dataexec"
	"github.com/askbi/askbi/internal/pgtest"
)

// roleFixture is a database with tables the reader may and may not read,
// and a pool connected as the reader role SQLForReadOnlyRole made.
type roleFixture struct {
	admin  *sqlx.DB
	reader *sqlx.DB // connected as the role, one connection
}

func mustRoleFixture(tb testing.TB) *roleFixture {
	tb.Helper()
	dsn := pgtest.MustDatabase(tb)
	admin := mustOpen(tb, dsn, 2)
	mustExec(tb, admin,
		`CREATE TABLE t (id int PRIMARY KEY, v text)`,
		`INSERT INTO t VALUES (1, 'a'), (2, 'b'), (3, 'c')`,
		`CREATE SEQUENCE s`,
		`CREATE VIEW t_view AS SELECT id FROM t`,
		`CREATE MATERIALIZED VIEW t_mat AS SELECT v FROM t`,
		`CREATE SCHEMA hidden`,
		`CREATE TABLE hidden.secret (x int)`,
	)
	// Roles belong to the cluster, not the database: make the name unique,
	// and awkward to quote.
	role := `askbi reader "` + strings.ToLower(rand.Text()[:6]) + `"`
	password := `pa'ss $askbi$ \ word`
	for range 2 { // the statements can be run again
		mustExec(tb, admin, SQLForReadOnlyRole(role, password, "public")...)
	}
	// Made after the grants: readable through the default privileges.
	mustExec(tb, admin, `CREATE TABLE later (y int)`, `CREATE TABLE private (z int)`,
		`REVOKE SELECT ON private FROM `+pq.QuoteIdentifier(role))
	u, err := url.Parse(dsn)
	if err != nil {
		tb.Fatal(err)
	}
	u.User = url.UserPassword(role, password)
	tb.Cleanup(func() {
		// Runs before the database is dropped; the reader pool is closed.
		mustExec(tb, admin, `DROP OWNED BY `+pq.QuoteIdentifier(role), `DROP ROLE `+pq.QuoteIdentifier(role))
	})
	return &roleFixture{admin: admin, reader: mustOpen(tb, u.String(), 1)}
}

// TestSQLForReadOnlyRole checks that the role can read and nothing else,
// even when it talks to the server directly, without the guard.
func TestSQLForReadOnlyRole(t *testing.T) {
	f := mustRoleFixture(t)
	tests := []struct {
		name string
		sql  string
		code string // SQLSTATE; "" for success
	}{
		{"select", "SELECT count(*) FROM t", ""},
		{"select view", "SELECT count(*) FROM t_view", ""},
		{"select table made later", "SELECT count(*) FROM later", ""},
		{"read only by default", "INSERT INTO t VALUES (9, 'z')", "25006"},
		{"no write privilege", "BEGIN READ WRITE; INSERT INTO t VALUES (9, 'z'); COMMIT", "42501"},
		{"no revoked table", "SELECT * FROM private", "42501"},
		{"no other schema", "SELECT * FROM hidden.secret", "42501"},
		{"no sequence", "SELECT nextval('s')", "42501"},
		{"no pg_sleep", "SELECT pg_sleep(0)", "42501"},
		{"no advisory lock", "SELECT pg_advisory_lock(1)", "42501"},
		{"no set_config", "SELECT set_config('work_mem', '1GB', false)", "42501"},
		{"no query_to_xml", "SELECT query_to_xml('SELECT 1', true, true, '')", "42501"},
		{"no lo_import", "SELECT lo_import('/etc/passwd')", "42501"},
		{"no pg_read_file", "SELECT pg_read_file('/etc/passwd')", "42501"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := f.reader.Exec(tc.sql)
			_, _ = f.reader.Exec("ROLLBACK") // after a failed multi-statement string
			var got string
			if pqErr, ok := errors.AsType[*pq.Error](err); ok {
				got = string(pqErr.Code)
			} else if err != nil {
				t.Fatalf("Exec: %v", err)
			}
			if got != tc.code {
				t.Errorf("Exec(%q) SQLSTATE = %q (%v), want %q", tc.sql, got, err, tc.code)
			}
		})
	}
	var settings []string
	if err := f.reader.Select(&settings, `SELECT current_setting(name) FROM unnest(ARRAY['default_transaction_read_only', 'statement_timeout', 'idle_in_transaction_session_timeout']) name`); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"on", "30s", "1min"}, settings); diff != "" {
		t.Errorf("role settings mismatch (-want +got):\n%s", diff)
	}
}

func TestInspect(t *testing.T) {
	f := mustRoleFixture(t)
	src, err := New(f.reader, &Options{MaxConns: 1})
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name  string
		table string
		limit int
		want  []dataexec.Relation
	}{
		{"list", "", 0, []dataexec.Relation{
			{Schema: "public", Name: "later", Kind: "table"},
			{Schema: "public", Name: "t", Kind: "table"},
			{Schema: "public", Name: "t_mat", Kind: "materialized_view"},
			{Schema: "public", Name: "t_view", Kind: "view"},
		}},
		{"list within limit", "", 2, []dataexec.Relation{
			{Schema: "public", Name: "later", Kind: "table"},
			{Schema: "public", Name: "t", Kind: "table"},
		}},
		{"one by name", "t", 0, []dataexec.Relation{
			{Schema: "public", Name: "t", Kind: "table", Columns: []dataexec.Column{{Name: "id", Type: "integer"}, {Name: "v", Type: "text"}}},
		}},
		{"one by qualified name", "public.t_view", 0, []dataexec.Relation{
			{Schema: "public", Name: "t_view", Kind: "view", Columns: []dataexec.Column{{Name: "id", Type: "integer"}}},
		}},
		{"columns within limit", "t", 1, []dataexec.Relation{
			{Schema: "public", Name: "t", Kind: "table", Columns: []dataexec.Column{{Name: "id", Type: "integer"}}},
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := src.Inspect(t.Context(), tc.table, tc.limit)
			if err != nil {
				t.Fatalf("Inspect: %v", err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("Inspect(%q, %d) mismatch (-want +got):\n%s", tc.table, tc.limit, diff)
			}
		})
	}
	for _, table := range []string{"nope", "private", "hidden.secret", "secret"} {
		t.Run("not found "+table, func(t *testing.T) {
			_, err := src.Inspect(t.Context(), table, 0)
			if got := askbi.ErrorCode(err); got != askbi.NotFound {
				t.Errorf("Inspect(%q) code = %q (%v), want %q", table, got, err, askbi.NotFound)
			}
		})
	}
}
