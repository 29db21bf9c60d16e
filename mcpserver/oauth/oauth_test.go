package oauth_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"html"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/askbi/askbi"
	"github.com/askbi/askbi/access"
	"github.com/askbi/askbi/mcpserver/oauth"
	"github.com/askbi/askbi/mcpserver/oauth/oauthtest"
)

func TestMemoryStore(t *testing.T) {
	oauthtest.RunStore(t, func(t *testing.T) oauth.Store { return oauth.NewMemoryStore() })
}

// users is the test's product login: the X-Test-User header names the
// signed-in user.
type users struct{ teams map[string][]oauth.Team }

func (u users) SignedIn(r *http.Request) (string, error) { return r.Header.Get("X-Test-User"), nil }
func (u users) SignInURL(returnTo string) string {
	return "/signin?return=" + url.QueryEscape(returnTo)
}
func (u users) Teams(_ context.Context, user string) ([]oauth.Team, error) {
	return u.teams[user], nil
}

type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *clock) advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

// env is an authorization server over a two-team directory: alice owns
// acme and is a viewer in globex; bob is an acme editor on growth.
type env struct {
	as    *oauth.Server
	store *oauth.MemoryStore
	dir   *access.MemoryDirectory
	audit *access.MemoryAudit
	logs  *bytes.Buffer
	clock *clock
	url   string
}

// testSecret is the token key, shared with a second server in
// TestResource so that only the audience tells them apart.
var testSecret = []byte(strings.Repeat("k", 32))

func newEnv(t *testing.T) *env {
	t.Helper()
	return newEnvWith(t, nil)
}

// newEnvWith is newEnv with the options edit changes.
func newEnvWith(t *testing.T, edit func(*oauth.Options)) *env {
	t.Helper()
	e := &env{store: oauth.NewMemoryStore(), dir: access.NewMemoryDirectory(), audit: access.NewMemoryAudit(0),
		logs: &bytes.Buffer{}, clock: &clock{t: time.Now()}}
	for _, p := range [][2]string{{"acme", "growth"}, {"acme", "finance"}, {"globex", "ops"}} {
		e.dir.AddProject(p[0], p[1])
	}
	e.dir.SetMember("acme", "alice", access.RoleOwner, access.AllProjects())
	e.dir.SetMember("globex", "alice", access.RoleViewer, access.ProjectSet("ops"))
	e.dir.SetMember("acme", "bob", access.RoleEditor, access.ProjectSet("growth"))
	u := users{teams: map[string][]oauth.Team{
		"alice": {{ID: "acme", Name: "Acme"}, {ID: "globex", Name: "Globex"}},
		"bob":   {{ID: "acme", Name: "Acme"}},
	}}
	hs := httptest.NewUnstartedServer(nil)
	e.url = "http://" + hs.Listener.Addr().String()
	log := slog.New(slog.NewTextHandler(e.logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	opts := &oauth.Options{Audit: e.audit, Logger: log, Now: e.clock.Now, Secret: testSecret}
	if edit != nil {
		edit(opts)
	}
	as, err := oauth.New(e.url, e.store, u, access.NewChecker(e.dir, nil), opts)
	if err != nil {
		t.Fatal(err)
	}
	e.as = as
	hs.Config.Handler = as.Handler()
	hs.Start()
	t.Cleanup(hs.Close)
	return e
}

var noRedirect = &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}

// MustRegister registers a client and returns its registration answer.
func (e *env) MustRegister(t *testing.T, meta map[string]any) map[string]any {
	t.Helper()
	status, body := e.post(t, "/oauth/register", "application/json", mustJSON(t, meta), "")
	if status != http.StatusCreated {
		t.Fatalf("register: status %d: %s", status, body)
	}
	var out map[string]any
	if err := json.Unmarshal(body, &out); err != nil {
		t.Fatal(err)
	}
	return out
}

func (e *env) post(t *testing.T, path, contentType string, body []byte, user string) (int, []byte) {
	t.Helper()
	req, _ := http.NewRequest("POST", e.url+path, bytes.NewReader(body))
	req.Header.Set("Content-Type", contentType)
	if user != "" {
		req.Header.Set("X-Test-User", user)
	}
	resp, err := noRedirect.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, b
}

func mustJSON(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// flow is one authorization code flow of a client.
type flow struct {
	ClientID, Secret, Redirect string
	Verifier                   string
	Params                     url.Values // extra or replaced authorize parameters
}

func newFlow(clientID, redirect string) *flow {
	return &flow{ClientID: clientID, Redirect: redirect, Verifier: strings.Repeat("v", 10) + base64.RawURLEncoding.EncodeToString([]byte("a verifier of enough length here")), Params: url.Values{}}
}

func challenge(verifier string) string {
	sum := sha256.Sum256([]byte(verifier))
	return base64.RawURLEncoding.EncodeToString(sum[:])
}

func (f *flow) authorizeURL(e *env) string {
	q := url.Values{"response_type": {"code"}, "client_id": {f.ClientID}, "redirect_uri": {f.Redirect},
		"state": {"state-1234567890"}, "code_challenge": {challenge(f.Verifier)}, "code_challenge_method": {"S256"},
		"resource": {e.as.Resource()}}
	for k, v := range f.Params {
		if len(v) == 0 {
			q.Del(k)
		} else {
			q[k] = v
		}
	}
	return e.url + "/oauth/authorize?" + q.Encode()
}

// page is a consent page as a browser got it.
type page struct {
	status  int
	header  http.Header
	body    string
	form    url.Values // the hidden fields
	request string
}

var hidden = regexp.MustCompile(`<input type="hidden" name="([a-z_]+)" value="([^"]*)">`)

// open loads the authorize URL as user.
func (e *env) open(t *testing.T, rawURL, user string) page {
	t.Helper()
	req, _ := http.NewRequest("GET", rawURL, nil)
	if user != "" {
		req.Header.Set("X-Test-User", user)
	}
	resp, err := noRedirect.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	p := page{status: resp.StatusCode, header: resp.Header, body: string(b), form: url.Values{}}
	for _, m := range hidden.FindAllStringSubmatch(p.body, -1) {
		if m[1] != "scope" {
			p.form.Set(m[1], html.UnescapeString(m[2]))
		}
	}
	return p
}

// answer posts the consent form as user and returns the redirect.
func (e *env) answer(t *testing.T, p page, user string, fields url.Values) (int, *url.URL, string) {
	t.Helper()
	form := url.Values{}
	for k, v := range p.form {
		form[k] = v
	}
	for k, v := range fields {
		form[k] = v
	}
	req, _ := http.NewRequest("POST", e.url+"/oauth/authorize", strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("X-Test-User", user)
	resp, err := noRedirect.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	loc, _ := url.Parse(resp.Header.Get("Location"))
	return resp.StatusCode, loc, string(b)
}

// MustCode runs the authorization as user for team with scopes and
// returns the code.
func (e *env) MustCode(t *testing.T, f *flow, user, team string, scopes ...access.Scope) string {
	t.Helper()
	p := e.open(t, f.authorizeURL(e), user)
	if p.status != http.StatusOK || p.form.Get("request_id") == "" {
		t.Fatalf("consent page: status %d: %s", p.status, p.body)
	}
	fields := url.Values{"decision": {"allow"}, "team": {team}}
	for _, s := range scopes {
		fields.Add("scope", string(s))
	}
	status, loc, body := e.answer(t, p, user, fields)
	if status != http.StatusSeeOther && status != http.StatusFound {
		t.Fatalf("consent answer: status %d: %s", status, body)
	}
	q := loc.Query()
	if q.Get("error") != "" || q.Get("state") != "state-1234567890" || q.Get("iss") != e.url {
		t.Fatalf("authorization response %s", loc)
	}
	return q.Get("code")
}

// tokens is a token endpoint answer.
type tokens struct {
	AccessToken  string `json:"access_token"`
	RefreshToken string `json:"refresh_token"`
	Scope        string `json:"scope"`
	ExpiresIn    int    `json:"expires_in"`
	Error        string `json:"error"`
	Status       int    `json:"-"`
	Desc         string `json:"error_description"`
}

func (e *env) token(t *testing.T, f *flow, form url.Values) tokens {
	t.Helper()
	form.Set("client_id", f.ClientID)
	if f.Secret != "" {
		form.Set("client_secret", f.Secret)
	}
	status, body := e.post(t, "/oauth/token", "application/x-www-form-urlencoded", []byte(form.Encode()), "")
	var out tokens
	if err := json.Unmarshal(body, &out); err != nil {
		t.Fatalf("token answer %d %s: %v", status, body, err)
	}
	out.Status = status
	return out
}

func (e *env) exchange(t *testing.T, f *flow, code string) tokens {
	t.Helper()
	return e.token(t, f, url.Values{"grant_type": {"authorization_code"}, "code": {code}, "redirect_uri": {f.Redirect},
		"code_verifier": {f.Verifier}, "resource": {e.as.Resource()}})
}

func (e *env) refresh(t *testing.T, f *flow, rt string) tokens {
	t.Helper()
	return e.token(t, f, url.Values{"grant_type": {"refresh_token"}, "refresh_token": {rt}, "resource": {e.as.Resource()}})
}

// MustTokens runs a whole flow and returns its tokens.
func (e *env) MustTokens(t *testing.T, f *flow, user, team string, scopes ...access.Scope) tokens {
	t.Helper()
	tok := e.exchange(t, f, e.MustCode(t, f, user, team, scopes...))
	if tok.Status != http.StatusOK || tok.AccessToken == "" || tok.RefreshToken == "" {
		t.Fatalf("token exchange: %+v", tok)
	}
	return tok
}

// MustPublicClient registers a public client with a loopback redirect.
func (e *env) MustPublicClient(t *testing.T) *flow {
	t.Helper()
	reg := e.MustRegister(t, map[string]any{"client_name": "Test agent", "redirect_uris": []string{"http://127.0.0.1:3000/callback"},
		"token_endpoint_auth_method": "none"})
	return newFlow(reg["client_id"].(string), "http://127.0.0.1:3000/callback")
}

func code(err error) askbi.Code { return askbi.ErrorCode(err) }

// TestParseSecret: a secret is base64 of at least 32 bytes.
func TestParseSecret(t *testing.T) {
	good := base64.StdEncoding.EncodeToString(bytes.Repeat([]byte{7}, 32))
	if k, err := oauth.ParseSecret(" " + good + "\n"); err != nil || len(k) != 32 {
		t.Errorf("ParseSecret(32 bytes) = %d bytes, %v", len(k), err)
	}
	for _, bad := range []string{"", "not base64!", base64.StdEncoding.EncodeToString(make([]byte, 31))} {
		if _, err := oauth.ParseSecret(bad); askbi.ErrorCode(err) != askbi.InvalidArgument {
			t.Errorf("ParseSecret(%q) = %v; want invalid_argument", bad, err)
		}
	}
}
