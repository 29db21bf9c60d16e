// Package providertest holds what the tests of the model providers share:
// a recording test server, the helpers around Complete, and the suite that
// every provider runs against a stand-in for its API. A provider describes
// its API in a Wire (how to build the provider, how its API streams text,
// tool calls and errors, the body of a round trip) and runs the suite:
//
//	var wire = providertest.Wire[openai.Options, *openai.Provider]{Name: "openai", New: openai.New, ...}
//
//	func TestProvider(t *testing.T) { providertest.Run(t, wire) }
//
// Its own tests (its options, the events only its API has) stay beside it
// and build the provider with [MustProvider].
package providertest

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

	"github.com/askbi/askbi"
	"github.com/askbi/askbi/ask"
)

// Key is the API key the tests use; it is recognisable, so that a leak
// shows in any text. KeyEnv is the variable that holds it.
const (
	Key    = "sk-test-K3Y-5f2c9a81d7e4"
	KeyEnv = "ASKBI_TEST_PROVIDER_KEY"
	// SecretBody stands in for what a provider sends that users must not
	// see.
	SecretBody = "SECRET-BODY-TEXT"
)

// Question is a request of one user message.
var Question = ask.ModelRequest{Messages: []ask.Message{{Role: ask.RoleUser, Text: "How many orders?"}}}

// Server is a test server that records what it receives. It is safe for
// concurrent use.
type Server struct {
	URL    string
	Client *http.Client

	mu      sync.Mutex
	bodies  []map[string]any
	headers []http.Header
	paths   []string
}

// NewServer starts a Server that records each request and answers it with
// handler. It closes when t ends.
func NewServer(t *testing.T, handler http.HandlerFunc) *Server {
	t.Helper()
	s := &Server{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.record(t, r)
		handler(w, r)
	}))
	t.Cleanup(srv.Close)
	s.URL, s.Client = srv.URL, srv.Client()
	return s
}

func (s *Server) record(t *testing.T, req *http.Request) {
	t.Helper()
	raw, err := io.ReadAll(req.Body)
	if err != nil {
		t.Errorf("reading request body: %v", err)
	}
	var body map[string]any
	if err := json.Unmarshal(raw, &body); err != nil {
		t.Errorf("request body is not JSON: %v: %s", err, raw)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.bodies = append(s.bodies, body)
	s.headers = append(s.headers, req.Header.Clone())
	s.paths = append(s.paths, req.URL.Path)
}

// Count is how many requests the server received.
func (s *Server) Count() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.bodies)
}

// Body is the JSON body of the i-th request.
func (s *Server) Body(i int) map[string]any {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.bodies[i]
}

// Header is the header of the i-th request.
func (s *Server) Header(i int) http.Header {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.headers[i]
}

// Path is the URL path of the i-th request.
func (s *Server) Path(i int) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.paths[i]
}

// Stream answers with an event stream of frames, each written as it is
// (a frame ends in a blank line) and flushed.
func Stream(frames ...string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		for _, f := range frames {
			io.WriteString(w, f)
			w.(http.Flusher).Flush()
		}
	}
}

// Hang answers nothing, or first frames, until the client goes away.
func Hang(frames ...string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if len(frames) > 0 {
			w.Header().Set("Content-Type", "text/event-stream")
			for _, f := range frames {
				io.WriteString(w, f)
			}
			w.(http.Flusher).Flush()
		}
		<-r.Context().Done()
	}
}

// Complete runs p.Complete and fails the test if it does not return in
// time, so that a hang fails fast instead of stalling the suite.
func Complete(t *testing.T, ctx context.Context, p ask.Provider, req ask.ModelRequest, onText func(string)) (ask.ModelReply, error) {
	t.Helper()
	// On a hang, ends the call, so that the test server can close.
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
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

// AssertSafe checks that err shows Key nowhere and [SecretBody] not in its
// message.
func AssertSafe(t *testing.T, err error) {
	t.Helper()
	if err == nil {
		return
	}
	for _, text := range []string{err.Error(), askbi.ErrorMessage(err), fmt.Sprintf("%+v", err), fmt.Sprintf("%#v", err)} {
		if strings.Contains(text, Key) {
			t.Errorf("error text holds the API key: %s", text)
		}
	}
	if msg := askbi.ErrorMessage(err); strings.Contains(msg, SecretBody) {
		t.Errorf("error message holds the provider's body: %s", msg)
	}
}
