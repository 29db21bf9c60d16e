package main

import (
	"net/http"
	"testing"
)

// TestAccountSession: the account MCP settings take the product session
// the way the chat API does (Authorization: Bearer <session_token>, what
// the page sends) or as the /signin cookie, and nothing else: not an API
// key, not an MCP OAuth token, not a guess. A removal from another site
// is refused; the page's own removal revokes at once.
func TestAccountSession(t *testing.T) {
	ta := MustApp(t, nil)
	alice := ta.session(t, "alice")
	oauthToken := ta.oauthToken(t, "alice", teamAcme, []string{"data:read"})
	var clients struct {
		Clients []struct {
			ID      string `json:"id"`
			AppName string `json:"app_name"`
		}
	}
	ta.MustDo(t, http.StatusOK, "GET", "/account/mcp/clients", alice, nil, &clients)
	if len(clients.Clients) != 1 || clients.Clients[0].AppName != "Test client" {
		t.Fatalf("clients by the bearer session = %+v; want the one", clients)
	}
	id := clients.Clients[0].ID
	var settings struct {
		ServerURL string `json:"server_url"`
	}
	ta.MustDo(t, http.StatusOK, "GET", "/account/mcp", alice, nil, &settings)
	if settings.ServerURL != ta.url+"/mcp" {
		t.Errorf("server_url = %q", settings.ServerURL)
	}

	for name, tok := range map[string]string{
		"none": "", "api key": ta.apiKey(t, "alice"), "oauth access token": oauthToken,
		"unknown session": sessionPrefix + "NOPE", "session typo": alice + "x",
	} {
		for _, r := range []struct{ method, path string }{
			{"GET", "/account/mcp"}, {"GET", "/account/mcp/clients"}, {"DELETE", "/account/mcp/clients/" + id},
		} {
			if status, _, b := ta.Do(t, r.method, r.path, tok, nil); status != http.StatusUnauthorized {
				t.Errorf("%s %s with %s: status %d, want 401; %s", r.method, r.path, name, status, b)
			}
		}
	}

	// The cookie from /signin works too, but not from another site.
	req, _ := http.NewRequest("DELETE", ta.url+"/account/mcp/clients/"+id, nil)
	req.AddCookie(&http.Cookie{Name: sessionCookie, Value: alice})
	req.Header.Set("Sec-Fetch-Site", "cross-site")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusForbidden {
		t.Errorf("a cross-site removal: status %d, want 403", resp.StatusCode)
	}
	mcpStatus := func() int {
		status, _, _ := ta.Do(t, "POST", "/mcp", oauthToken, `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`,
			"Accept", "application/json, text/event-stream")
		return status
	}
	if s := mcpStatus(); s != http.StatusOK {
		t.Fatalf("the client's token before removal: %d", s)
	}
	ta.MustDo(t, http.StatusNoContent, "DELETE", "/account/mcp/clients/"+id, alice, nil, nil)
	if s := mcpStatus(); s != http.StatusUnauthorized {
		t.Errorf("the client's token after removal: %d, want 401", s)
	}
	ta.MustDo(t, http.StatusOK, "GET", "/account/mcp/clients", alice, nil, &clients)
	if len(clients.Clients) != 0 {
		t.Errorf("clients after removal = %+v", clients)
	}
}
