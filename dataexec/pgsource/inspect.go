package pgsource

import (
	"context"

	"github.com/jmoiron/sqlx"

	"github.com/askbi/askbi"
	"github.com/askbi/askbi/dataexec"
)

// DefaultInspectLimit is the limit Inspect uses when given zero or less.
const DefaultInspectLimit = 100

// readableRelations selects the tables, views, materialized views and
// foreign tables the current role may read, outside the system schemas.
// Partitions are left out: their parent is listed.
const readableRelations = `
FROM pg_catalog.pg_class c
JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
WHERE c.relkind IN ('r', 'p', 'v', 'm', 'f')
  AND NOT c.relispartition
  AND n.nspname <> 'information_schema' AND n.nspname NOT LIKE 'pg\_%'
  AND pg_catalog.has_schema_privilege(n.oid, 'USAGE')
  AND pg_catalog.has_any_column_privilege(c.oid, 'SELECT')`

// Inspect lists, within limit, the relations the connection's role can
// SELECT from. With table set ("schema.name", or "name" when the relation is
// on the search path) it returns that relation with the columns the role can
// read (also within limit), or NotFound. It runs like a query: read-only,
// within ctx's deadline, with the same Timeout and Unavailable errors.
func (s *Source) Inspect(ctx context.Context, table string, limit int) (_ []dataexec.Relation, err error) {
	defer askbi.Wrap(&err, "pgsource.Source.Inspect")
	if limit <= 0 {
		limit = DefaultInspectLimit
	}
	var rels []dataexec.Relation
	err = s.session(ctx, func(ctx context.Context, conn *sqlx.Conn) (err error) {
		if table == "" {
			rels, err = listRelations(ctx, conn, limit)
		} else {
			rels, err = describeRelation(ctx, conn, table, limit)
		}
		return err
	})
	if err != nil {
		return nil, err
	}
	return rels, nil
}

type relationRow struct {
	OID    uint32 `db:"oid"`
	Schema string `db:"nspname"`
	Name   string `db:"relname"`
	Kind   string `db:"relkind"`
}

func (r relationRow) relation() dataexec.Relation {
	kind := "table"
	switch r.Kind {
	case "v":
		kind = "view"
	case "m":
		kind = "materialized_view"
	}
	return dataexec.Relation{Schema: r.Schema, Name: r.Name, Kind: kind}
}

func listRelations(ctx context.Context, conn *sqlx.Conn, limit int) ([]dataexec.Relation, error) {
	var rows []relationRow
	if err := conn.SelectContext(ctx, &rows, `SELECT c.oid, n.nspname, c.relname, c.relkind::text `+
		readableRelations+` ORDER BY n.nspname, c.relname LIMIT $1`, limit); err != nil {
		return nil, err
	}
	rels := make([]dataexec.Relation, len(rows))
	for i, r := range rows {
		rels[i] = r.relation()
	}
	return rels, nil
}

func describeRelation(ctx context.Context, conn *sqlx.Conn, table string, limit int) ([]dataexec.Relation, error) {
	// An exact "schema.name" wins over a visible relation whose own name
	// contains the dot.
	var rows []relationRow
	if err := conn.SelectContext(ctx, &rows, `SELECT c.oid, n.nspname, c.relname, c.relkind::text `+
		readableRelations+`
  AND (n.nspname || '.' || c.relname = $1 OR (c.relname = $1 AND pg_catalog.pg_table_is_visible(c.oid)))
ORDER BY n.nspname || '.' || c.relname = $1 DESC
LIMIT 1`, table); err != nil {
		return nil, err
	}
	if len(rows) == 0 {
		return nil, askbi.Errorf(askbi.NotFound, "table %q was not found or cannot be read; list the tables to see the readable ones", table)
	}
	rel := rows[0].relation()
	rel.Columns = []dataexec.Column{}
	if err := conn.SelectContext(ctx, &rel.Columns, `
SELECT a.attname AS name, pg_catalog.format_type(a.atttypid, a.atttypmod) AS type
FROM pg_catalog.pg_attribute a
WHERE a.attrelid = $1 AND a.attnum > 0 AND NOT a.attisdropped
  AND pg_catalog.has_column_privilege(a.attrelid, a.attnum, 'SELECT')
ORDER BY a.attnum
LIMIT $2`, rows[0].OID, limit); err != nil {
		return nil, err
	}
	return []dataexec.Relation{rel}, nil
}
