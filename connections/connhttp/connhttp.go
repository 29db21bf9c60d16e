// Package connhttp is the HTTP adapter of the connection packages: the
// routes of a team's remote MCP connections (create, list, read, change,
// delete, discover, the tool pages and per-tool access: package
// connections), their setup (the resolver's setup card: package
// connresolve; save and connect) and the OAuth sign-in (start, and the
// callback the provider's authorization server redirects the browser
// to: package signin) as one http.Handler that a host mounts with or
// without Ask.
//
//	sign := signin.New(conns, keyring, &signin.Options{RedirectURL: connhttp.RedirectURL("https://bi.example.com", "/ai/connections")})
//	h := connhttp.New(conns, sign, resolver, mySessions.Principal, &connhttp.Options{Prefix: "/ai/connections"})
//	mux.Handle("/ai/connections", h)
//	mux.Handle("/ai/connections/", h)
//
// The OAuth callback is where the handler is mounted: the sign-in's
// redirect URL (signin.Options.RedirectURL) is [RedirectURL](publicURL,
// prefix), given when the sign-in is made.
//
// Every route authenticates the request with the host's
// [access.Authenticate] (the product session), passes the request gate once
// in the service (live membership, then the rate limit; managing
// connections is not using Ask), and answers errors as {"error": {"code",
// "message"}} with the code's status (internal/httpjson), also for
// unknown paths (404) and methods (405 with Allow). Every answer shows
// has_token, never a token.
package connhttp

import (
	"context"
	"log/slog"
	"net/http"
	"strings"

	"github.com/askbi/askbi"
	"github.com/askbi/askbi/access"
	"github.com/askbi/askbi/connections"
	"github.com/askbi/askbi/connections/signin"
	"github.com/askbi/askbi/connresolve"
	"github.com/askbi/askbi/internal/httpjson"
)

// Options configures the handler. The zero value is valid; each zero field
// means its default.
type Options struct {
	// Prefix is where the host mounts the handler. Default
	// "/ai/connections".
	Prefix string
	// CheckConversation, when set, checks that a conversation_id given to
	// save and connect or to a sign-in's start is one of the principal's
	// own conversations (ask.Assistant.CheckConversation). Default none:
	// a conversation_id is refused (there is no chat to return to).
	CheckConversation func(ctx context.Context, p access.Principal, id string) error
	// ConnectionPage is where the OAuth callback sends the browser: the
	// host's connection page, for tool approval, with the conversation and
	// team in the query. Default DefaultConnectionPage.
	ConnectionPage func(OAuthReturn) string
	// SecureCookies marks the sign-in binding cookie Secure even when the
	// request arrived without TLS (behind a TLS-terminating proxy).
	// Default: Secure on TLS requests only.
	SecureCookies bool
	// Logger logs internal errors with detail. Default slog.Default().
	Logger *slog.Logger
}

const defaultPrefix = "/ai/connections"

// handler is the connection API.
type handler struct {
	conns    *connections.Service
	signin   *signin.Service
	resolver *connresolve.Resolver
	authn    access.Authenticate
	o        Options
	mux      *http.ServeMux
}

// New returns the connection API over conns and its sign-in sign (which
// reaches the servers for discovery), with resolver for the setup card
// and save and connect by a verified provider's name (nil: those answer
// Unsupported), authenticating requests with authn. opts may be nil.
func New(conns *connections.Service, sign *signin.Service, resolver *connresolve.Resolver, authn access.Authenticate, opts *Options) http.Handler {
	h := &handler{conns: conns, signin: sign, resolver: resolver, authn: authn, mux: http.NewServeMux()}
	if opts != nil {
		h.o = *opts
	}
	o := &h.o
	o.Prefix = httpjson.Prefix(o.Prefix, defaultPrefix)
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.ConnectionPage == nil {
		o.ConnectionPage = DefaultConnectionPage
	}
	route := func(method, path string, fn func(http.ResponseWriter, *http.Request, access.Principal)) {
		h.mux.HandleFunc(method+" "+o.Prefix+path, h.begin(fn))
	}
	route("POST", "", h.createConnection)
	route("GET", "", h.listConnections)
	route("GET", "/{id}", h.getConnection)
	route("PATCH", "/{id}", h.updateConnection)
	route("DELETE", "/{id}", h.deleteConnection)
	route("POST", "/{id}/discover", h.discover)
	route("GET", "/{id}/tools", h.listTools)
	route("PUT", "/{id}/tools/{tool}/access", h.setAccess)
	route("POST", "/{id}/tools/allow-all", h.allowAll)
	route("GET", "/setup", h.connectionSetup)
	route("POST", "/connect", h.saveAndConnect)
	route("POST", "/{id}/oauth/start", h.startOAuth)
	// The callback is a browser redirect from another site: it carries no
	// bearer token. The state and the binding cookie authenticate it.
	h.mux.HandleFunc("GET "+h.callbackPath(), h.oauthCallback)
	// setup and connect are not connection IDs: their other methods
	// answer 405 with their own Allow, not /{id}'s.
	for path, method := range map[string]string{"/setup": "GET", "/connect": "POST"} {
		for _, m := range []string{"GET", "POST", "PUT", "PATCH", "DELETE"} {
			if m != method {
				h.mux.HandleFunc(m+" "+o.Prefix+path, h.begin(func(w http.ResponseWriter, r *http.Request, _ access.Principal) {
					httpjson.MethodNotAllowed(w, r, method)
				}))
			}
		}
	}
	// What no route matched is answered after authentication too, so the
	// routes cannot be mapped without a credential.
	noRoute := httpjson.NoRoute(h.mux, o.Prefix+"/", o.Logger)
	for _, pattern := range []string{o.Prefix, o.Prefix + "/"} {
		h.mux.HandleFunc(pattern, h.begin(func(w http.ResponseWriter, r *http.Request, _ access.Principal) { noRoute(w, r) }))
	}
	return h
}

func (h *handler) ServeHTTP(w http.ResponseWriter, r *http.Request) { h.mux.ServeHTTP(w, r) }

// callbackPath is the callback route's path, the binding cookie's Path.
func (h *handler) callbackPath() string { return callbackPath(h.o.Prefix) }

func callbackPath(prefix string) string { return prefix + "/oauth/callback" }

// RedirectURL is the OAuth callback of a handler mounted at prefix (""
// for Options.Prefix's default) of a host that browsers reach at
// publicURL (scheme and host, no path): the redirect URL to give the
// sign-in (signin.Options.RedirectURL), so that the providers
// send the browser back to this handler.
func RedirectURL(publicURL, prefix string) string {
	return strings.TrimRight(publicURL, "/") + callbackPath(httpjson.Prefix(prefix, defaultPrefix))
}

// begin authenticates the request before fn runs. The service passes
// the principal through the gate once, in each of its methods.
// begin authenticates the request; each route's service call passes the
// gate itself.
func (h *handler) begin(fn func(http.ResponseWriter, *http.Request, access.Principal)) http.HandlerFunc {
	return httpjson.Route(h.o.Logger, h.authn, nil, fn)
}

func (h *handler) error(w http.ResponseWriter, r *http.Request, err error) {
	httpjson.WriteError(w, r, h.o.Logger, err)
}

// checkConversation checks a conversation_id given with a sign-in.
func (h *handler) checkConversation(ctx context.Context, p access.Principal, id string) error {
	if id == "" {
		return nil
	}
	if h.o.CheckConversation == nil {
		return askbi.Errorf(askbi.InvalidArgument, "conversation_id: there are no conversations here")
	}
	return h.o.CheckConversation(ctx, p, id)
}
