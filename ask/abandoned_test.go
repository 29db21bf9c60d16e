package ask_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/askbi/askbi"
	"github.com/askbi/askbi/ask"
)

// TestOpenFailsAbandonedTurn: a turn left running by a process that died
// shows as running while its lease (Options.TurnLease) lasts, and as
// failed (unavailable), with its running tool call, once it has run out;
// finished turns stay as they were.
func TestOpenFailsAbandonedTurn(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t, nil, func(c *envConfig) { c.opts.TurnLease = 15 * time.Second })
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
	e.clock.Advance(15 * time.Second) // the lease: it may still be alive
	turns, run := turnStates(t, e, conv)
	if diff := cmp.Diff([]string{"completed ", "running "}, turns); diff != "" || run != ask.RunRunning {
		t.Errorf("at the end of the lease: turns mismatch (-want +got):\n%s\nrun %s", diff, run)
	}
	e.clock.Advance(time.Second)
	turns, run = turnStates(t, e, conv)
	if diff := cmp.Diff([]string{"completed ", "failed unavailable"}, turns); diff != "" || run != ask.RunFailed {
		t.Errorf("past the lease: turns mismatch (-want +got):\n%s\nrun %s", diff, run)
	}
	if got, err := e.convs.Turn(ctx, conv, "turn_dead"); err != nil || got.State != ask.TurnFailed {
		t.Errorf("stored turn = %+v, %v; want it recorded failed", got, err)
	}
}

// turnStates opens conv and returns each turn's state and error code, and
// the state of the tool run call_dead.
func turnStates(t *testing.T, e *env, conv string) (turns []string, dead ask.RunState) {
	t.Helper()
	v, err := e.a.Open(context.Background(), alice, conv)
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

// slowModel answers once release is closed (or its request ends), and
// says when a request arrived.
type slowModel struct {
	arrived chan struct{}
	release chan struct{}
}

func (m *slowModel) Complete(ctx context.Context, _ ask.ModelRequest, _ func(string)) (ask.ModelReply, error) {
	m.arrived <- struct{}{}
	select {
	case <-m.release:
		return ask.ModelReply{Text: "Done."}, nil
	case <-ctx.Done():
		return ask.ModelReply{}, askbi.Errorf(askbi.Unavailable, "the request was cancelled")
	}
}

// TestTurnLease: a turn that runs longer than its lease keeps renewing it,
// so no other opener records it abandoned; once another instance has
// recorded it failed anyway (its lease could not be renewed in time), the
// turn stops instead of running on.
func TestTurnLease(t *testing.T) {
	const lease = 300 * time.Millisecond
	start := func(t *testing.T) (*env, *slowModel, string, chan error) {
		m := &slowModel{arrived: make(chan struct{}, 1), release: make(chan struct{})}
		e := newEnv(t, m, func(c *envConfig) { c.opts.TurnLease = lease })
		conv := e.MustConversation(t, alice)
		done := make(chan error, 1)
		go func() { _, err := e.send(alice, conv, "how are signups doing?", nil); done <- err }()
		<-m.arrived
		return e, m, conv, done
	}
	running := func(e *env, conv string) (ask.Turn, bool) {
		turns, err := e.convs.Turns(context.Background(), conv)
		if err != nil || len(turns) != 1 {
			return ask.Turn{}, false
		}
		return turns[0], true
	}

	t.Run("renewed", func(t *testing.T) {
		e, m, conv, done := start(t)
		// Ten leases pass on the clock while the model thinks; the turn
		// renews its lease (every third of it, on the wall clock) meanwhile.
		for range 10 {
			e.clock.Advance(lease)
			deadline := time.Now().Add(5 * time.Second)
			for {
				if tn, ok := running(e, conv); ok && !e.clock.Now().After(tn.UpdatedAt.Add(lease)) {
					break
				}
				if time.Now().After(deadline) {
					t.Fatal("the running turn did not renew its lease")
				}
				time.Sleep(10 * time.Millisecond)
			}
			if turns, _ := turnStates(t, e, conv); !cmp.Equal(turns, []string{"running "}) {
				t.Fatalf("a live turn, its lease renewed, shows %v; want running", turns)
			}
		}
		close(m.release)
		if err := <-done; err != nil {
			t.Fatalf("the turn ended with %v", err)
		}
		if turns, _ := turnStates(t, e, conv); !cmp.Equal(turns, []string{"completed "}) {
			t.Errorf("turns after it finished: %v", turns)
		}
	})
	t.Run("lost", func(t *testing.T) {
		e, _, conv, done := start(t)
		tn, _ := running(e, conv)
		tn.State, tn.ErrorCode = ask.TurnFailed, string(askbi.Unavailable)
		if err := e.convs.SaveTurn(context.Background(), tn); err != nil { // another instance found it expired
			t.Fatal(err)
		}
		select {
		case err := <-done:
			if err == nil || errors.Is(err, context.DeadlineExceeded) {
				t.Errorf("the turn whose lease was lost ended with %v; want it stopped", err)
			}
		case <-time.After(10 * time.Second):
			t.Fatal("the turn whose lease was lost is still running")
		}
	})
}
