package main

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"net/http"
	"regexp"
	"strings"
	"sync"

	"github.com/askbi/askbi"
	"github.com/askbi/askbi/access"
)

// sessionPrefix marks the reference server's product session tokens. They
// stand in for a host's product login: they authenticate the chat and
// memory API as a user of a team, and are not API keys (the MCP endpoint
// refuses them, and the chat API refuses API keys).
const sessionPrefix = "askbi_session_"

// sessionPattern matches a session token, so the assistant redacts one
// pasted into the chat like any other credential.
var sessionPattern = regexp.MustCompile(`askbi_session_[A-Z2-7]{26}`)

// sessionStore keeps sessions by the SHA-256 of their token:
// pgstore.DemoStore when the state is in PostgreSQL (every instance then
// accepts every instance's sessions), memSessions otherwise.
type sessionStore interface {
	CreateSession(ctx context.Context, hash []byte, team, user string) error
	// Session returns NotFound for an unknown hash.
	Session(ctx context.Context, hash []byte) (team, user string, err error)
}

// sessions authenticates the reference server's session tokens. Found
// sessions are kept in memory: a session lasts as long as its store.
type sessions struct {
	store sessionStore
	known sync.Map // [sha256.Size]byte → access.Principal
	// authenticate takes a bearer session token only (the chat and
	// connection routes); browser takes the askbi_session cookie that
	// /signin and the demo sign-in set too (the product pages, the OAuth
	// consent page).
	authenticate, browser access.Authenticate
}

func newSessions(store sessionStore) *sessions {
	s := &sessions{store: store}
	s.authenticate = access.SessionAuth(s.lookup, nil)
	s.browser = access.SessionAuth(s.lookup, &access.SessionOptions{Cookie: sessionCookie,
		Message: "sign in at /signin, or send Authorization: Bearer <session_token>"})
	return s
}

// newToken returns a new session token.
func newToken() string { return sessionPrefix + rand.Text() }

// create stores a session of user in team with token tok.
func (s *sessions) create(ctx context.Context, tok, team, user string) error {
	h := sha256.Sum256([]byte(tok))
	return s.store.CreateSession(ctx, h[:], team, user)
}

// lookup returns the session principal of token tok: Unauthenticated
// for a token that is not a session, Unavailable when the store cannot
// be read.
func (s *sessions) lookup(ctx context.Context, tok string) (access.Principal, error) {
	bad := askbi.Errorf(askbi.Unauthenticated, "not a session token of this server")
	if !strings.HasPrefix(tok, sessionPrefix) || len(tok) > 64 {
		return access.Principal{}, bad
	}
	h := sha256.Sum256([]byte(tok))
	if p, ok := s.known.Load(h); ok {
		return p.(access.Principal), nil
	}
	team, user, err := s.store.Session(ctx, h[:])
	if askbi.ErrorCode(err) == askbi.NotFound {
		return access.Principal{}, bad
	}
	if err != nil {
		return access.Principal{}, askbi.Errorf(askbi.Unavailable, "sign-in cannot be checked right now; try again")
	}
	p := access.Principal{UserID: user, TeamID: team, Auth: access.AuthSession}
	s.known.Store(h, p)
	return p, nil
}

// memSessions is a sessionStore in memory, for a server without
// PostgreSQL.
type memSessions struct {
	mu   sync.Mutex
	byID map[string]access.Principal
}

func (m *memSessions) CreateSession(_ context.Context, hash []byte, team, user string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.byID == nil {
		m.byID = map[string]access.Principal{}
	}
	m.byID[string(hash)] = access.Principal{UserID: user, TeamID: team}
	return nil
}

func (m *memSessions) Session(_ context.Context, hash []byte) (string, string, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	p, ok := m.byID[string(hash)]
	if !ok {
		return "", "", askbi.Errorf(askbi.NotFound, "no such session")
	}
	return p.TeamID, p.UserID, nil
}

// setCookie makes tok the browser's session, so the pages behind chat and
// MCP links open signed in (in new tabs too).
func setCookie(w http.ResponseWriter, tok string, secure bool) {
	http.SetCookie(w, &http.Cookie{Name: sessionCookie, Value: tok, Path: "/", HttpOnly: true, Secure: secure, SameSite: http.SameSiteLaxMode})
}

// signOut is POST /signout: the browser's session cookie goes.
func signOut(w http.ResponseWriter, r *http.Request) {
	http.SetCookie(w, &http.Cookie{Name: sessionCookie, Value: "", Path: "/", MaxAge: -1, HttpOnly: true, SameSite: http.SameSiteLaxMode})
	w.WriteHeader(http.StatusNoContent)
}
