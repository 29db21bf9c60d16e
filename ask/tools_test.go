package ask_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/jsonschema-go/jsonschema"

	"github.com/askbi/askbi/ask"
	"github.com/askbi/askbi/dataexec"
	"github.com/askbi/askbi/workspace"
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
	for _, c := range workspace.ChartTypes {
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

// TestUndeclaredFilterSharesShapeOnly (seed 004): a tool registered
// without a Filter shares the strictest view, its output's shape, even
// where the team shares rows; one that declares TableFilter shares rows.
func TestUndeclaredFilterSharesShapeOnly(t *testing.T) {
	rows := func(context.Context, ask.Call) (ask.Output, error) {
		return ask.Output{Summary: "2 rows", Data: map[string]any{"columns": []string{"email", "plan"},
			"rows": [][]any{{"ann@example.com", "pro"}, {"bo@example.com", "free"}}}}, nil
	}
	schema := json.RawMessage(`{"type":"object"}`)
	quiet := ask.Tool{Name: "crm_contacts", Description: "Contacts.", InputSchema: schema, Class: dataexec.ClassReadOnly, Label: "Read contacts", Run: rows}
	declared := ask.Tool{Name: "crm_table", Description: "Contacts.", InputSchema: schema, Class: dataexec.ClassReadOnly, Label: "Read contacts",
		Filter: ask.TableFilter, Run: rows}
	model := &script{replies: []ask.ModelReply{call("crm_contacts", `{}`), call("crm_table", `{}`)}}
	e := newEnv(t, model, func(c *envConfig) { c.extra = append(c.extra, quiet, declared) })
	e.MustSend(t, alice, e.MustConversation(t, alice), "who are our contacts?", nil) // the team shares rows
	reqs := model.requests()
	quietOut := reqs[1].Messages[len(reqs[1].Messages)-1].Text
	if strings.Contains(quietOut, "ann@example.com") || !strings.Contains(quietOut, `"values_withheld"`) || !strings.Contains(quietOut, `"columns":["string"]`) {
		t.Errorf("an undeclared filter showed the model %s; want the shape only", quietOut)
	}
	if declaredOut := reqs[2].Messages[len(reqs[2].Messages)-1].Text; !strings.Contains(declaredOut, "ann@example.com") {
		t.Errorf("TableFilter at rows showed the model %s; want the rows", declaredOut)
	}
}
