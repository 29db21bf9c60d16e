package askeval

import (
	"bytes"
	"context"
	"encoding/json"
	"regexp"
	"strconv"
	"strings"

	"github.com/askbi/askbi/access"
	"github.com/askbi/askbi/ask"
	"github.com/askbi/askbi/dataexec"
	"github.com/askbi/askbi/workspace"
)

// outcome is what one run's scored turn did, as the assistant saved it:
// its answer, its tool calls with their full outputs (what the checks
// read; never reported), and what the model saw of them.
type outcome struct {
	answer string
	calls  []call
	// approvals are the tools whose approval the turn asked.
	approvals []string
	state     ask.TurnState
	err       error
	// usage sums the tokens of every turn of the conversation.
	usage ask.Usage
	// results are the data the turn's tools returned.
	results []result
	// evidence is each tool output as the model saw it: the tool's
	// filter at the sharing level.
	evidence []string
}

// call is one tool call of the scored turn.
type call struct {
	tool  string
	args  map[string]any
	state ask.RunState // "" when it was refused before it was proposed
	// output is the tool's whole saved output (redacted), or the
	// notice saved for it.
	output json.RawMessage
}

// ran reports whether the call was carried out, to completion or not.
func (c call) ran() bool {
	return c.state == ask.RunCompleted || c.state == ask.RunFailed || c.state == ask.RunRunning
}

// result is one table of data a tool returned: a dataset's rows, a
// chart's data, or the data a chart the turn made or changed draws.
type result struct {
	tool string
	// datasets and chart are what the data came from.
	datasets []string
	chart    string
	// filters are the call's own filters, and conditions those saved on
	// its datasets.
	filters    []workspace.Filter
	conditions []workspace.Filter
	xField     string
	chartType  workspace.ChartType
	t          *table
}

// table is a result's rows: rows holds those returned, which may be the
// first of count.
type table struct {
	columns []string
	rows    [][]any
	count   int
}

// collect reads what the scored turn of d did from its stores and
// events.
func collect(ctx context.Context, ws *Workspace, live access.Principal, stores ask.Stores, reg *ask.Registry, d *driver, level ask.Sharing) (outcome, error) {
	var out outcome
	turns, err := stores.Turns.Turns(ctx, d.conv)
	if err != nil {
		return out, err
	}
	for _, t := range turns {
		out.usage.Add(t.Usage)
		if t.ID == d.turn {
			out.state = t.State
		}
	}
	entries, err := stores.Turns.Entries(ctx, d.conv, 1<<20)
	if err != nil {
		return out, err
	}
	runs, err := stores.ToolRuns.ToolRuns(ctx, d.conv)
	if err != nil {
		return out, err
	}
	states := map[string]ask.RunState{}
	for _, r := range runs {
		states[r.CallID] = r.State
		if r.TurnID == d.turn && d.turn != "" && r.ApprovalID != "" {
			out.approvals = append(out.approvals, r.Tool)
		}
	}
	outputs := map[string]ask.Entry{}
	for _, e := range entries {
		if e.Role == ask.RoleTool {
			outputs[e.ToolCallID] = e
			filter := ask.ShowAll
			if t, ok := reg.Tool(e.Tool); ok {
				filter = t.Filter
			}
			out.evidence = append(out.evidence, e.Tool+": "+string(filter(e.Output, lower(e.Sharing, level))))
		}
	}
	// The calls and answer are the scored turn's; the data is every
	// turn's, as a follow-up may answer from an earlier turn's.
	var texts []string
	for _, e := range entries {
		if e.Role != ask.RoleAssistant {
			continue
		}
		scored := e.TurnID == d.turn && d.turn != ""
		if scored && strings.TrimSpace(e.Text) != "" {
			texts = append(texts, e.Text)
		}
		for _, tc := range e.ToolCalls {
			c := call{tool: tc.Name, state: states[tc.ID], output: outputs[tc.ID].Output}
			json.Unmarshal(resolve(tc.Arguments, d.sel), &c.args)
			if scored {
				out.calls = append(out.calls, c)
			}
			if c.state == ask.RunCompleted {
				if r, ok := readResult(ctx, ws, live, c); ok {
					out.results = append(out.results, r)
				}
			}
		}
	}
	out.answer = strings.Join(texts, "\n")
	return out, nil
}

// toolNames lists the turn's calls: a tool's name, and its state when
// it did not complete ("delete_dashboard (approval_required)").
func (o outcome) toolNames() []string {
	var names []string
	for _, c := range o.calls {
		switch c.state {
		case ask.RunCompleted:
			names = append(names, c.tool)
		case "":
			names = append(names, c.tool+" (not proposed)")
		default:
			names = append(names, c.tool+" ("+string(c.state)+")")
		}
	}
	return names
}

var handleRe = regexp.MustCompile(`"@c([0-9]{1,2})"`)

// resolve replaces the "@cN" handles of args with the IDs of the
// selection in force, as the assistant did before the call ran.
func resolve(args json.RawMessage, sel []ask.ContextRef) json.RawMessage {
	return handleRe.ReplaceAllFunc(args, func(m []byte) []byte {
		n, _ := strconv.Atoi(string(m[3 : len(m)-1]))
		if n < 1 || n > len(sel) {
			return m
		}
		b, _ := json.Marshal(sel[n-1].ID)
		return b
	})
}

// readResult is the data of a completed call, when it returned or made
// some: the rows of a dataset run or a chart read as the tool saved
// them, or, for a chart the call made or changed, the data that chart
// draws, read now through the executor as the case's principal.
func readResult(ctx context.Context, ws *Workspace, live access.Principal, c call) (result, bool) {
	var o struct {
		Dataset   *dataexec.Ref       `json:"dataset"`
		Datasets  []dataexec.Ref      `json:"datasets"`
		Chart     *dataexec.Ref       `json:"chart"`
		ChartType workspace.ChartType `json:"chart_type"`
		Columns   []string            `json:"columns"`
		Rows      [][]any             `json:"rows"`
		RowCount  *int                `json:"row_count"`
	}
	d := json.NewDecoder(bytes.NewReader(c.output))
	d.UseNumber()
	if d.Decode(&o) != nil {
		return result{}, false
	}
	r := result{tool: c.tool, chartType: o.ChartType}
	if o.Dataset != nil {
		r.datasets = append(r.datasets, o.Dataset.ID)
	}
	for _, ds := range o.Datasets {
		r.datasets = append(r.datasets, ds.ID)
	}
	var chartID string
	if o.Chart != nil {
		chartID = o.Chart.ID
		// A preview the turn made is a new chart, which no case names:
		// its datasets are what it read.
		if c.tool != dataexec.ChartPreviewAction.Name {
			r.chart = chartID
		}
	}
	r.filters = filtersOf(c.args)
	r.xField, _ = c.args["x_field"].(string)
	for _, id := range r.datasets {
		if ds, err := ws.Catalog.Dataset(ctx, id); err == nil {
			r.conditions = append(r.conditions, ds.Conditions()...)
		}
	}
	switch {
	case o.Columns != nil && o.Rows != nil:
		r.t = &table{columns: o.Columns, rows: o.Rows, count: len(o.Rows)}
		if o.RowCount != nil && *o.RowCount > len(o.Rows) {
			r.t.count = *o.RowCount
		}
	case chartID != "":
		cr, err := dataexec.ChartDataAction.Run(ws.Executor, ctx, live, dataexec.ChartRun{ChartID: chartID})
		if err != nil || cr.Data == nil {
			break
		}
		r.t = chartTable(cr.Data)
		if r.xField == "" {
			r.xField = cr.Data.XField
		}
		if r.chartType == "" {
			r.chartType = cr.ChartType
		}
	}
	if r.t == nil && chartID == "" && len(r.datasets) == 0 {
		return result{}, false
	}
	return r, true
}

// chartTable is a chart's data as a table: its X field, then one
// column per series, one row per label.
func chartTable(d *dataexec.ChartData) *table {
	t := &table{columns: []string{d.XField}, count: len(d.Labels)}
	for _, s := range d.Series {
		t.columns = append(t.columns, s.Name)
	}
	for i, l := range d.Labels {
		row := []any{l}
		for _, s := range d.Series {
			var v any
			if i < len(s.Values) && s.Values[i] != nil {
				v = *s.Values[i]
			}
			row = append(row, v)
		}
		t.rows = append(t.rows, row)
	}
	return t
}

// filtersOf reads a call's "filters" argument.
func filtersOf(args map[string]any) []workspace.Filter {
	raw, ok := args["filters"]
	if !ok {
		return nil
	}
	b, _ := json.Marshal(raw)
	var fs []workspace.Filter
	json.Unmarshal(b, &fs)
	return fs
}
