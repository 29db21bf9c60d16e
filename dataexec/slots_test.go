package dataexec_test

import (
	"context"
	"sync"
	"testing"

	"github.com/askbi/askbi"
	"github.com/askbi/askbi/access"
	"github.com/askbi/askbi/dataexec"
	"github.com/askbi/askbi/workspace"
)

// TestConcurrencyBounds: past the bound of the principal, its team or the
// source, a call is refused at once with rate_limited and a retry hint,
// runs nothing and waits for nothing; a cached result still answers, and
// a finished call frees its slot.
func TestConcurrencyBounds(t *testing.T) {
	e := newEnv(t, &dataexec.Options{Concurrency: dataexec.ConcurrencyOptions{MaxPerPrincipal: 2, MaxPerTeam: 3, MaxPerSource: 4}})
	started, release := make(chan struct{}, 16), make(chan struct{})
	ctx := context.Background()
	alice, bob, vic, carol := session("alice", "acme"), session("bob", "acme"), session("vic", "acme"), session("carol", "globex")
	plan := func(v string) dataexec.Params { return dataexec.Params{Variables: map[string]any{"plan": v}} }

	mustRun(t, e, alice, "signups", plan("cached"))
	e.src.Respond(func(ctx context.Context, q dataexec.Query) (*dataexec.Table, error) {
		started <- struct{}{}
		select {
		case <-release:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		return signupsTable(), nil
	})

	var wg sync.WaitGroup
	errs := make(chan error, 16)
	params := func(id, v string) dataexec.Params {
		if id == "tickets" { // no variables: a filter tells the calls apart
			return dataexec.Params{Filters: []workspace.Filter{{Field: "day", Op: workspace.OpNe, Value: v}}}
		}
		return plan(v)
	}
	hold := func(p access.Principal, id, v string) {
		t.Helper()
		wg.Add(1)
		done := make(chan error, 1)
		go func() {
			defer wg.Done()
			_, err := e.exec.RunDataset(ctx, p, id, params(id, v))
			done <- err
			errs <- err
		}()
		select {
		case <-started:
		case err := <-done:
			t.Fatalf("RunDataset(%s) ended before reaching the source: %v", id, err)
		}
	}
	refused := func(name string, p access.Principal, id string) {
		t.Helper()
		calls := e.src.Calls()
		_, err := e.exec.RunDataset(ctx, p, id, params(id, "refused-"+name))
		mustCode(t, err, askbi.RateLimited)
		if s, ok := askbi.RetryAfter(err); !ok || s != 1 {
			t.Errorf("%s: RetryAfter = %d, %v; want 1 s", name, s, ok)
		}
		if got := e.src.Calls(); got != calls {
			t.Errorf("%s: the refused call ran on the source (%d calls, want %d)", name, got, calls)
		}
	}

	hold(alice, "signups", "a1")
	hold(alice, "signups", "a2")
	refused("third of alice", alice, "signups")
	if res, err := e.exec.RunDataset(ctx, alice, "signups", plan("cached")); err != nil || !res.Cached {
		t.Errorf("a cached result at alice's bound = %v, %v; want it served from the cache", res, err)
	}
	hold(bob, "signups", "b1")
	refused("fourth of acme", vic, "signups")
	hold(carol, "tickets", "c1")
	refused("fifth on the source", carol, "tickets")

	close(release)
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Errorf("a call within the bounds failed: %v", err)
		}
	}
	e.src.Respond(nil)
	for _, v := range []string{"after1", "after2"} {
		mustRun(t, e, alice, "signups", plan(v))
	}
}
