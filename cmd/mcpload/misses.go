package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jmoiron/sqlx"

	"github.com/askbi/askbi/internal/proccpu"
)

// The misses workload (-workload misses): every call is a cache miss
// with a 1,000-row answer, run_dataset posted as raw JSON-RPC by a
// client that reads the whole answer and decodes nothing, as a black-box
// load client does. With -plain, the same reads as plain SQL (lib/pq and
// encoding/json, in this process) are paired with them.

// benchSQL is the dataset the misses run: 1,000 rows (the executor's row
// cap) of warehouse.bench's 100,000, six columns like the in-process
// benchmark's (BenchmarkRunDataset in mcpserver).
const benchSQL = "SELECT id, name, country, value, created, active FROM warehouse.bench ORDER BY id"

// missesFlags are the reference server's flags for the misses workload:
// a response budget that fits a whole 1,000-row answer, and concurrency
// bounds that let every client's call run (the load is one principal's).
func missesFlags(resultBytes int) []string {
	if resultBytes == 0 {
		resultBytes = 1 << 20
	}
	return []string{"-mcp-result-bytes", strconv.Itoa(resultBytes),
		"-max-queries-per-principal", "64", "-max-queries-per-team", "64", "-mcp-max-in-flight", "64"}
}

// setupMisses creates warehouse.bench on the demo warehouse, as its
// owner, and saves a dataset of benchSQL through explore_data as alice;
// it returns the dataset's ID.
func setupMisses(ctx context.Context, t *target) (string, error) {
	if t.creds.Warehouse == "" {
		return "", fmt.Errorf("the credentials name no warehouse database")
	}
	db, err := sqlx.Open("postgres", t.creds.Warehouse)
	if err != nil {
		return "", err
	}
	defer db.Close()
	for _, q := range []string{
		`DROP TABLE IF EXISTS warehouse.bench`,
		`CREATE TABLE warehouse.bench AS SELECT g AS id, 'name ' || g AS name, (ARRAY['DE','FR','US','BR'])[g % 4 + 1] AS country,
			g * 1.5 AS value, timestamptz '2026-01-01' + g * interval '1 hour' AS created, g % 3 = 0 AS active
			FROM generate_series(1, 100000) g`,
		`ALTER TABLE warehouse.bench ADD PRIMARY KEY (id)`,
		`VACUUM ANALYZE warehouse.bench`,
	} {
		if _, err := db.ExecContext(ctx, q); err != nil {
			return "", fmt.Errorf("warehouse.bench: %w", err)
		}
	}
	return saveDataset(ctx, t, "Load test misses", benchSQL)
}

// poster posts raw JSON-RPC to the MCP endpoint with one key.
type poster struct {
	url, key string
	client   *http.Client
}

func newPoster(t *target, key string, conns int) *poster {
	return &poster{url: t.creds.MCPURL, key: key, client: &http.Client{Timeout: 60 * time.Second,
		Transport: &http.Transport{MaxIdleConnsPerHost: conns, MaxConnsPerHost: conns}}}
}

// missBody is a run_dataset call of dataset id that misses the cache: a
// filter value no other call has used, which keeps every row.
func missBody(id string, n int64) string {
	return fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"run_dataset","arguments":`+
		`{"dataset_id":%q,"filters":[{"field":"id","op":"gte","value":%d}]}}}`, n, id, -n)
}

// post posts body and reads the whole answer; it returns the answer's
// size, or the failure's kind.
func (p *poster) post(ctx context.Context, body string) (int, string) {
	req, _ := http.NewRequestWithContext(ctx, "POST", p.url, strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+p.key)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	resp, err := p.client.Do(req)
	if err != nil {
		return 0, "transport: " + short(err)
	}
	defer resp.Body.Close()
	var buf bytes.Buffer
	if _, err := io.Copy(&buf, resp.Body); err != nil {
		return 0, "transport: " + short(err)
	}
	b := buf.Bytes()
	switch {
	case resp.StatusCode != http.StatusOK:
		return 0, "status " + strconv.Itoa(resp.StatusCode)
	case bytes.Contains(b, []byte(`"isError":true`)):
		var m struct {
			Result struct {
				StructuredContent struct {
					Code string `json:"code"`
				} `json:"structuredContent"`
			} `json:"result"`
		}
		json.Unmarshal(b, &m)
		return 0, "tool: " + m.Result.StructuredContent.Code
	case !bytes.Contains(b, []byte(`"row_count":1000`)):
		return 0, "not 1,000 rows"
	}
	return len(b), ""
}

// missCounter numbers the misses of a run, so that none repeats a filter.
var missCounter atomic.Int64

// runMisses runs n clients for d, each posting one miss after another as
// alice, and returns every call.
func runMisses(ctx context.Context, t *target, n int, d time.Duration, datasetID string) ([]call, error) {
	key, err := t.key("alice")
	if err != nil {
		return nil, err
	}
	p := newPoster(t, key, n)
	defer p.client.CloseIdleConnections()
	var (
		mu  sync.Mutex
		all []call
		wg  sync.WaitGroup
	)
	begin := time.Now()
	for range n {
		wg.Go(func() {
			var mine []call
			for ctx.Err() == nil && time.Since(begin) < d {
				start := time.Since(begin)
				_, fail := p.post(ctx, missBody(datasetID, missCounter.Add(1)))
				mine = append(mine, call{tool: "run_dataset", start: start, end: time.Since(begin), fail: fail})
				if fail != "" && !strings.HasPrefix(fail, "tool: ") {
					time.Sleep(failurePause)
				}
			}
			mu.Lock()
			all = append(all, mine...)
			mu.Unlock()
		})
	}
	wg.Wait()
	slices.SortFunc(all, func(a, b call) int { return int(a.start - b.start) })
	return all, nil
}

// comparePlain runs the paired comparison for d at n concurrent calls:
// batches of 16n plain SQL reads (lib/pq through sqlx, then
// encoding/json of the rows, in this process: a hand-written endpoint's
// work without its HTTP) alternating with batches of 16n MCP misses and
// 16n MCP hits (one call repeated, answered from the result cache), so
// that the machine's drifting speed falls on all alike. It prints the
// throughput of the misses and of the hits against plain's and the CPU a
// call of each: plain's is this process's and PostgreSQL's; the MCP
// calls' the server's, PostgreSQL's and this process's (the client
// reading).
func comparePlain(ctx context.Context, t *target, n int, d time.Duration, datasetID string) error {
	db, err := sqlx.Open("postgres", t.creds.Warehouse)
	if err != nil {
		return err
	}
	defer db.Close()
	db.SetMaxOpenConns(n)
	db.SetMaxIdleConns(n)
	plain := func() string {
		rows, err := db.QueryxContext(ctx, benchSQL+" LIMIT 1000")
		if err != nil {
			return "plain: " + short(err)
		}
		cols, _ := rows.Columns()
		out := [][]any{}
		for rows.Next() {
			r, err := rows.SliceScan()
			if err != nil {
				rows.Close()
				return "plain: " + short(err)
			}
			out = append(out, r)
		}
		rows.Close()
		if len(out) != 1000 {
			return fmt.Sprintf("plain: %d rows", len(out))
		}
		if _, err := json.Marshal(map[string]any{"columns": cols, "rows": out, "row_count": len(out)}); err != nil {
			return "plain: " + short(err)
		}
		return ""
	}
	key, err := t.key("alice")
	if err != nil {
		return err
	}
	p := newPoster(t, key, n)
	defer p.client.CloseIdleConnections()
	miss := func() string {
		_, fail := p.post(ctx, missBody(datasetID, missCounter.Add(1)))
		return fail
	}
	// A hit is the one call every client repeats: the same 1,000 rows,
	// answered from the result cache after the first.
	hitCall := missBody(datasetID, 0)
	hit := func() string {
		_, fail := p.post(ctx, hitCall)
		return fail
	}
	pg, err := proccpu.Postgres(ctx, t.monitor)
	if err != nil {
		return err
	}
	server := func() time.Duration { return proccpu.Of(t.proc.Process.Pid, false) }
	// batch runs k calls of f over n goroutines; it returns the wall time
	// and the CPU of this process, the server and PostgreSQL.
	batch := func(f func() string, k int) (wall, self, srv, db time.Duration, fails int) {
		s0, v0, p0, t0 := proccpu.Self(), server(), pg(), time.Now()
		var left, failed atomic.Int64
		left.Store(int64(k))
		var wg sync.WaitGroup
		for range n {
			wg.Go(func() {
				for left.Add(-1) >= 0 {
					if f() != "" {
						failed.Add(1)
					}
				}
			})
		}
		wg.Wait()
		return time.Since(t0), proccpu.Self() - s0, server() - v0, pg() - p0, int(failed.Load())
	}
	if fail := plain(); fail != "" {
		return fmt.Errorf("%s", fail)
	}
	if fail := miss(); fail != "" {
		return fmt.Errorf("the first miss failed: %s", fail)
	}
	if fail := hit(); fail != "" {
		return fmt.Errorf("the call the hits repeat failed: %s", fail)
	}
	type side struct {
		calls, fails        int
		wall, self, srv, db time.Duration
		ratios              []float64 // each round's throughput against plain's
	}
	var pl, mc, ht side
	add := func(s *side, f func() string, k int) time.Duration {
		w, self, v, g, fails := batch(f, k)
		s.calls, s.fails, s.wall, s.self, s.srv, s.db = s.calls+k, s.fails+fails, s.wall+w, s.self+self, s.srv+v, s.db+g
		return w
	}
	for begin := time.Now(); time.Since(begin) < d && ctx.Err() == nil; {
		k := 16 * n
		w := add(&pl, plain, k)
		mc.ratios = append(mc.ratios, float64(w)/float64(add(&mc, miss, k)))
		ht.ratios = append(ht.ratios, float64(w)/float64(add(&ht, hit, k)))
	}
	if len(mc.ratios) == 0 {
		return ctx.Err()
	}
	ms := func(x time.Duration, calls int) float64 {
		return float64(x) / float64(time.Millisecond) / float64(calls)
	}
	fmt.Printf("paired, N=%d, %d rounds of %d calls each side (plain, misses, hits)\n", n, len(mc.ratios), 16*n)
	fmt.Printf("  plain SQL:  %.0f calls/s, CPU a call %.2f ms (this process %.2f, PostgreSQL %.2f), %d failed\n",
		float64(pl.calls)/pl.wall.Seconds(), ms(pl.self+pl.db, pl.calls), ms(pl.self, pl.calls), ms(pl.db, pl.calls), pl.fails)
	for _, s := range []struct {
		name string
		side
	}{{"misses", mc}, {"hits", ht}} {
		slices.Sort(s.ratios)
		fmt.Printf("  MCP %s: %.2f× plain's throughput (rounds %.2f–%.2f, median %.2f), %.0f calls/s, CPU a call %.2f ms (server %.2f, PostgreSQL %.2f, client %.2f), %d failed; %.2f× plain's CPU\n",
			s.name, float64(pl.wall)/float64(s.wall), s.ratios[0], s.ratios[len(s.ratios)-1], s.ratios[len(s.ratios)/2],
			float64(s.calls)/s.wall.Seconds(), ms(s.srv+s.db+s.self, s.calls), ms(s.srv, s.calls), ms(s.db, s.calls), ms(s.self, s.calls), s.fails,
			float64(s.srv+s.db+s.self)/float64(s.calls)/(float64(pl.self+pl.db)/float64(pl.calls)))
	}
	return nil
}
