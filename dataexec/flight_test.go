package dataexec_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/askbi/askbi"
	"github.com/askbi/askbi/dataexec"
)

// TestSingleFlight: identical cold-cache calls share one source query,
// and each gets the whole result; one caller going away does not fail
// the others, and the query is cancelled only once every caller has gone.
func TestSingleFlight(t *testing.T) {
	e := newEnv(t, nil)
	alice, bob := session("alice", "acme"), session("bob", "acme")
	params := dataexec.Params{Variables: map[string]any{"plan": "team"}}
	arrived, release := make(chan struct{}, 16), make(chan struct{})
	cancelled := make(chan struct{}, 1)
	e.src.Respond(func(ctx context.Context, _ dataexec.Query) (*dataexec.Table, error) {
		arrived <- struct{}{}
		select {
		case <-release:
			return signupsTable(), nil
		case <-ctx.Done():
			cancelled <- struct{}{}
			return nil, ctx.Err()
		}
	})

	t.Run("shared", func(t *testing.T) {
		const n = 10
		results := make([]*dataexec.Result, n)
		errs := make([]error, n)
		var wg sync.WaitGroup
		for i := range n {
			who := alice
			if i%2 == 1 {
				who = bob
			}
			wg.Go(func() { results[i], errs[i] = e.exec.RunDataset(context.Background(), who, "signups", params) })
		}
		<-arrived
		// Let every caller reach the executor while the query runs: each
		// would reach the source too, were the query not shared.
		time.Sleep(100 * time.Millisecond)
		close(release)
		wg.Wait()
		if got := e.src.Calls(); got != 1 {
			t.Errorf("%d identical cold calls ran %d queries, want 1", n, got)
		}
		for i := range n {
			if errs[i] != nil {
				t.Fatalf("call %d: %v", i, errs[i])
			}
			if diff := cmp.Diff(results[0].Rows(), results[i].Rows()); diff != "" {
				t.Errorf("call %d rows mismatch (-first +got):\n%s", i, diff)
			}
		}
	})

	t.Run("hang-ups", func(t *testing.T) {
		release = make(chan struct{})
		other := dataexec.Params{Variables: map[string]any{"plan": "pro"}}
		first, leave := context.WithCancel(context.Background())
		done := make(chan error, 2)
		go func() { _, err := e.exec.RunDataset(first, alice, "signups", other); done <- err }()
		<-arrived
		second := make(chan *dataexec.Result, 1)
		go func() {
			res, err := e.exec.RunDataset(context.Background(), bob, "signups", other)
			done <- err
			second <- res
		}()
		// bob joins the running query (no second one), then alice leaves.
		time.Sleep(50 * time.Millisecond)
		leave()
		if err := <-done; askbi.ErrorCode(err) != askbi.Unavailable {
			t.Errorf("the caller who went away = %v, want unavailable (cancelled)", err)
		}
		select {
		case <-cancelled:
			t.Fatal("one caller going away cancelled the query the other waits for")
		case <-time.After(50 * time.Millisecond):
		}
		close(release)
		if err := <-done; err != nil || len((<-second).Rows()) == 0 {
			t.Errorf("the caller who stayed = %v, want the rows", err)
		}

		// Both gone: the query is cancelled.
		release = make(chan struct{})
		ctx, stop := context.WithCancel(context.Background())
		go func() {
			_, err := e.exec.RunDataset(ctx, alice, "signups", dataexec.Params{Variables: map[string]any{"plan": "gone"}})
			done <- err
		}()
		<-arrived
		stop()
		<-done
		select {
		case <-cancelled:
		case <-time.After(5 * time.Second):
			t.Error("the query still runs after every caller went away")
		}
	})
}
