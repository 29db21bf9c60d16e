// Package oauth is the OAuth 2.1 authorization server of the inbound MCP
// server: authorization-server metadata (RFC 8414), client ID metadata
// documents (an https client_id whose document the server fetches, the
// MCP spec's way to register since 2025-11-25), dynamic client
// registration (RFC 7591, the older way) for public and confidential
// clients, the
// authorization endpoint with its consent page, the token endpoint (S256
// PKCE, single-use codes, refresh rotation with replay revocation),
// revocation (RFC 7009), resource indicators (RFC 8707), the iss
// authorization response parameter (RFC 9207), and the account routes that
// list and remove connected clients. Tokens and PKCE are handled by
// github.com/ory/fosite; this package adds what fosite lacks and keeps
// fosite's types out of its API.
//
// Every grant is for one client, one user and one team, and its access
// tokens verify ([Server.Verify]) into the same [access.Principal] an API key
// does, so the MCP server checks them the same way.
//
// Quick start:
//
//	as, err := oauth.New("https://bi.example.com", oauth.NewMemoryStore(), users, checker, nil)
//	authn := access.AnyToken(as.Verify, keys.Verify)
//	srv := mcpserver.New(exec, gate, authn, &mcpserver.Options{BaseURL: "https://bi.example.com",
//		AuthorizationServers: []string{as.Issuer()}})
//	mux.Handle("/mcp", srv)
//	mux.Handle("/", as.Handler()) // /.well-known/oauth-authorization-server, /oauth/..., /account/mcp/...
package oauth

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/ory/fosite"
	"github.com/ory/fosite/compose"

	"github.com/askbi/askbi"
	"github.com/askbi/askbi/access"
	"github.com/askbi/askbi/internal/httpjson"
	"github.com/askbi/askbi/internal/outbound"
)

// Team is a team the signed-in user belongs to, for the consent page's
// team selector.
type Team struct {
	ID   string
	Name string
}

// Users is the host's product login, as the authorization server needs
// it. Implementations must be safe for concurrent use.
type Users interface {
	// SignedIn returns the ID of the user signed in to the product for r
	// (by its session cookie, say), or "" when nobody is. It returns
	// Unavailable when the session store cannot be reached.
	SignedIn(r *http.Request) (userID string, err error)
	// SignInURL returns where to send a browser to sign in; after
	// signing in it should come back to returnTo, an absolute URL on the
	// canonical public URL.
	SignInURL(returnTo string) string
	// Teams returns the teams userID is a member of. Roles are read live
	// from the access.Checker.
	Teams(ctx context.Context, userID string) ([]Team, error)
}

// Options configures a Server. The zero value is valid; each zero field
// means its default.
type Options struct {
	// MCPPath is the path of the MCP endpoint under the public URL: the
	// resource every token is for is publicURL + MCPPath. Default "/mcp".
	MCPPath string
	// AccessTokenLifespan bounds an access token. Default 10 minutes.
	AccessTokenLifespan time.Duration
	// RefreshTokenLifespan bounds a refresh token; each rotation starts a
	// new one. Default 30 days.
	RefreshTokenLifespan time.Duration
	// CodeLifespan bounds an authorization code. Default 1 minute.
	CodeLifespan time.Duration
	// ConsentLifespan bounds how long a consent page may be answered.
	// Default 10 minutes.
	ConsentLifespan time.Duration
	// Secret is the HMAC key tokens are signed with, at least 32 bytes
	// (ParseSecret reads one). Default a random key: tokens then die with
	// the process, so a host with a persistent Store sets it.
	Secret []byte
	// ProductName is shown on the consent page. Default "askbi".
	ProductName string
	// ClientDocuments configures client ID metadata documents, on by
	// default.
	ClientDocuments DocumentOptions
	// Audit records client registrations, consents, token issues and
	// revocations. Default none.
	Audit access.AuditSink
	// Logger logs internal errors (never a secret). Default
	// slog.Default().
	Logger *slog.Logger
	// Now is the clock of grants, consent expiry and token verification.
	// Default time.Now.
	Now func() time.Time
}

// Server is the authorization server. It is safe for concurrent use.
type Server struct {
	store    Store
	users    Users
	checker  *access.Checker
	opts     Options
	issuer   string // the canonical public URL, no trailing slash
	resource string // issuer + MCPPath: the one resource tokens are for
	provider fosite.OAuth2Provider
	strategy strategy
	docs     *documents // nil when ClientDocuments.Disabled
	audit    *access.Auditor
	log      *slog.Logger
	now      func() time.Time
}

// Audit actions.
const (
	ActionRegister = "oauth.client_register"
	ActionConsent  = "oauth.consent"
	ActionIssue    = "oauth.token_issue"
	ActionRevoke   = "oauth.revoke"
)

// New returns the authorization server of the MCP server at publicURL +
// MCPPath. publicURL is the canonical public URL (behind a reverse proxy,
// the public one, never read from a request's Host header); it must be
// https unless its host is a loopback address. store keeps clients,
// requests, grants and tokens; users is the product login; checker reads
// live membership. opts may be nil.
func New(publicURL string, store Store, users Users, checker *access.Checker, opts *Options) (*Server, error) {
	s := &Server{store: store, users: users, checker: checker}
	if opts != nil {
		s.opts = *opts
	}
	o := &s.opts
	u, err := url.Parse(publicURL)
	if err != nil || u.Host == "" || u.User != nil || u.RawQuery != "" || u.Fragment != "" || (u.Scheme != "https" && u.Scheme != "http") {
		return nil, fmt.Errorf("oauth: public URL %q: must be an absolute http(s) URL without user, query or fragment", publicURL)
	}
	if u.Scheme == "http" && !outbound.LoopbackHost(u.Hostname()) {
		return nil, fmt.Errorf("oauth: public URL %q: HTTPS is required outside loopback", publicURL)
	}
	s.issuer = strings.TrimRight(u.String(), "/")
	if o.MCPPath == "" {
		o.MCPPath = "/mcp"
	}
	s.resource = s.issuer + o.MCPPath
	if o.AccessTokenLifespan <= 0 {
		o.AccessTokenLifespan = 10 * time.Minute
	}
	if o.RefreshTokenLifespan <= 0 {
		o.RefreshTokenLifespan = 30 * 24 * time.Hour
	}
	if o.CodeLifespan <= 0 {
		o.CodeLifespan = time.Minute
	}
	if o.ConsentLifespan <= 0 {
		o.ConsentLifespan = 10 * time.Minute
	}
	if len(o.Secret) == 0 {
		o.Secret = make([]byte, 32)
		rand.Read(o.Secret)
	}
	if len(o.Secret) < 32 {
		return nil, errors.New("oauth: Secret must be at least 32 bytes")
	}
	if o.ProductName == "" {
		o.ProductName = "askbi"
	}
	s.log = o.Logger
	if s.log == nil {
		s.log = slog.Default()
	}
	s.now = o.Now
	if s.now == nil {
		s.now = time.Now
	}
	s.audit = access.NewAuditor(o.Audit, s.log, s.now)
	if !o.ClientDocuments.Disabled {
		s.docs = newDocuments(o.ClientDocuments, s.issuer, s.now)
	}
	cfg := &fosite.Config{
		AccessTokenLifespan:            o.AccessTokenLifespan,
		RefreshTokenLifespan:           o.RefreshTokenLifespan,
		AuthorizeCodeLifespan:          o.CodeLifespan,
		GlobalSecret:                   o.Secret,
		EnforcePKCE:                    true,
		EnablePKCEPlainChallengeMethod: false,
		// state is optional (OAuth 2.1 §4.1.1: S256 PKCE, enforced here,
		// protects the flow). fosite reads 0 as its default minimum of 8
		// characters, which refuses a short state with a non-standard
		// invalid_state; 1 is the least it takes (a missing state: see
		// authorizeRequest).
		MinParameterEntropy: 1,
		// Refresh tokens are issued to every grant, without offline_access.
		RefreshTokenScopes: []string{},
		// Scopes and audiences are matched exactly, never as prefixes.
		ScopeStrategy:            fosite.ExactScopeStrategy,
		AudienceMatchingStrategy: fosite.ExactAudienceMatchingStrategy,
		ClientSecretsHasher:      sha256Hasher{},
		// The code's record keeps its PKCE challenge and its redirect URI
		// (see storage.put), which the token request must repeat (RFC 6749
		// §4.1.3): fosite compares them only when the stored one is set.
		SanitationWhiteList: []string{"code_challenge", "code_challenge_method", "redirect_uri"},
		TokenURL:            s.issuer + "/oauth/token",
		AccessTokenIssuer:   s.issuer,
		// Error answers carry fosite's hint, never its debug detail.
		SendDebugMessagesToClients: false,
	}
	s.strategy = newStrategy(cfg)
	s.provider = compose.Compose(cfg, storage{srv: s}, s.strategy,
		compose.OAuth2AuthorizeExplicitFactory,
		compose.OAuth2RefreshTokenGrantFactory,
		compose.OAuth2PKCEFactory,
		compose.OAuth2TokenRevocationFactory,
	)
	return s, nil
}

// Issuer returns the issuer: the canonical public URL.
func (s *Server) Issuer() string { return s.issuer }

// Resource returns the canonical MCP URL, the audience of every token.
func (s *Server) Resource() string { return s.resource }

// Handler serves the authorization server's routes:
//
//	GET  /.well-known/oauth-authorization-server  metadata (RFC 8414)
//	POST /oauth/register                          dynamic client registration (RFC 7591), the older way to register
//	GET  /oauth/authorize                         the consent page (POST: its answer)
//	POST /oauth/token                             codes and refresh tokens
//	POST /oauth/revoke                            token revocation (RFC 7009)
//	GET  /account/mcp                             the published server URL and client setup
//	GET  /account/mcp/clients                     connected clients
//	DELETE /account/mcp/clients/{id}              removes a client's access at once
func (s *Server) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /.well-known/oauth-authorization-server", s.metadata)
	mux.HandleFunc("POST /oauth/register", s.register)
	mux.HandleFunc("GET /oauth/authorize", s.authorize)
	cop := http.NewCrossOriginProtection()
	cop.SetDenyHandler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		httpjson.WriteError(w, r, s.log, askbi.Errorf(askbi.Forbidden, "a request from another site is refused here"))
	}))
	mux.Handle("POST /oauth/authorize", cop.Handler(http.HandlerFunc(s.consent)))
	mux.HandleFunc("POST /oauth/token", s.token)
	mux.HandleFunc("POST /oauth/revoke", s.revoke)
	s.accountRoutes(mux, cop)
	// Any other path or method under the server's mounts: a JSON 404, or
	// 405 with Allow.
	mux.Handle("/", httpjson.NoRoute(mux, "/", s.log))
	return noStore(mux)
}

// noStore keeps every answer out of caches: tokens, codes and consent
// pages are personal.
func noStore(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Cache-Control", "no-store")
		w.Header().Set("Pragma", "no-cache")
		h.ServeHTTP(w, r)
	})
}

// Purge is the retention step: it deletes expired consent requests and
// tokens, and grants that are revoked or have no token left. Hosts run it
// periodically, for instance every few minutes.
func (s *Server) Purge(ctx context.Context) (int, error) {
	return s.store.Purge(ctx, s.now().UTC())
}

// Verify authenticates an access token and returns its principal: the
// grant's user in the grant's team, with the grant's projects and the
// token's scopes (Auth [access.AuthOAuth], CredentialID the grant ID).
// Every failure (malformed, unknown, expired, for another resource,
// revoked, owner no longer a member) is Unauthenticated with the same
// message. It is an [access.TokenLookup].
func (s *Server) Verify(ctx context.Context, token string) (_ access.Principal, err error) {
	defer askbi.Wrap(&err, "oauth.Server.Verify")
	bad := askbi.Errorf(askbi.Unauthenticated, "invalid, expired or revoked access token")
	if !IsAccessToken(token) {
		return access.Principal{}, bad
	}
	if s.strategy.Enigma.Validate(ctx, strings.TrimPrefix(token, prefixAccess)) != nil {
		return access.Principal{}, bad
	}
	t, err := s.store.Token(ctx, hashSignature(s.strategy.AccessTokenSignature(ctx, token)))
	if askbi.ErrorCode(err) == askbi.NotFound {
		return access.Principal{}, bad
	}
	if err != nil {
		return access.Principal{}, err
	}
	if t.Kind != KindAccess || !t.ExpiresAt.After(s.now()) || !slices.Contains(t.Audience, s.resource) {
		return access.Principal{}, bad
	}
	g, err := s.store.Grant(ctx, t.GrantID)
	if askbi.ErrorCode(err) == askbi.NotFound {
		return access.Principal{}, bad
	}
	if err != nil {
		return access.Principal{}, err
	}
	if !g.RevokedAt.IsZero() {
		return access.Principal{}, bad
	}
	p, err := s.checker.Authenticated(ctx, GrantPrincipal(g, t.Scopes))
	if c := askbi.ErrorCode(err); c == askbi.Forbidden || c == askbi.Unauthenticated {
		return access.Principal{}, bad
	}
	if err != nil {
		return access.Principal{}, err
	}
	return p, nil
}

// GrantPrincipal is the principal of grant g's tokens with the token's
// scopes (never more than the grant's).
func GrantPrincipal(g Grant, tokenScopes []access.Scope) access.Principal {
	var scopes []access.Scope
	for _, sc := range tokenScopes {
		if slices.Contains(g.Scopes, sc) {
			scopes = append(scopes, sc)
		}
	}
	return access.Principal{UserID: g.UserID, TeamID: g.TeamID, Projects: g.Projects, Scopes: scopes,
		Auth: access.AuthOAuth, CredentialID: g.ID}
}

// revokeGrant revokes grant id at once, for reason, and audits it.
func (s *Server) revokeGrant(ctx context.Context, id, reason string) {
	began := s.now()
	g, gerr := s.store.Grant(ctx, id)
	err := s.store.RevokeGrant(ctx, id, began.UTC())
	if err != nil && askbi.ErrorCode(err) != askbi.NotFound {
		s.log.ErrorContext(ctx, "oauth: revoke grant", "grant", id, "err", err)
	}
	if gerr == nil {
		s.audit.Record(ctx, GrantPrincipal(g, g.Scopes), ActionRevoke, access.Team(g.TeamID), began, err,
			map[string]string{"reason": reason, "client_id": g.ClientID})
	}
}

// metadata serves RFC 8414 authorization server metadata.
func (s *Server) metadata(w http.ResponseWriter, r *http.Request) {
	methods := []string{"none", "client_secret_post", "client_secret_basic"}
	writeJSON(w, http.StatusOK, map[string]any{
		"issuer":                                         s.issuer,
		"authorization_endpoint":                         s.issuer + "/oauth/authorize",
		"token_endpoint":                                 s.issuer + "/oauth/token",
		"registration_endpoint":                          s.issuer + "/oauth/register",
		"revocation_endpoint":                            s.issuer + "/oauth/revoke",
		"scopes_supported":                               scopeArgs(access.AllScopes),
		"response_types_supported":                       []string{"code"},
		"response_modes_supported":                       []string{"query"},
		"grant_types_supported":                          grantTypes,
		"code_challenge_methods_supported":               []string{"S256"},
		"token_endpoint_auth_methods_supported":          methods,
		"revocation_endpoint_auth_methods_supported":     methods,
		"authorization_response_iss_parameter_supported": true,
		"client_id_metadata_document_supported":          s.docs != nil,
	})
}

// grantTypes are the grant types the token endpoint offers.
var grantTypes = []string{"authorization_code", "refresh_token"}

// token serves the token endpoint.
func (s *Server) token(w http.ResponseWriter, r *http.Request) {
	ctx := context.WithValue(r.Context(), exchangeKey, &exchange{})
	reason := "code_reuse"
	if r.PostFormValue("grant_type") == "refresh_token" {
		reason = "refresh_replay"
	}
	ctx = context.WithValue(ctx, revokeReasonKey, reason)
	// fosite answers a grant type none of its handlers takes with
	// invalid_request; RFC 6749 §5.2 names it unsupported_grant_type. A
	// missing grant_type stays fosite's invalid_request.
	if gt := r.PostFormValue("grant_type"); gt != "" && !slices.Contains(grantTypes, gt) {
		s.provider.WriteAccessError(ctx, w, fosite.NewAccessRequest(nil), fosite.ErrUnsupportedGrantType)
		return
	}
	if res := r.PostForm["resource"]; len(res) > 1 || len(res) == 1 && res[0] != s.resource {
		s.provider.WriteAccessError(ctx, w, fosite.NewAccessRequest(nil), errInvalidTarget())
		return
	}
	ctx, err := s.tokenClient(ctx, r)
	if err != nil {
		s.provider.WriteAccessError(ctx, w, fosite.NewAccessRequest(nil), err)
		return
	}
	ar, err := s.provider.NewAccessRequest(ctx, r, &fosite.DefaultSession{})
	if err != nil {
		s.provider.WriteAccessError(ctx, w, ar, err)
		return
	}
	resp, err := s.provider.NewAccessResponse(ctx, ar)
	if err != nil {
		s.provider.WriteAccessError(ctx, w, ar, err)
		return
	}
	if g, gerr := s.store.Grant(ctx, ar.GetID()); gerr == nil {
		s.audit.Record(ctx, GrantPrincipal(g, scopesOf(ar.GetGrantedScopes())), ActionIssue, access.Team(g.TeamID), s.now(), nil,
			map[string]string{"grant_type": strings.Join(ar.GetGrantTypes(), " "), "client_id": g.ClientID})
	}
	s.provider.WriteAccessResponse(ctx, w, ar, resp)
}

func errInvalidTarget() *fosite.RFC6749Error {
	return &fosite.RFC6749Error{ErrorField: "invalid_target", DescriptionField: "The requested resource is not served by this authorization server.",
		CodeField: http.StatusBadRequest}
}

// revoke serves RFC 7009 revocation. Revoking any token of a grant
// revokes the grant.
func (s *Server) revoke(w http.ResponseWriter, r *http.Request) {
	ctx := context.WithValue(r.Context(), revokeReasonKey, "revocation_endpoint")
	err := s.provider.NewRevocationRequest(ctx, r)
	s.provider.WriteRevocationResponse(ctx, w, err)
}

// matchRedirect reports whether requested is one of registered: byte for
// byte, or, for an http loopback redirect (RFC 8252 §7.3), the same URI
// on another port.
func matchRedirect(registered []string, requested string) bool {
	if slices.Contains(registered, requested) {
		return true
	}
	u, err := url.Parse(requested)
	if err != nil || u.Scheme != "http" || u.User != nil || u.Fragment != "" || !outbound.LoopbackHost(u.Hostname()) {
		return false
	}
	for _, reg := range registered {
		ru, err := url.Parse(reg)
		if err == nil && ru.Scheme == "http" && ru.User == nil && ru.Hostname() == u.Hostname() &&
			ru.EscapedPath() == u.EscapedPath() && ru.RawQuery == u.RawQuery && ru.ForceQuery == u.ForceQuery {
			return true
		}
	}
	return false
}

// newID returns prefix and 128 random bits.
func newID(prefix string) string {
	b := make([]byte, 16)
	rand.Read(b)
	return prefix + base64.RawURLEncoding.EncodeToString(b)
}

// ParseSecret reads an Options.Secret written as standard base64 (of at
// least 32 bytes, as `openssl rand -base64 32` prints), surrounding
// space allowed. Anything else is InvalidArgument.
func ParseSecret(s string) ([]byte, error) {
	k, err := base64.StdEncoding.DecodeString(strings.TrimSpace(s))
	if err != nil || len(k) < 32 {
		return nil, askbi.Errorf(askbi.InvalidArgument, "secret: must be base64 of at least 32 bytes")
	}
	return k, nil
}

// newSecret returns 256 random bits and their SHA-256.
func newSecret() (string, []byte) {
	b := make([]byte, 32)
	rand.Read(b)
	secret := base64.RawURLEncoding.EncodeToString(b)
	sum := sha256.Sum256([]byte(secret))
	return secret, sum[:]
}

func equalHash(secret string, hash []byte) bool {
	sum := sha256.Sum256([]byte(secret))
	return subtle.ConstantTimeCompare(sum[:], hash) == 1
}
