package dataexec

import (
	"context"
	"strings"

	"github.com/askbi/askbi"
	"github.com/askbi/askbi/workspace"
)

// Sources finds the Source that runs queries for a connection.
// Implementations must be safe for concurrent use.
type Sources interface {
	// Source returns the Source for conn. It returns Unsupported when conn's
	// type has no source, and may return Unavailable when the source cannot
	// be opened.
	Source(ctx context.Context, conn workspace.Connection) (Source, error)
}

// SourceMap is a Sources keyed by connection ID. Do not change it while an
// Executor uses it.
type SourceMap map[string]Source

// Source implements Sources.
func (m SourceMap) Source(_ context.Context, conn workspace.Connection) (Source, error) {
	if s, ok := m[conn.ID]; ok {
		return s, nil
	}
	return nil, askbi.Errorf(askbi.Unsupported, "this connection's source type is not supported here")
}

// TableSource is an in-memory Source that answers each query with a fixed
// table, found by the query's SQL (surrounding space ignored) or, when SQL
// is empty, by its Tool. It honours MaxRows and MaxBytes like a real
// source. It cannot bind variables (it is not a [VariableBinder]). It is
// safe for concurrent use; do not change the tables while it is in use.
type TableSource struct {
	tables map[string]*Table
}

// NewTableSource returns a source serving tables, keyed by SQL text or tool
// name.
func NewTableSource(tables map[string]*Table) *TableSource {
	return &TableSource{tables: tables}
}

// Query implements Source. It returns InvalidArgument for a query it has
// no table for, TooLarge when the first row alone exceeds MaxBytes, and
// Unsupported for a query with Variables.
func (s *TableSource) Query(ctx context.Context, q Query) (*Table, error) {
	if err := ctx.Err(); err != nil {
		return nil, askbi.Errorf(askbi.Timeout, "the query was cancelled")
	}
	if len(q.Variables) > 0 {
		return nil, askbi.Errorf(askbi.Unsupported, "the in-memory source serves fixed tables and cannot bind variables")
	}
	key := strings.TrimSpace(q.SQL)
	if key == "" {
		key = q.Tool
	}
	t, ok := s.tables[key]
	if !ok {
		return nil, askbi.Errorf(askbi.InvalidArgument, "the in-memory source has no table for this query")
	}
	out := &Table{Columns: t.Columns, Truncated: t.Truncated, TruncatedReason: t.TruncatedReason}
	var size int64
	for i, row := range t.Rows {
		if q.MaxRows > 0 && i == q.MaxRows {
			out.Truncated, out.TruncatedReason = true, TruncatedRows
			break
		}
		n := rowSize(row)
		if q.MaxBytes > 0 && size+n > q.MaxBytes {
			if i == 0 {
				return nil, askbi.Errorf(askbi.TooLarge, "a single row exceeds the result size limit")
			}
			out.Truncated, out.TruncatedReason = true, TruncatedBytes
			break
		}
		size += n
		out.Rows = append(out.Rows, row)
	}
	return out, nil
}
