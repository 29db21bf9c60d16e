package pgsource

import (
	"fmt"
	"runtime"
	"runtime/metrics"
	"sync/atomic"
	"testing"
	"time"

	"github.com/askbi/askbi/dataexec"
)

// BenchmarkSelectStar10M measures SELECT * over a 10-million-row table down
// to the capped result (1,000 rows), beside the same over 100,000 rows:
// time and memory must not depend on the table's size. peak-heap-MiB is the
// largest Go heap (live and not yet collected objects) seen while the
// queries ran; heap-growth-MiB is that peak minus the heap before them.
// Building the big table takes about half a minute.
//
//	go test -run '^$' -bench SelectStar -benchmem ./dataexec/pgsource
func BenchmarkSelectStar10M(b *testing.B) {
	f := mustFixture(b)
	for _, n := range []int{100_000, 10_000_000} {
		mustExec(b, f.admin, fmt.Sprintf(`CREATE TABLE big_%d WITH (autovacuum_enabled = false) AS
SELECT g AS id, 'name ' || g AS name, g * 1.5 AS amount, timestamptz '2024-01-01' + g * interval '1 second' AS created
FROM generate_series(1, %[1]d) g`, n))
	}
	for _, n := range []int{100_000, 10_000_000} {
		b.Run(fmt.Sprintf("rows=%d", n), func(b *testing.B) {
			q := dataexec.Query{SQL: fmt.Sprintf("SELECT * FROM big_%d", n), MaxRows: 1000, MaxBytes: 1 << 20}
			runtime.GC()
			base := heapBytes()
			var peak uint64
			for b.Loop() {
				var t *dataexec.Table
				var err error
				peak = max(peak, peakHeap(func() { t, err = f.src.Query(b.Context(), q) }))
				if err != nil {
					b.Fatal(err)
				}
				if len(t.Rows) != 1000 || t.TruncatedReason != dataexec.TruncatedRows {
					b.Fatalf("got %d rows, truncated %q; want 1000 and %q", len(t.Rows), t.TruncatedReason, dataexec.TruncatedRows)
				}
			}
			b.ReportMetric(float64(peak)/(1<<20), "peak-heap-MiB")
			b.ReportMetric(float64(peak-min(base, peak))/(1<<20), "heap-growth-MiB")
		})
	}
}

// heapBytes returns the size of the heap's objects, live or not yet swept.
func heapBytes() uint64 {
	s := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	metrics.Read(s)
	return s[0].Value.Uint64()
}

// peakHeap runs f while sampling the heap every 100µs, and returns the
// largest size seen.
func peakHeap(f func()) uint64 {
	var peak atomic.Uint64
	peak.Store(heapBytes())
	done, stopped := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(stopped)
		tick := time.NewTicker(100 * time.Microsecond)
		defer tick.Stop()
		for {
			select {
			case <-done:
				return
			case <-tick.C:
				if h := heapBytes(); h > peak.Load() {
					peak.Store(h)
				}
			}
		}
	}()
	f()
	close(done)
	<-stopped
	return max(peak.Load(), heapBytes())
}
