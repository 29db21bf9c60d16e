package dataexec_test

import (
	"context"
	"testing"

	metricnoop "go.opentelemetry.io/otel/metric/noop"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	tracenoop "go.opentelemetry.io/otel/trace/noop"

	"github.com/askbi/askbi/dataexec"
	"github.com/askbi/askbi/telemetry"
	"github.com/askbi/askbi/workspace"
)

// BenchmarkRunDataset measures the Executor's own overhead around a
// zero-cost fake source (four rows): a cache hit against a miss (a refresh,
// which runs, maps, filters, sizes and caches the result). Compare the two
// in the same run: go test -bench RunDataset -benchmem ./dataexec
//
// Each also runs with telemetry: -noop on the OpenTelemetry API's no-op
// providers (every instrumentation call made, nothing recorded), -sdk on
// the OpenTelemetry SDK (every span sampled and batched to an exporter
// that drops it, every metric aggregated). hit and miss have none
// (Options.Telemetry nil), as a host without an exporter runs.
func BenchmarkRunDataset(b *testing.B) {
	params := dataexec.Params{
		Filters:   []workspace.Filter{{Field: "signups", Op: workspace.OpGte, Value: 0.0}},
		Variables: map[string]any{"plan": "pro"},
	}
	tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(dropSpans{}))
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(sdkmetric.NewManualReader()))
	defer tp.Shutdown(context.Background())
	defer mp.Shutdown(context.Background())
	for _, tc := range []struct {
		suffix string
		tel    *telemetry.Telemetry
	}{
		{"", nil},
		{"-noop", telemetry.New(&telemetry.Options{TracerProvider: tracenoop.NewTracerProvider(), MeterProvider: metricnoop.NewMeterProvider()})},
		{"-sdk", telemetry.New(&telemetry.Options{TracerProvider: tp, MeterProvider: mp})},
	} {
		for _, bc := range []struct {
			name    string
			refresh bool
		}{{"hit", false}, {"miss", true}} {
			b.Run(bc.name+tc.suffix, func(b *testing.B) {
				e := newEnv(b, &dataexec.Options{Telemetry: tc.tel})
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
}

// dropSpans is a span exporter that drops what it is given.
type dropSpans struct{}

func (dropSpans) ExportSpans(context.Context, []sdktrace.ReadOnlySpan) error { return nil }
func (dropSpans) Shutdown(context.Context) error                             { return nil }
