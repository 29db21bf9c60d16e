package connhttp_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/askbi/askbi/access"
	"github.com/askbi/askbi/connections"
	"github.com/askbi/askbi/connresolve"
	"github.com/askbi/askbi/internal/oauthfake"
)

// newProvider is a remote MCP server behind OAuth (a fake provider).
func newProvider(t *testing.T) *oauthfake.Server {
	t.Helper()
	s := mcp.NewServer(&mcp.Implementation{Name: "demo-analytics", Version: "1"}, nil)
	s.AddTool(&mcp.Tool{Name: "pageviews", Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true}, InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{StructuredContent: map[string]any{"rows": []any{}}}, nil
		})
	fake, err := oauthfake.New(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s },
		&mcp.StreamableHTTPOptions{Stateless: true, JSONResponse: true}), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { fake.Close() })
	return fake
}

// usable is the resolver's view of the usable remote connections.
type usable struct {
	remote   connresolve.Usable
	verified []connresolve.Provider
}

func (u usable) Connections(ctx context.Context, p access.Principal) ([]connresolve.Connected, error) {
	return connresolve.MCPConnections(ctx, u.remote, p, u.verified)
}

func oauthServer(t *testing.T, fake *oauthfake.Server) *testServer {
	verified := []connresolve.Provider{{Name: "Demo Analytics", Aliases: []string{"demo analytics"},
		Capabilities: []connresolve.Capability{connresolve.WebAnalytics}, MCPURL: fake.MCPURL, OAuth: true}}
	return MustServer(t, func(c *config) {
		c.oauth = true
		c.resolver = func(remote connresolve.Usable) *connresolve.Resolver {
			return connresolve.NewResolver(usable{remote, verified}, nil, &connresolve.ResolverOptions{Verified: verified, LoopbackHTTP: true})
		}
	})
}

// browser follows an authorization URL to the provider's redirect and
// then calls the callback with the cookies given; it returns where the
// callback sends the browser.
func browser(t *testing.T, authURL string, cookies []*http.Cookie) *url.URL {
	t.Helper()
	hc := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := hc.Get(authURL)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return callbackTo(t, resp.Header.Get("Location"), cookies)
}

func callbackTo(t *testing.T, cbURL string, cookies []*http.Cookie) *url.URL {
	t.Helper()
	hc := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	req, _ := http.NewRequest("GET", cbURL, nil)
	for _, c := range cookies {
		req.AddCookie(c)
	}
	resp, err := hc.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("callback: status %d, want 303", resp.StatusCode)
	}
	loc, err := url.Parse(resp.Header.Get("Location"))
	if err != nil {
		t.Fatal(err)
	}
	return loc
}

type connectAnswer struct {
	Connection       connections.Connection
	AuthorizationURL string `json:"authorization_url"`
	Error            *struct{ Code, Message string }
}

func (ts *testServer) connect(t *testing.T, want int, tok string, body any) (connectAnswer, []*http.Cookie) {
	t.Helper()
	status, h, b := ts.Do(t, "POST", "/ai/connections/connect", tok, body)
	if status != want {
		t.Fatalf("connect: status %d, want %d: %s", status, want, b)
	}
	var out connectAnswer
	json.Unmarshal(b, &out)
	return out, (&http.Response{Header: h}).Cookies()
}

// TestSaveAndConnectRoutes: seed 000 test plan 33 to 37 over HTTP.
func TestSaveAndConnectRoutes(t *testing.T) {
	fake := newProvider(t)
	ts := oauthServer(t, fake)
	alice := token("alice")
	conv := ts.MustConversation(t, alice)

	// 35: a failed save starts nothing.
	ts.connect(t, http.StatusBadRequest, alice, map[string]any{"name": "Mine", "url": "http://169.254.169.254/mcp", "conversation_id": conv})
	ts.connect(t, http.StatusForbidden, token("vic"), map[string]any{"name": "Mine", "url": fake.MCPURL})
	ts.connect(t, http.StatusNotFound, alice, map[string]any{"name": "Mine", "url": fake.MCPURL, "conversation_id": "conv_of_someone_else"})
	// A conversation of another member of the team is not hers to
	// return to.
	ts.connect(t, http.StatusNotFound, alice, map[string]any{"name": "Mine", "url": fake.MCPURL, "conversation_id": ts.MustConversation(t, token("bob"))})
	if got := fake.Stats(); got.Registrations != 0 || got.Authorizations != 0 {
		t.Fatalf("failed saves reached the provider: %+v", got)
	}

	// 33, 34: Connect saves an inactive connection and starts sign-in in
	// the same request, with the binding cookie.
	ans, cookies := ts.connect(t, http.StatusCreated, alice, map[string]any{"provider": "Demo Analytics", "conversation_id": conv})
	c := ans.Connection
	if c.Active || c.Auth != connections.AuthOAuth || c.URL != fake.MCPURL || c.Provider != "Demo Analytics" || ans.AuthorizationURL == "" {
		t.Fatalf("connect = %+v; want an inactive OAuth connection to the catalog's endpoint and the authorization URL", ans)
	}
	if len(cookies) != 1 || !strings.HasPrefix(cookies[0].Name, "askbi_oauth_") || !cookies[0].HttpOnly ||
		cookies[0].Path != "/ai/connections/oauth/callback" || cookies[0].SameSite != http.SameSiteLaxMode {
		t.Fatalf("binding cookie %+v", cookies)
	}
	// Repeated clicks reuse the conversation's connection.
	again, cookies := ts.connect(t, http.StatusOK, alice, map[string]any{"provider": "Demo Analytics", "conversation_id": conv})
	if again.Connection.ID != c.ID {
		t.Fatalf("a second click made connection %s; want %s again", again.Connection.ID, c.ID)
	}
	var list struct{ Connections []connections.Connection }
	ts.MustDo(t, http.StatusOK, "GET", "/ai/connections", alice, nil, &list)
	if len(list.Connections) != 1 {
		t.Errorf("%d connections after two clicks; want 1", len(list.Connections))
	}

	// 36: a callback from another browser (no cookie) leaves nothing
	// active.
	hc := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := hc.Get(again.AuthorizationURL)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	cb := resp.Header.Get("Location")
	loc := callbackTo(t, cb, nil)
	if q := loc.Query(); q.Get("oauth") != "failed" || q.Get("code") != "forbidden" || q.Get("connection") != c.ID {
		t.Errorf("callback without the binding went to %s; want the connection page with oauth=failed, code=forbidden", loc)
	}
	// 37: with the binding, the callback activates the connection and
	// sends the browser to the connection page with the conversation and
	// team.
	loc = callbackTo(t, cb, cookies)
	want := url.Values{"oauth": {"connected"}, "connection": {c.ID}, "conversation": {conv}, "team": {"acme"}}
	if loc.Path != "/" || !cmp.Equal(want, loc.Query()) {
		t.Errorf("callback went to %s; want / with %v", loc, want)
	}
	var got struct{ Connection connections.Connection }
	ts.MustDo(t, http.StatusOK, "GET", "/ai/connections/"+c.ID, alice, nil, &got)
	if !got.Connection.Active || !got.Connection.HasToken || got.Connection.Discovery.Tools != 1 {
		t.Errorf("after the callback: %+v; want active and signed in", got.Connection)
	}
	// The same callback again is a replay.
	if q := callbackTo(t, cb, cookies).Query(); q.Get("code") != "conflict" {
		t.Errorf("replayed callback: %v; want code conflict", q)
	}
	// A forged state leads nowhere in particular.
	if q := callbackTo(t, ts.URL+"/ai/connections/oauth/callback?state=forged&code=x", nil).Query(); q.Get("code") != "invalid_argument" || q.Get("connection") != "" {
		t.Errorf("forged state: %v; want code invalid_argument and no connection", q)
	}
	// Signed in but with no tool approved, it is not yet connected for
	// Ask; once an admin allows a tool on the connection page, it is.
	var setup struct{ Setup connresolve.Setup }
	ts.MustDo(t, http.StatusOK, "GET", "/ai/connections/setup?provider=Demo+Analytics&capability=web_analytics", alice, nil, &setup)
	if !setup.Setup.NeedsSetup {
		t.Errorf("setup before any tool is approved: %+v; want still setup needed", setup.Setup)
	}
	ts.MustDo(t, http.StatusOK, "PUT", "/ai/connections/"+c.ID+"/tools/pageviews/access", alice, map[string]any{"allowed": true}, nil)
	ts.MustDo(t, http.StatusOK, "GET", "/ai/connections/setup?provider=Demo+Analytics&capability=web_analytics", alice, nil, &setup)
	if setup.Setup.NeedsSetup || setup.Setup.Options[0].State != connresolve.StateConnected {
		t.Errorf("setup after connecting and approving: %+v", setup.Setup)
	}
}

// TestFailedStartAllowsRetry: seed 000 test plan 35, its second half.
func TestFailedStartAllowsRetry(t *testing.T) {
	fake := newProvider(t)
	ts := oauthServer(t, fake)
	alice := token("alice")
	fake.Set(func(o *oauthfake.Options) { o.MetadataIssuer = "https://evil.example.com" })
	ans, cookies := ts.connect(t, http.StatusCreated, alice, map[string]any{"name": "Mine", "url": fake.MCPURL})
	if ans.Connection.ID == "" || ans.Error == nil || ans.Error.Code != "invalid_result" || ans.AuthorizationURL != "" || len(cookies) != 0 {
		t.Fatalf("connect with a failing start = %+v; want the saved connection and the error", ans)
	}
	fake.Set(func(o *oauthfake.Options) { o.MetadataIssuer = "" })
	status, h, b := ts.Do(t, "POST", "/ai/connections/"+ans.Connection.ID+"/oauth/start", alice, map[string]any{})
	var start struct {
		AuthorizationURL string `json:"authorization_url"`
	}
	json.Unmarshal(b, &start)
	if status != http.StatusOK || start.AuthorizationURL == "" {
		t.Fatalf("retry: %d %s", status, b)
	}
	loc := browser(t, start.AuthorizationURL, (&http.Response{Header: h}).Cookies())
	if loc.Query().Get("oauth") != "connected" {
		t.Errorf("retried sign-in went to %s", loc)
	}
	// The MCP form's Save and connect: the sign-in starts in the same
	// request.
	form, cookies := ts.connect(t, http.StatusCreated, alice, map[string]any{"name": "Second", "url": fake.MCPURL})
	if form.Connection.Active || form.AuthorizationURL == "" || len(cookies) != 1 {
		t.Fatalf("form save and connect = %+v; want an inactive connection with its sign-in started", form)
	}
	if loc := browser(t, form.AuthorizationURL, cookies); loc.Query().Get("oauth") != "connected" {
		t.Errorf("form sign-in went to %s", loc)
	}
}

func TestConnectionSetupRoute(t *testing.T) {
	fake := newProvider(t)
	ts := oauthServer(t, fake)
	for _, tc := range []struct {
		who, query string
		want       connresolve.OptionState
	}{
		{"alice", "provider=Demo+Analytics&capability=web_analytics", connresolve.StateMCPOAuthSetup},
		{"vic", "provider=Demo+Analytics", connresolve.StateAdminRequired},
		{"alice", "provider=Plausible", connresolve.StateManualMCPSetup},
		{"alice", "capability=crm", connresolve.StateUnsupported},
	} {
		var doc struct{ Setup connresolve.Setup }
		ts.MustDo(t, http.StatusOK, "GET", "/ai/connections/setup?"+tc.query, token(tc.who), nil, &doc)
		if len(doc.Setup.Options) != 1 || doc.Setup.Options[0].State != tc.want {
			t.Errorf("%s %s: %+v; want %s", tc.who, tc.query, doc.Setup.Options, tc.want)
		}
	}
	ts.MustDo(t, http.StatusBadRequest, "GET", "/ai/connections/setup?capability=telepathy", token("alice"), nil, nil)
	// Only a verified provider's catalog endpoint is connected by name.
	ts.connect(t, http.StatusBadRequest, token("alice"), map[string]any{"provider": "Plausible"})
	ts.connect(t, http.StatusBadRequest, token("alice"), map[string]any{"provider": "Demo Analytics", "url": "https://evil.example.com/mcp"})
}

// TestOAuthCallbackKeepsBindingForRetry: a browser (a cookie jar) keeps
// the binding cookie after a callback that failed for a reason that may
// pass, completes the sign-in by reloading the callback, and then no
// longer has the cookie.
func TestOAuthCallbackKeepsBindingForRetry(t *testing.T) {
	fake := newProvider(t)
	ts := oauthServer(t, fake)
	ans, cookies := ts.connect(t, http.StatusCreated, token("alice"), map[string]any{"name": "Mine", "url": fake.MCPURL})
	jar, err := cookiejar.New(nil)
	if err != nil {
		t.Fatal(err)
	}
	base, _ := url.Parse(ts.URL)
	jar.SetCookies(base, cookies)
	hc := &http.Client{Jar: jar, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	get := func(u string) *url.URL {
		t.Helper()
		resp, err := hc.Get(u)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		loc, err := url.Parse(resp.Header.Get("Location"))
		if err != nil {
			t.Fatal(err)
		}
		return loc
	}
	cb := get(ans.AuthorizationURL)
	binding := func() bool {
		for _, c := range jar.Cookies(cb) {
			if strings.HasPrefix(c.Name, "askbi_oauth_") {
				return true
			}
		}
		return false
	}
	if !binding() {
		t.Fatal("the jar has no binding cookie for the callback")
	}
	fake.Set(func(o *oauthfake.Options) { o.DropToken = true })
	if q := get(cb.String()).Query(); q.Get("oauth") != "failed" || q.Get("code") != "unavailable" {
		t.Fatalf("callback with the token endpoint down: %v; want oauth=failed, code=unavailable", q)
	}
	if !binding() {
		t.Fatal("the binding cookie was cleared after a failure that may pass; a reload could not complete the sign-in")
	}
	fake.Set(func(o *oauthfake.Options) { o.DropToken = false })
	if q := get(cb.String()).Query(); q.Get("oauth") != "connected" {
		t.Fatalf("the reloaded callback: %v; want oauth=connected", q)
	}
	if binding() {
		t.Error("the binding cookie is kept after the sign-in completed")
	}
}
