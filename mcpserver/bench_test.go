package mcpserver_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jmoiron/sqlx"
	metricnoop "go.opentelemetry.io/otel/metric/noop"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	tracenoop "go.opentelemetry.io/otel/trace/noop"

	"github.com/askbi/askbi/access"
	"github.com/askbi/askbi/dataexec"
	"github.com/askbi/askbi/dataexec/pgsource"
	"github.com/askbi/askbi/internal/pgtest"
	"github.com/askbi/askbi/internal/proccpu"
	"github.com/askbi/askbi/mcpserver"
	"github.com/askbi/askbi/telemetry"
	"github.com/askbi/askbi/workspace"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

const benchSQL = "SELECT id, name, country, value, created, active FROM bench ORDER BY id"

// BenchmarkRunDataset measures run_dataset on a 1,000-row, 6-column
// PostgreSQL dataset against plain SQL: lib/pq (through sqlx) reading the
// same rows and encoding them with encoding/json, the work a hand-written
// endpoint would do. Cases, each at N concurrent calls:
//
//   - plain/N: the baseline;
//   - dataexec/miss: the executor in process, refresh (N=1);
//   - mcp/miss/N: the MCP tool over HTTP with refresh: true (a cache miss);
//   - mcp/hit: the MCP tool over HTTP from the cache (N=1);
//   - http/static/N=8: the HTTP floor, an answer of the same size written
//     ready-made by a plain handler, fetched by the same client;
//   - paired/plain/N and paired/server-postgres/N: mcp/miss/N against
//     plain or server-postgres in alternating batches (see paired), the
//     figures to quote for the ratios;
//   - paired/plain-distinct/N=8: a miss with a filter value no call used
//     before (a new cache entry each call, as cmd/mcpload -workload
//     misses makes them) against plain;
//   - paired/plain-hit/N=8: a cache hit against plain.
//   - paired/telemetry-none/N=8 and paired/telemetry-none-hit/N=8: the
//     server with no telemetry against a second one also without: the
//     control, whose ratios are the measurement's own noise;
//   - paired/telemetry-noop/N=8 and paired/telemetry-noop-hit/N=8: the
//     server with no telemetry (Options.Telemetry nil, as a host
//     without an exporter runs it) as the baseline, against the same
//     server built with the OpenTelemetry API's no-op providers (every
//     instrumentation call made, nothing recorded): a miss, and a hit;
//   - paired/telemetry-sdk/N=8 and paired/telemetry-sdk-hit/N=8: the
//     same baseline against the server on the OpenTelemetry SDK, every
//     span sampled and batched to an exporter that drops them, every
//     metric aggregated (a manual reader): the cost of telemetry on.
//
// Metrics: x-plain is the time per call as a multiple of plain at the same
// N (throughput relative to plain is 1/x-plain); proc-cpu-ms/op is this
// process's CPU per call (getrusage: the server and, for the MCP cases, the
// load client reading the answer); pg-cpu-ms/op is PostgreSQL's (its
// processes' /proc stat, exited backends included); resp-B/op is the
// answer's size. The MCP cases post raw JSON-RPC and read the whole answer
// without decoding it.
//
//	go test -run '^$' -bench RunDataset -benchmem -benchtime 2s ./mcpserver
func BenchmarkRunDataset(b *testing.B) {
	ctx := context.Background()
	dsn := pgtest.MustDatabase(b)
	db := sqlx.MustOpen("postgres", dsn)
	defer db.Close()
	readerDB, err := pgsource.OpenDB(dsn) // the Source's own pool, as its docs ask
	if err != nil {
		b.Fatal(err)
	}
	defer readerDB.Close()
	db.MustExec(`CREATE TABLE bench AS SELECT g AS id, 'name ' || g AS name, (ARRAY['DE','FR','US','BR'])[g % 4 + 1] AS country,
		g * 1.5 AS value, timestamptz '2026-01-01' + g * interval '1 hour' AS created, g % 3 = 0 AS active
		FROM generate_series(1, 1000) g`)
	// Settle the new table (hint bits, visibility, statistics) before any
	// case reads it, so that the first case does not pay for that.
	db.MustExec(`VACUUM ANALYZE bench`)
	db.SetMaxOpenConns(64)
	db.SetMaxIdleConns(64)
	src, err := pgsource.New(readerDB, &pgsource.Options{MaxConns: 64})
	if err != nil {
		b.Fatal(err)
	}
	e := newEnv(b, src, "postgres")
	e.catalog.PutDataset(workspace.Dataset{ID: "ds_bench", TeamID: "acme", ProjectID: "growth", Name: "Bench", Version: 1,
		Request: workspace.Request{ConnectionID: "conn_acme", SQL: benchSQL}})
	// The bounds a server sets against overload (concurrency, in-flight
	// requests, the MCP response budget) are lifted: this measures the
	// cost of a whole 1,000-row answer at N concurrent calls.
	exec := dataexec.NewExecutor(e.catalog, dataexec.SourceMap{"conn_acme": src}, &dataexec.Options{
		Concurrency: dataexec.ConcurrencyOptions{MaxPerPrincipal: 1 << 10, MaxPerTeam: 1 << 10, MaxPerSource: 1 << 10}})
	gate := access.NewGate(e.checker, access.NewMemoryRateLimiter(&access.RateOptions{Burst: 1 << 30, Rate: 1 << 30}))
	token := e.MustKey(b, "alice", "acme", access.AllProjects(), access.AllScopes...)
	verified, err := e.keys.Verify(ctx, token)
	if err != nil {
		b.Fatal(err)
	}
	p, err := gate.Begin(ctx, verified)
	if err != nil {
		b.Fatal(err)
	}
	// The same server, with telemetry on the providers given.
	serve := func(tel *telemetry.Telemetry) *httptest.Server {
		exec := dataexec.NewExecutor(e.catalog, dataexec.SourceMap{"conn_acme": src}, &dataexec.Options{Telemetry: tel,
			Concurrency: dataexec.ConcurrencyOptions{MaxPerPrincipal: 1 << 10, MaxPerTeam: 1 << 10, MaxPerSource: 1 << 10}})
		return httptest.NewServer(mcpserver.New(exec, gate, e.keys.Verify, &mcpserver.Options{MaxResultBytes: 1 << 20, MaxInFlight: 1 << 10, Telemetry: tel}))
	}
	hs := serve(nil)
	defer hs.Close()
	none := serve(nil)
	defer none.Close()
	noop := serve(telemetry.New(&telemetry.Options{TracerProvider: tracenoop.NewTracerProvider(), MeterProvider: metricnoop.NewMeterProvider()}))
	defer noop.Close()
	tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(dropSpans{}))
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(sdkmetric.NewManualReader()))
	defer tp.Shutdown(ctx)
	defer mp.Shutdown(ctx)
	sdk := serve(telemetry.New(&telemetry.Options{TracerProvider: tp, MeterProvider: mp}))
	defer sdk.Close()
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64}}
	pg := newPGCPU(b, db)

	plain := func() int {
		rows, err := db.QueryxContext(ctx, benchSQL)
		if err != nil {
			b.Fatal(err)
		}
		cols, _ := rows.Columns()
		out := [][]any{}
		for rows.Next() {
			r, err := rows.SliceScan()
			if err != nil {
				b.Fatal(err)
			}
			out = append(out, r)
		}
		rows.Close()
		if len(out) != 1000 {
			b.Fatalf("%d rows", len(out))
		}
		body, err := json.Marshal(map[string]any{"columns": cols, "rows": out, "row_count": len(out)})
		if err != nil {
			b.Fatal(err)
		}
		return len(body)
	}
	postTo := func(url, body string) int {
		resp, err := client.Do(mcpRequest(ctx, url, token, body))
		if err != nil {
			b.Fatal(err)
		}
		n, _ := io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK || n < 20000 {
			b.Fatalf("status %d, %d bytes", resp.StatusCode, n)
		}
		return int(n)
	}
	post := func(body string) int { return postTo(hs.URL, body) }
	callOn := func(url string, refresh bool) int {
		return postTo(url, fmt.Sprintf(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"run_dataset","arguments":{"dataset_id":"ds_bench","refresh":%v}}}`, refresh))
	}
	call := func(refresh bool) int { return callOn(hs.URL, refresh) }
	// distinct is a miss as a black-box load makes them (cmd/mcpload
	// -workload misses): a filter value no call used before, which keeps
	// every row, so that each result is a new cache entry and the cache
	// fills and evicts.
	var filter atomic.Int64
	distinct := func() int {
		return post(fmt.Sprintf(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"run_dataset","arguments":{"dataset_id":"ds_bench","filters":[{"field":"id","op":"gte","value":%d}]}}}`, -filter.Add(1)))
	}

	base := map[int]float64{} // plain's time per call, by N
	for _, n := range []int{1, 8, 32} {
		b.Run("plain/N="+strconv.Itoa(n), func(b *testing.B) { base[n] = measure(b, n, pg, nil, plain) })
	}
	b.Run("dataexec/miss", func(b *testing.B) {
		measure(b, 1, pg, base, func() int {
			res, err := exec.RunDataset(ctx, p, "ds_bench", dataexec.Params{Refresh: true})
			if err != nil || res.RowCount != 1000 {
				b.Fatal(err)
			}
			return 0
		})
	})
	for _, n := range []int{1, 8, 32} {
		b.Run("mcp/miss/N="+strconv.Itoa(n), func(b *testing.B) { measure(b, n, pg, base, func() int { return call(true) }) })
	}
	b.Run("mcp/hit", func(b *testing.B) { measure(b, 1, pg, base, func() int { return call(false) }) })
	// The HTTP floor: the same client fetching an answer of the same size
	// from a handler that writes it ready-made. Its process CPU is what
	// the MCP cases pay for HTTP alone, the load client's share included.
	answer := make([]byte, 56745)
	static := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/json")
		w.Write(answer)
	}))
	defer static.Close()
	b.Run("http/static/N=8", func(b *testing.B) {
		measure(b, 8, pg, base, func() int {
			req, _ := http.NewRequestWithContext(ctx, "POST", static.URL, strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"tools/call"}`))
			resp, err := client.Do(req)
			if err != nil {
				b.Fatal(err)
			}
			n, _ := io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			return int(n)
		})
	})
	peer := startServerPostgres(b, dsn)
	for _, n := range []int{8, 32} {
		b.Run("server-postgres/N="+strconv.Itoa(n), func(b *testing.B) {
			if peer == nil {
				b.Skip("SKIPPING server-postgres: set ASKBI_SERVER_POSTGRES to its dist/index.js (npm install @modelcontextprotocol/server-postgres in a scratch folder)")
			}
			cpu0 := peer.cpu()
			measure(b, n, pg, base, func() int { return peer.call(b, benchSQL) })
			b.ReportMetric(float64(peer.cpu()-cpu0)/float64(time.Millisecond)/float64(b.N), "peer-cpu-ms/op")
		})
	}
	// The ratios, measured in alternating batches so that the machine's
	// drifting speed cancels out.
	miss := func() int { return call(true) }
	for _, n := range []int{1, 8, 32} {
		b.Run("paired/plain/N="+strconv.Itoa(n), func(b *testing.B) { paired(b, n, pg, nil, plain, miss) })
	}
	b.Run("paired/plain-distinct/N=8", func(b *testing.B) { paired(b, 8, pg, nil, plain, distinct) })
	b.Run("paired/plain-hit/N=8", func(b *testing.B) { paired(b, 8, pg, nil, plain, func() int { return call(false) }) })
	// Telemetry: the server without it is the baseline.
	for _, tc := range []struct {
		name string
		on   *httptest.Server
	}{{"none", none}, {"noop", noop}, {"sdk", sdk}} {
		b.Run("paired/telemetry-"+tc.name+"/N=8", func(b *testing.B) {
			paired(b, 8, pg, nil, miss, func() int { return callOn(tc.on.URL, true) })
		})
		b.Run("paired/telemetry-"+tc.name+"-hit/N=8", func(b *testing.B) {
			paired(b, 8, pg, nil, func() int { return call(false) }, func() int { return callOn(tc.on.URL, false) })
		})
	}
	for _, n := range []int{8, 32} {
		b.Run("paired/server-postgres/N="+strconv.Itoa(n), func(b *testing.B) {
			if peer == nil {
				b.Skip("SKIPPING server-postgres: set ASKBI_SERVER_POSTGRES (above)")
			}
			paired(b, n, pg, peer.cpu, func() int { return peer.call(b, benchSQL) }, miss)
		})
	}
}

// dropSpans is a span exporter that drops what it is given: the SDK's
// whole work on a span, with no exporter's.
type dropSpans struct{}

func (dropSpans) ExportSpans(context.Context, []sdktrace.ReadOnlySpan) error { return nil }
func (dropSpans) Shutdown(context.Context) error                             { return nil }

// paired runs b.N calls of base and b.N of f (an MCP cache miss) over n
// goroutines, in alternating batches of 16n calls, and reports f's time
// and CPU (this process, PostgreSQL, and baseCPU's process when set) per
// call as multiples of base's: x-wall (so throughput is 1/x-wall) and
// x-cpu. Both come from the same stretch of time, batch by batch, which
// cancels the machine's drifting speed that separate cases measure.
func paired(b *testing.B, n int, pg *pgCPU, baseCPU func() time.Duration, base, f func() int) {
	cpu := func() time.Duration {
		c := procCPU() + pg.read()
		if baseCPU != nil {
			c += baseCPU()
		}
		return c
	}
	run := func(g func() int, k int) (wall, used time.Duration) {
		c0, t0 := cpu(), time.Now()
		var left atomic.Int64
		left.Store(int64(k))
		var wg sync.WaitGroup
		for range n {
			wg.Go(func() {
				for left.Add(-1) >= 0 {
					g()
				}
			})
		}
		wg.Wait()
		return time.Since(t0), cpu() - c0
	}
	base()
	f()
	var wall, used [2]time.Duration
	b.ResetTimer()
	for done := 0; done < b.N; done += 16 * n {
		k := min(16*n, b.N-done)
		w, c := run(base, k)
		wall[0], used[0] = wall[0]+w, used[0]+c
		w, c = run(f, k)
		wall[1], used[1] = wall[1]+w, used[1]+c
	}
	b.StopTimer()
	b.ReportMetric(float64(wall[1])/float64(wall[0]), "x-wall")
	b.ReportMetric(float64(used[1])/float64(used[0]), "x-cpu")
	b.ReportMetric(float64(used[0])/float64(time.Millisecond)/float64(b.N), "base-cpu-ms/op")
	b.ReportMetric(float64(used[1])/float64(time.Millisecond)/float64(b.N), "cpu-ms/op")
}

// stdioPeer is @modelcontextprotocol/server-postgres, a Node process
// spoken to over stdio: JSON-RPC messages one a line, answers matched by
// id, so that N calls can be outstanding at once.
type stdioPeer struct {
	cmd     *exec.Cmd
	mu      sync.Mutex // guards in and waiting
	in      io.Writer
	waiting map[int64]chan int
	nextID  atomic.Int64
}

// startServerPostgres starts the peer named by ASKBI_SERVER_POSTGRES, or
// returns nil when it is not set.
func startServerPostgres(b *testing.B, dsn string) *stdioPeer {
	script := os.Getenv("ASKBI_SERVER_POSTGRES")
	if script == "" {
		b.Log("SKIPPING the server-postgres comparison: ASKBI_SERVER_POSTGRES is not set")
		return nil
	}
	cmd := exec.Command("node", script, dsn)
	in, err := cmd.StdinPipe()
	if err != nil {
		b.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		b.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { in.Close(); cmd.Process.Kill(); cmd.Wait() })
	p := &stdioPeer{cmd: cmd, in: in, waiting: map[int64]chan int{}}
	go func() {
		sc := bufio.NewScanner(out)
		sc.Buffer(make([]byte, 1<<20), 64<<20)
		for sc.Scan() {
			var m struct {
				ID    *int64          `json:"id"`
				Error json.RawMessage `json:"error"`
			}
			if json.Unmarshal(sc.Bytes(), &m) != nil || m.ID == nil {
				continue
			}
			n := len(sc.Bytes())
			if m.Error != nil {
				n = -1
			}
			p.mu.Lock()
			ch := p.waiting[*m.ID]
			delete(p.waiting, *m.ID)
			p.mu.Unlock()
			if ch != nil {
				ch <- n
			}
		}
	}()
	if n := p.send(`"method":"initialize","params":{"protocolVersion":"2024-11-05","capabilities":{},"clientInfo":{"name":"bench","version":"1"}}`); n < 0 {
		b.Fatal("server-postgres: initialize failed")
	}
	p.mu.Lock()
	fmt.Fprintln(p.in, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	p.mu.Unlock()
	return p
}

// send writes a request with the given members after its id and returns
// the answer's size, or -1 for an error answer.
func (p *stdioPeer) send(members string) int {
	id := p.nextID.Add(1)
	ch := make(chan int, 1)
	p.mu.Lock()
	p.waiting[id] = ch
	fmt.Fprintf(p.in, `{"jsonrpc":"2.0","id":%d,%s}`+"\n", id, members)
	p.mu.Unlock()
	return <-ch
}

func (p *stdioPeer) call(b *testing.B, sql string) int {
	q, _ := json.Marshal(sql)
	n := p.send(`"method":"tools/call","params":{"name":"query","arguments":{"sql":` + string(q) + `}}`)
	if n < 20000 {
		b.Fatalf("server-postgres answered %d bytes", n)
	}
	return n
}

// cpu returns the peer process's CPU time.
func (p *stdioPeer) cpu() time.Duration {
	return proccpu.Of(p.cmd.Process.Pid, true)
}

// measure runs b.N calls of f over n goroutines and reports the metrics
// BenchmarkRunDataset describes; it returns the time per call. base, when
// set, holds plain's time per call by n.
func measure(b *testing.B, n int, pg *pgCPU, base map[int]float64, f func() int) float64 {
	b.Helper()
	f() // warm the pools and the cache
	var left atomic.Int64
	left.Store(int64(b.N))
	var bytes atomic.Int64
	cpu0, pg0 := procCPU(), pg.read()
	b.ResetTimer()
	var wg sync.WaitGroup
	for range n {
		wg.Go(func() {
			for left.Add(-1) >= 0 {
				bytes.Add(int64(f()))
			}
		})
	}
	wg.Wait()
	b.StopTimer()
	perOp := float64(b.Elapsed().Nanoseconds()) / float64(b.N)
	b.ReportMetric(float64(procCPU()-cpu0)/float64(time.Millisecond)/float64(b.N), "proc-cpu-ms/op")
	if pg != nil {
		b.ReportMetric(float64(pg.read()-pg0)/float64(time.Millisecond)/float64(b.N), "pg-cpu-ms/op")
	}
	if bytes.Load() > 0 {
		b.ReportMetric(float64(bytes.Load())/float64(b.N), "resp-B/op")
	}
	if base != nil && base[n] > 0 {
		b.ReportMetric(perOp/base[n], "x-plain")
	}
	return perOp
}

// procCPU returns this process's user and system CPU time.
func procCPU() time.Duration { return proccpu.Self() }

// pgCPU reads the CPU time of a local PostgreSQL (proccpu.Postgres).
type pgCPU struct{ cpu func() time.Duration }

// newPGCPU finds db's PostgreSQL, or returns nil (no pg-cpu metric) when
// it is not a local process this user can read.
func newPGCPU(b *testing.B, db *sqlx.DB) *pgCPU {
	cpu, err := proccpu.Postgres(b.Context(), db)
	if err != nil {
		b.Logf("no PostgreSQL CPU figures: %v", err)
		return nil
	}
	return &pgCPU{cpu}
}

func (c *pgCPU) read() time.Duration {
	if c == nil {
		return 0
	}
	return c.cpu()
}
