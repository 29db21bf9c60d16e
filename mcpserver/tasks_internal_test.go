package mcpserver

import (
	"encoding/json"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestTaskable: only data reads may become tasks: run_dataset,
// get_chart_data, explore_data's preview; never its save (a write) or
// inspection, nor the other tools.
func TestTaskable(t *testing.T) {
	for _, tc := range []struct {
		tool, args string
		want       bool
	}{
		{"run_dataset", `{"dataset_id":"ds"}`, true},
		{"get_chart_data", `{"chart_id":"c"}`, true},
		{"explore_data", `{"operation":"preview","sql":"SELECT 1"}`, true},
		{"explore_data", `{"operation":"save","sql":"SELECT 1"}`, false},
		{"explore_data", `{"operation":"inspect"}`, false},
		{"explore_data", `{"operation":"preview","operation":"save"}`, false},
		{"explore_data", `not json`, false},
		{"search_workspace", `{}`, false},
		{"get_workspace_activity", `{}`, false},
		{"create_chart_preview", `{}`, false},
		{"unknown", `{}`, false},
	} {
		call := &mcp.CallToolRequest{Params: &mcp.CallToolParamsRaw{Name: tc.tool, Arguments: json.RawMessage(tc.args)}}
		if got := taskable(call); got != tc.want {
			t.Errorf("taskable(%s %s) = %v, want %v", tc.tool, tc.args, got, tc.want)
		}
	}
}

// TestTasksDeclared: only the request's own client capabilities declare
// the extension, as an object.
func TestTasksDeclared(t *testing.T) {
	for _, tc := range []struct {
		meta string
		want bool
	}{
		{`{"io.modelcontextprotocol/clientCapabilities":{"extensions":{"io.modelcontextprotocol/tasks":{}}}}`, true},
		{`{"io.modelcontextprotocol/clientCapabilities":{"extensions":{"io.modelcontextprotocol/ui":{}}}}`, false},
		{`{"io.modelcontextprotocol/clientCapabilities":{"extensions":{"io.modelcontextprotocol/tasks":true}}}`, false},
		{`{"io.modelcontextprotocol/clientCapabilities":{"tasks":{}}}`, false},
		{`{"io.modelcontextprotocol/tasks":{}}`, false},
		{`{}`, false},
	} {
		var meta mcp.Meta
		if err := json.Unmarshal([]byte(tc.meta), &meta); err != nil {
			t.Fatal(err)
		}
		call := &mcp.CallToolRequest{Params: &mcp.CallToolParamsRaw{Meta: meta, Name: "run_dataset"}}
		if got := tasksDeclared(call); got != tc.want {
			t.Errorf("tasksDeclared(%s) = %v, want %v", tc.meta, got, tc.want)
		}
	}
	if tasksDeclared(&mcp.CallToolRequest{}) {
		t.Error("a request without params declares tasks")
	}
}
