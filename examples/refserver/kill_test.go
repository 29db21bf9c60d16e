package main

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/askbi/askbi/ask"
	"github.com/askbi/askbi/internal/pgtest"
)

// stubModel is an OpenAI-compatible chat API for process tests: "delete
// the Revenue dashboard" gets a delete_dashboard call, a tool result gets
// "Done.", and anything else hangs until the client goes away, so a turn
// stays mid-flight. reached is signalled when a request hangs.
func stubModel(t *testing.T) (url string, reached <-chan struct{}) {
	hung := make(chan struct{}, 16)
	chunk := func(delta, finish string) string {
		f := "null"
		if finish != "" {
			f = `"` + finish + `"`
		}
		return `{"id":"c1","object":"chat.completion.chunk","created":1735689600,"model":"m","choices":[{"index":0,"delta":` + delta + `,"finish_reason":` + f + `}]}`
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			Messages []struct {
				Role    string `json:"role"`
				Content any    `json:"content"`
			} `json:"messages"`
		}
		b, _ := io.ReadAll(r.Body)
		json.Unmarshal(b, &req)
		// The question is the last user message; it was answered when a
		// tool result follows it.
		question, answered := "", false
		for _, m := range req.Messages {
			switch m.Role {
			case "user":
				if c := fmt.Sprint(m.Content); !strings.HasPrefix(c, "<user_memory") {
					question, answered = c, false
				}
			case "tool":
				answered = true
			}
		}
		var events []string
		switch {
		case answered:
			events = []string{chunk(`{"role":"assistant","content":"Done."}`, ""), chunk(`{}`, "stop")}
		case strings.Contains(question, "delete the Revenue dashboard"):
			events = []string{chunk(`{"role":"assistant","tool_calls":[{"index":0,"id":"call_1","type":"function","function":{"name":"delete_dashboard","arguments":"{\"dashboard_id\":\"dash_revenue\"}"}}]}`, ""),
				chunk(`{}`, "tool_calls")}
		default:
			hung <- struct{}{}
			<-r.Context().Done()
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		for _, e := range events {
			fmt.Fprintf(w, "data: %s\n\n", e)
		}
		fmt.Fprint(w, "data: [DONE]\n\n")
	}))
	t.Cleanup(srv.Close)
	return srv.URL, hung
}

// TestKillMidTurn kills the server (kill -9) while a turn waits on the
// model and memories are being added, and restarts it on the same
// database: the turn shows as failed within 30 s of the kill, once its
// lease (ask.Options.TurnLease, 15 s) has run out unrenewed (never
// running forever), every memory whose add was answered is there
// and readable, and the approval the killed process had asked for is
// still pending and runs once when approved after the restart.
func TestKillMidTurn(t *testing.T) {
	modelURL, hung := stubModel(t)
	args := []string{"-database-url", pgtest.MustDatabase(t), "-data-dir", t.TempDir(), "-provider", "openai", "-model", "m",
		"-provider-base-url", modelURL, "-provider-key-env", "ASKBI_TEST_MODEL_KEY"}
	env := []string{"ASKBI_TEST_MODEL_KEY=test"}
	bin := MustBinary(t)
	p := MustStart(t, bin, env, args...)
	alice := p.session(t, "alice")
	conv := p.MustConversation(t, alice)
	var e ask.Event
	for _, ev := range p.MustTurn(t, "/ai/conversations/"+conv+"/messages", alice, map[string]any{"message": "delete the Revenue dashboard"}) {
		if ev.Type == ask.EventToolApprovalRequired {
			e = ev
		}
	}
	if e.Tool == nil || e.Tool.ApprovalID == "" {
		t.Fatal("no approval asked for delete_dashboard")
	}

	go p.post("/ai/conversations/"+conv+"/messages", alice, map[string]any{"message": "how are signups doing?"})
	select {
	case <-hung:
	case <-time.After(time.Minute):
		t.Fatal("the turn never reached the model")
	}
	const n = 20
	var mu sync.Mutex
	var saved []string
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			text := fmt.Sprintf("Note %d", i)
			if status, _, err := p.post("/ai/memory", alice, map[string]string{"text": text}); err == nil && status == http.StatusCreated {
				mu.Lock()
				saved = append(saved, text)
				mu.Unlock()
			}
		})
	}
	// Kill once some adds are answered, while the others are in flight.
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(5 * time.Millisecond) {
		mu.Lock()
		k := len(saved)
		mu.Unlock()
		if k >= 3 || time.Now().After(deadline) {
			break
		}
	}
	p.kill()
	killed := time.Now()
	wg.Wait()

	q := MustStart(t, bin, env, args...)
	alice = q.session(t, "alice")
	var view ask.View
	deadline := time.Now().Add(time.Minute)
	for {
		q.MustDo(t, http.StatusOK, "GET", "/ai/conversations/"+conv, alice, nil, &view)
		if len(view.Turns) != 2 {
			t.Fatalf("turns after the restart: %+v, want 2", view.Turns)
		}
		if view.Turns[1].State != ask.TurnRunning {
			if d := time.Since(killed); d > 30*time.Second {
				t.Errorf("the killed turn showed failed %s after the kill, want within 30 s", d.Round(time.Second))
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the killed turn still shows running a minute after the restart: %+v", view.Turns[1])
		}
		time.Sleep(time.Second) // within the rate limit (2 per second)
	}
	if got := view.Turns[1]; got.State != ask.TurnFailed || got.ErrorCode != "unavailable" {
		t.Errorf("the killed turn after the restart = %+v, want failed (unavailable)", got)
	}
	if st := view.Turns[0].State; st != ask.TurnAwaitingApproval {
		t.Errorf("the turn waiting for approval = %s, want awaiting_approval", st)
	}

	var list struct{ Items []struct{ Text string } }
	q.MustDo(t, http.StatusOK, "GET", "/ai/memory", alice, nil, &list)
	stored := map[string]bool{}
	for _, it := range list.Items {
		if !strings.HasPrefix(it.Text, "Note ") {
			t.Errorf("memory %q after the kill, want one of the notes", it.Text)
		}
		stored[it.Text] = true
	}
	for _, s := range saved {
		if !stored[s] {
			t.Errorf("memory %q was answered 201 before the kill and is gone", s)
		}
	}
	t.Logf("%d of %d adds answered before the kill; %d memories stored", len(saved), n, len(list.Items))

	if len(view.Pending) != 1 || view.Pending[0].ApprovalID != e.Tool.ApprovalID {
		t.Fatalf("pending approvals after the restart = %+v, want the one asked before the kill", view.Pending)
	}
	events := q.MustTurn(t, "/ai/conversations/"+conv+"/approvals/"+e.Tool.ApprovalID+"/approve", alice,
		map[string]any{"tool": "delete_dashboard", "arguments": e.Tool.Arguments})
	if last := events[len(events)-1]; last.Type != ask.EventRequestCompleted {
		t.Errorf("approve after the restart ended with %+v (%+v)", last, last.Error)
	}
	if names := q.MustDashboards(t, alice, "acme"); strings.Contains(strings.Join(names, ","), "Revenue") {
		t.Errorf("dashboards after the approved delete: %v", names)
	}
}
