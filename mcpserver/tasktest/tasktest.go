// Package tasktest holds the conformance suite of [mcpserver.TaskStore].
// A host runs it against its own adapter:
//
//	func TestTaskStore(t *testing.T) {
//		tasktest.RunStore(t, func(t *testing.T) mcpserver.TaskStore { return newStore(t) })
//	}
package tasktest

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/askbi/askbi"
	"github.com/askbi/askbi/mcpserver"
)

// RunStore proves that the stores made by newStore behave as
// [mcpserver.TaskStore] documents. Each subtest gets a fresh, empty store
// that keeps at least 64 tasks.
func RunStore(t *testing.T, newStore func(t *testing.T) mcpserver.TaskStore) {
	ctx := context.Background()
	t0 := time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)
	opts := cmp.Options{cmpopts.EquateEmpty(), cmp.Comparer(func(a, b time.Time) bool { return a.Equal(b) })}
	code := askbi.ErrorCode
	task := func(id, owner string) mcpserver.Task {
		return mcpserver.Task{ID: id, Owner: owner, Tool: "run_dataset", Status: mcpserver.TaskWorking, Message: "running",
			CreatedAt: t0, UpdatedAt: t0, ExpiresAt: t0.Add(time.Hour), Heartbeat: t0}
	}
	result := json.RawMessage(`{"content":[{"type":"text","text":"3 rows"}],"structuredContent":{"row_count":3}}`)

	t.Run("CreateGet", func(t *testing.T) {
		s := newStore(t)
		// An owner as mcpserver writes one: a JSON array of IDs, which
		// may hold any text.
		owner := `["acme","al\"ice ü","api_key","key:1"]`
		want := task("t1", owner)
		if err := s.Create(ctx, want, 4); err != nil {
			t.Fatal(err)
		}
		got, err := s.Get(ctx, "t1", owner, t0)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(want, got, opts); diff != "" {
			t.Errorf("Get mismatch (-want +got):\n%s", diff)
		}
		if err := s.Create(ctx, task("t1", "acme/alice/key1"), 4); code(err) != askbi.Conflict {
			t.Errorf("Create(duplicate) = %v, want conflict", err)
		}
	})

	t.Run("OwnerOnly", func(t *testing.T) {
		s := newStore(t)
		if err := s.Create(ctx, task("t1", "acme/alice/key1"), 4); err != nil {
			t.Fatal(err)
		}
		for _, c := range []struct{ id, owner string }{{"t1", "acme/alice/key2"}, {"t1", "acme/bob/key3"}, {"t1", ""}, {"nope", "acme/alice/key1"}} {
			if _, err := s.Get(ctx, c.id, c.owner, t0); code(err) != askbi.NotFound {
				t.Errorf("Get(%s, %q) = %v, want not_found", c.id, c.owner, err)
			}
			if err := s.Cancel(ctx, c.id, c.owner, t0); code(err) != askbi.NotFound {
				t.Errorf("Cancel(%s, %q) = %v, want not_found", c.id, c.owner, err)
			}
		}
		if got, _ := s.Get(ctx, "t1", "acme/alice/key1", t0); got.Status != mcpserver.TaskWorking {
			t.Errorf("after others' cancels the task is %s", got.Status)
		}
	})

	t.Run("Expiry", func(t *testing.T) {
		s := newStore(t)
		if err := s.Create(ctx, task("t1", "o"), 4); err != nil {
			t.Fatal(err)
		}
		end := t0.Add(time.Hour)
		if _, err := s.Get(ctx, "t1", "o", end.Add(-time.Microsecond)); err != nil {
			t.Errorf("Get before ExpiresAt = %v", err)
		}
		if _, err := s.Get(ctx, "t1", "o", end); code(err) != askbi.NotFound {
			t.Errorf("Get at ExpiresAt = %v, want not_found", err)
		}
		if err := s.Cancel(ctx, "t1", "o", end); code(err) != askbi.NotFound {
			t.Errorf("Cancel at ExpiresAt = %v, want not_found", err)
		}
		if _, err := s.Beat(ctx, "t1", end); code(err) != askbi.NotFound {
			t.Errorf("Beat at ExpiresAt = %v, want not_found", err)
		}
	})

	t.Run("PerOwner", func(t *testing.T) {
		s := newStore(t)
		for i := range 2 {
			if err := s.Create(ctx, task(fmt.Sprint("a", i), "alice"), 2); err != nil {
				t.Fatal(err)
			}
		}
		if err := s.Create(ctx, task("a2", "alice"), 2); code(err) != askbi.RateLimited {
			t.Errorf("Create past the owner's bound = %v, want rate_limited", err)
		}
		if _, err := s.Get(ctx, "a2", "alice", t0); code(err) != askbi.NotFound {
			t.Errorf("a refused task was stored: %v", err)
		}
		if err := s.Create(ctx, task("b0", "bob"), 2); err != nil {
			t.Errorf("another owner's task = %v", err)
		}
		// Finished tasks count until they expire; expired ones do not.
		f := task("a0", "alice")
		f.Status, f.Result, f.UpdatedAt = mcpserver.TaskCompleted, result, t0
		if err := s.Finish(ctx, f); err != nil {
			t.Fatal(err)
		}
		if err := s.Create(ctx, task("a3", "alice"), 2); code(err) != askbi.RateLimited {
			t.Errorf("Create with a finished task kept = %v, want rate_limited", err)
		}
		later := task("a4", "alice")
		later.CreatedAt, later.ExpiresAt = t0.Add(time.Hour), t0.Add(2*time.Hour)
		if err := s.Create(ctx, later, 2); err != nil {
			t.Errorf("Create once the owner's tasks expired = %v", err)
		}
	})

	t.Run("PerOwnerConcurrent", func(t *testing.T) {
		s := newStore(t)
		var ok atomic.Int32
		var wg sync.WaitGroup
		for i := range 12 {
			wg.Go(func() {
				err := s.Create(ctx, task(fmt.Sprint("c", i), "alice"), 3)
				switch {
				case err == nil:
					ok.Add(1)
				case code(err) != askbi.RateLimited:
					t.Errorf("Create: %v", err)
				}
			})
		}
		wg.Wait()
		if n := ok.Load(); n != 3 {
			t.Errorf("%d of 12 concurrent creates succeeded with a bound of 3", n)
		}
	})

	t.Run("Finish", func(t *testing.T) {
		s := newStore(t)
		for _, id := range []string{"ok", "bad"} {
			if err := s.Create(ctx, task(id, "o"), 4); err != nil {
				t.Fatal(err)
			}
		}
		done := task("ok", "o")
		done.Status, done.Message, done.Result, done.UpdatedAt = mcpserver.TaskCompleted, "done", result, t0.Add(time.Minute)
		if err := s.Finish(ctx, done); err != nil {
			t.Fatal(err)
		}
		if got, _ := s.Get(ctx, "ok", "o", t0); cmp.Diff(done, got, opts) != "" {
			t.Errorf("after Finish (-want +got):\n%s", cmp.Diff(done, got, opts))
		}
		failed := task("bad", "o")
		failed.Status, failed.Error, failed.UpdatedAt = mcpserver.TaskFailed, json.RawMessage(`{"code":-32603,"message":"internal error"}`), t0
		if err := s.Finish(ctx, failed); err != nil {
			t.Fatal(err)
		}
		if got, _ := s.Get(ctx, "bad", "o", t0); got.Status != mcpserver.TaskFailed || string(got.Error) != string(failed.Error) || got.Result != nil {
			t.Errorf("after a failed Finish: %+v", got)
		}
		again := done
		again.Result = json.RawMessage(`{"other":true}`)
		if err := s.Finish(ctx, again); code(err) != askbi.Conflict {
			t.Errorf("Finish twice = %v, want conflict", err)
		}
		if got, _ := s.Get(ctx, "ok", "o", t0); string(got.Result) != string(result) {
			t.Errorf("a second Finish changed the result to %s", got.Result)
		}
		if err := s.Finish(ctx, task("nope", "o")); code(err) == "" {
			t.Error("Finish(unknown) succeeded")
		}
		gone := task("nope", "o")
		gone.Status = mcpserver.TaskCompleted
		if err := s.Finish(ctx, gone); code(err) != askbi.NotFound {
			t.Errorf("Finish(unknown) = %v, want not_found", err)
		}
	})

	t.Run("Cancel", func(t *testing.T) {
		s := newStore(t)
		for _, id := range []string{"run", "done"} {
			if err := s.Create(ctx, task(id, "o"), 4); err != nil {
				t.Fatal(err)
			}
		}
		at := t0.Add(time.Minute)
		if err := s.Cancel(ctx, "run", "o", at); err != nil {
			t.Fatal(err)
		}
		got, _ := s.Get(ctx, "run", "o", at)
		if got.Status != mcpserver.TaskCancelled || !got.UpdatedAt.Equal(at) {
			t.Errorf("after Cancel: %+v", got)
		}
		if st, err := s.Beat(ctx, "run", at); err != nil || st != mcpserver.TaskCancelled {
			t.Errorf("Beat of a cancelled task = %s, %v; want cancelled", st, err)
		}
		f := task("run", "o")
		f.Status, f.Result, f.UpdatedAt = mcpserver.TaskCompleted, result, at
		if err := s.Finish(ctx, f); code(err) != askbi.Conflict {
			t.Errorf("Finish after Cancel = %v, want conflict", err)
		}
		if got, _ := s.Get(ctx, "run", "o", at); got.Status != mcpserver.TaskCancelled || got.Result != nil {
			t.Errorf("a cancelled task after a late Finish: %+v", got)
		}
		f.ID = "done"
		if err := s.Finish(ctx, f); err != nil {
			t.Fatal(err)
		}
		if err := s.Cancel(ctx, "done", "o", at); err != nil {
			t.Errorf("Cancel of a completed task = %v, want nil", err)
		}
		if got, _ := s.Get(ctx, "done", "o", at); got.Status != mcpserver.TaskCompleted {
			t.Errorf("Cancel changed a completed task to %s", got.Status)
		}
	})

	t.Run("FinishOrCancel", func(t *testing.T) {
		s := newStore(t)
		for i := range 20 {
			id := fmt.Sprint("r", i)
			if err := s.Create(ctx, task(id, "o"+id), 4); err != nil {
				t.Fatal(err)
			}
			var fin, can error
			var wg sync.WaitGroup
			wg.Go(func() {
				f := task(id, "o"+id)
				f.Status, f.Result, f.UpdatedAt = mcpserver.TaskCompleted, result, t0
				fin = s.Finish(ctx, f)
			})
			wg.Go(func() { can = s.Cancel(ctx, id, "o"+id, t0) })
			wg.Wait()
			got, err := s.Get(ctx, id, "o"+id, t0)
			switch {
			case err != nil || can != nil:
				t.Fatalf("Get %v, Cancel %v", err, can)
			case fin == nil && (got.Status != mcpserver.TaskCompleted || string(got.Result) != string(result)):
				t.Errorf("Finish won, the task is %+v", got)
			case code(fin) == askbi.Conflict && (got.Status != mcpserver.TaskCancelled || got.Result != nil):
				t.Errorf("Cancel won, the task is %+v", got)
			case fin != nil && code(fin) != askbi.Conflict:
				t.Errorf("Finish: %v", fin)
			}
		}
	})

	t.Run("Beat", func(t *testing.T) {
		s := newStore(t)
		if err := s.Create(ctx, task("t1", "o"), 4); err != nil {
			t.Fatal(err)
		}
		at := t0.Add(30 * time.Second)
		if st, err := s.Beat(ctx, "t1", at); err != nil || st != mcpserver.TaskWorking {
			t.Errorf("Beat = %s, %v", st, err)
		}
		if got, _ := s.Get(ctx, "t1", "o", at); !got.Heartbeat.Equal(at) {
			t.Errorf("heartbeat %v, want %v", got.Heartbeat, at)
		}
		if _, err := s.Beat(ctx, "nope", at); code(err) != askbi.NotFound {
			t.Errorf("Beat(unknown) = %v, want not_found", err)
		}
	})

	t.Run("Purge", func(t *testing.T) {
		s := newStore(t)
		old, fresh := task("old", "o"), task("fresh", "o")
		old.ExpiresAt = t0.Add(time.Minute)
		for _, tk := range []mcpserver.Task{old, fresh} {
			if err := s.Create(ctx, tk, 4); err != nil {
				t.Fatal(err)
			}
		}
		if n, err := s.Purge(ctx, t0.Add(time.Minute)); err != nil || n != 1 {
			t.Errorf("Purge = %d, %v; want 1", n, err)
		}
		if _, err := s.Get(ctx, "fresh", "o", t0); err != nil {
			t.Errorf("Purge deleted a fresh task: %v", err)
		}
		if n, _ := s.Purge(ctx, t0.Add(time.Minute)); n != 0 {
			t.Errorf("a second Purge deleted %d", n)
		}
	})
}
