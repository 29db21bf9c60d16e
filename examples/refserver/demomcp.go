package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/askbi/askbi"
	"github.com/askbi/askbi/access"
	"github.com/askbi/askbi/connections"
	"github.com/askbi/askbi/httpserve"
	"github.com/askbi/askbi/workspace"
)

// The demo's remote MCP connection: a small analytics MCP server (go-sdk,
// stateless Streamable HTTP, bearer token) that the reference server runs
// on its own loopback listener, so the connection works with no setup. It
// plays a third-party server: askbi reaches it only as a remote
// connection, through the outbound policy, like any other.
const (
	demoMCPConn    = "conn_acme_analytics"
	demoMCPName    = "Acme analytics"
	demoTopPagesDS = "ds_top_pages"
)

// demoMCP is the running demo server.
type demoMCP struct {
	URL   string
	Token string
	srv   *http.Server
}

func ro() *mcp.ToolAnnotations { return &mcp.ToolAnnotations{ReadOnlyHint: true} }

// startDemoMCP starts the analytics server on 127.0.0.1, on a free port,
// accepting token.
func startDemoMCP(token string) (*demoMCP, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	d := &demoMCP{URL: "http://" + ln.Addr().String() + "/mcp", Token: token}
	s := mcp.NewServer(&mcp.Implementation{Name: "acme-analytics", Version: "1.0.0"}, nil)
	days := json.RawMessage(`{"type":"object","properties":{"days":{"type":"integer","minimum":1,"maximum":90,"description":"Look-back window in days."}},"additionalProperties":false}`)
	structured := func(v any) *mcp.CallToolResult {
		b, _ := json.Marshal(v)
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: string(b)}}, StructuredContent: v}
	}
	window := func(req *mcp.CallToolRequest) int {
		var a struct{ Days int }
		json.Unmarshal(req.Params.Arguments, &a)
		if a.Days <= 0 {
			a.Days = 28
		}
		return a.Days
	}
	s.AddTool(&mcp.Tool{Name: "top_pages", Annotations: ro(), InputSchema: days,
		Description: "Most visited pages as tuples [page, [visitors, signups]], most visitors first."},
		func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			n := window(req)
			rows := []any{}
			for i, p := range []string{"/pricing", "/docs/getting-started", "/blog/ai-dashboards", "/", "/integrations"} {
				rows = append(rows, []any{p, []any{(5 - i) * 43 * n, (5 - i) * n / 2}})
			}
			return structured(map[string]any{"rows": rows}), nil
		})
	s.AddTool(&mcp.Tool{Name: "weekly_active_users", Annotations: ro(), InputSchema: days,
		Description: "Weekly active users, one row per ISO week: {week, users}."},
		func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			rows := []any{}
			start := time.Date(2026, 9, 7, 0, 0, 0, 0, time.UTC)
			for i := range max(window(req)/7, 1) {
				rows = append(rows, map[string]any{"week": start.AddDate(0, 0, 7*i).Format("2006-01-02"), "users": 800 + 37*i + (i%3)*18})
			}
			return structured(map[string]any{"rows": rows}), nil
		})
	s.AddTool(&mcp.Tool{Name: "traffic_summary", Annotations: ro(), InputSchema: days,
		Description: "A one-paragraph summary of traffic, as prose."},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "Traffic rose 12% over the window, led by search and the pricing page."}}}, nil
		})
	s.AddTool(&mcp.Tool{Name: "create_annotation", Annotations: &mcp.ToolAnnotations{DestructiveHint: new(false)},
		InputSchema: json.RawMessage(`{"type":"object","properties":{"date":{"type":"string"},"text":{"type":"string","maxLength":200}},"required":["text"],"additionalProperties":false}`),
		Description: "Adds an annotation to the analytics timeline."},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return structured(map[string]any{"created": true}), nil
		})
	s.AddTool(&mcp.Tool{Name: "delete_project_data", Annotations: &mcp.ToolAnnotations{DestructiveHint: new(true)},
		InputSchema: json.RawMessage(`{"type":"object","properties":{"confirm":{"type":"boolean"}}}`),
		Description: "Deletes every event of the project."},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: "refused in the demo"}}}, nil
		})
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, &mcp.StreamableHTTPOptions{Stateless: true})
	mux := http.NewServeMux()
	mux.Handle("/mcp", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer "+d.Token {
			w.Header().Set("WWW-Authenticate", `Bearer realm="acme-analytics"`)
			http.Error(w, "invalid token", http.StatusUnauthorized)
			return
		}
		h.ServeHTTP(w, r)
	}))
	d.srv = httpserve.NewServer(mux, nil)
	go d.srv.Serve(ln)
	return d, nil
}

func (d *demoMCP) close() error {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	return d.srv.Shutdown(ctx)
}

// seedDemoConnection makes sure Acme's analytics connection reaches a
// demo server, as alice. The first start on a database creates it,
// discovers its tools and allows the read-only and mutating ones (the
// destructive one stays blocked). A later start, or one beside it on the
// same database, keeps it as it stands, the tools users allowed or
// turned off included, while its server answers: every instance's demo
// server accepts the one token claimed for the database (see
// demoCreds). Only when it does not answer (its instance has stopped) is
// it pointed at this instance's server.
func seedDemoConnection(ctx context.Context, svc *connections.Service, creds connections.Credentials, gate *access.Gate, d *demoMCP) error {
	alice, err := gate.Begin(ctx, access.Principal{UserID: "alice", TeamID: teamAcme, Auth: access.AuthSession})
	if err != nil {
		return err
	}
	_, err = svc.Get(ctx, alice, demoMCPConn)
	if askbi.ErrorCode(err) == askbi.NotFound {
		c, err := svc.Create(ctx, alice, connections.Input{ID: demoMCPConn, Name: demoMCPName, URL: d.URL, Token: d.Token})
		if askbi.ErrorCode(err) == askbi.Conflict {
			if _, gerr := svc.Get(ctx, alice, demoMCPConn); gerr == nil {
				return nil // another instance created it just now, and seeds it
			}
		}
		if err != nil {
			return err
		}
		if _, err := svc.Discover(ctx, alice, c.ID, nil, creds); err != nil {
			return fmt.Errorf("discover the demo MCP server: %w", err)
		}
		for _, t := range []string{"top_pages", "weekly_active_users", "traffic_summary", "create_annotation"} {
			if _, err := svc.SetAccess(ctx, alice, c.ID, t, true); err != nil {
				return err
			}
		}
		return nil
	}
	if err != nil {
		return err
	}
	if _, err := svc.Discover(ctx, alice, demoMCPConn, nil, creds); err == nil {
		return nil
	}
	if _, err := svc.Update(ctx, alice, demoMCPConn, connections.Patch{URL: &d.URL, Token: &d.Token}); err != nil {
		return err
	}
	if _, err := svc.Discover(ctx, alice, demoMCPConn, nil, creds); err != nil {
		return fmt.Errorf("discover the demo MCP server: %w", err)
	}
	return nil
}

// demoMCPDataset is the Acme dataset and chart on the top_pages tool: its
// tuples need field paths.
func demoMCPDataset(at time.Time) (workspace.Dataset, workspace.Chart) {
	fields := workspace.Fields{{Name: "page", Path: []string{"column_0"}}, {Name: "visitors", Path: []string{"column_1", "0"}},
		{Name: "signups", Path: []string{"column_1", "1"}}}
	return workspace.Dataset{ID: demoTopPagesDS, TeamID: teamAcme, ProjectID: projGrowth, Name: "Top pages", Version: 1,
			Request:   workspace.Request{ConnectionID: demoMCPConn, Tool: "top_pages", Arguments: json.RawMessage(`{"days":28}`), Fields: fields},
			CreatedAt: at, UpdatedAt: at},
		workspace.Chart{ID: "chart_top_pages", TeamID: teamAcme, ProjectID: projGrowth, DashboardID: "dash_growth",
			Name: "Top pages", Type: workspace.ChartBar, DatasetID: demoTopPagesDS, XField: "page", YFields: []string{"visitors"},
			CreatedAt: at, UpdatedAt: at}
}
