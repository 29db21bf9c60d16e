package mcpoauth

import (
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/google/go-cmp/cmp"
	"golang.org/x/oauth2"

	"github.com/askbi/askbi/internal/outbound"
)

func TestCheckIss(t *testing.T) {
	const issuer = "https://auth.example.com"
	for _, tc := range []struct {
		name      string
		supported bool
		iss       string
		want      Reason
	}{
		{"advertised and equal", true, issuer, ""},
		{"advertised and missing", true, "", ReasonIssMissing},
		{"not advertised and missing", false, "", ""},
		{"not advertised but different", false, "https://evil.example.com", ReasonIssMismatch},
		{"a trailing slash is another issuer", true, issuer + "/", ReasonIssMismatch},
		{"case is compared too", true, "https://AUTH.example.com", ReasonIssMismatch},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := CheckIss(&Metadata{Issuer: issuer, IssSupported: tc.supported}, tc.iss)
			if got := ReasonOf(err); got != tc.want {
				t.Errorf("CheckIss(%q) = %v; want reason %q", tc.iss, err, tc.want)
			}
		})
	}
}

func TestScopes(t *testing.T) {
	md := &Metadata{ResourceScopes: []string{"read", "write"}, Scopes: []string{"read", "write", "offline_access"}}
	for _, tc := range []struct {
		name    string
		ch      Challenge
		md      *Metadata
		earlier []string
		refresh bool
		want    []string
	}{
		{"the challenge's first", Challenge{Scopes: []string{"read"}}, md, nil, false, []string{"read"}},
		{"else the resource's", Challenge{}, md, nil, false, []string{"read", "write"}},
		{"none at all", Challenge{}, &Metadata{}, nil, true, nil},
		{"offline_access where offered", Challenge{Scopes: []string{"read"}}, md, nil, true, []string{"read", "offline_access"}},
		{"no offline_access where not offered", Challenge{Scopes: []string{"read"}}, &Metadata{}, nil, true, []string{"read"}},
		{"step up keeps what was granted", Challenge{Scopes: []string{"admin"}}, md, []string{"read", "offline_access"}, true,
			[]string{"read", "offline_access", "admin"}},
		{"no duplicates", Challenge{Scopes: []string{"read", "read"}}, md, []string{"read"}, false, []string{"read"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, Scopes(tc.ch, tc.md, tc.earlier, tc.refresh)); diff != "" {
				t.Errorf("Scopes mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func TestTokenResource(t *testing.T) {
	const resource = "https://mcp.example.com/mcp"
	md := &Metadata{Resource: resource}
	for _, tc := range []struct {
		name  string
		extra map[string]any
		typ   string
		want  Reason
	}{
		{"no resource said", nil, "Bearer", ""},
		{"the resource", map[string]any{"resource": resource}, "bearer", ""},
		{"an audience list naming it", map[string]any{"aud": []any{"https://other.example", resource}}, "Bearer", ""},
		{"an empty audience list", map[string]any{"aud": []any{}}, "", ""},
		{"another resource", map[string]any{"resource": "https://mcp.example.com/other"}, "Bearer", ReasonTokenResource},
		{"an audience list without it", map[string]any{"aud": []any{"https://other.example"}}, "Bearer", ReasonTokenResource},
		{"an audience that is not a string", map[string]any{"aud": 42.0}, "Bearer", ReasonTokenResource},
		{"not a bearer token", nil, "DPoP", ReasonTokenInvalid},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tok := (&oauth2.Token{AccessToken: "at", TokenType: tc.typ}).WithExtra(tc.extra)
			_, err := check(md, tok)
			if got := ReasonOf(err); got != tc.want {
				t.Errorf("check = %v; want reason %q", err, tc.want)
			}
		})
	}
}

func TestTemporary(t *testing.T) {
	for _, tc := range []struct {
		status int
		code   string
		want   bool
	}{
		{500, "", true}, {503, "", true}, {429, "", true}, {408, "", true},
		{400, "temporarily_unavailable", true}, {400, "invalid_grant", false}, {401, "invalid_client", false}, {400, "invalid_scope", false},
	} {
		if got := temporary(tc.status, tc.code); got != tc.want {
			t.Errorf("temporary(%d, %q) = %v; want %v", tc.status, tc.code, got, tc.want)
		}
	}
}

// TestRegisterRefusal: a registration endpoint's refusal is final, a
// server down or busy may pass.
func TestRegisterRefusal(t *testing.T) {
	for _, tc := range []struct {
		name   string
		status int
		body   string
		want   Reason
	}{
		{"RFC 7591 error", http.StatusBadRequest, `{"error":"invalid_client_metadata"}`, ReasonRegistrationNo},
		{"no registration served", http.StatusNotFound, `not found`, ReasonRegistrationNo},
		{"forbidden", http.StatusForbidden, `{}`, ReasonRegistrationNo},
		{"down", http.StatusServiceUnavailable, `busy`, ReasonRegistration},
		{"rate limited", http.StatusTooManyRequests, `slow down`, ReasonRegistration},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
				w.WriteHeader(tc.status)
				io.WriteString(w, tc.body)
			}))
			defer srv.Close()
			md := &Metadata{Issuer: srv.URL, RegistrationEndpoint: srv.URL + "/register"}
			_, err := Register(t.Context(), NewClient(srv.Client()), md,
				RegisterOptions{RedirectURI: "http://127.0.0.1:1/callback", ClientName: "askbi"})
			if got := ReasonOf(err); got != tc.want {
				t.Errorf("Register = %v (%s); want %s", err, got, tc.want)
			}
		})
	}
}

// TestRedirectOfBodyStaysOnOrigin: a 307 or 308 sends the body again (a
// token request's code, verifier or client secret), so the OAuth
// client's POST follows it only within its origin, and the refusal is
// classified as the policy's; a GET may still go elsewhere.
func TestRedirectOfBodyStaysOnOrigin(t *testing.T) {
	var elsewhere atomic.Int32
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		elsewhere.Add(1)
		io.WriteString(w, "{}")
	}))
	defer other.Close()
	var srv *httptest.Server
	srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/away":
			http.Redirect(w, r, other.URL+"/token", http.StatusTemporaryRedirect)
		case "/moved":
			http.Redirect(w, r, srv.URL+"/token", http.StatusPermanentRedirect)
		default:
			io.WriteString(w, "{}")
		}
	}))
	defer srv.Close()
	post := func(c *Client, path string) error {
		resp, err := c.HTTP().Post(srv.URL+path, "application/x-www-form-urlencoded", strings.NewReader("code=secret&code_verifier=v"))
		if err == nil {
			resp.Body.Close()
		}
		return err
	}
	c := NewClient(outbound.NewClient(nil))
	err := post(c, "/away")
	if err == nil || elsewhere.Load() != 0 {
		t.Fatalf("POST redirected to another origin: %v, %d requests there; want refused and none", err, elsewhere.Load())
	}
	var e *Error
	if !errors.As(c.classify(ReasonUnreachable, err), &e) || e.Reason != ReasonRefused {
		t.Errorf("classified as %v; want %s", c.classify(ReasonUnreachable, err), ReasonRefused)
	}
	if err := post(NewClient(outbound.NewClient(nil)), "/moved"); err != nil {
		t.Errorf("POST redirected within its origin: %v", err)
	}
	resp, err := NewClient(outbound.NewClient(nil)).HTTP().Get(srv.URL + "/away")
	if err != nil || elsewhere.Load() != 1 {
		t.Fatalf("GET redirected to another origin: %v", err)
	}
	resp.Body.Close()
}
