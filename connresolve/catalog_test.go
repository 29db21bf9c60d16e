package connresolve_test

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/askbi/askbi/connresolve"
	"github.com/askbi/askbi/dataexec"
)

// TestCatalogConnections: the catalog's native connections of the
// principal's team come with their native source's provider and
// capabilities (ready when active, none for an unknown type), and the
// remote MCP connections once each, as MCPConnections gives them (with
// their verified provider's capabilities), never as their catalog row
// (the order is the catalog's, so it is not compared).
func TestCatalogConnections(t *testing.T) {
	e := newEnv(t, nil)
	for _, c := range []dataexec.Connection{
		{ID: "conn_wh", TeamID: "acme", Name: "Warehouse", Type: "postgres", Active: true},
		{ID: "conn_old", TeamID: "acme", Name: "Old shop", Type: "mysql"},
		{ID: "conn_odd", TeamID: "acme", Name: "Spreadsheet", Type: "sheets", Active: true},
		{ID: "conn_globex", TeamID: "globex", Name: "Globex warehouse", Type: "postgres", Active: true},
	} {
		e.catalog.PutConnection(c)
	}
	r := newRemote(t)
	r.set(tool("top_pages", "Top pages.", readOnly, nil, nil))
	c, err := e.svc.Create(t.Context(), alice, connresolve.Input{Name: "Site analytics", URL: r.URL, Provider: "PostHog"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.svc.Discover(t.Context(), alice, c.ID, nil); err != nil {
		t.Fatal(err)
	}
	e.mustAllow(t, c.ID, "top_pages")
	if _, err := e.catalog.Connection(t.Context(), c.ID); err != nil {
		t.Fatalf("the remote connection is not in the catalog (%v), so the test would not see it skipped", err)
	}
	natives := []connresolve.NativeSource{
		{Type: "postgres", Providers: []string{"postgresql", "postgres"}, Capabilities: []connresolve.Capability{connresolve.Database}},
		{Type: "mysql", Providers: []string{"mysql"}, Capabilities: []connresolve.Capability{connresolve.Database}},
	}
	verified := []connresolve.Provider{{Name: "PostHog", Capabilities: []connresolve.Capability{connresolve.WebAnalytics}}}
	conns := connresolve.CatalogConnections{Catalog: e.catalog, Service: e.svc, Natives: natives, Verified: verified}
	live, err := e.gate.Begin(t.Context(), alice)
	if err != nil {
		t.Fatal(err)
	}
	got, err := conns.Connections(t.Context(), live)
	if err != nil {
		t.Fatal(err)
	}
	want := []connresolve.Connected{
		{ID: "conn_old", Name: "Old shop", Type: "mysql", TeamID: "acme", Provider: "mysql", Capabilities: []connresolve.Capability{connresolve.Database}},
		{ID: "conn_odd", Name: "Spreadsheet", Type: "sheets", TeamID: "acme", Ready: true},
		{ID: "conn_wh", Name: "Warehouse", Type: "postgres", TeamID: "acme", Provider: "postgresql", Capabilities: []connresolve.Capability{connresolve.Database}, Ready: true},
		{ID: c.ID, Name: "Site analytics", Type: "mcp", TeamID: "acme", Provider: "posthog", Capabilities: []connresolve.Capability{connresolve.WebAnalytics}, Ready: true},
	}
	byID := cmpopts.SortSlices(func(a, b connresolve.Connected) bool { return a.ID < b.ID })
	if diff := cmp.Diff(want, got, byID); diff != "" {
		t.Errorf("Connections mismatch (-want +got):\n%s", diff)
	}
}
