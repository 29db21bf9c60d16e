package dataexec_test

import (
	"context"
	"encoding/json"
	"fmt"
	"runtime"
	"testing"
	"time"

	"github.com/askbi/askbi/dataexec"
	"github.com/askbi/askbi/workspace"
)

// wideTable is a fresh 1,000-row table of six columns like the benchmarks'
// (an integer, two texts, a numeric, a timestamp, a boolean); seed makes
// its text distinct, so no two calls share a string.
func wideTable(seed int) *dataexec.Table {
	t := &dataexec.Table{Columns: []string{"id", "name", "country", "value", "created", "active"}}
	for i := range 1000 {
		t.Rows = append(t.Rows, []any{int64(i), fmt.Sprintf("name %d-%d", seed, i), []string{"DE", "FR", "US", "BR"}[i%4],
			json.Number(fmt.Sprintf("%d.5", i)), time.Date(2026, 1, 1, i%24, 0, 0, 0, time.UTC), i%3 == 0})
	}
	return t
}

// liveHeap is the Go heap's live bytes after a collection.
func liveHeap() uint64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}

// TestCacheHeapWithinBound: the cache's MaxBytes bounds the memory the
// cached results really take. 300 distinct 1,000-row results (about 60 KB
// each as JSON, 18 MB in all) go through a cache bounded at 4 MiB; the
// live heap then holds at most the bound, with a margin for the
// executor's own state.
func TestCacheHeapWithinBound(t *testing.T) {
	const bound = 4 << 20
	e := newEnv(t, &dataexec.Options{Cache: dataexec.CacheOptions{MaxBytes: bound, MaxEntries: 1 << 20}})
	seed := 0
	e.plain.Respond(func(context.Context, dataexec.Query) (*dataexec.Table, error) {
		seed++
		return wideTable(seed), nil
	})
	mustRun(t, e, vic, "mrr", dataexec.Params{}) // the executor's own first-use state
	before := liveHeap()
	for i := range 300 {
		// A new filter value each call: a new cache key, all rows kept.
		mustRun(t, e, vic, "mrr", dataexec.Params{Filters: []workspace.Filter{{Field: "id", Op: workspace.OpGte, Value: float64(-1 - i)}}})
	}
	after := liveHeap()
	runtime.KeepAlive(e)
	grown := int64(after) - int64(before)
	t.Logf("the live heap grew by %.2f MiB (bound %d MiB)", float64(grown)/(1<<20), bound>>20)
	if grown > bound+bound/4 {
		t.Errorf("the live heap grew by %.1f MiB through a cache bounded at %d MiB; want at most %.1f MiB",
			float64(grown)/(1<<20), bound>>20, 1.25*bound/(1<<20))
	}
}
