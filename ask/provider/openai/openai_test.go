package openai_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/askbi/askbi"
	"github.com/askbi/askbi/ask"
	"github.com/askbi/askbi/ask/provider/openai"
)

// testKey is recognisable so that a leak shows in any text.
const (
	testKey    = "sk-test-K3Y-5f2c9a81d7e4"
	testKeyEnv = "ASKBI_TEST_OPENAI_KEY"
	secretBody = "SECRET-BODY-TEXT"
)

// recorder keeps what the test server received.
type recorder struct {
	mu       sync.Mutex
	bodies   []map[string]any
	headers  []http.Header
	paths    []string
	requests int
}

func (r *recorder) record(t *testing.T, req *http.Request) {
	t.Helper()
	raw, err := io.ReadAll(req.Body)
	if err != nil {
		t.Errorf("reading request body: %v", err)
	}
	var body map[string]any
	if err := json.Unmarshal(raw, &body); err != nil {
		t.Errorf("request body is not JSON: %v: %s", err, raw)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.bodies = append(r.bodies, body)
	r.headers = append(r.headers, req.Header.Clone())
	r.paths = append(r.paths, req.URL.Path)
	r.requests++
}

func (r *recorder) count() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.requests
}

// MustProvider starts a server with handler and returns a Provider for it
// with the key in testKeyEnv.
func MustProvider(t *testing.T, handler func(w http.ResponseWriter, r *http.Request), opts *openai.Options) (*openai.Provider, *recorder) {
	t.Helper()
	rec := &recorder{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rec.record(t, r)
		handler(w, r)
	}))
	t.Cleanup(srv.Close)
	t.Setenv(testKeyEnv, testKey)
	o := openai.Options{}
	if opts != nil {
		o = *opts
	}
	o.BaseURL = srv.URL + "/v1"
	o.APIKeyEnv = testKeyEnv
	o.HTTPClient = srv.Client()
	p, err := openai.New("test-model", &o)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return p, rec
}

// stream answers with events as the API does: each a data line, then
// data: [DONE].
func stream(events ...string) func(http.ResponseWriter, *http.Request) {
	return func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		for _, e := range events {
			fmt.Fprintf(w, "data: %s\n\n", e)
			w.(http.Flusher).Flush()
		}
		fmt.Fprint(w, "data: [DONE]\n\n")
	}
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

var question = ask.ModelRequest{Messages: []ask.Message{{Role: ask.RoleUser, Text: "How many orders?"}}}

// complete runs p.Complete and fails the test if it does not return in
// time, so that a hang fails fast instead of stalling the suite.
func complete(t *testing.T, ctx context.Context, p *openai.Provider, req ask.ModelRequest, onText func(string)) (ask.ModelReply, error) {
	t.Helper()
	type result struct {
		reply ask.ModelReply
		err   error
	}
	done := make(chan result, 1)
	go func() {
		reply, err := p.Complete(ctx, req, onText)
		done <- result{reply, err}
	}()
	select {
	case r := <-done:
		return r.reply, r.err
	case <-time.After(10 * time.Second):
		t.Fatal("Complete did not return within 10s")
		return ask.ModelReply{}, nil
	}
}

// assertSafe checks that err shows the key and the provider's body nowhere.
func assertSafe(t *testing.T, err error) {
	t.Helper()
	if err == nil {
		return
	}
	for _, text := range []string{err.Error(), askbi.ErrorMessage(err), fmt.Sprintf("%+v", err), fmt.Sprintf("%#v", err)} {
		if strings.Contains(text, testKey) {
			t.Errorf("error text holds the API key: %s", text)
		}
	}
	if msg := askbi.ErrorMessage(err); strings.Contains(msg, secretBody) {
		t.Errorf("error message holds the provider's body: %s", msg)
	}
}

func TestCompleteStreamsText(t *testing.T) {
	p, _ := MustProvider(t, stream(
		chunk(`{"role":"assistant","content":"","refusal":null}`, ""),
		chunk(`{"content":"There were "}`, ""),
		chunk(`{"content":"1,204"}`, ""),
		chunk(`{"content":" orders."}`, ""),
		chunk(`{}`, "stop"),
		`{"id":"chatcmpl-9x1","object":"chat.completion.chunk","created":1735689600,"model":"test-model","choices":[],"usage":{"prompt_tokens":9,"completion_tokens":5,"total_tokens":14}}`,
	), nil)
	var deltas []string
	got, err := complete(t, context.Background(), p, question, func(d string) { deltas = append(deltas, d) })
	if err != nil {
		t.Fatalf("Complete: %v", err)
	}
	if diff := cmp.Diff([]string{"There were ", "1,204", " orders."}, deltas); diff != "" {
		t.Errorf("onText deltas mismatch (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(ask.ModelReply{Text: "There were 1,204 orders."}, got); diff != "" {
		t.Errorf("reply mismatch (-want +got):\n%s", diff)
	}
}

func TestCompleteAssemblesToolCalls(t *testing.T) {
	tests := []struct {
		name   string
		events []string
		want   ask.ModelReply
	}{
		{
			name: "one call split over chunks",
			events: []string{
				chunk(`{"role":"assistant","content":null}`, ""),
				chunk(toolDelta(0, "call_a", "run_query", ""), ""),
				chunk(toolDelta(0, "", "", `{"sql": "sel`), ""),
				chunk(toolDelta(0, "", "", `ect count(*) `), ""),
				chunk(toolDelta(0, "", "", `from orders"}`), ""),
				chunk(`{}`, "tool_calls"),
			},
			want: ask.ModelReply{ToolCalls: []ask.ToolCall{
				{ID: "call_a", Name: "run_query", Arguments: json.RawMessage(`{"sql": "select count(*) from orders"}`)},
			}},
		},
		{
			name: "two calls interleaved by index",
			events: []string{
				chunk(`{"role":"assistant","content":"Checking both."}`, ""),
				chunk(toolDelta(0, "call_a", "run_query", `{"sql":`), ""),
				chunk(toolDelta(1, "call_b", "describe_dataset", `{"id"`), ""),
				chunk(toolDelta(0, "", "", `"select 1"}`), ""),
				chunk(toolDelta(1, "", "", `:"ds_7"}`), ""),
				chunk(`{}`, "tool_calls"),
			},
			want: ask.ModelReply{Text: "Checking both.", ToolCalls: []ask.ToolCall{
				{ID: "call_a", Name: "run_query", Arguments: json.RawMessage(`{"sql":"select 1"}`)},
				{ID: "call_b", Name: "describe_dataset", Arguments: json.RawMessage(`{"id":"ds_7"}`)},
			}},
		},
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
			name: "empty arguments become {}",
			events: []string{
				chunk(toolDelta(0, "call_a", "list_dashboards", ""), ""),
				chunk(toolDelta(0, "", "", "  "), ""),
				chunk(`{}`, "tool_calls"),
			},
			want: ask.ModelReply{ToolCalls: []ask.ToolCall{
				{ID: "call_a", Name: "list_dashboards", Arguments: json.RawMessage(`{}`)},
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
			p, _ := MustProvider(t, stream(tt.events...), nil)
			got, err := complete(t, context.Background(), p, question, nil)
			if err != nil {
				t.Fatalf("Complete: %v", err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("reply mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func TestCompleteRejectsBadToolCalls(t *testing.T) {
	tests := []struct {
		name string
		args string
		tool string
	}{
		{name: "arguments cut off", args: `{"sql": "select`, tool: "run_query"},
		{name: "arguments an array", args: `[1, 2]`, tool: "run_query"},
		{name: "arguments a string", args: `"select 1"`, tool: "run_query"},
		{name: "arguments null", args: `null`, tool: "run_query"},
		{name: "two objects", args: `{}{}`, tool: "run_query"},
		{name: "no name", args: `{}`, tool: ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, _ := MustProvider(t, stream(
				chunk(toolDelta(0, "call_a", tt.tool, tt.args), ""),
				chunk(`{}`, "tool_calls"),
			), nil)
			_, err := complete(t, context.Background(), p, question, nil)
			if got := askbi.ErrorCode(err); got != askbi.InvalidResult {
				t.Errorf("code = %q (%v), want %q", got, err, askbi.InvalidResult)
			}
			assertSafe(t, err)
		})
	}
}

func TestCompleteRequest(t *testing.T) {
	// Ambient SDK variables must not reach the request.
	t.Setenv("OPENAI_BASE_URL", "http://127.0.0.1:1/nowhere")
	t.Setenv("OPENAI_ORG_ID", "org-ambient")
	t.Setenv("OPENAI_CUSTOM_HEADERS", "X-Ambient: yes")
	p, rec := MustProvider(t, stream(
		chunk(`{"role":"assistant","content":"Let me look."}`, ""),
		chunk(toolDelta(0, "call_a", "run_query", `{"sql":"select 1"}`), ""),
		chunk(toolDelta(1, "call_b", "list_dashboards", ``), ""),
		chunk(`{}`, "tool_calls"),
	), nil)

	req := ask.ModelRequest{
		System:   "You are the data assistant.",
		Messages: []ask.Message{{Role: ask.RoleUser, Text: "How many orders?"}},
		Tools: []ask.ToolSpec{
			{Name: "run_query", Description: "Runs read-only SQL.", InputSchema: json.RawMessage(`{"type":"object","properties":{"sql":{"type":"string","maxLength":4000}},"required":["sql"]}`)},
			{Name: "list_dashboards", Description: "Lists dashboards."},
		},
		MaxTokens: 300,
	}
	first, err := complete(t, context.Background(), p, req, nil)
	if err != nil {
		t.Fatalf("first Complete: %v", err)
	}
	// Round trip: the reply and the tool results go back as history.
	req.Messages = append(req.Messages,
		ask.Message{Role: ask.RoleAssistant, Text: first.Text, ToolCalls: first.ToolCalls},
		ask.Message{Role: ask.RoleTool, ToolCallID: "call_a", Text: `[{"count":1204}]`},
		ask.Message{Role: ask.RoleTool, ToolCallID: "call_b", Text: ""},
		ask.Message{Role: ask.RoleAssistant, ToolCalls: []ask.ToolCall{{ID: "call_c", Name: "list_dashboards"}}},
		ask.Message{Role: ask.RoleTool, ToolCallID: "call_c", Text: "[]"},
		ask.Message{Role: ask.RoleAssistant, Text: "There were 1,204 orders."},
		ask.Message{Role: ask.RoleUser, Text: "Thanks"},
	)
	if _, err := complete(t, context.Background(), p, req, nil); err != nil {
		t.Fatalf("second Complete: %v", err)
	}

	tools := []any{
		map[string]any{"type": "function", "function": map[string]any{
			"name": "run_query", "description": "Runs read-only SQL.",
			"parameters": map[string]any{"type": "object", "properties": map[string]any{"sql": map[string]any{"type": "string", "maxLength": 4000.0}}, "required": []any{"sql"}},
		}},
		map[string]any{"type": "function", "function": map[string]any{"name": "list_dashboards", "description": "Lists dashboards."}},
	}
	want := map[string]any{
		"model":                 "test-model",
		"stream":                true,
		"max_completion_tokens": 300.0,
		"tools":                 tools,
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
			map[string]any{"role": "assistant", "content": "There were 1,204 orders."},
			map[string]any{"role": "user", "content": "Thanks"},
		},
	}
	if rec.count() != 2 {
		t.Fatalf("server got %d requests, want 2", rec.count())
	}
	if diff := cmp.Diff(want, rec.bodies[1]); diff != "" {
		t.Errorf("request body mismatch (-want +got):\n%s", diff)
	}
	h := rec.headers[1]
	if got, want := h.Get("Authorization"), "Bearer "+testKey; got != want {
		t.Errorf("Authorization = %q, want %q", got, want)
	}
	if rec.paths[1] != "/v1/chat/completions" {
		t.Errorf("path = %q, want /v1/chat/completions", rec.paths[1])
	}
	if h.Get("OpenAI-Organization") != "" || h.Get("X-Ambient") != "" {
		t.Errorf("ambient OPENAI_* variables reached the request: %v", h)
	}
}

func TestCompleteMaxTokens(t *testing.T) {
	tests := []struct {
		name      string
		opts      openai.Options
		reqTokens int
		want      map[string]any // the token fields of the body
	}{
		{name: "none", want: map[string]any{}},
		{name: "option", opts: openai.Options{MaxTokens: 512}, want: map[string]any{"max_completion_tokens": 512.0}},
		{name: "request wins", opts: openai.Options{MaxTokens: 512}, reqTokens: 64, want: map[string]any{"max_completion_tokens": 64.0}},
		{name: "legacy field", opts: openai.Options{MaxTokens: 512, LegacyMaxTokens: true}, want: map[string]any{"max_tokens": 512.0}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, rec := MustProvider(t, stream(chunk(`{"content":"ok"}`, "stop")), &tt.opts)
			req := question
			req.MaxTokens = tt.reqTokens
			if _, err := complete(t, context.Background(), p, req, nil); err != nil {
				t.Fatalf("Complete: %v", err)
			}
			got := map[string]any{}
			for _, k := range []string{"max_tokens", "max_completion_tokens"} {
				if v, ok := rec.bodies[0][k]; ok {
					got[k] = v
				}
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("token fields mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func TestCompleteRejectsBadRequests(t *testing.T) {
	tests := []struct {
		name string
		req  ask.ModelRequest
	}{
		{name: "unknown role", req: ask.ModelRequest{Messages: []ask.Message{{Role: "system", Text: "x"}}}},
		{name: "tool message without call ID", req: ask.ModelRequest{Messages: []ask.Message{{Role: ask.RoleTool, Text: "x"}}}},
		{name: "recorded arguments not an object", req: ask.ModelRequest{Messages: []ask.Message{{Role: ask.RoleAssistant, ToolCalls: []ask.ToolCall{{ID: "c", Name: "t", Arguments: json.RawMessage(`[1]`)}}}}}},
		{name: "schema not an object", req: ask.ModelRequest{Messages: question.Messages, Tools: []ask.ToolSpec{{Name: "t", InputSchema: json.RawMessage(`"object"`)}}}},
		{name: "schema with trailing data", req: ask.ModelRequest{Messages: question.Messages, Tools: []ask.ToolSpec{{Name: "t", InputSchema: json.RawMessage(`{} {}`)}}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, rec := MustProvider(t, stream(chunk(`{"content":"ok"}`, "stop")), nil)
			_, err := complete(t, context.Background(), p, tt.req, nil)
			if got := askbi.ErrorCode(err); got != askbi.InvalidArgument {
				t.Errorf("code = %q (%v), want %q", got, err, askbi.InvalidArgument)
			}
			if rec.count() != 0 {
				t.Errorf("server got %d requests, want none", rec.count())
			}
		})
	}
}

func TestCompleteProviderErrors(t *testing.T) {
	// The body echoes the key, as some gateways do, to prove it is removed
	// from the logged cause too.
	body := `{"error":{"message":"` + secretBody + ` for key ` + testKey + `","type":"invalid_request_error","param":null,"code":"x"}}`
	tests := []struct {
		status   int
		wantCode askbi.Code
		wantMsg  string
	}{
		{400, askbi.InvalidArgument, "the model provider rejected the request"},
		{401, askbi.Unavailable, "the model provider rejected the credentials"},
		{403, askbi.Unavailable, "the model provider rejected the credentials"},
		{404, askbi.Unavailable, "the model provider does not know the configured model or endpoint"},
		{413, askbi.TooLarge, "the request is too large for the model provider"},
		{429, askbi.RateLimited, "the model provider is rate limiting requests; try again later"},
		{500, askbi.Unavailable, "the model provider failed; try again later"},
		{503, askbi.Unavailable, "the model provider failed; try again later"},
		{504, askbi.Timeout, "the model provider did not answer in time"},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprint(tt.status), func(t *testing.T) {
			p, rec := MustProvider(t, func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "application/json")
				w.Header().Set("Retry-After", "0")
				w.WriteHeader(tt.status)
				io.WriteString(w, body)
			}, nil)
			_, err := complete(t, context.Background(), p, question, nil)
			got := struct {
				Code    askbi.Code
				Message string
			}{askbi.ErrorCode(err), askbi.ErrorMessage(err)}
			want := struct {
				Code    askbi.Code
				Message string
			}{tt.wantCode, tt.wantMsg}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("error mismatch (-want +got):\n%s\n(error: %v)", diff, err)
			}
			if !strings.Contains(err.Error(), fmt.Sprint(tt.status)) {
				t.Errorf("logged error %q does not name the status", err)
			}
			if rec.count() != 1 {
				t.Errorf("server got %d requests, want 1 (no retries)", rec.count())
			}
			assertSafe(t, err)
		})
	}
}

func TestCompleteBrokenStreams(t *testing.T) {
	down := httptest.NewServer(http.NotFoundHandler())
	downURL := down.URL
	down.Close()

	tests := []struct {
		name     string
		handler  func(http.ResponseWriter, *http.Request)
		baseURL  string // overrides the test server
		wantCode askbi.Code
	}{
		{
			name:     "invalid JSON chunk",
			handler:  stream(chunk(`{"content":"Hi"}`, ""), `{"id":"chatcmpl-9x1","choices":[{`),
			wantCode: askbi.InvalidResult,
		},
		{
			name: "cut off without finish_reason or [DONE]",
			handler: func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "text/event-stream")
				fmt.Fprintf(w, "data: %s\n\n", chunk(`{"content":"Hi"}`, ""))
				fmt.Fprintf(w, "data: %s\n\n", chunk(toolDelta(0, "call_a", "run_query", `{"sql":`), ""))
			},
			wantCode: askbi.Unavailable,
		},
		{
			name: "connection dropped mid-chunk",
			handler: func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "text/event-stream")
				w.Header().Set("Content-Length", "1000")
				w.WriteHeader(http.StatusOK)
				fmt.Fprintf(w, "data: %s\n\ndata: {\"id\":", chunk(`{"content":"Hi"}`, ""))
			},
			wantCode: askbi.Unavailable,
		},
		{
			name: "not an event stream",
			handler: func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "text/html")
				io.WriteString(w, "<html><body>"+secretBody+"</body></html>")
			},
			wantCode: askbi.Unavailable,
		},
		{
			name:     "error event mid-stream",
			handler:  stream(chunk(`{"content":"Hi"}`, ""), `{"error":{"message":"`+secretBody+`","type":"server_error","code":null}}`),
			wantCode: askbi.Unavailable,
		},
		{
			name:     "rate limit event mid-stream",
			handler:  stream(`{"error":{"message":"` + secretBody + `","type":"rate_limit_exceeded"}}`),
			wantCode: askbi.RateLimited,
		},
		{
			name:     "server down",
			baseURL:  downURL,
			wantCode: askbi.Unavailable,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, _ := MustProvider(t, tt.handler, nil)
			if tt.baseURL != "" {
				var err error
				p, err = openai.New("test-model", &openai.Options{BaseURL: tt.baseURL, APIKeyEnv: testKeyEnv})
				if err != nil {
					t.Fatalf("New: %v", err)
				}
			}
			_, err := complete(t, context.Background(), p, question, nil)
			if got := askbi.ErrorCode(err); got != tt.wantCode {
				t.Errorf("code = %q (%v), want %q", got, err, tt.wantCode)
			}
			assertSafe(t, err)
		})
	}
}

// hang answers nothing, or first events, until the client goes away.
func hang(events ...string) func(http.ResponseWriter, *http.Request) {
	return func(w http.ResponseWriter, r *http.Request) {
		if len(events) > 0 {
			w.Header().Set("Content-Type", "text/event-stream")
			for _, e := range events {
				fmt.Fprintf(w, "data: %s\n\n", e)
			}
			w.(http.Flusher).Flush()
		}
		<-r.Context().Done()
	}
}

func TestCompleteTimeoutAndCancel(t *testing.T) {
	tests := []struct {
		name     string
		handler  func(http.ResponseWriter, *http.Request)
		opts     *openai.Options
		ctx      func(t *testing.T) context.Context
		wantCode askbi.Code
		wantMsg  string
	}{
		{
			name:    "ctx deadline before headers",
			handler: hang(),
			ctx: func(t *testing.T) context.Context {
				ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
				t.Cleanup(cancel)
				return ctx
			},
			wantCode: askbi.Timeout,
			wantMsg:  "the model provider did not answer in time",
		},
		{
			name:    "ctx deadline mid-stream",
			handler: hang(chunk(`{"content":"Hi"}`, "")),
			ctx: func(t *testing.T) context.Context {
				ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
				t.Cleanup(cancel)
				return ctx
			},
			wantCode: askbi.Timeout,
			wantMsg:  "the model provider did not answer in time",
		},
		{
			name:     "Options.Timeout",
			handler:  hang(chunk(`{"content":"Hi"}`, "")),
			opts:     &openai.Options{Timeout: 50 * time.Millisecond},
			ctx:      func(*testing.T) context.Context { return context.Background() },
			wantCode: askbi.Timeout,
			wantMsg:  "the model provider did not answer in time",
		},
		{
			name:    "cancelled mid-stream",
			handler: hang(chunk(`{"content":"Hi"}`, "")),
			ctx: func(t *testing.T) context.Context {
				ctx, cancel := context.WithCancel(context.Background())
				t.Cleanup(cancel)
				time.AfterFunc(50*time.Millisecond, cancel)
				return ctx
			},
			wantCode: askbi.Unavailable,
			wantMsg:  "the request was cancelled",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, _ := MustProvider(t, tt.handler, tt.opts)
			_, err := complete(t, tt.ctx(t), p, question, nil)
			got := [2]string{string(askbi.ErrorCode(err)), askbi.ErrorMessage(err)}
			if diff := cmp.Diff([2]string{string(tt.wantCode), tt.wantMsg}, got); diff != "" {
				t.Errorf("error mismatch (-want +got):\n%s\n(error: %v)", diff, err)
			}
			assertSafe(t, err)
		})
	}
}

func TestNew(t *testing.T) {
	t.Setenv("ASKBI_TEST_EMPTY_KEY", "")
	t.Setenv(testKeyEnv, testKey)
	tests := []struct {
		name    string
		model   string
		opts    *openai.Options
		wantMsg string // "" for success
	}{
		{name: "defaults", model: "gpt-4o-mini", opts: nil, wantMsg: "openai: the environment variable OPENAI_API_KEY that holds the API key is not set"},
		{name: "named variable", model: "m", opts: &openai.Options{APIKeyEnv: testKeyEnv}},
		{name: "vLLM base URL", model: "m", opts: &openai.Options{APIKeyEnv: testKeyEnv, BaseURL: "http://localhost:8000/v1"}},
		{name: "missing variable", model: "m", opts: &openai.Options{APIKeyEnv: "ASKBI_TEST_NO_SUCH_KEY"}, wantMsg: "openai: the environment variable ASKBI_TEST_NO_SUCH_KEY that holds the API key is not set"},
		{name: "empty variable", model: "m", opts: &openai.Options{APIKeyEnv: "ASKBI_TEST_EMPTY_KEY"}, wantMsg: "openai: the environment variable ASKBI_TEST_EMPTY_KEY that holds the API key is not set"},
		{name: "no model", model: " ", opts: &openai.Options{APIKeyEnv: testKeyEnv}, wantMsg: "openai: the model name is empty"},
		{name: "bad base URL", model: "m", opts: &openai.Options{APIKeyEnv: testKeyEnv, BaseURL: "localhost:8000/v1"}, wantMsg: "openai: BaseURL must be an http or https URL"},
		{name: "negative timeout", model: "m", opts: &openai.Options{APIKeyEnv: testKeyEnv, Timeout: -1}, wantMsg: "openai: MaxTokens, Timeout and MaxRetries must not be negative"},
	}
	t.Setenv("OPENAI_API_KEY", "")
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := openai.New(tt.model, tt.opts)
			if tt.wantMsg == "" {
				if err != nil {
					t.Fatalf("New: %v", err)
				}
				return
			}
			if got := askbi.ErrorCode(err); got != askbi.InvalidArgument {
				t.Errorf("code = %q, want %q", got, askbi.InvalidArgument)
			}
			if got := askbi.ErrorMessage(err); got != tt.wantMsg {
				t.Errorf("message = %q, want %q", got, tt.wantMsg)
			}
			assertSafe(t, err)
		})
	}
}

func TestProviderDoesNotPrintKey(t *testing.T) {
	p, _ := MustProvider(t, stream(), nil)
	for _, text := range []string{fmt.Sprintf("%v", p), fmt.Sprintf("%+v", p), fmt.Sprintf("%#v", p)} {
		if strings.Contains(text, testKey) {
			t.Errorf("formatted Provider holds the API key: %s", text)
		}
	}
}

func TestCompleteConcurrent(t *testing.T) {
	p, rec := MustProvider(t, stream(chunk(`{"content":"Hi"}`, ""), chunk(`{}`, "stop")), nil)
	const n = 8
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for range n {
		wg.Go(func() {
			reply, err := p.Complete(context.Background(), question, nil)
			if err == nil && reply.Text != "Hi" {
				err = fmt.Errorf("reply text %q, want %q", reply.Text, "Hi")
			}
			errs <- err
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Error(err)
		}
	}
	if rec.count() != n {
		t.Errorf("server got %d requests, want %d", rec.count(), n)
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
			p, _ := MustProvider(t, stream(tt.events...), nil)
			var deltas []string
			got, err := complete(t, context.Background(), p, question, func(d string) { deltas = append(deltas, d) })
			if err != nil {
				t.Fatalf("Complete: %v", err)
			}
			if diff := cmp.Diff(tt.deltas, deltas); diff != "" {
				t.Errorf("onText deltas mismatch (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("reply mismatch (-want +got):\n%s", diff)
			}
		})
	}
}
