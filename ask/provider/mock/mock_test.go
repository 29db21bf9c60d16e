package mock_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/askbi/askbi/ask"
	"github.com/askbi/askbi/ask/provider/mock"
)

// TestPreviewName: the demo model names a preview after the dataset as
// its owner spells it ("MRR by month" from the dataset "MRR", never
// "Mrr by month"), whatever the case of the question.
func TestPreviewName(t *testing.T) {
	for _, tc := range []struct{ question, dataset, cols, want string }{
		{"show mrr by month", "MRR", `["month","mrr"]`, "MRR by month"},
		{"show signups by week", "Weekly signups", `["week","signups"]`, "Signups by week"},
		{"show revenue by month", "Revenue", `["month","revenue"]`, "Revenue by month"},
	} {
		t.Run(tc.question, func(t *testing.T) {
			run := `{"dataset":{"type":"dataset","id":"ds_1","name":"` + tc.dataset + `"},"columns":` + tc.cols + `,"rows":[["2026-10",1]]}`
			reply, err := mock.New().Complete(context.Background(), ask.ModelRequest{Messages: []ask.Message{
				{Role: ask.RoleUser, Text: tc.question},
				{Role: ask.RoleAssistant, ToolCalls: []ask.ToolCall{{ID: "c1", Name: "run_dataset", Arguments: json.RawMessage(`{"dataset_id":"ds_1"}`)}}},
				{Role: ask.RoleTool, ToolCallID: "c1", Text: "<tool_output>\n" + run + "\n</tool_output>"},
			}}, nil)
			if err != nil {
				t.Fatal(err)
			}
			if len(reply.ToolCalls) != 1 || reply.ToolCalls[0].Name != "create_chart_preview" {
				t.Fatalf("reply = %+v, want a create_chart_preview call", reply)
			}
			var args struct{ Name string }
			if err := json.Unmarshal(reply.ToolCalls[0].Arguments, &args); err != nil {
				t.Fatal(err)
			}
			if args.Name != tc.want {
				t.Errorf("preview name = %q, want %q", args.Name, tc.want)
			}
		})
	}
}
