package main

import (
	"crypto/rand"
	"crypto/sha256"
	"net/http"
	"regexp"
	"strings"

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

// sessions maps session tokens, by their SHA-256, to users. It is filled
// at start and only read afterwards, so it needs no lock.
type sessions struct {
	byHash map[[sha256.Size]byte]access.Principal
	byUser map[[2]string]string
}

func newSessions() *sessions {
	return &sessions{byHash: map[[sha256.Size]byte]access.Principal{}, byUser: map[[2]string]string{}}
}

// open returns the session token of user in team, creating it on first
// use. Tokens last until the server stops.
func (s *sessions) open(team, user string) string {
	if tok, ok := s.byUser[[2]string{team, user}]; ok {
		return tok
	}
	tok := sessionPrefix + rand.Text()
	s.byUser[[2]string{team, user}] = tok
	s.byHash[sha256.Sum256([]byte(tok))] = access.Principal{UserID: user, TeamID: team, Auth: access.AuthSession}
	return tok
}

// lookup returns the session principal of token tok.
func (s *sessions) lookup(tok string) (access.Principal, bool) {
	if !strings.HasPrefix(tok, sessionPrefix) {
		return access.Principal{}, false
	}
	p, ok := s.byHash[sha256.Sum256([]byte(tok))]
	return p, ok
}

// authenticate returns the session principal of r's bearer token. Any
// failure is Unauthenticated with the same message.
func (s *sessions) authenticate(r *http.Request) (access.Principal, error) {
	bad := askbi.Errorf(askbi.Unauthenticated, "sign in: send Authorization: Bearer <session_token>")
	scheme, tok, ok := strings.Cut(r.Header.Get("Authorization"), " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return access.Principal{}, bad
	}
	p, ok := s.lookup(strings.TrimSpace(tok))
	if !ok {
		return access.Principal{}, bad
	}
	return p, nil
}
