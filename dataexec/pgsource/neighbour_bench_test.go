package pgsource

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/askbi/askbi"
	"github.com/askbi/askbi/access"
	"github.com/askbi/askbi/dataexec"
	"github.com/askbi/askbi/workspace"
)

// BenchmarkNeighbourP99 measures one principal's light previews (SELECT
// 1) while another team's principal keeps 32 heavy previews (a count
// over a million generated rows) in flight on the same source, whose pool has 8
// connections: with the executor's default concurrency bounds, and with
// the bounds lifted. p50-ms and p99-ms are the light principal's; compare
// each load against "quiet", measured in the same run; timeouts counts
// the light calls that waited out the 15 s deadline for a connection
// (their wait counts in the percentiles). The heavy principal retries a
// refused preview after 10 ms.
//
//	go test -run '^$' -bench NeighbourP99 -benchtime 100x ./dataexec/pgsource
func BenchmarkNeighbourP99(b *testing.B) {
	f := mustFixture(b)
	f.pool.SetMaxOpenConns(8)
	f.pool.SetMaxIdleConns(8)
	cat := workspace.NewMemoryCatalog()
	dir := access.NewMemoryDirectory()
	for _, team := range []string{"light", "heavy"} {
		cat.PutConnection(workspace.Connection{ID: "wh_" + team, TeamID: team, Name: "Warehouse", Type: "postgres", Active: true})
		dir.SetMember(team, "u", access.RoleOwner, access.AllProjects())
	}
	checker := access.NewChecker(dir, nil)
	live := func(team string) access.Principal {
		p, err := checker.Live(context.Background(), access.Principal{UserID: "u", TeamID: team, Auth: access.AuthSession})
		if err != nil {
			b.Fatal(err)
		}
		return p
	}
	light, heavy := live("light"), live("heavy")
	sources := dataexec.SourceMap{"wh_light": f.src, "wh_heavy": f.src}
	unbounded := dataexec.ConcurrencyOptions{MaxPerPrincipal: 1 << 20, MaxPerTeam: 1 << 20, MaxPerSource: 1 << 20}
	for _, load := range []struct {
		name   string
		bounds dataexec.ConcurrencyOptions
		heavy  bool
	}{
		{"quiet", dataexec.ConcurrencyOptions{}, false},
		{"heavy neighbour, default bounds", dataexec.ConcurrencyOptions{}, true},
		{"heavy neighbour, no bounds", unbounded, true},
	} {
		b.Run(load.name, func(b *testing.B) {
			x := dataexec.NewExecutor(cat, sources, &dataexec.Options{Concurrency: load.bounds})
			ctx, stop := context.WithCancel(b.Context())
			var wg sync.WaitGroup
			if load.heavy {
				for range 32 {
					wg.Go(func() {
						for ctx.Err() == nil {
							_, err := x.Explore(ctx, heavy, dataexec.Exploration{Operation: dataexec.ExplorePreview, ConnectionID: "wh_heavy",
								SQL: "SELECT count(*) AS n FROM generate_series(1, 1000000) g"})
							if askbi.ErrorCode(err) == askbi.RateLimited {
								time.Sleep(10 * time.Millisecond)
							}
						}
					})
				}
				time.Sleep(500 * time.Millisecond) // let the load build
			}
			var took []time.Duration
			failed := 0
			for b.Loop() {
				start := time.Now()
				if _, err := x.Explore(b.Context(), light, dataexec.Exploration{Operation: dataexec.ExplorePreview, ConnectionID: "wh_light", SQL: "SELECT 1 AS x"}); err != nil {
					if askbi.ErrorCode(err) != askbi.Timeout {
						b.Fatal(err)
					}
					failed++ // waited out the deadline for a pooled connection
				}
				took = append(took, time.Since(start))
			}
			stop()
			wg.Wait()
			slices.Sort(took)
			at := func(q float64) float64 { return float64(took[int(q*float64(len(took)-1))]) / float64(time.Millisecond) }
			b.ReportMetric(at(0.5), "p50-ms")
			b.ReportMetric(at(0.99), "p99-ms")
			b.ReportMetric(float64(failed), "timeouts")
		})
	}
}
