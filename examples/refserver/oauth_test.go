package main

import (
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"html"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/modelcontextprotocol/go-sdk/oauthex"

	"github.com/askbi/askbi/access"
	"github.com/askbi/askbi/internal/pgtest"
)

var noFollow = &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}

var (
	hiddenField = regexp.MustCompile(`<input type="hidden" name="([a-z_]+)" value="([^"]*)">`)
	checkedBox  = regexp.MustCompile(`<input type="checkbox" name="scope" value="([a-z:]+)" checked>`)
)

// consent plays the browser on the consent page: it opens authURL signed
// in as the demo principal name (by the session cookie), allows team with
// scopes (nil: the boxes as the page checks them), and returns the
// redirect to the client.
func (ta *testApp) consent(t *testing.T, authURL, name, team string, scopes []string) *url.URL {
	t.Helper()
	cookie := &http.Cookie{Name: sessionCookie, Value: ta.session(t, name)}
	req, _ := http.NewRequest("GET", authURL, nil)
	req.AddCookie(cookie)
	resp, err := noFollow.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("consent page %s: status %d: %s", authURL, resp.StatusCode, b)
	}
	form := url.Values{"decision": {"allow"}, "team": {team}}
	for _, m := range hiddenField.FindAllStringSubmatch(string(b), -1) {
		form.Add(m[1], html.UnescapeString(m[2]))
	}
	if scopes == nil {
		for _, m := range checkedBox.FindAllStringSubmatch(string(b), -1) {
			form.Add("scope", m[1])
		}
	} else {
		form["scope"] = scopes
	}
	req, _ = http.NewRequest("POST", ta.url+"/oauth/authorize", strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.AddCookie(cookie)
	resp, err = noFollow.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b, _ = io.ReadAll(resp.Body)
	resp.Body.Close()
	loc, err := url.Parse(resp.Header.Get("Location"))
	if resp.StatusCode != http.StatusSeeOther || err != nil || loc.Query().Get("code") == "" {
		t.Fatalf("consent answer: status %d, Location %q: %s", resp.StatusCode, resp.Header.Get("Location"), b)
	}
	return loc
}

// register registers a public client with redirect.
func (ta *testApp) register(t *testing.T, name, redirect string) string {
	t.Helper()
	var reg struct {
		ClientID string `json:"client_id"`
	}
	ta.MustDo(t, http.StatusCreated, "POST", "/oauth/register", "",
		map[string]any{"client_name": name, "redirect_uris": []string{redirect}, "token_endpoint_auth_method": "none"}, &reg)
	return reg.ClientID
}

// oauthToken runs the whole flow by hand (DCR, PKCE, consent, exchange)
// for the demo principal name in team and returns the access token.
func (ta *testApp) oauthToken(t *testing.T, name, team string, scopes []string) string {
	t.Helper()
	return ta.oauthTokens(t, name, team, scopes).AccessToken
}

// oauthTokens is the token answer of oauthToken's flow, with the ID of
// the client it registered.
type oauthTokens struct {
	AccessToken  string `json:"access_token"`
	RefreshToken string `json:"refresh_token"`
	ClientID     string `json:"-"`
}

func (ta *testApp) oauthTokens(t *testing.T, name, team string, scopes []string) oauthTokens {
	t.Helper()
	const redirect = "http://127.0.0.1:9/callback"
	id := ta.register(t, "Test client", redirect)
	verifier := base64.RawURLEncoding.EncodeToString([]byte(strings.Repeat("verifier", 5)))
	sum := sha256.Sum256([]byte(verifier))
	q := url.Values{"response_type": {"code"}, "client_id": {id}, "redirect_uri": {redirect}, "state": {"s-1234567890"},
		"code_challenge": {base64.RawURLEncoding.EncodeToString(sum[:])}, "code_challenge_method": {"S256"}, "resource": {ta.url + "/mcp"}}
	loc := ta.consent(t, ta.url+"/oauth/authorize?"+q.Encode(), name, team, scopes)
	form := url.Values{"grant_type": {"authorization_code"}, "code": {loc.Query().Get("code")}, "redirect_uri": {redirect},
		"code_verifier": {verifier}, "client_id": {id}, "resource": {ta.url + "/mcp"}}
	resp, err := http.PostForm(ta.url+"/oauth/token", form)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var tok oauthTokens
	json.NewDecoder(resp.Body).Decode(&tok)
	if tok.AccessToken == "" {
		t.Fatalf("token exchange: status %d", resp.StatusCode)
	}
	tok.ClientID = id
	return tok
}

type bearerRT struct{ token string }

func (b bearerRT) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return http.DefaultTransport.RoundTrip(r)
}

func (ta *testApp) connect(t *testing.T, token string) *mcp.ClientSession {
	t.Helper()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "askbi-test", Version: "1"}, nil).Connect(t.Context(),
		&mcp.StreamableClientTransport{Endpoint: ta.url + "/mcp", HTTPClient: &http.Client{Transport: bearerRT{token}}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}

func toolNames(t *testing.T, cs *mcp.ClientSession) []string {
	t.Helper()
	lt, err := cs.ListTools(t.Context(), nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tool := range lt.Tools {
		names = append(names, tool.Name)
	}
	return names
}

func structured(t *testing.T, res *mcp.CallToolResult) map[string]any {
	t.Helper()
	b, _ := json.Marshal(res.StructuredContent)
	var m map[string]any
	json.Unmarshal(b, &m)
	return m
}

// TestGoSDKOAuthClient: the go-sdk's own OAuth client, end to end: it
// finds the metadata from the 401, registers itself, runs PKCE, gets
// through the consent page (played by the test), checks iss, and calls a
// tool.
func TestGoSDKOAuthClient(t *testing.T) {
	ta := MustApp(t, nil)
	var authURLs []string
	h, err := auth.NewAuthorizationCodeHandler(&auth.AuthorizationCodeHandlerConfig{
		DynamicClientRegistrationConfig: &auth.DynamicClientRegistrationConfig{Metadata: &oauthex.ClientRegistrationMetadata{
			ClientName: "go-sdk test client", RedirectURIs: []string{"http://127.0.0.1:33418/callback"},
			TokenEndpointAuthMethod: "none", GrantTypes: []string{"authorization_code", "refresh_token"},
		}},
		RedirectURL: "http://127.0.0.1:33418/callback",
		AuthorizationCodeFetcher: func(ctx context.Context, args *auth.AuthorizationArgs) (*auth.AuthorizationResult, error) {
			authURLs = append(authURLs, args.URL)
			loc := ta.consent(t, args.URL, "alice", teamAcme, nil)
			q := loc.Query()
			return &auth.AuthorizationResult{Code: q.Get("code"), State: q.Get("state"), Iss: q.Get("iss")}, nil
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "go-sdk-oauth", Version: "1"}, nil).Connect(t.Context(),
		&mcp.StreamableClientTransport{Endpoint: ta.url + "/mcp", OAuthHandler: h}, nil)
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	defer cs.Close()
	if len(authURLs) != 1 {
		t.Fatalf("%d authorizations, want 1", len(authURLs))
	}
	u, _ := url.Parse(authURLs[0])
	// The go-sdk unions scopes through a set: their order varies.
	if q := u.Query(); q.Get("resource") != ta.url+"/mcp" || q.Get("code_challenge_method") != "S256" ||
		!slices.Equal(slices.Sorted(slices.Values(strings.Fields(q.Get("scope")))), []string{"charts:preview", "data:read", "data:refresh", "datasets:write"}) {
		t.Errorf("authorization request %v: want the MCP URL as resource, S256 and all four scopes", q)
	}
	// The page's defaults grant read and refresh: write scopes are off.
	want := []string{"search_workspace", "get_workspace_activity", "run_dataset", "get_chart_data", "explore_data"}
	if diff := cmp.Diff(want, toolNames(t, cs)); diff != "" {
		t.Errorf("tools/list mismatch (-want +got):\n%s", diff)
	}
	res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "run_dataset", Arguments: map[string]any{"dataset_id": "ds_weekly_signups", "refresh": true}})
	if err != nil || res.IsError {
		t.Fatalf("run_dataset: %v %+v", err, res)
	}
	sc := structured(t, res)
	if diff := cmp.Diff(map[string]any{"id": "acme", "name": "Acme"}, sc["team"]); diff != "" || sc["row_count"] != 12.0 {
		t.Errorf("run_dataset team mismatch (-want +got):\n%s\nrow_count %v", diff, sc["row_count"])
	}
	ts, err := h.TokenSource(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	tok, err := ts.Token()
	if err != nil || tok.RefreshToken == "" || !strings.HasPrefix(tok.AccessToken, "askbi_at_") {
		t.Errorf("token %v: want an askbi access token and a refresh token", err)
	}
}

// TestOAuthTools is the seed's MCP server test plan under OAuth: a token
// sees only the tools its scopes allow, every tool keeps to the grant's
// team and projects, and write scopes are off by default.
func TestOAuthTools(t *testing.T) {
	ta := MustApp(t, nil)
	all := []string{"search_workspace", "get_workspace_activity", "run_dataset", "get_chart_data", "create_chart_preview", "explore_data"}
	for _, tc := range []struct {
		name, user string
		scopes     []string
		want       []string
	}{
		{"read", "alice", []string{"data:read"}, slices.DeleteFunc(slices.Clone(all), func(s string) bool { return s == "create_chart_preview" })},
		{"read and preview", "alice", []string{"data:read", "charts:preview"}, all},
		{"every scope", "alice", []string{"data:read", "data:refresh", "charts:preview", "datasets:write"}, all},
		{"page defaults", "alice", nil, slices.DeleteFunc(slices.Clone(all), func(s string) bool { return s == "create_chart_preview" })},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cs := ta.connect(t, ta.oauthToken(t, tc.user, teamAcme, tc.scopes))
			if diff := cmp.Diff(tc.want, toolNames(t, cs)); diff != "" {
				t.Errorf("tools/list mismatch (-want +got):\n%s", diff)
			}
		})
	}
	t.Run("write scopes off by default", func(t *testing.T) {
		token := ta.oauthToken(t, "alice", teamAcme, nil)
		p, err := ta.oauth.Verify(t.Context(), token)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff([]string{"data:read", "data:refresh"}, scopeNames(p.Scopes)); diff != "" {
			t.Errorf("default grant scopes mismatch (-want +got):\n%s", diff)
		}
		body := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"explore_data","arguments":{"operation":"save","connection_id":"conn_acme_wh","sql":"SELECT 1 AS x","name":"x","dashboard_id":"dash_growth"}}}`
		status, h, _ := ta.Do(t, "POST", "/mcp", token, body, "Accept", "application/json, text/event-stream")
		if status != http.StatusForbidden || !strings.Contains(h.Get("WWW-Authenticate"), `error="insufficient_scope", scope="data:read datasets:write"`) {
			t.Errorf("save with the default grant: %d %q; want the step-up challenge", status, h.Get("WWW-Authenticate"))
		}
	})
	t.Run("team and project access", func(t *testing.T) {
		bob := ta.connect(t, ta.oauthToken(t, "bob", teamAcme, []string{"data:read", "data:refresh"}))
		carol := ta.connect(t, ta.oauthToken(t, "carol", teamGlobex, []string{"data:read"}))
		for _, tc := range []struct {
			who  string
			cs   *mcp.ClientSession
			tool string
			args map[string]any
		}{
			{"bob, another project's dataset", bob, "run_dataset", map[string]any{"dataset_id": "ds_mrr"}},
			{"bob, another project's chart", bob, "get_chart_data", map[string]any{"chart_id": "chart_mrr"}},
			{"bob, another team's dataset", bob, "run_dataset", map[string]any{"dataset_id": "ds_tickets"}},
			{"carol, another team's dataset", carol, "run_dataset", map[string]any{"dataset_id": "ds_weekly_signups"}},
			{"carol, another team's chart", carol, "get_chart_data", map[string]any{"chart_id": "chart_weekly_signups"}},
			{"bob, explore (editor, not team-wide)", bob, "explore_data", map[string]any{"operation": "inspect"}},
		} {
			res, err := tc.cs.CallTool(t.Context(), &mcp.CallToolParams{Name: tc.tool, Arguments: tc.args})
			if err != nil {
				t.Fatal(err)
			}
			code := structured(t, res)["code"]
			if !res.IsError || (code != "not_found" && code != "forbidden") {
				t.Errorf("%s: isError %v, code %v; want not_found or forbidden", tc.who, res.IsError, code)
			}
		}
		res, _ := bob.CallTool(t.Context(), &mcp.CallToolParams{Name: "run_dataset", Arguments: map[string]any{"dataset_id": "ds_weekly_signups"}})
		if res == nil || res.IsError {
			t.Errorf("bob's own project: %+v", res)
		}
		res, _ = carol.CallTool(t.Context(), &mcp.CallToolParams{Name: "search_workspace", Arguments: map[string]any{"query": ""}})
		for _, r := range structured(t, res)["results"].([]any) {
			if id := r.(map[string]any)["id"].(string); !strings.Contains(id, "ticket") && !strings.Contains(id, "support") && !strings.Contains(id, "globex") {
				t.Errorf("carol's search found %s", id)
			}
		}
	})
	t.Run("removed member", func(t *testing.T) {
		token := ta.oauthToken(t, "vic", teamAcme, []string{"data:read"})
		cs := ta.connect(t, token)
		if _, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "search_workspace", Arguments: map[string]any{}}); err != nil {
			t.Fatal(err)
		}
		ta.dir.(*access.MemoryDirectory).RemoveMember(teamAcme, "vic")
		status, _, _ := ta.Do(t, "POST", "/mcp", token, `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`, "Accept", "application/json, text/event-stream")
		if status != http.StatusUnauthorized {
			t.Errorf("removed member's OAuth token: status %d, want 401", status)
		}
	})
}

func scopeNames[S ~string](scopes []S) []string {
	out := make([]string, len(scopes))
	for i, s := range scopes {
		out[i] = string(s)
	}
	return out
}

// TestProtectedResourceMetadata: both RFC 9728 locations name the
// canonical MCP URL byte for byte and the authorization server.
func TestProtectedResourceMetadata(t *testing.T) {
	ta := MustApp(t, func(c *config) {})
	for _, path := range []string{"/.well-known/oauth-protected-resource", "/.well-known/oauth-protected-resource/mcp"} {
		var md struct {
			Resource             string   `json:"resource"`
			AuthorizationServers []string `json:"authorization_servers"`
		}
		ta.MustDo(t, http.StatusOK, "GET", path, "", nil, &md)
		if md.Resource != ta.url+"/mcp" || !slices.Equal(md.AuthorizationServers, []string{ta.url}) {
			t.Errorf("%s: %+v", path, md)
		}
	}
	// The Host header changes nothing: URLs come from the public URL.
	status, _, b := ta.Do(t, "GET", "/.well-known/oauth-authorization-server", "", nil, "Host", "evil.example.com")
	if status != http.StatusOK || strings.Contains(string(b), "evil") {
		t.Errorf("metadata with a forged Host: %d %s", status, b)
	}
	_, h, _ := ta.Do(t, "POST", "/mcp", "", `{}`, "Host", "evil.example.com")
	if strings.Contains(h.Get("WWW-Authenticate"), "evil") {
		t.Errorf("WWW-Authenticate follows the Host header: %s", h.Get("WWW-Authenticate"))
	}
}

// freePort returns a loopback port that was free a moment ago.
func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// TestConformanceAuthorization runs the conformance suite's
// authorization-server scenarios (authorization-server-metadata-endpoint,
// with its client ID metadata document check, then
// authorization-code-grant, which reads the first one's result) against
// the reference server's AS, once with a registered client (DCR, the
// older way) and once with a client ID metadata document the test serves
// on loopback (the reference server reads documents there in its demo
// mode); the test plays the user on the consent page the suite asks a
// person to open.
func TestConformanceAuthorization(t *testing.T) {
	bin := mustTools(t)
	ta := MustApp(t, nil)
	port := freePort(t)
	redirect := fmt.Sprintf("http://127.0.0.1:%d/callback", port)
	var docURL string
	doc := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(map[string]any{"client_id": docURL, "client_name": "MCP conformance (document)",
			"redirect_uris": []string{redirect}, "token_endpoint_auth_method": "none"})
	}))
	defer doc.Close()
	docURL = doc.URL + "/conformance/client.json"
	for _, tc := range []struct{ name, clientID string }{
		{"registered client", ta.register(t, "MCP conformance", redirect)},
		{"client ID metadata document", docURL},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, log, werr := runConformanceAuthorization(t, bin, ta, tc.clientID, port)
			var ids []string
			for _, c := range got["SUCCESS"] {
				ids = append(ids, c.ID)
			}
			slices.Sort(ids)
			t.Logf("conformance authorization (%s): %d SUCCESS, %d WARNING, %d FAILURE", tc.name, len(got["SUCCESS"]), len(got["WARNING"]), len(got["FAILURE"]))
			want := []string{"authorization-code-grant", "authorization-server-metadata", "authorization-server-metadata-cimd"}
			if diff := cmp.Diff(want, ids); diff != "" || werr != nil || len(got["FAILURE"])+len(got["WARNING"]) > 0 {
				t.Errorf("exit %v; passed checks mismatch (-want +got):\n%s\nfailed %+v\nwarnings %+v\n%s", werr, diff, got["FAILURE"], got["WARNING"], log)
			}
		})
	}
}

// runConformanceAuthorization runs the suite's authorization scenarios
// for clientID, whose redirect URI is the suite's callback on port, and
// answers the consent page as alice; it returns the checks by status.
func runConformanceAuthorization(t *testing.T, bin string, ta *testApp, clientID string, port int) (map[string][]check, string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	out := t.TempDir()
	// --spec-version 2025-11-25 selects exactly those two scenarios.
	cmd := peerCmd(ctx, t, bin, "conformance", "authorization", "--url", ta.url, "--spec-version", "2025-11-25",
		"--client-id", clientID, "--resource", ta.url+"/mcp", "-p", fmt.Sprint(port), "-o", out)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = cmd.Stdout
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var log strings.Builder
	var authURL string
	started := false
	sc := bufio.NewScanner(stdout)
	for sc.Scan() {
		line := sc.Text()
		log.WriteString(line + "\n")
		if strings.HasPrefix(line, ta.url+"/oauth/authorize?") {
			authURL = line
		}
		started = started || strings.HasPrefix(line, "Callback server started")
		// The suite prints the URL, then says when its callback server
		// listens: the test answers once both are there.
		if authURL != "" && started {
			loc := ta.consent(t, authURL, "alice", teamAcme, []string{"data:read"})
			authURL = ""
			resp, err := http.Get(loc.String()) // the suite's callback server
			if err != nil {
				t.Fatalf("callback: %v\n%s", err, log.String())
			}
			resp.Body.Close()
		}
	}
	werr := cmd.Wait()
	files, _ := filepath.Glob(filepath.Join(out, "*", "checks.json"))
	got := map[string][]check{}
	for _, f := range files {
		var checks []check
		raw, _ := os.ReadFile(f)
		json.Unmarshal(raw, &checks)
		for _, c := range checks {
			got[c.Status] = append(got[c.Status], c)
		}
	}
	if len(files) != 2 {
		t.Errorf("%d scenarios ran, want 2", len(files))
	}
	return got, log.String(), werr
}

// TestRefusedTokenChallenge: every kind of refused token gets 401 whose
// challenge says error="invalid_token" (RFC 6750 §3), so a client gets a
// new token instead of giving up; no token at all gets the plain
// challenge (§3.1).
func TestRefusedTokenChallenge(t *testing.T) {
	ta := MustApp(t, nil)
	alice := ta.session(t, "alice")
	status := func(token string) (int, string) {
		s, h, _ := ta.Do(t, "POST", "/mcp", token, `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`, "Accept", "application/json, text/event-stream")
		return s, h.Get("WWW-Authenticate")
	}
	post := func(path string, form url.Values) (tok oauthTokens) {
		resp, err := http.PostForm(ta.url+path, form)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		json.NewDecoder(resp.Body).Decode(&tok)
		return tok
	}
	revoked := ta.oauthTokens(t, "alice", teamAcme, []string{"data:read"})
	post("/oauth/revoke", url.Values{"token": {revoked.RefreshToken}, "client_id": {revoked.ClientID}})
	first := ta.oauthTokens(t, "alice", teamAcme, []string{"data:read"})
	refresh := url.Values{"grant_type": {"refresh_token"}, "refresh_token": {first.RefreshToken}, "client_id": {first.ClientID}}
	rotated := post("/oauth/token", refresh)
	if s, _ := status(rotated.AccessToken); s != http.StatusOK {
		t.Fatalf("the rotated access token before the replay: %d", s)
	}
	post("/oauth/token", refresh) // the replay revokes the grant
	removedGrant := ta.oauthTokens(t, "bob", teamAcme, []string{"data:read"})
	var clients struct{ Clients []struct{ ID string } }
	ta.MustDo(t, http.StatusOK, "GET", "/account/mcp/clients", ta.session(t, "bob"), nil, &clients)
	for _, c := range clients.Clients {
		ta.MustDo(t, http.StatusNoContent, "DELETE", "/account/mcp/clients/"+c.ID, ta.session(t, "bob"), nil, nil)
	}
	removedMember := ta.oauthToken(t, "vic", teamAcme, []string{"data:read"})
	ta.dir.(*access.MemoryDirectory).RemoveMember(teamAcme, "vic")
	for name, token := range map[string]string{
		"garbage":                        "askbi_at_garbage.garbage",
		"revoked at /oauth/revoke":       revoked.AccessToken,
		"rotated out":                    first.AccessToken,
		"its grant revoked by a replay":  rotated.AccessToken,
		"its grant removed by the user":  removedGrant.AccessToken,
		"its user removed from the team": removedMember,
		"a refresh token":                revoked.RefreshToken,
		"a product session":              alice,
	} {
		s, h := status(token)
		if s != http.StatusUnauthorized || !strings.HasPrefix(h, `Bearer error="invalid_token"`) || !strings.Contains(h, `resource_metadata="`+ta.url+`/.well-known/oauth-protected-resource/mcp"`) {
			t.Errorf("%s: %d, WWW-Authenticate %q; want 401 with error=\"invalid_token\"", name, s, h)
		}
	}
	if s, h := status(""); s != http.StatusUnauthorized || strings.Contains(h, "error=") {
		t.Errorf("no token: %d, WWW-Authenticate %q; want 401 with the plain challenge", s, h)
	}
}

// TestMCPNoSecretsNoSnapshots (seed 000 Test Plan: "No tool exposes
// connection credentials ... or creates a public chart snapshot"): on
// the reference server over PostgreSQL, with the demo warehouse (its
// SQL source logs in with a password) and the demo's remote MCP
// connection (a bearer token), every tool is called, on both
// connections, with successes and failures, by an API key and by an
// OAuth token; no answer (content or structuredContent) holds a password
// or the token. No tool offers a snapshot or share link, and every link
// in an answer is a product page that sends a browser without a session
// to sign in.
func TestMCPNoSecretsNoSnapshots(t *testing.T) {
	ta := MustApp(t, func(c *config) { c.inMemory, c.databaseURL = false, pgtest.MustDatabase(t) })
	secrets := map[string]string{"the remote MCP connection's bearer token": ta.demoMCP.Token}
	for name, raw := range map[string]string{"reader": ta.readerURL, "warehouse owner": ta.creds.WarehouseDatabaseURL} {
		u, err := url.Parse(raw)
		if err != nil {
			t.Fatal(err)
		}
		if pw, ok := u.User.Password(); ok && pw != "" {
			secrets["the "+name+" password"] = pw
		}
	}
	if _, ok := secrets["the reader password"]; !ok {
		t.Fatalf("the warehouse reader has no password (%d secrets): nothing to look for", len(secrets))
	}
	calls := []struct {
		tool string
		args map[string]any
	}{
		{"search_workspace", map[string]any{"query": ""}},
		{"search_workspace", map[string]any{"query": "analytics", "types": []any{"connection", "dataset"}}},
		{"get_workspace_activity", map[string]any{}},
		{"run_dataset", map[string]any{"dataset_id": "ds_weekly_signups", "refresh": true}},
		{"run_dataset", map[string]any{"dataset_id": demoTopPagesDS, "refresh": true}},
		{"run_dataset", map[string]any{"dataset_id": "ds_nope"}},
		{"get_chart_data", map[string]any{"chart_id": "chart_weekly_signups"}},
		{"get_chart_data", map[string]any{"chart_id": "chart_top_pages", "refresh": true}},
		{"create_chart_preview", map[string]any{"dataset_id": "ds_weekly_signups", "chart_type": "line", "x_field": "week", "y_fields": []any{"signups"}, "name": "Secrets check", "image": true}},
		{"create_chart_preview", map[string]any{"dataset_id": demoTopPagesDS, "chart_type": "bar", "x_field": "page", "y_fields": []any{"visitors"}, "name": "Pages check"}},
		{"explore_data", map[string]any{"operation": "inspect"}},
		{"explore_data", map[string]any{"operation": "inspect", "connection_id": "conn_acme_wh"}},
		{"explore_data", map[string]any{"operation": "inspect", "connection_id": "conn_acme_wh", "table": "signups"}},
		{"explore_data", map[string]any{"operation": "inspect", "connection_id": demoMCPConn}},
		{"explore_data", map[string]any{"operation": "preview", "connection_id": "conn_acme_wh", "sql": "SELECT current_user AS who, count(*) AS n FROM signups"}},
		{"explore_data", map[string]any{"operation": "preview", "connection_id": "conn_acme_wh", "sql": "SELECT * FROM no_such_table"}},
		{"explore_data", map[string]any{"operation": "preview", "connection_id": "conn_acme_wh", "sql": "SELECT setting FROM pg_settings WHERE name = 'password_encryption'"}},
		{"explore_data", map[string]any{"operation": "preview", "connection_id": demoMCPConn, "tool": "top_pages", "arguments": map[string]any{"days": 7},
			"fields": map[string]any{"page": []any{"column_0"}, "visitors": []any{"column_1", "0"}}}},
		{"explore_data", map[string]any{"operation": "preview", "connection_id": demoMCPConn, "tool": "delete_project_data", "arguments": map[string]any{}}},
		{"explore_data", map[string]any{"operation": "save", "connection_id": "conn_acme_wh", "sql": "SELECT country, sum(signups) AS signups FROM signups GROUP BY 1",
			"name": "Signups by country (check)", "dashboard_id": "dash_growth"}},
	}
	link := regexp.MustCompile(`https?://[^"\\\s]+`)
	for _, cred := range []struct{ name, token string }{
		{"API key", ta.apiKey(t, "alice")},
		{"OAuth", ta.oauthToken(t, "alice", teamAcme, []string{"data:read", "data:refresh", "charts:preview", "datasets:write"})},
	} {
		t.Run(cred.name, func(t *testing.T) {
			_, _, list := ta.Do(t, "POST", "/mcp", cred.token, `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`, "Accept", "application/json, text/event-stream")
			for _, word := range []string{"snapshot", "share", "public", "embed"} {
				if strings.Contains(strings.ToLower(string(list)), word) {
					t.Errorf("tools/list mentions %q: %.300s", word, list)
				}
			}
			failures := 0
			for _, c := range calls {
				body, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": map[string]any{"name": c.tool, "arguments": c.args}})
				status, _, b := ta.Do(t, "POST", "/mcp", cred.token, string(body), "Accept", "application/json, text/event-stream")
				var msg struct {
					Result struct {
						IsError bool `json:"isError"`
					} `json:"result"`
				}
				if status != http.StatusOK || json.Unmarshal(b, &msg) != nil {
					t.Fatalf("%s %v: %d %.300s", c.tool, c.args, status, b)
				}
				if msg.Result.IsError {
					failures++
				}
				// The answer as JSON and as the strings a client decodes
				// from it (the content's text holds JSON, escaped once more).
				for _, text := range []string{string(b), strings.ReplaceAll(string(b), `\"`, `"`)} {
					for what, secret := range secrets {
						if strings.Contains(text, secret) || strings.Contains(text, url.QueryEscape(secret)) {
							t.Errorf("%s %v: the answer holds %s", c.tool, c.args, what)
						}
					}
				}
				for _, l := range link.FindAllString(strings.ReplaceAll(string(b), `\"`, `"`), -1) {
					u, err := url.Parse(l)
					if err != nil || !strings.HasPrefix(l, ta.url+"/") || u.RawQuery != "" {
						t.Errorf("%s: link %s is not a plain product page of %s", c.tool, l, ta.url)
						continue
					}
					resp, err := noFollow.Get(l)
					if err != nil {
						t.Fatal(err)
					}
					resp.Body.Close()
					if resp.StatusCode != http.StatusSeeOther || !strings.HasPrefix(resp.Header.Get("Location"), "/signin?") {
						t.Errorf("%s: link %s without a session = %d %s; want it sent to sign in", c.tool, l, resp.StatusCode, resp.Header.Get("Location"))
					}
				}
			}
			if failures < 3 || failures == len(calls) {
				t.Errorf("%d of %d calls failed; want the three failures and the rest served", failures, len(calls))
			}
		})
	}
	// No route serves a snapshot or share page either.
	for _, path := range []string{"/share/chart_weekly_signups", "/public/charts/chart_weekly_signups", "/snapshots/chart_weekly_signups", "/embed/chart_weekly_signups"} {
		if status, _, _ := ta.Do(t, "GET", path, "", nil); status != http.StatusNotFound {
			t.Errorf("GET %s = %d, want 404", path, status)
		}
	}
}

// TestDocumentsOnLoopbackOnlyInDemo: the reference server reads client ID
// metadata documents on this machine only in its demo mode
// (-demo-sign-in); without it, such a client is refused on the consent
// page and its document never fetched.
func TestDocumentsOnLoopbackOnlyInDemo(t *testing.T) {
	var docURL string
	var fetched atomic.Bool
	doc := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		fetched.Store(true)
		json.NewEncoder(w).Encode(map[string]any{"client_id": docURL, "redirect_uris": []string{"http://127.0.0.1:9/callback"}})
	}))
	defer doc.Close()
	docURL = doc.URL + "/client.json"
	q := url.Values{"response_type": {"code"}, "client_id": {docURL}, "redirect_uri": {"http://127.0.0.1:9/callback"},
		"code_challenge": {strings.Repeat("c", 43)}, "code_challenge_method": {"S256"}}
	for _, demo := range []bool{true, false} {
		ta := MustApp(t, func(c *config) { c.demoSignIn = demo })
		fetched.Store(false)
		req, _ := http.NewRequest("GET", ta.url+"/oauth/authorize?"+q.Encode(), nil)
		req.AddCookie(&http.Cookie{Name: sessionCookie, Value: ta.session(t, "alice")})
		resp, err := noFollow.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if ok := resp.StatusCode == http.StatusOK; ok != demo || fetched.Load() != demo {
			t.Errorf("demo mode %v: consent page %d, document fetched %v: %s", demo, resp.StatusCode, fetched.Load(), b)
		}
	}
}
