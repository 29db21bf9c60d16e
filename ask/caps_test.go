package ask_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/askbi/askbi/ask"
	"github.com/askbi/askbi/dataexec"
)

// toolOutputSeen returns what the model was last shown of tool's output:
// the body inside its <tool_output> wrapper.
func toolOutputSeen(t *testing.T, e *env, tool string) string {
	t.Helper()
	reqs := e.model.Requests()
	msgs := reqs[len(reqs)-1].Messages
	open := `<tool_output tool="` + tool + `" trust="untrusted">` + "\n"
	for i := len(msgs) - 1; i >= 0; i-- {
		if m := msgs[i]; m.Role == ask.RoleTool && strings.HasPrefix(m.Text, open) {
			return strings.TrimSuffix(strings.TrimPrefix(m.Text, open), "\n</tool_output>")
		}
	}
	t.Fatalf("the model was not shown an output of %s", tool)
	return ""
}

// Seeds 001 and 002: one tool output shows the model at most 20,000
// characters (Options.MaxToolOutputChars, by default), its beginning, cut
// with a mark.
func TestToolOutputCap(t *testing.T) {
	long := ask.Tool{Name: "long_report", Description: "A long report.", InputSchema: json.RawMessage(`{"type":"object"}`),
		Class: dataexec.ClassReadOnly, Label: "Read the report", Filter: ask.ShowAll,
		Run: func(context.Context, ask.Call) (ask.Output, error) {
			return ask.Output{Summary: "A report", Data: map[string]any{"report": "BEGIN" + strings.Repeat("é", 30000) + "END"}}, nil
		}}
	for _, tc := range []struct {
		name string
		max  int // Options.MaxToolOutputChars
		want int
	}{
		{"default", 0, 20000},
		{"set", 500, 500},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, nil, func(c *envConfig) {
				c.extra = append(c.extra, long)
				c.opts.MaxToolOutputChars = tc.max
			})
			conv := e.MustConversation(t, alice)
			e.MustSend(t, alice, conv, "use the long_report tool", nil)
			seen := toolOutputSeen(t, e, "long_report")
			body, cut := strings.CutSuffix(seen, "…(truncated)")
			if !cut || utf8.RuneCountInString(body) != tc.want || !strings.HasPrefix(body, `{"report":"BEGIN`) {
				t.Errorf("the model saw %d characters (cut %v, starting %.20q); want the first %d, marked truncated",
					utf8.RuneCountInString(body), cut, body, tc.want)
			}
		})
	}
}
