package mysqlsource

import (
	"fmt"
	"strings"
	"testing"

	"github.com/askbi/askbi/dataexec"
	"github.com/askbi/askbi/dataexec/sourcetest"
	"github.com/askbi/askbi/internal/mysqltest"
	"github.com/askbi/askbi/workspace"
)

// TestSourceConformance runs the Source suite on the MariaDB (or, with
// ASKBI_TEST_MYSQL_DSN, MySQL) the harness gives, as a SELECT-only user.
// Each source gets a pool of its own whose connector counts the
// connections it opens, so Fixture.Ran sees whether anything reached the
// server; the sql_mode is given (the server's), so that nothing reaches
// it before the guard.
func TestSourceConformance(t *testing.T) {
	t.Logf("server: %s", mysqltest.Version(t))
	w := mustWarehouse(t)
	w.hang(t)
	var mode string
	if err := w.admin.Get(&mode, `SELECT @@GLOBAL.sql_mode`); err != nil {
		t.Fatal(err)
	}
	sourcetest.Run(t, func(t *testing.T) (dataexec.Source, sourcetest.Fixture) {
		src, dials := w.source(t, &Options{SQLMode: mode})
		return src, sourcetest.Fixture{
			Rows: func(n int) dataexec.Query {
				return dataexec.Query{SQL: fmt.Sprintf(`WITH RECURSIVE g(id) AS (SELECT CAST(1 AS SIGNED) UNION ALL SELECT id + 1 FROM g WHERE id < %d)
SELECT id, CONCAT('row ', id) AS name FROM g WHERE id <= %d ORDER BY id`, n, n)}
			},
			Wide: func(n int) dataexec.Query { return dataexec.Query{SQL: fmt.Sprintf("SELECT REPEAT('x', %d) AS v", n)} },
			Kinds: func() dataexec.Query {
				return dataexec.Query{SQL: `SELECT NULL AS n, TRUE AS b, CAST(7 AS SIGNED) AS i, 1.5e0 AS f, 'text' AS s,
  CAST(1.50 AS DECIMAL(5, 2)) AS num, NOW(6) AS ts, CURRENT_DATE AS d, CAST('12:30' AS TIME) AS tm,
  JSON_OBJECT('a', JSON_ARRAY(1, 'x', NULL)) AS j, X'01' AS bin, CAST(1.5 AS FLOAT) AS fl, b'101' AS bits,
  CAST(18446744073709551615 AS UNSIGNED) AS u, CAST(-1 AS UNSIGNED) AS wrapped, t.v AS txt FROM t LIMIT 1`}
			},
			Rejected: []dataexec.Query{
				{SQL: "DELETE FROM t"},
				{SQL: "SELECT 1; SELECT 2"},
				{SQL: "SELECT SLEEP(1)"},
				{SQL: "SELECT * FROM t INTO OUTFILE '/tmp/askbi'"},
				{SQL: "SELECT 1 /*!, SLEEP(1) */"},
				{SQL: "SELECT {{nope}}"},
				{SQL: "SELECT '{{x}}'", Variables: map[string]dataexec.VariableValue{"x": {Type: workspace.VarString, Value: "a"}}},
			},
			Ran: func() bool { return dials.Load() > 0 },
			// The suite runs one blocking query at a time.
			Block: func() (dataexec.Query, func() bool) {
				return dataexec.Query{SQL: "SELECT hang()"}, func() bool { return w.hanging(t) > 0 }
			},
			Echo: func(refs ...string) dataexec.Query { return dataexec.Query{SQL: "SELECT " + strings.Join(refs, ", ")} },
			True: int64(1),
		}
	})
}
