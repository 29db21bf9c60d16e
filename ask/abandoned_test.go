package ask_test

import (
	"context"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/askbi/askbi/ask"
)

// TestOpenFailsAbandonedTurn: a turn left running by a process that died
// shows as running while it may still be live, and as failed
// (unavailable), with its running tool call, once twice its deadline has
// passed; finished turns stay as they were.
func TestOpenFailsAbandonedTurn(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t, nil, func(c *envConfig) { c.opts.TurnTimeout = time.Minute })
	conv := e.MustConversation(t, alice)
	e.MustSend(t, alice, conv, "show signups by week", nil)
	// What a process killed mid-turn leaves behind.
	start := e.clock.Now().UTC()
	if err := e.convs.SaveTurn(ctx, ask.Turn{ID: "turn_dead", ConversationID: conv, State: ask.TurnRunning, CreatedAt: start, UpdatedAt: start}); err != nil {
		t.Fatal(err)
	}
	if err := e.convs.SaveToolRun(ctx, ask.ToolRun{CallID: "call_dead", ConversationID: conv, TurnID: "turn_dead", Tool: "run_dataset",
		Label: "Previewed data", State: ask.RunRunning, CreatedAt: start, UpdatedAt: start}); err != nil {
		t.Fatal(err)
	}
	states := func() (turns []string, dead ask.RunState) {
		t.Helper()
		v, err := e.a.Open(ctx, alice, conv)
		if err != nil {
			t.Fatal(err)
		}
		for _, tn := range v.Turns {
			turns = append(turns, string(tn.State)+" "+tn.ErrorCode)
		}
		for _, r := range v.WorkSummary {
			if r.CallID == "call_dead" {
				dead = r.State
			}
		}
		return turns, dead
	}
	e.clock.Advance(2 * time.Minute) // twice the deadline: it may still be finishing
	turns, run := states()
	if diff := cmp.Diff([]string{"completed ", "running "}, turns); diff != "" || run != ask.RunRunning {
		t.Errorf("at twice the deadline: turns mismatch (-want +got):\n%s\nrun %s", diff, run)
	}
	e.clock.Advance(time.Second)
	turns, run = states()
	if diff := cmp.Diff([]string{"completed ", "failed unavailable"}, turns); diff != "" || run != ask.RunFailed {
		t.Errorf("past twice the deadline: turns mismatch (-want +got):\n%s\nrun %s", diff, run)
	}
	if got, err := e.convs.Turn(ctx, conv, "turn_dead"); err != nil || got.State != ask.TurnFailed {
		t.Errorf("stored turn = %+v, %v; want it recorded failed", got, err)
	}
}
