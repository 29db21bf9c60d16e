package dataexec_test

import (
	"testing"

	"github.com/askbi/askbi/dataexec"
	"github.com/askbi/askbi/workspace"
)

// BenchmarkRunDataset measures the Executor's own overhead around a
// zero-cost fake source (four rows): a cache hit against a miss (a refresh,
// which runs, maps, filters, sizes and caches the result). Compare the two
// in the same run: go test -bench RunDataset -benchmem ./dataexec
func BenchmarkRunDataset(b *testing.B) {
	params := dataexec.Params{
		Filters:   []workspace.Filter{{Field: "signups", Op: workspace.OpGte, Value: 0.0}},
		Variables: map[string]any{"plan": "pro"},
	}
	for _, bc := range []struct {
		name    string
		refresh bool
	}{{"hit", false}, {"miss", true}} {
		b.Run(bc.name, func(b *testing.B) {
			e := newEnv(b, nil)
			p := params
			p.Refresh = bc.refresh
			mustRun(b, e, vic, "signups", params)
			b.ReportAllocs()
			for b.Loop() {
				if _, err := e.exec.RunDataset(ctx, vic, "signups", p); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
