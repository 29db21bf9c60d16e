package remote

import (
	"context"
	"encoding/json"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/askbi/askbi"
	"github.com/askbi/askbi/access"
	"github.com/askbi/askbi/connections"
	"github.com/askbi/askbi/dataexec"
	"github.com/askbi/askbi/dataexec/mcpsource"
)

// CallResult is a remote tool's answer: its text and structured content.
// Both are untrusted data.
type CallResult = mcpsource.CallResult

// Call implements ask.Remote: it runs tool of connection connID for p
// ([access.RightRead] on the connection), when the tool is still usable and
// its Fingerprint is still fp (what the caller offered, and an approval
// of the call bound): a tool turned off, removed, or changed in what it
// may do since is Unavailable, and nothing is sent. The tool's
// definition is checked against a listing no older than
// Options.ListingMaxAge (see there): a widening change on the server
// turns it off and the call is Unavailable ("needs approval again"); a
// listing that fails changes nothing and the call fails without running
// (Timeout, Forbidden for sign-in or access, else Unavailable, to try
// again). The request carries only the connection's own token, never p's
// credentials. Errors are the safe failure kinds (Timeout, TooLarge,
// Forbidden for sign-in or access, Unavailable); a tool that reports an
// error is Unavailable, its text not shown.
func (r *Tools) Call(ctx context.Context, p access.Principal, connID, tool, fp string, args json.RawMessage) (_ *CallResult, err error) {
	target := access.Entity{Type: access.TypeConnection, ID: connID}
	details := map[string]string{"tool": capRunes(tool, 128), "via": "ask"}
	defer r.audit.Track(ctx, p, ActionCall, &target, details)(&err)
	_, st, err := r.conns.Load(ctx, p, connID, access.RightRead)
	if askbi.ErrorCode(err) == askbi.NotFound {
		return nil, dataexec.Fail(dataexec.FailUnavailableTool, askbi.Unavailable, err, "the connection of this tool no longer exists")
	}
	if err != nil {
		return nil, err
	}
	target = connections.Ref(st.Connection)
	details["connection"] = capRunes(st.Name, 128) // for the usage view: an admin's name for it, never data
	if st.Auth == connections.AuthOAuth && !st.HasToken {
		return nil, connections.NeedsSignIn(st.Name)
	}
	usable := func(st connections.State) error {
		t, ok := st.Tool(tool)
		if ok && t.State() == connections.ToolReapprove {
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
	st, listed, err := r.fresh(ctx, st, tool)
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
	ctx, cancel := context.WithTimeout(ctx, r.o.CallTimeout)
	defer cancel()
	res, err := r.call(ctx, st, t.Name, args, r.o.MaxResultBytes)
	if err != nil {
		return nil, err
	}
	out := &CallResult{Text: mcpsource.ResultText(res)}
	if res.StructuredContent != nil {
		out.Structured = res.StructuredContent
	}
	return out, nil
}

// call opens a session and calls one tool.
func (r *Tools) call(ctx context.Context, st connections.State, tool string, args json.RawMessage, limit int64) (*mcp.CallToolResult, error) {
	cred, err := r.creds.Credential(ctx, st)
	if err != nil {
		return nil, err
	}
	se, err := r.client.Open(ctx, st.URL, cred, limit)
	if err != nil {
		return nil, err
	}
	res, err := se.CallTool(ctx, tool, args)
	se.Close()
	if se.ListChanged() {
		r.markStale(ctx, st.ID)
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
// (connections.Service.Discover's rules: approvals kept, a widening change turns a tool off
// until it is approved again), publishing the change and stopping the
// turns that use the team's tools. listed reports whether it listed. A
// listing that fails changes nothing (nothing is turned off for a server
// that is down) and is the call's failure: timeouts, sign-in and access
// failures as they are, anything else Unavailable, to try again.
func (r *Tools) fresh(ctx context.Context, st connections.State, tool string) (_ connections.State, listed bool, err error) {
	if !st.Discovery.Stale && !st.Discovery.At.IsZero() && r.o.Now().Sub(st.Discovery.At) <= r.o.ListingMaxAge {
		return st, false, nil
	}
	defer func() {
		if err != nil {
			err = listingFailed(err, tool)
		}
	}()
	cred, err := r.creds.Credential(ctx, st)
	if err != nil {
		return connections.State{}, true, err
	}
	found, err := r.recs.ListTools(ctx, st, st.ToolFocus, cred)
	if err != nil {
		return connections.State{}, true, err
	}
	var changed bool
	out, err := r.store.Update(ctx, st.ID, func(cur *connections.State) error {
		if cur.URL != st.URL || !cur.Ready() {
			return askbi.Errorf(askbi.Conflict, "the connection changed while its tools were listed")
		}
		changed = found.Merge(cur, r.o.Now().UTC())
		return nil
	})
	if err != nil {
		return connections.State{}, true, err
	}
	r.recs.SaveCatalog(ctx, out.Connection)
	if changed {
		r.recs.Notify(ctx, out.TeamID)
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
func errReapprove(t *connections.Tool) error {
	return dataexec.Fail(dataexec.FailUnavailableTool, askbi.Unavailable, nil,
		"%s changed on the MCP server (%s) and needs approval again; an admin can approve it on the connection", t.Name, t.Access.Reapprove)
}

// markStale records that the server of connection id said its tool list
// changed: the next call lists again.
func (r *Tools) markStale(ctx context.Context, id string) {
	_, err := r.store.Update(context.WithoutCancel(ctx), id, func(st *connections.State) error {
		st.Discovery.Stale = true
		return nil
	})
	if err != nil && askbi.ErrorCode(err) != askbi.NotFound {
		r.o.Logger.Error("remote: mark the tool listing stale", "connection", id, "err", err)
	}
}

// RunReadOnly implements [mcpsource.Tools]: a dataset's call of connection
// connID's tool. InvalidArgument for a tool that is not read-only or
// arguments that do not match its input schema; Unavailable (failure kind
// unavailable_tool) for a connection or tool that is gone, not approved,
// or changed (also by a change found when the tool's definition is
// checked against a listing no older than Options.ListingMaxAge, as Call
// does: "needs approval again"; a listing that fails is Call's failure
// too). Nothing is sent before every check passes.
func (r *Tools) RunReadOnly(ctx context.Context, connID, tool string, args json.RawMessage) (*mcp.CallToolResult, error) {
	st, err := r.store.Get(ctx, connID)
	if askbi.ErrorCode(err) == askbi.NotFound {
		return nil, dataexec.Fail(dataexec.FailUnavailableTool, askbi.Unavailable, err, "the connection no longer exists")
	}
	if err != nil {
		return nil, err
	}
	if st.Auth == connections.AuthOAuth && !st.HasToken {
		return nil, connections.NeedsSignIn(st.Name)
	}
	usable := func(st connections.State) (*connections.Tool, error) {
		t, ok := st.Tool(tool)
		switch {
		case !ok || !t.Present:
			return nil, dataexec.Fail(dataexec.FailUnavailableTool, askbi.Unavailable, nil, "the connection has no tool %s (any more); open the connection to refresh its tools", tool)
		case t.State() == connections.ToolReapprove:
			return nil, errReapprove(t)
		case !t.Usable() || !st.Active:
			return nil, dataexec.Fail(dataexec.FailUnavailableTool, askbi.Unavailable, nil, "tool %s is not allowed for datasets; an admin can allow it on the connection", tool)
		case t.Class != dataexec.ClassReadOnly:
			return nil, dataexec.Fail(dataexec.FailInvalidRequest, askbi.InvalidArgument, nil, "tool: %s is not read-only; datasets use read-only tools only", tool)
		}
		return t, validateArgs(t, args)
	}
	if _, err := usable(st); err != nil {
		return nil, err
	}
	st, _, err = r.fresh(ctx, st, tool)
	if err != nil {
		return nil, err
	}
	t, err := usable(st)
	if err != nil {
		return nil, err
	}
	return r.call(ctx, st, t.Name, args, r.o.MaxResultBytes)
}

// ReadOnlyTools implements [mcpsource.Tools]: connection connID's usable
// read-only tools, in discovery order.
func (r *Tools) ReadOnlyTools(ctx context.Context, connID string) ([]mcpsource.ToolSpec, error) {
	st, err := r.store.Get(ctx, connID)
	if err != nil {
		return nil, err
	}
	var out []mcpsource.ToolSpec
	for _, t := range st.Tools {
		if t.Usable() && t.Class == dataexec.ClassReadOnly {
			out = append(out, mcpsource.ToolSpec{Name: t.Name, InputSchema: t.InputSchema})
		}
	}
	return out, nil
}

// validateArgs checks arguments against the tool's input schema.
func validateArgs(t *connections.Tool, args json.RawMessage) error {
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

func capRunes(s string, n int) string {
	if r := []rune(s); len(r) > n {
		return string(r[:n]) + "…"
	}
	return s
}
