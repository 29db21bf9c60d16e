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
				c := fmt.Sprint(m.Content)
				if _, rest, ok := strings.Cut(c, "</request_context>\n"); ok {
					c = rest // the product's note of the date
				}
				if !strings.HasPrefix(c, "<user_memory") {
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

// TestKillMidTurn runs two instances on one database and kills one (kill
// -9) while a turn of its waits on the model and memories are being
// added. The turn renewed its lease while it ran (ask.Options.TurnLease,
// renewed every third) up to the kill; the surviving instance shows it
// running while the lease lasts and failed (unavailable) from the moment
// the lease has run out since the last renewal: 10 to 15 s after the
// kill, never running forever. Every memory whose add was answered is
// there and readable on the survivor, and the approval the killed
// instance had asked for is still pending there and runs once when
// approved.
func TestKillMidTurn(t *testing.T) {
	const lease = ask.DefaultTurnLease // the reference server's
	modelURL, hung := stubModel(t)
	args := []string{"-database-url", pgtest.MustDatabase(t), "-data-dir", t.TempDir(), "-provider", "openai", "-model", "m",
		"-provider-base-url", modelURL, "-provider-key-env", "ASKBI_TEST_MODEL_KEY"}
	env := []string{"ASKBI_TEST_MODEL_KEY=test"}
	bin := MustBinary(t)
	p := MustStart(t, bin, env, args...)
	q := MustStart(t, bin, env, args...)
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
	// turn reads the waiting turn through the survivor, and when the
	// request was sent and answered.
	turn := func() (tn ask.Turn, sent, answered time.Time) {
		t.Helper()
		var view ask.View
		sent = time.Now()
		q.MustDo(t, http.StatusOK, "GET", "/ai/conversations/"+conv, alice, nil, &view)
		if len(view.Turns) != 2 {
			t.Fatalf("turns on the survivor: %+v, want 2", view.Turns)
		}
		return view.Turns[1], sent, time.Now()
	}
	pollUntil(t, lease, "the running turn renewed its lease", func() bool {
		tn, _, _ := turn()
		if tn.State != ask.TurnRunning {
			t.Fatalf("the live turn shows %+v on the survivor, want running", tn)
		}
		return tn.UpdatedAt.After(tn.CreatedAt)
	})

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

	renewed, _, _ := turn() // its last renewal
	if renewed.State != ask.TurnRunning {
		t.Fatalf("the killed turn shows %+v at once, want running while its lease lasts", renewed)
	}
	if d := killed.Sub(renewed.UpdatedAt); d > lease/3+time.Second {
		t.Errorf("the turn's last renewal was %s before the kill; want at most a third of its lease (%s): renewed until the process died", d.Round(time.Millisecond), lease/3)
	}
	expired := renewed.UpdatedAt.Add(lease)
	var failed ask.Turn
	for failed.State == "" {
		tn, sent, answered := turn()
		switch {
		case tn.State == ask.TurnRunning && sent.After(expired):
			t.Fatalf("the killed turn still shows running %s after its lease ran out", sent.Sub(expired).Round(time.Millisecond))
		case tn.State == ask.TurnRunning:
			time.Sleep(250 * time.Millisecond)
		case answered.Before(expired):
			t.Fatalf("the killed turn shows %+v %s before its lease ran out, want running", tn, expired.Sub(answered).Round(time.Millisecond))
		default:
			failed = tn
			t.Logf("the killed turn showed failed on the survivor %s after the kill", answered.Sub(killed).Round(100*time.Millisecond))
		}
	}
	if failed.State != ask.TurnFailed || failed.ErrorCode != "unavailable" {
		t.Errorf("the killed turn on the survivor = %+v, want failed (unavailable)", failed)
	}
	var view ask.View
	q.MustDo(t, http.StatusOK, "GET", "/ai/conversations/"+conv, alice, nil, &view)
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
		t.Fatalf("pending approvals on the survivor = %+v, want the one asked before the kill", view.Pending)
	}
	events := q.MustTurn(t, "/ai/conversations/"+conv+"/approvals/"+e.Tool.ApprovalID+"/approve", alice,
		map[string]any{"tool": "delete_dashboard", "arguments": e.Tool.Arguments})
	if last := events[len(events)-1]; last.Type != ask.EventRequestCompleted {
		t.Errorf("approve on the survivor ended with %+v (%+v)", last, last.Error)
	}
	if names := q.MustDashboards(t, alice, "acme"); strings.Contains(strings.Join(names, ","), "Revenue") {
		t.Errorf("dashboards after the approved delete: %v", names)
	}
}
