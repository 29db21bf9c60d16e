package anthropic_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/askbi/askbi"
	"github.com/askbi/askbi/ask"
	"github.com/askbi/askbi/ask/provider/anthropic"
	"github.com/askbi/askbi/ask/provider/internal/providertest"
)

// The events of a Messages stream, as the API sends them.

func event(typ, data string) string { return "event: " + typ + "\ndata: " + data + "\n\n" }

func messageStart() string {
	return event("message_start", `{"type":"message_start","message":{"id":"msg_01","type":"message","role":"assistant","model":"claude-test","content":[],"stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":25,"cache_read_input_tokens":2048,"cache_creation_input_tokens":10,"output_tokens":1}}}`)
}

func ping() string { return event("ping", `{"type": "ping"}`) }

func textStart(i int) string {
	return event("content_block_start", fmt.Sprintf(`{"type":"content_block_start","index":%d,"content_block":{"type":"text","text":""}}`, i))
}

func textDelta(i int, text string) string {
	b, _ := json.Marshal(text)
	return event("content_block_delta", fmt.Sprintf(`{"type":"content_block_delta","index":%d,"delta":{"type":"text_delta","text":%s}}`, i, b))
}

func toolStart(i int, id, name string) string {
	return event("content_block_start", fmt.Sprintf(`{"type":"content_block_start","index":%d,"content_block":{"type":"tool_use","id":%q,"name":%q,"input":{}}}`, i, id, name))
}

func jsonDelta(i int, part string) string {
	b, _ := json.Marshal(part)
	return event("content_block_delta", fmt.Sprintf(`{"type":"content_block_delta","index":%d,"delta":{"type":"input_json_delta","partial_json":%s}}`, i, b))
}

func blockStop(i int) string {
	return event("content_block_stop", fmt.Sprintf(`{"type":"content_block_stop","index":%d}`, i))
}

func messageDelta(reason string) string {
	return event("message_delta", `{"type":"message_delta","delta":{"stop_reason":"`+reason+`","stop_sequence":null},"usage":{"output_tokens":89}}`)
}

func messageStop() string { return event("message_stop", `{"type":"message_stop"}`) }

// stream answers with the events, flushing after each.
var stream = providertest.Stream

// errorTypes are the API's error types by HTTP status.
var errorTypes = map[int]string{
	400: "invalid_request_error", 401: "authentication_error", 403: "permission_error", 404: "not_found_error",
	413: "request_too_large", 429: "rate_limit_error", 500: "api_error", 503: "api_error", 504: "timeout_error",
	529: "overloaded_error",
}

func errorBody(typ, message string) string {
	b, _ := json.Marshal(map[string]any{"type": "error", "error": map[string]any{"type": typ, "message": message}, "request_id": "req_011"})
	return string(b)
}

// events are the events of a message made of steps: message_start and a
// ping; a text block for each run of text, closed when a tool_use block
// starts; a tool_use block for each call, open until the end; and when
// whole the blocks' stops, message_delta and message_stop.
func events(whole bool, steps ...providertest.Step) []string {
	frames := []string{messageStart(), ping()}
	text, next := -1, 0 // the open text block, and the next block's index
	calls := map[int]int{}
	var open []int // open tool_use blocks
	for _, s := range steps {
		switch s.Kind {
		case providertest.TextStep:
			if text < 0 {
				text, next = next, next+1
				frames = append(frames, textStart(text))
			}
			frames = append(frames, textDelta(text, s.Text))
		case providertest.CallStep:
			if text >= 0 {
				frames, text = append(frames, blockStop(text)), -1
			}
			calls[s.Call] = next
			open = append(open, next)
			frames = append(frames, toolStart(next, s.ID, s.Name))
			next++
		case providertest.ArgsStep:
			frames = append(frames, jsonDelta(calls[s.Call], s.Text))
		}
	}
	if !whole {
		return frames
	}
	if text >= 0 {
		open = append(open, text)
	}
	for _, b := range open {
		frames = append(frames, blockStop(b))
	}
	reason := "end_turn"
	if len(calls) > 0 {
		reason = "tool_use"
	}
	return append(frames, messageDelta(reason), messageStop())
}

// text is a text block.
func text(s string) map[string]any { return map[string]any{"type": "text", "text": s} }

// roundTrip is the body of the second request of the suite's RoundTrip:
// tool calls go back as tool_use blocks, each run of tool results as one
// user message of tool_result blocks, and the empty assistant message is
// left out.
var roundTrip = map[string]any{
	"model":      "test-model",
	"stream":     true,
	"max_tokens": 300.0,
	"system":     []any{map[string]any{"type": "text", "text": "You are the data assistant.", "cache_control": map[string]any{"type": "ephemeral"}}},
	"tools": []any{
		map[string]any{"name": "run_query", "description": "Runs read-only SQL.", "input_schema": map[string]any{
			"type": "object", "properties": map[string]any{"sql": map[string]any{"type": "string", "maxLength": 4000.0}},
			"required": []any{"sql"}, "additionalProperties": false,
		}},
		map[string]any{"name": "list_dashboards", "description": "Lists dashboards.", "input_schema": map[string]any{"type": "object"}},
	},
	"messages": []any{
		map[string]any{"role": "user", "content": []any{text("How many orders?")}},
		map[string]any{"role": "assistant", "content": []any{
			text("Let me look."),
			map[string]any{"type": "tool_use", "id": "call_a", "name": "run_query", "input": map[string]any{"sql": "select 1"}},
			map[string]any{"type": "tool_use", "id": "call_b", "name": "list_dashboards", "input": map[string]any{}},
		}},
		map[string]any{"role": "user", "content": []any{
			map[string]any{"type": "tool_result", "tool_use_id": "call_a", "content": []any{text(`[{"count":1204}]`)}},
			map[string]any{"type": "tool_result", "tool_use_id": "call_b"},
		}},
		map[string]any{"role": "assistant", "content": []any{
			map[string]any{"type": "tool_use", "id": "call_c", "name": "list_dashboards", "input": map[string]any{}},
		}},
		map[string]any{"role": "user", "content": []any{
			map[string]any{"type": "tool_result", "tool_use_id": "call_c", "content": []any{text("[]")}},
		}},
		map[string]any{"role": "assistant", "content": []any{text("There were 1,204 orders.")}},
		map[string]any{"role": "user", "content": []any{text("Thanks")}},
	},
}

// TestProvider runs the providers' shared suite over Messages stream
// events.
func TestProvider(t *testing.T) { providertest.Run(t, wire) }

// wire is how the Messages API streams, for the shared suite.
var wire = providertest.Wire[anthropic.Options, *anthropic.Provider]{
	Name:             "anthropic",
	DefaultKeyEnv:    "ANTHROPIC_API_KEY",
	New:              anthropic.New,
	Endpoint:         "/v1/messages",
	RoundTrip:        roundTrip,
	Events:           events,
	Usage:            ask.Usage{InputTokens: 25 + 2048 + 10, CachedInputTokens: 2048, CacheWriteTokens: 10, OutputTokens: 89},
	Finish:           "end_turn",
	Garbled:          event("content_block_delta", `{"type":"content_block_delta","index":0,"delta":{`),
	FailedEvent:      event("error", errorBody("overloaded_error", providertest.SecretBody)),
	RateLimitedEvent: event("error", errorBody("rate_limit_error", providertest.SecretBody)),
	ErrorBody:        func(status int, message string) string { return errorBody(errorTypes[status], message) },
}

// TestCompleteToolUseInput: a tool_use block's input may come whole in
// content_block_start instead of in deltas.
func TestCompleteToolUseInput(t *testing.T) {
	p, _ := providertest.MustProvider(t, wire, stream(
		messageStart(),
		event("content_block_start", `{"type":"content_block_start","index":0,"content_block":{"type":"tool_use","id":"toolu_a","name":"run_query","input":{"sql":"select 1"}}}`),
		blockStop(0),
		messageDelta("tool_use"),
		messageStop(),
	), providertest.Options{})
	got, err := providertest.Complete(t, context.Background(), p, providertest.Question, nil)
	if err != nil {
		t.Fatalf("Complete: %v", err)
	}
	want := ask.ModelReply{ToolCalls: []ask.ToolCall{{ID: "toolu_a", Name: "run_query", Arguments: json.RawMessage(`{"sql":"select 1"}`)}}}
	if diff := cmp.Diff(want, got, cmpopts.IgnoreFields(ask.ModelReply{}, "Usage", "FinishReason")); diff != "" {
		t.Errorf("reply mismatch (-want +got):\n%s", diff)
	}
}

// TestCompleteRejectsStrayInputDeltas: an input_json_delta belongs to a
// tool_use block that started.
func TestCompleteRejectsStrayInputDeltas(t *testing.T) {
	tests := []struct {
		name   string
		events []string
	}{
		{name: "delta for a block never started", events: []string{textStart(0), jsonDelta(1, `{}`)}},
		{name: "input delta for a text block", events: []string{textStart(0), jsonDelta(0, `{}`)}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			events := append([]string{messageStart()}, tt.events...)
			events = append(events, blockStop(0), messageDelta("tool_use"), messageStop())
			p, _ := providertest.MustProvider(t, wire, stream(events...), providertest.Options{})
			_, err := providertest.Complete(t, context.Background(), p, providertest.Question, nil)
			if got := askbi.ErrorCode(err); got != askbi.InvalidResult {
				t.Errorf("code = %q (%v), want %q", got, err, askbi.InvalidResult)
			}
			providertest.AssertSafe(t, err)
		})
	}
}

// TestCompleteIgnoresAmbientVariables: the SDK's own variables reach
// neither the address nor the headers of a request, which carries the
// API version and no trace headers.
func TestCompleteIgnoresAmbientVariables(t *testing.T) {
	t.Setenv("ANTHROPIC_BASE_URL", "http://127.0.0.1:1/nowhere")
	t.Setenv("ANTHROPIC_AUTH_TOKEN", "ambient-token")
	t.Setenv("ANTHROPIC_CUSTOM_HEADERS", "X-Ambient: yes")
	t.Setenv("ANTHROPIC_OPEN_TELEMETRY_TRACES_CONTENT_MODE", "content")
	p, srv := providertest.MustProvider(t, wire, stream(events(true, providertest.Text("ok"))...), providertest.Options{})
	if _, err := providertest.Complete(t, context.Background(), p, providertest.Question, nil); err != nil {
		t.Fatalf("Complete: %v", err)
	}
	if srv.Count() != 1 {
		t.Fatalf("server got %d requests, want 1", srv.Count())
	}
	h := srv.Header(0)
	if h.Get("Anthropic-Version") == "" {
		t.Errorf("no anthropic-version header: %v", h)
	}
	if got, want := h.Get("Authorization"), "Bearer "+providertest.Key; got != want {
		t.Errorf("Authorization = %q, want %q (not ANTHROPIC_AUTH_TOKEN)", got, want)
	}
	if h.Get("X-Ambient") != "" || h.Get("Traceparent") != "" {
		t.Errorf("ambient ANTHROPIC_* variables or trace headers reached the request: %v", h)
	}
}

func TestCompleteMaxTokens(t *testing.T) {
	tests := []struct {
		name      string
		maxTokens int // Options.MaxTokens
		reqTokens int
		want      float64
	}{
		{name: "default", want: 1024},
		{name: "option", maxTokens: 512, want: 512},
		{name: "request wins", maxTokens: 512, reqTokens: 64, want: 64},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, srv := providertest.MustProvider(t, wire, stream(messageStart(), messageDelta("end_turn"), messageStop()), providertest.Options{MaxTokens: tt.maxTokens})
			req := providertest.Question
			req.MaxTokens = tt.reqTokens
			if _, err := providertest.Complete(t, context.Background(), p, req, nil); err != nil {
				t.Fatalf("Complete: %v", err)
			}
			if got := srv.Body(0)["max_tokens"]; got != tt.want {
				t.Errorf("max_tokens = %v, want %v", got, tt.want)
			}
		})
	}
}

// Thinking blocks, as the API streams them with extended thinking (a
// thinking block whose text and signature arrive as deltas, a
// redacted_thinking block), are the model's private reasoning: they
// never reach onText or Text, and come back apart as Reasoning.
func TestCompleteKeepsThinkingApart(t *testing.T) {
	const private = "PRIVATE-THOUGHT: the user may not see this"
	thinkingStart := event("content_block_start", `{"type":"content_block_start","index":0,"content_block":{"type":"thinking","thinking":"","signature":""}}`)
	thinkingDelta := func(text string) string {
		b, _ := json.Marshal(text)
		return event("content_block_delta", `{"type":"content_block_delta","index":0,"delta":{"type":"thinking_delta","thinking":`+string(b)+`}}`)
	}
	p, _ := providertest.MustProvider(t, wire, stream(
		messageStart(),
		thinkingStart,
		thinkingDelta("Let me look at the orders. "),
		thinkingDelta(private),
		event("content_block_delta", `{"type":"content_block_delta","index":0,"delta":{"type":"signature_delta","signature":"EqQBCgIYAhIM1gbcDa9GJwZA2b3hGgxBdjrkzLoky3dl1pkiMOYds"}}`),
		blockStop(0),
		event("content_block_start", `{"type":"content_block_start","index":1,"content_block":{"type":"redacted_thinking","data":"EmwKAhgBEgy3va3pzix/LafPsn4aDFIT2Xlxh0L5L8rLVyIwxtE3rAFBa8cr3qpPkNRj2YfWXGmKDxH4mPnZ5sQ7vB5URj2pLmN3kF8"}}`),
		blockStop(1),
		textStart(2),
		textDelta(2, "Counting them."),
		blockStop(2),
		toolStart(3, "toolu_01", "run_query"),
		jsonDelta(3, `{"sql":"select 1"}`),
		blockStop(3),
		messageDelta("tool_use"),
		messageStop(),
	), providertest.Options{})
	var deltas []string
	got, err := providertest.Complete(t, context.Background(), p, providertest.Question, func(d string) { deltas = append(deltas, d) })
	if err != nil {
		t.Fatalf("Complete: %v", err)
	}
	if diff := cmp.Diff([]string{"Counting them."}, deltas); diff != "" {
		t.Errorf("onText deltas mismatch (-want +got):\n%s", diff)
	}
	want := ask.ModelReply{Text: "Counting them.", Reasoning: "Let me look at the orders. " + private,
		ToolCalls: []ask.ToolCall{{ID: "toolu_01", Name: "run_query", Arguments: json.RawMessage(`{"sql":"select 1"}`)}}}
	if diff := cmp.Diff(want, got, cmpopts.IgnoreFields(ask.ModelReply{}, "Usage", "FinishReason")); diff != "" {
		t.Errorf("reply mismatch (-want +got):\n%s", diff)
	}
	if b, _ := json.Marshal(got); strings.Contains(string(b), "PRIVATE-THOUGHT") {
		t.Errorf("the reply serializes the reasoning: %s", b)
	}
}
