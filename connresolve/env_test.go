package connresolve_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/askbi/askbi/access"
	"github.com/askbi/askbi/connresolve"
	"github.com/askbi/askbi/dataexec"
	"github.com/askbi/askbi/seal"
)

// env is a service over in-memory state, a team acme with alice (owner),
// eve (editor) and vic (viewer), and a team globex with carol (owner).
type env struct {
	svc     *connresolve.Service
	store   *connresolve.MemoryStore
	catalog *dataexec.MemoryCatalog
	audit   *access.MemoryAudit
	gate    *access.Gate
	keys    *seal.StaticKeyring
}

func principal(team, user string) access.Principal {
	return access.Principal{UserID: user, TeamID: team, Auth: access.AuthSession}
}

var (
	alice = principal("acme", "alice")
	eve   = principal("acme", "eve")
	vic   = principal("acme", "vic")
	carol = principal("globex", "carol")
)

func newEnv(t *testing.T, opts *connresolve.Options) *env {
	t.Helper()
	dir := access.NewMemoryDirectory()
	dir.SetMember("acme", "alice", access.RoleOwner, access.AllProjects())
	dir.SetMember("acme", "eve", access.RoleEditor, access.AllProjects())
	dir.SetMember("acme", "vic", access.RoleViewer, access.AllProjects())
	dir.SetMember("acme", "ada", access.RoleAdmin, access.AllProjects())
	dir.SetMember("globex", "carol", access.RoleOwner, access.AllProjects())
	keys, err := seal.NewStaticKeyring("k1", map[string][]byte{"k1": seal.GenerateKey()})
	if err != nil {
		t.Fatal(err)
	}
	e := &env{store: connresolve.NewMemoryStore(), catalog: dataexec.NewMemoryCatalog(), audit: access.NewMemoryAudit(0), keys: keys,
		gate: access.NewGate(access.NewChecker(dir, nil), access.NewMemoryRateLimiter(&access.RateOptions{Rate: 1e6, Burst: 1e6}))}
	var o connresolve.Options
	if opts != nil {
		o = *opts
	}
	o.Catalog, o.Audit = e.catalog, e.audit
	e.svc = connresolve.NewService(e.store, keys, e.gate, &o)
	return e
}

// remote is an in-process MCP server over Streamable HTTP whose tools a
// test changes between discoveries.
type remote struct {
	t     *testing.T
	URL   string
	srv   *httptest.Server
	mu    sync.Mutex
	tools []remoteTool
	// server serves tools; made at the first request after set.
	server *mcp.Server
	// token, when set, is the bearer token the server requires.
	token string
	// requests counts HTTP requests; auths records Authorization headers.
	requests atomic.Int64
	auths    []string
	// raw, when set, answers every request instead of the MCP server.
	raw http.HandlerFunc
	// front, when set, sees each request first and answers it when it
	// returns true.
	front func(w http.ResponseWriter, req *http.Request) bool
	// before, when set, sees each request body before it is served.
	before func(body []byte)
	// callCtx is the HTTP request context of the latest tools/call: the
	// go-sdk's stateless server does not cancel a handler when its client
	// goes away, so a handler that blocks watches this.
	callCtx context.Context
}

// httpContext returns the HTTP request context of the latest tools/call.
func (r *remote) httpContext() context.Context {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.callCtx
}

type remoteTool struct {
	tool    *mcp.Tool
	handler mcp.ToolHandler
}

func newRemote(t *testing.T) *remote {
	t.Helper()
	r := &remote{t: t}
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server {
		r.mu.Lock()
		defer r.mu.Unlock()
		if r.server == nil {
			r.server = mcp.NewServer(&mcp.Implementation{Name: "test-remote", Version: "1"}, nil)
			for _, rt := range r.tools {
				r.server.AddTool(rt.tool, rt.handler)
			}
		}
		return r.server
	}, &mcp.StreamableHTTPOptions{Stateless: true, JSONResponse: true})
	r.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		r.requests.Add(1)
		r.mu.Lock()
		r.auths = append(r.auths, req.Header.Get("Authorization"))
		token, raw, before, front := r.token, r.raw, r.before, r.front
		r.mu.Unlock()
		if front != nil && front(w, req) {
			return
		}
		b, _ := io.ReadAll(req.Body)
		req.Body = io.NopCloser(bytes.NewReader(b))
		if bytes.Contains(b, []byte(`"tools/call"`)) {
			r.mu.Lock()
			r.callCtx = req.Context()
			r.mu.Unlock()
		}
		if before != nil {
			before(b)
		}
		if raw != nil {
			raw(w, req)
			return
		}
		if token != "" && req.Header.Get("Authorization") != "Bearer "+token {
			http.Error(w, "panic: invalid token\ngoroutine 1 [running]:\nmain.auth(0xc000010000)\n\t/srv/secret/auth.go:42", http.StatusUnauthorized)
			return
		}
		h.ServeHTTP(w, req)
	}))
	t.Cleanup(r.srv.Close)
	r.URL = r.srv.URL + "/mcp"
	return r
}

func boolp(b bool) *bool { return &b }

// readOnly, mutating and destructive are annotations of each class.
var (
	readOnly    = &mcp.ToolAnnotations{ReadOnlyHint: true}
	mutating    = &mcp.ToolAnnotations{DestructiveHint: boolp(false)}
	destructive = &mcp.ToolAnnotations{DestructiveHint: boolp(true)}
)

func objectSchema(props string) json.RawMessage {
	return json.RawMessage(`{"type":"object","properties":{` + props + `}}`)
}

// answer returns a handler answering structured content v (or text when
// v is a string).
func answer(v any) mcp.ToolHandler {
	return func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		if s, ok := v.(string); ok {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: s}}}, nil
		}
		b, _ := json.Marshal(v)
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: string(b)}}, StructuredContent: v}, nil
	}
}

func (r *remote) set(tools ...remoteTool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.tools, r.server = tools, nil
}

func tool(name, desc string, ann *mcp.ToolAnnotations, schema json.RawMessage, h mcp.ToolHandler) remoteTool {
	if schema == nil {
		schema = objectSchema(`"days":{"type":"integer"}`)
	}
	if h == nil {
		h = answer(map[string]any{"rows": []any{map[string]any{"page": "/", "visitors": 3}}})
	}
	return remoteTool{tool: &mcp.Tool{Name: name, Description: desc, Annotations: ann, InputSchema: schema}, handler: h}
}

// mustConnection creates and discovers a connection to r as alice.
func (e *env) mustConnection(t *testing.T, name string, r *remote, token string) connresolve.Connection {
	t.Helper()
	c, err := e.svc.Create(t.Context(), alice, connresolve.Input{Name: name, URL: r.URL, Token: token})
	if err != nil {
		t.Fatalf("Create: %v", err)
	}
	if c, err = e.svc.Discover(t.Context(), alice, c.ID, nil); err != nil {
		t.Fatalf("Discover: %v", err)
	}
	return c
}

func (e *env) mustAllow(t *testing.T, connID string, tools ...string) {
	t.Helper()
	for _, name := range tools {
		if _, err := e.svc.SetAccess(t.Context(), alice, connID, name, true); err != nil {
			t.Fatalf("SetAccess(%s): %v", name, err)
		}
	}
}

// states returns each listed tool's state, by name, across all pages.
func (e *env) states(t *testing.T, connID string) map[string]connresolve.ToolState {
	t.Helper()
	out := map[string]connresolve.ToolState{}
	for page := 1; ; page++ {
		p, err := e.svc.Tools(t.Context(), alice, connID, connresolve.ToolQuery{Page: page})
		if err != nil {
			t.Fatalf("Tools: %v", err)
		}
		for _, v := range p.Tools {
			out[v.Name] = v.State
		}
		if page >= p.Pages {
			return out
		}
	}
}

func contains(s string, subs ...string) bool {
	for _, sub := range subs {
		if strings.Contains(s, sub) {
			return true
		}
	}
	return false
}
