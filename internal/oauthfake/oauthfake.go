// Package oauthfake is a small OAuth 2.1 authorization server with an MCP
// server it protects, on loopback: the third party of askbi's outbound
// OAuth in tests, and the reference server's demo provider that signs in
// offline. It does what a careful provider does (RFC 8414 metadata with
// iss support, RFC 9728 protected resource metadata, dynamic
// registration, exact redirect URIs, S256 PKCE, resource indicators,
// single-use codes, refresh rotation with replay revocation), approves
// every authorization request at once (no consent page), and can be told
// to misbehave (another issuer, a wrong iss, a token for another
// resource, oversized answers, refused refreshes, a token endpoint that
// is down or busy, a step-up challenge) so tests can watch the client
// refuse, or retry.
package oauthfake

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"
)

// Options are the server's behaviour; every field can also be changed
// while it runs ([Server.Set]).
type Options struct {
	// TokenTTL is the access token lifetime. Default 10 minutes.
	TokenTTL time.Duration
	// Scopes is the protected resource's scopes_supported.
	Scopes []string
	// Name is the resource_name. Default "Demo Analytics".
	Name string

	// Misbehaviour.
	MetadataIssuer string // advertise this issuer instead of the real one
	IssInRedirect  string // "" (correct), "omit", "wrong"
	NoIssSupport   bool   // do not advertise authorization_response_iss_parameter_supported
	NoS256         bool   // advertise plain PKCE only
	ResourceOf     string // protected resource metadata for this resource instead
	TokenResource  string // put "resource": this in token responses
	ForeignToken   bool   // issue access tokens the MCP server refuses
	Oversized      string // "metadata" or "token": answer 1 MiB of JSON
	RefuseRefresh  bool   // answer every refresh with invalid_grant
	Deny           bool   // answer every authorization with access_denied
	// The token endpoint failing before it looks at the request (a code
	// or refresh token sent stays unused): TokenStatus answers that HTTP
	// status with a body that is not JSON (a proxy's error page),
	// TokenError answers 400 with that OAuth error code, DropToken closes
	// the connection without an answer.
	TokenStatus int
	TokenError  string
	DropToken   bool
	// StepUp, when set, answers every MCP request 403 insufficient_scope
	// with this scope parameter.
	StepUp string

	// OnToken, when set, is called with the grant type of each token
	// request the server answered with tokens, after it spent the code
	// or refresh token and before it writes the answer. It runs under
	// the server's lock: it must not call the Server.
	OnToken func(grantType string)
	// OnUnauthorized, when set, is called before the MCP server writes
	// each 401; it may call the Server.
	OnUnauthorized func()
	// BeforeToken, when set, is called with the grant type of each token
	// request as it arrives, before the server looks at it; it may block
	// (to hold a request back while another arrives) and may call the
	// Server.
	BeforeToken func(grantType string)
}

// Server is a running authorization server and MCP server.
type Server struct {
	// MCPURL is the protected MCP endpoint; Issuer the authorization
	// server.
	MCPURL string
	Issuer string

	as, rs *http.Server

	mu       sync.Mutex
	o        Options
	clients  map[string]client
	codes    map[string]code
	access   map[string]token
	refresh  map[string]refreshToken
	stats    Stats
	issuedAt func() time.Time
}

// Stats counts what the server saw.
type Stats struct {
	Registrations, Authorizations, TokenRequests, Refreshes, Unauthorized int
	// Replays counts refresh tokens used again, each of which revoked its
	// grant.
	Replays int
	// LastScope and LastResource are of the last authorization request.
	LastScope, LastResource string
}

type client struct {
	id, secret, method string
	redirects          []string
}

type code struct {
	client, redirect, challenge, resource, scope string
	expires                                      time.Time
}

type token struct {
	resource, scope string
	expires         time.Time
	family          string
}

type refreshToken struct {
	client, resource, scope, family string
	used                            bool
}

// New starts the servers on 127.0.0.1, the MCP server serving mcp behind
// bearer tokens. opts may be nil.
func New(mcp http.Handler, opts *Options) (*Server, error) {
	s := &Server{clients: map[string]client{}, codes: map[string]code{}, access: map[string]token{}, refresh: map[string]refreshToken{},
		issuedAt: time.Now}
	if opts != nil {
		s.o = *opts
	}
	asl, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	rsl, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		asl.Close()
		return nil, err
	}
	s.Issuer = "http://" + asl.Addr().String()
	s.MCPURL = "http://" + rsl.Addr().String() + "/mcp"
	amux := http.NewServeMux()
	amux.HandleFunc("GET /.well-known/oauth-authorization-server", s.metadata)
	amux.HandleFunc("POST /register", s.register)
	amux.HandleFunc("GET /authorize", s.authorize)
	amux.HandleFunc("POST /token", s.token)
	rmux := http.NewServeMux()
	rmux.HandleFunc("GET /.well-known/oauth-protected-resource/mcp", s.resourceMetadata)
	rmux.Handle("/mcp", s.protect(mcp))
	s.as = &http.Server{Handler: amux, ReadHeaderTimeout: 10 * time.Second}
	s.rs = &http.Server{Handler: rmux, ReadHeaderTimeout: 10 * time.Second}
	go s.as.Serve(asl)
	go s.rs.Serve(rsl)
	return s, nil
}

// Close stops both servers.
func (s *Server) Close() error {
	s.as.Close()
	return s.rs.Close()
}

// Set changes the behaviour.
func (s *Server) Set(fn func(*Options)) {
	s.mu.Lock()
	defer s.mu.Unlock()
	fn(&s.o)
}

// Stats returns the counts so far.
func (s *Server) Stats() Stats {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.stats
}

// ExpireTokens makes every access token issued so far invalid, as
// expiry would (refresh tokens stay).
func (s *Server) ExpireTokens() {
	s.mu.Lock()
	defer s.mu.Unlock()
	clear(s.access)
}

func random(prefix string) string { return prefix + strings.ToLower(rand.Text()) }

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(v)
}

func oauthError(w http.ResponseWriter, status int, code string) {
	writeJSON(w, status, map[string]string{"error": code})
}

func oversized(w http.ResponseWriter) {
	w.Header().Set("Content-Type", "application/json")
	w.Write([]byte(`{"pad":"` + strings.Repeat("x", 1<<20) + `"}`))
}

func (s *Server) metadata(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	o := s.o
	s.mu.Unlock()
	if o.Oversized == "metadata" {
		oversized(w)
		return
	}
	issuer := s.Issuer
	if o.MetadataIssuer != "" {
		issuer = o.MetadataIssuer
	}
	pkce := []string{"S256"}
	if o.NoS256 {
		pkce = []string{"plain"}
	}
	writeJSON(w, http.StatusOK, map[string]any{
		"issuer": issuer, "authorization_endpoint": s.Issuer + "/authorize", "token_endpoint": s.Issuer + "/token",
		"registration_endpoint": s.Issuer + "/register", "response_types_supported": []string{"code"},
		"grant_types_supported":                          []string{"authorization_code", "refresh_token"},
		"code_challenge_methods_supported":               pkce,
		"token_endpoint_auth_methods_supported":          []string{"client_secret_basic", "client_secret_post", "none"},
		"scopes_supported":                               append(append([]string{}, o.Scopes...), "offline_access"),
		"authorization_response_iss_parameter_supported": !o.NoIssSupport,
	})
}

func (s *Server) resourceMetadata(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	o := s.o
	s.mu.Unlock()
	res := s.MCPURL
	if o.ResourceOf != "" {
		res = o.ResourceOf
	}
	name := o.Name
	if name == "" {
		name = "Demo Analytics"
	}
	doc := map[string]any{"resource": res, "authorization_servers": []string{s.Issuer}, "bearer_methods_supported": []string{"header"},
		"resource_name": name}
	if len(o.Scopes) > 0 {
		doc["scopes_supported"] = o.Scopes
	}
	writeJSON(w, http.StatusOK, doc)
}

func (s *Server) register(w http.ResponseWriter, r *http.Request) {
	var req struct {
		RedirectURIs []string `json:"redirect_uris"`
		Method       string   `json:"token_endpoint_auth_method"`
	}
	if err := json.NewDecoder(http.MaxBytesReader(w, r.Body, 64<<10)).Decode(&req); err != nil || len(req.RedirectURIs) == 0 {
		oauthError(w, http.StatusBadRequest, "invalid_client_metadata")
		return
	}
	for _, u := range req.RedirectURIs {
		if p, err := url.Parse(u); err != nil || p.Fragment != "" || (p.Scheme != "https" && p.Scheme != "http") {
			oauthError(w, http.StatusBadRequest, "invalid_redirect_uri")
			return
		}
	}
	c := client{id: random("client_"), method: req.Method, redirects: req.RedirectURIs}
	if c.method == "" {
		c.method = "client_secret_basic"
	}
	if c.method != "none" {
		c.secret = random("secret_")
	}
	s.mu.Lock()
	s.clients[c.id] = c
	s.stats.Registrations++
	s.mu.Unlock()
	writeJSON(w, http.StatusCreated, map[string]any{"client_id": c.id, "client_secret": c.secret, "token_endpoint_auth_method": c.method,
		"redirect_uris": c.redirects})
}

func (s *Server) authorize(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	s.mu.Lock()
	defer s.mu.Unlock()
	s.stats.Authorizations++
	s.stats.LastScope, s.stats.LastResource = q.Get("scope"), q.Get("resource")
	c, ok := s.clients[q.Get("client_id")]
	redirect := q.Get("redirect_uri")
	if !ok || !contains(c.redirects, redirect) {
		// Never redirect to a URI not registered byte for byte.
		http.Error(w, "unknown client or redirect URI", http.StatusBadRequest)
		return
	}
	back, _ := url.Parse(redirect)
	v := back.Query()
	v.Set("state", q.Get("state"))
	switch s.o.IssInRedirect {
	case "":
		v.Set("iss", s.Issuer)
	case "wrong":
		v.Set("iss", "https://evil.example.com")
	}
	switch {
	case s.o.Deny:
		v.Set("error", "access_denied")
	case q.Get("response_type") != "code" || q.Get("code_challenge_method") != "S256" || q.Get("code_challenge") == "":
		v.Set("error", "invalid_request")
	case q.Get("resource") != s.MCPURL:
		v.Set("error", "invalid_target")
	default:
		cd := random("code_")
		s.codes[cd] = code{client: c.id, redirect: redirect, challenge: q.Get("code_challenge"), resource: q.Get("resource"),
			scope: q.Get("scope"), expires: time.Now().Add(time.Minute)}
		v.Set("code", cd)
	}
	back.RawQuery = v.Encode()
	http.Redirect(w, r, back.String(), http.StatusFound)
}

// authClient authenticates the client of a token request.
func (s *Server) authClient(r *http.Request) (client, bool) {
	id, secret, basic := r.BasicAuth()
	if basic {
		id, _ = url.QueryUnescape(id)
		secret, _ = url.QueryUnescape(secret)
	} else {
		id, secret = r.PostForm.Get("client_id"), r.PostForm.Get("client_secret")
	}
	c, ok := s.clients[id]
	if !ok {
		return client{}, false
	}
	switch c.method {
	case "none":
		return c, !basic && secret == ""
	case "client_secret_post":
		return c, !basic && secret == c.secret
	}
	return c, basic && secret == c.secret
}

func (s *Server) token(w http.ResponseWriter, r *http.Request) {
	r.Body = http.MaxBytesReader(w, r.Body, 64<<10)
	if err := r.ParseForm(); err != nil {
		oauthError(w, http.StatusBadRequest, "invalid_request")
		return
	}
	s.mu.Lock()
	before := s.o.BeforeToken
	s.mu.Unlock()
	if before != nil {
		before(r.PostForm.Get("grant_type"))
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.stats.TokenRequests++
	switch {
	case s.o.Oversized == "token":
		oversized(w)
		return
	case s.o.DropToken:
		if conn, _, err := http.NewResponseController(w).Hijack(); err == nil {
			conn.Close()
		}
		return
	case s.o.TokenStatus != 0:
		http.Error(w, "<html>busy</html>", s.o.TokenStatus)
		return
	case s.o.TokenError != "":
		oauthError(w, http.StatusBadRequest, s.o.TokenError)
		return
	}
	c, ok := s.authClient(r)
	if !ok {
		oauthError(w, http.StatusUnauthorized, "invalid_client")
		return
	}
	f := r.PostForm
	var scope, resource, family string
	switch f.Get("grant_type") {
	case "authorization_code":
		cd, ok := s.codes[f.Get("code")]
		delete(s.codes, f.Get("code")) // single use, right or wrong
		sum := sha256.Sum256([]byte(f.Get("code_verifier")))
		switch {
		case !ok || cd.client != c.id || cd.redirect != f.Get("redirect_uri") || time.Now().After(cd.expires),
			base64.RawURLEncoding.EncodeToString(sum[:]) != cd.challenge:
			oauthError(w, http.StatusBadRequest, "invalid_grant")
			return
		case f.Get("resource") != cd.resource:
			oauthError(w, http.StatusBadRequest, "invalid_target")
			return
		}
		scope, resource, family = cd.scope, cd.resource, random("fam_")
	case "refresh_token":
		s.stats.Refreshes++
		rt, ok := s.refresh[f.Get("refresh_token")]
		switch {
		case !ok || rt.client != c.id || s.o.RefuseRefresh:
			oauthError(w, http.StatusBadRequest, "invalid_grant")
			return
		case rt.used:
			// A replayed refresh token revokes its whole family.
			s.stats.Replays++
			for k, v := range s.refresh {
				if v.family == rt.family {
					delete(s.refresh, k)
				}
			}
			for k, v := range s.access {
				if v.family == rt.family {
					delete(s.access, k)
				}
			}
			oauthError(w, http.StatusBadRequest, "invalid_grant")
			return
		case f.Get("resource") != "" && f.Get("resource") != rt.resource:
			oauthError(w, http.StatusBadRequest, "invalid_target")
			return
		}
		rt.used = true
		s.refresh[f.Get("refresh_token")] = rt
		scope, resource, family = rt.scope, rt.resource, rt.family
	default:
		oauthError(w, http.StatusBadRequest, "unsupported_grant_type")
		return
	}
	ttl := s.o.TokenTTL
	if ttl <= 0 {
		ttl = 10 * time.Minute
	}
	at, rt := random("at_"), random("rt_")
	tokResource := resource
	if s.o.ForeignToken {
		tokResource = "https://elsewhere.example/mcp"
	}
	s.access[at] = token{resource: tokResource, scope: scope, expires: time.Now().Add(ttl), family: family}
	s.refresh[rt] = refreshToken{client: c.id, resource: resource, scope: scope, family: family}
	resp := map[string]any{"access_token": at, "token_type": "Bearer", "expires_in": int(ttl.Seconds()), "refresh_token": rt}
	if scope != "" {
		resp["scope"] = scope
	}
	if s.o.TokenResource != "" {
		resp["resource"] = s.o.TokenResource
	}
	if s.o.OnToken != nil {
		s.o.OnToken(f.Get("grant_type"))
	}
	writeJSON(w, http.StatusOK, resp)
}

// protect serves next to requests with a valid access token for this
// resource, and answers others 401 with the resource metadata's URL.
func (s *Server) protect(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		scheme, tok, _ := strings.Cut(r.Header.Get("Authorization"), " ")
		s.mu.Lock()
		t, ok := s.access[tok]
		valid := ok && strings.EqualFold(scheme, "Bearer") && t.resource == s.MCPURL && time.Now().Before(t.expires)
		if !valid {
			s.stats.Unauthorized++
		}
		stepUp, onUnauthorized := s.o.StepUp, s.o.OnUnauthorized
		s.mu.Unlock()
		if valid && stepUp != "" {
			w.Header().Set("WWW-Authenticate", fmt.Sprintf(`Bearer error="insufficient_scope", scope=%q`, stepUp))
			http.Error(w, "insufficient scope", http.StatusForbidden)
			return
		}
		if !valid {
			if onUnauthorized != nil {
				onUnauthorized()
			}
			meta := strings.TrimSuffix(s.MCPURL, "/mcp") + "/.well-known/oauth-protected-resource/mcp"
			w.Header().Set("WWW-Authenticate", fmt.Sprintf(`Bearer error="invalid_token", resource_metadata=%q`, meta))
			http.Error(w, "invalid token", http.StatusUnauthorized)
			return
		}
		next.ServeHTTP(w, r)
	})
}

func contains(list []string, s string) bool {
	for _, e := range list {
		if e == s {
			return true
		}
	}
	return false
}
