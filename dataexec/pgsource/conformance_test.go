package pgsource

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/jmoiron/sqlx"

	"github.com/askbi/askbi/dataexec"
	"github.com/askbi/askbi/dataexec/sourcetest"
	"github.com/askbi/askbi/internal/pgtest"
	"github.com/askbi/askbi/workspace"
)

// TestSourceConformance runs the Source suite on PostgreSQL. Each source
// gets a pool of its own whose connector counts the connections it opens,
// so Fixture.Ran sees whether anything reached the server.
func TestSourceConformance(t *testing.T) {
	dsn := pgtest.MustDatabase(t)
	admin := mustOpen(t, dsn, 2)
	mustExec(t, admin, `CREATE FUNCTION slow() RETURNS int LANGUAGE sql AS 'SELECT 1 FROM pg_sleep(600)'`)
	var blocks atomic.Int64
	sourcetest.Run(t, func(t *testing.T) (dataexec.Source, sourcetest.Fixture) {
		connector, err := connector(dsn)
		if err != nil {
			t.Fatal(err)
		}
		var dials atomic.Int64
		db := sqlx.NewDb(sql.OpenDB(countingConnector{connector, &dials}), "postgres")
		t.Cleanup(func() { db.Close() })
		src, err := New(db, nil)
		if err != nil {
			t.Fatal(err)
		}
		return src, sourcetest.Fixture{
			Rows: func(n int) dataexec.Query {
				return dataexec.Query{SQL: fmt.Sprintf("SELECT g AS id, 'row ' || g AS name FROM generate_series(1, %d) g ORDER BY g", n)}
			},
			Wide: func(n int) dataexec.Query { return dataexec.Query{SQL: fmt.Sprintf("SELECT repeat('x', %d) AS v", n)} },
			Kinds: func() dataexec.Query {
				return dataexec.Query{SQL: `SELECT NULL::int AS n, true AS b, 7::bigint AS i, 1.5::float8 AS f, 'text' AS s,
  1.50::numeric AS num, 'NaN'::numeric AS nan, now() AS ts, current_date AS d, '12:30'::time AS tm,
  '{"a": [1, "x", null, true, {"b": 2.5}]}'::jsonb AS j, '[1]'::json AS js, '\x01'::bytea AS by,
  ARRAY[1, 2] AS arr, 'a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11'::uuid AS u, interval '1 day' AS iv`}
			},
			Rejected: []dataexec.Query{
				{SQL: "DELETE FROM pg_class"},
				{SQL: "SELECT 1; SELECT 2"},
				{SQL: "SELECT pg_sleep(1)"},
				{SQL: "SELECT {{nope}}"},
				{SQL: "SELECT '{{x}}'", Variables: map[string]dataexec.VariableValue{"x": {Type: workspace.VarString, Value: "a"}}},
			},
			Ran: func() bool { return dials.Load() > 0 },
			Block: func() (dataexec.Query, func() bool) {
				marker := fmt.Sprintf("/* sourcetest block %d */", blocks.Add(1))
				return dataexec.Query{SQL: marker + " SELECT slow()"}, func() bool { return activeCount(t, admin, marker) > 0 }
			},
			Echo: func(refs ...string) dataexec.Query { return dataexec.Query{SQL: "SELECT " + strings.Join(refs, ", ")} },
		}
	})
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
