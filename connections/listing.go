package connections

import (
	"cmp"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
	"unicode"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/askbi/askbi/dataexec"
	"github.com/askbi/askbi/dataexec/mcpsource"
	"github.com/askbi/askbi/internal/canonjson"
)

// Limits on the remote text kept for a tool.
const (
	maxDescription = 1000
	maxTitle       = 200
)

// inspect turns a listed tool into a Tool, with its schema safety checks.
// ok is false when the name itself is invalid: such a tool is only
// counted.
func inspect(t *mcp.Tool, o *Options) (Tool, bool) {
	if t == nil || !mcpsource.ValidToolName(t.Name) {
		return Tool{}, false
	}
	out := Tool{Name: t.Name, Title: capRunes(t.Title, maxTitle), Description: capRunes(t.Description, maxDescription), Present: true}
	if t.Annotations != nil {
		a := t.Annotations
		ro := a.ReadOnlyHint
		out.Hints = Hints{ReadOnly: &ro, Destructive: a.DestructiveHint, OpenWorld: a.OpenWorldHint}
		if a.IdempotentHint {
			out.Hints.Idempotent = &a.IdempotentHint
		}
		if out.Title == "" {
			out.Title = capRunes(a.Title, maxTitle)
		}
	}
	out.Class = classify(t.Annotations)
	out.DescriptionHash = hashHex([]byte(t.Description))
	raw, err := json.Marshal(t.InputSchema)
	if err != nil {
		out.Excluded = "its input schema is not JSON"
		return out, true
	}
	if reason := schemaProblem(raw, o); reason != "" {
		out.Excluded = reason
		out.SchemaHash = hashHex(raw)
		return out, true
	}
	canon, err := canonjson.Canonical(raw)
	if err != nil {
		out.Excluded = "its input schema is not canonical JSON"
		return out, true
	}
	out.InputSchema, out.SchemaHash = canon, hashHex(canon)
	return out, true
}

// classify maps annotations to a class (dataexec.ClassFromAnnotations).
// The go-sdk decodes a missing readOnlyHint as false, which is no safer.
func classify(a *mcp.ToolAnnotations) dataexec.Class {
	if a == nil {
		return dataexec.ClassFromAnnotations(nil, nil)
	}
	return dataexec.ClassFromAnnotations(&a.ReadOnlyHint, a.DestructiveHint)
}

// schemaProblem returns why an input schema fails the safety checks, or
// "".
func schemaProblem(raw []byte, o *Options) string {
	if len(raw) > o.MaxSchemaBytes {
		return fmt.Sprintf("its input schema is larger than %d KiB", o.MaxSchemaBytes>>10)
	}
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		return "its input schema is not JSON"
	}
	top, ok := v.(map[string]any)
	if !ok || top["type"] != "object" {
		return "its input schema is not an object schema"
	}
	var problem string
	var walk func(v any, depth int)
	walk = func(v any, depth int) {
		if problem != "" {
			return
		}
		if depth > o.MaxSchemaDepth {
			problem = fmt.Sprintf("its input schema is nested more than %d levels deep", o.MaxSchemaDepth)
			return
		}
		switch x := v.(type) {
		case map[string]any:
			for k, e := range x {
				if k == "$ref" || k == "$dynamicRef" || k == "$recursiveRef" {
					if s, _ := e.(string); !strings.HasPrefix(s, "#") {
						problem = "its input schema references a remote schema"
						return
					}
				}
				walk(e, depth+1)
			}
		case []any:
			for _, e := range x {
				walk(e, depth+1)
			}
		}
	}
	walk(top, 0)
	return problem
}

func capRunes(s string, n int) string {
	if r := []rune(s); len(r) > n {
		return string(r[:n]) + "…"
	}
	return s
}

// rank orders classes by what they may do; unknown counts as destructive.
func rank(c dataexec.Class) int {
	switch c {
	case dataexec.ClassReadOnly:
		return 0
	case dataexec.ClassMutating:
		return 1
	}
	return 2
}

// merge folds a fresh discovery into st, under the connection's lock:
// tools keep their approvals; a widening change turns one off until it is
// approved again, a description change is recorded; tools no longer
// listed are kept as removed, with their approvals; excluded tools keep
// none. It reports whether anything Ask or datasets may use changed.
func merge(st *State, found []Tool, focus string, fullLimit int) (usableChanged bool) {
	before := usableSet(st.Tools)
	old := map[string]Tool{}
	for _, t := range st.Tools {
		old[t.Name] = t
	}
	seen := map[string]bool{}
	var tools []Tool
	for _, f := range found {
		if seen[f.Name] {
			continue // a server that lists a name twice gets its first
		}
		seen[f.Name] = true
		if o, ok := old[f.Name]; ok {
			f.Access = o.Access
		}
		a := &f.Access
		switch {
		case f.Excluded != "":
			f.Access = Access{}
		case a.ApprovedSchemaHash != "":
			var why string
			switch {
			case f.SchemaHash != a.ApprovedSchemaHash:
				why = "its input schema changed"
			case rank(f.Class) > rank(a.ApprovedClass):
				why = "its annotations now say " + strings.ReplaceAll(string(f.Class), "_", "-")
			}
			if why != "" && (a.Allowed || a.Reapprove != "") {
				a.Allowed, a.Reapprove = false, why
			} else if why == "" && rank(f.Class) < rank(a.ApprovedClass) {
				a.ApprovedClass = f.Class // narrower: recorded, nothing widens
			}
			a.DescriptionChanged = f.DescriptionHash != a.ApprovedDescriptionHash
		}
		tools = append(tools, f)
	}
	for _, o := range st.Tools {
		if !seen[o.Name] && o.Access.ApprovedSchemaHash != "" {
			o.Present, o.Selected = false, false
			tools = append(tools, o)
		}
	}
	st.Tools = tools
	shown, omitted := selectTools(st.Tools, focus, fullLimit)
	st.Discovery.Shown, st.Discovery.Omitted = shown, omitted
	after := usableSet(st.Tools)
	return !maps.Equal(before, after)
}

func usableSet(tools []Tool) map[string]string {
	m := map[string]string{}
	for _, t := range tools {
		if t.Usable() {
			m[t.Name] = t.Fingerprint()
		}
	}
	return m
}

// helperWords mark the basic schema, documentation and query helpers a
// focused selection always keeps.
var helperWords = []string{"schema", "describe", "doc", "docs", "documentation", "help", "query", "search", "list", "info", "metadata", "catalog"}

var stopWords = map[string]bool{"the": true, "and": true, "for": true, "with": true, "from": true, "show": true, "what": true,
	"how": true, "are": true, "this": true, "that": true, "our": true, "per": true, "all": true, "get": true, "me": true}

// selectTools marks which present, usable-schema tools are shown: all of
// them up to fullLimit; above it, the fullLimit best matches of focus
// (basic helpers count as matches), and besides those every tool that
// was ever approved, which is never dropped. Selection grants nothing: a
// selected tool still starts off.
func selectTools(tools []Tool, focus string, fullLimit int) (shown, omitted int) {
	var candidates []int
	for i := range tools {
		tools[i].Selected = false
		if tools[i].Present && tools[i].Excluded == "" {
			candidates = append(candidates, i)
		}
	}
	if len(candidates) <= fullLimit {
		for _, i := range candidates {
			tools[i].Selected = true
		}
		return len(candidates), 0
	}
	words := focusWords(focus)
	type scored struct{ i, s int }
	list := make([]scored, len(candidates))
	for k, i := range candidates {
		list[k] = scored{i, focusScore(tools[i], words)}
	}
	slices.SortStableFunc(list, func(a, b scored) int { return cmp.Compare(b.s, a.s) })
	for k, c := range list {
		if k < fullLimit || tools[c.i].Access.ApprovedSchemaHash != "" {
			tools[c.i].Selected = true
			shown++
		}
	}
	return shown, len(candidates) - shown
}

// focusScore is how well t matches the focus words: in its name, or
// else in its title or description; a basic helper scores as a match.
func focusScore(t Tool, words []string) int {
	s := 0
	nameParts := focusWords(strings.NewReplacer("_", " ", "-", " ", ".", " ").Replace(t.Name))
	text := strings.ToLower(t.Title + " " + t.Description)
	for _, w := range words {
		if slices.Contains(nameParts, w) || strings.Contains(strings.ToLower(t.Name), w) {
			s += 20
		} else if strings.Contains(text, w) {
			s += 5
		}
	}
	for _, h := range helperWords {
		if slices.Contains(nameParts, h) {
			s += 10
			break
		}
	}
	return s
}

// listing is what one discovery read of a server's tool list.
type listing struct {
	// found are the tools kept, in the server's order; invalid counts the
	// tools with invalid names, which are only counted.
	found   []Tool
	invalid int
	// leftOut counts the tools read past Options.MaxTools and not kept;
	// unread is set when the list had pages past the page or byte bound.
	leftOut int
	unread  bool
	// listChanged is set when the server said its tool list changed
	// while it was read.
	listChanged bool
}

// keeper keeps at most max of a listing's tools while the pages stream
// in, so a list of any length holds at most about twice max in memory:
// every tool approved before (it is never dropped), then the tools that
// pass the schema checks before those that fail them, each by how well
// it matches the focus, then in the server's order. The rest are
// counted as left out.
type keeper struct {
	max      int
	words    []string
	approved map[string]bool
	kept     []kept
	names    map[string]bool // of kept: a name listed twice keeps its first
	n        int
	l        listing
}

type kept struct {
	t        Tool
	i, score int
	approved bool
}

func newKeeper(max int, focus string, approved map[string]bool) *keeper {
	return &keeper{max: max, words: focusWords(focus), approved: approved, names: map[string]bool{}}
}

func (k *keeper) add(page []*mcp.Tool, o *Options) {
	for _, mt := range page {
		t, ok := inspect(mt, o)
		if !ok {
			k.l.invalid++
			continue
		}
		if k.names[t.Name] {
			continue
		}
		k.names[t.Name] = true
		c := kept{t: t, i: k.n, approved: k.approved[t.Name]}
		if t.Excluded == "" {
			c.score = focusScore(t, k.words)
		}
		k.kept = append(k.kept, c)
		k.n++
	}
	if len(k.kept) >= 2*k.max {
		k.trim()
	}
}

// trim drops all but the max best.
func (k *keeper) trim() {
	if len(k.kept) <= k.max {
		return
	}
	slices.SortStableFunc(k.kept, func(a, b kept) int {
		switch {
		case a.approved != b.approved:
			return boolOrder(a.approved)
		case (a.t.Excluded == "") != (b.t.Excluded == ""):
			return boolOrder(a.t.Excluded == "")
		}
		return cmp.Or(cmp.Compare(b.score, a.score), cmp.Compare(a.i, b.i))
	})
	n := k.max
	for n < len(k.kept) && k.kept[n].approved {
		n++
	}
	for _, c := range k.kept[n:] {
		delete(k.names, c.t.Name)
	}
	k.l.leftOut += len(k.kept) - n
	k.kept = slices.Delete(k.kept, n, len(k.kept))
	slices.SortFunc(k.kept, func(a, b kept) int { return cmp.Compare(a.i, b.i) })
}

// boolOrder sorts true first.
func boolOrder(first bool) int {
	if first {
		return -1
	}
	return 1
}

// result is the listing, the tools kept in the server's order.
func (k *keeper) result(unread bool) listing {
	k.trim()
	l := k.l
	l.unread = unread
	for _, c := range k.kept {
		l.found = append(l.found, c.t)
	}
	return l
}

func focusWords(s string) []string {
	var out []string
	for _, w := range strings.FieldsFunc(strings.ToLower(s), func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) }) {
		if len(w) >= 3 && !stopWords[w] || w == "doc" {
			w = strings.TrimSuffix(w, "s")
			out = append(out, w)
		}
	}
	return out
}
