package connhttp_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/askbi/askbi/connections"
	"github.com/askbi/askbi/internal/chattest"
)

// newRemote serves n read-only tools (every fourth mutating, the last
// destructive) over Streamable HTTP, requiring token.
func newRemote(t *testing.T, n int, token string) string {
	t.Helper()
	s := mcp.NewServer(&mcp.Implementation{Name: "remote", Version: "1"}, nil)
	for i := range n {
		ann := &mcp.ToolAnnotations{ReadOnlyHint: true}
		switch {
		case i == n-1:
			ann = &mcp.ToolAnnotations{DestructiveHint: new(true)}
		case i%4 == 3:
			ann = &mcp.ToolAnnotations{DestructiveHint: new(false)}
		}
		s.AddTool(&mcp.Tool{Name: fmt.Sprintf("tool_%02d", i), Description: fmt.Sprintf("Report %d.", i), Annotations: ann,
			InputSchema: json.RawMessage(`{"type":"object"}`)},
			func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
				return &mcp.CallToolResult{}, nil
			})
	}
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, &mcp.StreamableHTTPOptions{Stateless: true})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer "+token {
			http.Error(w, "Traceback (most recent call last): secret.py", http.StatusUnauthorized)
			return
		}
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	return srv.URL + "/mcp"
}

func TestConnectionRoutes(t *testing.T) {
	ts := MustServer(t, nil)
	const secret = "remote-secret-token-42"
	url := newRemote(t, 23, secret)
	alice, bob, vic := token("alice"), token("bob"), token("vic")
	var bodies []string
	do := func(want int, method, path, tok string, body, out any) {
		t.Helper()
		status, _, b := ts.Do(t, method, path, tok, body)
		bodies = append(bodies, string(b))
		if status != want {
			t.Fatalf("%s %s: status %d, want %d; body %s", method, path, status, want, b)
		}
		if out != nil {
			if err := json.Unmarshal(b, out); err != nil {
				t.Fatal(err)
			}
		}
	}
	var created struct{ Connection connections.Connection }
	do(http.StatusCreated, "POST", "/ai/connections", alice, map[string]any{"name": "Analytics", "url": url, "token": secret}, &created)
	id := created.Connection.ID
	if !created.Connection.HasToken || created.Connection.Active {
		t.Errorf("created = %+v; want has_token, inactive until discovery", created.Connection)
	}
	// Bad input: each a clear code, nothing created.
	for _, tc := range []struct {
		body any
		want int
	}{
		{map[string]any{"name": "x", "url": "https://u:p@mcp.example.com/"}, 400},
		{map[string]any{"name": "x", "url": "gopher://mcp.example.com/"}, 400},
		{map[string]any{"name": "x", "url": "http://169.254.169.254/"}, 400},
		{map[string]any{"name": "x", "url": "https://mcp.example.com/mcp?token=" + secret}, 400},
		{map[string]any{"name": "x", "url": "https://mcp.example.com/", "auth": "basic"}, 400},
		{map[string]any{"name": "x", "url": "https://mcp.example.com/", "extra": 1}, 400},
		{map[string]any{"name": "analytics", "url": "https://mcp.example.com/"}, 409},
	} {
		status, _, b := ts.Do(t, "POST", "/ai/connections", alice, tc.body)
		e := chattest.MustError(t, b)
		if status != tc.want || strings.Contains(e.Message, secret) {
			t.Errorf("POST %v = %d %s; want %d without the secret", tc.body, status, b, tc.want)
		}
	}
	do(http.StatusForbidden, "POST", "/ai/connections", bob, map[string]any{"name": "x", "url": "https://mcp.example.com/"}, nil)
	var list struct {
		Connections []connections.Connection
		CanManage   bool `json:"can_manage"`
	}
	do(http.StatusOK, "GET", "/ai/connections", vic, nil, &list)
	if len(list.Connections) != 1 || list.CanManage {
		t.Fatalf("a viewer's list = %+v; want the one, can_manage false", list)
	}
	do(http.StatusOK, "GET", "/ai/connections", alice, nil, &list)
	if !list.CanManage {
		t.Errorf("an owner's list = %+v; want can_manage", list)
	}

	do(http.StatusOK, "POST", "/ai/connections/"+id+"/discover", alice, nil, &created)
	if !created.Connection.Active || created.Connection.Discovery.Tools != 23 {
		t.Errorf("after discovery: %+v", created.Connection)
	}
	var page connections.ToolPage
	do(http.StatusOK, "GET", "/ai/connections/"+id+"/tools?page=3", alice, nil, &page)
	if page.Total != 23 || page.Pages != 3 || len(page.Tools) != 3 || page.Tools[0].Name != "tool_20" || !page.CanApprove {
		t.Errorf("page 3 = %+v", page)
	}
	do(http.StatusOK, "GET", "/ai/connections/"+id+"/tools?hint=mutating&search=report", alice, nil, &page)
	if page.Total != 5 || page.Tools[0].Name != "tool_03" {
		t.Errorf("mutating tools = %+v; want 5 from tool_03", page)
	}
	do(http.StatusBadRequest, "GET", "/ai/connections/"+id+"/tools?hint=safe", alice, nil, nil)

	// Access: admins only; the model has no route here.
	do(http.StatusForbidden, "PUT", "/ai/connections/"+id+"/tools/tool_00/access", bob, map[string]any{"allowed": true}, nil)
	do(http.StatusOK, "GET", "/ai/connections/"+id+"/tools", vic, nil, &page)
	if page.CanApprove || page.Tools[0].Action != "ask_admin" {
		t.Errorf("a viewer's page = %+v; want ask_admin", page.Tools[0])
	}
	var tv struct{ Tool connections.ToolView }
	do(http.StatusOK, "PUT", "/ai/connections/"+id+"/tools/tool_00/access", alice, map[string]any{"allowed": true}, &tv)
	if tv.Tool.State != connections.ToolAllowed {
		t.Errorf("tool_00 = %+v; want allowed", tv.Tool)
	}
	do(http.StatusConflict, "PUT", "/ai/connections/"+id+"/tools/tool_22/access", alice, map[string]any{"allowed": true}, nil)
	do(http.StatusNotFound, "PUT", "/ai/connections/"+id+"/tools/nope/access", alice, map[string]any{"allowed": true}, nil)
	do(http.StatusBadRequest, "PUT", "/ai/connections/"+id+"/tools/tool_01/access", alice, map[string]any{}, nil)
	var all connections.AllowAllResult
	do(http.StatusOK, "POST", "/ai/connections/"+id+"/tools/allow-all", alice, nil, &all)
	if all.Allowed != 21 || all.Skipped != 1 {
		t.Errorf("allow all = %+v; want 21 allowed (tool_00 already), the destructive one skipped", all)
	}

	// A bad token: a clear error, the tools and approvals stay.
	do(http.StatusOK, "PATCH", "/ai/connections/"+id, alice, map[string]any{"token": "wrong"}, nil)
	status, _, b := ts.Do(t, "POST", "/ai/connections/"+id+"/discover", alice, nil)
	if e := chattest.MustError(t, b); status != http.StatusForbidden || strings.Contains(string(b), "Traceback") || strings.Contains(string(b), "secret.py") {
		t.Errorf("discover with a bad token = %d %+v; want 403 without the remote body", status, e)
	}
	do(http.StatusOK, "GET", "/ai/connections/"+id+"/tools?page=1", alice, nil, &page)
	if page.Tools[0].State != connections.ToolAllowed {
		t.Errorf("after a failed discovery tool_00 is %s; want allowed", page.Tools[0].State)
	}
	// Another team sees nothing.
	do(http.StatusNotFound, "GET", "/ai/connections/"+id, token("carol"), nil, nil)
	do(http.StatusNoContent, "DELETE", "/ai/connections/"+id, alice, nil, nil)
	do(http.StatusNotFound, "GET", "/ai/connections/"+id, alice, nil, nil)

	for _, b := range bodies {
		if strings.Contains(b, secret) {
			t.Fatalf("a response holds the token: %s", b)
		}
	}
	if ts.auditCount("connection.create", "ok") != 1 || ts.auditCount("connection.delete", "ok") != 1 || ts.auditCount("connection.update", "ok") != 1 {
		t.Error("the connection changes were not audited")
	}
}

// TestUnknownRoutesAnswerJSON: a path under the prefix that does not
// exist answers 404, a method a route does not take 405 with its Allow,
// both as the JSON error body, after authentication.
func TestUnknownRoutesAnswerJSON(t *testing.T) {
	ts := MustServer(t, nil)
	for _, tc := range []struct {
		method, path string
		status       int
		allow        string
	}{
		{"GET", "/ai/connections/x/nope", 404, ""},
		{"POST", "/ai/connections/x/oauth/nope", 404, ""},
		// Not connection IDs.
		{"DELETE", "/ai/connections/setup", 405, "GET"},
		{"POST", "/ai/connections/setup", 405, "GET"},
		{"GET", "/ai/connections/connect", 405, "POST"},
		{"PUT", "/ai/connections/connect", 405, "POST"},
		{"PUT", "/ai/connections", 405, "GET, POST"},
	} {
		t.Run(tc.method+" "+tc.path, func(t *testing.T) {
			status, h, b := ts.Do(t, tc.method, tc.path, token("alice"), nil)
			if status != tc.status || !strings.HasPrefix(h.Get("Content-Type"), "application/json") || h.Get("Allow") != tc.allow {
				t.Fatalf("%d, Content-Type %q, Allow %q, body %s; want %d with Allow %q", status, h.Get("Content-Type"), h.Get("Allow"), b, tc.status, tc.allow)
			}
			chattest.MustError(t, b)
			// Without a credential the routes cannot be mapped.
			if status, _, _ := ts.Do(t, tc.method, tc.path, "", nil); status != http.StatusUnauthorized {
				t.Errorf("without a credential: %d; want 401", status)
			}
		})
	}
}
