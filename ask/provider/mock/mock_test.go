package mock_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/askbi/askbi/ask"
	"github.com/askbi/askbi/ask/provider/mock"
)

// TestDelayStreamsOverTime: with Delay, each piece of the text arrives
// Delay after the one before it, as a model's stream does; without it,
// all at once. A cancelled request ends the stream and the reply.
func TestDelayStreamsOverTime(t *testing.T) {
	const help = "hello" // answered with the help text, several words
	for _, tc := range []struct {
		name     string
		delay    time.Duration
		cancelAt time.Duration // 0: never
		wantErr  error
	}{
		{name: "no delay"},
		{name: "delay", delay: 40 * time.Millisecond},
		{name: "cancelled", delay: 40 * time.Millisecond, cancelAt: 100 * time.Millisecond, wantErr: context.Canceled},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				ctx, cancel := context.WithCancel(t.Context())
				defer cancel()
				if tc.cancelAt > 0 {
					time.AfterFunc(tc.cancelAt, cancel)
				}
				p := &mock.Provider{Delay: tc.delay}
				start := time.Now()
				var got []time.Duration
				reply, err := p.Complete(ctx, ask.ModelRequest{Messages: []ask.Message{{Role: ask.RoleUser, Text: help}}},
					func(string) { got = append(got, time.Since(start)) })
				if !errors.Is(err, tc.wantErr) {
					t.Fatalf("Complete: %v, want %v", err, tc.wantErr)
				}
				n := len(mustWords(t, help))
				if tc.cancelAt > 0 {
					n = int(tc.cancelAt / tc.delay)
				} else if reply.Text == "" {
					t.Fatal("no reply text")
				}
				var want []time.Duration
				for i := range n {
					want = append(want, time.Duration(i+1)*tc.delay)
				}
				if diff := cmp.Diff(want, got); diff != "" {
					t.Errorf("when each piece arrived (-want +got):\n%s", diff)
				}
			})
		})
	}
}

// mustWords is the pieces the reply to question streams in, from a
// provider without delay.
func mustWords(t *testing.T, question string) []string {
	t.Helper()
	var pieces []string
	if _, err := mock.New().Complete(t.Context(), ask.ModelRequest{Messages: []ask.Message{{Role: ask.RoleUser, Text: question}}},
		func(s string) { pieces = append(pieces, s) }); err != nil {
		t.Fatal(err)
	}
	if len(pieces) < 3 {
		t.Fatalf("the reply to %q streams in %d pieces, want several", question, len(pieces))
	}
	return pieces
}

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

// TestIntroStreamsOnce: the intro leads the first answer, a word at a
// time before the answer's words; an answer after one has none.
func TestIntroStreamsOnce(t *testing.T) {
	p := &mock.Provider{Intro: "I am the demo model."}
	var pieces []string
	reply, err := p.Complete(t.Context(), ask.ModelRequest{Messages: []ask.Message{{Role: ask.RoleUser, Text: "hello"}}},
		func(s string) { pieces = append(pieces, s) })
	if err != nil {
		t.Fatal(err)
	}
	want := append([]string{"I ", "am ", "the ", "demo ", "model.\n\n"}, mustWords(t, "hello")...)
	if diff := cmp.Diff(want, pieces); diff != "" {
		t.Errorf("pieces (-want +got):\n%s", diff)
	}
	if got := strings.Join(pieces, ""); got != reply.Text {
		t.Errorf("the pieces make %q, the reply is %q", got, reply.Text)
	}
	reply, err = p.Complete(t.Context(), ask.ModelRequest{Messages: []ask.Message{{Role: ask.RoleUser, Text: "hello"},
		{Role: ask.RoleAssistant, Text: reply.Text}, {Role: ask.RoleUser, Text: "hello"}}}, nil)
	if err != nil || strings.Contains(reply.Text, "demo model") {
		t.Errorf("second answer %q, %v: want no intro", reply.Text, err)
	}
}
