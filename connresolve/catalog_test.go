package connresolve_test

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/askbi/askbi/access"
	"github.com/askbi/askbi/connections"
	"github.com/askbi/askbi/connresolve"
	"github.com/askbi/askbi/workspace"
)

// usable is a fixed list of usable remote connections, whoever asks.
type usable []connections.Connection

func (u usable) Usable(context.Context, access.Principal) ([]connections.Connection, error) {
	return u, nil
}

func (usable) AwaitingTools(context.Context, access.Principal) ([]connections.Connection, error) {
	return nil, nil
}

// TestCatalogConnections: the catalog's native connections of the
// principal's team come with their native source's provider and
// capabilities (ready when active, none for an unknown type), and the
// usable remote MCP connections once each, as MCPConnections gives them
// (with their verified provider's capabilities), never as their catalog
// row (the order is the catalog's, so it is not compared).
func TestCatalogConnections(t *testing.T) {
	catalog := workspace.NewMemoryCatalog()
	for _, c := range []workspace.Connection{
		{ID: "conn_wh", TeamID: "acme", Name: "Warehouse", Type: "postgres", Active: true},
		{ID: "conn_old", TeamID: "acme", Name: "Old shop", Type: "mysql"},
		{ID: "conn_odd", TeamID: "acme", Name: "Spreadsheet", Type: "sheets", Active: true},
		{ID: "conn_globex", TeamID: "globex", Name: "Globex warehouse", Type: "postgres", Active: true},
		// The remote connection's own catalog row: left out, counted once.
		{ID: "conn_mcp", TeamID: "acme", Name: "Site analytics", Type: "mcp", Active: true},
	} {
		catalog.PutConnection(c)
	}
	remote := usable{{ID: "conn_mcp", TeamID: "acme", Name: "Site analytics", Provider: "PostHog", Active: true}}
	natives := []connresolve.NativeSource{
		{Type: "postgres", Providers: []string{"postgresql", "postgres"}, Capabilities: []connresolve.Capability{connresolve.Database}},
		{Type: "mysql", Providers: []string{"mysql"}, Capabilities: []connresolve.Capability{connresolve.Database}},
	}
	verified := []connresolve.Provider{{Name: "PostHog", Capabilities: []connresolve.Capability{connresolve.WebAnalytics}}}
	conns := connresolve.CatalogConnections{Catalog: catalog, Remote: remote, Natives: natives, Verified: verified}
	got, err := conns.Connections(t.Context(), live(t, "alice"))
	if err != nil {
		t.Fatal(err)
	}
	want := []connresolve.Connected{
		{ID: "conn_old", Name: "Old shop", Type: "mysql", TeamID: "acme", Provider: "mysql", Capabilities: []connresolve.Capability{connresolve.Database}},
		{ID: "conn_odd", Name: "Spreadsheet", Type: "sheets", TeamID: "acme", Ready: true},
		{ID: "conn_wh", Name: "Warehouse", Type: "postgres", TeamID: "acme", Provider: "postgresql", Capabilities: []connresolve.Capability{connresolve.Database}, Ready: true},
		{ID: "conn_mcp", Name: "Site analytics", Type: "mcp", TeamID: "acme", Provider: "posthog", Capabilities: []connresolve.Capability{connresolve.WebAnalytics}, Ready: true},
	}
	byID := cmpopts.SortSlices(func(a, b connresolve.Connected) bool { return a.ID < b.ID })
	if diff := cmp.Diff(want, got, byID); diff != "" {
		t.Errorf("Connections mismatch (-want +got):\n%s", diff)
	}
}
