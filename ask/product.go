package ask

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/askbi/askbi"
	"github.com/askbi/askbi/access"
	"github.com/askbi/askbi/dataexec"
)

// previewRows caps the rows preview_data keeps for the model.
const previewRows = 50

// ProductTools returns the product's own tools, each a thin call into
// exec, the same executor (and so the same access checks) the MCP server
// uses.
func ProductTools(exec *dataexec.Executor) []Tool {
	decode := func(call Call, v any) error {
		if err := json.Unmarshal(call.Arguments, v); err != nil {
			return askbi.Errorf(askbi.InvalidArgument, "arguments: %s", shorten(err.Error(), 120))
		}
		return nil
	}
	return []Tool{
		{
			Name:        "search_workspace",
			Description: "Find dashboards, charts and datasets by name. Returns their ids.",
			InputSchema: json.RawMessage(`{"type":"object","properties":{"query":{"type":"string","maxLength":200},"types":{"type":"array","items":{"enum":["dashboard","chart","dataset","connection"]}},"limit":{"type":"integer","minimum":1,"maximum":50}},"additionalProperties":false}`),
			Class:       ClassReadOnly,
			Label:       "Searched the workspace",
			Run: func(ctx context.Context, call Call) (Output, error) {
				var in struct {
					Query string              `json:"query"`
					Types []access.EntityType `json:"types"`
					Limit int                 `json:"limit"`
				}
				if err := decode(call, &in); err != nil {
					return Output{}, err
				}
				refs, err := exec.Search(ctx, call.Principal, dataexec.SearchQuery{Text: in.Query, Types: in.Types, Limit: in.Limit})
				if err != nil {
					return Output{}, err
				}
				return Output{Summary: count(len(refs), "result"), Data: map[string]any{"results": refs}}, nil
			},
		},
		{
			Name:        "read_dataset_fields",
			Description: "List a dataset's fields.",
			InputSchema: json.RawMessage(`{"type":"object","properties":{"dataset_id":{"type":"string","minLength":1}},"required":["dataset_id"],"additionalProperties":false}`),
			Class:       ClassReadOnly,
			Label:       "Read dataset fields",
			Run: func(ctx context.Context, call Call) (Output, error) {
				var in struct {
					DatasetID string `json:"dataset_id"`
				}
				if err := decode(call, &in); err != nil {
					return Output{}, err
				}
				res, err := exec.RunDataset(ctx, call.Principal, in.DatasetID, dataexec.Params{})
				if err != nil {
					return Output{}, err
				}
				return Output{
					Summary: count(len(res.Columns), "field"),
					Data:    map[string]any{"dataset": res.Dataset, "fields": res.Columns, "row_count": res.RowCount},
				}, nil
			},
		},
		{
			Name:        "preview_data",
			Description: "Run a dataset and preview its rows, optionally filtered.",
			InputSchema: json.RawMessage(`{"type":"object","properties":{"dataset_id":{"type":"string","minLength":1},"filters":{"type":"array","maxItems":20,"items":{"type":"object","properties":{"field":{"type":"string"},"op":{"enum":["eq","ne","gt","gte","lt","lte","contains","in"]},"value":{}},"required":["field","op"]}}},"required":["dataset_id"],"additionalProperties":false}`),
			Class:       ClassReadOnly,
			Label:       "Previewed data",
			Filter:      TableFilter,
			Run: func(ctx context.Context, call Call) (Output, error) {
				var in struct {
					DatasetID string            `json:"dataset_id"`
					Filters   []dataexec.Filter `json:"filters"`
				}
				if err := decode(call, &in); err != nil {
					return Output{}, err
				}
				res, err := exec.RunDataset(ctx, call.Principal, in.DatasetID, dataexec.Params{Filters: in.Filters})
				if err != nil {
					return Output{}, err
				}
				rows := res.Rows[:min(len(res.Rows), previewRows)]
				return Output{
					Summary: count(res.RowCount, "row"),
					Data: map[string]any{"dataset": res.Dataset, "columns": res.Columns, "rows": rows,
						"row_count": res.RowCount, "truncated": res.Truncated || len(rows) < len(res.Rows)},
				}, nil
			},
		},
		{
			Name:        "create_chart_preview",
			Description: "Create a temporary chart from a dataset. The user can add it to a dashboard.",
			InputSchema: json.RawMessage(`{"type":"object","properties":{"dataset_id":{"type":"string","minLength":1},"chart_type":{"enum":["line","bar","area","pie","doughnut","table","kpi"]},"x_field":{"type":"string"},"y_fields":{"type":"array","minItems":1,"maxItems":10,"items":{"type":"string"}},"name":{"type":"string","minLength":1,"maxLength":100}},"required":["dataset_id","chart_type","y_fields","name"],"additionalProperties":false}`),
			// A preview is private to the conversation and changes no
			// dashboard, so it runs without approval.
			Class: ClassReadOnly,
			Label: "Created chart preview",
			Run: func(ctx context.Context, call Call) (Output, error) {
				var spec dataexec.ChartSpec
				if err := decode(call, &spec); err != nil {
					return Output{}, err
				}
				cr, err := exec.CreateChartPreview(ctx, call.Principal, spec)
				if err != nil {
					return Output{}, err
				}
				return chartOutput("Created preview", cr), nil
			},
		},
		{
			Name:        "update_chart",
			Description: "Change a chart's type, fields or name. Fields left out keep their values.",
			InputSchema: json.RawMessage(`{"type":"object","properties":{"chart_id":{"type":"string","minLength":1},"chart_type":{"enum":["line","bar","area","pie","doughnut","table","kpi"]},"x_field":{"type":"string"},"y_fields":{"type":"array","minItems":1,"maxItems":10,"items":{"type":"string"}},"name":{"type":"string","minLength":1,"maxLength":100}},"required":["chart_id"],"additionalProperties":false}`),
			Class:       ClassMutating,
			Label:       "Updated chart",
			Run: func(ctx context.Context, call Call) (Output, error) {
				var in struct {
					ChartID string `json:"chart_id"`
					dataexec.ChartSpec
				}
				if err := decode(call, &in); err != nil {
					return Output{}, err
				}
				cur, err := exec.Chart(ctx, call.Principal, in.ChartID)
				if err != nil {
					return Output{}, err
				}
				spec := dataexec.ChartSpec{DatasetID: cur.Chart.DatasetID, Name: cur.Chart.Name, Type: cur.Chart.Type, XField: cur.Chart.XField, YFields: cur.Chart.YFields}
				if in.Name != "" {
					spec.Name = in.Name
				}
				if in.Type != "" {
					spec.Type = in.Type
				}
				if in.XField != "" {
					spec.XField = in.XField
				}
				if len(in.YFields) > 0 {
					spec.YFields = in.YFields
				}
				cr, err := exec.UpdateChart(ctx, call.Principal, in.ChartID, spec)
				if err != nil {
					return Output{}, err
				}
				return chartOutput("Updated", cr), nil
			},
		},
		{
			Name:        "add_preview_to_dashboard",
			Description: "Place a preview chart on a dashboard.",
			InputSchema: json.RawMessage(`{"type":"object","properties":{"chart_id":{"type":"string","minLength":1},"dashboard_id":{"type":"string","minLength":1}},"required":["chart_id","dashboard_id"],"additionalProperties":false}`),
			Class:       ClassMutating,
			Label:       "Added chart to dashboard",
			Run: func(ctx context.Context, call Call) (Output, error) {
				var in struct {
					ChartID     string `json:"chart_id"`
					DashboardID string `json:"dashboard_id"`
				}
				if err := decode(call, &in); err != nil {
					return Output{}, err
				}
				cr, err := exec.PlaceChart(ctx, call.Principal, in.ChartID, in.DashboardID)
				if err != nil {
					return Output{}, err
				}
				return chartOutput("Added", cr), nil
			},
		},
		{
			Name:        "delete_dashboard",
			Description: "Delete a dashboard and its charts.",
			InputSchema: json.RawMessage(`{"type":"object","properties":{"dashboard_id":{"type":"string","minLength":1}},"required":["dashboard_id"],"additionalProperties":false}`),
			Class:       ClassDestructive,
			Label:       "Deleted dashboard",
			Run: func(ctx context.Context, call Call) (Output, error) {
				var in struct {
					DashboardID string `json:"dashboard_id"`
				}
				if err := decode(call, &in); err != nil {
					return Output{}, err
				}
				if err := exec.DeleteDashboard(ctx, call.Principal, in.DashboardID); err != nil {
					return Output{}, err
				}
				return Output{Summary: "Dashboard deleted", Data: map[string]any{"deleted": in.DashboardID}}, nil
			},
		},
	}
}

// ChartResult is the safe result of a chart tool: references only. The
// client builds URLs. Status is preview, saved, or unavailable when the
// chart no longer exists.
type ChartResult struct {
	Status    string             `json:"status"`
	Chart     *dataexec.Ref      `json:"chart"`
	Datasets  []dataexec.Ref     `json:"datasets"`
	Dashboard *dataexec.Ref      `json:"dashboard"`
	Type      dataexec.ChartType `json:"chart_type,omitempty"`
}

func chartResultOf(cr *dataexec.ChartResult) ChartResult {
	return ChartResult{
		Status:    string(cr.Status),
		Chart:     &dataexec.Ref{Type: access.TypeChart, ID: cr.Chart.ID, Name: cr.Chart.Name, ProjectID: cr.Chart.ProjectID},
		Datasets:  cr.Datasets,
		Dashboard: cr.Dashboard,
		Type:      cr.Chart.Type,
	}
}

func chartOutput(verb string, cr *dataexec.ChartResult) Output {
	res := chartResultOf(cr)
	data := map[string]any{"chart": res.Chart, "status": res.Status, "chart_type": res.Type, "dashboard": res.Dashboard}
	if cr.Data != nil {
		data["points"] = len(cr.Data.Labels)
		data["series"] = len(cr.Data.Series)
	}
	return Output{Summary: fmt.Sprintf("%s chart %q", verb, cr.Chart.Name), Data: data, Result: res}
}

// count is "1 row", "2 rows".
func count(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}
