package ask_test

import (
	"context"
	"strings"
	"testing"

	"github.com/askbi/askbi"
	"github.com/askbi/askbi/access"
	"github.com/askbi/askbi/ask"
	"github.com/askbi/askbi/ask/provider/mock"
)

// TestTurnsInFlightBounded: a user runs at most MaxTurnsPerUser turns at
// once and a team MaxTurnsPerTeam; one more is refused rate_limited with
// a retry hint before anything is saved, and a turn that ends frees its
// slot.
func TestTurnsInFlightBounded(t *testing.T) {
	m := &slowModel{arrived: make(chan struct{}, 8), release: make(chan struct{})}
	e := newEnv(t, m, func(c *envConfig) { c.opts.MaxTurnsPerUser, c.opts.MaxTurnsPerTeam = 2, 3 })
	done := make(chan error, 8)
	start := func(p access.Principal) {
		conv := e.MustConversation(t, p)
		go func() { _, err := e.send(p, conv, "how are signups doing?", nil); done <- err }()
		<-m.arrived
	}
	refused := func(p access.Principal, why string) {
		t.Helper()
		conv := e.MustConversation(t, p)
		_, err := e.send(p, conv, "and now?", nil)
		mustCode(t, err, askbi.RateLimited)
		if s, ok := askbi.RetryAfter(err); !ok || s < 1 {
			t.Errorf("%s: refusal %v has no retry hint", why, err)
		}
		if entries, _ := e.convs.Entries(context.Background(), conv, 10); len(entries) != 0 {
			t.Errorf("%s: the refused message was saved: %+v", why, entries)
		}
	}
	start(alice)
	start(alice)
	refused(alice, "alice's third turn")
	start(bob) // the team's third
	refused(vic, "the team's fourth turn")
	start(carol) // another team's: its own bound
	close(m.release)
	for range 4 {
		if err := <-done; err != nil {
			t.Fatalf("a running turn failed: %v", err)
		}
	}
	// Slots are freed: alice may ask again.
	e.MustSend(t, alice, e.MustConversation(t, alice), "and now?", nil)
}

// gated answers a message with "wait" in it only once release is closed
// (the turn's first model call: the mock may call tools after it), and
// any other with the mock.
type gated struct {
	mock    ask.Provider
	arrived chan struct{}
	release chan struct{}
}

func (g *gated) Complete(ctx context.Context, req ask.ModelRequest, onText func(string)) (ask.ModelReply, error) {
	if strings.Contains(lastUser(req), "wait") && req.Messages[len(req.Messages)-1].Role == ask.RoleUser {
		g.arrived <- struct{}{}
		select {
		case <-g.release:
		case <-ctx.Done():
			return ask.ModelReply{}, askbi.Errorf(askbi.Unavailable, "the request was cancelled")
		}
	}
	return g.mock.Complete(ctx, req, onText)
}

// TestApproveAtTurnBound: an approve refused at the turn bound, or a
// reject, uses nothing: the approval stays pending, and once a slot is
// free the same approve runs the call.
func TestApproveAtTurnBound(t *testing.T) {
	g := &gated{mock: mock.New(), arrived: make(chan struct{}, 1), release: make(chan struct{})}
	e := newEnv(t, g, func(c *envConfig) { c.opts.MaxTurnsPerUser = 1 })
	conv, te := proposeDelete(t, e, alice)
	other := e.MustConversation(t, alice)
	done := make(chan error, 1)
	go func() { _, err := e.send(alice, other, "wait for it", nil); done <- err }()
	<-g.arrived
	_, err := approve(e, alice, conv, te, string(te.Arguments))
	mustCode(t, err, askbi.RateLimited)
	emit, _ := ask.Collect()
	err = e.a.Reject(context.Background(), alice, ask.ApproveRequest{ConversationID: conv, ApprovalID: te.ApprovalID, Tool: te.Name, Arguments: te.Arguments}, emit)
	mustCode(t, err, askbi.RateLimited)
	checkNotBurnt(t, e, conv, te)
	if ap, _ := e.approvals.Approval(context.Background(), te.ApprovalID); ap.State != ask.ApprovalPending {
		t.Fatalf("approval %s after the refusals; want pending", ap.State)
	}
	close(g.release)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if _, err := approve(e, alice, conv, te, string(te.Arguments)); err != nil {
		t.Fatalf("approve once a slot is free: %v", err)
	}
	if _, err := e.cat.Dashboard(context.Background(), "d-revenue"); err == nil {
		t.Error("the approved delete did not run")
	}
}

// TestRetryAtTurnBound: a retry of an approval already used takes no
// turn slot (it runs nothing: it reads the receipt), so it answers even
// while the user is at the bound.
func TestRetryAtTurnBound(t *testing.T) {
	g := &gated{mock: mock.New(), arrived: make(chan struct{}, 1), release: make(chan struct{})}
	e := newEnv(t, g, func(c *envConfig) { c.opts.MaxTurnsPerUser = 1 })
	conv, te := proposeDelete(t, e, alice)
	if _, err := approve(e, alice, conv, te, string(te.Arguments)); err != nil {
		t.Fatal(err)
	}
	other := e.MustConversation(t, alice)
	done := make(chan error, 1)
	go func() { _, err := e.send(alice, other, "wait for it", nil); done <- err }()
	<-g.arrived
	events, err := approve(e, alice, conv, te, string(te.Arguments))
	if err != nil || find(events, ask.EventToolCompleted) == nil {
		t.Errorf("a retry at the bound: %v, %v; want the receipt", err, types(events))
	}
	close(g.release)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}
