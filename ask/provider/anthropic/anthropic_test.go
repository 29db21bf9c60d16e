package anthropic_test

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
	"github.com/askbi/askbi/ask/provider/anthropic"
)

// testKey is recognisable so that a leak shows in any text.
const (
	testKey    = "sk-ant-test-K3Y-7d1e0b44c2"
	testKeyEnv = "ASKBI_TEST_ANTHROPIC_KEY"
	secretBody = "SECRET-BODY-TEXT"
)

// recorder keeps what the test server received.
type recorder struct {
	mu      sync.Mutex
	bodies  []map[string]any
	headers []http.Header
	paths   []string
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
}

func (r *recorder) count() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.bodies)
}

// MustProvider starts a server with handler and returns a Provider for it
// with the key in testKeyEnv.
func MustProvider(t *testing.T, handler func(w http.ResponseWriter, r *http.Request), opts *anthropic.Options) (*anthropic.Provider, *recorder) {
	t.Helper()
	rec := &recorder{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rec.record(t, r)
		handler(w, r)
	}))
	t.Cleanup(srv.Close)
	t.Setenv(testKeyEnv, testKey)
	o := anthropic.Options{}
	if opts != nil {
		o = *opts
	}
	o.BaseURL = srv.URL
	o.APIKeyEnv = testKeyEnv
	o.HTTPClient = srv.Client()
	p, err := anthropic.New("claude-test", &o)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return p, rec
}

// The events of a Messages stream, as the API sends them.

func event(typ, data string) string { return "event: " + typ + "\ndata: " + data + "\n\n" }

func messageStart() string {
	return event("message_start", `{"type":"message_start","message":{"id":"msg_01","type":"message","role":"assistant","model":"claude-test","content":[],"stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":25,"output_tokens":1}}}`)
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
func stream(events ...string) func(http.ResponseWriter, *http.Request) {
	return func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		for _, e := range events {
			io.WriteString(w, e)
			w.(http.Flusher).Flush()
		}
	}
}

var question = ask.ModelRequest{Messages: []ask.Message{{Role: ask.RoleUser, Text: "How many orders?"}}}

// complete runs p.Complete and fails the test if it does not return in
// time, so that a hang fails fast instead of stalling the suite.
func complete(t *testing.T, ctx context.Context, p *anthropic.Provider, req ask.ModelRequest, onText func(string)) (ask.ModelReply, error) {
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
		messageStart(),
		textStart(0),
		ping(),
		textDelta(0, "There were "),
		textDelta(0, "1,204"),
		textDelta(0, " orders."),
		blockStop(0),
		messageDelta("end_turn"),
		messageStop(),
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
			name: "one call split over deltas",
			events: []string{
				messageStart(),
				toolStart(0, "toolu_a", "run_query"),
				jsonDelta(0, ""),
				jsonDelta(0, `{"sql": "sel`),
				jsonDelta(0, `ect count(*) `),
				jsonDelta(0, `from orders"}`),
				blockStop(0),
				messageDelta("tool_use"),
				messageStop(),
			},
			want: ask.ModelReply{ToolCalls: []ask.ToolCall{
				{ID: "toolu_a", Name: "run_query", Arguments: json.RawMessage(`{"sql": "select count(*) from orders"}`)},
			}},
		},
		{
			name: "text then two calls with interleaved deltas",
			events: []string{
				messageStart(),
				textStart(0),
				textDelta(0, "Checking both."),
				blockStop(0),
				toolStart(1, "toolu_a", "run_query"),
				jsonDelta(1, `{"sql":`),
				toolStart(2, "toolu_b", "describe_dataset"),
				jsonDelta(2, `{"id"`),
				jsonDelta(1, `"select 1"}`),
				jsonDelta(2, `:"ds_7"}`),
				blockStop(1),
				blockStop(2),
				messageDelta("tool_use"),
				messageStop(),
			},
			want: ask.ModelReply{Text: "Checking both.", ToolCalls: []ask.ToolCall{
				{ID: "toolu_a", Name: "run_query", Arguments: json.RawMessage(`{"sql":"select 1"}`)},
				{ID: "toolu_b", Name: "describe_dataset", Arguments: json.RawMessage(`{"id":"ds_7"}`)},
			}},
		},
		{
			name: "no input deltas become {}",
			events: []string{
				messageStart(),
				toolStart(0, "toolu_a", "list_dashboards"),
				blockStop(0),
				messageDelta("tool_use"),
				messageStop(),
			},
			want: ask.ModelReply{ToolCalls: []ask.ToolCall{
				{ID: "toolu_a", Name: "list_dashboards", Arguments: json.RawMessage(`{}`)},
			}},
		},
		{
			name: "empty input deltas become {}",
			events: []string{
				messageStart(),
				toolStart(0, "toolu_a", "list_dashboards"),
				jsonDelta(0, ""),
				blockStop(0),
				messageDelta("tool_use"),
				messageStop(),
			},
			want: ask.ModelReply{ToolCalls: []ask.ToolCall{
				{ID: "toolu_a", Name: "list_dashboards", Arguments: json.RawMessage(`{}`)},
			}},
		},
		{
			name: "input whole in content_block_start",
			events: []string{
				messageStart(),
				event("content_block_start", `{"type":"content_block_start","index":0,"content_block":{"type":"tool_use","id":"toolu_a","name":"run_query","input":{"sql":"select 1"}}}`),
				blockStop(0),
				messageDelta("tool_use"),
				messageStop(),
			},
			want: ask.ModelReply{ToolCalls: []ask.ToolCall{
				{ID: "toolu_a", Name: "run_query", Arguments: json.RawMessage(`{"sql":"select 1"}`)},
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
		name   string
		events []string
	}{
		{name: "input cut off", events: []string{toolStart(0, "toolu_a", "run_query"), jsonDelta(0, `{"sql": "select`)}},
		{name: "input an array", events: []string{toolStart(0, "toolu_a", "run_query"), jsonDelta(0, `[1, 2]`)}},
		{name: "input null", events: []string{toolStart(0, "toolu_a", "run_query"), jsonDelta(0, `null`)}},
		{name: "no name", events: []string{toolStart(0, "toolu_a", ""), jsonDelta(0, `{}`)}},
		{name: "delta for a block never started", events: []string{textStart(0), jsonDelta(1, `{}`)}},
		{name: "input delta for a text block", events: []string{textStart(0), jsonDelta(0, `{}`)}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			events := append([]string{messageStart()}, tt.events...)
			events = append(events, blockStop(0), messageDelta("tool_use"), messageStop())
			p, _ := MustProvider(t, stream(events...), nil)
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
	t.Setenv("ANTHROPIC_BASE_URL", "http://127.0.0.1:1/nowhere")
	t.Setenv("ANTHROPIC_AUTH_TOKEN", "ambient-token")
	t.Setenv("ANTHROPIC_CUSTOM_HEADERS", "X-Ambient: yes")
	t.Setenv("ANTHROPIC_OPEN_TELEMETRY_TRACES_CONTENT_MODE", "content")
	p, rec := MustProvider(t, stream(
		messageStart(),
		textStart(0), textDelta(0, "Let me look."), blockStop(0),
		toolStart(1, "toolu_a", "run_query"), jsonDelta(1, `{"sql":"select 1"}`), blockStop(1),
		toolStart(2, "toolu_b", "list_dashboards"), blockStop(2),
		messageDelta("tool_use"),
		messageStop(),
	), nil)

	req := ask.ModelRequest{
		System:   "You are the data assistant.",
		Messages: []ask.Message{{Role: ask.RoleUser, Text: "How many orders?"}},
		Tools: []ask.ToolSpec{
			{Name: "run_query", Description: "Runs read-only SQL.", InputSchema: json.RawMessage(`{"type":"object","properties":{"sql":{"type":"string","maxLength":4000}},"required":["sql"],"additionalProperties":false}`)},
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
		ask.Message{Role: ask.RoleTool, ToolCallID: "toolu_a", Text: `[{"count":1204}]`},
		ask.Message{Role: ask.RoleTool, ToolCallID: "toolu_b", Text: ""},
		ask.Message{Role: ask.RoleAssistant, ToolCalls: []ask.ToolCall{{ID: "toolu_c", Name: "list_dashboards"}}},
		ask.Message{Role: ask.RoleTool, ToolCallID: "toolu_c", Text: "[]"},
		ask.Message{Role: ask.RoleAssistant}, // empty: left out
		ask.Message{Role: ask.RoleAssistant, Text: "There were 1,204 orders."},
		ask.Message{Role: ask.RoleUser, Text: "Thanks"},
	)
	if _, err := complete(t, context.Background(), p, req, nil); err != nil {
		t.Fatalf("second Complete: %v", err)
	}

	text := func(s string) map[string]any { return map[string]any{"type": "text", "text": s} }
	want := map[string]any{
		"model":      "claude-test",
		"stream":     true,
		"max_tokens": 300.0,
		"system":     []any{text("You are the data assistant.")},
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
				map[string]any{"type": "tool_use", "id": "toolu_a", "name": "run_query", "input": map[string]any{"sql": "select 1"}},
				map[string]any{"type": "tool_use", "id": "toolu_b", "name": "list_dashboards", "input": map[string]any{}},
			}},
			map[string]any{"role": "user", "content": []any{
				map[string]any{"type": "tool_result", "tool_use_id": "toolu_a", "content": []any{text(`[{"count":1204}]`)}},
				map[string]any{"type": "tool_result", "tool_use_id": "toolu_b"},
			}},
			map[string]any{"role": "assistant", "content": []any{
				map[string]any{"type": "tool_use", "id": "toolu_c", "name": "list_dashboards", "input": map[string]any{}},
			}},
			map[string]any{"role": "user", "content": []any{
				map[string]any{"type": "tool_result", "tool_use_id": "toolu_c", "content": []any{text("[]")}},
			}},
			map[string]any{"role": "assistant", "content": []any{text("There were 1,204 orders.")}},
			map[string]any{"role": "user", "content": []any{text("Thanks")}},
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
	if h.Get("Anthropic-Version") == "" {
		t.Errorf("no anthropic-version header: %v", h)
	}
	if rec.paths[1] != "/v1/messages" {
		t.Errorf("path = %q, want /v1/messages", rec.paths[1])
	}
	if h.Get("X-Ambient") != "" || h.Get("Traceparent") != "" {
		t.Errorf("ambient ANTHROPIC_* variables or trace headers reached the request: %v", h)
	}
}

func TestCompleteMaxTokens(t *testing.T) {
	tests := []struct {
		name      string
		opts      anthropic.Options
		reqTokens int
		want      float64
	}{
		{name: "default", want: 1024},
		{name: "option", opts: anthropic.Options{MaxTokens: 512}, want: 512},
		{name: "request wins", opts: anthropic.Options{MaxTokens: 512}, reqTokens: 64, want: 64},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, rec := MustProvider(t, stream(messageStart(), messageDelta("end_turn"), messageStop()), &tt.opts)
			req := question
			req.MaxTokens = tt.reqTokens
			if _, err := complete(t, context.Background(), p, req, nil); err != nil {
				t.Fatalf("Complete: %v", err)
			}
			if got := rec.bodies[0]["max_tokens"]; got != tt.want {
				t.Errorf("max_tokens = %v, want %v", got, tt.want)
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
			p, rec := MustProvider(t, stream(messageStart(), messageStop()), nil)
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
	tests := []struct {
		status   int
		typ      string
		wantCode askbi.Code
		wantMsg  string
	}{
		{400, "invalid_request_error", askbi.InvalidArgument, "the model provider rejected the request"},
		{401, "authentication_error", askbi.Unavailable, "the model provider rejected the credentials"},
		{403, "permission_error", askbi.Unavailable, "the model provider rejected the credentials"},
		{404, "not_found_error", askbi.Unavailable, "the model provider does not know the configured model or endpoint"},
		{413, "request_too_large", askbi.TooLarge, "the request is too large for the model provider"},
		{429, "rate_limit_error", askbi.RateLimited, "the model provider is rate limiting requests; try again later"},
		{500, "api_error", askbi.Unavailable, "the model provider failed; try again later"},
		{504, "timeout_error", askbi.Timeout, "the model provider did not answer in time"},
		{529, "overloaded_error", askbi.Unavailable, "the model provider failed; try again later"},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprint(tt.status), func(t *testing.T) {
			// The body echoes the key, as some gateways do, to prove it is
			// removed from the logged cause too.
			body := `{"type":"error","error":{"type":"` + tt.typ + `","message":"` + secretBody + ` for key ` + testKey + `"},"request_id":"req_011"}`
			p, rec := MustProvider(t, func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "application/json")
				w.Header().Set("Retry-After", "0")
				w.WriteHeader(tt.status)
				io.WriteString(w, body)
			}, nil)
			_, err := complete(t, context.Background(), p, question, nil)
			got := [2]string{string(askbi.ErrorCode(err)), askbi.ErrorMessage(err)}
			if diff := cmp.Diff([2]string{string(tt.wantCode), tt.wantMsg}, got); diff != "" {
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
			name:     "invalid JSON event",
			handler:  stream(messageStart(), textStart(0), event("content_block_delta", `{"type":"content_block_delta","index":0,"delta":{`)),
			wantCode: askbi.InvalidResult,
		},
		{
			name:     "cut off without message_stop",
			handler:  stream(messageStart(), textStart(0), textDelta(0, "Hi"), toolStart(1, "toolu_a", "run_query"), jsonDelta(1, `{"sql":`)),
			wantCode: askbi.Unavailable,
		},
		{
			name: "connection dropped mid-event",
			handler: func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "text/event-stream")
				w.Header().Set("Content-Length", "1000")
				w.WriteHeader(http.StatusOK)
				io.WriteString(w, messageStart()+textStart(0)+"event: content_block_delta\ndata: {\"type\":")
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
			name:     "overloaded event mid-stream",
			handler:  stream(messageStart(), textStart(0), textDelta(0, "Hi"), event("error", `{"type":"error","error":{"type":"overloaded_error","message":"`+secretBody+`"}}`)),
			wantCode: askbi.Unavailable,
		},
		{
			name:     "rate limit event mid-stream",
			handler:  stream(messageStart(), event("error", `{"type":"error","error":{"type":"rate_limit_error","message":"`+secretBody+`"}}`)),
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
				p, err = anthropic.New("claude-test", &anthropic.Options{BaseURL: tt.baseURL, APIKeyEnv: testKeyEnv})
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
				io.WriteString(w, e)
			}
			w.(http.Flusher).Flush()
		}
		<-r.Context().Done()
	}
}

func TestCompleteTimeoutAndCancel(t *testing.T) {
	withTimeout := func(t *testing.T) context.Context {
		ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
		t.Cleanup(cancel)
		return ctx
	}
	tests := []struct {
		name     string
		handler  func(http.ResponseWriter, *http.Request)
		opts     *anthropic.Options
		ctx      func(t *testing.T) context.Context
		wantCode askbi.Code
		wantMsg  string
	}{
		{
			name:     "ctx deadline before headers",
			handler:  hang(),
			ctx:      withTimeout,
			wantCode: askbi.Timeout,
			wantMsg:  "the model provider did not answer in time",
		},
		{
			name:     "ctx deadline mid-stream",
			handler:  hang(messageStart(), textStart(0), textDelta(0, "Hi")),
			ctx:      withTimeout,
			wantCode: askbi.Timeout,
			wantMsg:  "the model provider did not answer in time",
		},
		{
			name:     "Options.Timeout",
			handler:  hang(messageStart(), textStart(0), textDelta(0, "Hi")),
			opts:     &anthropic.Options{Timeout: 50 * time.Millisecond},
			ctx:      func(*testing.T) context.Context { return context.Background() },
			wantCode: askbi.Timeout,
			wantMsg:  "the model provider did not answer in time",
		},
		{
			name:    "cancelled mid-stream",
			handler: hang(messageStart(), textStart(0), textDelta(0, "Hi")),
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
	t.Setenv("ANTHROPIC_API_KEY", "")
	t.Setenv(testKeyEnv, testKey)
	tests := []struct {
		name    string
		model   string
		opts    *anthropic.Options
		wantMsg string // "" for success
	}{
		{name: "defaults", model: "claude-sonnet-4-5", opts: nil, wantMsg: "anthropic: the environment variable ANTHROPIC_API_KEY that holds the API key is not set"},
		{name: "named variable", model: "m", opts: &anthropic.Options{APIKeyEnv: testKeyEnv}},
		{name: "gateway base URL", model: "m", opts: &anthropic.Options{APIKeyEnv: testKeyEnv, BaseURL: "https://gateway.example/anthropic"}},
		{name: "missing variable", model: "m", opts: &anthropic.Options{APIKeyEnv: "ASKBI_TEST_NO_SUCH_KEY"}, wantMsg: "anthropic: the environment variable ASKBI_TEST_NO_SUCH_KEY that holds the API key is not set"},
		{name: "empty variable", model: "m", opts: &anthropic.Options{APIKeyEnv: "ASKBI_TEST_EMPTY_KEY"}, wantMsg: "anthropic: the environment variable ASKBI_TEST_EMPTY_KEY that holds the API key is not set"},
		{name: "no model", model: "", opts: &anthropic.Options{APIKeyEnv: testKeyEnv}, wantMsg: "anthropic: the model name is empty"},
		{name: "bad base URL", model: "m", opts: &anthropic.Options{APIKeyEnv: testKeyEnv, BaseURL: "ftp://example.com"}, wantMsg: "anthropic: BaseURL must be an http or https URL"},
		{name: "negative max tokens", model: "m", opts: &anthropic.Options{APIKeyEnv: testKeyEnv, MaxTokens: -1}, wantMsg: "anthropic: MaxTokens, Timeout and MaxRetries must not be negative"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := anthropic.New(tt.model, tt.opts)
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
	p, rec := MustProvider(t, stream(messageStart(), textStart(0), textDelta(0, "Hi"), blockStop(0), messageDelta("end_turn"), messageStop()), nil)
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
	p, _ := MustProvider(t, stream(
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
	), nil)
	var deltas []string
	got, err := complete(t, context.Background(), p, question, func(d string) { deltas = append(deltas, d) })
	if err != nil {
		t.Fatalf("Complete: %v", err)
	}
	if diff := cmp.Diff([]string{"Counting them."}, deltas); diff != "" {
		t.Errorf("onText deltas mismatch (-want +got):\n%s", diff)
	}
	want := ask.ModelReply{Text: "Counting them.", Reasoning: "Let me look at the orders. " + private,
		ToolCalls: []ask.ToolCall{{ID: "toolu_01", Name: "run_query", Arguments: json.RawMessage(`{"sql":"select 1"}`)}}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("reply mismatch (-want +got):\n%s", diff)
	}
	if b, _ := json.Marshal(got); strings.Contains(string(b), "PRIVATE-THOUGHT") {
		t.Errorf("the reply serializes the reasoning: %s", b)
	}
}
