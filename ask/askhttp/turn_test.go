package askhttp_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/askbi/askbi/internal/chattest"

	"github.com/google/go-cmp/cmp"

	"github.com/askbi/askbi/ask"
	"github.com/askbi/askbi/ask/provider/mock"
)

// slowModel delays every model call, as a slow provider would.
type slowModel struct {
	ask.Provider
	delay time.Duration
}

func (m slowModel) Complete(ctx context.Context, req ask.ModelRequest, onText func(string)) (ask.ModelReply, error) {
	t := time.NewTimer(m.delay)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ask.ModelReply{}, ctx.Err()
	case <-t.C:
	}
	return m.Provider.Complete(ctx, req, onText)
}

// TestTurnOutlivesServerTimeouts: a turn longer than the server's
// ReadTimeout and WriteTimeout is neither cancelled nor cut, as SSE and as
// JSON: without the per-request write deadlines, both answers would be cut
// after WriteTimeout. The stream's window is shortened to 2 × timeout, so
// the stream, 4 × timeout long, lives only because every write moves it.
func TestTurnOutlivesServerTimeouts(t *testing.T) {
	const timeout = 150 * time.Millisecond
	ts := MustServer(t, func(c *config) {
		c.provider = slowModel{mock.New(), timeout}
		c.opts.StreamWindow = 2 * timeout
		c.server = func(s *http.Server) { s.ReadTimeout, s.WriteTimeout = timeout, timeout }
	})
	alice := token("alice")
	conv := ts.MustConversation(t, alice)
	path := "/ai/conversations/" + conv + "/messages"
	// Four model calls: the turn takes at least 4 × timeout.
	began := time.Now()
	events := ts.MustStream(t, path, alice, map[string]any{"message": "show signups by week"})
	if d := time.Since(began); d < 4*timeout {
		t.Fatalf("the turn took %v; the test needs it longer than %v", d, 4*timeout)
	}
	chattest.CheckOrder(t, events)
	if diff := cmp.Diff(chattest.ShowSignupsWant, chattest.Types(events)); diff != "" {
		t.Errorf("SSE event types mismatch (-want +got):\n%s", diff)
	}
	events = ts.MustTurn(t, path, alice, map[string]any{"message": "show signups by week"})
	chattest.CheckOrder(t, events)
	if diff := cmp.Diff(chattest.ShowSignupsWant, chattest.Types(events)); diff != "" {
		t.Errorf("JSON event types mismatch (-want +got):\n%s", diff)
	}
}

// blockingModel blocks until its call's context ends, and reports that.
type blockingModel struct {
	started, cancelled chan struct{}
}

func (m blockingModel) Complete(ctx context.Context, _ ask.ModelRequest, _ func(string)) (ask.ModelReply, error) {
	close(m.started)
	<-ctx.Done()
	close(m.cancelled)
	return ask.ModelReply{}, ctx.Err()
}

// TestDisconnectCancelsTurn: a client that leaves stops the model call.
func TestDisconnectCancelsTurn(t *testing.T) {
	m := blockingModel{started: make(chan struct{}), cancelled: make(chan struct{})}
	ts := MustServer(t, func(c *config) { c.provider = m })
	alice := token("alice")
	conv := ts.MustConversation(t, alice)

	ctx, cancel := context.WithCancel(t.Context())
	req, err := http.NewRequestWithContext(ctx, "POST", ts.URL+"/ai/conversations/"+conv+"/messages", strings.NewReader(`{"message": "hello"}`))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+alice)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "text/event-stream")
	done := make(chan error, 1)
	go func() {
		resp, err := ts.HTTP.Do(req)
		if err == nil {
			_, err = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
		}
		done <- err
	}()
	MustWait(t, m.started, "the model call")
	cancel()
	MustWait(t, m.cancelled, "the model call's cancellation")
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Errorf("client: %v", err)
	}
}

// MustWait waits for c to close, failing the test after 30 seconds.
func MustWait(tb testing.TB, c <-chan struct{}, what string) {
	tb.Helper()
	select {
	case <-c:
	case <-time.After(30 * time.Second):
		tb.Fatalf("timed out waiting for %s", what)
	}
}
