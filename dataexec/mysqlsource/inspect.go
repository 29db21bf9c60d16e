package mysqlsource

import (
	"context"

	"github.com/jmoiron/sqlx"

	"github.com/askbi/askbi"
	"github.com/askbi/askbi/dataexec"
)

// DefaultInspectLimit is the limit Inspect uses when given zero or less.
const DefaultInspectLimit = 100

// readableRelations selects the tables and views the connection's user
// may see, outside the system schemas: information_schema lists only
// those the user holds a privilege on.
const readableRelations = `
FROM information_schema.TABLES
WHERE TABLE_TYPE IN ('BASE TABLE', 'VIEW', 'SYSTEM VERSIONED')
  AND TABLE_SCHEMA NOT IN ('mysql', 'information_schema', 'performance_schema', 'sys')`

// Inspect lists, within limit, the tables and views the connection's
// user can read. With table set ("schema.name", or "name" in the
// connection's database) it returns that relation with the columns the
// user can read (also within limit), or NotFound. It runs like a query:
// read-only, within ctx's deadline, with the same Timeout and Unavailable
// errors.
func (s *Source) Inspect(ctx context.Context, table string, limit int) (_ []dataexec.Relation, err error) {
	defer askbi.Wrap(&err, "mysqlsource.Source.Inspect")
	if limit <= 0 {
		limit = DefaultInspectLimit
	}
	ctx, cancel := s.withDeadline(ctx)
	defer cancel()
	mode, err := s.sqlMode(ctx)
	if err != nil {
		return nil, err
	}
	var rels []dataexec.Relation
	err = s.session(ctx, mode, func(ctx context.Context, conn *sqlx.Conn, _ func()) (err error) {
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
	Schema string `db:"TABLE_SCHEMA"`
	Name   string `db:"TABLE_NAME"`
	Type   string `db:"TABLE_TYPE"`
}

func (r relationRow) relation() dataexec.Relation {
	kind := "table"
	if r.Type == "VIEW" {
		kind = "view"
	}
	return dataexec.Relation{Schema: r.Schema, Name: r.Name, Kind: kind}
}

func listRelations(ctx context.Context, conn *sqlx.Conn, limit int) ([]dataexec.Relation, error) {
	var rows []relationRow
	if err := conn.SelectContext(ctx, &rows, `SELECT TABLE_SCHEMA, TABLE_NAME, TABLE_TYPE `+readableRelations+`
ORDER BY TABLE_SCHEMA, TABLE_NAME LIMIT ?`, limit); err != nil {
		return nil, err
	}
	rels := make([]dataexec.Relation, len(rows))
	for i, r := range rows {
		rels[i] = r.relation()
	}
	return rels, nil
}

func describeRelation(ctx context.Context, conn *sqlx.Conn, table string, limit int) ([]dataexec.Relation, error) {
	// An exact "schema.name" wins over a relation of the connection's
	// database whose own name contains the dot.
	var rows []relationRow
	if err := conn.SelectContext(ctx, &rows, `SELECT TABLE_SCHEMA, TABLE_NAME, TABLE_TYPE `+readableRelations+`
  AND (CONCAT(TABLE_SCHEMA, '.', TABLE_NAME) = ? OR (TABLE_SCHEMA = DATABASE() AND TABLE_NAME = ?))
ORDER BY CONCAT(TABLE_SCHEMA, '.', TABLE_NAME) = ? DESC
LIMIT 1`, table, table, table); err != nil {
		return nil, err
	}
	if len(rows) == 0 {
		return nil, askbi.Errorf(askbi.NotFound, "table %q was not found or cannot be read; list the tables to see the readable ones", table)
	}
	rel := rows[0].relation()
	rel.Columns = []dataexec.Column{}
	if err := conn.SelectContext(ctx, &rel.Columns, `
SELECT COLUMN_NAME AS name, COLUMN_TYPE AS type
FROM information_schema.COLUMNS
WHERE TABLE_SCHEMA = ? AND TABLE_NAME = ?
ORDER BY ORDINAL_POSITION
LIMIT ?`, rel.Schema, rel.Name, limit); err != nil {
		return nil, err
	}
	return []dataexec.Relation{rel}, nil
}
