package main

import (
	"log/slog"
	"net/http"

	"github.com/askbi/askbi"
	"github.com/askbi/askbi/internal/httpjson"
)

// demoSignIn is the reference server's stand-in for a host's login page:
// it lists the demo users and hands out their session tokens, so the page
// can sign in without the credentials file. It serves only the demo
// principals (alice, bob, vic, carol; alice-read shares alice's session),
// and only when -demo-sign-in is on (the default: the server listens on
// loopback); off, both routes answer 404 like any unknown path.
type demoSignIn struct {
	users  []demoUser
	token  func(name string) (string, bool)
	secure bool // the session cookie is Secure (an https public URL)
}

// demoUser is one demo principal as the sign-in page shows it.
type demoUser struct {
	Name        string `json:"name"`
	Label       string `json:"label"`
	Description string `json:"description"`
}

// demoUsers are the principals the page offers, with what each may do.
var demoUsers = []demoUser{
	{"alice", "Alice", "Owner of Acme, all projects"},
	{"bob", "Bob", "Editor in Acme, Growth project only"},
	{"vic", "Vic", "Viewer in Acme: reads, cannot change dashboards"},
	{"carol", "Carol", "Owner of Globex"},
}

// routes serves GET /demo/principals and POST /demo/sign-in, which sets
// the session cookie and so passes cop, as /signin does.
func (d demoSignIn) routes(mux *http.ServeMux, log *slog.Logger, cop *http.CrossOriginProtection) {
	mux.HandleFunc("GET /demo/principals", func(w http.ResponseWriter, r *http.Request) {
		httpjson.WriteJSON(w, http.StatusOK, map[string]any{"principals": d.users})
	})
	mux.Handle("POST /demo/sign-in", cop.Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var body struct {
			Name string `json:"name" validate:"required,max=40"`
		}
		if err := httpjson.Decode(w, r, &body, false); err != nil {
			httpjson.WriteError(w, r, log, err)
			return
		}
		if u, tok, ok := d.signIn(body.Name); ok {
			setCookie(w, tok, d.secure)
			httpjson.WriteJSON(w, http.StatusOK, map[string]any{"session_token": tok, "principal": u})
			return
		}
		httpjson.WriteError(w, r, log, askbi.Errorf(askbi.NotFound, "name: not a demo user; choose alice, bob, vic or carol"))
	})))
}

// signIn returns the demo user of that name and their session token; ok
// is false for any other name. The /demo/ routes and the /signin page's
// picker both sign in through it.
func (d *demoSignIn) signIn(name string) (u demoUser, tok string, ok bool) {
	if d == nil {
		return demoUser{}, "", false
	}
	for _, u := range d.users {
		if u.Name == name {
			tok, ok := d.token(u.Name)
			return u, tok, ok
		}
	}
	return demoUser{}, "", false
}
