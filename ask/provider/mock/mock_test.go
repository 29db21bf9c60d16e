package mock_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/askbi/askbi/ask"
	"github.com/askbi/askbi/ask/provider/mock"
)

// TestDelayStreamsOverTime: with Delay, each piece of the text arrives
// Delay after the one before it, as a model's stream does; without it,
// all at once. A cancelled request ends the stream and the reply.
func TestDelayStreamsOverTime(t *testing.T) {
	const help = "hello" // answered with the help text, several words
	for _, tc := range []struct {
		name     string
		delay    time.Duration
		cancelAt time.Duration // 0: never
		wantErr  error
	}{
		{name: "no delay"},
		{name: "delay", delay: 40 * time.Millisecond},
		{name: "cancelled", delay: 40 * time.Millisecond, cancelAt: 100 * time.Millisecond, wantErr: context.Canceled},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				ctx, cancel := context.WithCancel(t.Context())
				defer cancel()
				if tc.cancelAt > 0 {
					time.AfterFunc(tc.cancelAt, cancel)
				}
				p := &mock.Provider{Delay: tc.delay}
				start := time.Now()
				var got []time.Duration
				reply, err := p.Complete(ctx, ask.ModelRequest{Messages: []ask.Message{{Role: ask.RoleUser, Text: help}}},
					func(string) { got = append(got, time.Since(start)) })
				if !errors.Is(err, tc.wantErr) {
					t.Fatalf("Complete: %v, want %v", err, tc.wantErr)
				}
				n := len(mustWords(t, help))
				if tc.cancelAt > 0 {
					n = int(tc.cancelAt / tc.delay)
				} else if reply.Text == "" {
					t.Fatal("no reply text")
				}
				var want []time.Duration
				for i := range n {
					want = append(want, time.Duration(i+1)*tc.delay)
				}
				if diff := cmp.Diff(want, got); diff != "" {
					t.Errorf("when each piece arrived (-want +got):\n%s", diff)
				}
			})
		})
	}
}

// mustWords is the pieces the reply to question streams in, from a
// provider without delay.
func mustWords(t *testing.T, question string) []string {
	t.Helper()
	var pieces []string
	if _, err := mock.New().Complete(t.Context(), ask.ModelRequest{Messages: []ask.Message{{Role: ask.RoleUser, Text: question}}},
		func(s string) { pieces = append(pieces, s) }); err != nil {
		t.Fatal(err)
	}
	if len(pieces) < 3 {
		t.Fatalf("the reply to %q streams in %d pieces, want several", question, len(pieces))
	}
	return pieces
}

// TestIntroStreamsOnce: the intro leads the first answer, a word at a
// time before the answer's words; an answer after one has none.
func TestIntroStreamsOnce(t *testing.T) {
	p := &mock.Provider{Intro: "I am the demo model."}
	var pieces []string
	reply, err := p.Complete(t.Context(), ask.ModelRequest{Messages: []ask.Message{{Role: ask.RoleUser, Text: "hello"}}},
		func(s string) { pieces = append(pieces, s) })
	if err != nil {
		t.Fatal(err)
	}
	want := append([]string{"I ", "am ", "the ", "demo ", "model.\n\n"}, mustWords(t, "hello")...)
	if diff := cmp.Diff(want, pieces); diff != "" {
		t.Errorf("pieces (-want +got):\n%s", diff)
	}
	if got := strings.Join(pieces, ""); got != reply.Text {
		t.Errorf("the pieces make %q, the reply is %q", got, reply.Text)
	}
	reply, err = p.Complete(t.Context(), ask.ModelRequest{Messages: []ask.Message{{Role: ask.RoleUser, Text: "hello"},
		{Role: ask.RoleAssistant, Text: reply.Text}, {Role: ask.RoleUser, Text: "hello"}}}, nil)
	if err != nil || strings.Contains(reply.Text, "demo model") {
		t.Errorf("second answer %q, %v: want no intro", reply.Text, err)
	}
}
