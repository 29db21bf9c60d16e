package ask

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"

	"github.com/askbi/askbi"
	"github.com/askbi/askbi/dataexec"
	"github.com/askbi/askbi/workspace"
)

// previewRows caps the rows run_dataset keeps for the model.
const previewRows = 50

// ProductTools returns the product's own tools, each composed from a
// dataexec action (its name, input schema, class and executor call: the
// same definitions, access checks and limits the MCP server uses) with the
// wording, filter and output shaping of the chat.
func ProductTools(exec *dataexec.Executor) []Tool {
	return []Tool{
		fromAction(exec, dataexec.SearchAction, "Find dashboards, charts, datasets and connections by name. Returns their ids.",
			"Searched the workspace", ShowAll, func(refs []dataexec.Ref) Output {
				return Output{Summary: count(len(refs), "result"), Data: map[string]any{"results": refs}}
			}),
		fromAction(exec, dataexec.DatasetFieldsAction, "List a dataset's fields.", "Read dataset fields", ShowAll,
			func(res *dataexec.Result) Output {
				return Output{Summary: count(len(res.Columns), "field"),
					Data: map[string]any{"dataset": res.Dataset, "fields": res.Columns, "row_count": res.RowCount}}
			}),
		// The model sees at most previewRows rows of a preview.
		tabled(exec, scopeChecked(exec, fromAction(exec, dataexec.RunDatasetAction, "Run a dataset and preview its rows, optionally filtered.", "Previewed data",
			TableFilter, func(res *dataexec.Result) Output {
				head := res.Head(previewRows) // of a cached result, only these rows are decoded
				return Output{Summary: count(res.RowCount, "row"),
					Data: map[string]any{"dataset": res.Dataset, "columns": res.Columns, "rows": head.Rows(),
						"row_count": res.RowCount, "truncated": res.Truncated || head.RowCount < res.RowCount}}
			}))),
		// The model sees a chart's data as the table it draws, under the
		// same filter as a dataset's rows; the client shows the chart.
		fromAction(exec, dataexec.ChartDataAction, "Read a chart's data: the table it draws (its labels and series) and its datasets. Use it to answer about a selected chart.",
			"Read chart", TableFilter, chartTable),
		previewing(scopeChecked(exec, charting(fromAction(exec, dataexec.ChartPreviewAction,
			"Create a temporary chart from a dataset: one per metric or breakdown. The chart result lets the user place it; an identical request returns the existing preview.",
			"Created chart preview", ShowAll, chartOutput("Created preview"))))),
		charting(titled("Update chart", fromAction(exec, dataexec.UpdateChartAction, "Change a chart's type, fields or name. Fields left out keep their values.",
			"Updated chart", ShowAll, chartOutput("Updated")))),
		charting(titled("Add chart to dashboard", fromAction(exec, dataexec.PlaceChartAction, "Place a preview chart on a dashboard.", "Added chart to dashboard",
			ShowAll, chartOutput("Added")))),
		ownCharts(charting(titled("Add charts to dashboard", fromAction(exec, dataexec.PlaceChartsAction,
			"Place several preview charts of this conversation on one dashboard in one step, only after the user agreed and named or selected the dashboard.",
			"Added charts to dashboard", ShowAll, placedOutput)))),
		titled("Delete dashboard", fromAction(exec, dataexec.DeleteDashboardAction, "Delete a dashboard and its charts.", "Deleted dashboard", ShowAll,
			func(d dataexec.Deleted) Output {
				return Output{Summary: "Dashboard deleted", Data: map[string]any{"deleted": d.Deleted.ID}}
			})),
	}
}

// DatasetResultType is the Type of a DatasetResult.
const DatasetResultType = "dataset_result"

// DatasetResult is the chat result of a dataset run (run_dataset):
// references only, like a chart result: the dataset, the filters it ran
// with and the dataset's page. A client that shows the rows reads them
// from the Data API (GET /datasets/{id}/data with the same filters, see
// package datahttp); the reference server's page does so, as a table,
// for an answer that charts nothing (a dataset with no numeric field).
type DatasetResult struct {
	Type    string             `json:"type"` // DatasetResultType
	Dataset dataexec.Ref       `json:"dataset"`
	Filters []workspace.Filter `json:"filters,omitempty"`
	URL     string             `json:"url,omitempty"`
}

// tabled gives a dataset run the client result that names what ran
// (DatasetResult).
func tabled(exec *dataexec.Executor, t Tool) Tool {
	run := t.Run
	t.Run = func(ctx context.Context, call Call) (Output, error) {
		out, err := run(ctx, call)
		data, _ := out.Data.(map[string]any)
		ds, _ := data["dataset"].(*dataexec.Ref)
		if err != nil || out.Result != nil || ds == nil {
			return out, err
		}
		var in dataexec.DatasetRun
		json.Unmarshal(call.Arguments, &in)
		out.Result = DatasetResult{Type: DatasetResultType, Dataset: *ds, Filters: in.Filters, URL: exec.Links()(dataexec.PageDataset, ds.ID)}
		return out, nil
	}
	return t
}

// previewing marks a tool that creates previews (Tool.Preview).
func previewing(t Tool) Tool {
	t.Preview = true
	return t
}

// ownCharts marks a tool whose charts must be the conversation's
// (Tool.OwnCharts).
func ownCharts(t Tool) Tool {
	t.OwnCharts = true
	return t
}

// placedOutput shapes a batch placement: the charts' references for the
// model. It has no client Result of its own: the chart results already
// shown switch to Saved when they are re-read.
func placedOutput(p *dataexec.Placed) Output {
	charts := make([]any, len(p.Charts))
	for i, cr := range p.Charts {
		charts[i] = map[string]any{"chart": cr.Chart, "status": cr.Status}
	}
	return Output{Summary: fmt.Sprintf("Added %s to %q", count(len(p.Charts), "chart"), p.Dashboard.Name),
		Data: map[string]any{"dashboard": p.Dashboard, "charts": charts}}
}

// charting marks a chart tool (Tool.Chart).
func charting(t Tool) Tool {
	t.Chart = true
	return t
}

func titled(title string, t Tool) Tool {
	t.Title = title
	return t
}

// fromAction makes a tool of a product action: the action gives the name,
// input schema, class and call; the tool adds the description for the
// model, the work-summary label, the filter on what the model sees and
// the shaping of the output.
func fromAction[In, Out any](exec *dataexec.Executor, a dataexec.Action[In, Out], desc, label string,
	filter func(json.RawMessage, Sharing) json.RawMessage, shape func(Out) Output) Tool {
	t := Tool{Name: a.Name, Description: desc, InputSchema: a.Input, Class: a.Class, Label: label, Filter: filter,
		Run: func(ctx context.Context, call Call) (Output, error) {
			var in In
			if err := json.Unmarshal(call.Arguments, &in); err != nil {
				return Output{}, askbi.Errorf(askbi.InvalidArgument, "arguments: %s", shorten(err.Error(), 120))
			}
			out, err := a.Run(exec, ctx, call.Principal, in)
			if err != nil {
				return Output{}, err
			}
			return shape(out), nil
		}}
	if a.Check != nil {
		// Before a change is proposed for approval, the action's own
		// checks say whether this user could ever make it.
		t.Precheck = func(ctx context.Context, call Call) error {
			var in In
			if err := json.Unmarshal(call.Arguments, &in); err != nil {
				return askbi.Errorf(askbi.InvalidArgument, "arguments: %s", shorten(err.Error(), 120))
			}
			return a.Check(exec, ctx, call.Principal, in)
		}
	}
	return t
}

// chartOutput shapes a chart action's result: the safe references for the
// client, and their counts for the model.
func chartOutput(verb string) func(*dataexec.ChartResult) Output {
	return func(cr *dataexec.ChartResult) Output {
		data := map[string]any{"chart": cr.Chart, "status": cr.Status, "chart_type": cr.ChartType, "dashboard": cr.Dashboard, "datasets": cr.Datasets}
		if cr.Data != nil {
			data["points"] = len(cr.Data.Labels)
			data["series"] = len(cr.Data.Series)
		}
		return Output{Summary: fmt.Sprintf("%s chart %q", verb, cr.Chart.Name), Data: data, Result: cr.WithoutData()}
	}
}

// chartTable shapes a chart read: the chart's references, and its data as
// a table (the X field, then one column per series; one row per label)
// that TableFilter can cut to the sharing level.
func chartTable(cr *dataexec.ChartResult) Output {
	data := map[string]any{"chart": cr.Chart, "status": cr.Status, "chart_type": cr.ChartType, "dashboard": cr.Dashboard, "datasets": cr.Datasets}
	if d := cr.Data; d != nil {
		cols := []string{cmp.Or(d.XField, "label")}
		for _, s := range d.Series {
			cols = append(cols, s.Name)
		}
		rows := make([][]any, len(d.Labels))
		for i, l := range d.Labels {
			rows[i] = append(make([]any, 0, len(cols)), l)
			for _, s := range d.Series {
				var v any
				if i < len(s.Values) && s.Values[i] != nil {
					v = *s.Values[i]
				}
				rows[i] = append(rows[i], v)
			}
		}
		data["columns"], data["rows"], data["row_count"], data["truncated"] = cols, rows, len(rows), d.Truncated
	}
	return Output{Summary: fmt.Sprintf("Read chart %q", cr.Chart.Name), Data: data, Result: cr.WithoutData()}
}

// count is "1 row", "2 rows".
func count(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}
