package main

import (
	"cmp"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"html/template"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"sync"

	"github.com/askbi/askbi"
	"github.com/askbi/askbi/access"
	"github.com/askbi/askbi/httpserve"
	"github.com/askbi/askbi/internal/httpjson"
	"github.com/askbi/askbi/mcpserver/oauth"
)

// The reference server's product login, which stands in for a host's:
// session tokens of the demo users (handed out in the -credentials-file
// and by the demo sign-in), the /signin page that turns one into the
// askbi_session cookie, and the OAuth consent page's users. A host
// puts its own login behind access.SessionAuth and oauth.Users instead.

// sessionCookie is the browser form of a product session, set by the
// sign-in page and the demo sign-in, so the OAuth consent page and the
// product pages behind links know who is signed in.
const sessionCookie = "askbi_session"

var teamNames = map[string]string{teamAcme: "Acme", teamGlobex: "Globex"}

// demoTeamName names a demo team, for MCP's OAuth tool results and the
// budgets' messages.
func demoTeamName(_ context.Context, id string) string { return cmp.Or(teamNames[id], id) }

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

// loginRoutes serves the stand-in login: /signin, POST /signout and,
// when on, the demo sign-in's routes, all refused to cross-site requests
// that could change something (http.CrossOriginProtection, 403
// forbidden), so that another site's form cannot sign a browser in as
// someone else (login CSRF) or out. (The routes a cookie authenticates
// get the same check from access.SessionAuth.)
func (a *app) loginRoutes(mux *http.ServeMux) {
	cop := http.NewCrossOriginProtection()
	cop.SetDenyHandler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		httpjson.WriteError(w, r, a.log, askbi.Errorf(askbi.Forbidden, "a request from another site is refused here"))
	}))
	mux.Handle("/signin", cop.Handler(http.HandlerFunc(a.signIn)))
	mux.Handle("POST /signout", cop.Handler(http.HandlerFunc(signOut)))
	if a.demoSignIn != nil {
		a.demoSignIn.routes(mux, a.log, cop)
	}
}

// signOut is POST /signout: the browser's session cookie goes.
func signOut(w http.ResponseWriter, r *http.Request) {
	http.SetCookie(w, &http.Cookie{Name: sessionCookie, Value: "", Path: "/", MaxAge: -1, HttpOnly: true, SameSite: http.SameSiteLaxMode})
	w.WriteHeader(http.StatusNoContent)
}

// oauthUsers is oauth.Users over the reference server's sessions: a
// session token in the askbi_session cookie (set by /signin) or in the
// Authorization header.
type oauthUsers struct {
	s   *sessions
	dir access.Directory
}

func (u oauthUsers) SignedIn(r *http.Request) (string, error) {
	p, err := u.s.browser(r)
	switch askbi.ErrorCode(err) {
	case "":
		return p.UserID, nil
	case askbi.Unauthenticated:
		return "", nil
	}
	return "", err
}

func (u oauthUsers) SignInURL(returnTo string) string {
	return "/signin?return=" + url.QueryEscape(returnTo)
}

func (u oauthUsers) Teams(ctx context.Context, user string) ([]oauth.Team, error) {
	var out []oauth.Team
	for _, team := range []string{teamAcme, teamGlobex} {
		_, err := u.dir.Member(ctx, team, user)
		switch askbi.ErrorCode(err) {
		case "":
			out = append(out, oauth.Team{ID: team, Name: teamNames[team]})
		case askbi.NotFound:
		default:
			return nil, err
		}
	}
	return out, nil
}

var signInPage = template.Must(template.New("signin").Parse(`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width,initial-scale=1"><title>Sign in · askbi</title>
<link rel="stylesheet" href="/web/app.css"></head>
<body class="signin-page scrolls">
<main class="signin">
<h1>Sign in to askbi</h1>
{{if .Error}}<p role="alert" class="error">{{.Error}}</p>{{end}}
{{if .Users}}<form method="post" action="/signin"><input type="hidden" name="return" value="{{.Return}}">
<fieldset><legend>Choose a demo user</legend><div class="demo-users">
{{range $i, $u := .Users}}<label class="demo-user"><input type="radio" name="demo" value="{{$u.Name}}"{{if eq $i 0}} checked{{end}}>
<span class="demo-text"><span class="demo-name">{{$u.Label}}</span><span class="demo-desc">{{$u.Description}}</span></span></label>
{{end}}</div></fieldset>
<p><button type="submit" class="primary">Sign in</button></p></form>
<h2>Or use a session token</h2>{{end}}
<p>The reference server's product login is a session token: copy the <code>session_token</code> of a principal from the
<code>-credentials-file</code> (alice, bob, vic or carol).</p>
<form method="post" action="/signin"><input type="hidden" name="return" value="{{.Return}}">
<label>Session token <input name="token" type="password" autocomplete="off" size="48" required></label>
<p><button type="submit">Sign in with token</button></p></form></main></body></html>`))

// signIn serves the reference server's sign-in page, which turns a
// session token into a session cookie and returns to the page that sent
// the browser here (only ever a path on this server).
func (a *app) signIn(w http.ResponseWriter, r *http.Request) {
	h := w.Header()
	h.Set("Content-Security-Policy", "default-src 'none'; style-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'")
	h.Set("X-Frame-Options", "DENY")
	h.Set("Cache-Control", "no-store")
	h.Set("Content-Type", "text/html; charset=utf-8")
	ret := a.localReturn(r.FormValue("return"))
	page := map[string]any{"Return": ret}
	if a.demoSignIn != nil {
		page["Users"] = a.demoSignIn.users
	}
	if r.Method == http.MethodPost {
		tok := strings.TrimSpace(r.PostFormValue("token"))
		if name := r.PostFormValue("demo"); name != "" {
			// The picker of the demo sign-in; off with -demo-sign-in=false.
			_, tok, _ = a.demoSignIn.signIn(name)
		}
		_, err := a.sessions.lookup(r.Context(), tok)
		switch askbi.ErrorCode(err) {
		case "":
			setCookie(w, tok, strings.HasPrefix(a.base, "https://"))
			http.Redirect(w, r, ret, http.StatusSeeOther)
		case askbi.Unauthenticated:
			w.WriteHeader(http.StatusUnauthorized)
			page["Error"] = "That is not a session token of this server."
			signInPage.Execute(w, page)
		default:
			w.WriteHeader(http.StatusServiceUnavailable)
			page["Error"] = "Sign-in cannot be checked right now. Try again in a moment."
			signInPage.Execute(w, page)
		}
		return
	}
	signInPage.Execute(w, page)
}

// localReturn keeps a return address only when it names a path on this
// server (httpserve.LocalPath); anything else returns to the home page.
func (a *app) localReturn(raw string) string {
	if p, ok := httpserve.LocalPath(raw, a.base); ok {
		return p
	}
	return "/"
}
