package mcpserver_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/askbi/askbi/access"
	"github.com/askbi/askbi/dataexec"
	"github.com/askbi/askbi/dataexec/pgsource"
	"github.com/askbi/askbi/internal/pgtest"
	"github.com/askbi/askbi/mcpserver"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

const benchSQL = "SELECT id, name, value, created FROM bench ORDER BY id"

// BenchmarkRunDataset measures run_dataset on a 1,000-row PostgreSQL
// dataset: plain sqlx (the baseline), the same dataexec call in process,
// and the MCP tool over HTTP, each with a cache miss (refresh) and a hit.
// Each case reports its time as a multiple of the sqlx baseline
// (x-sqlx); throughput relative to sqlx is 1/x-sqlx. The MCP cases
// post raw JSON-RPC and read the whole answer without decoding it.
//
//	go test -run '^$' -bench RunDataset -benchmem ./mcpserver
func BenchmarkRunDataset(b *testing.B) {
	ctx := context.Background()
	db := pgtest.MustDB(b)
	db.MustExec(`CREATE TABLE bench AS SELECT g AS id, 'name ' || g AS name, g * 1.5 AS value, now() AS created FROM generate_series(1, 1000) g`)
	src, err := pgsource.New(db, nil)
	if err != nil {
		b.Fatal(err)
	}
	e := newEnv(b, src, "postgres")
	e.catalog.PutDataset(dataexec.Dataset{ID: "ds_bench", TeamID: "acme", ProjectID: "growth", Name: "Bench", Version: 1,
		Request: dataexec.Request{ConnectionID: "conn_acme", SQL: benchSQL}})
	exec := dataexec.NewExecutor(e.catalog, dataexec.SourceMap{"conn_acme": src}, nil)
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
	srv := mcpserver.New(exec, gate, e.keys.Verify, nil)
	hs := httptest.NewServer(srv)
	defer hs.Close()

	// base is the sqlx time per op of its last (largest) run.
	var base float64
	perOp := func(b *testing.B) float64 { return float64(b.Elapsed().Nanoseconds()) / float64(b.N) }
	ratio := func(b *testing.B) { b.ReportMetric(perOp(b)/base, "x-sqlx") }
	b.Run("sqlx", func(b *testing.B) {
		for b.Loop() {
			rows, err := db.QueryxContext(ctx, benchSQL)
			if err != nil {
				b.Fatal(err)
			}
			var out [][]any
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
		}
		base = perOp(b)
	})
	for _, refresh := range []bool{true, false} {
		name := map[bool]string{true: "miss", false: "hit"}[refresh]
		b.Run("dataexec/"+name, func(b *testing.B) {
			for b.Loop() {
				res, err := exec.RunDataset(ctx, p, "ds_bench", dataexec.Params{Refresh: refresh})
				if err != nil || res.RowCount != 1000 {
					b.Fatal(err)
				}
			}
			ratio(b)
		})
		b.Run("mcp/"+name, func(b *testing.B) {
			// A raw JSON-RPC POST, reading the whole answer: the cost of
			// the endpoint, not of a particular client's JSON decoding.
			body := fmt.Sprintf(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"run_dataset","arguments":{"dataset_id":"ds_bench","refresh":%v}}}`, refresh)
			for b.Loop() {
				req, _ := http.NewRequestWithContext(ctx, "POST", hs.URL, strings.NewReader(body))
				req.Header.Set("Authorization", "Bearer "+token)
				req.Header.Set("Content-Type", "application/json")
				req.Header.Set("Accept", "application/json, text/event-stream")
				resp, err := hs.Client().Do(req)
				if err != nil {
					b.Fatal(err)
				}
				n, _ := io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				if resp.StatusCode != http.StatusOK || n < 20000 {
					b.Fatalf("status %d, %d bytes", resp.StatusCode, n)
				}
			}
			ratio(b)
		})
	}
}
