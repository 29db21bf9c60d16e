package pgsource

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"runtime"
	"runtime/metrics"
	"strconv"
	"strings"
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

// BenchmarkRowCheck measures the server-side row-size check alone, as
// PostgreSQL CPU per 1,000-row read (pg-cpu-ms/op, from the backend's
// /proc stat): the query with its LIMIT and no check (none), the check of
// the row's whole text that pgsource used before (row-text), and wrap's
// per-column check of the variable-length columns: per-column (the text
// columns; the numeric one is left out, its text bounded within the cap),
// per-column+numeric (under a cap below the numeric's bound, which
// counts it too, converting it to text), and per-column+describe (with
// the describe and its transaction's BEGIN and ROLLBACK, which the other
// cases do not pay). The table is BenchmarkRunDataset's.
//
//	go test -run '^$' -bench RowCheck ./dataexec/pgsource
func BenchmarkRowCheck(b *testing.B) {
	f := mustFixture(b)
	mustExec(b, f.admin, `CREATE TABLE bench AS SELECT g AS id, 'name ' || g AS name, (ARRAY['DE','FR','US','BR'])[g % 4 + 1] AS country,
		g * 1.5 AS value, timestamptz '2026-01-01' + g * interval '1 hour' AS created, g % 3 = 0 AS active
		FROM generate_series(1, 1000) g`)
	const inner = "SELECT id, name, country, value, created, active FROM bench ORDER BY id"
	conn, err := f.admin.Connx(b.Context())
	if err != nil {
		b.Fatal(err)
	}
	defer conn.Close()
	var pid int
	if err := conn.GetContext(b.Context(), &pid, "SELECT pg_backend_pid()"); err != nil {
		b.Fatal(err)
	}
	// readOn reads the 1,000 rows of q on db (the connection or a
	// transaction on it).
	readOn := func(db interface {
		QueryContext(context.Context, string, ...any) (*sql.Rows, error)
	}, q string, args ...any) {
		rows, err := db.QueryContext(b.Context(), q, args...)
		if err != nil {
			b.Fatal(err)
		}
		n := 0
		for rows.Next() {
			n++
		}
		if err := rows.Err(); err != nil || n != 1000 {
			b.Fatalf("%d rows, %v", n, err)
		}
		rows.Close()
	}
	read := func(q string, args ...any) { readOn(conn, q, args...) }
	cols, err := describe(b.Context(), conn, inner, nil)
	if err != nil {
		b.Fatal(err)
	}
	checked, checkedArgs := wrap(inner, cols, nil, 1000, 1<<20)
	numeric, numericArgs := wrap(inner, cols, nil, 1000, maxNumericText-1)
	cases := []struct {
		name string
		run  func()
	}{
		{"none", func() { read("SELECT * FROM (\n"+inner+"\n) AS askbi_q LIMIT $1", 1001) }},
		{"row-text", func() {
			read("SELECT * FROM (SELECT * FROM (\n"+inner+"\n) AS askbi_q OFFSET 0) AS askbi_q"+
				" WHERE CASE WHEN octet_length((askbi_q.*)::text) > $2"+
				" THEN (octet_length((askbi_q.*)::text)::text || ' "+rowTooLarge+"')::int = 0 ELSE true END LIMIT $1", 1001, 1<<20)
		}},
		{"per-column", func() { read(checked, checkedArgs...) }},
		{"per-column+numeric", func() { read(numeric, numericArgs...) }},
		{"per-column+describe", func() {
			if _, err := conn.ExecContext(b.Context(), "BEGIN READ ONLY"); err != nil {
				b.Fatal(err)
			}
			defer conn.ExecContext(b.Context(), "ROLLBACK")
			cols, err := describe(b.Context(), conn, inner, nil)
			if err != nil {
				b.Fatal(err)
			}
			q, args := wrap(inner, cols, nil, 1000, 1<<20)
			read(q, args...)
		}},
	}
	for _, tc := range cases {
		b.Run(tc.name, func(b *testing.B) {
			tc.run()
			before := backendCPU(b, pid)
			for b.Loop() {
				tc.run()
			}
			b.ReportMetric(float64(backendCPU(b, pid)-before)/float64(time.Millisecond)/float64(b.N), "pg-cpu-ms/op")
		})
	}
}

// backendCPU returns the user and system CPU time of PostgreSQL backend
// pid, from /proc (a local server).
func backendCPU(b *testing.B, pid int) time.Duration {
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		b.Skipf("SKIPPING: no /proc stat of the PostgreSQL backend: %v", err)
	}
	fields := strings.Fields(string(stat[strings.LastIndexByte(string(stat), ')')+1:]))
	utime, _ := strconv.ParseInt(fields[11], 10, 64)
	stime, _ := strconv.ParseInt(fields[12], 10, 64)
	return time.Duration(utime+stime) * (time.Second / 100)
}
