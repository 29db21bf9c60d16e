package connresolve_test

import (
	"context"
	"fmt"
	"strings"

	"github.com/askbi/askbi/access"
	"github.com/askbi/askbi/connresolve"
)

// The host lists its connections (here one ready warehouse) and the
// native source types it has installed; the verified catalog is the
// package's. A missing provider resolves to its shortest safe setup.
func Example() {
	dir := access.NewMemoryDirectory()
	dir.SetMember("acme", "alice", access.RoleOwner, access.AllProjects())
	alice, _ := access.NewGate(access.NewChecker(dir, nil), nil).Begin(context.Background(),
		access.Principal{UserID: "alice", TeamID: "acme", Auth: access.AuthSession})

	conns := conns{{ID: "wh", TeamID: "acme", Name: "Warehouse", Type: "postgres", Provider: "postgresql",
		Capabilities: []connresolve.Capability{connresolve.Database}, Ready: true}}
	natives := []connresolve.NativeSource{{Type: "mysql", Name: "MySQL", Providers: []string{"mysql"},
		Capabilities: []connresolve.Capability{connresolve.Database}}}
	r := connresolve.NewResolver(conns, natives, nil)
	for _, req := range []connresolve.Request{
		{Capability: connresolve.Database},
		{Provider: "MySQL"},
		{Provider: "PostHog", Capability: connresolve.ProductAnalytics},
		{Provider: "Plausible"},
		{Capability: connresolve.ErrorTracking},
	} {
		opts, _ := r.Resolve(context.Background(), alice, req)
		fmt.Println(strings.TrimSpace(fmt.Sprint(opts[0].State, " ", opts[0].Provider, " ", opts[0].MCPURL)))
	}
	// Output:
	// connected Warehouse
	// native_setup MySQL
	// mcp_oauth_setup PostHog https://mcp.posthog.com/mcp
	// manual_mcp_setup Plausible
	// unsupported
}
