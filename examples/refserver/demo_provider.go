package main

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"net/http"
	"slices"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/askbi/askbi/access"
	"github.com/askbi/askbi/connresolve"
	"github.com/askbi/askbi/internal/oauthfake"
)

// The demo's connection resolution. The reference server has installed
// two native source types (PostgreSQL, which the demo warehouses use,
// and MySQL, which no team has connected), the verified catalog
// (PostHog) plus a demo provider, "Demo Analytics": a second analytics
// MCP server on loopback behind an OAuth authorization server of its own
// (package oauthfake: it approves at once, standing in for a provider's
// sign-in page), so the whole OAuth setup works offline. A missing
// provider resolves to each state:
//
//	PostgreSQL (or database data)  connected: Acme warehouse
//	Acme analytics                 connected: the demo's bearer-token MCP connection
//	MySQL                          native_setup
//	PostHog, Demo Analytics        mcp_oauth_setup (PostHog needs the internet to finish)
//	Plausible (any unknown name)   manual_mcp_setup
//	any of these, as bob or vic    admin_required
//	error_tracking data            unsupported
var demoNatives = []connresolve.NativeSource{
	{Type: "postgres", Name: "PostgreSQL", Providers: []string{"postgresql", "postgres", "supabase"},
		Capabilities: []connresolve.Capability{connresolve.Database}},
	{Type: "mysql", Name: "MySQL", Providers: []string{"mysql", "mariadb"}, Capabilities: []connresolve.Capability{connresolve.Database}},
}

const demoProviderName = "Demo Analytics"

// demoProvider is the demo OAuth provider's catalog entry.
func demoProvider(mcpURL string) connresolve.Provider {
	return connresolve.Provider{Name: demoProviderName, Aliases: []string{"demo analytics", "demo"},
		Capabilities: []connresolve.Capability{connresolve.WebAnalytics}, MCPURL: mcpURL, OAuth: true,
		Notes: "The demo provider signs you in at once; its tools start off until you allow them."}
}

// startDemoProvider runs Demo Analytics: an MCP server with two read-only
// tools and a mutating one, behind OAuth.
func startDemoProvider() (*oauthfake.Server, error) {
	s := mcp.NewServer(&mcp.Implementation{Name: "demo-analytics", Version: "1.0.0"}, nil)
	structured := func(v any) *mcp.CallToolResult {
		b, _ := json.Marshal(v)
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: string(b)}}, StructuredContent: v}
	}
	weeks := json.RawMessage(`{"type":"object","properties":{"weeks":{"type":"integer","minimum":1,"maximum":52}},"additionalProperties":false}`)
	s.AddTool(&mcp.Tool{Name: "pageviews_by_week", Annotations: ro(), InputSchema: weeks, Description: "Pageviews per ISO week: {week, pageviews}."},
		func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			var a struct{ Weeks int }
			json.Unmarshal(req.Params.Arguments, &a)
			if a.Weeks <= 0 {
				a.Weeks = 8
			}
			rows := []any{}
			start := time.Date(2026, 9, 7, 0, 0, 0, 0, time.UTC)
			for i := range a.Weeks {
				rows = append(rows, map[string]any{"week": start.AddDate(0, 0, 7*i).Format("2006-01-02"), "pageviews": 4200 + 310*i + (i%3)*120})
			}
			return structured(map[string]any{"rows": rows}), nil
		})
	s.AddTool(&mcp.Tool{Name: "top_referrers", Annotations: ro(), InputSchema: json.RawMessage(`{"type":"object"}`),
		Description: "Referring sites by visits: {referrer, visits}."},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return structured(map[string]any{"rows": []any{map[string]any{"referrer": "google.com", "visits": 1840},
				map[string]any{"referrer": "news.ycombinator.com", "visits": 730}, map[string]any{"referrer": "github.com", "visits": 512}}}), nil
		})
	s.AddTool(&mcp.Tool{Name: "create_goal", Annotations: &mcp.ToolAnnotations{DestructiveHint: new(false)},
		InputSchema: json.RawMessage(`{"type":"object","properties":{"name":{"type":"string","maxLength":80}},"required":["name"]}`),
		Description: "Creates a conversion goal."},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return structured(map[string]any{"created": true}), nil
		})
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, &mcp.StreamableHTTPOptions{Stateless: true})
	return oauthfake.New(h, &oauthfake.Options{Name: demoProviderName, Scopes: []string{"analytics:read"}})
}

// demoConnectionTypes are demoNatives for the catalog's connections:
// the built-in demo rows (type "demo", without PostgreSQL) stand in for
// the PostgreSQL warehouse.
var demoConnectionTypes = append([]connresolve.NativeSource{{Type: "demo", Providers: demoNatives[0].Providers,
	Capabilities: demoNatives[0].Capabilities}}, demoNatives...)

// demoParts are the demo's MCP servers, kept for the tests.
type demoParts struct {
	demoMCP *demoMCP
	// demoOAuth is Demo Analytics, the demo's OAuth provider.
	demoOAuth *oauthfake.Server
}

// startDemo starts the demo's MCP servers: the analytics server with its
// bearer token kept in creds, set up as Acme's remote connection (unless
// -deny-loopback), and Demo Analytics behind OAuth. It returns the
// verified providers, Demo Analytics among them.
func (a *app) startDemo(ctx context.Context, cfg config, creds demoCreds, gate *access.Gate) ([]connresolve.Provider, error) {
	token, err := creds.secret(ctx, "analytics-mcp-token", func(string) bool { return true },
		func() (string, error) { return "demo-" + rand.Text(), nil }, func(string) {})
	if err != nil {
		return nil, err
	}
	if a.demoMCP, err = startDemoMCP(token); err != nil {
		return nil, err
	}
	a.closers = append(a.closers, a.demoMCP.close)
	if cfg.denyLoopback {
		a.log.Warn("-deny-loopback: the demo MCP servers listen on loopback, which is refused: the demo connection is not set up and Demo Analytics cannot be connected")
	} else if err := seedDemoConnection(ctx, a.conns, a.signin, gate, a.demoMCP); err != nil {
		return nil, err
	}
	a.creds.AnalyticsMCP = &mcpCredentials{URL: a.demoMCP.URL, Token: a.demoMCP.Token}
	if a.demoOAuth, err = startDemoProvider(); err != nil {
		return nil, err
	}
	a.closers = append(a.closers, a.demoOAuth.Close)
	a.creds.DemoOAuthMCP = &mcpCredentials{URL: a.demoOAuth.MCPURL}
	verified := append(slices.Clone(connresolve.Verified), demoProvider(a.demoOAuth.MCPURL))
	return verified, nil
}
