package mysqlsource

import (
	"database/sql"
	"errors"
	"strings"
	"testing"

	"github.com/go-sql-driver/mysql"
	"github.com/google/go-cmp/cmp"

	"github.com/askbi/askbi"
	"github.com/askbi/askbi/dataexec"
)

// TestSQLForReadOnlyUser checks that the user can read its database and
// nothing else, even when it talks to the server directly, without the
// guard; and that what it can still do without a privilege (SLEEP) is
// why the guard is needed.
func TestSQLForReadOnlyUser(t *testing.T) {
	w := mustWarehouse(t)
	mustExec(t, w.admin,
		`CREATE VIEW t_view AS SELECT id FROM t`,
		`CREATE FUNCTION f() RETURNS int NO SQL RETURN 1`,
		"CREATE DATABASE IF NOT EXISTS `"+w.name+"_other`",
		"CREATE TABLE `"+w.name+"_other`.secret (x int)")
	t.Cleanup(func() { mustExec(t, w.admin, "DROP DATABASE `"+w.name+"_other`") })
	// Made after the grants: readable through the database-wide grant.
	mustExec(t, w.admin, `CREATE TABLE later (y int)`)
	reader := mustOpen(t, w.reader, 1)
	held, err := w.admin.Connx(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	defer held.Close()
	var adminSession string
	if err := held.GetContext(t.Context(), &adminSession, "SELECT CONNECTION_ID()"); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		sql  string
		code uint16 // the server's error number; 0 for success
	}{
		{"select", "SELECT COUNT(*) FROM t", 0},
		{"select view", "SELECT COUNT(*) FROM t_view", 0},
		{"select table made later", "SELECT COUNT(*) FROM later", 0},
		{"no insert", "INSERT INTO t VALUES (9, 'z')", 1142},
		{"no update", "UPDATE t SET v = 'x'", 1142},
		{"no delete", "DELETE FROM t", 1142},
		{"no create", "CREATE TABLE x (a int)", 1142},
		{"no drop", "DROP TABLE t", 1142},
		{"no other database", "SELECT * FROM `" + w.name + "_other`.secret", 1142},
		{"no mysql schema", "SELECT * FROM mysql.user", 1142},
		{"no stored function", "SELECT f()", 1370},
		{"no file written", "SELECT * FROM t INTO OUTFILE '/tmp/askbi-reader-test'", 1227},
		{"no global setting", "SET GLOBAL max_connections = 1", 1227},
		{"no other session killed", "KILL " + adminSession, 1095},
		// No privilege is needed to sleep or lock: the guard refuses these.
		{"sleep needs no privilege", "SELECT SLEEP(0)", 0},
		{"get_lock needs no privilege", "SELECT GET_LOCK('askbi_reader_test', 0)", 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := reader.Exec(tc.sql)
			var got uint16
			if myErr, ok := errors.AsType[*mysql.MySQLError](err); ok {
				got = myErr.Number
			} else if err != nil {
				t.Fatalf("Exec: %v", err)
			}
			if got != tc.code {
				t.Errorf("Exec(%q) error %d (%v), want %d", tc.sql, got, err, tc.code)
			}
		})
	}
	// Without FILE, LOAD_FILE reads nothing.
	var file sql.NullString
	if err := reader.Get(&file, "SELECT LOAD_FILE('/etc/passwd')"); err != nil || file.Valid {
		t.Errorf("LOAD_FILE as the reader = %q, %v; want NULL", file.String, err)
	}
	var grants []string
	if err := reader.Select(&grants, "SHOW GRANTS"); err != nil {
		t.Fatal(err)
	}
	if len(grants) != 2 || !strings.HasPrefix(grants[0], "GRANT USAGE ON *.* TO") ||
		!strings.HasPrefix(grants[1], "GRANT SELECT ON `"+w.name+"`.* TO") {
		t.Errorf("the reader's grants: %q; want USAGE and SELECT on its database", grants)
	}
}

// TestSQLForReadOnlyUserQuoting: the statements quote whatever the names
// and password hold.
func TestSQLForReadOnlyUserQuoting(t *testing.T) {
	got := SQLForReadOnlyUser(`o'brien\`, "%", `p'w\`, "ware`house")
	want := []string{
		"SET SESSION sql_mode = REPLACE(@@SESSION.sql_mode, 'NO_BACKSLASH_ESCAPES', '')",
		`CREATE USER IF NOT EXISTS 'o''brien\\'@'%' IDENTIFIED BY 'p''w\\'`,
		`ALTER USER 'o''brien\\'@'%' IDENTIFIED BY 'p''w\\'`,
		`REVOKE ALL PRIVILEGES, GRANT OPTION FROM 'o''brien\\'@'%'`,
		"GRANT SELECT ON `ware``house`.* TO 'o''brien\\\\'@'%'",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("mismatch (-want +got):\n%s", diff)
	}
}

func TestInspect(t *testing.T) {
	w := mustWarehouse(t)
	mustExec(t, w.admin,
		`CREATE VIEW t_view AS SELECT id FROM t`,
		`CREATE TABLE `+"`a.b`"+` (z int)`,
		"CREATE DATABASE IF NOT EXISTS `"+w.name+"_other`",
		"CREATE TABLE `"+w.name+"_other`.secret (x int)")
	t.Cleanup(func() { mustExec(t, w.admin, "DROP DATABASE `"+w.name+"_other`") })
	src, _ := w.source(t, &Options{MaxConns: 2})
	tests := []struct {
		name  string
		table string
		limit int
		want  []dataexec.Relation
	}{
		{"list", "", 0, []dataexec.Relation{
			{Schema: w.name, Name: "a.b", Kind: "table"},
			{Schema: w.name, Name: "t", Kind: "table"},
			{Schema: w.name, Name: "t_view", Kind: "view"},
		}},
		{"list within limit", "", 1, []dataexec.Relation{{Schema: w.name, Name: "a.b", Kind: "table"}}},
		{"one by name", "t", 0, []dataexec.Relation{
			{Schema: w.name, Name: "t", Kind: "table", Columns: []dataexec.Column{{Name: "id", Type: "int(11)"}, {Name: "v", Type: "text"}}},
		}},
		{"one by qualified name", w.name + ".t_view", 0, []dataexec.Relation{
			{Schema: w.name, Name: "t_view", Kind: "view", Columns: []dataexec.Column{{Name: "id", Type: "int(11)"}}},
		}},
		{"a dot in the name", "a.b", 0, []dataexec.Relation{
			{Schema: w.name, Name: "a.b", Kind: "table", Columns: []dataexec.Column{{Name: "z", Type: "int(11)"}}},
		}},
		{"columns within limit", "t", 1, []dataexec.Relation{
			{Schema: w.name, Name: "t", Kind: "table", Columns: []dataexec.Column{{Name: "id", Type: "int(11)"}}},
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
	for _, table := range []string{"nope", "secret", w.name + "_other.secret", "mysql.user"} {
		t.Run("not found "+table, func(t *testing.T) {
			_, err := src.Inspect(t.Context(), table, 0)
			if got := askbi.ErrorCode(err); got != askbi.NotFound {
				t.Errorf("Inspect(%q) code = %q (%v), want %q", table, got, err, askbi.NotFound)
			}
		})
	}
}
