package httpserve_test

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/askbi/askbi/httpserve"
)

// TestRetain: the steps run at once and then every Every, in order; a
// failing step is logged and does not keep the next from running; a step
// that deleted something is logged with how many; Retain returns when
// its context ends.
func TestRetain(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var logs lockedBuffer
		var mu sync.Mutex
		var runs []string
		ran := func(name string) {
			mu.Lock()
			defer mu.Unlock()
			runs = append(runs, name)
		}
		got := func() []string {
			mu.Lock()
			defer mu.Unlock()
			return slices.Clone(runs)
		}
		steps := []httpserve.Purge{
			{Name: "broken", Func: func(context.Context) (int, error) {
				ran("broken")
				return 0, errors.New("database down")
			}},
			{Name: "grants", Func: func(context.Context) (int, error) {
				ran("grants")
				return 3, nil
			}},
			{Name: "idle", Func: func(context.Context) (int, error) {
				ran("idle")
				return 0, nil
			}},
		}
		ctx, cancel := context.WithCancel(t.Context())
		done := make(chan struct{})
		go func() {
			httpserve.Retain(ctx, steps, &httpserve.RetentionOptions{Every: time.Minute,
				Logger: slog.New(slog.NewTextHandler(&logs, nil))})
			close(done)
		}()
		synctest.Wait()
		if diff := cmp.Diff([]string{"broken", "grants", "idle"}, got()); diff != "" {
			t.Errorf("runs at start mismatch (-want +got):\n%s", diff)
		}
		time.Sleep(59 * time.Second)
		synctest.Wait()
		if r := got(); len(r) != 3 {
			t.Errorf("runs before a minute passed: %v", r)
		}
		time.Sleep(time.Second)
		synctest.Wait()
		if diff := cmp.Diff([]string{"broken", "grants", "idle", "broken", "grants", "idle"}, got()); diff != "" {
			t.Errorf("runs after a minute mismatch (-want +got):\n%s", diff)
		}
		var lines []string
		for line := range strings.SplitSeq(strings.TrimSpace(logs.String()), "\n") {
			_, rest, _ := strings.Cut(line, " level=")
			lines = append(lines, rest)
		}
		want := []string{
			`ERROR msg="httpserve: retention" step=broken err="database down"`,
			`INFO msg="httpserve: retention" step=grants deleted=3`,
			`ERROR msg="httpserve: retention" step=broken err="database down"`,
			`INFO msg="httpserve: retention" step=grants deleted=3`,
		}
		if diff := cmp.Diff(want, lines); diff != "" {
			t.Errorf("logs mismatch (-want +got):\n%s", diff)
		}
		cancel()
		synctest.Wait()
		select {
		case <-done:
		default:
			t.Error("Retain still runs after its context ended")
		}
	})
}

// lockedBuffer is a bytes.Buffer safe for a logger writing from another
// goroutine.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}
