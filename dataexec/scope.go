package dataexec

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/askbi/askbi/access"
	"github.com/askbi/askbi/workspace"
)

// ScopeRef is a dataset's scope as references carry it: its conditions,
// the same in words, and the unscoped dataset when the caller can read it.
type ScopeRef struct {
	Filters []workspace.Filter `json:"filters"`
	// Text is the conditions in words: "page_path = /pricing".
	Text     string `json:"text"`
	Unscoped *Ref   `json:"unscoped,omitempty"`
}

// DatasetScope returns the conditions that limit dataset d: its declared
// scope and its saved filters, each once, or nil for an unscoped dataset.
func DatasetScope(d workspace.Dataset) []workspace.Filter { return eachOnce(d.Conditions()) }

// ChartScope returns the conditions that limit what chart c of dataset d
// shows: its filters (the filters and date range of the answer it was
// made from), then d's scope, each once, or nil for none. They tell apart
// two charts of one name ("Weekly signups" on all pages and on /pricing).
func ChartScope(c workspace.Chart, d workspace.Dataset) []workspace.Filter {
	return eachOnce(c.Filters, DatasetScope(d))
}

// eachOnce joins lists of conditions, keeping the first of any that are
// the same.
func eachOnce(lists ...[]workspace.Filter) []workspace.Filter {
	var out []workspace.Filter
	for _, fs := range lists {
		for _, f := range fs {
			if !slices.ContainsFunc(out, func(g workspace.Filter) bool { return sameFilter(f, g) }) {
				out = append(out, f)
			}
		}
	}
	return out
}

// scopeRef is conditions as references carry them, nil for none.
func scopeRef(fs []workspace.Filter) *ScopeRef {
	if len(fs) == 0 {
		return nil
	}
	return &ScopeRef{Filters: fs, Text: ScopeText(fs)}
}

// Uncovered returns the conditions of scope that a request does not
// include, in order: a condition is included when one of the request's
// filters asks for it (the same field and the same or a narrower
// condition: eq of a value the scope allows), or when the words of the
// user's request name its values as whole words (case-insensitive;
// "/pricing" is named by "pricing" too). An empty result means the request may be answered from
// the scoped data.
func Uncovered(scope, filters []workspace.Filter, words string) []workspace.Filter {
	words = strings.ToLower(words)
	var out []workspace.Filter
	for _, s := range scope {
		if !slices.ContainsFunc(filters, func(f workspace.Filter) bool { return narrows(f, s) }) && !named(s, words) {
			out = append(out, s)
		}
	}
	return out
}

// ScopeText is scope in words: "page_path = /pricing, region in (EU, UK)".
func ScopeText(scope []workspace.Filter) string {
	parts := make([]string, len(scope))
	for i, f := range scope {
		parts[i] = f.Field + " " + opWord[f.Op] + " " + filterValueText(f.Value)
	}
	return strings.Join(parts, ", ")
}

var opWord = map[workspace.FilterOp]string{workspace.OpEq: "=", workspace.OpNe: "≠", workspace.OpGt: ">", workspace.OpGte: "≥", workspace.OpLt: "<", workspace.OpLte: "≤", workspace.OpContains: "contains", workspace.OpIn: "in"}

func filterValueText(v any) string {
	if list, ok := inValues(v); ok {
		parts := make([]string, len(list))
		for i, e := range list {
			parts[i] = filterValueText(e)
		}
		return "(" + strings.Join(parts, ", ") + ")"
	}
	if s, ok := cellText(v); ok {
		return s
	}
	return fmt.Sprint(v)
}

// sameFilter reports whether a and b are the same condition.
func sameFilter(a, b workspace.Filter) bool {
	return a.Field == b.Field && a.Op == b.Op && filterValueText(a.Value) == filterValueText(b.Value)
}

// narrows reports whether request filter f asks for scope condition s or
// a narrower one.
func narrows(f, s workspace.Filter) bool {
	if f.Field != s.Field {
		return false
	}
	if sameFilter(f, s) {
		return true
	}
	// eq or in of values the scope's eq or in allows.
	allowed, ok := scopeValues(s)
	if !ok {
		return false
	}
	asked, ok := scopeValues(f)
	if !ok {
		return false
	}
	for _, v := range asked {
		if !slices.Contains(allowed, v) {
			return false
		}
	}
	return len(asked) > 0
}

// scopeValues are the values an eq or in condition allows, as text.
func scopeValues(f workspace.Filter) ([]string, bool) {
	switch f.Op {
	case workspace.OpEq:
		return []string{filterValueText(f.Value)}, true
	case workspace.OpIn:
		list, ok := inValues(f.Value)
		out := make([]string, len(list))
		for i, v := range list {
			out[i] = filterValueText(v)
		}
		return out, ok
	}
	return nil, false
}

// named reports whether words name the value of condition s: every value
// of an eq, in or contains condition, with slashes trimmed.
func named(s workspace.Filter, words string) bool {
	vals, ok := scopeValues(s)
	if s.Op == workspace.OpContains {
		vals, ok = []string{filterValueText(s.Value)}, true
	}
	if !ok || len(vals) == 0 {
		return false
	}
	for _, v := range vals {
		v = strings.ToLower(strings.Trim(v, "/ "))
		if v == "" || !containsWord(words, v) {
			return false
		}
	}
	return true
}

// containsWord reports whether s holds w as a whole word: not inside a
// longer word, so "de" is not named by "order".
func containsWord(s, w string) bool {
	for i := 0; ; {
		j := strings.Index(s[i:], w)
		if j < 0 {
			return false
		}
		start, end := i+j, i+j+len(w)
		if (start == 0 || !wordByte(s[start-1])) && (end == len(s) || !wordByte(s[end])) {
			return true
		}
		i = start + 1
	}
}

func wordByte(b byte) bool {
	return b >= 'a' && b <= 'z' || b >= '0' && b <= '9' || b == '_' || b >= 0x80
}

// scopedRef is datasetRef for live principal p, naming the unscoped
// dataset when p can read it.
func (e *Executor) scopedRef(ctx context.Context, p access.Principal, d workspace.Dataset, conn workspace.Connection) Ref {
	r := datasetRef(d, conn)
	if r.Scope == nil || d.Scope == nil || d.Scope.UnscopedID == "" || d.Scope.UnscopedID == d.ID {
		return r
	}
	u, err := load(ctx, p, access.TypeDataset, e.catalog.Dataset, d.Scope.UnscopedID, access.RightRead)
	if err == nil && len(DatasetScope(u)) == 0 {
		uc, _ := e.catalog.Connection(ctx, u.Request.ConnectionID)
		ref := datasetRef(u, uc)
		r.Scope.Unscoped = &ref
	}
	return r
}
