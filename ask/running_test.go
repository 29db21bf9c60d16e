package ask_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/askbi/askbi"
	"github.com/askbi/askbi/ask"
	"github.com/askbi/askbi/dataexec"
)

// holdTool is a gated tool whose call runs until release is closed; it
// says on started when it begins.
func holdTool(started chan<- struct{}, release <-chan struct{}) ask.Tool {
	return ask.Tool{Name: "hold_export", Description: "Schedules an export.", Class: dataexec.ClassMutating,
		Label: "Scheduled an export", Title: "Schedule export",
		InputSchema: json.RawMessage(`{"type":"object","properties":{"days":{"type":"integer"}}}`),
		Run: func(ctx context.Context, call ask.Call) (ask.Output, error) {
			started <- struct{}{}
			<-release
			return ask.Output{Summary: "export scheduled", Data: map[string]any{"scheduled": true}}, nil
		}}
}

// proposeHold asks for the hold tool's call and returns its approval.
func proposeHold(t *testing.T, e *env, conv string) *ask.ToolEvent {
	t.Helper()
	ev := find(e.MustSend(t, alice, conv, `use the hold_export tool with {"days": 7}`, nil), ask.EventToolApprovalRequired)
	if ev == nil {
		t.Fatal("the hold tool's call was not proposed")
	}
	return ev.Tool
}

// runOf is where the run of an approval stands in the view, with the
// view's turn state of that run and whether the approval is decided.
func runOf(t *testing.T, v *ask.View, approvalID string) (ask.ToolRun, ask.TurnState, bool) {
	t.Helper()
	for _, r := range v.WorkSummary {
		if r.ApprovalID != approvalID {
			continue
		}
		var turn ask.TurnState
		for _, tu := range v.Turns {
			if tu.ID == r.TurnID {
				turn = tu.State
			}
		}
		decided := false
		for _, d := range v.Decided {
			decided = decided || d.ApprovalID == approvalID
		}
		return r, turn, decided
	}
	t.Fatalf("no run of approval %s in the work summary", approvalID)
	return ask.ToolRun{}, "", false
}

// TestRunningReceiptInView: a conversation opened while an approved call
// runs shows the call running (its approval decided, with the card's
// content, not pending) and its turn running, so a client keeps the
// approve controls hidden and polls; once the call finished, the view
// shows its outcome and the turn's end.
func TestRunningReceiptInView(t *testing.T) {
	started, release := make(chan struct{}, 1), make(chan struct{})
	e := newEnv(t, nil, func(c *envConfig) { c.extra = append(c.extra, holdTool(started, release)) })
	conv := e.MustConversation(t, alice)
	te := proposeHold(t, e, conv)
	done := make(chan error, 1)
	go func() {
		_, err := approve(e, alice, conv, te, string(te.Arguments))
		done <- err
	}()
	<-started

	v := e.MustOpen(t, alice, conv)
	run, turn, decided := runOf(t, v, te.ApprovalID)
	if run.State != ask.RunRunning || turn != ask.TurnRunning || !decided || len(v.Pending) != 0 {
		t.Errorf("while the call runs: run %s, turn %s, decided %v, pending %d; want running, running, true, 0", run.State, turn, decided, len(v.Pending))
	}

	close(release)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	run, turn, _ = runOf(t, e.MustOpen(t, alice, conv), te.ApprovalID)
	if run.State != ask.RunCompleted || turn != ask.TurnCompleted {
		t.Errorf("after the call: run %s, turn %s; want completed, completed", run.State, turn)
	}
}

// TestDecidedRunNotYetRecorded: between using or rejecting an approval
// and recording its run, the run is still stored as waiting. A view
// opened then (a page polling a running call) must not say that the
// approval expired: a used one is running, and a rejected one rejected.
// A used approval whose run never got recorded, long after it could
// still start, failed.
func TestDecidedRunNotYetRecorded(t *testing.T) {
	started, release := make(chan struct{}, 1), make(chan struct{})
	defer close(release)
	e := newEnv(t, nil, func(c *envConfig) { c.extra = append(c.extra, holdTool(started, release)) })
	ctx := context.Background()
	conv := e.MustConversation(t, alice)
	used, rejected := proposeHold(t, e, conv), proposeHold(t, e, conv)
	for _, d := range []struct {
		te  *ask.ToolEvent
		use func(context.Context, string, ask.Binding, time.Time) (ask.Approval, error)
	}{{used, e.approvals.Consume}, {rejected, e.approvals.Reject}} {
		ap, err := e.approvals.Approval(ctx, d.te.ApprovalID)
		if err != nil {
			t.Fatal(err)
		}
		b := ask.Binding{UserID: ap.UserID, TeamID: ap.TeamID, ConversationID: ap.ConversationID, Tool: ap.Tool, Target: ap.Target, ArgsHash: ap.ArgsHash}
		if _, err := d.use(ctx, ap.ID, b, e.clock.Now()); err != nil {
			t.Fatal(err)
		}
	}
	states := func() map[string]ask.RunState {
		v := e.MustOpen(t, alice, conv)
		out := map[string]ask.RunState{}
		for _, id := range []string{used.ApprovalID, rejected.ApprovalID} {
			r, _, _ := runOf(t, v, id)
			out[id] = r.State
		}
		return out
	}
	want := map[string]ask.RunState{used.ApprovalID: ask.RunRunning, rejected.ApprovalID: ask.RunRejected}
	if diff := cmp.Diff(want, states()); diff != "" {
		t.Errorf("just decided (-want +got):\n%s", diff)
	}
	e.clock.Advance(6 * time.Minute) // past the expiry and the 30 s a concurrent approve waits
	want[used.ApprovalID] = ask.RunFailed
	if diff := cmp.Diff(want, states()); diff != "" {
		t.Errorf("long after (-want +got):\n%s", diff)
	}
	r, _, _ := runOf(t, e.MustOpen(t, alice, conv), used.ApprovalID)
	if r.ErrorCode != string(askbi.Unavailable) || r.ErrorMessage == "" {
		t.Errorf("lost run: error %q %q, want unavailable with a message", r.ErrorCode, r.ErrorMessage)
	}
}

// TestApprovedCallKeepsLease: an approved call runs on after its request
// is gone (the user reloaded the page), and its turn keeps its lease
// meanwhile, so a page polling the conversation sees it running, not
// abandoned and failed, until it ends.
func TestApprovedCallKeepsLease(t *testing.T) {
	const lease = 300 * time.Millisecond
	started, release := make(chan struct{}, 1), make(chan struct{})
	e := newEnv(t, nil, func(c *envConfig) {
		c.opts.TurnLease = lease
		c.extra = append(c.extra, holdTool(started, release))
	})
	conv := e.MustConversation(t, alice)
	te := proposeHold(t, e, conv)
	ctx, leave := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		emit, _ := ask.Collect()
		done <- e.a.Approve(ctx, alice, ask.ApproveRequest{ConversationID: conv, ApprovalID: te.ApprovalID, Tool: te.Name, Arguments: te.Arguments}, emit)
	}()
	<-started
	leave() // the page reloads while the call runs

	// Ten leases pass on the clock while the call runs; the turn renews
	// its lease (every third of it, on the wall clock) meanwhile.
	for range 10 {
		e.clock.Advance(lease)
		deadline := time.Now().Add(5 * time.Second)
		for {
			turns, err := e.convs.Turns(context.Background(), conv)
			if err == nil && len(turns) == 1 && turns[0].State == ask.TurnRunning && !e.clock.Now().After(turns[0].UpdatedAt.Add(lease)) {
				break
			}
			if time.Now().After(deadline) {
				t.Fatal("the turn of the approved call did not renew its lease once its request was gone")
			}
			time.Sleep(10 * time.Millisecond)
		}
		if run, turn, _ := runOf(t, e.MustOpen(t, alice, conv), te.ApprovalID); run.State != ask.RunRunning || turn != ask.TurnRunning {
			t.Fatalf("while the call runs: run %s, turn %s; want running, running", run.State, turn)
		}
	}
	close(release)
	<-done
	if run, _, _ := runOf(t, e.MustOpen(t, alice, conv), te.ApprovalID); run.State != ask.RunCompleted {
		t.Errorf("after the call: run %s, want completed", run.State)
	}
}
