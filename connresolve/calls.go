package connresolve

import (
	"context"
	"encoding/json"
	"slices"
	"strings"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/askbi/askbi"
	"github.com/askbi/askbi/access"
	"github.com/askbi/askbi/dataexec"
	"github.com/askbi/askbi/dataexec/mcpsource"
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
type CallResult = mcpsource.CallResult

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
	o, err := s.open(ctx, p, ActionRemoteCall, connID, access.RightRead, map[string]string{"tool": capRunes(tool, 128), "via": "ask"})
	defer o.end(&err)
	if askbi.ErrorCode(err) == askbi.NotFound {
		return nil, dataexec.Fail(dataexec.FailUnavailableTool, askbi.Unavailable, err, "the connection of this tool no longer exists")
	}
	if err != nil {
		return nil, err
	}
	st := o.st
	details := o.details
	if st.Auth == AuthOAuth && !st.HasToken {
		return nil, errSignInFirst(st.Name)
	}
	usable := func(st State) error {
		t, ok := st.Tool(tool)
		if ok && t.State() == ToolReapprove {
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
	out := &CallResult{Text: mcpsource.ResultText(res)}
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
	se, err := s.client.Open(ctx, st.URL, cred, limit)
	if err != nil {
		return nil, err
	}
	res, err := se.CallTool(ctx, tool, args)
	se.Close()
	if se.ListChanged() {
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
		s.notify(ctx, out.TeamID)
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

// RunReadOnly implements mcpsource.Tools: a dataset's call of connection
// connID's tool. InvalidArgument for a tool that is not read-only or
// arguments that do not match its input schema; Unavailable (failure kind
// unavailable_tool) for a connection or tool that is gone, not approved,
// or changed (also by a change found when the tool's definition is
// checked against a listing no older than Options.ListingMaxAge, as Call
// does: "needs approval again"; a listing that fails is Call's failure
// too). Nothing is sent before every check passes.
func (s *Service) RunReadOnly(ctx context.Context, connID, tool string, args json.RawMessage) (*mcp.CallToolResult, error) {
	st, err := s.store.Get(ctx, connID)
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
		t, ok := st.Tool(tool)
		switch {
		case !ok || !t.Present:
			return nil, dataexec.Fail(dataexec.FailUnavailableTool, askbi.Unavailable, nil, "the connection has no tool %s (any more); open the connection to refresh its tools", tool)
		case t.State() == ToolReapprove:
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
	st, _, err = s.fresh(ctx, st, tool)
	if err != nil {
		return nil, err
	}
	t, err := usable(st)
	if err != nil {
		return nil, err
	}
	return s.call(ctx, st, t.Name, args, s.o.MaxResultBytes)
}

// ReadOnlyTools implements mcpsource.Tools: connection connID's usable
// read-only tools, in discovery order.
func (s *Service) ReadOnlyTools(ctx context.Context, connID string) ([]mcpsource.ToolSpec, error) {
	st, err := s.store.Get(ctx, connID)
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
