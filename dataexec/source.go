package dataexec

import (
	"context"
	"encoding/json"

	"github.com/askbi/askbi/workspace"
)

// Query is what a Source runs: one SQL statement (SQL sources) or one tool
// call (MCP sources), within the limits the Executor passes.
type Query struct {
	SQL       string          // for SQL sources
	Tool      string          // for MCP sources
	Arguments json.RawMessage // for MCP sources

	// MaxRows is the number of rows to return at most. A Source reads at most
	// MaxRows+1 so it can tell whether more rows existed, and pushes the cap
	// into the query where it can, so the database stops producing rows.
	MaxRows int
	// MaxBytes caps the estimated serialized (JSON) size of all returned
	// cells. A Source enforces it while reading and stops early.
	MaxBytes int64

	// Variables are the values of the request's declared variables by
	// name, validated and normalized by the Executor, defaults filled in.
	// SQL references them as {{name}}, as the request was written: only
	// the source knows its dialect's quoting, so a Source that can bind
	// them implements VariableBinder, and one that cannot answers
	// Unsupported for a query that has any. Nil when there are none, and
	// for tool calls, whose Arguments arrive with the values in place.
	Variables map[string]VariableValue
}

// VariableValue is one value of Query.Variables. Value is normalized for
// Type as the Executor resolves it: json.Number for VarNumber (a decimal
// such as "-2.5" or "1e3"), string for VarString (valid UTF-8, without NUL
// or backslashes) and VarDate ("YYYY-MM-DD"), bool for VarBoolean.
type VariableValue struct {
	Type  workspace.VariableType
	Value any
}

// Table is the raw, unmapped result of a Source.
//
// Cells hold only JSON-friendly values: nil, bool, int64, float64, string,
// json.Number, time.Time, or decoded JSON (map[string]any, []any).
type Table struct {
	Columns   []string
	Rows      [][]any
	Truncated bool
	// TruncatedReason is TruncatedRows or TruncatedBytes when Truncated.
	TruncatedReason string
}

// Reasons a result was truncated.
const (
	TruncatedRows  = "row_cap"
	TruncatedBytes = "byte_cap"
)

// Source runs bounded, read-only queries against one connection.
//
// Query returns askbi errors: InvalidArgument when the request is rejected
// before it runs (the message says what to change), Timeout when ctx's
// deadline passed, TooLarge when a single row alone exceeds MaxBytes,
// Unavailable when the backend cannot be reached, Unsupported for a query
// with Variables when the source is not a [VariableBinder]. A cancelled ctx
// stops the backend work at once, and Query returns an error that is not
// Internal. Implementations are safe for concurrent use; sourcetest.Run
// proves one.
type Source interface {
	Query(ctx context.Context, q Query) (*Table, error)
}

// VariableBinder is implemented by SQL sources that bind a query's
// variables: each {{name}} reference in Query.SQL stands for the value
// Query.Variables[name], sent apart from the SQL text or quoted by the
// rules of the source's dialect. It is optional; find it with a type
// assertion. Without it, the Executor answers Unsupported for an SQL
// request that declares variables or holds a {{name}}, rather than run it
// as written.
//
// Query of a VariableBinder answers InvalidArgument, before it runs
// anything, for a reference References rejects, a reference to a name
// Variables lacks, or a value that does not have the shape its type says.
type VariableBinder interface {
	// References returns the names that sql references as {{name}}, in
	// order and with repeats. It returns InvalidArgument, with a message
	// that says what to change, for a reference that stands where it
	// cannot be bound: inside a string, a quoted name or a comment. The
	// Executor calls it to reject a request before any source work.
	References(sql string) ([]string, error)
}

// Inspector is implemented by sources that can describe what the
// connection's credentials may read. It is optional; find it with a type
// assertion.
type Inspector interface {
	// Inspect lists, within limit, the relations the connection may read.
	// With table empty it lists relations without columns; with table set
	// ("schema.name" or "name") it returns that one relation with columns,
	// or NotFound.
	Inspect(ctx context.Context, table string, limit int) ([]Relation, error)
}

// Relation is a table or view a source can read.
type Relation struct {
	Schema  string   `json:"schema"`
	Name    string   `json:"name"`
	Kind    string   `json:"kind"` // "table", "view", "materialized_view"
	Columns []Column `json:"columns,omitempty"`
}

// Column is one column of a Relation.
type Column struct {
	Name string `json:"name"`
	Type string `json:"type"`
}
