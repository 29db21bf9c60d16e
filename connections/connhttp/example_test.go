package connhttp_test

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"

	"github.com/askbi/askbi"
	"github.com/askbi/askbi/access"
	"github.com/askbi/askbi/connections"
	"github.com/askbi/askbi/connections/connhttp"
	"github.com/askbi/askbi/connections/signin"
	"github.com/askbi/askbi/seal"
)

// Example mounts a team's connection routes on an in-memory store and
// lists the team's connections, first without a login, then as its owner.
func Example() {
	dir := access.NewMemoryDirectory()
	dir.AddProject("acme", "growth")
	dir.SetMember("acme", "alice", access.RoleOwner, access.AllProjects())
	gate := access.NewGate(access.NewChecker(dir, nil), nil)
	keys, err := seal.NewStaticKeyring("k1", map[string][]byte{"k1": seal.GenerateKey()})
	if err != nil {
		panic(err)
	}
	conns := connections.NewService(connections.NewMemoryStore(), keys, gate, nil)
	// The host's login: a session cookie here.
	session := func(r *http.Request) (access.Principal, error) {
		if c, err := r.Cookie("session"); err == nil && c.Value == "alice" {
			return access.Principal{UserID: "alice", TeamID: "acme", Auth: access.AuthSession}, nil
		}
		return access.Principal{}, askbi.Errorf(askbi.Unauthenticated, "sign in")
	}
	h := connhttp.New(conns, signin.New(conns, keys, nil), nil, session, nil)
	mux := http.NewServeMux()
	mux.Handle("/ai/connections", h)
	mux.Handle("/ai/connections/", h)
	srv := httptest.NewServer(mux)
	defer srv.Close()

	for _, cookie := range []string{"", "alice"} {
		req, _ := http.NewRequest("GET", srv.URL+"/ai/connections", nil)
		if cookie != "" {
			req.AddCookie(&http.Cookie{Name: "session", Value: cookie})
		}
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			panic(err)
		}
		body, _ := io.ReadAll(res.Body)
		res.Body.Close()
		fmt.Printf("%s %s", res.Status, body)
	}
	// Output:
	// 401 Unauthorized {"error":{"code":"unauthenticated","message":"sign in"}}
	// 200 OK {"connections":[],"can_manage":true}
}
