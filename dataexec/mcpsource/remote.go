package mcpsource

import (
	"bytes"
	"context"
	"encoding/json"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/askbi/askbi"
	"github.com/askbi/askbi/access"
	"github.com/askbi/askbi/dataexec"
)

// ApprovedTool is one usable remote tool of an active connection, as Ask
// offers it to the model.
type ApprovedTool struct {
	ConnectionID   string
	ConnectionName string
	// ModelName is <connection>__<tool>, sanitized to
	// ^[a-zA-Z0-9_-]{1,64}$, deterministic and unique in the team.
	ModelName string
	Tool      Tool
}

// ApprovedTools returns the usable tools of the active connections of
// p's team, with their model-facing names, and a channel that is closed
// at the next change of the team's connections or approvals made through
// this Service. A turn that offers these tools stops when it closes.
//
// The channel sees changes of this process only. A change made by
// another process sharing the store still takes effect on the next call
// (Call re-reads the approval from the store before every call), but a
// running turn there is not stopped.
func (s *Service) ApprovedTools(ctx context.Context, p access.Principal) ([]ApprovedTool, <-chan struct{}, error) {
	live, err := s.begin(ctx, p, access.RightRead, access.Team(p.TeamID))
	if err != nil {
		return nil, nil, err
	}
	changes := s.Changes(live.TeamID) // before reading, so no change is missed
	sts, err := s.store.List(ctx, live.TeamID)
	if err != nil {
		return nil, nil, err
	}
	var out []ApprovedTool
	for _, st := range sts {
		if !st.ready() {
			continue
		}
		for _, t := range st.Tools {
			if t.Usable() {
				out = append(out, ApprovedTool{ConnectionID: st.ID, ConnectionName: st.Name, Tool: t})
			}
		}
	}
	modelNames(out)
	slices.SortFunc(out, func(a, b ApprovedTool) int { return strings.Compare(a.ModelName, b.ModelName) })
	return out, changes, nil
}

// CallResult is a remote tool's answer: its text and structured content.
// Both are untrusted data.
type CallResult struct {
	Text       string `json:"text,omitempty"`
	Structured any    `json:"structured,omitempty"`
}

// Call runs tool of connection connID for p, when the tool is still
// usable and its Fingerprint is still fp (what the caller offered, and an
// approval of the call bound): a tool turned off, removed, or changed in
// what it may do since is Unavailable, and nothing is sent. The tool's
// definition is checked against a listing no older than
// Options.ListingMaxAge (see there): a widening change on the server
// turns it off and the call is Unavailable ("needs approval again"); a
// listing that fails changes nothing and the call fails without running
// (Timeout, Forbidden for sign-in or access, else Unavailable, to try
// again). The request carries only the connection's own token, never p's
// credentials. Errors are the safe failure kinds (Timeout, TooLarge,
// Forbidden for sign-in or access, Unavailable); a tool that reports an
// error is Unavailable, its text not shown.
func (s *Service) Call(ctx context.Context, p access.Principal, connID, tool, fp string, args json.RawMessage) (_ *CallResult, err error) {
	target := access.Entity{Type: access.TypeConnection, ID: connID}
	details := map[string]string{"tool": capRunes(tool, 128), "via": "ask"}
	defer s.audit.Track(ctx, p, ActionRemoteCall, &target, details)(&err)
	_, st, err := s.load(ctx, p, connID, access.RightRead)
	if askbi.ErrorCode(err) == askbi.NotFound {
		return nil, dataexec.Fail(dataexec.FailUnavailableTool, askbi.Unavailable, err, "the connection of this tool no longer exists")
	}
	if err != nil {
		return nil, err
	}
	target = ref(st.Connection)
	if st.Auth == AuthOAuth && !st.HasToken {
		return nil, errSignInFirst(st.Name)
	}
	usable := func(st State) error {
		t, ok := st.Tool(tool)
		if ok && t.State() == StateReapprove {
			return errReapprove(t)
		}
		if !ok || !st.Active || !t.Usable() || t.Fingerprint() != fp {
			return dataexec.Fail(dataexec.FailUnavailableTool, askbi.Unavailable, nil, "this tool is no longer approved for use; an admin can allow it again on the connection")
		}
		return nil
	}
	if err := usable(st); err != nil {
		return nil, err
	}
	st, listed, err := s.fresh(ctx, st, tool)
	if listed {
		details["listed"] = "true"
	}
	if err != nil {
		return nil, err
	}
	if err := usable(st); err != nil {
		return nil, err
	}
	t, _ := st.Tool(tool)
	ctx, cancel := context.WithTimeout(ctx, s.o.CallTimeout)
	defer cancel()
	res, err := s.call(ctx, st, t.Name, args, s.o.MaxResultBytes)
	if err != nil {
		return nil, err
	}
	out := &CallResult{Text: resultText(res)}
	if res.StructuredContent != nil {
		out.Structured = res.StructuredContent
	}
	return out, nil
}

// call opens a session and calls one tool.
func (s *Service) call(ctx context.Context, st State, tool string, args json.RawMessage, limit int64) (*mcp.CallToolResult, error) {
	cred, err := s.credential(ctx, st)
	if err != nil {
		return nil, err
	}
	se, err := s.connect(ctx, st.URL, cred, limit)
	if err != nil {
		return nil, err
	}
	res, err := se.callTool(ctx, tool, args)
	se.close()
	if se.listChanged.Load() {
		s.markStale(ctx, st.ID)
	}
	if err != nil {
		return nil, err
	}
	if res.IsError {
		return nil, dataexec.Fail(dataexec.FailInvalidRequest, askbi.Unavailable, nil,
			"the remote tool reported an error (its details are not shown); check the arguments")
	}
	return res, nil
}

// fresh returns st with a tool listing no older than ListingMaxAge:
// when the last one is older, or the server said its list changed since,
// it lists the tools again and merges them under the connection's lock
// (Discover's rules: approvals kept, a widening change turns a tool off
// until it is approved again), publishing the change and stopping the
// turns that use the team's tools. listed reports whether it listed. A
// listing that fails changes nothing (nothing is turned off for a server
// that is down) and is the call's failure: timeouts, sign-in and access
// failures as they are, anything else Unavailable, to try again.
func (s *Service) fresh(ctx context.Context, st State, tool string) (_ State, listed bool, err error) {
	if !st.Discovery.Stale && !st.Discovery.At.IsZero() && s.o.Now().Sub(st.Discovery.At) <= s.o.ListingMaxAge {
		return st, false, nil
	}
	defer func() {
		if err != nil {
			err = listingFailed(err, tool)
		}
	}()
	l, err := s.discover(ctx, st, st.ToolFocus)
	usable := 0
	if err == nil {
		usable, err = usableOf(l)
	}
	if err != nil {
		return State{}, true, err
	}
	var changed bool
	out, err := s.store.Update(ctx, st.ID, func(cur *State) error {
		if cur.URL != st.URL || !cur.ready() {
			return askbi.Errorf(askbi.Conflict, "the connection changed while its tools were listed")
		}
		changed = s.applyDiscovery(cur, l, usable, s.o.Now().UTC())
		return nil
	})
	if err != nil {
		return State{}, true, err
	}
	s.publish(ctx, out.Connection)
	if changed {
		s.notify(out.TeamID)
	}
	return out, true, nil
}

// listingFailed is a call's failure when the tool listing it needed
// failed: nothing ran.
func listingFailed(err error, tool string) error {
	kind, _ := dataexec.FailureOf(err)
	if askbi.ErrorCode(err) == askbi.Timeout || kind == dataexec.FailSignIn || kind == dataexec.FailAccess {
		return err
	}
	return dataexec.Fail(dataexec.FailTimeout, askbi.Unavailable, err,
		"the MCP server's current definition of %s could not be checked before the call, so nothing ran; try again", capRunes(tool, 128))
}

// errReapprove is the failure of a call of a tool that a widening change
// on the server turned off.
func errReapprove(t *Tool) error {
	return dataexec.Fail(dataexec.FailUnavailableTool, askbi.Unavailable, nil,
		"%s changed on the MCP server (%s) and needs approval again; an admin can approve it on the connection", t.Name, t.Access.Reapprove)
}

// markStale records that the server of connection id said its tool list
// changed: the next call lists again.
func (s *Service) markStale(ctx context.Context, id string) {
	s.updateQuietly(ctx, id, "mark the tool listing stale", func(st *State) error {
		st.Discovery.Stale = true
		return nil
	})
}

func resultText(res *mcp.CallToolResult) string {
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

// Sources returns a dataexec.Sources that serves MCP connections
// (dataexec.Connection.Type "mcp") from this service and hands every
// other connection to next (nil: Unsupported).
func (s *Service) Sources(next dataexec.Sources) dataexec.Sources { return sources{s, next} }

type sources struct {
	s    *Service
	next dataexec.Sources
}

func (ss sources) Source(ctx context.Context, conn dataexec.Connection) (dataexec.Source, error) {
	if conn.Type == TypeMCP {
		return &Source{s: ss.s, connID: conn.ID}, nil
	}
	if ss.next == nil {
		return nil, askbi.Errorf(askbi.Unsupported, "this connection's source type is not supported here")
	}
	return ss.next.Source(ctx, conn)
}

// Source is the dataexec.Source of one MCP connection: a dataset's
// request names an approved read-only tool and its arguments, and the
// tool's structured content (or text that is JSON) becomes rows. It is
// also a dataexec.Inspector listing the approved read-only tools. It is
// not a dataexec.VariableBinder: the executor puts variables into the
// arguments. It is safe for concurrent use.
type Source struct {
	s      *Service
	connID string
}

// NewSource returns the Source of connection connID (the executor's
// deadline bounds each call).
func (s *Service) NewSource(connID string) *Source { return &Source{s: s, connID: connID} }

var (
	_ dataexec.Source    = (*Source)(nil)
	_ dataexec.Inspector = (*Source)(nil)
)

// Query implements dataexec.Source. Before anything is sent it answers
// InvalidArgument for SQL, a missing or malformed tool name, a tool that
// is not read-only, or arguments that do not match the tool's input
// schema; Unavailable (failure kind unavailable_tool) for a tool that is
// not approved, removed or changed (also by a change found when the
// tool's definition is checked against a listing no older than
// Options.ListingMaxAge, as Call does: "needs approval again"; a listing
// that fails is Call's failure too); Unsupported for variables. After the
// call: InvalidResult for an answer with only text (not chart-ready
// data: it asks for named columns), TooLarge for a row over MaxBytes or a
// response over the service's cap, Timeout, Forbidden (sign-in, access),
// Unavailable.
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
	case !remoteName.MatchString(q.Tool):
		return nil, invalid("tool: must be the name of one of the connection's approved tools")
	}
	st, err := src.s.store.Get(ctx, src.connID)
	if askbi.ErrorCode(err) == askbi.NotFound {
		return nil, dataexec.Fail(dataexec.FailUnavailableTool, askbi.Unavailable, err, "the connection no longer exists")
	}
	if err != nil {
		return nil, err
	}
	if st.Auth == AuthOAuth && !st.HasToken {
		return nil, errSignInFirst(st.Name)
	}
	usable := func(st State) (*Tool, error) {
		t, ok := st.Tool(q.Tool)
		switch {
		case !ok || !t.Present:
			return nil, dataexec.Fail(dataexec.FailUnavailableTool, askbi.Unavailable, nil, "the connection has no tool %s (any more); open the connection to refresh its tools", q.Tool)
		case t.State() == StateReapprove:
			return nil, errReapprove(t)
		case !t.Usable() || !st.Active:
			return nil, dataexec.Fail(dataexec.FailUnavailableTool, askbi.Unavailable, nil, "tool %s is not allowed for datasets; an admin can allow it on the connection", q.Tool)
		case t.Class != dataexec.ClassReadOnly:
			return nil, invalid("tool: %s is not read-only; datasets use read-only tools only", q.Tool)
		}
		return t, validateArgs(t, q.Arguments)
	}
	if _, err := usable(st); err != nil {
		return nil, err
	}
	st, _, err = src.s.fresh(ctx, st, q.Tool)
	if err != nil {
		return nil, err
	}
	t, err := usable(st)
	if err != nil {
		return nil, err
	}
	res, err := src.s.call(ctx, st, t.Name, q.Arguments, src.s.o.MaxResultBytes)
	if err != nil {
		return nil, err
	}
	return toTable(res, q.MaxRows, q.MaxBytes)
}

// validateArgs checks arguments against the tool's input schema.
func validateArgs(t *Tool, args json.RawMessage) error {
	if len(args) == 0 {
		args = json.RawMessage(`{}`)
	}
	var v map[string]any
	if err := json.Unmarshal(args, &v); err != nil || v == nil {
		return dataexec.Fail(dataexec.FailInvalidRequest, askbi.InvalidArgument, nil, "arguments: must be a JSON object")
	}
	var schema jsonschema.Schema
	if err := json.Unmarshal(t.InputSchema, &schema); err != nil {
		return dataexec.Fail(dataexec.FailInvalidRequest, askbi.InvalidArgument, nil, "tool: its input schema cannot be read")
	}
	res, err := schema.Resolve(nil)
	if err == nil {
		err = res.Validate(v)
	}
	if err != nil {
		return dataexec.Fail(dataexec.FailInvalidRequest, askbi.InvalidArgument, nil, "arguments: do not match the input schema of %s: %s", t.Name, capRunes(err.Error(), 200))
	}
	return nil
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
		raw = []byte(strings.TrimSpace(resultText(res)))
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

// Inspect implements dataexec.Inspector: the connection's usable
// read-only tools, kind "mcp_tool", with their arguments (input schema
// properties) as columns; with table set, that one tool or NotFound.
func (src *Source) Inspect(ctx context.Context, table string, limit int) ([]dataexec.Relation, error) {
	st, err := src.s.store.Get(ctx, src.connID)
	if err != nil {
		return nil, err
	}
	var out []dataexec.Relation
	for _, t := range st.Tools {
		if !t.Usable() || t.Class != dataexec.ClassReadOnly || table != "" && t.Name != table {
			continue
		}
		out = append(out, dataexec.Relation{Name: t.Name, Kind: "mcp_tool", Columns: schemaColumns(t.InputSchema)})
		if len(out) == limit {
			break
		}
	}
	if table != "" && len(out) == 0 {
		return nil, askbi.Errorf(askbi.NotFound, "no approved read-only tool %s", capRunes(table, 128))
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
