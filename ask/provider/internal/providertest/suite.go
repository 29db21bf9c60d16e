package providertest

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/askbi/askbi"
	"github.com/askbi/askbi/ask"
)

// Options are the options every provider has.
type Options struct {
	BaseURL    string
	APIKeyEnv  string
	MaxTokens  int
	Timeout    time.Duration
	HTTPClient *http.Client
}

// Wire describes a provider, built with options O as a P, to the suite:
// how to build one, and how its API streams a reply and reports a
// failure.
type Wire[O any, P ask.Provider] struct {
	// Name begins the messages of New's errors, as in "openai: ...".
	Name string
	// DefaultKeyEnv is the variable New reads when the options name none.
	DefaultKeyEnv string
	// Path is what follows the test server's address in BaseURL: "/v1"
	// where BaseURL ends in /v1.
	Path string
	// New is the provider's New. Its options O have the fields of
	// Options, which the suite sets by name.
	New func(model string, o *O) (P, error)
	// Endpoint is the URL path the provider posts to.
	Endpoint string
	// RoundTrip is the JSON body of the second request of the suite's
	// RoundTrip: the history of a first reply with text and two tool
	// calls, their results, a tool call without arguments, an empty
	// assistant message, and another turn.
	RoundTrip map[string]any
	// Events are the frames of a streamed reply made of steps, from the
	// first to the one that says the reply is whole; when whole is false,
	// without the end, as a stream cut off after the steps.
	Events func(whole bool, steps ...Step) []string
	// Garbled is a frame whose JSON is cut short, as it may follow
	// Events(false, Text(...)).
	Garbled string
	// FailedEvent and RateLimitedEvent are the frames of error events
	// inside a stream, with SecretBody, that say the provider failed or
	// is rate limiting.
	FailedEvent, RateLimitedEvent string
	// ErrorBody is the JSON body of a request failed with status, with
	// message.
	ErrorBody func(status int, message string) string
	// Usage is the usage Events reports in a whole stream, as the reply
	// must carry it.
	Usage ask.Usage
	// Finish is the finish reason Events reports for a whole reply of
	// text, as the reply must carry it ("stop", "end_turn").
	Finish string
}

// ignoreUsage compares replies without their usage and finish reason,
// which ReportsUsage checks.
var ignoreUsage = cmpopts.IgnoreFields(ask.ModelReply{}, "Usage", "FinishReason")

// Step is one step of a scripted reply: a piece of text, the start of a
// tool call, or a piece of its arguments.
type Step struct {
	Kind     StepKind
	Call     int    // which tool call, from 0: CallStep and ArgsStep
	ID, Name string // CallStep
	Text     string // TextStep: the text; ArgsStep: the piece of JSON
}

// StepKind says what a Step is.
type StepKind int

// The kinds of Step.
const (
	TextStep StepKind = iota
	CallStep
	ArgsStep
)

// Text is a step of the reply's text.
func Text(s string) Step { return Step{Kind: TextStep, Text: s} }

// Call is the start of tool call i, with its ID and name.
func Call(i int, id, name string) Step { return Step{Kind: CallStep, Call: i, ID: id, Name: name} }

// Args is a piece of the arguments of tool call i.
func Args(i int, part string) Step { return Step{Kind: ArgsStep, Call: i, Text: part} }

// MustProvider starts a Server with handler and returns a provider for
// it, built by w from o and then more, with the key in [KeyEnv].
func MustProvider[O any, P ask.Provider](t *testing.T, w Wire[O, P], handler http.HandlerFunc, o Options, more ...func(*O)) (P, *Server) {
	t.Helper()
	srv := NewServer(t, handler)
	t.Setenv(KeyEnv, Key)
	o.BaseURL, o.APIKeyEnv, o.HTTPClient = srv.URL+w.Path, KeyEnv, srv.Client
	opts := options[O](t, o)
	for _, f := range more {
		f(opts)
	}
	p, err := w.New("test-model", opts)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return p, srv
}

// options returns o as a provider's options O, field by field.
func options[O any](t *testing.T, o Options) *O {
	t.Helper()
	var opts O
	from, to := reflect.ValueOf(o), reflect.ValueOf(&opts).Elem()
	for i := range from.NumField() {
		name := from.Type().Field(i).Name
		f := to.FieldByName(name)
		if !f.IsValid() || f.Type() != from.Field(i).Type() {
			t.Fatalf("%T has no field %s of type %s", opts, name, from.Field(i).Type())
		}
		f.Set(from.Field(i))
	}
	return &opts
}

// Run proves that the provider w describes streams text and tool calls,
// sends a conversation as w.RoundTrip says, refuses what it cannot send
// or read, maps every failure to a code with a safe message, is safe for
// concurrent use, and keeps the key out of every text. Each subtest gets
// its own test server.
func Run[O any, P ask.Provider](t *testing.T, w Wire[O, P]) {
	ctx := context.Background()
	whole := func(steps ...Step) http.HandlerFunc { return Stream(w.Events(true, steps...)...) }

	t.Run("StreamsText", func(t *testing.T) {
		p, _ := MustProvider(t, w, whole(Text("There were "), Text("1,204"), Text(" orders.")), Options{})
		var deltas []string
		got, err := Complete(t, ctx, p, Question, func(d string) { deltas = append(deltas, d) })
		if err != nil {
			t.Fatalf("Complete: %v", err)
		}
		if diff := cmp.Diff([]string{"There were ", "1,204", " orders."}, deltas); diff != "" {
			t.Errorf("onText deltas mismatch (-want +got):\n%s", diff)
		}
		if diff := cmp.Diff(ask.ModelReply{Text: "There were 1,204 orders."}, got, ignoreUsage); diff != "" {
			t.Errorf("reply mismatch (-want +got):\n%s", diff)
		}
	})

	t.Run("ReportsUsage", func(t *testing.T) {
		p, _ := MustProvider(t, w, whole(Text("ok")), Options{})
		got, err := Complete(t, ctx, p, Question, nil)
		if err != nil {
			t.Fatalf("Complete: %v", err)
		}
		if w.Usage.CachedInputTokens == 0 {
			t.Fatal("the wire's stream reports no cached input tokens: the check would see nothing")
		}
		if diff := cmp.Diff(w.Usage, got.Usage); diff != "" {
			t.Errorf("usage mismatch (-want +got):\n%s", diff)
		}
		if w.Finish == "" || got.FinishReason != w.Finish {
			t.Errorf("finish reason %q, want %q", got.FinishReason, w.Finish)
		}
	})

	t.Run("AssemblesToolCalls", func(t *testing.T) {
		tests := []struct {
			name  string
			steps []Step
			want  ask.ModelReply
		}{
			{
				name:  "one call split over deltas",
				steps: []Step{Call(0, "call_a", "run_query"), Args(0, `{"sql": "sel`), Args(0, `ect count(*) `), Args(0, `from orders"}`)},
				want: ask.ModelReply{ToolCalls: []ask.ToolCall{
					{ID: "call_a", Name: "run_query", Arguments: json.RawMessage(`{"sql": "select count(*) from orders"}`)},
				}},
			},
			{
				name: "text then two calls with interleaved deltas",
				steps: []Step{
					Text("Checking both."),
					Call(0, "call_a", "run_query"), Args(0, `{"sql":`),
					Call(1, "call_b", "describe_dataset"), Args(1, `{"id"`),
					Args(0, `"select 1"}`), Args(1, `:"ds_7"}`),
				},
				want: ask.ModelReply{Text: "Checking both.", ToolCalls: []ask.ToolCall{
					{ID: "call_a", Name: "run_query", Arguments: json.RawMessage(`{"sql":"select 1"}`)},
					{ID: "call_b", Name: "describe_dataset", Arguments: json.RawMessage(`{"id":"ds_7"}`)},
				}},
			},
			{
				name:  "no argument deltas become {}",
				steps: []Step{Call(0, "call_a", "list_dashboards")},
				want:  ask.ModelReply{ToolCalls: []ask.ToolCall{{ID: "call_a", Name: "list_dashboards", Arguments: json.RawMessage(`{}`)}}},
			},
			{
				name:  "empty argument deltas become {}",
				steps: []Step{Call(0, "call_a", "list_dashboards"), Args(0, "")},
				want:  ask.ModelReply{ToolCalls: []ask.ToolCall{{ID: "call_a", Name: "list_dashboards", Arguments: json.RawMessage(`{}`)}}},
			},
			{
				name:  "blank arguments become {}",
				steps: []Step{Call(0, "call_a", "list_dashboards"), Args(0, "  ")},
				want:  ask.ModelReply{ToolCalls: []ask.ToolCall{{ID: "call_a", Name: "list_dashboards", Arguments: json.RawMessage(`{}`)}}},
			},
		}
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				p, _ := MustProvider(t, w, whole(tt.steps...), Options{})
				got, err := Complete(t, ctx, p, Question, nil)
				if err != nil {
					t.Fatalf("Complete: %v", err)
				}
				if diff := cmp.Diff(tt.want, got, ignoreUsage); diff != "" {
					t.Errorf("reply mismatch (-want +got):\n%s", diff)
				}
			})
		}
	})

	t.Run("RejectsBadToolCalls", func(t *testing.T) {
		tests := []struct {
			name string
			tool string
			args string
		}{
			{name: "arguments cut off", tool: "run_query", args: `{"sql": "select`},
			{name: "arguments an array", tool: "run_query", args: `[1, 2]`},
			{name: "arguments a string", tool: "run_query", args: `"select 1"`},
			{name: "arguments null", tool: "run_query", args: `null`},
			{name: "two objects", tool: "run_query", args: `{}{}`},
			{name: "no name", tool: "", args: `{}`},
		}
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				p, _ := MustProvider(t, w, whole(Call(0, "call_a", tt.tool), Args(0, tt.args)), Options{})
				_, err := Complete(t, ctx, p, Question, nil)
				if got := askbi.ErrorCode(err); got != askbi.InvalidResult {
					t.Errorf("code = %q (%v), want %q", got, err, askbi.InvalidResult)
				}
				AssertSafe(t, err)
			})
		}
	})

	t.Run("RoundTrip", func(t *testing.T) {
		p, srv := MustProvider(t, w, whole(
			Text("Let me look."),
			Call(0, "call_a", "run_query"), Args(0, `{"sql":"select 1"}`),
			Call(1, "call_b", "list_dashboards"),
		), Options{})
		req := ask.ModelRequest{
			System:   "You are the data assistant.",
			Messages: []ask.Message{{Role: ask.RoleUser, Text: "How many orders?"}},
			Tools: []ask.ToolSpec{
				{Name: "run_query", Description: "Runs read-only SQL.", InputSchema: json.RawMessage(`{"type":"object","properties":{"sql":{"type":"string","maxLength":4000}},"required":["sql"],"additionalProperties":false}`)},
				{Name: "list_dashboards", Description: "Lists dashboards."},
			},
			MaxTokens: 300,
		}
		first, err := Complete(t, ctx, p, req, nil)
		if err != nil {
			t.Fatalf("first Complete: %v", err)
		}
		// The reply and the tool results go back as history.
		req.Messages = append(req.Messages,
			ask.Message{Role: ask.RoleAssistant, Text: first.Text, ToolCalls: first.ToolCalls},
			ask.Message{Role: ask.RoleTool, ToolCallID: "call_a", Text: `[{"count":1204}]`},
			ask.Message{Role: ask.RoleTool, ToolCallID: "call_b", Text: ""},
			ask.Message{Role: ask.RoleAssistant, ToolCalls: []ask.ToolCall{{ID: "call_c", Name: "list_dashboards"}}},
			ask.Message{Role: ask.RoleTool, ToolCallID: "call_c", Text: "[]"},
			ask.Message{Role: ask.RoleAssistant},
			ask.Message{Role: ask.RoleAssistant, Text: "There were 1,204 orders."},
			ask.Message{Role: ask.RoleUser, Text: "Thanks"},
		)
		if _, err := Complete(t, ctx, p, req, nil); err != nil {
			t.Fatalf("second Complete: %v", err)
		}
		if srv.Count() != 2 {
			t.Fatalf("server got %d requests, want 2", srv.Count())
		}
		if diff := cmp.Diff(w.RoundTrip, srv.Body(1)); diff != "" {
			t.Errorf("request body mismatch (-want +got):\n%s", diff)
		}
		if got, want := srv.Header(1).Get("Authorization"), "Bearer "+Key; got != want {
			t.Errorf("Authorization = %q, want %q", got, want)
		}
		if got := srv.Path(1); got != w.Endpoint {
			t.Errorf("path = %q, want %q", got, w.Endpoint)
		}
	})

	t.Run("RejectsBadRequests", func(t *testing.T) {
		tests := []struct {
			name string
			req  ask.ModelRequest
		}{
			{name: "unknown role", req: ask.ModelRequest{Messages: []ask.Message{{Role: "system", Text: "x"}}}},
			{name: "tool message without call ID", req: ask.ModelRequest{Messages: []ask.Message{{Role: ask.RoleTool, Text: "x"}}}},
			{name: "recorded arguments not an object", req: ask.ModelRequest{Messages: []ask.Message{{Role: ask.RoleAssistant, ToolCalls: []ask.ToolCall{{ID: "c", Name: "t", Arguments: json.RawMessage(`[1]`)}}}}}},
			{name: "schema not an object", req: ask.ModelRequest{Messages: Question.Messages, Tools: []ask.ToolSpec{{Name: "t", InputSchema: json.RawMessage(`"object"`)}}}},
			{name: "schema with trailing data", req: ask.ModelRequest{Messages: Question.Messages, Tools: []ask.ToolSpec{{Name: "t", InputSchema: json.RawMessage(`{} {}`)}}}},
		}
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				p, srv := MustProvider(t, w, whole(Text("ok")), Options{})
				_, err := Complete(t, ctx, p, tt.req, nil)
				if got := askbi.ErrorCode(err); got != askbi.InvalidArgument {
					t.Errorf("code = %q (%v), want %q", got, err, askbi.InvalidArgument)
				}
				if srv.Count() != 0 {
					t.Errorf("server got %d requests, want none", srv.Count())
				}
			})
		}
	})

	t.Run("ProviderErrors", func(t *testing.T) {
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
			{529, askbi.Unavailable, "the model provider failed; try again later"},
		}
		for _, tt := range tests {
			t.Run(fmt.Sprint(tt.status), func(t *testing.T) {
				// The body echoes the key, as some gateways do, to prove it
				// is removed from the logged cause too.
				body := w.ErrorBody(tt.status, SecretBody+" for key "+Key)
				p, srv := MustProvider(t, w, func(rw http.ResponseWriter, r *http.Request) {
					rw.Header().Set("Content-Type", "application/json")
					rw.Header().Set("Retry-After", "0")
					rw.WriteHeader(tt.status)
					io.WriteString(rw, body)
				}, Options{})
				_, err := Complete(t, ctx, p, Question, nil)
				got := [2]string{string(askbi.ErrorCode(err)), askbi.ErrorMessage(err)}
				if diff := cmp.Diff([2]string{string(tt.wantCode), tt.wantMsg}, got); diff != "" {
					t.Errorf("error mismatch (-want +got):\n%s\n(error: %v)", diff, err)
				}
				if !strings.Contains(fmt.Sprint(err), fmt.Sprint(tt.status)) {
					t.Errorf("logged error %q does not name the status", err)
				}
				if srv.Count() != 1 {
					t.Errorf("server got %d requests, want 1 (no retries)", srv.Count())
				}
				AssertSafe(t, err)
			})
		}
	})

	t.Run("BrokenStreams", func(t *testing.T) {
		down := httptest.NewServer(http.NotFoundHandler())
		downURL := down.URL
		down.Close()
		hi := w.Events(false, Text("Hi"))

		tests := []struct {
			name     string
			handler  http.HandlerFunc
			baseURL  string // overrides the test server
			wantCode askbi.Code
		}{
			{
				name:     "invalid JSON event",
				handler:  Stream(append(hi, w.Garbled)...),
				wantCode: askbi.InvalidResult,
			},
			{
				name:     "cut off before the end",
				handler:  Stream(w.Events(false, Text("Hi"), Call(0, "call_a", "run_query"), Args(0, `{"sql":`))...),
				wantCode: askbi.Unavailable,
			},
			{
				name: "connection dropped mid-event",
				handler: func(rw http.ResponseWriter, r *http.Request) {
					rw.Header().Set("Content-Type", "text/event-stream")
					rw.Header().Set("Content-Length", "1000")
					rw.WriteHeader(http.StatusOK)
					io.WriteString(rw, strings.Join(hi, "")+`data: {"type":`)
				},
				wantCode: askbi.Unavailable,
			},
			{
				name: "not an event stream",
				handler: func(rw http.ResponseWriter, r *http.Request) {
					rw.Header().Set("Content-Type", "text/html")
					io.WriteString(rw, "<html><body>"+SecretBody+"</body></html>")
				},
				wantCode: askbi.Unavailable,
			},
			{
				name:     "error event mid-stream",
				handler:  Stream(append(hi, w.FailedEvent)...),
				wantCode: askbi.Unavailable,
			},
			{
				name:     "rate limit event mid-stream",
				handler:  Stream(append(w.Events(false), w.RateLimitedEvent)...),
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
				p, _ := MustProvider(t, w, tt.handler, Options{})
				if tt.baseURL != "" {
					var err error
					p, err = w.New("test-model", options[O](t, Options{BaseURL: tt.baseURL, APIKeyEnv: KeyEnv}))
					if err != nil {
						t.Fatalf("New: %v", err)
					}
				}
				_, err := Complete(t, ctx, p, Question, nil)
				if got := askbi.ErrorCode(err); got != tt.wantCode {
					t.Errorf("code = %q (%v), want %q", got, err, tt.wantCode)
				}
				AssertSafe(t, err)
			})
		}
	})

	t.Run("TimeoutAndCancel", func(t *testing.T) {
		withTimeout := func(t *testing.T) context.Context {
			ctx, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
			t.Cleanup(cancel)
			return ctx
		}
		hi := w.Events(false, Text("Hi"))
		tests := []struct {
			name     string
			handler  http.HandlerFunc
			opts     Options
			ctx      func(t *testing.T) context.Context
			wantCode askbi.Code
			wantMsg  string
		}{
			{
				name:     "ctx deadline before headers",
				handler:  Hang(),
				ctx:      withTimeout,
				wantCode: askbi.Timeout,
				wantMsg:  "the model provider did not answer in time",
			},
			{
				name:     "ctx deadline mid-stream",
				handler:  Hang(hi...),
				ctx:      withTimeout,
				wantCode: askbi.Timeout,
				wantMsg:  "the model provider did not answer in time",
			},
			{
				name:     "Options.Timeout",
				handler:  Hang(hi...),
				opts:     Options{Timeout: 50 * time.Millisecond},
				ctx:      func(*testing.T) context.Context { return ctx },
				wantCode: askbi.Timeout,
				wantMsg:  "the model provider did not answer in time",
			},
			{
				name:    "cancelled mid-stream",
				handler: Hang(hi...),
				ctx: func(t *testing.T) context.Context {
					ctx, cancel := context.WithCancel(ctx)
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
				p, _ := MustProvider(t, w, tt.handler, tt.opts)
				_, err := Complete(t, tt.ctx(t), p, Question, nil)
				got := [2]string{string(askbi.ErrorCode(err)), askbi.ErrorMessage(err)}
				if diff := cmp.Diff([2]string{string(tt.wantCode), tt.wantMsg}, got); diff != "" {
					t.Errorf("error mismatch (-want +got):\n%s\n(error: %v)", diff, err)
				}
				AssertSafe(t, err)
			})
		}
	})

	t.Run("New", func(t *testing.T) {
		t.Setenv("ASKBI_TEST_EMPTY_KEY", "")
		t.Setenv(w.DefaultKeyEnv, "")
		t.Setenv(KeyEnv, Key)
		notSet := func(env string) string {
			return w.Name + ": the environment variable " + env + " that holds the API key is not set"
		}
		tests := []struct {
			name    string
			model   string
			opts    *Options
			wantMsg string // "" for success
		}{
			{name: "defaults", model: "some-model", opts: nil, wantMsg: notSet(w.DefaultKeyEnv)},
			{name: "named variable", model: "m", opts: &Options{APIKeyEnv: KeyEnv}},
			{name: "local http base URL", model: "m", opts: &Options{APIKeyEnv: KeyEnv, BaseURL: "http://localhost:8000/v1"}},
			{name: "gateway base URL", model: "m", opts: &Options{APIKeyEnv: KeyEnv, BaseURL: "https://gateway.example/anthropic"}},
			{name: "missing variable", model: "m", opts: &Options{APIKeyEnv: "ASKBI_TEST_NO_SUCH_KEY"}, wantMsg: notSet("ASKBI_TEST_NO_SUCH_KEY")},
			{name: "empty variable", model: "m", opts: &Options{APIKeyEnv: "ASKBI_TEST_EMPTY_KEY"}, wantMsg: notSet("ASKBI_TEST_EMPTY_KEY")},
			{name: "no model", model: "", opts: &Options{APIKeyEnv: KeyEnv}, wantMsg: w.Name + ": the model name is empty"},
			{name: "blank model", model: " ", opts: &Options{APIKeyEnv: KeyEnv}, wantMsg: w.Name + ": the model name is empty"},
			{name: "base URL without scheme", model: "m", opts: &Options{APIKeyEnv: KeyEnv, BaseURL: "localhost:8000/v1"}, wantMsg: w.Name + ": BaseURL must be an http or https URL"},
			{name: "base URL not http", model: "m", opts: &Options{APIKeyEnv: KeyEnv, BaseURL: "ftp://example.com"}, wantMsg: w.Name + ": BaseURL must be an http or https URL"},
			{name: "negative timeout", model: "m", opts: &Options{APIKeyEnv: KeyEnv, Timeout: -1}, wantMsg: w.Name + ": MaxTokens, Timeout and MaxRetries must not be negative"},
			{name: "negative max tokens", model: "m", opts: &Options{APIKeyEnv: KeyEnv, MaxTokens: -1}, wantMsg: w.Name + ": MaxTokens, Timeout and MaxRetries must not be negative"},
		}
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				var opts *O
				if tt.opts != nil {
					opts = options[O](t, *tt.opts)
				}
				_, err := w.New(tt.model, opts)
				if tt.wantMsg == "" {
					if err != nil {
						t.Fatalf("New: %v", err)
					}
					return
				}
				got := [2]string{string(askbi.ErrorCode(err)), askbi.ErrorMessage(err)}
				if diff := cmp.Diff([2]string{string(askbi.InvalidArgument), tt.wantMsg}, got); diff != "" {
					t.Errorf("error mismatch (-want +got):\n%s\n(error: %v)", diff, err)
				}
				AssertSafe(t, err)
			})
		}
	})

	t.Run("DoesNotPrintKey", func(t *testing.T) {
		p, _ := MustProvider(t, w, Stream(), Options{})
		for _, text := range []string{fmt.Sprintf("%v", p), fmt.Sprintf("%+v", p), fmt.Sprintf("%#v", p)} {
			if strings.Contains(text, Key) {
				t.Errorf("formatted Provider holds the API key: %s", text)
			}
		}
	})

	t.Run("Concurrent", func(t *testing.T) {
		p, srv := MustProvider(t, w, whole(Text("Hi")), Options{})
		const n = 8
		var wg sync.WaitGroup
		errs := make(chan error, n)
		for range n {
			wg.Go(func() {
				reply, err := p.Complete(ctx, Question, nil)
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
		if srv.Count() != n {
			t.Errorf("server got %d requests, want %d", srv.Count(), n)
		}
	})
}
