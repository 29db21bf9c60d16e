package telemetry_test

import (
	"context"
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/askbi/askbi"
	"github.com/askbi/askbi/telemetry"
)

// recorder is a Telemetry on the SDK's in-memory span exporter and a
// manual metric reader.
type recorder struct {
	tel    *telemetry.Telemetry
	spans  *tracetest.InMemoryExporter
	reader *sdkmetric.ManualReader
}

func newRecorder(t *testing.T) *recorder {
	t.Helper()
	r := &recorder{spans: tracetest.NewInMemoryExporter(), reader: sdkmetric.NewManualReader()}
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(r.spans))
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(r.reader))
	t.Cleanup(func() { tp.Shutdown(context.Background()); mp.Shutdown(context.Background()) })
	r.tel = telemetry.New(&telemetry.Options{TracerProvider: tp, MeterProvider: mp})
	return r
}

// metrics collects the metrics recorded so far, by name.
func (r *recorder) metrics(t *testing.T) map[string]metricdata.Aggregation {
	t.Helper()
	var rm metricdata.ResourceMetrics
	if err := r.reader.Collect(context.Background(), &rm); err != nil {
		t.Fatal(err)
	}
	out := map[string]metricdata.Aggregation{}
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			out[m.Name] = m.Data
		}
	}
	return out
}

// attrs are a span's attributes as a map.
func attrs(kvs []attribute.KeyValue) map[string]any {
	m := map[string]any{}
	for _, kv := range kvs {
		m[string(kv.Key)] = kv.Value.AsInterface()
	}
	return m
}

// sums are an Int64 sum's points by their attributes, written key=value.
func sums(t *testing.T, a metricdata.Aggregation, keys ...attribute.Key) map[string]int64 {
	t.Helper()
	s, ok := a.(metricdata.Sum[int64])
	if !ok {
		t.Fatalf("%T is not an int64 sum", a)
	}
	out := map[string]int64{}
	for _, p := range s.DataPoints {
		k := ""
		for _, key := range keys {
			v, _ := p.Attributes.Value(key)
			k += string(key) + "=" + v.Emit() + " "
		}
		out[k] += p.Value
	}
	return out
}

// TestOff: a nil Telemetry, and the spans it returns, do nothing and
// allocate nothing, so the hot paths cost nothing without providers.
func TestOff(t *testing.T) {
	var tel *telemetry.Telemetry
	if got := telemetry.New(nil); got != nil {
		t.Errorf("New(nil) = %v, want nil", got)
	}
	if got := telemetry.New(&telemetry.Options{}); got != nil {
		t.Errorf("New without providers = %v, want nil", got)
	}
	ctx := context.Background()
	notFound := askbi.E(askbi.NotFound)
	allocs := testing.AllocsPerRun(100, func() {
		c, s := tel.StartQuery(ctx, "postgres")
		s.SetQuery(telemetry.CacheHit, 10, 100, false)
		s.End(nil)
		c, s = tel.StartMCP(c, telemetry.MCPRequest{Method: "tools/call", Tool: "run_dataset"})
		s.End(notFound)
		done := tel.InFlight(c, "postgres")
		done()
		tel.Refused(c, telemetry.SurfaceMCP, askbi.RateLimited)
	})
	if allocs != 0 {
		t.Errorf("off: %v allocations a call, want 0", allocs)
	}
}

// TestMCPSpanContinuesClientTrace: an MCP request's span is a server
// span named by method and tool, child of the traceparent the client
// sent in _meta, with the MCP semantic conventions' attributes; a
// failure sets error.type to the askbi code, never the message.
func TestMCPSpanContinuesClientTrace(t *testing.T) {
	r := newRecorder(t)
	const traceID, parentID = "4bf92f3577b34da6a3ce929d0e0e4736", "00f067aa0ba902b7"
	ctx, s := r.tel.StartMCP(context.Background(), telemetry.MCPRequest{Method: "tools/call", Tool: "run_dataset",
		SessionID: "sess-1", ProtocolVersion: "2025-11-25",
		Meta: map[string]any{"traceparent": "00-" + traceID + "-" + parentID + "-01", "progressToken": 3}})
	if sc := trace.SpanContextFromContext(ctx); sc.TraceID().String() != traceID {
		t.Errorf("the request's context carries trace %s, want the client's %s", sc.TraceID(), traceID)
	}
	s.End(&askbi.Error{Code: askbi.NotFound, Message: "dataset ds_secret_name not found"})
	spans := r.spans.GetSpans()
	if len(spans) != 1 {
		t.Fatalf("%d spans, want 1", len(spans))
	}
	sp := spans[0]
	if sp.Name != "tools/call run_dataset" || sp.SpanKind != trace.SpanKindServer || sp.Parent.TraceID().String() != traceID ||
		sp.Parent.SpanID().String() != parentID || !sp.Parent.IsRemote() {
		t.Errorf("span %q kind %v parent %v, want tools/call run_dataset, server, the client's span", sp.Name, sp.SpanKind, sp.Parent)
	}
	want := map[string]any{"mcp.method.name": "tools/call", "gen_ai.tool.name": "run_dataset", "gen_ai.operation.name": "execute_tool",
		"mcp.session.id": "sess-1", "mcp.protocol.version": "2025-11-25", "jsonrpc.protocol.version": "2.0",
		"network.transport": "tcp", "network.protocol.name": "http", "error.type": "not_found"}
	if diff := cmp.Diff(want, attrs(sp.Attributes)); diff != "" {
		t.Errorf("attributes mismatch (-want +got):\n%s", diff)
	}
	if sp.Status.Code != codes.Error || sp.Status.Description != "not_found" {
		t.Errorf("status %+v, want error not_found (the code, not the message)", sp.Status)
	}
	m := r.metrics(t)
	if got := sums(t, m[telemetry.MetricRequests], telemetry.AttrSurface, telemetry.AttrErrorType); got["askbi.surface=mcp error.type=not_found "] != 1 {
		t.Errorf("askbi.requests: %v", got)
	}
	if _, ok := m[telemetry.MetricMCPDuration].(metricdata.Histogram[float64]); !ok {
		t.Errorf("no %s histogram: %v", telemetry.MetricMCPDuration, m)
	}
	// Without a traceparent the span starts a trace of its own.
	_, s = r.tel.StartMCP(context.Background(), telemetry.MCPRequest{Method: "tools/list", Meta: map[string]any{"traceparent": "garbage"}})
	s.End(nil)
	if sp := r.spans.GetSpans()[1]; sp.Parent.IsValid() || sp.Name != "tools/list" {
		t.Errorf("span %q with parent %v, want tools/list as a root", sp.Name, sp.Parent)
	}
}

// TestTurnModelToolQuery: a turn's span holds its model call (GenAI
// conventions: provider, model, tokens, finish reason), its tool run and
// the tool's data query (source kind, cache result, rows, bytes); the
// metrics count tokens by team and model, the cache result and refusals.
func TestTurnModelToolQuery(t *testing.T) {
	r := newRecorder(t)
	ctx, turn := r.tel.StartTurn(context.Background(), "send", "conv_1")
	turn.SetTeam("acme")
	mctx, model := r.tel.StartModel(ctx, "openai", "gpt-4o-mini", "acme")
	_ = mctx
	model.SetUsage(telemetry.Tokens{Input: 1200, CachedInput: 1024, Output: 80}, "tool_calls")
	model.End(nil)
	tctx, tool := r.tel.StartTool(ctx, "run_dataset")
	_, q := r.tel.StartQuery(tctx, "postgres")
	done := r.tel.InFlight(tctx, "postgres")
	done()
	q.SetQuery(telemetry.CacheMiss, 42, 2048, false)
	q.End(nil)
	_, q = r.tel.StartQuery(tctx, "postgres")
	q.SetQuery(telemetry.CacheHit, 42, 2048, false)
	q.End(nil)
	tool.End(errors.New("a foreign error"))
	turn.End(askbi.E(askbi.BudgetExceeded))

	byName := map[string]tracetest.SpanStub{}
	for _, s := range r.spans.GetSpans() {
		byName[s.Name] = s
	}
	root := byName["invoke_agent Ask"]
	for _, name := range []string{"chat gpt-4o-mini", "execute_tool run_dataset"} {
		if s := byName[name]; s.Parent.SpanID() != root.SpanContext.SpanID() {
			t.Errorf("%s is not a child of the turn's span", name)
		}
	}
	if q := byName["askbi.data.run postgres"]; q.Parent.SpanID() != byName["execute_tool run_dataset"].SpanContext.SpanID() {
		t.Error("the data query is not a child of the tool's span")
	}
	wantModel := map[string]any{"gen_ai.operation.name": "chat", "gen_ai.provider.name": "openai", "gen_ai.request.model": "gpt-4o-mini",
		"askbi.team.id": "acme", "gen_ai.usage.input_tokens": int64(1200), "gen_ai.usage.output_tokens": int64(80),
		"gen_ai.usage.cache_read.input_tokens": int64(1024), "gen_ai.usage.cache_creation.input_tokens": int64(0),
		"gen_ai.response.finish_reasons": []string{"tool_calls"}}
	if diff := cmp.Diff(wantModel, attrs(byName["chat gpt-4o-mini"].Attributes)); diff != "" {
		t.Errorf("model span attributes mismatch (-want +got):\n%s", diff)
	}
	if k := byName["chat gpt-4o-mini"].SpanKind; k != trace.SpanKindClient {
		t.Errorf("model span kind %v, want client", k)
	}
	wantQuery := map[string]any{"askbi.source.kind": "postgres", "askbi.cache.result": "hit", "askbi.data.rows": int64(42),
		"askbi.data.bytes": int64(2048), "askbi.data.truncated": false}
	if diff := cmp.Diff(wantQuery, attrs(byName["askbi.data.run postgres"].Attributes)); diff != "" {
		t.Errorf("query span attributes mismatch (-want +got):\n%s", diff)
	}
	if got := attrs(byName["execute_tool run_dataset"].Attributes)["error.type"]; got != "internal" {
		t.Errorf("a foreign error's error.type = %v, want internal", got)
	}

	m := r.metrics(t)
	tokens := sums(t, m[telemetry.MetricTokens], telemetry.AttrTeam, telemetry.AttrRequestModel, telemetry.AttrTokenType)
	want := map[string]int64{
		"askbi.team.id=acme gen_ai.request.model=gpt-4o-mini gen_ai.token.type=input ":      1200,
		"askbi.team.id=acme gen_ai.request.model=gpt-4o-mini gen_ai.token.type=cache_read ": 1024,
		"askbi.team.id=acme gen_ai.request.model=gpt-4o-mini gen_ai.token.type=output ":     80,
	}
	if diff := cmp.Diff(want, tokens); diff != "" {
		t.Errorf("askbi.chat.tokens mismatch (-want +got):\n%s", diff)
	}
	cache := sums(t, m[telemetry.MetricDataRequests], telemetry.AttrCacheResult)
	if diff := cmp.Diff(map[string]int64{"askbi.cache.result=hit ": 1, "askbi.cache.result=miss ": 1}, cache); diff != "" {
		t.Errorf("askbi.data.requests mismatch (-want +got):\n%s", diff)
	}
	refused := sums(t, m[telemetry.MetricRefused], telemetry.AttrSurface, telemetry.AttrErrorType)
	if diff := cmp.Diff(map[string]int64{"askbi.surface=chat error.type=budget_exceeded ": 1}, refused); diff != "" {
		t.Errorf("askbi.refused mismatch (-want +got):\n%s", diff)
	}
	inFlight := sums(t, m[telemetry.MetricQueriesRunning], telemetry.AttrSourceKind)
	if inFlight["askbi.source.kind=postgres "] != 0 {
		t.Errorf("queries in flight after they ended: %v", inFlight)
	}
}

// TestTracesOnly: a host may pass a TracerProvider alone (or a
// MeterProvider alone); the other half stays off.
func TestTracesOnly(t *testing.T) {
	spans := tracetest.NewInMemoryExporter()
	tel := telemetry.New(&telemetry.Options{TracerProvider: sdktrace.NewTracerProvider(sdktrace.WithSyncer(spans))})
	_, s := tel.StartTool(context.Background(), "x")
	s.End(nil)
	tel.Cost(context.Background(), "acme", "openai", "m", 1)
	tel.Refused(context.Background(), telemetry.SurfaceChat, askbi.RateLimited)
	if n := len(spans.GetSpans()); n != 1 {
		t.Errorf("%d spans, want 1", n)
	}
}
