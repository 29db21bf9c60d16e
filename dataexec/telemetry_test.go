package dataexec_test

import (
	"context"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/askbi/askbi"
	"github.com/askbi/askbi/access"
	"github.com/askbi/askbi/dataexec"
	"github.com/askbi/askbi/telemetry"
)

// TestQuerySpans: each data request of the executor is a span that says
// the source's kind, how the cache served it (miss, hit, refresh, the
// last good result after a failure), its rows and bytes, and the error
// code of a failure; never the SQL, the variables or any value.
func TestQuerySpans(t *testing.T) {
	spans := tracetest.NewInMemoryExporter()
	tel := telemetry.New(&telemetry.Options{TracerProvider: sdktrace.NewTracerProvider(sdktrace.WithSyncer(spans))})
	e := newEnv(t, &dataexec.Options{Telemetry: tel})
	ctx := context.Background()
	alice := access.Principal{UserID: "alice", TeamID: "acme", Auth: access.AuthSession}
	vars := dataexec.Params{Variables: map[string]any{"plan": "enterprise-secret-plan"}}
	for _, p := range []dataexec.Params{vars, vars, {Variables: vars.Variables, Refresh: true}} {
		if _, err := e.exec.RunDataset(ctx, alice, "signups", p); err != nil {
			t.Fatal(err)
		}
	}
	e.src.Fail(askbi.Errorf(askbi.Unavailable, "down"))
	if _, err := e.exec.RunDataset(ctx, alice, "signups", dataexec.Params{Variables: vars.Variables, Refresh: true}); err != nil {
		t.Fatal(err) // the last good result
	}
	if _, err := e.exec.RunDataset(ctx, alice, "signups", dataexec.Params{Variables: map[string]any{"plan": "free"}}); askbi.ErrorCode(err) != askbi.Unavailable {
		t.Fatalf("a miss on a failing source: %v", err)
	}
	type seen struct{ Name, Cache, Error string }
	var got []seen
	for _, s := range spans.GetSpans() {
		m := map[string]any{}
		for _, kv := range s.Attributes {
			m[string(kv.Key)] = kv.Value.AsInterface()
			if v := kv.Value.Emit(); strings.Contains(v, "SELECT") || strings.Contains(v, "secret") {
				t.Errorf("span %s attribute %s = %q: a query or a value", s.Name, kv.Key, v)
			}
		}
		if m["askbi.source.kind"] != "postgres" {
			t.Errorf("span %s: source kind %v", s.Name, m["askbi.source.kind"])
		}
		if m["askbi.cache.result"] != nil && m["askbi.data.rows"] != int64(4) {
			t.Errorf("span %s: rows %v, want 4", s.Name, m["askbi.data.rows"])
		}
		c, _ := m["askbi.cache.result"].(string)
		e, _ := m["error.type"].(string)
		got = append(got, seen{s.Name, c, e})
	}
	want := []seen{{"askbi.data.run postgres", "miss", ""}, {"askbi.data.run postgres", "hit", ""}, {"askbi.data.run postgres", "refresh", ""},
		{"askbi.data.run postgres", "stale", ""}, {"askbi.data.run postgres", "", "unavailable"}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("spans mismatch (-want +got):\n%s", diff)
	}
}
