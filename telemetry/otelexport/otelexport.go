// Package otelexport builds the OpenTelemetry providers a server wires
// into package telemetry: the OpenTelemetry SDK with a Prometheus
// exporter (a scrape handler on a registry of its own) and, when the
// environment names an endpoint, OTLP over HTTP for traces and metrics.
//
//	x, err := otelexport.New(ctx, &otelexport.Options{ServiceName: "bi", Prometheus: true})
//	defer x.Shutdown(context.Background())
//	debugMux.Handle("/metrics", x.Metrics)
//	srv := mcpserver.New(exec, gate, keys.Verify, &mcpserver.Options{Telemetry: x.Telemetry})
//
// OTLP follows the OpenTelemetry environment variables:
// OTEL_EXPORTER_OTLP_ENDPOINT (or OTEL_EXPORTER_OTLP_TRACES_ENDPOINT and
// OTEL_EXPORTER_OTLP_METRICS_ENDPOINT) turns it on, with their headers,
// timeouts and certificates; OTEL_EXPORTER_OTLP_PROTOCOL may only be
// http/protobuf (gRPC is not linked). OTEL_SERVICE_NAME and
// OTEL_RESOURCE_ATTRIBUTES name the service; OTEL_TRACES_SAMPLER samples.
//
// It sets no global provider or propagator: the host passes
// Setup.Telemetry to the SDK's options.
package otelexport

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"

	promclient "github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlpmetric/otlpmetrichttp"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/exporters/prometheus"
	"go.opentelemetry.io/otel/metric"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"

	"github.com/askbi/askbi/telemetry"
)

// Options configures New. The zero value is valid.
type Options struct {
	// ServiceName is the service.name of everything exported, unless
	// OTEL_SERVICE_NAME says otherwise. Default "askbi".
	ServiceName string
	// Prometheus makes Setup.Metrics, the metrics' scrape handler.
	Prometheus bool
}

// Setup is what New built.
type Setup struct {
	// Telemetry is the SDK's telemetry on the providers, nil (off) when
	// nothing is exported: neither Prometheus nor OTLP.
	Telemetry *telemetry.Telemetry
	// Metrics serves the metrics in Prometheus's text format; nil unless
	// Options.Prometheus.
	Metrics http.Handler
	// OTLP says that traces or metrics go to an OTLP/HTTP endpoint.
	OTLP bool
	// Traces says that spans are made and exported over OTLP.
	Traces bool

	shutdown []func(context.Context) error
}

// New builds the exporters o and the environment ask for.
func New(ctx context.Context, o *Options) (*Setup, error) {
	var opts Options
	if o != nil {
		opts = *o
	}
	if opts.ServiceName == "" {
		opts.ServiceName = "askbi"
	}
	s := &Setup{Traces: env("", "TRACES_")}
	otlpMetrics := env("", "METRICS_")
	s.OTLP = s.Traces || otlpMetrics
	if !s.OTLP && !opts.Prometheus {
		return s, nil
	}
	if p := os.Getenv("OTEL_EXPORTER_OTLP_PROTOCOL"); s.OTLP && p != "" && p != "http/protobuf" {
		return nil, fmt.Errorf("OTEL_EXPORTER_OTLP_PROTOCOL=%s: only http/protobuf is supported", p)
	}
	res, err := resource.New(ctx, resource.WithAttributes(attribute.String("service.name", opts.ServiceName)), resource.WithFromEnv())
	if err != nil {
		return nil, fmt.Errorf("otelexport: resource: %w", err)
	}
	mopts := []sdkmetric.Option{sdkmetric.WithResource(res)}
	if opts.Prometheus {
		reg := promclient.NewRegistry()
		exp, err := prometheus.New(prometheus.WithRegisterer(reg))
		if err != nil {
			return nil, fmt.Errorf("otelexport: prometheus: %w", err)
		}
		mopts = append(mopts, sdkmetric.WithReader(exp))
		s.Metrics = promhttp.HandlerFor(reg, promhttp.HandlerOpts{})
	}
	var tp trace.TracerProvider
	if otlpMetrics {
		mexp, err := otlpmetrichttp.New(ctx)
		if err != nil {
			return nil, fmt.Errorf("otelexport: OTLP metrics: %w", err)
		}
		mopts = append(mopts, sdkmetric.WithReader(sdkmetric.NewPeriodicReader(mexp)))
	}
	if s.Traces {
		texp, err := otlptracehttp.New(ctx)
		if err != nil {
			return nil, fmt.Errorf("otelexport: OTLP traces: %w", err)
		}
		stp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(texp), sdktrace.WithResource(res))
		s.shutdown = append(s.shutdown, stp.Shutdown)
		tp = stp
	}
	mp := sdkmetric.NewMeterProvider(mopts...)
	s.shutdown = append(s.shutdown, mp.Shutdown)
	var meter metric.MeterProvider = mp
	s.Telemetry = telemetry.New(&telemetry.Options{TracerProvider: tp, MeterProvider: meter})
	return s, nil
}

// env reports whether the environment names an OTLP endpoint for all
// signals, or for the signal of infix ("TRACES_", "METRICS_").
func env(all, infix string) bool {
	return os.Getenv("OTEL_EXPORTER_OTLP_"+all+"ENDPOINT") != "" || os.Getenv("OTEL_EXPORTER_OTLP_"+infix+"ENDPOINT") != ""
}

// Shutdown exports what the providers hold and stops them.
func (s *Setup) Shutdown(ctx context.Context) error {
	var errs []error
	for _, f := range s.shutdown {
		errs = append(errs, f(ctx))
	}
	return errors.Join(errs...)
}
