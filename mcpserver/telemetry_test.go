package mcpserver_test

import (
	"context"
	"net/http"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/askbi/askbi/access"
	"github.com/askbi/askbi/mcpserver"
	"github.com/askbi/askbi/telemetry"
)

// TestRequestSpans: every MCP request is a server span named by method
// and tool; a tools/call continues the trace its client sent in _meta;
// a failed call's error.type is its code; an unknown tool's name is no
// label. The request counter counts them all, by outcome.
func TestRequestSpans(t *testing.T) {
	spans := tracetest.NewInMemoryExporter()
	reader := sdkmetric.NewManualReader()
	tel := telemetry.New(&telemetry.Options{TracerProvider: sdktrace.NewTracerProvider(sdktrace.WithSyncer(spans)),
		MeterProvider: sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))})
	e := newEnvWith(t, nil, "", func(o *mcpserver.Options, _ *access.TokenLookup) { o.Telemetry = tel })
	token := e.MustKey(t, "alice", "acme", access.AllProjects(), access.AllScopes...)
	cs := e.MustConnect(t, token)
	const traceID, parentID = "0af7651916cd43dd8448eb211c80319c", "b7ad6b7169203331"
	_, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "run_dataset", Arguments: map[string]any{"dataset_id": "ds_signups"},
		Meta: mcp.Meta{"traceparent": "00-" + traceID + "-" + parentID + "-01"}})
	if err != nil {
		t.Fatal(err)
	}
	call(t, cs, "run_dataset", map[string]any{"dataset_id": "ds_tickets"}) // another team's: not_found
	status, _, _ := postMCP(t, e.url, token, `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"no_such_tool_`+traceID+`","arguments":{}}}`)
	if status != http.StatusOK {
		t.Fatalf("unknown tool: status %d", status)
	}

	type seen struct {
		Name, Tool, Error string
		Kind              trace.SpanKind
	}
	var got []seen
	var run tracetest.SpanStub
	for _, s := range spans.GetSpans() {
		m := map[string]string{}
		for _, kv := range s.Attributes {
			m[string(kv.Key)] = kv.Value.Emit()
		}
		got = append(got, seen{s.Name, m["gen_ai.tool.name"], m["error.type"], s.SpanKind})
		if s.Name == "tools/call run_dataset" && run.Name == "" {
			run = s
		}
	}
	server := trace.SpanKindServer
	// The go-sdk client speaks 2026-07-28: server/discover, then a
	// tools/list before its first call.
	want := []seen{{"server/discover", "", "", server}, {"tools/call run_dataset", "run_dataset", "", server},
		{"tools/call run_dataset", "run_dataset", "not_found", server}, {"tools/list", "", "", server},
		{"tools/call", "", "invalid_argument", server}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("spans mismatch (-want +got):\n%s", diff)
	}
	if run.Parent.TraceID().String() != traceID || run.Parent.SpanID().String() != parentID {
		t.Errorf("run_dataset's parent %v, want the client's span %s/%s", run.Parent, traceID, parentID)
	}

	var rm metricdata.ResourceMetrics
	if err := reader.Collect(context.Background(), &rm); err != nil {
		t.Fatal(err)
	}
	counts := map[string]int64{}
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			if m.Name != telemetry.MetricRequests {
				continue
			}
			for _, p := range m.Data.(metricdata.Sum[int64]).DataPoints {
				code, _ := p.Attributes.Value(telemetry.AttrErrorType)
				counts[code.Emit()] += p.Value
			}
		}
	}
	if diff := cmp.Diff(map[string]int64{"": 3, "not_found": 1, "invalid_argument": 1}, counts); diff != "" {
		t.Errorf("askbi.requests by outcome mismatch (-want +got):\n%s", diff)
	}
}

// TestInitializeAudited: a client's initialize (a 2025 client's) or
// server/discover (a 2026-07-28 client's) is audited with the name and
// version it gives itself, cleaned and cut, and a 2026-07-28 client's
// tool calls carry its name too (it sends it in every request's _meta):
// the usage view's connected clients.
func TestInitializeAudited(t *testing.T) {
	e := newEnv(t, nil, "")
	token := e.MustKey(t, "bob", "acme", access.ProjectSet("growth"), access.ScopeDataRead)
	body := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},` +
		`"clientInfo":{"name":"Claude Code\u0007 with a name far longer than sixty-four characters, which is cut","version":"2.1"}}}`
	if status, _, b := postMCP(t, e.url, token, body); status != http.StatusOK {
		t.Fatalf("initialize: %d %s", status, b)
	}
	var got []access.AuditEntry
	for _, en := range e.audit.Entries() {
		if en.Action == access.ActionMCPInitialize {
			got = append(got, en)
		}
	}
	if len(got) != 1 {
		t.Fatalf("%d initialize entries, want 1", len(got))
	}
	want := map[string]string{"client": "Claude Code with a name far longer than sixty-four characters, w", "client_version": "2.1"}
	if diff := cmp.Diff(want, got[0].Details); diff != "" || got[0].UserID != "bob" || got[0].Auth != access.AuthAPIKey || got[0].CredentialID == "" {
		t.Errorf("entry %+v; details mismatch (-want +got):\n%s", got[0], diff)
	}

	cs := e.MustConnect(t, token)
	call(t, cs, "search_workspace", map[string]any{"query": "signups"})
	var details []map[string]string
	for _, en := range e.audit.Entries()[1:] {
		details = append(details, map[string]string{"action": en.Action, "client": en.Details["client"]})
	}
	wantDetails := []map[string]string{{"action": access.ActionMCPInitialize, "client": "askbi-test"},
		{"action": access.ActionMCPToolCall, "client": "askbi-test"}}
	if diff := cmp.Diff(wantDetails, details); diff != "" {
		t.Errorf("a 2026-07-28 client's entries mismatch (-want +got):\n%s", diff)
	}
}
