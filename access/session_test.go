package access_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/askbi/askbi"
	"github.com/askbi/askbi/access"
)

// TestSessionAuth: the Authorization header, when sent, is the only
// credential looked at (a session token, or with Keys an API key);
// without it the session cookie; every refusal is Unauthenticated with
// the one message, and a session that cannot be checked now is
// Unavailable, never a refusal. The cookie authenticates no request from
// another site that may change something (Forbidden), and a bearer
// token, which another site's form cannot send, is not asked.
func TestSessionAuth(t *testing.T) {
	keys, _, _, c, _ := newKeys(t)
	owner := MustLive(t, c, "owner", "acme")
	secret, k, err := keys.Create(context.Background(), owner, access.KeyRequest{Name: "ci", Scopes: []string{"data:read"}, Projects: access.AllProjects()})
	if err != nil {
		t.Fatal(err)
	}
	session := access.Principal{UserID: "owner", TeamID: "acme", Auth: access.AuthSession}
	lookup := func(_ context.Context, tok string) (access.Principal, error) {
		switch tok {
		case "s-owner":
			return session, nil
		case "s-down":
			return access.Principal{}, askbi.Errorf(askbi.Unavailable, "sessions cannot be read")
		}
		return access.Principal{}, askbi.Errorf(askbi.Unauthenticated, "not a session")
	}
	const msg = "sign in at /signin"
	bearerOnly := access.SessionAuth(lookup, nil)
	browser := access.SessionAuth(lookup, &access.SessionOptions{Cookie: "sid", Message: msg})
	data := access.SessionAuth(lookup, &access.SessionOptions{Cookie: "sid", Keys: keys, Message: msg})
	key := access.Principal{UserID: "owner", TeamID: "acme", Role: access.RoleOwner, Projects: access.AllProjects(),
		Scopes: []access.Scope{access.ScopeDataRead}, Auth: access.AuthAPIKey, CredentialID: k.ID}
	for _, tc := range []struct {
		name    string
		auth    access.Authenticate
		header  string
		cookie  string
		method  string   // default GET
		from    []string // header name, value pairs: where the request comes from
		want    access.Principal
		code    askbi.Code
		message string
	}{
		{name: "bearer session", auth: bearerOnly, header: "Bearer s-owner", want: session},
		{name: "bearer session, any case", auth: browser, header: "bearer  s-owner ", want: session},
		{name: "API key without Keys", auth: browser, header: "Bearer " + secret, code: askbi.Unauthenticated, message: msg},
		{name: "API key with Keys", auth: data, header: "Bearer " + secret, want: key},
		{name: "unknown bearer token", auth: data, header: "Bearer nope", code: askbi.Unauthenticated, message: msg},
		{name: "default message", auth: bearerOnly, header: "Bearer nope", code: askbi.Unauthenticated,
			message: "sign in: send Authorization: Bearer <session_token>"},
		{name: "another scheme", auth: data, header: "Basic s-owner", code: askbi.Unauthenticated, message: msg},
		{name: "header decides over the cookie", auth: data, header: "Bearer nope", cookie: "s-owner", code: askbi.Unauthenticated, message: msg},
		{name: "cookie session", auth: browser, cookie: "s-owner", want: session},
		{name: "cookie not read without Cookie", auth: bearerOnly, cookie: "s-owner", code: askbi.Unauthenticated,
			message: "sign in: send Authorization: Bearer <session_token>"},
		{name: "API key in the cookie", auth: data, cookie: secret, code: askbi.Unauthenticated, message: msg},
		{name: "bearer session unavailable", auth: data, header: "Bearer s-down", code: askbi.Unavailable},
		{name: "cookie session unavailable", auth: browser, cookie: "s-down", code: askbi.Unavailable},
		{name: "no credential", auth: data, code: askbi.Unauthenticated, message: msg},
		{name: "cookie, cross-site POST", auth: data, cookie: "s-owner", method: "POST",
			from: []string{"Sec-Fetch-Site", "cross-site", "Origin", "https://evil.example"}, code: askbi.Forbidden},
		{name: "cookie, cross-site DELETE by Origin alone", auth: browser, cookie: "s-owner", method: "DELETE",
			from: []string{"Origin", "https://evil.example"}, code: askbi.Forbidden},
		{name: "cookie, same-site PUT", auth: browser, cookie: "s-owner", method: "PUT",
			from: []string{"Sec-Fetch-Site", "same-origin", "Origin", "http://example.com"}, want: session},
		{name: "cookie, cross-site GET (a link)", auth: browser, cookie: "s-owner",
			from: []string{"Sec-Fetch-Site", "cross-site"}, want: session},
		{name: "cookie, POST without browser headers", auth: browser, cookie: "s-owner", method: "POST", want: session},
		{name: "bearer, cross-site POST", auth: data, header: "Bearer s-owner", method: "POST",
			from: []string{"Sec-Fetch-Site", "cross-site", "Origin", "https://evil.example"}, want: session},
	} {
		t.Run(tc.name, func(t *testing.T) {
			method := tc.method
			if method == "" {
				method = http.MethodGet
			}
			r := httptest.NewRequest(method, "/api/x", nil)
			for i := 0; i+1 < len(tc.from); i += 2 {
				r.Header.Set(tc.from[i], tc.from[i+1])
			}
			if tc.header != "" {
				r.Header.Set("Authorization", tc.header)
			}
			if tc.cookie != "" {
				r.AddCookie(&http.Cookie{Name: "sid", Value: tc.cookie})
			}
			p, err := tc.auth(r)
			if code := askbi.ErrorCode(err); code != tc.code {
				t.Fatalf("code = %q (%v), want %q", code, err, tc.code)
			}
			if tc.message != "" && askbi.ErrorMessage(err) != tc.message {
				t.Errorf("message = %q, want %q", askbi.ErrorMessage(err), tc.message)
			}
			if diff := cmp.Diff(tc.want, p, cmp.AllowUnexported(access.Principal{}), cmpopts.IgnoreFields(access.Principal{}, "read")); diff != "" {
				t.Errorf("principal mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

// TestAnyToken: the first lookup that accepts a token wins, in order; a
// refusal tries the next; a failure other than Unauthenticated (a store
// that is down) stops the search and is returned as it is, never read as
// a wrong token.
func TestAnyToken(t *testing.T) {
	lookup := func(accept string, fail error) access.TokenLookup {
		return func(_ context.Context, token string) (access.Principal, error) {
			switch {
			case fail != nil:
				return access.Principal{}, fail
			case token == accept:
				return access.Principal{UserID: accept}, nil
			}
			return access.Principal{}, askbi.Errorf(askbi.Unauthenticated, "not mine")
		}
	}
	down := askbi.Errorf(askbi.Unavailable, "the key store is down")
	for _, tc := range []struct {
		name    string
		lookups []access.TokenLookup
		token   string
		user    string
		code    askbi.Code
	}{
		{"the first accepts", []access.TokenLookup{lookup("a", nil), lookup("b", nil)}, "a", "a", ""},
		{"the second accepts", []access.TokenLookup{lookup("a", nil), lookup("b", nil)}, "b", "b", ""},
		{"none accepts", []access.TokenLookup{lookup("a", nil), lookup("b", nil)}, "c", "", askbi.Unauthenticated},
		{"a store down stops the search", []access.TokenLookup{lookup("", down), lookup("b", nil)}, "b", "", askbi.Unavailable},
		{"no lookups", nil, "a", "", askbi.Unauthenticated},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, err := access.AnyToken(tc.lookups...)(t.Context(), tc.token)
			if p.UserID != tc.user || askbi.ErrorCode(err) != tc.code && !(tc.code == "" && err == nil) {
				t.Errorf("AnyToken(%q) = %q, %v; want %q, code %q", tc.token, p.UserID, err, tc.user, tc.code)
			}
		})
	}
}
