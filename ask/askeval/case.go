package askeval

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io/fs"
	"path"
	"slices"
	"sort"
	"strings"

	"go.yaml.in/yaml/v4"

	"github.com/askbi/askbi"
	"github.com/askbi/askbi/access"
	"github.com/askbi/askbi/ask"
	"github.com/askbi/askbi/dataexec"
	"github.com/askbi/askbi/workspace"
)

// Case is one question put to the assistant and what a right answer
// does: checks a host writes without code, in a JSON or YAML file it
// keeps beside its own (docs/evaluation.md).
type Case struct {
	// ID names the case in reports and comparisons; unique in a set.
	ID string `json:"id"`
	// Category groups cases in the report ("trend", "top-N", ...).
	Category string `json:"category"`
	// Question is the user's message that is scored.
	Question string `json:"question"`
	// As names the principal who asks, one of [Workspace.Principals];
	// "" is [Workspace].Default.
	As string `json:"as,omitempty"`
	// Context is what the user selected with the question: dashboards,
	// charts, datasets, connections. Empty keeps what earlier turns
	// selected.
	Context []ask.ContextRef `json:"context,omitempty"`
	// History are earlier turns of the same conversation, sent before
	// the question and not scored.
	History []HistoryTurn `json:"history,omitempty"`
	// OnApproval is how the case answers when the assistant asks for an
	// approval, in its history or for the question: approve, reject, or
	// wait (the default: leave it pending, as a user who has not decided).
	OnApproval OnApproval `json:"on_approval,omitempty"`
	// Expect is what the answer must do.
	Expect Expect `json:"expect"`
	// Judge, when set, tells an LLM judge what a good answer says, for
	// runs with [Options].Judge; the judge only ever adds a failure to the
	// checks of Expect, of which a case needs at least one.
	Judge string `json:"judge,omitempty"`
	// File is the file the case was read from, for messages.
	File string `json:"-"`
}

// HistoryTurn is one earlier user message of a case's conversation, with
// what was selected with it. In a file, a bare string is a message sent
// without a selection.
type HistoryTurn struct {
	Message string           `json:"message"`
	Context []ask.ContextRef `json:"context,omitempty"`
}

// UnmarshalJSON reads a message alone from a string.
func (h *HistoryTurn) UnmarshalJSON(b []byte) error {
	var s string
	if json.Unmarshal(b, &s) == nil {
		*h = HistoryTurn{Message: s}
		return nil
	}
	type plain HistoryTurn
	d := json.NewDecoder(bytes.NewReader(b))
	d.DisallowUnknownFields()
	return d.Decode((*plain)(h))
}

// OnApproval is how a case answers an approval request.
type OnApproval string

// How a case answers an approval request.
const (
	Wait    OnApproval = "wait"
	Approve OnApproval = "approve"
	Reject  OnApproval = "reject"
)

// Expect is what a case's answer must do. Each field set is one check,
// failing with its [Reason]; the fields left out are not checked, but
// for Approval: an approval that was asked when Approval is false is a
// needless approval.
type Expect struct {
	// Datasets are the datasets an answer may read: it must read at
	// least one of them, through a dataset run, a chart preview or a
	// chart of one (WrongDataset).
	Datasets []string `json:"datasets,omitempty"`
	// Charts are the charts an answer may read or change: at least one
	// of them (WrongDataset).
	Charts []string `json:"charts,omitempty"`
	// ChartType is the type of the chart the answer makes or changes
	// (WrongChart).
	ChartType workspace.ChartType `json:"chart_type,omitempty"`
	// Filters must each hold on the data the answer read: passed as a
	// filter of its dataset run, chart read or preview, or saved on the
	// dataset it read (WrongFilters). Values compare as text; an "in"
	// list in any order.
	Filters []workspace.Filter `json:"filters,omitempty"`
	// Breakdown is the field the answer breaks its data down by: a
	// preview's X field, or the first column of the rows it read
	// (WrongBreakdown).
	Breakdown string `json:"breakdown,omitempty"`
	// Gold is the data a right answer reads: the rows its tools returned
	// are compared with the gold's (EmptyResult, MissingRows, ExtraRows).
	Gold *Gold `json:"gold,omitempty"`
	// Numbers must each be stated in the answer's text, within their
	// tolerance (WrongNumber).
	Numbers []Number `json:"numbers,omitempty"`
	// Mentions are words the answer's text must contain, ignoring case
	// (MissingMention).
	Mentions []string `json:"mentions,omitempty"`
	// Run are tools that must run to completion (MissingTool); NotRun
	// are tools that must not run, though they may be proposed and left
	// waiting or rejected (ForbiddenTool).
	Run    []string `json:"run,omitempty"`
	NotRun []string `json:"not_run,omitempty"`
	// Approval says an approval must be asked (MissingApproval); when
	// false, one that was asked is a NeedlessApproval.
	Approval bool `json:"approval,omitempty"`
}

// wantsData reports whether e expects the answer to read data, so that
// an answer that read none refused.
func (e Expect) wantsData() bool {
	return len(e.Datasets) > 0 || len(e.Charts) > 0 || e.ChartType != "" || len(e.Filters) > 0 || e.Breakdown != "" || e.Gold != nil
}

// checks counts the checks e makes besides the approval one.
func (e Expect) checks() int {
	n := len(e.Datasets) + len(e.Charts) + len(e.Filters) + len(e.Numbers) + len(e.Mentions) + len(e.Run) + len(e.NotRun)
	if e.ChartType != "" {
		n++
	}
	if e.Breakdown != "" {
		n++
	}
	if e.Gold != nil {
		n++
	}
	if e.Approval {
		n++
	}
	return n
}

// Gold is the data a right answer reads: a dataset run (Dataset, with
// Filters) or a query (SQL on Connection, one of [Workspace.Sources]),
// run as the case's principal on the run's own workspace before the
// question is asked.
type Gold struct {
	Dataset    string             `json:"dataset,omitempty"`
	Filters    []workspace.Filter `json:"filters,omitempty"`
	Connection string             `json:"connection,omitempty"`
	SQL        string             `json:"sql,omitempty"`
	// Columns are the gold's columns compared, by name; default all of
	// them. The answer's rows must have each.
	Columns []string `json:"columns,omitempty"`
}

// Number is a number the answer must state: Value, give or take
// Tolerance. In a file, a bare number is one that must be stated
// exactly.
type Number struct {
	Value     float64 `json:"value"`
	Tolerance float64 `json:"tolerance,omitempty"`
}

// UnmarshalJSON reads an exact number from a bare number.
func (n *Number) UnmarshalJSON(b []byte) error {
	var v float64
	if json.Unmarshal(b, &v) == nil {
		*n = Number{Value: v}
		return nil
	}
	type plain Number
	d := json.NewDecoder(bytes.NewReader(b))
	d.DisallowUnknownFields()
	return d.Decode((*plain)(n))
}

// ParseCases reads the cases of one file: a JSON or YAML (.yaml, .yml)
// document holding one case or a list of them. name is the file's name,
// for its format and for messages. Unknown fields are an error, as is a
// case that does not check anything but a judge's opinion.
// InvalidArgument names the file and case.
func ParseCases(name string, data []byte) ([]Case, error) {
	if ext := path.Ext(name); ext == ".yaml" || ext == ".yml" {
		var doc yaml.Node
		if err := yaml.Unmarshal(data, &doc); err != nil {
			return nil, askbi.Errorf(askbi.InvalidArgument, "%s: %s", name, strings.TrimPrefix(err.Error(), "yaml: "))
		}
		v, err := plain(&doc)
		if err != nil {
			return nil, askbi.Errorf(askbi.InvalidArgument, "%s: %v", name, err)
		}
		if data, err = json.Marshal(v); err != nil {
			return nil, askbi.Errorf(askbi.InvalidArgument, "%s: %v", name, err)
		}
	}
	data = bytes.TrimSpace(data)
	if len(data) > 0 && data[0] == '{' {
		data = append(append([]byte{'['}, data...), ']')
	}
	var raw []json.RawMessage
	if err := json.Unmarshal(data, &raw); err != nil {
		return nil, askbi.Errorf(askbi.InvalidArgument, "%s: want a case or a list of cases: %v", name, err)
	}
	cases := make([]Case, 0, len(raw))
	for i, r := range raw {
		var c Case
		d := json.NewDecoder(bytes.NewReader(r))
		d.DisallowUnknownFields()
		if err := d.Decode(&c); err != nil {
			return nil, askbi.Errorf(askbi.InvalidArgument, "%s: case %d: %v", name, i+1, err)
		}
		c.File = name
		if err := c.check(); err != nil {
			return nil, askbi.Errorf(askbi.InvalidArgument, "%s: case %d (%s): %v", name, i+1, c.ID, err)
		}
		cases = append(cases, c)
	}
	return cases, nil
}

// LoadCases reads every .json, .yaml and .yml file in dir of fsys (not
// its subdirectories), in name order, as [ParseCases] does, and checks
// that case IDs are unique. Use os.DirFS for a directory on disk, or
// [Golden] for the demo workspace's set.
func LoadCases(fsys fs.FS, dir string) ([]Case, error) {
	entries, err := fs.ReadDir(fsys, dir)
	if err != nil {
		return nil, askbi.Errorf(askbi.InvalidArgument, "cases: %v", err)
	}
	var names []string
	for _, e := range entries {
		switch path.Ext(e.Name()) {
		case ".json", ".yaml", ".yml":
			if !e.IsDir() {
				names = append(names, e.Name())
			}
		}
	}
	sort.Strings(names)
	var all []Case
	seen := map[string]string{}
	for _, n := range names {
		b, err := fs.ReadFile(fsys, path.Join(dir, n))
		if err != nil {
			return nil, askbi.Errorf(askbi.InvalidArgument, "cases: %v", err)
		}
		cases, err := ParseCases(n, b)
		if err != nil {
			return nil, err
		}
		for _, c := range cases {
			if f, dup := seen[c.ID]; dup {
				return nil, askbi.Errorf(askbi.InvalidArgument, "%s: case %s: the ID is used in %s too", n, c.ID, f)
			}
			seen[c.ID] = n
		}
		all = append(all, cases...)
	}
	if len(all) == 0 {
		return nil, askbi.Errorf(askbi.InvalidArgument, "cases: no .json, .yaml or .yml case file in %s", dir)
	}
	return all, nil
}

// check validates a parsed case.
func (c *Case) check() error {
	c.ID, c.Question, c.Category = strings.TrimSpace(c.ID), strings.TrimSpace(c.Question), strings.TrimSpace(c.Category)
	switch {
	case c.ID == "":
		return fmt.Errorf("id: required")
	case strings.ContainsAny(c.ID, " \t\n|"):
		return fmt.Errorf("id: no spaces or |")
	case c.Question == "":
		return fmt.Errorf("question: required")
	case c.Category == "":
		return fmt.Errorf("category: required")
	}
	switch c.OnApproval {
	case "":
		c.OnApproval = Wait
	case Wait, Approve, Reject:
	default:
		return fmt.Errorf("on_approval: %q is not approve, reject or wait", c.OnApproval)
	}
	refs := [][]ask.ContextRef{c.Context}
	for i, h := range c.History {
		if strings.TrimSpace(h.Message) == "" {
			return fmt.Errorf("history %d: message required", i+1)
		}
		refs = append(refs, h.Context)
	}
	for _, rr := range refs {
		for _, r := range rr {
			if !slices.Contains(dataexec.SearchTypes, r.Type) || r.ID == "" {
				return fmt.Errorf("context: %q %q is not an entity_type (dashboard, chart, dataset, connection) and id", r.Type, r.ID)
			}
		}
	}
	e := c.Expect
	if e.checks() == 0 {
		return fmt.Errorf("expect: no check (a judge is never the only one)")
	}
	filters := e.Filters
	if g := e.Gold; g != nil {
		switch {
		case (g.Dataset == "") == (g.SQL == ""):
			return fmt.Errorf("expect.gold: one of dataset or sql")
		case g.SQL != "" && g.Connection == "":
			return fmt.Errorf("expect.gold: sql needs its connection")
		case g.SQL != "" && len(g.Filters) > 0:
			return fmt.Errorf("expect.gold: filters apply to a dataset; put them in the sql")
		}
		filters = append(slices.Clone(filters), g.Filters...)
	}
	for _, f := range filters {
		if f.Field == "" || !slices.Contains(dataexec.FilterOps, f.Op) {
			return fmt.Errorf("filter %q %q: want a field and an op (%v)", f.Field, f.Op, dataexec.FilterOps)
		}
	}
	for _, n := range e.Numbers {
		if n.Tolerance < 0 {
			return fmt.Errorf("expect.numbers: a tolerance is not negative")
		}
	}
	return nil
}

// principal is the principal c asks as in ws.
func (c Case) principal(ws *Workspace) (access.Principal, error) {
	name := c.As
	if name == "" {
		name = ws.Default
	}
	p, ok := ws.Principals[name]
	if !ok {
		return access.Principal{}, askbi.Errorf(askbi.InvalidArgument, "case %s: the workspace has no principal %q", c.ID, name)
	}
	return p, nil
}

// plain is a YAML node as the JSON value it stands for: mappings with
// string keys, sequences, and scalars as numbers, booleans and null
// where YAML says so, and as text otherwise (a date stays the text it
// was written as).
func plain(n *yaml.Node) (any, error) {
	switch n.Kind {
	case yaml.DocumentNode:
		if len(n.Content) == 0 {
			return nil, nil
		}
		return plain(n.Content[0])
	case yaml.AliasNode:
		return plain(n.Alias)
	case yaml.SequenceNode:
		out := make([]any, len(n.Content))
		for i, c := range n.Content {
			v, err := plain(c)
			if err != nil {
				return nil, err
			}
			out[i] = v
		}
		return out, nil
	case yaml.MappingNode:
		out := make(map[string]any, len(n.Content)/2)
		for i := 0; i+1 < len(n.Content); i += 2 {
			k := n.Content[i]
			if k.Kind != yaml.ScalarNode {
				return nil, fmt.Errorf("line %d: a key must be text", k.Line)
			}
			v, err := plain(n.Content[i+1])
			if err != nil {
				return nil, err
			}
			out[k.Value] = v
		}
		return out, nil
	case yaml.ScalarNode:
		switch n.ShortTag() {
		case "!!int", "!!float", "!!bool", "!!null":
			var v any
			if err := n.Decode(&v); err != nil {
				return nil, fmt.Errorf("line %d: %v", n.Line, err)
			}
			return v, nil
		}
		return n.Value, nil
	}
	return nil, fmt.Errorf("line %d: unexpected YAML", n.Line)
}
