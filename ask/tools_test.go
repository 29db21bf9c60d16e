package ask_test

import (
	"encoding/json"
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/jsonschema-go/jsonschema"

	"github.com/askbi/askbi/ask"
	"github.com/askbi/askbi/dataexec"
)

// TestProductToolsAreDataexecActions: the chat's tools take their names,
// classes and input schemas (and so their enums) from dataexec's actions,
// the same definitions the MCP server uses.
func TestProductToolsAreDataexecActions(t *testing.T) {
	tools := map[string]ask.Tool{}
	for _, tool := range ask.ProductTools(nil) {
		tools[tool.Name] = tool
	}
	schema := func(name string) *jsonschema.Schema {
		var s jsonschema.Schema
		if err := json.Unmarshal(tools[name].InputSchema, &s); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		return &s
	}
	enum := func(s *jsonschema.Schema) []string {
		var out []string
		for _, v := range s.Enum {
			out = append(out, fmt.Sprint(v))
		}
		return out
	}
	strs := func(vs []string) []string { return vs }
	var chartTypes, ops, types []string
	for _, c := range dataexec.ChartTypes {
		chartTypes = append(chartTypes, string(c))
	}
	for _, o := range dataexec.FilterOps {
		ops = append(ops, string(o))
	}
	for _, ty := range dataexec.SearchTypes {
		types = append(types, string(ty))
	}
	for _, tc := range []struct {
		name string
		got  *jsonschema.Schema
		want []string
	}{
		{"create_chart_preview chart_type", schema("create_chart_preview").Properties["chart_type"], strs(chartTypes)},
		{"update_chart chart_type", schema("update_chart").Properties["chart_type"], strs(chartTypes)},
		{"run_dataset filter op", schema("run_dataset").Properties["filters"].Items.Properties["op"], strs(ops)},
		{"search_workspace types", schema("search_workspace").Properties["types"].Items, strs(types)},
	} {
		if diff := cmp.Diff(tc.want, enum(tc.got)); diff != "" {
			t.Errorf("%s mismatch (-dataexec +tool):\n%s", tc.name, diff)
		}
	}
	for _, tc := range []struct {
		tool  string
		class dataexec.Class
		input json.RawMessage
	}{
		{"search_workspace", dataexec.SearchAction.Class, dataexec.SearchAction.Input},
		{"read_dataset_fields", dataexec.DatasetFieldsAction.Class, dataexec.DatasetFieldsAction.Input},
		{"run_dataset", dataexec.RunDatasetAction.Class, dataexec.RunDatasetAction.Input},
		{"get_chart_data", dataexec.ChartDataAction.Class, dataexec.ChartDataAction.Input},
		{"create_chart_preview", dataexec.ChartPreviewAction.Class, dataexec.ChartPreviewAction.Input},
		{"update_chart", dataexec.UpdateChartAction.Class, dataexec.UpdateChartAction.Input},
		{"add_preview_to_dashboard", dataexec.PlaceChartAction.Class, dataexec.PlaceChartAction.Input},
		{"delete_dashboard", dataexec.DeleteDashboardAction.Class, dataexec.DeleteDashboardAction.Input},
	} {
		got, ok := tools[tc.tool]
		if !ok {
			t.Errorf("no tool %s", tc.tool)
			continue
		}
		if got.Class != tc.class || string(got.InputSchema) != string(tc.input) {
			t.Errorf("%s: class %s, schema %s; want the action's %s, %s", tc.tool, got.Class, got.InputSchema, tc.class, tc.input)
		}
	}
}
