package main

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"html/template"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"

	"github.com/askbi/askbi"
	"github.com/askbi/askbi/access"
	"github.com/askbi/askbi/mcpserver/oauth"
)

// oauthSecretEnv names the environment variable holding the HMAC key of
// MCP OAuth tokens: base64 of at least 32 random bytes.
const oauthSecretEnv = "ASKBI_OAUTH_SECRET"

// sessionCookie is the browser form of a product session, set by the
// sign-in page and the demo sign-in, so the OAuth consent page and the
// product pages behind links know who is signed in.
const sessionCookie = "askbi_session"

var teamNames = map[string]string{teamAcme: "Acme", teamGlobex: "Globex"}

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

// oauthSecret returns the token key: ASKBI_OAUTH_SECRET, or a
// development key kept in the data folder (so grants survive restarts on
// PostgreSQL), or a throwaway key with in-memory state.
func (a *app) oauthSecret(cfg config, inMemory bool) ([]byte, error) {
	if v, ok := os.LookupEnv(oauthSecretEnv); ok {
		k, err := parseOAuthSecret(v)
		if err != nil {
			return nil, fmt.Errorf("%s: must be base64 of at least 32 bytes", oauthSecretEnv)
		}
		return k, nil
	}
	if inMemory {
		return nil, nil // oauth.New draws a random key
	}
	path := filepath.Join(cfg.dataDir, "oauth-secret")
	k, err := devKey(path, func() []byte {
		k := make([]byte, 32)
		rand.Read(k)
		return k
	}, parseOAuthSecret)
	if err != nil {
		return nil, err
	}
	a.log.Warn(oauthSecretEnv+" is not set: MCP OAuth tokens are signed with a development key kept in the data folder; production must set "+oauthSecretEnv, "file", path)
	return k, nil
}

// parseOAuthSecret reads base64 of at least 32 bytes.
func parseOAuthSecret(s string) ([]byte, error) {
	k, err := base64.StdEncoding.DecodeString(strings.TrimSpace(s))
	if err != nil || len(k) < 32 {
		return nil, errors.New("not base64 of at least 32 bytes")
	}
	return k, nil
}

var signInPage = template.Must(template.New("signin").Parse(`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width,initial-scale=1"><title>Sign in · askbi</title>
<link rel="stylesheet" href="/web/app.css"></head>
<body class="signin-page scrolls">
<h1>Sign in to askbi</h1>
{{if .Error}}<p role="alert" class="error">{{.Error}}</p>{{end}}
<p>The reference server's product login is a session token: copy the <code>session_token</code> of a principal from the
<code>-credentials-file</code> (alice, bob, vic or carol).</p>
<form method="post" action="/signin"><input type="hidden" name="return" value="{{.Return}}">
<label>Session token <input name="token" autocomplete="off" size="48" required></label>
<p><button type="submit">Sign in</button></p></form></body></html>`))

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
	if r.Method == http.MethodPost {
		tok := strings.TrimSpace(r.PostFormValue("token"))
		_, err := a.sessions.lookup(r.Context(), tok)
		switch askbi.ErrorCode(err) {
		case "":
			setCookie(w, tok, strings.HasPrefix(a.base, "https://"))
			http.Redirect(w, r, ret, http.StatusSeeOther)
		case askbi.Unauthenticated:
			w.WriteHeader(http.StatusUnauthorized)
			signInPage.Execute(w, map[string]string{"Return": ret, "Error": "That is not a session token of this server."})
		default:
			w.WriteHeader(http.StatusServiceUnavailable)
			signInPage.Execute(w, map[string]string{"Return": ret, "Error": "Sign-in cannot be checked right now. Try again in a moment."})
		}
		return
	}
	signInPage.Execute(w, map[string]string{"Return": ret})
}

// localReturn keeps a return address only when it is on this server's
// public URL, as a path; anything else returns to the home page.
func (a *app) localReturn(raw string) string {
	if rest, ok := strings.CutPrefix(raw, a.base); ok && strings.HasPrefix(rest, "/") && !strings.HasPrefix(rest, "//") {
		return rest
	}
	if strings.HasPrefix(raw, "/") && !strings.HasPrefix(raw, "//") && !strings.HasPrefix(raw, "/\\") {
		return raw
	}
	return "/"
}
