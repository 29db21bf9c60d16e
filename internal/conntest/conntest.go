// Package conntest is the test bed of the connection packages
// (connections, connections/signin, connections/remote) and of those
// built on them: the three over in-memory state for one team acme
// (alice owner, eve editor, vic viewer, ada admin) and another, globex
// (carol owner); a remote MCP server whose tools a test changes
// (Remote); and an OAuth provider in front of one ([OAuthEnv]).
package conntest

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/askbi/askbi/access"
	"github.com/askbi/askbi/connections"
	"github.com/askbi/askbi/connections/remote"
	"github.com/askbi/askbi/connections/signin"
	"github.com/askbi/askbi/internal/oauthfake"
	"github.com/askbi/askbi/seal"
	"github.com/askbi/askbi/workspace"
)

// Env is the connection service, its sign-in and its remote tools over
// in-memory state.
type Env struct {
	Conns   *connections.Service
	SignIn  *signin.Service
	Tools   *remote.Tools
	Store   *connections.MemoryStore
	Catalog *workspace.MemoryCatalog
	Audit   *access.MemoryAudit
	Gate    *access.Gate
	Keys    *seal.StaticKeyring
}

// Options are the options of an Env's parts. Now, when set, is every
// part's clock; Catalog and Audit are always the Env's.
type Options struct {
	Conns  connections.Options
	SignIn signin.Options
	Tools  remote.Options
	Now    func() time.Time
}

// Principal is user of team, signed in to the product.
func Principal(team, user string) access.Principal {
	return access.Principal{UserID: user, TeamID: team, Auth: access.AuthSession}
}

// The members of the test teams.
var (
	Alice = Principal("acme", "alice")
	Eve   = Principal("acme", "eve")
	Vic   = Principal("acme", "vic")
	Carol = Principal("globex", "carol")
)

// NewEnv returns an Env with opts (nil for the defaults).
func NewEnv(t *testing.T, opts *Options) *Env {
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
	e := &Env{Store: connections.NewMemoryStore(), Catalog: workspace.NewMemoryCatalog(), Audit: access.NewMemoryAudit(0), Keys: keys,
		Gate: access.NewGate(access.NewChecker(dir, nil), access.NewMemoryRateLimiter(&access.RateOptions{Rate: 1e6, Burst: 1e6}))}
	e.Conns, e.SignIn, e.Tools = e.Instance(e.Store, opts)
	return e
}

// Instance returns another connection service, sign-in and remote tools
// over store (the Env's, or one in front of it), with the Env's keys,
// gate, catalog and audit: another instance of the server, or the same
// one differently configured. opts may be nil.
func (e *Env) Instance(store connections.Store, opts *Options) (*connections.Service, *signin.Service, *remote.Tools) {
	var o Options
	if opts != nil {
		o = *opts
	}
	o.Conns.Catalog, o.Conns.Audit, o.SignIn.Audit, o.Tools.Audit = e.Catalog, e.Audit, e.Audit, e.Audit
	if o.Now != nil {
		o.Conns.Now, o.SignIn.Now, o.Tools.Now = o.Now, o.Now, o.Now
	}
	conns := connections.NewService(store, e.Keys, e.Gate, &o.Conns)
	sign := signin.New(conns, e.Keys, &o.SignIn)
	return conns, sign, remote.New(conns, sign, &o.Tools)
}

// Remote is an in-process MCP server over Streamable HTTP whose tools a
// test changes between discoveries.
type Remote struct {
	URL string
	Srv *httptest.Server
	// Mu guards the fields below it that a test changes while the
	// server runs.
	Mu    sync.Mutex
	tools []RemoteTool
	// server serves tools; made at the first request after set.
	server *mcp.Server
	// Token, when set, is the bearer token the server requires.
	Token string
	// Requests counts HTTP requests; Auths records Authorization headers.
	Requests atomic.Int64
	Auths    []string
	// Raw, when set, answers every request instead of the MCP server.
	Raw http.HandlerFunc
	// Front, when set, sees each request first and answers it when it
	// returns true.
	Front func(w http.ResponseWriter, req *http.Request) bool
	// Before, when set, sees each request body before it is served.
	Before func(body []byte)
	// callCtx is the HTTP request context of the latest tools/call: the
	// go-sdk's stateless server does not cancel a handler when its client
	// goes away, so a handler that blocks watches this.
	callCtx context.Context
}

// HTTPContext returns the HTTP request context of the latest tools/call.
func (r *Remote) HTTPContext() context.Context {
	r.Mu.Lock()
	defer r.Mu.Unlock()
	return r.callCtx
}

// RemoteTool is one tool of a Remote: its definition and its handler.
type RemoteTool struct {
	tool    *mcp.Tool
	handler mcp.ToolHandler
}

// NewRemote starts a Remote with no tools, stopped when the test ends.
func NewRemote(t *testing.T) *Remote {
	t.Helper()
	r := &Remote{}
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server {
		r.Mu.Lock()
		defer r.Mu.Unlock()
		if r.server == nil {
			r.server = mcp.NewServer(&mcp.Implementation{Name: "test-remote", Version: "1"}, nil)
			for _, rt := range r.tools {
				r.server.AddTool(rt.tool, rt.handler)
			}
		}
		return r.server
	}, &mcp.StreamableHTTPOptions{Stateless: true, JSONResponse: true})
	r.Srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		r.Requests.Add(1)
		r.Mu.Lock()
		r.Auths = append(r.Auths, req.Header.Get("Authorization"))
		token, raw, before, front := r.Token, r.Raw, r.Before, r.Front
		r.Mu.Unlock()
		if front != nil && front(w, req) {
			return
		}
		b, _ := io.ReadAll(req.Body)
		req.Body = io.NopCloser(bytes.NewReader(b))
		if bytes.Contains(b, []byte(`"tools/call"`)) {
			r.Mu.Lock()
			r.callCtx = req.Context()
			r.Mu.Unlock()
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
	t.Cleanup(r.Srv.Close)
	r.URL = r.Srv.URL + "/mcp"
	return r
}

func boolp(b bool) *bool { return &b }

// ReadOnly, Mutating and Destructive are annotations of each class.
var (
	ReadOnly    = &mcp.ToolAnnotations{ReadOnlyHint: true}
	Mutating    = &mcp.ToolAnnotations{DestructiveHint: boolp(false)}
	Destructive = &mcp.ToolAnnotations{DestructiveHint: boolp(true)}
)

// ObjectSchema is an object schema with properties props.
func ObjectSchema(props string) json.RawMessage {
	return json.RawMessage(`{"type":"object","properties":{` + props + `}}`)
}

// Answer returns a handler answering structured content v (or text when
// v is a string).
func Answer(v any) mcp.ToolHandler {
	return func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		if s, ok := v.(string); ok {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: s}}}, nil
		}
		b, _ := json.Marshal(v)
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: string(b)}}, StructuredContent: v}, nil
	}
}

// Set replaces the tools r serves.
func (r *Remote) Set(tools ...RemoteTool) {
	r.Mu.Lock()
	defer r.Mu.Unlock()
	r.tools, r.server = tools, nil
}

// Tool is a [RemoteTool] named name: schema nil is an object with an
// integer "days", handler nil answers one row of pages and visitors.
func Tool(name, desc string, ann *mcp.ToolAnnotations, schema json.RawMessage, h mcp.ToolHandler) RemoteTool {
	if schema == nil {
		schema = ObjectSchema(`"days":{"type":"integer"}`)
	}
	if h == nil {
		h = Answer(map[string]any{"rows": []any{map[string]any{"page": "/", "visitors": 3}}})
	}
	return RemoteTool{tool: &mcp.Tool{Name: name, Description: desc, Annotations: ann, InputSchema: schema}, handler: h}
}

// MustConnection creates a connection to r as alice and discovers its
// tools.
func (e *Env) MustConnection(t *testing.T, name string, r *Remote, token string) connections.Connection {
	t.Helper()
	c, err := e.Conns.Create(t.Context(), Alice, connections.Input{Name: name, URL: r.URL, Token: token})
	if err != nil {
		t.Fatalf("Create: %v", err)
	}
	if c, err = e.Conns.Discover(t.Context(), Alice, c.ID, nil, e.SignIn); err != nil {
		t.Fatalf("Discover: %v", err)
	}
	return c
}

// MustAllow allows tools of connection connID as alice.
func (e *Env) MustAllow(t *testing.T, connID string, tools ...string) {
	t.Helper()
	for _, name := range tools {
		if _, err := e.Conns.SetAccess(t.Context(), Alice, connID, name, true); err != nil {
			t.Fatalf("SetAccess(%s): %v", name, err)
		}
	}
}

// States returns each listed tool's state, by name, across all pages.
func (e *Env) States(t *testing.T, connID string) map[string]connections.ToolState {
	t.Helper()
	out := map[string]connections.ToolState{}
	for page := 1; ; page++ {
		p, err := e.Conns.Tools(t.Context(), Alice, connID, connections.ToolQuery{Page: page})
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

// MustTool returns connection connID's tool name as stored.
func (e *Env) MustTool(t *testing.T, connID, name string) connections.Tool {
	t.Helper()
	st, err := e.Store.Get(t.Context(), connID)
	if err != nil {
		t.Fatal(err)
	}
	tl, ok := st.Tool(name)
	if !ok {
		t.Fatalf("no tool %s", name)
	}
	return *tl
}

// MustGet returns connection id as alice reads it.
func (e *Env) MustGet(t *testing.T, id string) connections.Connection {
	t.Helper()
	c, err := e.Conns.Get(t.Context(), Alice, id)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// Contains reports whether s contains any of subs.
func Contains(s string, subs ...string) bool {
	for _, sub := range subs {
		if strings.Contains(s, sub) {
			return true
		}
	}
	return false
}

// CallbackURL is the OAuth redirect URL of an [OAuthEnv] (nothing listens
// there: the tests play the browser).
const CallbackURL = "http://127.0.0.1:9/ai/connections/oauth/callback"

// Clock is a settable clock.
type Clock struct {
	mu sync.Mutex
	t  time.Time
}

// NewClock returns a clock at a fixed time that is not the real one, so
// that a clock mixed up with the real one shows.
func NewClock() *Clock { return &Clock{t: time.Date(2026, 3, 2, 9, 0, 0, 0, time.UTC)} }

// Now is the clock's time.
func (c *Clock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }

// Add moves the clock on by d.
func (c *Clock) Add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

// OAuthEnv is an Env with OAuth sign-in on (its redirect URL
// [CallbackURL]), a fake provider whose MCP server has two read-only
// tools, and a settable clock.
type OAuthEnv struct {
	*Env
	Fake  *oauthfake.Server
	Clock *Clock
}

// NewOAuthEnv returns an [OAuthEnv] whose provider behaves as fo says.
func NewOAuthEnv(t *testing.T, fo *oauthfake.Options) *OAuthEnv {
	t.Helper()
	return NewOAuthEnvWrapped(t, fo, nil)
}

// NewOAuthEnvWrapped is [NewOAuthEnv] with the MCP server's handler
// wrapped (nil: as it is), behind the fake's token check.
func NewOAuthEnvWrapped(t *testing.T, fo *oauthfake.Options, wrap func(http.Handler) http.Handler) *OAuthEnv {
	t.Helper()
	s := mcp.NewServer(&mcp.Implementation{Name: "fake-analytics", Version: "1"}, nil)
	for _, name := range []string{"top_pages", "visitors"} {
		s.AddTool(&mcp.Tool{Name: name, Annotations: ReadOnly, InputSchema: ObjectSchema(`"days":{"type":"integer"}`)},
			Answer(map[string]any{"rows": []any{map[string]any{"page": "/", "visitors": 3}}}))
	}
	var h http.Handler = mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, &mcp.StreamableHTTPOptions{Stateless: true, JSONResponse: true})
	if wrap != nil {
		h = wrap(h)
	}
	fake, err := oauthfake.New(h, fo)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { fake.Close() })
	c := NewClock()
	e := NewEnv(t, &Options{Now: c.Now, SignIn: signin.Options{RedirectURL: CallbackURL}})
	return &OAuthEnv{Env: e, Fake: fake, Clock: c}
}

// Instance is [Env.Instance] with the OAuthEnv's clock and redirect URL.
func (e *OAuthEnv) Instance(store connections.Store, opts *Options) (*connections.Service, *signin.Service, *remote.Tools) {
	var o Options
	if opts != nil {
		o = *opts
	}
	o.Now, o.SignIn.RedirectURL = e.Clock.Now, CallbackURL
	return e.Env.Instance(store, &o)
}

// MustOAuthConnection creates an OAuth connection to the fake as alice.
func (e *OAuthEnv) MustOAuthConnection(t *testing.T, name string) connections.Connection {
	t.Helper()
	c, err := e.Conns.Create(t.Context(), Alice, connections.Input{Name: name, URL: e.Fake.MCPURL, Auth: connections.AuthOAuth})
	if err != nil {
		t.Fatalf("Create: %v", err)
	}
	return c
}

// Authorize plays the browser: it follows the authorization URL to the
// provider, which answers at once, and returns the callback's query.
func Authorize(t *testing.T, authURL string) url.Values {
	t.Helper()
	hc := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := hc.Get(authURL)
	if err != nil {
		t.Fatalf("authorize: %v", err)
	}
	resp.Body.Close()
	loc, err := url.Parse(resp.Header.Get("Location"))
	if err != nil || resp.StatusCode != http.StatusFound {
		t.Fatalf("authorize: %d %q", resp.StatusCode, resp.Header.Get("Location"))
	}
	if !strings.HasPrefix(loc.String(), CallbackURL) {
		t.Fatalf("redirected to %s, not the callback", loc)
	}
	return loc.Query()
}

// Callback is the callback of query q in the browser holding binding.
func Callback(q url.Values, binding string) signin.OAuthCallback {
	return signin.OAuthCallback{State: q.Get("state"), Code: q.Get("code"), Iss: q.Get("iss"), Error: q.Get("error"), Binding: binding}
}

// MustSignIn runs a whole sign-in of connection id as alice, from
// conversation conv ("" for none).
func (e *OAuthEnv) MustSignIn(t *testing.T, id, conv string) signin.OAuthResult {
	t.Helper()
	st, err := e.SignIn.StartOAuth(t.Context(), Alice, id, conv)
	if err != nil {
		t.Fatalf("StartOAuth: %v", err)
	}
	res, err := e.SignIn.CompleteOAuth(t.Context(), Callback(Authorize(t, st.AuthorizationURL), st.Binding))
	if err != nil {
		t.Fatalf("CompleteOAuth: %v", err)
	}
	return res
}
