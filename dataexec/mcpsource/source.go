package mcpsource

import (
	"bytes"
	"context"
	"encoding/json"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/askbi/askbi"
	"github.com/askbi/askbi/dataexec"
	"github.com/askbi/askbi/workspace"
)

// CallResult is a remote tool's answer: its text and structured content.
// Both are untrusted data.
type CallResult struct {
	Text       string `json:"text,omitempty"`
	Structured any    `json:"structured,omitempty"`
}

// ResultText is the text content of a tool's answer, its parts joined
// by newlines.
func ResultText(res *mcp.CallToolResult) string {
	var b strings.Builder
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			if b.Len() > 0 {
				b.WriteByte('\n')
			}
			b.WriteString(tc.Text)
		}
	}
	return b.String()
}

// TypeMCP is the workspace.Connection.Type of remote MCP connections.
const TypeMCP = "mcp"

// toolName is MCP's rule for tool names (1 to 128 of A-Z a-z 0-9 _ - .).
var toolName = regexp.MustCompile(`^[A-Za-z0-9_.-]{1,128}$`)

// ValidToolName reports whether s is a tool name MCP allows.
func ValidToolName(s string) bool { return toolName.MatchString(s) }

// Tools is what a Source needs of the code that calls a connection's
// approved tools (package connections/remote's Tools is one).
type Tools interface {
	// RunReadOnly runs connection connID's tool with args for a dataset,
	// once every check passed: the tool approved and read-only, its
	// definition checked against a fresh listing, args matching its
	// input schema. The answer is capped by the service.
	RunReadOnly(ctx context.Context, connID, tool string, args json.RawMessage) (*mcp.CallToolResult, error)
	// ReadOnlyTools lists the connection's approved read-only tools.
	ReadOnlyTools(ctx context.Context, connID string) ([]ToolSpec, error)
}

// ToolSpec is one tool a dataset may use: its name and input schema.
type ToolSpec struct {
	Name        string
	InputSchema json.RawMessage
}

// Sources returns a [dataexec.Sources] that serves MCP connections
// (workspace.Connection.Type "mcp") from tools and hands every other
// connection to next (nil: Unsupported).
func Sources(tools Tools, next dataexec.Sources) dataexec.Sources { return sources{tools, next} }

type sources struct {
	tools Tools
	next  dataexec.Sources
}

func (ss sources) Source(ctx context.Context, conn workspace.Connection) (dataexec.Source, error) {
	if conn.Type == TypeMCP {
		return NewSource(ss.tools, conn.ID), nil
	}
	if ss.next == nil {
		return nil, askbi.Errorf(askbi.Unsupported, "this connection's source type is not supported here")
	}
	return ss.next.Source(ctx, conn)
}

// Source is the [dataexec.Source] of one MCP connection: a dataset's
// request names an approved read-only tool and its arguments, and the
// tool's structured content (or text that is JSON) becomes rows. It is
// also a [dataexec.Inspector] listing the approved read-only tools. It is
// not a [dataexec.VariableBinder]: the executor puts variables into the
// arguments. It is safe for concurrent use.
type Source struct {
	tools  Tools
	connID string
}

// NewSource returns the Source of connection connID (the executor's
// deadline bounds each call).
func NewSource(tools Tools, connID string) *Source { return &Source{tools: tools, connID: connID} }

var (
	_ dataexec.Source    = (*Source)(nil)
	_ dataexec.Inspector = (*Source)(nil)
)

// Query implements [dataexec.Source]. Before anything is sent it answers
// InvalidArgument for SQL or a missing or malformed tool name, and
// Unsupported for variables; then the Tools' checks (remote.Tools: a tool
// that is not approved, removed or changed is Unavailable, one that is
// not read-only or arguments off its schema InvalidArgument). After the
// call: InvalidResult for an answer with only text (not chart-ready
// data: it asks for named columns), TooLarge for a row over MaxBytes,
// and the call's failures (Timeout, Forbidden, Unavailable, TooLarge).
func (src *Source) Query(ctx context.Context, q dataexec.Query) (*dataexec.Table, error) {
	if err := ctx.Err(); err != nil {
		return nil, dataexec.Fail(dataexec.FailTimeout, askbi.Timeout, err, "the request was cancelled before it ran")
	}
	if len(q.Variables) > 0 {
		return nil, askbi.Errorf(askbi.Unsupported, "an MCP source takes variables in the tool arguments, not as bound variables")
	}
	invalid := func(format string, args ...any) error {
		return dataexec.Fail(dataexec.FailInvalidRequest, askbi.InvalidArgument, nil, format, args...)
	}
	switch {
	case q.SQL != "":
		return nil, invalid("sql: this is an MCP connection; give a tool and its arguments")
	case !ValidToolName(q.Tool):
		return nil, invalid("tool: must be the name of one of the connection's approved tools")
	}
	res, err := src.tools.RunReadOnly(ctx, src.connID, q.Tool, q.Arguments)
	if err != nil {
		return nil, err
	}
	return toTable(res, q.MaxRows, q.MaxBytes)
}

// toTable turns a tool's answer into rows: its structured content, or
// else its text when that is JSON. The rows are the answer itself when it
// is an array, the one array an object holds, {"columns", "rows"}, or the
// object alone as one row. An object row gives one column per key
// (sorted), an array row columns column_0, column_1, ..., a scalar the
// column "value". Text that is not JSON is InvalidResult: response text
// is not chart-ready data, and is never made a one-cell table.
func toTable(res *mcp.CallToolResult, maxRows int, maxBytes int64) (*dataexec.Table, error) {
	var raw []byte
	if res.StructuredContent != nil {
		raw, _ = json.Marshal(res.StructuredContent)
	} else {
		raw = []byte(strings.TrimSpace(ResultText(res)))
	}
	var v any
	d := json.NewDecoder(bytes.NewReader(raw))
	d.UseNumber()
	err := d.Decode(&v)
	_, isObj := v.(map[string]any)
	_, isArr := v.([]any)
	if err != nil || d.More() || !isObj && !isArr {
		return nil, dataexec.Fail(dataexec.FailInvalidResult, askbi.InvalidResult, nil,
			"the tool returned only text, which is not chart-ready data; use a tool or arguments that return named columns, then set output fields")
	}
	rows, columns := rowsOf(v)
	t := &dataexec.Table{Columns: columns}
	index := map[string]int{}
	for i, c := range columns {
		index[c] = i
	}
	size := int64(2)
	for i, r := range rows {
		if maxRows > 0 && i == maxRows {
			t.Truncated, t.TruncatedReason = true, dataexec.TruncatedRows
			break
		}
		row := make([]any, len(t.Columns))
		switch x := r.(type) {
		case map[string]any:
			for k, e := range x {
				j, ok := index[k]
				if !ok {
					j = len(t.Columns)
					index[k] = j
					t.Columns = append(t.Columns, k)
					row = append(row, nil)
				}
				row[j] = e
			}
		case []any:
			for j, e := range x {
				for j >= len(t.Columns) {
					name := "column_" + strconv.Itoa(len(t.Columns))
					index[name] = len(t.Columns)
					t.Columns = append(t.Columns, name)
					row = append(row, nil)
				}
				row[j] = e
			}
		default:
			row[index["value"]] = x
		}
		b, _ := json.Marshal(row)
		n := int64(len(b)) + 1
		if maxBytes > 0 && size+n > maxBytes {
			if i == 0 {
				return nil, askbi.Errorf(askbi.TooLarge, "a single row of the tool's answer exceeds the result size limit")
			}
			t.Truncated, t.TruncatedReason = true, dataexec.TruncatedBytes
			break
		}
		size += n
		t.Rows = append(t.Rows, row)
	}
	for i := range t.Rows {
		for len(t.Rows[i]) < len(t.Columns) {
			t.Rows[i] = append(t.Rows[i], nil)
		}
	}
	if t.Rows == nil {
		t.Rows = [][]any{}
	}
	return t, nil
}

// Table returns r's structured content as rows, read the way a dataset on
// the tool reads them (see toTable), with no row or size cap: how Ask
// summarises a remote answer for a model that may not see its rows. An
// answer without structured content, or whose content is no object or
// array, is InvalidResult.
func (r CallResult) Table() (*dataexec.Table, error) {
	if r.Structured == nil {
		return nil, askbi.Errorf(askbi.InvalidResult, "the answer has no structured content")
	}
	return toTable(&mcp.CallToolResult{StructuredContent: r.Structured}, 0, 0)
}

// rowsOf finds the rows of an answer, and the columns known up front.
func rowsOf(v any) ([]any, []string) {
	switch x := v.(type) {
	case []any:
		return x, firstColumns(x)
	case map[string]any:
		if cols, ok := x["columns"].([]any); ok {
			if rows, ok := x["rows"].([]any); ok {
				names := make([]string, 0, len(cols))
				for _, c := range cols {
					if s, ok := c.(string); ok {
						names = append(names, s)
					}
				}
				if len(names) == len(cols) {
					out := make([]any, len(rows))
					for i, r := range rows {
						if arr, ok := r.([]any); ok {
							m := map[string]any{}
							for j, e := range arr {
								if j < len(names) {
									m[names[j]] = e
								}
							}
							out[i] = m
						} else {
							out[i] = r
						}
					}
					return out, names
				}
			}
		}
		var arrays []string
		for k, e := range x {
			if _, ok := e.([]any); ok {
				arrays = append(arrays, k)
			}
		}
		if len(arrays) == 1 {
			rows := x[arrays[0]].([]any)
			return rows, firstColumns(rows)
		}
		return []any{x}, firstColumns([]any{x})
	}
	return nil, nil
}

// firstColumns are the sorted keys of the first row when it is an
// object, or "value" for scalar rows.
func firstColumns(rows []any) []string {
	if len(rows) == 0 {
		return []string{}
	}
	switch r := rows[0].(type) {
	case map[string]any:
		keys := make([]string, 0, len(r))
		for k := range r {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		return keys
	case []any:
		return []string{}
	}
	return []string{"value"}
}

// Inspect implements [dataexec.Inspector]: the connection's usable
// read-only tools, kind "mcp_tool", with their arguments (input schema
// properties) as columns; with table set, that one tool or NotFound.
func (src *Source) Inspect(ctx context.Context, table string, limit int) ([]dataexec.Relation, error) {
	tools, err := src.tools.ReadOnlyTools(ctx, src.connID)
	if err != nil {
		return nil, err
	}
	var out []dataexec.Relation
	for _, t := range tools {
		if table != "" && t.Name != table {
			continue
		}
		out = append(out, dataexec.Relation{Name: t.Name, Kind: "mcp_tool", Columns: schemaColumns(t.InputSchema)})
		if len(out) == limit {
			break
		}
	}
	if table != "" && len(out) == 0 {
		name := []rune(table)
		if len(name) > 128 {
			name = append(name[:128], '…')
		}
		return nil, askbi.Errorf(askbi.NotFound, "no approved read-only tool %s", string(name))
	}
	return out, nil
}

// schemaColumns lists an input schema's properties as name and type.
func schemaColumns(schema json.RawMessage) []dataexec.Column {
	var s struct {
		Properties map[string]struct {
			Type any `json:"type"`
		} `json:"properties"`
	}
	_ = json.Unmarshal(schema, &s)
	cols := []dataexec.Column{}
	for name, p := range s.Properties {
		typ, _ := p.Type.(string)
		cols = append(cols, dataexec.Column{Name: name, Type: typ})
	}
	slices.SortFunc(cols, func(a, b dataexec.Column) int { return strings.Compare(a.Name, b.Name) })
	return cols
}
