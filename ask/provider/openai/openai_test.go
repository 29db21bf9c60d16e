package openai_test

import (
	"context"
	"encoding/json"
	"net/http"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/askbi/askbi/ask"
	"github.com/askbi/askbi/ask/provider/internal/providertest"
	"github.com/askbi/askbi/ask/provider/openai"
)

// frame is one server-sent event carrying data.
func frame(data string) string { return "data: " + data + "\n\n" }

// stream answers with chunks as the API does: each a data line, then
// data: [DONE].
func stream(chunks ...string) http.HandlerFunc {
	frames := make([]string, 0, len(chunks)+1)
	for _, c := range chunks {
		frames = append(frames, frame(c))
	}
	return providertest.Stream(append(frames, "data: [DONE]\n\n")...)
}

// chunk is one chat.completion.chunk with delta and finish reason ("" for
// null) as the API streams it.
func chunk(delta, finish string) string {
	f := "null"
	if finish != "" {
		f = `"` + finish + `"`
	}
	return `{"id":"chatcmpl-9x1","object":"chat.completion.chunk","created":1735689600,"model":"test-model","system_fingerprint":"fp_1","choices":[{"index":0,"delta":` + delta + `,"logprobs":null,"finish_reason":` + f + `}]}`
}

// toolDelta is a delta carrying one tool call part.
func toolDelta(index int, id, name, args string) string {
	tc := map[string]any{"index": index, "function": map[string]any{"arguments": args}}
	if id != "" {
		tc["id"] = id
		tc["type"] = "function"
		tc["function"].(map[string]any)["name"] = name
	}
	b, _ := json.Marshal(map[string]any{"tool_calls": []any{tc}})
	return string(b)
}

// events are the chunks of a reply made of steps: the role, a delta for
// each step, and when whole the finish reason, the usage and [DONE].
func events(whole bool, steps ...providertest.Step) []string {
	frames := []string{frame(chunk(`{"role":"assistant","content":"","refusal":null}`, ""))}
	finish := "stop"
	for _, s := range steps {
		switch s.Kind {
		case providertest.TextStep:
			b, _ := json.Marshal(map[string]string{"content": s.Text})
			frames = append(frames, frame(chunk(string(b), "")))
		case providertest.CallStep:
			frames = append(frames, frame(chunk(toolDelta(s.Call, s.ID, s.Name, ""), "")))
			finish = "tool_calls"
		case providertest.ArgsStep:
			frames = append(frames, frame(chunk(toolDelta(s.Call, "", "", s.Text), "")))
		}
	}
	if !whole {
		return frames
	}
	return append(frames,
		frame(chunk(`{}`, finish)),
		frame(`{"id":"chatcmpl-9x1","object":"chat.completion.chunk","created":1735689600,"model":"test-model","choices":[],"usage":{"prompt_tokens":2100,"completion_tokens":5,"total_tokens":2105,"prompt_tokens_details":{"cached_tokens":2048}}}`),
		"data: [DONE]\n\n")
}

// roundTrip is the body of the second request of the suite's RoundTrip:
// tool calls go back with the assistant's text, tool results as tool
// messages.
var roundTrip = map[string]any{
	"model":                 "test-model",
	"stream":                true,
	"stream_options":        map[string]any{"include_usage": true},
	"max_completion_tokens": 300.0,
	"tools": []any{
		map[string]any{"type": "function", "function": map[string]any{
			"name": "run_query", "description": "Runs read-only SQL.",
			"parameters": map[string]any{
				"type": "object", "properties": map[string]any{"sql": map[string]any{"type": "string", "maxLength": 4000.0}},
				"required": []any{"sql"}, "additionalProperties": false,
			},
		}},
		map[string]any{"type": "function", "function": map[string]any{"name": "list_dashboards", "description": "Lists dashboards."}},
	},
	"messages": []any{
		map[string]any{"role": "system", "content": "You are the data assistant."},
		map[string]any{"role": "user", "content": "How many orders?"},
		map[string]any{"role": "assistant", "content": "Let me look.", "tool_calls": []any{
			map[string]any{"id": "call_a", "type": "function", "function": map[string]any{"name": "run_query", "arguments": `{"sql":"select 1"}`}},
			map[string]any{"id": "call_b", "type": "function", "function": map[string]any{"name": "list_dashboards", "arguments": `{}`}},
		}},
		map[string]any{"role": "tool", "tool_call_id": "call_a", "content": `[{"count":1204}]`},
		map[string]any{"role": "tool", "tool_call_id": "call_b", "content": ""},
		map[string]any{"role": "assistant", "tool_calls": []any{
			map[string]any{"id": "call_c", "type": "function", "function": map[string]any{"name": "list_dashboards", "arguments": `{}`}},
		}},
		map[string]any{"role": "tool", "tool_call_id": "call_c", "content": "[]"},
		map[string]any{"role": "assistant", "content": ""},
		map[string]any{"role": "assistant", "content": "There were 1,204 orders."},
		map[string]any{"role": "user", "content": "Thanks"},
	},
}

// TestProvider runs the providers' shared suite over chat completion
// chunks.
func TestProvider(t *testing.T) { providertest.Run(t, wire) }

// wire is how the chat completions API streams, for the shared suite.
var wire = providertest.Wire[openai.Options, *openai.Provider]{
	Name:             "openai",
	DefaultKeyEnv:    "OPENAI_API_KEY",
	Path:             "/v1",
	New:              openai.New,
	Endpoint:         "/v1/chat/completions",
	RoundTrip:        roundTrip,
	Events:           events,
	Usage:            ask.Usage{InputTokens: 2100, CachedInputTokens: 2048, OutputTokens: 5},
	Finish:           "stop",
	Garbled:          frame(`{"id":"chatcmpl-9x1","choices":[{`),
	FailedEvent:      frame(`{"error":{"message":"` + providertest.SecretBody + `","type":"server_error","code":null}}`),
	RateLimitedEvent: frame(`{"error":{"message":"` + providertest.SecretBody + `","type":"rate_limit_exceeded"}}`),
	ErrorBody: func(_ int, message string) string {
		b, _ := json.Marshal(map[string]any{"error": map[string]any{"message": message, "type": "invalid_request_error", "param": nil, "code": "x"}})
		return string(b)
	},
}

// TestCompleteToolCallIndexes: tool calls come back in the order of their
// index, whatever order their deltas arrive in, and one a server sends
// without an ID gets one.
func TestCompleteToolCallIndexes(t *testing.T) {
	tests := []struct {
		name   string
		events []string
		want   ask.ModelReply
	}{
		{
			name: "index order, not arrival order",
			events: []string{
				chunk(toolDelta(1, "call_b", "second", `{}`), ""),
				chunk(toolDelta(0, "call_a", "first", `{}`), ""),
				chunk(`{}`, "tool_calls"),
			},
			want: ask.ModelReply{ToolCalls: []ask.ToolCall{
				{ID: "call_a", Name: "first", Arguments: json.RawMessage(`{}`)},
				{ID: "call_b", Name: "second", Arguments: json.RawMessage(`{}`)},
			}},
		},
		{
			name: "a missing ID is made up",
			events: []string{
				chunk(`{"tool_calls":[{"index":0,"type":"function","function":{"name":"list_dashboards","arguments":"{}"}}]}`, ""),
				chunk(`{}`, "tool_calls"),
			},
			want: ask.ModelReply{ToolCalls: []ask.ToolCall{
				{ID: "call_0", Name: "list_dashboards", Arguments: json.RawMessage(`{}`)},
			}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, _ := providertest.MustProvider(t, wire, stream(tt.events...), providertest.Options{})
			got, err := providertest.Complete(t, context.Background(), p, providertest.Question, nil)
			if err != nil {
				t.Fatalf("Complete: %v", err)
			}
			if diff := cmp.Diff(tt.want, got, cmpopts.IgnoreFields(ask.ModelReply{}, "Usage", "FinishReason")); diff != "" {
				t.Errorf("reply mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

// TestCompleteIgnoresAmbientVariables: the SDK's own variables reach
// neither the address nor the headers of a request.
func TestCompleteIgnoresAmbientVariables(t *testing.T) {
	t.Setenv("OPENAI_BASE_URL", "http://127.0.0.1:1/nowhere")
	t.Setenv("OPENAI_ORG_ID", "org-ambient")
	t.Setenv("OPENAI_CUSTOM_HEADERS", "X-Ambient: yes")
	p, srv := providertest.MustProvider(t, wire, stream(chunk(`{"content":"ok"}`, "stop")), providertest.Options{})
	if _, err := providertest.Complete(t, context.Background(), p, providertest.Question, nil); err != nil {
		t.Fatalf("Complete: %v", err)
	}
	if srv.Count() != 1 {
		t.Fatalf("server got %d requests, want 1", srv.Count())
	}
	if h := srv.Header(0); h.Get("OpenAI-Organization") != "" || h.Get("X-Ambient") != "" {
		t.Errorf("ambient OPENAI_* variables reached the request: %v", h)
	}
}

func TestCompleteMaxTokens(t *testing.T) {
	tests := []struct {
		name      string
		maxTokens int  // Options.MaxTokens
		legacy    bool // Options.LegacyMaxTokens
		reqTokens int
		want      map[string]any // the token fields of the body
	}{
		{name: "none", want: map[string]any{}},
		{name: "option", maxTokens: 512, want: map[string]any{"max_completion_tokens": 512.0}},
		{name: "request wins", maxTokens: 512, reqTokens: 64, want: map[string]any{"max_completion_tokens": 64.0}},
		{name: "legacy field", maxTokens: 512, legacy: true, want: map[string]any{"max_tokens": 512.0}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			legacy := func(o *openai.Options) { o.LegacyMaxTokens = tt.legacy }
			p, srv := providertest.MustProvider(t, wire, stream(chunk(`{"content":"ok"}`, "stop")), providertest.Options{MaxTokens: tt.maxTokens}, legacy)
			req := providertest.Question
			req.MaxTokens = tt.reqTokens
			if _, err := providertest.Complete(t, context.Background(), p, req, nil); err != nil {
				t.Fatalf("Complete: %v", err)
			}
			got := map[string]any{}
			for _, k := range []string{"max_tokens", "max_completion_tokens"} {
				if v, ok := srv.Body(0)[k]; ok {
					got[k] = v
				}
			}
			if diff := cmp.Diff(tt.want, got, cmpopts.IgnoreFields(ask.ModelReply{}, "Usage", "FinishReason")); diff != "" {
				t.Errorf("token fields mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

// The model's private reasoning, as OpenAI-compatible servers send it (a
// reasoning_content delta: DeepSeek, vLLM and SGLang with a reasoning
// parser; a reasoning delta: OpenRouter, Ollama; a <think> block leading
// the content: a reasoning model served without a parser), never reaches
// onText or Text, and comes back apart as Reasoning.
func TestCompleteKeepsReasoningApart(t *testing.T) {
	const private = "PRIVATE-THOUGHT"
	tests := []struct {
		name   string
		events []string
		deltas []string
		want   ask.ModelReply
	}{
		{
			name: "reasoning_content",
			events: []string{
				chunk(`{"role":"assistant","content":null,"reasoning_content":"Let me count. "}`, ""),
				chunk(`{"reasoning_content":"`+private+`"}`, ""),
				chunk(`{"content":"There were 1,204 orders.","reasoning_content":null}`, ""),
				chunk(`{}`, "stop"),
			},
			deltas: []string{"There were 1,204 orders."},
			want:   ask.ModelReply{Text: "There were 1,204 orders.", Reasoning: "Let me count. " + private},
		},
		{
			name: "reasoning",
			events: []string{
				chunk(`{"role":"assistant","content":"","reasoning":"Let me count. `+private+`"}`, ""),
				chunk(`{"content":"There were 1,204 orders."}`, ""),
				chunk(`{}`, "stop"),
			},
			deltas: []string{"There were 1,204 orders."},
			want:   ask.ModelReply{Text: "There were 1,204 orders.", Reasoning: "Let me count. " + private},
		},
		{
			name: "think block split over deltas",
			events: []string{
				chunk(`{"role":"assistant","content":"<thi"}`, ""),
				chunk(`{"content":"nk>\nLet me count. PRIVATE-"}`, ""),
				chunk(`{"content":"THOUGHT</th"}`, ""),
				chunk(`{"content":"ink>\n\nThere were"}`, ""),
				chunk(`{"content":" 1,204 orders."}`, ""),
				chunk(`{}`, "stop"),
			},
			deltas: []string{"There were", " 1,204 orders."},
			want:   ask.ModelReply{Text: "There were 1,204 orders.", Reasoning: "\nLet me count. " + private},
		},
		{
			name: "think block never closed",
			events: []string{
				chunk(`{"role":"assistant","content":"<think>Let me count. `+private+`"}`, ""),
				chunk(`{}`, "length"),
			},
			want: ask.ModelReply{Reasoning: "Let me count. " + private},
		},
		{
			name: "text that only starts like a tag",
			events: []string{
				chunk(`{"role":"assistant","content":" <th"}`, ""),
				chunk(`{"content":"e answer> is 1,204."}`, ""),
				chunk(`{}`, "stop"),
			},
			deltas: []string{" <the answer> is 1,204."},
			want:   ask.ModelReply{Text: " <the answer> is 1,204."},
		},
		{
			name:   "text that ends inside a tag's prefix",
			events: []string{chunk(`{"role":"assistant","content":"<thin"}`, ""), chunk(`{}`, "stop")},
			deltas: []string{"<thin"},
			want:   ask.ModelReply{Text: "<thin"},
		},
		{
			name: "a think tag later in the text is text",
			events: []string{
				chunk(`{"role":"assistant","content":"Use <think> tags"}`, ""),
				chunk(`{}`, "stop"),
			},
			deltas: []string{"Use <think> tags"},
			want:   ask.ModelReply{Text: "Use <think> tags"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, _ := providertest.MustProvider(t, wire, stream(tt.events...), providertest.Options{})
			var deltas []string
			got, err := providertest.Complete(t, context.Background(), p, providertest.Question, func(d string) { deltas = append(deltas, d) })
			if err != nil {
				t.Fatalf("Complete: %v", err)
			}
			if diff := cmp.Diff(tt.deltas, deltas); diff != "" {
				t.Errorf("onText deltas mismatch (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.want, got, cmpopts.IgnoreFields(ask.ModelReply{}, "Usage", "FinishReason")); diff != "" {
				t.Errorf("reply mismatch (-want +got):\n%s", diff)
			}
		})
	}
}
