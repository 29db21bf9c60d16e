package connhttp_test

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/askbi/askbi"
	"github.com/askbi/askbi/access"
	"github.com/askbi/askbi/connections"
	"github.com/askbi/askbi/connections/connhttp"
	"github.com/askbi/askbi/connections/remote"
	"github.com/askbi/askbi/connections/signin"
	"github.com/askbi/askbi/connresolve"
	"github.com/askbi/askbi/internal/chattest"
	"github.com/askbi/askbi/seal"
	"github.com/askbi/askbi/workspace"
)

// The teams of the tests: acme (alice owner, bob editor, vic viewer) and
// globex (carol owner).
var users = map[string]access.Principal{
	"alice": {UserID: "alice", TeamID: "acme", Auth: access.AuthSession},
	"bob":   {UserID: "bob", TeamID: "acme", Auth: access.AuthSession},
	"vic":   {UserID: "vic", TeamID: "acme", Auth: access.AuthSession},
	"carol": {UserID: "carol", TeamID: "globex", Auth: access.AuthSession},
}

// token is the bearer token of the named user.
func token(name string) string { return "test-session-" + name }

// authenticate is the host's product login of the tests.
func authenticate(r *http.Request) (access.Principal, error) {
	scheme, tok, ok := strings.Cut(r.Header.Get("Authorization"), " ")
	name, known := strings.CutPrefix(strings.TrimSpace(tok), "test-session-")
	p, member := users[name]
	if !ok || !strings.EqualFold(scheme, "Bearer") || !known || !member {
		return access.Principal{}, askbi.Errorf(askbi.Unauthenticated, "sign in: send Authorization: Bearer <token>")
	}
	return p, nil
}

// config is what a test may change about the server.
type config struct {
	// oauth turns OAuth sign-in on (the callback is this server's).
	oauth bool
	// resolver, when set, serves the setup routes, over the usable
	// connections of the server's remote tools.
	resolver func(connresolve.Usable) *connresolve.Resolver
}

// testServer is connhttp behind a real HTTP server, mounted at
// /ai/connections as the reference server mounts it.
type testServer struct {
	chattest.Client
	audit *access.MemoryAudit
	conns *connections.Service

	mu    sync.Mutex
	convs map[string]string // conversation ID → its user
}

// MustServer serves connhttp.New over an in-memory service and stops it
// when the test ends.
func MustServer(tb testing.TB, edit func(*config)) *testServer {
	tb.Helper()
	var cfg config
	if edit != nil {
		edit(&cfg)
	}
	log := slog.New(slog.NewTextHandler(tb.Output(), &slog.HandlerOptions{Level: slog.LevelError}))
	dir := access.NewMemoryDirectory()
	dir.AddProject("acme", "growth")
	dir.SetMember("acme", "alice", access.RoleOwner, access.AllProjects())
	dir.SetMember("acme", "bob", access.RoleEditor, access.ProjectSet("growth"))
	dir.SetMember("acme", "vic", access.RoleViewer, access.AllProjects())
	dir.SetMember("globex", "carol", access.RoleOwner, access.AllProjects())
	keys, err := seal.NewStaticKeyring("k1", map[string][]byte{"k1": seal.GenerateKey()})
	if err != nil {
		tb.Fatal(err)
	}
	ts := &testServer{audit: access.NewMemoryAudit(10000), convs: map[string]string{}}
	gate := access.NewGate(access.NewChecker(dir, nil), nil)
	mux := http.NewServeMux()
	srv := httptest.NewUnstartedServer(mux)
	ts.conns = connections.NewService(connections.NewMemoryStore(), keys, gate,
		&connections.Options{Catalog: workspace.NewMemoryCatalog(), Audit: ts.audit, Logger: log})
	so := &signin.Options{Audit: ts.audit, Logger: log}
	if cfg.oauth {
		so.RedirectURL = connhttp.RedirectURL("http://"+srv.Listener.Addr().String(), "")
	}
	sign := signin.New(ts.conns, keys, so)
	var resolver *connresolve.Resolver
	if cfg.resolver != nil {
		resolver = cfg.resolver(remote.New(ts.conns, sign, nil))
	}
	h := connhttp.New(ts.conns, sign, resolver, authenticate, &connhttp.Options{Logger: log, CheckConversation: ts.checkConversation})
	mux.Handle("/ai/connections", h)
	mux.Handle("/ai/connections/", h)
	srv.Start()
	tb.Cleanup(srv.Close)
	ts.Client = chattest.Client{URL: srv.URL, HTTP: srv.Client()}
	return ts
}

// MustConversation makes a conversation of the user of tok, as the
// host's chat would.
func (ts *testServer) MustConversation(tb testing.TB, tok string) string {
	tb.Helper()
	ts.mu.Lock()
	defer ts.mu.Unlock()
	id := fmt.Sprintf("conv_%d", len(ts.convs)+1)
	ts.convs[id] = strings.TrimPrefix(tok, "test-session-")
	return id
}

// checkConversation is the host's check that a conversation is p's.
func (ts *testServer) checkConversation(_ context.Context, p access.Principal, id string) error {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	if ts.convs[id] != p.UserID {
		return askbi.Errorf(askbi.NotFound, "conversation not found")
	}
	return nil
}

// auditCount counts the audit entries of action with outcome.
func (ts *testServer) auditCount(action, outcome string) int {
	n := 0
	for _, e := range ts.audit.Entries() {
		if e.Action == action && e.Outcome == outcome {
			n++
		}
	}
	return n
}
