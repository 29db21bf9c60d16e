package connections

import (
	"context"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/askbi/askbi"
	"github.com/askbi/askbi/access"
	"github.com/askbi/askbi/dataexec/mcpsource"
)

// Credentials says how a session to a connection's server authenticates.
// Package signin's Service is the one a host uses: it alone opens the
// sealed tokens. The service asks it only to reach a server, and keeps
// nothing it answers.
type Credentials interface {
	// Credential is how a session to st's server authenticates: its
	// bearer token, none, or for OAuth its tokens (renewed first when
	// they expired). Forbidden (failure kind sign_in) when there are none
	// that work; Unavailable when they cannot be renewed now.
	Credential(ctx context.Context, st State) (mcpsource.Credential, error)
}

// Discover lists the server's tools within the bounds (time, pages,
// bytes, count), authenticated by creds, and merges them into the
// connection under its lock: approvals are kept, new tools start off, a
// widening change turns an approved tool off until it is approved again,
// a description change is recorded. Tools that fail the schema safety
// checks are excluded and counted. More than 250 usable tools are
// matched against the tool focus (focus, when given, replaces the saved
// one). The first success makes the connection active.
//
// More than MaxTools tools are not a failure: the approved ones and the
// best matches of the focus are kept, the rest counted
// (Discovery.LeftOut, Unread).
//
// It needs [access.RightManageConnections]. On failure (an unreachable
// server, a bad token: distinct codes and messages; TooLarge for a
// response over the cap; InvalidResult when no listed tool is usable)
// the previous tool list and approvals stay, the failure is recorded on
// the connection, and the error is returned.
func (s *Service) Discover(ctx context.Context, p access.Principal, id string, focus *string, creds Credentials) (_ Connection, err error) {
	o, err := s.open(ctx, p, ActionConnectionDiscover, id, access.RightManageConnections, map[string]string{})
	defer o.end(&err)
	if err != nil {
		return Connection{}, err
	}
	cur := o.st
	details := o.details
	if focus != nil && utf8.RuneCountInString(*focus) > 500 {
		return Connection{}, askbi.Errorf(askbi.InvalidArgument, "tool_focus: at most 500 characters")
	}
	f := cur.ToolFocus
	if focus != nil {
		f = strings.TrimSpace(*focus)
	}
	cred, derr := creds.Credential(ctx, cur)
	var found Found
	if derr == nil {
		found, derr = s.recs.ListTools(ctx, cur, f, cred)
	}
	now := s.o.Now().UTC()
	if derr != nil {
		_, err := s.recs.store.Update(context.WithoutCancel(ctx), id, func(st *State) error {
			st.Discovery.Error = NewErrorInfo(derr, now)
			return nil
		})
		if err != nil && askbi.ErrorCode(err) != askbi.NotFound {
			s.o.Logger.Error("connections: record discovery failure", "connection", id, "err", err)
		}
		return Connection{}, derr
	}
	var changed bool
	st, err := s.recs.store.Update(ctx, id, func(st *State) error {
		if st.URL != cur.URL {
			// The URL changed while we listed: this list is of the old one.
			return askbi.Errorf(askbi.Conflict, "the connection's URL changed during discovery; discover again")
		}
		if focus != nil {
			st.ToolFocus = f
		}
		changed = found.Merge(st, now)
		return nil
	})
	if err != nil {
		return Connection{}, err
	}
	details["tools"], details["excluded"] = strconv.Itoa(st.Discovery.Tools), strconv.Itoa(st.Discovery.Excluded)
	if st.Discovery.LeftOut > 0 {
		details["left_out"] = strconv.Itoa(st.Discovery.LeftOut)
	}
	s.recs.SaveCatalog(ctx, st.Connection)
	if changed {
		s.recs.Notify(ctx, st.TeamID)
	}
	return st.Connection, nil
}
