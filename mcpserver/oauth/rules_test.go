package oauth_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/askbi/askbi"
	"github.com/askbi/askbi/access"
	"github.com/askbi/askbi/mcpserver/oauth"
)

var all = access.AllScopes

func TestMetadata(t *testing.T) {
	e := newEnv(t)
	resp, err := http.Get(e.url + "/.well-known/oauth-authorization-server")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var md map[string]any
	json.NewDecoder(resp.Body).Decode(&md)
	if resp.StatusCode != 200 || !strings.HasPrefix(resp.Header.Get("Content-Type"), "application/json") {
		t.Fatalf("status %d, %s", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	for k, want := range map[string]any{
		"issuer": e.url, "authorization_endpoint": e.url + "/oauth/authorize", "token_endpoint": e.url + "/oauth/token",
		"registration_endpoint": e.url + "/oauth/register", "revocation_endpoint": e.url + "/oauth/revoke",
		"code_challenge_methods_supported": []any{"S256"}, "response_types_supported": []any{"code"},
		"authorization_response_iss_parameter_supported": true,
		"scopes_supported": []any{"data:read", "data:refresh", "charts:preview", "datasets:write"},
	} {
		if diff := cmp.Diff(want, md[k]); diff != "" {
			t.Errorf("%s mismatch (-want +got):\n%s", k, diff)
		}
	}
}

func TestNewRequiresHTTPSOutsideLoopback(t *testing.T) {
	for u, ok := range map[string]bool{
		"http://127.0.0.1:8080": true, "http://localhost:8080": true, "http://[::1]:8080": true, "https://bi.example.com": true,
		"http://bi.example.com": false, "http://0.0.0.0:8080": false, "https://u:p@bi.example.com": false, "bi.example.com": false,
	} {
		_, err := oauth.New(u, oauth.NewMemoryStore(), users{}, access.NewChecker(access.NewMemoryDirectory(), nil), nil)
		if (err == nil) != ok {
			t.Errorf("New(%q) = %v, want ok %v", u, err, ok)
		}
	}
}

func TestRegister(t *testing.T) {
	e := newEnv(t)
	pub := e.MustRegister(t, map[string]any{"client_name": "Claude", "redirect_uris": []string{"https://claude.ai/api/mcp/auth_callback"},
		"token_endpoint_auth_method": "none", "logo_uri": "https://x/y.png"})
	if pub["client_secret"] != nil || pub["client_id"] == "" || pub["token_endpoint_auth_method"] != "none" {
		t.Errorf("public client = %v", pub)
	}
	conf := e.MustRegister(t, map[string]any{"redirect_uris": []string{"https://app.example.com/cb"}, "scope": "data:read offline_access"})
	if s, _ := conf["client_secret"].(string); len(s) < 40 || conf["scope"] != "data:read" {
		t.Errorf("confidential client = %v", conf)
	}
	for name, meta := range map[string]map[string]any{
		"no redirect":       {"client_name": "x"},
		"http non-loopback": {"redirect_uris": []string{"http://evil.example.com/cb"}},
		"fragment":          {"redirect_uris": []string{"https://a.example.com/cb#x"}},
		"userinfo":          {"redirect_uris": []string{"https://u@a.example.com/cb"}},
		"javascript":        {"redirect_uris": []string{"javascript:alert(1)"}},
		"relative":          {"redirect_uris": []string{"/cb"}},
		"implicit":          {"redirect_uris": []string{"https://a.example.com/cb"}, "grant_types": []string{"implicit"}},
		"bad auth method":   {"redirect_uris": []string{"https://a.example.com/cb"}, "token_endpoint_auth_method": "private_key_jwt"},
	} {
		status, body := e.post(t, "/oauth/register", "application/json", mustJSON(t, meta), "")
		if status != http.StatusBadRequest || !strings.Contains(string(body), `"error":"invalid_`) {
			t.Errorf("%s: status %d %s, want 400 with an RFC 7591 error", name, status, body)
		}
	}
	// The body is JSON as every body the SDK reads: sent as
	// application/json (RFC 7591 §3.1), with each field once.
	good := `{"redirect_uris":["https://a.example.com/cb"]}`
	for name, req := range map[string][2]string{
		"text/plain":         {"text/plain", good},
		"no Content-Type":    {"", good},
		"a field twice":      {"application/json", `{"redirect_uris":["https://a.example.com/cb"],"redirect_uris":["https://b.example.com/cb"]}`},
		"twice, nested case": {"application/json", `{"redirect_uris":["https://a.example.com/cb"],"Redirect_URIs":["https://b.example.com/cb"]}`},
	} {
		status, body := e.post(t, "/oauth/register", req[0], []byte(req[1]), "")
		if status != http.StatusBadRequest || !strings.Contains(string(body), `"error":"invalid_client_metadata"`) {
			t.Errorf("%s: status %d %s, want 400 invalid_client_metadata", name, status, body)
		}
	}
	if status, body := e.post(t, "/oauth/register", "application/json; charset=utf-8", []byte(good), ""); status != http.StatusCreated {
		t.Errorf("application/json; charset=utf-8: %d %s", status, body)
	}
}

// TestFlow goes through DCR, consent, the code exchange, verification,
// rotation and revocation with a confidential client.
func TestFlow(t *testing.T) {
	e := newEnv(t)
	reg := e.MustRegister(t, map[string]any{"client_name": "Server app", "redirect_uris": []string{"https://app.example.com/cb"},
		"token_endpoint_auth_method": "client_secret_post"})
	f := newFlow(reg["client_id"].(string), "https://app.example.com/cb")
	f.Secret = reg["client_secret"].(string)
	tok := e.MustTokens(t, f, "alice", "acme", access.ScopeDataRead, access.ScopeDataRefresh)
	if tok.Scope != "data:read data:refresh" || tok.ExpiresIn <= 0 || tok.ExpiresIn > 600 {
		t.Errorf("token = %+v; want the two granted scopes, at most 10 minutes", tok)
	}
	p, err := e.as.Verify(context.Background(), tok.AccessToken)
	if err != nil {
		t.Fatal(err)
	}
	want := access.Principal{UserID: "alice", TeamID: "acme", Role: access.RoleOwner, Projects: access.AllProjects(),
		Scopes: []access.Scope{access.ScopeDataRead, access.ScopeDataRefresh}, Auth: access.AuthOAuth, CredentialID: p.CredentialID}
	if diff := cmp.Diff(want, p, cmp.AllowUnexported(access.Principal{}), cmpopts.IgnoreFields(access.Principal{}, "read")); diff != "" || !strings.HasPrefix(p.CredentialID, "mcpg_") {
		t.Errorf("principal mismatch (-want +got):\n%s", diff)
	}
	// A wrong secret is refused.
	bad := *f
	bad.Secret = "nope"
	if got := e.refresh(t, &bad, tok.RefreshToken); got.Status != http.StatusUnauthorized && got.Status != http.StatusBadRequest {
		t.Errorf("refresh with a wrong secret: %+v", got)
	}
	next := e.refresh(t, f, tok.RefreshToken)
	if next.Status != 200 || next.AccessToken == tok.AccessToken || next.RefreshToken == tok.RefreshToken {
		t.Fatalf("rotation: %+v", next)
	}
	if _, err := e.as.Verify(context.Background(), next.AccessToken); err != nil {
		t.Errorf("rotated access token: %v", err)
	}
	// Revocation at the endpoint ends the grant.
	status, body := e.post(t, "/oauth/revoke", "application/x-www-form-urlencoded",
		[]byte(url.Values{"token": {next.RefreshToken}, "client_id": {f.ClientID}, "client_secret": {f.Secret}}.Encode()), "")
	if status != http.StatusOK {
		t.Fatalf("revoke: %d %s", status, body)
	}
	if _, err := e.as.Verify(context.Background(), next.AccessToken); code(err) != askbi.Unauthenticated {
		t.Errorf("access token after revocation: %v", err)
	}
	if got := e.refresh(t, f, next.RefreshToken); got.Status != http.StatusBadRequest {
		t.Errorf("refresh after revocation: %+v", got)
	}
	// Audit: consent, two issues, revocation; never a secret.
	var actions []string
	for _, en := range e.audit.Entries() {
		actions = append(actions, en.Action)
	}
	if diff := cmp.Diff([]string{oauth.ActionRegister, oauth.ActionConsent, oauth.ActionIssue, oauth.ActionIssue, oauth.ActionRevoke}, actions); diff != "" {
		t.Errorf("audit mismatch (-want +got):\n%s", diff)
	}
	b, _ := json.Marshal(e.audit.Entries())
	logs := e.logs.String()
	for _, secret := range []string{tok.AccessToken, tok.RefreshToken, next.AccessToken, next.RefreshToken, f.Secret, f.Verifier} {
		if strings.Contains(string(b), secret) || strings.Contains(logs, secret) {
			t.Errorf("a secret %q… reached the audit log or the logs", secret[:12])
		}
	}
}

// TestRedirectURIExact: a redirect URI is matched byte for byte; only a
// loopback redirect's port may vary.
func TestRedirectURIExact(t *testing.T) {
	e := newEnv(t)
	reg := e.MustRegister(t, map[string]any{"redirect_uris": []string{"https://app.example.com/cb", "http://127.0.0.1:3000/callback", "http://localhost:33418/cb"},
		"token_endpoint_auth_method": "none"})
	id := reg["client_id"].(string)
	for uri, ok := range map[string]bool{
		"https://app.example.com/cb":            true,
		"https://app.example.com/cb/":           false, // trailing slash
		"https://App.example.com/cb":            false, // case
		"https://app.example.com/CB":            false,
		"https://app.example.com/cb?x=1":        false, // query
		"https://evil.app.example.com/cb":       false, // subdomain
		"https://user@app.example.com/cb":       false, // userinfo
		"https://app.example.com:444/cb":        false, // the port of a non-loopback URI
		"http://app.example.com/cb":             false,
		"http://127.0.0.1:51234/callback":       true, // loopback: any port
		"http://127.0.0.1:51234/callback/":      false,
		"http://127.0.0.1:51234/callback?a=b":   false,
		"http://x@127.0.0.1:51234/callback":     false,
		"http://localhost:5000/cb":              true,
		"http://LOCALHOST:5000/cb":              false,
		"http://[::1]:3000/callback":            false, // another loopback host
		"https://127.0.0.1:3000/callback":       false,
		"http://127.0.0.1.evil.com:80/callback": false,
	} {
		f := newFlow(id, uri)
		p := e.open(t, f.authorizeURL(e), "alice")
		if got := p.status == http.StatusOK && p.form.Get("request_id") != ""; got != ok {
			t.Errorf("redirect_uri %s: consent page %v (status %d), want %v", uri, got, p.status, ok)
		}
		if !ok && p.header.Get("Location") != "" {
			t.Errorf("redirect_uri %s: redirected to %s", uri, p.header.Get("Location"))
		}
	}
}

// TestRedirectURIAtToken: the token request must name the redirect URI
// the code was issued for (RFC 6749 §4.1.3): another registered one, an
// unregistered one or none is invalid_grant, and issues nothing.
func TestRedirectURIAtToken(t *testing.T) {
	e := newEnv(t)
	reg := e.MustRegister(t, map[string]any{"redirect_uris": []string{"https://app.example.com/cb", "https://app.example.com/other"},
		"token_endpoint_auth_method": "none"})
	f := newFlow(reg["client_id"].(string), "https://app.example.com/cb")
	for name, redirect := range map[string][]string{
		"another registered URI": {"https://app.example.com/other"},
		"an unregistered URI":    {"https://evil.example.com/cb"},
		"no URI":                 nil,
	} {
		t.Run(name, func(t *testing.T) {
			c := e.MustCode(t, f, "alice", "acme", access.ScopeDataRead)
			form := url.Values{"grant_type": {"authorization_code"}, "code": {c}, "code_verifier": {f.Verifier}, "resource": {e.as.Resource()}}
			if redirect != nil {
				form["redirect_uri"] = redirect
			}
			if got := e.token(t, f, form); got.Status != http.StatusBadRequest || got.Error != "invalid_grant" || got.AccessToken != "" {
				t.Errorf("redirect_uri %v for a code issued for %s: %+v; want 400 invalid_grant", redirect, f.Redirect, got)
			}
		})
	}
	if got := e.exchange(t, f, e.MustCode(t, f, "alice", "acme", access.ScopeDataRead)); got.AccessToken == "" {
		t.Errorf("the code's own redirect URI: %+v", got)
	}
}

// TestStateOptional: with S256 PKCE enforced, state is optional (OAuth
// 2.1): a short state is returned as sent, and a request without one
// gets a code and no empty state back.
func TestStateOptional(t *testing.T) {
	e := newEnv(t)
	f := e.MustPublicClient(t)
	for name, state := range map[string][]string{"short": {"x"}, "missing": nil} {
		t.Run(name, func(t *testing.T) {
			g := *f
			g.Params = url.Values{"state": state}
			p := e.open(t, g.authorizeURL(e), "alice")
			if p.status != http.StatusOK || p.form.Get("request_id") == "" {
				t.Fatalf("state %v: consent page status %d, Location %q", state, p.status, p.header.Get("Location"))
			}
			_, loc, _ := e.answer(t, p, "alice", url.Values{"decision": {"allow"}, "team": {"acme"}, "scope": {"data:read"}})
			q := loc.Query()
			if q.Get("code") == "" || !slices.Equal(q["state"], state) {
				t.Fatalf("state %v: authorization response %s; want a code and the same state", state, loc)
			}
			if got := e.exchange(t, f, q.Get("code")); got.AccessToken == "" {
				t.Errorf("state %v: exchange %+v", state, got)
			}
			// An error response carries the state as sent, too.
			p = e.open(t, g.authorizeURL(e), "alice")
			_, loc, _ = e.answer(t, p, "alice", url.Values{"decision": {"deny"}, "team": {"acme"}})
			if q := loc.Query(); q.Get("error") != "access_denied" || !slices.Equal(q["state"], state) {
				t.Errorf("state %v: denial %s; want access_denied and the same state", state, loc)
			}
		})
	}
}

// TestGrantTypes: a grant type this server does not offer is
// unsupported_grant_type (RFC 6749 §5.2); a missing one stays
// invalid_request.
func TestGrantTypes(t *testing.T) {
	e := newEnv(t)
	f := e.MustPublicClient(t)
	for _, tc := range []struct {
		name string
		form url.Values
		want string
	}{
		{"password", url.Values{"grant_type": {"password"}, "username": {"alice"}, "password": {"x"}}, "unsupported_grant_type"},
		{"client credentials", url.Values{"grant_type": {"client_credentials"}}, "unsupported_grant_type"},
		{"implicit", url.Values{"grant_type": {"implicit"}}, "unsupported_grant_type"},
		{"device code", url.Values{"grant_type": {"urn:ietf:params:oauth:grant-type:device_code"}, "device_code": {"x"}}, "unsupported_grant_type"},
		{"missing", url.Values{"code": {"x"}}, "invalid_request"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := e.token(t, f, tc.form); got.Status != http.StatusBadRequest || got.Error != tc.want || got.AccessToken != "" {
				t.Errorf("%v: %+v; want 400 %s", tc.form, got, tc.want)
			}
		})
	}
}

func TestPKCE(t *testing.T) {
	e := newEnv(t)
	f := e.MustPublicClient(t)
	t.Run("wrong verifier burns the code", func(t *testing.T) {
		c := e.MustCode(t, f, "alice", "acme", access.ScopeDataRead)
		wrong := *f
		wrong.Verifier = strings.Repeat("w", 50)
		if got := e.exchange(t, &wrong, c); got.Status != http.StatusBadRequest || got.Error != "invalid_grant" || got.AccessToken != "" {
			t.Errorf("wrong verifier: %+v", got)
		}
		if got := e.exchange(t, f, c); got.AccessToken != "" {
			t.Errorf("the right verifier after a wrong one got a token: %+v", got)
		}
	})
	t.Run("no verifier", func(t *testing.T) {
		c := e.MustCode(t, f, "alice", "acme", access.ScopeDataRead)
		if got := e.token(t, f, url.Values{"grant_type": {"authorization_code"}, "code": {c}, "redirect_uri": {f.Redirect}}); got.AccessToken != "" {
			t.Errorf("no verifier: %+v", got)
		}
	})
	for name, params := range map[string]url.Values{
		"plain challenge":   {"code_challenge_method": {"plain"}, "code_challenge": {f.Verifier}},
		"missing challenge": {"code_challenge": nil, "code_challenge_method": nil},
		"missing method":    {"code_challenge_method": nil},
	} {
		t.Run(name, func(t *testing.T) {
			g := *f
			g.Params = params
			p := e.open(t, g.authorizeURL(e), "alice")
			loc, _ := url.Parse(p.header.Get("Location"))
			if p.form.Get("request_id") != "" || loc == nil || loc.Query().Get("error") != "invalid_request" || loc.Query().Get("iss") != e.url {
				t.Errorf("status %d, Location %v; want a redirect with invalid_request and iss", p.status, loc)
			}
		})
	}
}

func TestCodeSingleUse(t *testing.T) {
	e := newEnv(t)
	f := e.MustPublicClient(t)
	c := e.MustCode(t, f, "alice", "acme", access.ScopeDataRead)
	first := e.exchange(t, f, c)
	if first.AccessToken == "" {
		t.Fatalf("first exchange: %+v", first)
	}
	if again := e.exchange(t, f, c); again.Status != http.StatusBadRequest || again.AccessToken != "" {
		t.Errorf("replayed code: %+v", again)
	}
	// The replay revoked what the code had issued.
	if _, err := e.as.Verify(context.Background(), first.AccessToken); code(err) != askbi.Unauthenticated {
		t.Errorf("access token after a code replay: %v", err)
	}
	if got := e.refresh(t, f, first.RefreshToken); got.AccessToken != "" {
		t.Errorf("refresh token after a code replay: %+v", got)
	}
}

func TestCodeExpires(t *testing.T) {
	e := newEnv(t)
	f := e.MustPublicClient(t)
	c := e.MustCode(t, f, "alice", "acme", access.ScopeDataRead)
	// Past its lifetime on the server's clock, before any purge.
	e.clock.advance(2 * time.Minute)
	if got := e.exchange(t, f, c); got.AccessToken != "" {
		t.Errorf("expired code exchanged: %+v", got)
	}
	// And the retention step removes it.
	if _, err := e.as.Purge(context.Background()); err != nil {
		t.Fatal(err)
	}
	if got := e.exchange(t, f, c); got.AccessToken != "" {
		t.Errorf("purged code exchanged: %+v", got)
	}
}

func TestResource(t *testing.T) {
	e := newEnv(t)
	f := e.MustPublicClient(t)
	for name, res := range map[string][]string{
		"other resource": {"https://other.example.com/mcp"},
		"sub-path":       {e.as.Resource() + "/x"},
		"trailing slash": {e.as.Resource() + "/"},
		"two resources":  {e.as.Resource(), "https://other.example.com/mcp"},
	} {
		g := *f
		g.Params = url.Values{"resource": res}
		p := e.open(t, g.authorizeURL(e), "alice")
		loc, _ := url.Parse(p.header.Get("Location"))
		if p.form.Get("request_id") != "" || loc == nil || loc.Query().Get("error") != "invalid_target" {
			t.Errorf("%s: status %d, Location %v; want invalid_target", name, p.status, loc)
		}
	}
	// Without resource, the token is for this server's MCP URL, the only
	// resource here.
	g := *f
	g.Params = url.Values{"resource": nil}
	c := e.MustCode(t, &g, "alice", "acme", access.ScopeDataRead)
	tok := e.token(t, f, url.Values{"grant_type": {"authorization_code"}, "code": {c}, "redirect_uri": {f.Redirect},
		"code_verifier": {f.Verifier}, "resource": {"https://other.example.com/mcp"}})
	if tok.Error != "invalid_target" {
		t.Errorf("token request for another resource: %+v", tok)
	}
	tok = e.token(t, f, url.Values{"grant_type": {"authorization_code"}, "code": {c}, "redirect_uri": {f.Redirect}, "code_verifier": {f.Verifier}})
	if _, err := e.as.Verify(context.Background(), tok.AccessToken); err != nil {
		t.Errorf("token without resource: %+v, %v", tok, err)
	}
	// A token for another resource (another MCP path on the same store
	// and key) is refused.
	other, err := oauth.New(e.url, e.store, users{}, access.NewChecker(e.dir, nil), &oauth.Options{MCPPath: "/other-mcp", Secret: testSecret})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := other.Verify(context.Background(), tok.AccessToken); code(err) != askbi.Unauthenticated {
		t.Errorf("a token for %s verified at %s: %v", e.as.Resource(), other.Resource(), err)
	}
}

func TestExpiredToken(t *testing.T) {
	e := newEnv(t)
	f := e.MustPublicClient(t)
	tok := e.MustTokens(t, f, "alice", "acme", access.ScopeDataRead)
	if _, err := e.as.Verify(context.Background(), tok.AccessToken); err != nil {
		t.Fatal(err)
	}
	e.clock.advance(10*time.Minute + time.Second)
	if _, err := e.as.Verify(context.Background(), tok.AccessToken); code(err) != askbi.Unauthenticated {
		t.Errorf("expired access token: %v", err)
	}
}

func TestRefreshReplay(t *testing.T) {
	e := newEnv(t)
	f := e.MustPublicClient(t)
	tok := e.MustTokens(t, f, "alice", "acme", access.ScopeDataRead)
	next := e.refresh(t, f, tok.RefreshToken)
	if next.AccessToken == "" {
		t.Fatalf("rotation: %+v", next)
	}
	if replay := e.refresh(t, f, tok.RefreshToken); replay.AccessToken != "" || replay.Error != "invalid_grant" {
		t.Errorf("replayed refresh token: %+v", replay)
	}
	// The replay revoked the grant: the current tokens stop too.
	if _, err := e.as.Verify(context.Background(), next.AccessToken); code(err) != askbi.Unauthenticated {
		t.Errorf("current access token after a replay: %v", err)
	}
	if got := e.refresh(t, f, next.RefreshToken); got.AccessToken != "" {
		t.Errorf("current refresh token after a replay: %+v", got)
	}
	if !slices.ContainsFunc(e.audit.Entries(), func(en access.AuditEntry) bool {
		return en.Action == oauth.ActionRevoke && en.Details["reason"] == "refresh_replay"
	}) {
		t.Error("the replay revocation was not audited")
	}
	// A refresh cannot widen the grant.
	f2 := e.MustPublicClient(t)
	tok2 := e.MustTokens(t, f2, "alice", "acme", access.ScopeDataRead)
	wider := e.token(t, f2, url.Values{"grant_type": {"refresh_token"}, "refresh_token": {tok2.RefreshToken}, "scope": {"data:read datasets:write"}})
	if strings.Contains(wider.Scope, "datasets:write") {
		t.Errorf("refresh widened the grant: %+v", wider)
	}
	if wider.AccessToken != "" {
		p, err := e.as.Verify(context.Background(), wider.AccessToken)
		if err != nil || p.HasScope(access.ScopeDatasetsWrite) || !p.HasScope(access.ScopeDataRead) {
			t.Errorf("the refreshed token's principal = %+v, %v; want data:read only", p, err)
		}
	}
}

// TestConsent: the rules of the consent page.
func TestConsent(t *testing.T) {
	e := newEnv(t)
	f := e.MustPublicClient(t)
	t.Run("page", func(t *testing.T) {
		p := e.open(t, f.authorizeURL(e), "alice")
		csp := p.header.Get("Content-Security-Policy")
		for _, want := range []string{"frame-ancestors 'none'", "default-src 'none'", "form-action " + e.url + " http://127.0.0.1:3000"} {
			if !strings.Contains(csp, want) {
				t.Errorf("CSP %q lacks %q", csp, want)
			}
		}
		if p.header.Get("X-Frame-Options") != "DENY" || p.header.Get("Cache-Control") != "no-store" {
			t.Errorf("headers %v", p.header)
		}
		for _, want := range []string{"Test agent", "unverified", "127.0.0.1:3000", "Acme", "Globex", "Read data", "Save datasets"} {
			if !strings.Contains(p.body, want) {
				t.Errorf("page lacks %q", want)
			}
		}
		// Write scopes are requested by default but unchecked.
		for _, s := range []string{"charts:preview", "datasets:write"} {
			if !strings.Contains(p.body, `name="scope" value="`+s+`">`) {
				t.Errorf("%s is not an unchecked box", s)
			}
		}
	})
	t.Run("sign-in first", func(t *testing.T) {
		p := e.open(t, f.authorizeURL(e), "")
		loc := p.header.Get("Location")
		if p.status != http.StatusFound || !strings.HasPrefix(loc, "/signin?return="+url.QueryEscape(e.url+"/oauth/authorize?")) {
			t.Errorf("status %d Location %q", p.status, loc)
		}
	})
	t.Run("fewer scopes requested", func(t *testing.T) {
		g := *f
		g.Params = url.Values{"scope": {"data:read offline_access"}}
		p := e.open(t, g.authorizeURL(e), "alice")
		if strings.Contains(p.body, "data:refresh") || !strings.Contains(p.body, "data:read") {
			t.Errorf("page for a data:read request offers other scopes")
		}
		status, _, body := e.answer(t, p, "alice", url.Values{"decision": {"allow"}, "team": {"acme"}, "scope": {"data:read", "data:refresh"}})
		if status != http.StatusBadRequest || !strings.Contains(body, "did not ask for data:refresh") {
			t.Errorf("an unrequested scope: status %d", status)
		}
	})
	refused := map[string]struct {
		user   string
		fields url.Values
		edit   func(url.Values)
	}{
		"drops data:read":             {"alice", url.Values{"decision": {"allow"}, "team": {"acme"}, "scope": {"data:refresh"}}, nil},
		"write scope by an editor":    {"bob", url.Values{"decision": {"allow"}, "team": {"acme"}, "scope": {"data:read", "charts:preview"}}, nil},
		"write scope by a viewer":     {"alice", url.Values{"decision": {"allow"}, "team": {"globex"}, "scope": {"data:read", "datasets:write"}}, nil},
		"a team the user is not in":   {"bob", url.Values{"decision": {"allow"}, "team": {"globex"}, "scope": {"data:read"}}, nil},
		"wrong csrf":                  {"alice", url.Values{"decision": {"allow"}, "team": {"acme"}, "scope": {"data:read"}}, func(v url.Values) { v.Set("csrf", "x") }},
		"another user answers":        {"bob", url.Values{"decision": {"allow"}, "team": {"acme"}, "scope": {"data:read"}}, nil},
		"unknown request":             {"alice", url.Values{"decision": {"allow"}, "team": {"acme"}, "scope": {"data:read"}}, func(v url.Values) { v.Set("request_id", "mcpr_x") }},
		"signed out when it answered": {"", url.Values{"decision": {"allow"}, "team": {"acme"}, "scope": {"data:read"}}, nil},
	}
	for name, tc := range refused {
		t.Run(name, func(t *testing.T) {
			opener := "alice"
			if tc.user == "bob" && name != "another user answers" {
				opener = "bob"
			}
			p := e.open(t, f.authorizeURL(e), opener)
			if tc.edit != nil {
				tc.edit(p.form)
			}
			before := len(MustGrants(t, e.store, opener))
			status, loc, _ := e.answer(t, p, tc.user, tc.fields)
			if status < 400 || loc.Query().Get("code") != "" {
				t.Errorf("status %d, Location %v; want a refusal page", status, loc)
			}
			if after := len(MustGrants(t, e.store, opener)); after != before {
				t.Errorf("grants %d → %d", before, after)
			}
		})
	}
	t.Run("an answered page cannot be answered again", func(t *testing.T) {
		p := e.open(t, f.authorizeURL(e), "alice")
		fields := url.Values{"decision": {"allow"}, "team": {"acme"}, "scope": {"data:read"}}
		if status, _, _ := e.answer(t, p, "alice", fields); status != http.StatusSeeOther {
			t.Fatalf("first answer: %d", status)
		}
		if status, loc, _ := e.answer(t, p, "alice", fields); status != http.StatusBadRequest || loc.Query().Get("code") != "" {
			t.Errorf("second answer: %d %v", status, loc)
		}
	})
	t.Run("deny", func(t *testing.T) {
		p := e.open(t, f.authorizeURL(e), "alice")
		_, loc, _ := e.answer(t, p, "alice", url.Values{"decision": {"deny"}, "team": {"acme"}})
		if q := loc.Query(); q.Get("error") != "access_denied" || q.Get("code") != "" || q.Get("iss") != e.url {
			t.Errorf("deny: %v", loc)
		}
	})
	t.Run("no auto-approval", func(t *testing.T) {
		e.MustTokens(t, f, "alice", "acme", access.ScopeDataRead)
		if p := e.open(t, f.authorizeURL(e), "alice"); p.status != http.StatusOK || p.form.Get("request_id") == "" {
			t.Errorf("second authorization: status %d, want the consent page again", p.status)
		}
	})
	t.Run("an editor grants existing data on their projects", func(t *testing.T) {
		tok := e.MustTokens(t, f, "bob", "acme", access.ScopeDataRead, access.ScopeDataRefresh)
		p, err := e.as.Verify(context.Background(), tok.AccessToken)
		if err != nil || !cmp.Equal(p.Projects, access.ProjectSet("growth")) {
			t.Errorf("bob's grant: %+v, %v; want projects [growth]", p, err)
		}
		// Gaining a project later does not widen the grant.
		e.dir.SetMember("acme", "bob", access.RoleEditor, access.ProjectSet("growth", "finance"))
		if p, _ := e.as.Verify(context.Background(), tok.AccessToken); !cmp.Equal(p.Projects, access.ProjectSet("growth")) {
			t.Errorf("grant widened with the membership: %+v", p.Projects)
		}
	})
}

// TestGrantsHaveDataRead: data:read, which every tool needs, is in every
// grant, whatever set of scopes the client registers and requests: the
// consent page holds it as required, and an answer without it is
// refused.
func TestGrantsHaveDataRead(t *testing.T) {
	e := newEnv(t)
	requiredScope := regexp.MustCompile(`<input type="hidden" name="scope" value="([a-z:]+)">`)
	for mask := 1; mask < 1<<len(all); mask++ {
		var set []string
		for i, sc := range all {
			if mask&(1<<i) != 0 {
				set = append(set, string(sc))
			}
		}
		t.Run(strings.Join(set, " "), func(t *testing.T) {
			reg := e.MustRegister(t, map[string]any{"redirect_uris": []string{"http://127.0.0.1:3000/callback"},
				"token_endpoint_auth_method": "none", "scope": strings.Join(set, " ")})
			if !slices.Contains(strings.Fields(reg["scope"].(string)), "data:read") {
				t.Errorf("registered scope %q lacks data:read", reg["scope"])
			}
			f := newFlow(reg["client_id"].(string), "http://127.0.0.1:3000/callback")
			f.Params = url.Values{"scope": {strings.Join(set, " ")}}
			// The browser sends the page's required scopes and the
			// client's set as the boxes.
			p := e.open(t, f.authorizeURL(e), "alice")
			fields := url.Values{"decision": {"allow"}, "team": {"acme"}, "scope": set}
			for _, m := range requiredScope.FindAllStringSubmatch(p.body, -1) {
				if !slices.Contains(fields["scope"], m[1]) {
					fields.Add("scope", m[1])
				}
			}
			status, loc, body := e.answer(t, p, "alice", fields)
			if status != http.StatusSeeOther || loc.Query().Get("code") == "" {
				t.Fatalf("consent answer %v: status %d %s", fields["scope"], status, body)
			}
			tok := e.exchange(t, f, loc.Query().Get("code"))
			got := strings.Fields(tok.Scope)
			if !slices.Contains(got, "data:read") || slices.ContainsFunc(got, func(sc string) bool { return sc != "data:read" && !slices.Contains(set, sc) }) {
				t.Errorf("requested %v: granted %q; want data:read and no scope beyond the request", set, tok.Scope)
			}
			// A form that leaves data:read out is refused, and grants
			// nothing.
			p = e.open(t, f.authorizeURL(e), "alice")
			before := len(MustGrants(t, e.store, "alice"))
			without := slices.DeleteFunc(slices.Clone(set), func(sc string) bool { return sc == "data:read" })
			status, loc, _ = e.answer(t, p, "alice", url.Values{"decision": {"allow"}, "team": {"acme"}, "scope": without})
			if status < 400 || loc.Query().Get("code") != "" || len(MustGrants(t, e.store, "alice")) != before {
				t.Errorf("an answer with %v only: status %d, Location %v; want a refusal", without, status, loc)
			}
		})
	}
	// A client stored without data:read (registered before it was always
	// added) still gets it.
	old := oauth.Client{ID: "mcpc_old", AuthMethod: "none", Name: "Old", RedirectURIs: []string{"http://127.0.0.1:3000/callback"},
		Scopes: []access.Scope{access.ScopeDataRefresh}, CreatedAt: time.Now()}
	if err := e.store.CreateClient(context.Background(), old); err != nil {
		t.Fatal(err)
	}
	f := newFlow(old.ID, "http://127.0.0.1:3000/callback")
	if tok := e.MustTokens(t, f, "alice", "acme", access.ScopeDataRead, access.ScopeDataRefresh); tok.Scope != "data:read data:refresh" {
		t.Errorf("a client stored with data:refresh only: granted %q, want data:read data:refresh", tok.Scope)
	}
}

// TestGrantIsForOneTeam: a grant never follows the user to another
// team; another team is another consent and another grant.
func TestGrantIsForOneTeam(t *testing.T) {
	e := newEnv(t)
	f := e.MustPublicClient(t)
	acme := e.MustTokens(t, f, "alice", "acme", access.ScopeDataRead)
	globex := e.MustTokens(t, f, "alice", "globex", access.ScopeDataRead)
	pa, err := e.as.Verify(context.Background(), acme.AccessToken)
	if err != nil {
		t.Fatal(err)
	}
	pg, err := e.as.Verify(context.Background(), globex.AccessToken)
	if err != nil {
		t.Fatal(err)
	}
	if pa.TeamID != "acme" || pg.TeamID != "globex" || pa.CredentialID == pg.CredentialID || pg.Role != access.RoleViewer {
		t.Errorf("principals %+v and %+v", pa, pg)
	}
	// A refresh of the acme grant stays in acme.
	next := e.refresh(t, f, acme.RefreshToken)
	if p, err := e.as.Verify(context.Background(), next.AccessToken); err != nil || p.TeamID != "acme" {
		t.Errorf("refreshed: %+v, %v", p, err)
	}
	// Removing one grant leaves the other.
	if err := e.store.RevokeGrant(context.Background(), pa.CredentialID, time.Now()); err != nil {
		t.Fatal(err)
	}
	if _, err := e.as.Verify(context.Background(), globex.AccessToken); err != nil {
		t.Errorf("globex token after revoking the acme grant: %v", err)
	}
	// Consenting again in the same team replaces the grant.
	again := e.MustTokens(t, f, "alice", "globex", access.ScopeDataRead)
	if _, err := e.as.Verify(context.Background(), globex.AccessToken); code(err) != askbi.Unauthenticated {
		t.Errorf("replaced grant's token: %v", err)
	}
	if _, err := e.as.Verify(context.Background(), again.AccessToken); err != nil {
		t.Errorf("new grant's token: %v", err)
	}
}

func TestRemovedMember(t *testing.T) {
	e := newEnv(t)
	f := e.MustPublicClient(t)
	tok := e.MustTokens(t, f, "bob", "acme", access.ScopeDataRead)
	e.dir.RemoveMember("acme", "bob")
	if _, err := e.as.Verify(context.Background(), tok.AccessToken); code(err) != askbi.Unauthenticated {
		t.Errorf("removed member's token: %v", err)
	}
	e.dir.SetMember("acme", "bob", access.RoleEditor, access.ProjectSet("growth"))
	if _, err := e.as.Verify(context.Background(), tok.AccessToken); err != nil {
		t.Errorf("re-added member's token: %v", err)
	}
}

func TestAccountRoutes(t *testing.T) {
	e := newEnv(t)
	f := e.MustPublicClient(t)
	tok := e.MustTokens(t, f, "alice", "acme", access.ScopeDataRead, access.ScopeDataRefresh)
	get := func(path, user string) (int, map[string]any) {
		req, _ := http.NewRequest("GET", e.url+path, nil)
		if user != "" {
			req.Header.Set("X-Test-User", user)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var out map[string]any
		json.NewDecoder(resp.Body).Decode(&out)
		return resp.StatusCode, out
	}
	if status, _ := get("/account/mcp", ""); status != http.StatusUnauthorized {
		t.Errorf("signed out: %d", status)
	}
	status, settings := get("/account/mcp", "alice")
	if status != 200 || settings["server_url"] != e.url+"/mcp" || len(settings["setup"].([]any)) != 4 {
		t.Errorf("settings: %d %v", status, settings)
	}
	_, list := get("/account/mcp/clients", "alice")
	clients := list["clients"].([]any)
	if len(clients) != 1 {
		t.Fatalf("clients = %v", list)
	}
	c := clients[0].(map[string]any)
	want := map[string]any{"app_name": "Test agent", "unverified": true, "return_host": "127.0.0.1:3000", "team_id": "acme", "team_name": "Acme",
		"scopes": []any{"data:read", "data:refresh"}}
	for k, v := range want {
		if diff := cmp.Diff(v, c[k]); diff != "" {
			t.Errorf("%s mismatch (-want +got):\n%s", k, diff)
		}
	}
	del := func(id, user string) int {
		req, _ := http.NewRequest("DELETE", e.url+"/account/mcp/clients/"+id, nil)
		req.Header.Set("X-Test-User", user)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	id := c["id"].(string)
	if s := del(id, "bob"); s != http.StatusNotFound {
		t.Errorf("bob removes alice's client: %d", s)
	}
	if _, err := e.as.Verify(context.Background(), tok.AccessToken); err != nil {
		t.Fatalf("token before removal: %v", err)
	}
	if s := del(id, "alice"); s != http.StatusNoContent {
		t.Errorf("remove: %d", s)
	}
	if _, err := e.as.Verify(context.Background(), tok.AccessToken); code(err) != askbi.Unauthenticated {
		t.Errorf("token after removal: %v", err)
	}
	if got := e.refresh(t, f, tok.RefreshToken); got.AccessToken != "" {
		t.Errorf("refresh after removal: %+v", got)
	}
	if _, list := get("/account/mcp/clients", "alice"); len(list["clients"].([]any)) != 0 {
		t.Errorf("clients after removal = %v", list)
	}
}

// MustGrants lists user's active grants.
func MustGrants(t *testing.T, s *oauth.MemoryStore, user string) []oauth.Grant {
	t.Helper()
	g, err := s.Grants(context.Background(), user)
	if err != nil {
		t.Fatal(err)
	}
	return g
}

// TestAccountRoutesAnswerJSON: an unknown path or method under the
// server's routes, and a request from another site, answer the JSON error
// body like every other route.
func TestAccountRoutesAnswerJSON(t *testing.T) {
	e := newEnv(t)
	for _, tc := range []struct {
		method, path, site string
		status             int
		code, allow        string
	}{
		{"GET", "/account/mcp/clients/x", "", 405, "unsupported", "DELETE"},
		{"POST", "/account/mcp", "", 405, "unsupported", "GET"},
		{"GET", "/account/mcp/nope", "", 404, "not_found", ""},
		{"GET", "/oauth/nope", "", 404, "not_found", ""},
		{"DELETE", "/account/mcp/clients/x", "cross-site", 403, "forbidden", ""},
	} {
		t.Run(tc.method+" "+tc.path+" "+tc.site, func(t *testing.T) {
			req, _ := http.NewRequest(tc.method, e.url+tc.path, nil)
			req.Header.Set("X-Test-User", "alice")
			if tc.site != "" {
				req.Header.Set("Sec-Fetch-Site", tc.site)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			var body struct {
				Error struct{ Code string } `json:"error"`
			}
			err = json.NewDecoder(resp.Body).Decode(&body)
			if resp.StatusCode != tc.status || err != nil || body.Error.Code != tc.code ||
				!strings.HasPrefix(resp.Header.Get("Content-Type"), "application/json") {
				t.Errorf("%d %q, %v, code %q; want %d %s as JSON", resp.StatusCode, resp.Header.Get("Content-Type"), err, body.Error.Code, tc.status, tc.code)
			}
			if tc.allow != "" && !strings.Contains(resp.Header.Get("Allow"), tc.allow) {
				t.Errorf("Allow %q; want %s", resp.Header.Get("Allow"), tc.allow)
			}
		})
	}
}
