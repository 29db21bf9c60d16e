package oauth_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"

	"github.com/askbi/askbi/access"
	"github.com/askbi/askbi/mcpserver/oauth"
)

// login is the host's product login; nobody is signed in here.
type login struct{}

func (login) SignedIn(*http.Request) (string, error) { return "", nil }
func (login) SignInURL(returnTo string) string       { return "/login?return_to=" + returnTo }
func (login) Teams(context.Context, string) ([]oauth.Team, error) {
	return []oauth.Team{{ID: "acme", Name: "Acme"}}, nil
}

// Example starts the authorization server an MCP client discovers from
// the MCP server's protected resource metadata, reads its metadata and
// registers a public client (RFC 7591), as Claude or ChatGPT do before
// the user's consent.
func Example() {
	dir := access.NewMemoryDirectory()
	dir.SetMember("acme", "alice", access.RoleOwner, access.AllProjects())
	as, err := oauth.New("https://bi.example.com", oauth.NewMemoryStore(), login{}, access.NewChecker(dir, nil), nil)
	if err != nil {
		panic(err)
	}
	h := as.Handler()

	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest("GET", "/.well-known/oauth-authorization-server", nil))
	var meta struct {
		Issuer                        string   `json:"issuer"`
		TokenEndpoint                 string   `json:"token_endpoint"`
		CodeChallengeMethodsSupported []string `json:"code_challenge_methods_supported"`
	}
	if err := json.Unmarshal(rec.Body.Bytes(), &meta); err != nil {
		panic(err)
	}
	fmt.Println(rec.Code, meta.Issuer, meta.TokenEndpoint, meta.CodeChallengeMethodsSupported)

	rec = httptest.NewRecorder()
	req := httptest.NewRequest("POST", "/oauth/register", strings.NewReader(
		`{"client_name": "notebook", "redirect_uris": ["http://127.0.0.1:33418/callback"], "token_endpoint_auth_method": "none"}`))
	req.Header.Set("Content-Type", "application/json")
	h.ServeHTTP(rec, req)
	var client struct {
		ClientID   string `json:"client_id"`
		AuthMethod string `json:"token_endpoint_auth_method"`
	}
	if err := json.Unmarshal(rec.Body.Bytes(), &client); err != nil {
		panic(err)
	}
	fmt.Println(rec.Code, client.ClientID != "", client.AuthMethod)
	// Output:
	// 200 https://bi.example.com https://bi.example.com/oauth/token [S256]
	// 201 true none
}
