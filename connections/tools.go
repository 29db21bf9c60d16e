package connections

import (
	"context"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/askbi/askbi"
	"github.com/askbi/askbi/access"
	"github.com/askbi/askbi/dataexec"
)

// PageSize is how many tools one page of [Service.Tools] lists.
const PageSize = 10

// ToolQuery selects a page of a connection's tools.
type ToolQuery struct {
	// Search matches name, title and description (case-insensitive).
	Search string
	// Hint keeps tools of one class: read_only, mutating, destructive or
	// unknown.
	Hint dataexec.Class
	// Page is the page to return, from 1. Default 1.
	Page int
}

// ToolView is one tool as the connection page shows it. Description and
// title are the remote server's, untrusted.
type ToolView struct {
	Name        string         `json:"name"`
	Title       string         `json:"title,omitempty"`
	Description string         `json:"description,omitempty"`
	Class       dataexec.Class `json:"class"`
	State       ToolState      `json:"state"`
	// Reason says why a tool is blocked, excluded or needs approval again.
	Reason             string `json:"reason,omitempty"`
	DescriptionChanged bool   `json:"description_changed,omitempty"`
	// Action is what the viewer can do: "allow" or "disallow" (admins),
	// "ask_admin" (others, for a tool that is not allowed), or "" (none).
	Action string `json:"action,omitempty"`
}

// ToolPage is one page of a connection's tools.
type ToolPage struct {
	Tools      []ToolView `json:"tools"`
	Page       int        `json:"page"`
	Pages      int        `json:"pages"`
	Total      int        `json:"total"` // after the filters
	PageSize   int        `json:"page_size"`
	CanApprove bool       `json:"can_approve"`
	// ToolFocus is set only when tools were omitted from the selection
	// or left out of the discovery.
	ToolFocus *string `json:"tool_focus,omitempty"`
	Omitted   int     `json:"omitted"`
	Excluded  int     `json:"excluded"`
	// LeftOut and Unread are the discovery's (Discovery.LeftOut).
	LeftOut int  `json:"left_out"`
	Unread  bool `json:"unread,omitempty"`
}

// Tools returns one page ([PageSize]) of a connection's shown tools, the
// search and hint filters applied to the whole list before paging. Any
// member may read it; CanApprove says whether the viewer may change
// access (others see "ask_admin").
func (s *Service) Tools(ctx context.Context, p access.Principal, id string, q ToolQuery) (ToolPage, error) {
	live, st, err := s.Load(ctx, p, id, access.RightRead)
	if err != nil {
		return ToolPage{}, err
	}
	if q.Hint != "" && !slices.Contains(dataexec.Classes, q.Hint) {
		return ToolPage{}, askbi.Errorf(askbi.InvalidArgument, "hint: must be read_only, mutating, destructive or unknown")
	}
	if q.Page <= 0 {
		q.Page = 1
	}
	canApprove := access.Allow(live, access.RightApproveTools, Ref(st.Connection)) == nil
	search := strings.ToLower(strings.TrimSpace(q.Search))
	var list []ToolView
	for _, t := range st.Tools {
		if !t.Selected && t.Excluded == "" && t.Present {
			continue
		}
		if q.Hint != "" && t.Class != q.Hint {
			continue
		}
		if search != "" && !strings.Contains(strings.ToLower(t.Name+"\n"+t.Title+"\n"+t.Description), search) {
			continue
		}
		list = append(list, view(t, canApprove))
	}
	page := ToolPage{Page: q.Page, Total: len(list), PageSize: PageSize, CanApprove: canApprove,
		Omitted: st.Discovery.Omitted, Excluded: st.Discovery.Excluded, LeftOut: st.Discovery.LeftOut, Unread: st.Discovery.Unread,
		Tools: []ToolView{}}
	page.Pages = (len(list) + PageSize - 1) / PageSize
	if from := (q.Page - 1) * PageSize; from < len(list) {
		page.Tools = list[from:min(from+PageSize, len(list))]
	}
	if st.Discovery.Omitted > 0 || st.Discovery.LeftOut > 0 || st.Discovery.Unread {
		f := st.ToolFocus
		page.ToolFocus = &f
	}
	return page, nil
}

func view(t Tool, canApprove bool) ToolView {
	v := ToolView{Name: t.Name, Title: t.Title, Description: t.Description, Class: t.Class, State: t.State(),
		DescriptionChanged: t.Access.DescriptionChanged}
	switch v.State {
	case ToolBlocked:
		v.Reason = "marked destructive: it cannot be allowed"
	case ToolExcluded:
		v.Reason = t.Excluded
	case ToolReapprove:
		v.Reason = t.Access.Reapprove + "; approve it again to use it"
	case ToolRemoved:
		v.Reason = "the server no longer lists it"
	}
	switch {
	case v.State == ToolAllowed && canApprove:
		v.Action = "disallow"
	case (v.State == ToolOff || v.State == ToolReapprove) && canApprove:
		v.Action = "allow"
	case v.State == ToolOff || v.State == ToolReapprove:
		v.Action = "ask_admin"
	}
	return v
}

// SetAccess turns one tool's access on or off, for Ask and datasets
// together, under the connection's lock. It needs
// [access.RightApproveTools] (a person: session principals, owner or
// admin; the model has no tool that reaches it). Allowing records what
// was approved (class, schema, description). Errors: NotFound (also an
// unknown tool), Forbidden, and Conflict for a tool that cannot be
// allowed (destructive, excluded, removed). It stops the Ask turns that
// use the team's remote tools.
func (s *Service) SetAccess(ctx context.Context, p access.Principal, id, tool string, allowed bool) (_ ToolView, err error) {
	o, err := s.open(ctx, p, ActionToolAccess, id, access.RightApproveTools, map[string]string{"tool": capRunes(tool, 128), "allowed": strconv.FormatBool(allowed)})
	defer o.end(&err)
	if err != nil {
		return ToolView{}, err
	}
	live, cur := o.live, o.st
	var out Tool
	_, err = s.recs.store.Update(ctx, id, func(st *State) error {
		t, ok := st.Tool(tool)
		if !ok {
			return askbi.Errorf(askbi.NotFound, "tool not found")
		}
		if allowed {
			if err := allow(t, live.UserID, s.o.Now().UTC()); err != nil {
				return err
			}
		} else {
			t.Access.Allowed, t.Access.Reapprove = false, ""
		}
		out = *t
		st.Version++
		st.UpdatedAt = s.o.Now().UTC()
		return nil
	})
	if err != nil {
		return ToolView{}, err
	}
	s.recs.Notify(ctx, cur.TeamID)
	return view(out, true), nil
}

func allow(t *Tool, by string, now time.Time) error {
	switch t.State() {
	case ToolBlocked:
		return askbi.Errorf(askbi.Conflict, "this tool is marked destructive and cannot be allowed")
	case ToolExcluded:
		return askbi.Errorf(askbi.Conflict, "this tool failed the schema safety checks (%s) and cannot be allowed", t.Excluded)
	case ToolRemoved:
		return askbi.Errorf(askbi.Conflict, "the server no longer lists this tool")
	}
	t.Access = Access{Allowed: true, ApprovedClass: t.Class, ApprovedSchemaHash: t.SchemaHash,
		ApprovedDescriptionHash: t.DescriptionHash, ApprovedBy: by, ApprovedAt: now}
	return nil
}

// AllowAllResult is what AllowAll did.
type AllowAllResult struct {
	Allowed int `json:"allowed"` // tools newly allowed
	Skipped int `json:"skipped"` // destructive, unknown, excluded or removed tools left as they were
}

// AllowAll allows every shown tool across all pages and filters, except
// those marked destructive or with unknown annotations (treated as
// destructive) and those that cannot be allowed, in one change under the
// connection's lock. It needs [access.RightApproveTools].
func (s *Service) AllowAll(ctx context.Context, p access.Principal, id string) (_ AllowAllResult, err error) {
	o, err := s.open(ctx, p, ActionToolAllowAll, id, access.RightApproveTools, map[string]string{})
	defer o.end(&err)
	if err != nil {
		return AllowAllResult{}, err
	}
	live, cur := o.live, o.st
	details := o.details
	var res AllowAllResult
	_, err = s.recs.store.Update(ctx, id, func(st *State) error {
		res = AllowAllResult{}
		now := s.o.Now().UTC()
		for i := range st.Tools {
			t := &st.Tools[i]
			switch {
			case !t.Selected && t.Present && t.Excluded == "":
				continue // not shown: Tool focus left it out
			case t.Usable():
				continue
			case t.Class == dataexec.ClassUnknown || t.State() != ToolOff && t.State() != ToolReapprove:
				res.Skipped++
				continue
			}
			if allow(t, live.UserID, now) == nil {
				res.Allowed++
			}
		}
		st.Version++
		st.UpdatedAt = now
		return nil
	})
	if err != nil {
		return AllowAllResult{}, err
	}
	details["allowed"], details["skipped"] = strconv.Itoa(res.Allowed), strconv.Itoa(res.Skipped)
	s.recs.Notify(ctx, cur.TeamID)
	return res, nil
}
