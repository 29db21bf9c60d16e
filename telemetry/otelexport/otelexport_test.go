package otelexport_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	coltrace "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	"google.golang.org/protobuf/proto"

	"github.com/askbi/askbi"
	"github.com/askbi/askbi/telemetry"
	"github.com/askbi/askbi/telemetry/otelexport"
)

// receiver is an OTLP/HTTP receiver on loopback: it keeps the spans
// posted to /v1/traces and accepts metrics.
type receiver struct {
	mu      sync.Mutex
	traces  []*coltrace.ExportTraceServiceRequest
	metrics int
}

func (rc *receiver) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	rc.mu.Lock()
	defer rc.mu.Unlock()
	switch r.URL.Path {
	case "/v1/traces":
		var req coltrace.ExportTraceServiceRequest
		if err := proto.Unmarshal(body, &req); err != nil || r.Header.Get("Content-Type") != "application/x-protobuf" {
			http.Error(w, "not OTLP protobuf", http.StatusBadRequest)
			return
		}
		rc.traces = append(rc.traces, &req)
	case "/v1/metrics":
		rc.metrics++
	default:
		http.NotFound(w, r)
		return
	}
	w.Header().Set("Content-Type", "application/x-protobuf")
	w.Write(nil)
}

// TestOTLPOverHTTP: with OTEL_EXPORTER_OTLP_ENDPOINT set, spans and
// metrics reach an OTLP/HTTP receiver (here on loopback) as protobuf,
// with the service's name and the span's attributes.
func TestOTLPOverHTTP(t *testing.T) {
	rc := &receiver{}
	srv := httptest.NewServer(rc)
	defer srv.Close()
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", srv.URL)
	t.Setenv("OTEL_SERVICE_NAME", "")
	ctx := context.Background()
	x, err := otelexport.New(ctx, &otelexport.Options{ServiceName: "askbi-test"})
	if err != nil {
		t.Fatal(err)
	}
	if !x.OTLP || !x.Traces || x.Telemetry == nil || x.Metrics != nil {
		t.Fatalf("setup %+v, want OTLP traces and metrics, no Prometheus", x)
	}
	_, sp := x.Telemetry.StartMCP(ctx, telemetry.MCPRequest{Method: "tools/call", Tool: "run_dataset"})
	sp.End(askbi.E(askbi.NotFound))
	if err := x.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	rc.mu.Lock()
	defer rc.mu.Unlock()
	if len(rc.traces) != 1 || rc.metrics == 0 {
		t.Fatalf("%d trace exports and %d metric exports, want 1 and some", len(rc.traces), rc.metrics)
	}
	rs := rc.traces[0].ResourceSpans[0]
	var service string
	for _, kv := range rs.Resource.Attributes {
		if kv.Key == "service.name" {
			service = kv.Value.GetStringValue()
		}
	}
	span := rs.ScopeSpans[0].Spans[0]
	attrs := map[string]string{}
	for _, kv := range span.Attributes {
		attrs[kv.Key] = kv.Value.GetStringValue()
	}
	if service != "askbi-test" || span.Name != "tools/call run_dataset" || attrs["error.type"] != "not_found" || attrs["mcp.method.name"] != "tools/call" ||
		rs.ScopeSpans[0].Scope.Name != telemetry.ScopeName {
		t.Errorf("exported service %q, scope %q, span %q %v", service, rs.ScopeSpans[0].Scope.Name, span.Name, attrs)
	}
}

// TestPrometheus: the scrape handler serves the metrics in Prometheus's
// text format under their Prometheus names; without OTLP no spans are
// made.
func TestPrometheus(t *testing.T) {
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "")
	ctx := context.Background()
	x, err := otelexport.New(ctx, &otelexport.Options{Prometheus: true})
	if err != nil {
		t.Fatal(err)
	}
	defer x.Shutdown(ctx)
	if x.OTLP || x.Traces || x.Metrics == nil || x.Telemetry == nil {
		t.Fatalf("setup %+v, want Prometheus alone", x)
	}
	_, sp := x.Telemetry.StartMCP(ctx, telemetry.MCPRequest{Method: "tools/call", Tool: "run_dataset"})
	sp.End(nil)
	_, sp = x.Telemetry.StartModel(ctx, "openai", "gpt-4o-mini", "acme")
	sp.SetUsage(telemetry.Tokens{Input: 100, Output: 10}, "stop")
	sp.End(nil)
	x.Telemetry.Cost(ctx, "acme", "openai", "gpt-4o-mini", 0.25)
	rec := httptest.NewRecorder()
	x.Metrics.ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	body := rec.Body.String()
	for _, want := range []string{
		`askbi_requests_total{askbi_surface="mcp"`,
		`mcp_server_operation_duration_seconds_bucket{`,
		`askbi_tool_duration_seconds_count{askbi_surface="mcp",gen_ai_tool_name="run_dataset"`,
		`askbi_chat_tokens_total{askbi_team_id="acme",gen_ai_provider_name="openai",gen_ai_request_model="gpt-4o-mini",gen_ai_token_type="input"`,
		`askbi_chat_cost_usd_total{askbi_team_id="acme",gen_ai_provider_name="openai",gen_ai_request_model="gpt-4o-mini"`,
		`gen_ai_client_token_usage_bucket{`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("the scrape lacks %s", want)
		}
	}
	if t.Failed() {
		t.Logf("scrape:\n%s", body)
	}
	// Nothing at all configured: off.
	x, err = otelexport.New(ctx, nil)
	if err != nil || x.Telemetry != nil || x.Metrics != nil {
		t.Errorf("New(nil) = %+v, %v; want off", x, err)
	}
}
