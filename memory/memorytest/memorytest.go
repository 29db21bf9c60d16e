// Package memorytest holds the conformance suite for [memory.Store]. A host
// runs it against its own adapter:
//
//	func TestStore(t *testing.T) {
//		memorytest.Run(t, func(t *testing.T) memory.Store { return newStore(t) })
//	}
package memorytest

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/askbi/askbi"
	"github.com/askbi/askbi/memory"
)

// Run proves that the stores made by newStore behave as [memory.Store]
// documents: scoping by owner, ordering, Conflict and NotFound, and the
// limits checked under the owner's lock, also under concurrent calls. Each
// subtest gets a fresh, empty store.
func Run(t *testing.T, newStore func(t *testing.T) memory.Store) {
	ctx := context.Background()
	t0 := time.Date(2026, 9, 6, 12, 0, 0, 123456000, time.UTC)
	alice := memory.Owner{TeamID: "acme", UserID: "alice"}
	bob := memory.Owner{TeamID: "acme", UserID: "bob"}
	aliceGlobex := memory.Owner{TeamID: "globex", UserID: "alice"}
	opts := cmp.Options{cmp.Comparer(func(a, b time.Time) bool { return a.Equal(b) })}

	t.Run("AddAndList", func(t *testing.T) {
		s := newStore(t)
		want := []memory.Sealed{row("m1", 10, t0), row("m2", 500, t0.Add(time.Second))}
		want[1].UpdatedAt = t0.Add(time.Hour)
		want[1].KeyID = "2026-rotated"
		for _, r := range want {
			in := row(r.ID, r.Chars, r.CreatedAt)
			in.UpdatedAt, in.KeyID = r.UpdatedAt, r.KeyID
			mustAdd(t, s, alice, in, memory.Limits{})
			in.Ciphertext[0]++ // the store must keep its own copy
			in.Nonce[0]++
		}
		if diff := cmp.Diff(want, mustList(t, s, alice), opts); diff != "" {
			t.Errorf("List mismatch (-want +got):\n%s", diff)
		}
	})

	t.Run("EmptyList", func(t *testing.T) {
		s := newStore(t)
		if got := mustList(t, s, alice); len(got) != 0 {
			t.Errorf("List of a new owner = %v, want empty", got)
		}
	})

	t.Run("OrderCreatedThenID", func(t *testing.T) {
		s := newStore(t)
		for _, r := range []memory.Sealed{
			row("mc", 1, t0.Add(time.Hour)), row("mb", 1, t0), row("mB", 1, t0), row("ma", 1, t0.Add(time.Minute)),
		} {
			mustAdd(t, s, alice, r, memory.Limits{})
		}
		edited := row("mB", 2, t0)
		edited.UpdatedAt = t0.Add(24 * time.Hour)
		if _, err := s.Update(ctx, alice, edited, memory.Limits{}); err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff([]string{"mB", "mb", "ma", "mc"}, ids(mustList(t, s, alice))); diff != "" {
			t.Errorf("List order mismatch (-want +got):\n%s", diff)
		}
	})

	t.Run("DuplicateID", func(t *testing.T) {
		s := newStore(t)
		mustAdd(t, s, alice, row("m1", 10, t0), memory.Limits{})
		for _, o := range []memory.Owner{alice, bob} {
			if err := s.Add(ctx, o, row("m1", 20, t0.Add(time.Hour)), memory.Limits{}); askbi.ErrorCode(err) != askbi.Conflict {
				t.Errorf("Add(%v, existing ID) = %v, want conflict", o, err)
			}
		}
		if diff := cmp.Diff([]memory.Sealed{row("m1", 10, t0)}, mustList(t, s, alice), opts); diff != "" {
			t.Errorf("rows after duplicate adds mismatch (-want +got):\n%s", diff)
		}
		if got := mustList(t, s, bob); len(got) != 0 {
			t.Errorf("bob's rows = %v, want none", got)
		}
	})

	t.Run("Update", func(t *testing.T) {
		s := newStore(t)
		mustAdd(t, s, alice, row("m1", 10, t0), memory.Limits{})
		edit := memory.Sealed{ID: "m1", KeyID: "k2", Nonce: []byte("nonce-twelve"), Ciphertext: []byte{0, 1, 2, 0xff},
			Chars: 42, CreatedAt: t0.Add(99 * time.Hour), UpdatedAt: t0.Add(time.Hour)}
		want := edit
		want.CreatedAt = t0 // kept
		got, err := s.Update(ctx, alice, edit, memory.Limits{})
		if err != nil {
			t.Fatalf("Update: %v", err)
		}
		if diff := cmp.Diff(want, got, opts); diff != "" {
			t.Errorf("Update result mismatch (-want +got):\n%s", diff)
		}
		if diff := cmp.Diff([]memory.Sealed{want}, mustList(t, s, alice), opts); diff != "" {
			t.Errorf("List after Update mismatch (-want +got):\n%s", diff)
		}
		if _, err := s.Update(ctx, alice, row("nope", 1, t0), memory.Limits{}); askbi.ErrorCode(err) != askbi.NotFound {
			t.Errorf("Update(unknown) = %v, want not_found", err)
		}
	})

	t.Run("IsolatedByTeamAndUser", func(t *testing.T) {
		s := newStore(t)
		mine := row("alice-acme", 10, t0)
		mustAdd(t, s, alice, mine, memory.Limits{})
		mustAdd(t, s, bob, row("bob-acme", 10, t0), memory.Limits{})
		mustAdd(t, s, aliceGlobex, row("alice-globex", 10, t0), memory.Limits{})
		for _, o := range []memory.Owner{bob, aliceGlobex, {TeamID: "acme", UserID: "mallory"}} {
			if _, err := s.Update(ctx, o, row(mine.ID, 1, t0.Add(time.Hour)), memory.Limits{}); askbi.ErrorCode(err) != askbi.NotFound {
				t.Errorf("Update as %v = %v, want not_found", o, err)
			}
			if err := s.Delete(ctx, o, mine.ID); askbi.ErrorCode(err) != askbi.NotFound {
				t.Errorf("Delete as %v = %v, want not_found", o, err)
			}
		}
		for _, tc := range []struct {
			owner memory.Owner
			want  []string
		}{
			{alice, []string{"alice-acme"}},
			{bob, []string{"bob-acme"}},
			{aliceGlobex, []string{"alice-globex"}},
			{memory.Owner{TeamID: "acme", UserID: "mallory"}, nil},
		} {
			if diff := cmp.Diff(tc.want, ids(mustList(t, s, tc.owner))); diff != "" {
				t.Errorf("List(%v) mismatch (-want +got):\n%s", tc.owner, diff)
			}
		}
		if diff := cmp.Diff([]memory.Sealed{mine}, mustList(t, s, alice), opts); diff != "" {
			t.Errorf("alice's row changed (-want +got):\n%s", diff)
		}
	})

	t.Run("Delete", func(t *testing.T) {
		s := newStore(t)
		mustAdd(t, s, alice, row("m1", 10, t0), memory.Limits{})
		mustAdd(t, s, alice, row("m2", 10, t0), memory.Limits{})
		if err := s.Delete(ctx, alice, "m1"); err != nil {
			t.Fatalf("Delete: %v", err)
		}
		for _, id := range []string{"m1", "nope"} {
			if err := s.Delete(ctx, alice, id); askbi.ErrorCode(err) != askbi.NotFound {
				t.Errorf("Delete(%s) = %v, want not_found", id, err)
			}
		}
		if diff := cmp.Diff([]string{"m2"}, ids(mustList(t, s, alice))); diff != "" {
			t.Errorf("List after Delete mismatch (-want +got):\n%s", diff)
		}
		// A deleted ID may not come back as a Conflict for a new row.
		mustAdd(t, s, alice, row("m1", 10, t0), memory.Limits{})
	})

	t.Run("DeleteAllOnlyOwner", func(t *testing.T) {
		s := newStore(t)
		for i := range 3 {
			mustAdd(t, s, alice, row(fmt.Sprint("a", i), 10, t0), memory.Limits{})
		}
		mustAdd(t, s, bob, row("b0", 10, t0), memory.Limits{})
		mustAdd(t, s, aliceGlobex, row("g0", 10, t0), memory.Limits{})
		n, err := s.DeleteAll(ctx, alice)
		if err != nil || n != 3 {
			t.Fatalf("DeleteAll = %d, %v; want 3, nil", n, err)
		}
		if n, err := s.DeleteAll(ctx, alice); err != nil || n != 0 {
			t.Errorf("second DeleteAll = %d, %v; want 0, nil", n, err)
		}
		for o, want := range map[memory.Owner][]string{alice: nil, bob: {"b0"}, aliceGlobex: {"g0"}} {
			if diff := cmp.Diff(want, ids(mustList(t, s, o))); diff != "" {
				t.Errorf("List(%v) after DeleteAll mismatch (-want +got):\n%s", o, diff)
			}
		}
	})

	t.Run("CountLimit", func(t *testing.T) {
		s := newStore(t)
		limits := memory.Limits{MaxItems: 3}
		for i := range 3 {
			mustAdd(t, s, alice, row(fmt.Sprint("m", i), 10, t0), limits)
		}
		if err := s.Add(ctx, alice, row("m3", 10, t0), limits); askbi.ErrorCode(err) != askbi.TooLarge {
			t.Errorf("fourth Add = %v, want too_large", err)
		}
		if got := len(mustList(t, s, alice)); got != 3 {
			t.Errorf("alice has %d rows, want 3", got)
		}
		mustAdd(t, s, bob, row("b0", 10, t0), limits) // limits are per owner
	})

	t.Run("TotalLimit", func(t *testing.T) {
		s := newStore(t)
		limits := memory.Limits{MaxTotalChars: 100}
		mustAdd(t, s, alice, row("m1", 60, t0), limits)
		mustAdd(t, s, alice, row("m2", 40, t0), limits) // exactly full
		if err := s.Add(ctx, alice, row("m3", 1, t0), limits); askbi.ErrorCode(err) != askbi.TooLarge {
			t.Errorf("Add past the total = %v, want too_large", err)
		}
		if _, err := s.Update(ctx, alice, row("m2", 41, t0), limits); askbi.ErrorCode(err) != askbi.TooLarge {
			t.Errorf("Update past the total = %v, want too_large", err)
		}
		if _, err := s.Update(ctx, alice, row("m2", 40, t0), limits); err != nil {
			t.Errorf("Update to the same size when full = %v, want nil", err)
		}
		if diff := cmp.Diff([]int{60, 40}, chars(mustList(t, s, alice))); diff != "" {
			t.Errorf("chars mismatch (-want +got):\n%s", diff)
		}
		// Above lowered limits, a shorter edit is still allowed.
		lowered := memory.Limits{MaxTotalChars: 50}
		if _, err := s.Update(ctx, alice, row("m1", 30, t0), lowered); err != nil {
			t.Errorf("shrinking Update above lowered limits = %v, want nil", err)
		}
		mustAdd(t, s, bob, row("b0", 100, t0), limits)
	})

	t.Run("ConcurrentAddsTotalCap", func(t *testing.T) {
		// 50 adds of 200 characters: the 8,000 total admits exactly 40.
		s := newStore(t)
		ok := concurrently(t, 50, func(i int) error {
			return s.Add(ctx, alice, row(fmt.Sprint("m", i), 200, t0), memory.Limits{})
		})
		mustWithin(t, s, alice, 40, ok)
	})

	t.Run("ConcurrentAddsCountCap", func(t *testing.T) {
		// 60 adds of 10 characters: the count cap admits exactly 50.
		s := newStore(t)
		ok := concurrently(t, 60, func(i int) error {
			return s.Add(ctx, alice, row(fmt.Sprint("m", i), 10, t0), memory.Limits{})
		})
		mustWithin(t, s, alice, 50, ok)
	})

	t.Run("ConcurrentGrowingEdits", func(t *testing.T) {
		// Four memories of 1,000; growing each to 2,500 adds 1,500, so only
		// two of the four edits fit in 8,000.
		s := newStore(t)
		for i := range 4 {
			mustAdd(t, s, alice, row(fmt.Sprint("m", i), 1000, t0), memory.Limits{})
		}
		ok := concurrently(t, 4, func(i int) error {
			_, err := s.Update(ctx, alice, row(fmt.Sprint("m", i), 2500, t0), memory.Limits{})
			return err
		})
		if ok != 2 {
			t.Errorf("%d growing edits succeeded, want 2", ok)
		}
		sum := 0
		for _, c := range chars(mustList(t, s, alice)) {
			sum += c
		}
		if sum != 7000 {
			t.Errorf("total after edits = %d, want 7000", sum)
		}
	})
}

// concurrently runs n calls of fn at once and returns how many succeeded;
// every failure must be TooLarge.
func concurrently(t *testing.T, n int, fn func(i int) error) int {
	t.Helper()
	errs := make([]error, n)
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			<-start
			errs[i] = fn(i)
		})
	}
	close(start)
	wg.Wait()
	ok := 0
	for _, err := range errs {
		switch askbi.ErrorCode(err) {
		case "":
			ok++
		case askbi.TooLarge:
		default:
			t.Errorf("concurrent call = %v, want nil or too_large", err)
		}
	}
	return ok
}

// mustWithin fails tb unless exactly want calls succeeded (ok) and owner
// has exactly want rows, within the default limits.
func mustWithin(tb testing.TB, s memory.Store, owner memory.Owner, want, ok int) {
	tb.Helper()
	if ok != want {
		tb.Errorf("%d adds succeeded, want %d", ok, want)
	}
	rows := mustList(tb, s, owner)
	sum := 0
	for _, r := range rows {
		sum += r.Chars
	}
	if len(rows) != want || len(rows) > memory.DefaultMaxItems || sum > memory.DefaultMaxTotalChars {
		tb.Errorf("owner has %d rows of %d chars; want %d rows, at most %d rows and %d chars",
			len(rows), sum, want, memory.DefaultMaxItems, memory.DefaultMaxTotalChars)
	}
}

// row returns a sealed-looking row: fixed key ID, a 12-byte nonce and a
// ciphertext with zero and high bytes, of chars characters.
func row(id string, chars int, created time.Time) memory.Sealed {
	nonce := make([]byte, 12)
	copy(nonce, id)
	return memory.Sealed{
		ID: id, KeyID: "k1", Nonce: nonce,
		Ciphertext: append([]byte{0x00, 0xff, 0x7f}, id...),
		Chars:      chars, CreatedAt: created, UpdatedAt: created,
	}
}

// mustAdd adds item for owner and fails tb on error.
func mustAdd(tb testing.TB, s memory.Store, owner memory.Owner, item memory.Sealed, limits memory.Limits) {
	tb.Helper()
	if err := s.Add(context.Background(), owner, item, limits); err != nil {
		tb.Fatalf("Add(%v, %s): %v", owner, item.ID, err)
	}
}

// mustList lists owner's rows and fails tb on error.
func mustList(tb testing.TB, s memory.Store, owner memory.Owner) []memory.Sealed {
	tb.Helper()
	rows, err := s.List(context.Background(), owner)
	if err != nil {
		tb.Fatalf("List(%v): %v", owner, err)
	}
	return rows
}

func ids(rows []memory.Sealed) []string {
	var out []string
	for _, r := range rows {
		out = append(out, r.ID)
	}
	return out
}

func chars(rows []memory.Sealed) []int {
	var out []int
	for _, r := range rows {
		out = append(out, r.Chars)
	}
	return out
}
