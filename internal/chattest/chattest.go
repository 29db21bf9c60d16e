// Package chattest is a test client of the chat HTTP API (package askhttp):
// requests with a bearer token, turns as JSON or Server-Sent Events, and
// the checks the SDK's and the reference server's tests share.
package chattest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/askbi/askbi/ask"
	"github.com/askbi/askbi/internal/httpjson"
)

// Client sends requests to a chat API served at URL.
type Client struct {
	URL  string // the server's base URL, e.g. an httptest server's
	HTTP *http.Client
}

// Do sends a request with token as bearer (none when empty); body is sent
// as is when it is a string, else as JSON; header holds name, value
// pairs. It returns the status, the headers and the body.
func (c Client) Do(tb testing.TB, method, path, token string, body any, header ...string) (int, http.Header, []byte) {
	tb.Helper()
	var r io.Reader
	switch b := body.(type) {
	case nil:
	case string:
		r = strings.NewReader(b)
	default:
		j, err := json.Marshal(b)
		if err != nil {
			tb.Fatal(err)
		}
		r = bytes.NewReader(j)
	}
	req, err := http.NewRequestWithContext(tb.Context(), method, c.URL+path, r)
	if err != nil {
		tb.Fatal(err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	client := c.HTTP
	if client == nil {
		client = http.DefaultClient
	}
	resp, err := client.Do(req)
	if err != nil {
		tb.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		tb.Fatalf("%s %s: read: %v", method, path, err)
	}
	return resp.StatusCode, resp.Header, b
}

// MustDo is Do that requires status want and decodes the answer into out
// (when not nil).
func (c Client) MustDo(tb testing.TB, want int, method, path, token string, body, out any) {
	tb.Helper()
	status, _, b := c.Do(tb, method, path, token, body)
	if status != want {
		tb.Fatalf("%s %s: status %d, want %d; body %s", method, path, status, want, b)
	}
	if out != nil {
		if err := json.Unmarshal(b, out); err != nil {
			tb.Fatalf("%s %s: decode %s: %v", method, path, b, err)
		}
	}
}

// MustConversation creates a conversation and returns its ID.
func (c Client) MustConversation(tb testing.TB, token string) string {
	tb.Helper()
	var out struct{ Conversation ask.Conversation }
	c.MustDo(tb, http.StatusCreated, "POST", "/ai/conversations", token, nil, &out)
	if out.Conversation.ID == "" {
		tb.Fatal("no conversation ID")
	}
	return out.Conversation.ID
}

// MustTurn posts a turn as JSON and returns its events.
func (c Client) MustTurn(tb testing.TB, path, token string, body any) []ask.Event {
	tb.Helper()
	var out struct{ Events []ask.Event }
	c.MustDo(tb, http.StatusOK, "POST", path, token, body, &out)
	return out.Events
}

// MustStartDelete asks, in conversation conv, to delete the demo's
// Revenue dashboard (dash_revenue) and returns the approval event.
func (c Client) MustStartDelete(tb testing.TB, token, conv string) ask.Event {
	tb.Helper()
	events := c.MustTurn(tb, "/ai/conversations/"+conv+"/messages", token, map[string]any{"message": "delete the Revenue dashboard"})
	want := []string{"tool.running", "tool.completed", "tool.approval_required", "request.completed"}
	if got := Types(events); !slices.Equal(got, want) {
		tb.Fatalf("event types %v, want %v", got, want)
	}
	e := MustToolEvent(tb, events, ask.EventToolApprovalRequired, "delete_dashboard")
	if e.Tool.ApprovalID == "" || string(e.Tool.Arguments) != `{"dashboard_id":"dash_revenue"}` {
		tb.Fatalf("approval event: %+v", e.Tool)
	}
	if last := events[len(events)-1]; last.State != ask.TurnAwaitingApproval {
		tb.Errorf("turn state %q, want awaiting_approval", last.State)
	}
	return e
}

// MustDashboards returns the sorted names of the dashboards the context
// search finds for token in team.
func (c Client) MustDashboards(tb testing.TB, token, team string) []string {
	tb.Helper()
	var doc struct{ Groups []ask.ContextGroup }
	c.MustDo(tb, http.StatusOK, "GET", "/ai/context?teamId="+team+"&type=dashboard&limit=50", token, nil, &doc)
	var names []string
	for _, g := range doc.Groups {
		for _, it := range g.Items {
			names = append(names, it.Name)
		}
	}
	slices.Sort(names)
	return names
}

// MustStream posts a turn as SSE and returns its events, parsed from the
// frames, checking each frame's event and id lines against its data.
func (c Client) MustStream(tb testing.TB, path, token string, body any) []ask.Event {
	tb.Helper()
	status, h, b := c.Do(tb, "POST", path, token, body, "Accept", "text/event-stream")
	if status != http.StatusOK || h.Get("Content-Type") != "text/event-stream" {
		tb.Fatalf("POST %s: status %d, Content-Type %q; body %s", path, status, h.Get("Content-Type"), b)
	}
	return MustParseSSE(tb, b)
}

// MustParseSSE parses an event stream's frames into events.
func MustParseSSE(tb testing.TB, b []byte) []ask.Event {
	tb.Helper()
	var events []ask.Event
	for frame := range strings.SplitSeq(strings.TrimSpace(string(b)), "\n\n") {
		var name, id, data string
		for line := range strings.SplitSeq(frame, "\n") {
			switch {
			case strings.HasPrefix(line, ":"): // heartbeat comment
			case strings.HasPrefix(line, "event: "):
				name = strings.TrimPrefix(line, "event: ")
			case strings.HasPrefix(line, "id: "):
				id = strings.TrimPrefix(line, "id: ")
			case strings.HasPrefix(line, "data: "):
				data = strings.TrimPrefix(line, "data: ")
			default:
				tb.Fatalf("unexpected SSE line %q", line)
			}
		}
		if data == "" {
			continue
		}
		var e ask.Event
		if err := json.Unmarshal([]byte(data), &e); err != nil {
			tb.Fatalf("SSE data %q: %v", data, err)
		}
		if name != string(e.Type) || id != fmt.Sprint(e.Seq) {
			tb.Errorf("SSE frame event %q id %q, data says %q seq %d", name, id, e.Type, e.Seq)
		}
		events = append(events, e)
	}
	return events
}

// Types lists the events' types with consecutive message.delta events
// collapsed into one.
func Types(events []ask.Event) []string {
	var out []string
	for _, e := range events {
		if e.Type == ask.EventMessageDelta && len(out) > 0 && out[len(out)-1] == string(e.Type) {
			continue
		}
		out = append(out, string(e.Type))
	}
	return out
}

// MustToolEvent returns the first event of type typ for tool name.
func MustToolEvent(tb testing.TB, events []ask.Event, typ ask.EventType, name string) ask.Event {
	tb.Helper()
	for _, e := range events {
		if e.Type == typ && e.Tool != nil && e.Tool.Name == name {
			return e
		}
	}
	tb.Fatalf("no %s event for %s in %v", typ, name, Types(events))
	return ask.Event{}
}

// MustError decodes an error answer.
func MustError(tb testing.TB, b []byte) httpjson.ErrorBody {
	tb.Helper()
	var doc httpjson.ErrorDoc
	if err := json.Unmarshal(b, &doc); err != nil || doc.Error.Code == "" {
		tb.Fatalf("not an error answer: %s", b)
	}
	return doc.Error
}

// CheckOrder checks that events are numbered from 1 and end the turn as
// completed.
func CheckOrder(tb testing.TB, events []ask.Event) {
	tb.Helper()
	if len(events) == 0 {
		tb.Fatal("no events")
	}
	for i, e := range events {
		if e.Seq != i+1 {
			tb.Errorf("event %d has seq %d", i, e.Seq)
		}
	}
	if last := events[len(events)-1]; last.Type != ask.EventRequestCompleted {
		tb.Errorf("last event is %s (%+v), want request.completed", last.Type, last.Error)
	}
}

// ShowSignupsWant is the event order of the mock model's "show signups by
// week".
var ShowSignupsWant = []string{
	"tool.running", "tool.completed", // search_workspace
	"tool.running", "tool.completed", // run_dataset
	"tool.running", "tool.completed", // create_chart_preview
	"message.delta", "message.completed", "request.completed",
}
