package mcpsource

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/askbi/askbi"
)

// expiredCtx is a context whose deadline has passed while its timer has
// not fired yet: the moment a transport's own timer, set for the same
// instant, may end a request first.
type expiredCtx struct {
	context.Context
	deadline time.Time
}

func (c expiredCtx) Deadline() (time.Time, bool) { return c.deadline, true }

// TestFailAtTheDeadline: a session failing at its deadline is a timeout
// even when the failure arrives before the context says so, and however
// the MCP client wrapped the transport's error (the go-sdk quotes some as
// text, losing the chain).
func TestFailAtTheDeadline(t *testing.T) {
	se := &Session{probe: &Probe{}, limit: 1 << 20}
	ctx := expiredCtx{Context: context.Background(), deadline: time.Now().Add(-time.Millisecond)}
	err := se.fail(ctx, errors.New(`sending "tools/list": failed to read body: net/http: request canceled`))
	if askbi.ErrorCode(err) != askbi.Timeout {
		t.Errorf("fail at the deadline = %v; want timeout", err)
	}
	// Before the deadline, the same failure is no timeout.
	ctx.deadline = time.Now().Add(time.Hour)
	if err := se.fail(ctx, errors.New("connection reset")); askbi.ErrorCode(err) != askbi.Unavailable {
		t.Errorf("fail before the deadline = %v; want unavailable", err)
	}
}
