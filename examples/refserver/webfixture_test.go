package main

// The remote MCP servers of the connection page's browser tests. The
// demo's own analytics server has five tools, one page; these give the
// page more to show: "Wide analytics" has 22 usable tools over three
// pages (every hint: read-only, mutating, destructive, unknown) and one
// that fails the schema safety checks, and it revises two definitions on
// request (a new description; a read-only tool turned mutating), so
// paging, search, the hint filter, Allow all and definition changes can
// be seen. /mcp/unusable lists only tools that fail the checks; /mcp/huge
// lists 260, more than the 250 shown without Tool focus.

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/askbi/askbi/internal/oauthfake"
)

// wideTools are Wide analytics' usable tools by class.
var wideTools = struct{ readOnly, mutating, destructive, unknown []string }{
	readOnly: []string{"active_users", "bounce_rate", "conversion_rate", "device_breakdown", "error_rates", "events_by_day",
		"feature_usage", "funnel_report", "page_views", "retention_cohorts", "revenue_by_plan", "search_terms",
		"sessions_by_country", "top_referrers"},
	mutating:    []string{"create_segment", "rename_event", "schedule_export", "tag_session"},
	destructive: []string{"delete_segment", "purge_events"},
	unknown:     []string{"run_custom_script", "sync_warehouse"},
}

// nested is an input schema nested deeper than the 10 levels the schema
// safety checks allow.
func nested(depth int) json.RawMessage {
	s := `{"type":"object"}`
	for range depth {
		s = `{"type":"object","properties":{"x":` + s + `}}`
	}
	return json.RawMessage(s)
}

func fixtureServer(revised bool) *mcp.Server {
	s := mcp.NewServer(&mcp.Implementation{Name: "wide-analytics", Version: "1.0.0"}, nil)
	days := json.RawMessage(`{"type":"object","properties":{"days":{"type":"integer","minimum":1,"maximum":90}}}`)
	empty := func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "{}"}}}, nil
	}
	add := func(name, desc string, ann *mcp.ToolAnnotations, schema json.RawMessage) {
		s.AddTool(&mcp.Tool{Name: name, Description: desc, Annotations: ann, InputSchema: schema}, empty)
	}
	for _, n := range wideTools.readOnly {
		desc, ann := "Reads "+strings.ReplaceAll(n, "_", " ")+" for a window of days.", &mcp.ToolAnnotations{ReadOnlyHint: true}
		switch {
		case revised && n == "funnel_report":
			desc = "Reads the signup funnel, step by step, for a window of days."
		case revised && n == "page_views":
			ann = &mcp.ToolAnnotations{DestructiveHint: new(false)}
		}
		add(n, desc, ann, days)
	}
	for _, n := range wideTools.mutating {
		add(n, "Changes "+strings.ReplaceAll(n, "_", " ")+".", &mcp.ToolAnnotations{DestructiveHint: new(false)}, days)
	}
	for _, n := range wideTools.destructive {
		add(n, "Deletes "+strings.ReplaceAll(n, "_", " ")+" for good.", &mcp.ToolAnnotations{DestructiveHint: new(true)}, days)
	}
	for _, n := range wideTools.unknown {
		add(n, "Runs "+strings.ReplaceAll(n, "_", " ")+" (no annotations).", nil, days)
	}
	add("legacy_import", "Imports a legacy export.", &mcp.ToolAnnotations{ReadOnlyHint: true}, nested(12))
	return s
}

// startBrowserMCP starts the fixture servers behind one bearer token and
// returns their base URL (…/mcp, …/mcp/unusable, …/mcp/huge; POST
// …/control/revise and …/control/restore switch Wide analytics'
// definitions; …/control/sign-in-down and …/control/sign-in-up make the
// demo OAuth provider's metadata too large to use, and right again).
func startBrowserMCP(t *testing.T, token string, demo *oauthfake.Server) string {
	t.Helper()
	v1, v2 := fixtureServer(false), fixtureServer(true)
	var revised atomic.Bool
	unusable := mcp.NewServer(&mcp.Implementation{Name: "unusable", Version: "1.0.0"}, nil)
	for _, n := range []string{"deep_report", "deeper_report"} {
		unusable.AddTool(&mcp.Tool{Name: n, Description: "Too deep.", Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true}, InputSchema: nested(12)},
			func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
				return &mcp.CallToolResult{}, nil
			})
	}
	huge := mcp.NewServer(&mcp.Implementation{Name: "huge", Version: "1.0.0"}, nil)
	for i := range 260 {
		huge.AddTool(&mcp.Tool{Name: fmt.Sprintf("metric_%03d", i), Description: fmt.Sprintf("Reads metric %d.", i),
			Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true}, InputSchema: json.RawMessage(`{"type":"object"}`)},
			func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
				return &mcp.CallToolResult{}, nil
			})
	}
	opts := &mcp.StreamableHTTPOptions{Stateless: true}
	mux := http.NewServeMux()
	mux.Handle("/mcp", mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server {
		if revised.Load() {
			return v2
		}
		return v1
	}, opts))
	mux.Handle("/mcp/unusable", mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return unusable }, opts))
	mux.Handle("/mcp/huge", mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return huge }, opts))
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/control/revise", "/control/restore":
			revised.Store(r.URL.Path == "/control/revise")
			w.WriteHeader(http.StatusNoContent)
			return
		case "/control/sign-in-down", "/control/sign-in-up":
			down := r.URL.Path == "/control/sign-in-down"
			demo.Set(func(o *oauthfake.Options) {
				o.Oversized = ""
				if down {
					o.Oversized = "metadata"
				}
			})
			w.WriteHeader(http.StatusNoContent)
			return
		}
		if r.Header.Get("Authorization") != "Bearer "+token {
			// What a careless server answers: the page must not show it.
			http.Error(w, "Traceback (most recent call last): auth.py line 12: invalid token", http.StatusUnauthorized)
			return
		}
		mux.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

// browserMCPEnv is what the connection page's browser tests need to know
// of the remote servers: the demo analytics server's URL and token (as
// the credentials file's analytics_mcp has them) and the fixtures'.
func browserMCPEnv(t *testing.T, ta *testApp) []string {
	const token = "wide-fixture-token"
	return []string{
		"ASKBI_ANALYTICS_MCP_URL=" + ta.creds.AnalyticsMCP.URL,
		"ASKBI_ANALYTICS_MCP_TOKEN=" + ta.creds.AnalyticsMCP.Token,
		"ASKBI_FIXTURE_MCP=" + startBrowserMCP(t, token, ta.demoOAuth),
		"ASKBI_FIXTURE_MCP_TOKEN=" + token,
	}
}
