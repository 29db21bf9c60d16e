// Package mcpoauth is the protocol half of askbi's outbound OAuth for
// remote MCP connections (MCP authorization 2025-11-25 and 2026-07-28):
// protected resource metadata (RFC 9728), authorization server metadata
// (RFC 8414, OpenID discovery, the 2025-03-26 fallbacks), client
// registration (client ID metadata documents, pre-registered clients,
// RFC 7591 dynamic registration), the authorization request with S256
// PKCE and the resource indicator (RFC 8707), the RFC 9207 iss check, and
// the code exchange and refresh. It runs on the go-sdk's oauthex and
// golang.org/x/oauth2; every request goes through the http.Client the
// caller passes, which is the outbound request policy's
// (internal/outbound).
//
// It keeps no state: package dataexec/mcpsource stores what a sign-in
// needs between its start and its callback, sealed, and decides who may
// do what. Errors are *Error with a Reason, so the caller maps each to
// its own code and message without quoting a remote party's text.
package mcpoauth

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/oauthex"
	"golang.org/x/oauth2"

	"github.com/askbi/askbi/internal/outbound"
)

// Reason says why a step failed.
type Reason string

// Reasons.
const (
	// Discovery.
	ReasonUnreachable      Reason = "unreachable"       // a server did not answer, or not for good (a 5xx, 429 or 408, temporarily_unavailable, an error page that is not OAuth's)
	ReasonTooLarge         Reason = "too_large"         // a response over the size cap
	ReasonRefused          Reason = "refused"           // the outbound policy refused a target
	ReasonResourceMismatch Reason = "resource_mismatch" // protected resource metadata for another resource
	ReasonInvalidMetadata  Reason = "invalid_metadata"  // metadata that is not usable (no authorization server, bad URLs)
	ReasonIssuerMismatch   Reason = "issuer_mismatch"   // authorization server metadata with another issuer
	ReasonNoPKCE           Reason = "no_pkce"           // the authorization server does not offer S256
	ReasonNoRegistration   Reason = "no_registration"   // no way to register a client
	ReasonRegistration     Reason = "registration"      // the registration endpoint did not answer for good (down, busy)
	ReasonRegistrationNo   Reason = "registration_no"   // the registration endpoint refused askbi's client (an RFC 7591 error, another 4xx)
	// The authorization response.
	ReasonIssMissing  Reason = "iss_missing"  // iss advertised but absent
	ReasonIssMismatch Reason = "iss_mismatch" // iss of another authorization server
	// The token endpoint.
	ReasonGrantRejected Reason = "grant_rejected" // invalid_grant: a code or refresh token not (or no longer) valid
	ReasonClientRefused Reason = "client_refused" // invalid_client, unauthorized_client
	ReasonTokenError    Reason = "token_error"    // another error from the token endpoint
	ReasonTokenInvalid  Reason = "token_invalid"  // a token response askbi cannot use (type, fields)
	ReasonTokenResource Reason = "token_resource" // a token for another resource
)

// Error is a failed step. Err holds the detail for logs; it may quote a
// remote server and is never shown to users.
type Error struct {
	Reason Reason
	Err    error
}

func (e *Error) Error() string {
	if e.Err == nil {
		return "mcpoauth: " + string(e.Reason)
	}
	return "mcpoauth: " + string(e.Reason) + ": " + e.Err.Error()
}

func (e *Error) Unwrap() error { return e.Err }

// ReasonOf returns the reason of err, or "" when it is not an *Error.
func ReasonOf(err error) Reason {
	var e *Error
	if errors.As(err, &e) {
		return e.Reason
	}
	return ""
}

func fail(r Reason, format string, args ...any) error {
	return &Error{Reason: r, Err: fmt.Errorf(format, args...)}
}

// Client is the caller's HTTP client wrapped so that a response over the
// policy's size cap is told apart from other failures even where a
// library flattens the error into text.
type Client struct {
	hc      *http.Client
	tooBig  atomic.Bool
	refused atomic.Bool
	status  atomic.Int32 // of the last response
}

// NewClient wraps hc (the outbound policy's client). Besides hc's own
// redirect rules, a request with a body follows a redirect only within
// its origin: a 307 or 308 sends the body again, and a token request's
// code, verifier, refresh token or client secret must not reach another
// server.
func NewClient(hc *http.Client) *Client {
	c := &Client{}
	c.hc = &http.Client{Transport: &watch{next: hc.Transport, c: c}, Timeout: hc.Timeout,
		CheckRedirect: func(req *http.Request, via []*http.Request) error {
			if req.Method != http.MethodGet && req.Method != http.MethodHead && outbound.Origin(req.URL) != outbound.Origin(via[0].URL) {
				c.refused.Store(true)
				return fmt.Errorf("%w: a redirect of a %s request to another origin", outbound.ErrRefused, req.Method)
			}
			if hc.CheckRedirect != nil {
				return hc.CheckRedirect(req, via)
			}
			return nil
		}}
	return c
}

// HTTP returns the watched client.
func (c *Client) HTTP() *http.Client { return c.hc }

type watch struct {
	next http.RoundTripper
	c    *Client
}

func (w *watch) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := w.next.RoundTrip(req)
	if err != nil {
		w.c.note(err)
		return nil, err
	}
	w.c.status.Store(int32(resp.StatusCode))
	resp.Body = &watchedBody{ReadCloser: resp.Body, c: w.c}
	return resp, nil
}

type watchedBody struct {
	io.ReadCloser
	c *Client
}

func (b *watchedBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if err != nil && err != io.EOF {
		b.c.note(err)
	}
	return n, err
}

func (c *Client) note(err error) {
	if outbound.TooLarge(err) {
		c.tooBig.Store(true)
	}
	if outbound.Refused(err) {
		c.refused.Store(true)
	}
}

// classify gives err the reason the watch saw, else r.
func (c *Client) classify(r Reason, err error) error {
	var e *Error
	if errors.As(err, &e) && e.Reason != r {
		return err
	}
	switch {
	case c.tooBig.Load() || outbound.TooLarge(err):
		return &Error{Reason: ReasonTooLarge, Err: err}
	case c.refused.Load() || outbound.Refused(err):
		return &Error{Reason: ReasonRefused, Err: err}
	}
	return &Error{Reason: r, Err: err}
}

// Challenge is what a 401 or 403 of an MCP server says in its
// WWW-Authenticate header (RFC 6750, RFC 9728 section 5.1).
type Challenge struct {
	ResourceMetadata string
	Scopes           []string
	Error            string // "invalid_token", "insufficient_scope", ...
}

// ParseChallenge reads the Bearer challenge of h's WWW-Authenticate
// values. A malformed header is an empty challenge.
func ParseChallenge(h http.Header) Challenge {
	cs, err := oauthex.ParseWWWAuthenticate(h.Values("WWW-Authenticate"))
	if err != nil {
		return Challenge{}
	}
	var out Challenge
	for _, c := range cs {
		if c.Scheme != "bearer" {
			continue
		}
		if v := c.Params["resource_metadata"]; v != "" && out.ResourceMetadata == "" {
			out.ResourceMetadata = v
		}
		if v := c.Params["scope"]; v != "" && out.Scopes == nil {
			out.Scopes = strings.Fields(v)
		}
		if v := c.Params["error"]; v != "" && out.Error == "" {
			out.Error = v
		}
	}
	return out
}

// Metadata is an MCP server's authorization, as discovery found it.
type Metadata struct {
	// Resource is the resource indicator sent with every request: the
	// protected resource metadata's resource, or the MCP URL.
	Resource string `json:"resource"`
	// ResourceScopes is the resource's scopes_supported.
	ResourceScopes []string `json:"resource_scopes,omitempty"`

	Issuer                string   `json:"issuer"`
	AuthorizationEndpoint string   `json:"authorization_endpoint"`
	TokenEndpoint         string   `json:"token_endpoint"`
	RegistrationEndpoint  string   `json:"registration_endpoint,omitempty"`
	Scopes                []string `json:"scopes,omitempty"` // the authorization server's scopes_supported
	AuthMethods           []string `json:"auth_methods,omitempty"`
	IssSupported          bool     `json:"iss_supported,omitempty"`
	MetadataDocuments     bool     `json:"metadata_documents,omitempty"` // client ID metadata documents
	// Legacy is set when the server has no protected resource metadata
	// (the 2025-03-26 revision: the MCP server's origin is the
	// authorization server).
	Legacy bool `json:"legacy,omitempty"`
}

// Discover finds the authorization of the MCP server at mcpURL, from the
// challenge of its 401 (empty when it sent none): the protected resource
// metadata at the challenge's resource_metadata, else at the well-known
// path of the MCP endpoint, else at the root; then its first
// authorization server's metadata (RFC 8414, then OpenID discovery).
// Metadata that is found but wrong (another resource, another issuer, no
// S256) is refused, never passed over for a fallback; only a server with
// no protected resource metadata at all falls back to the 2025-03-26
// rules.
func Discover(ctx context.Context, c *Client, mcpURL string, ch Challenge) (*Metadata, error) {
	md := &Metadata{}
	prm, err := resourceMetadata(ctx, c, mcpURL, ch.ResourceMetadata)
	if err != nil {
		return nil, err
	}
	var issuer string
	if prm == nil {
		u, _ := url.Parse(mcpURL)
		issuer = (&url.URL{Scheme: u.Scheme, Host: u.Host}).String()
		md.Resource, md.Legacy = mcpURL, true
	} else {
		issuer = prm.AuthorizationServers[0]
		md.Resource, md.ResourceScopes = prm.Resource, prm.ScopesSupported
	}
	asm, err := auth.GetAuthServerMetadata(ctx, issuer, c.HTTP())
	if err != nil {
		if strings.Contains(err.Error(), "does not match issuer") {
			return nil, &Error{Reason: ReasonIssuerMismatch, Err: err}
		}
		if strings.Contains(err.Error(), "does not implement PKCE") {
			return nil, &Error{Reason: ReasonNoPKCE, Err: err}
		}
		return nil, c.classify(ReasonInvalidMetadata, err)
	}
	if asm == nil {
		if !md.Legacy {
			return nil, fail(ReasonInvalidMetadata, "no metadata for authorization server %q", issuer)
		}
		// 2025-03-26: no metadata; the default endpoints at the origin.
		md.Issuer, md.AuthorizationEndpoint, md.TokenEndpoint, md.RegistrationEndpoint =
			issuer, issuer+"/authorize", issuer+"/token", issuer+"/register"
		return md, nil
	}
	if !slices.Contains(asm.CodeChallengeMethodsSupported, "S256") {
		return nil, fail(ReasonNoPKCE, "code_challenge_methods_supported %v lacks S256", asm.CodeChallengeMethodsSupported)
	}
	if asm.AuthorizationEndpoint == "" || asm.TokenEndpoint == "" {
		return nil, fail(ReasonInvalidMetadata, "metadata without authorization or token endpoint")
	}
	md.Issuer, md.AuthorizationEndpoint, md.TokenEndpoint, md.RegistrationEndpoint =
		asm.Issuer, asm.AuthorizationEndpoint, asm.TokenEndpoint, asm.RegistrationEndpoint
	md.Scopes, md.AuthMethods = asm.ScopesSupported, asm.TokenEndpointAuthMethodsSupported
	md.IssSupported, md.MetadataDocuments = asm.AuthorizationResponseIssParameterSupported, asm.ClientIDMetadataDocumentSupported
	return md, nil
}

// resourceMetadata fetches the protected resource metadata: nil when the
// server has none anywhere (404s), an error when a document was found but
// is not for this resource or names no authorization server.
func resourceMetadata(ctx context.Context, c *Client, mcpURL, fromChallenge string) (*oauthex.ProtectedResourceMetadata, error) {
	type candidate struct{ url, resource string }
	var cands []candidate
	if fromChallenge != "" {
		cands = append(cands, candidate{fromChallenge, mcpURL})
	}
	u, err := url.Parse(mcpURL)
	if err != nil {
		return nil, fail(ReasonInvalidMetadata, "MCP URL: %v", err)
	}
	at := *u
	at.RawQuery, at.Fragment = "", ""
	at.Path = "/.well-known/oauth-protected-resource/" + strings.TrimLeft(u.Path, "/")
	at.RawPath = ""
	cands = append(cands, candidate{at.String(), mcpURL})
	at.Path = "/.well-known/oauth-protected-resource"
	cands = append(cands, candidate{at.String(), (&url.URL{Scheme: u.Scheme, Host: u.Host}).String()})
	var firstErr error
	for _, cand := range cands {
		prm, status, err := getResourceMetadata(ctx, c, cand.url)
		switch {
		case err != nil && status >= 400 && status < 500:
			continue // none here
		case err != nil:
			if firstErr == nil {
				firstErr = err
			}
			continue
		}
		// RFC 9728 section 3.3: the resource must be the one the
		// metadata was looked up for, byte for byte.
		if prm.Resource != cand.resource {
			return nil, fail(ReasonResourceMismatch, "metadata resource %q, want %q", prm.Resource, cand.resource)
		}
		if len(prm.AuthorizationServers) == 0 {
			return nil, fail(ReasonInvalidMetadata, "protected resource metadata names no authorization server")
		}
		for i, as := range prm.AuthorizationServers {
			if p, err := url.Parse(as); err != nil || (p.Scheme != "https" && p.Scheme != "http") || p.Host == "" || p.User != nil {
				return nil, fail(ReasonInvalidMetadata, "authorization_servers[%d] is not an http(s) URL", i)
			}
		}
		return prm, nil
	}
	if firstErr != nil {
		return nil, firstErr
	}
	return nil, nil
}

// getResourceMetadata fetches one document; status is the HTTP status
// when the server answered.
func getResourceMetadata(ctx context.Context, c *Client, u string) (*oauthex.ProtectedResourceMetadata, int, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return nil, 0, fail(ReasonInvalidMetadata, "metadata URL: %v", err)
	}
	req.Header.Set("Accept", "application/json")
	resp, err := c.HTTP().Do(req)
	if err != nil {
		return nil, 0, c.classify(ReasonUnreachable, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		io.Copy(io.Discard, io.LimitReader(resp.Body, 4096))
		r := ReasonInvalidMetadata
		if resp.StatusCode >= 500 {
			r = ReasonUnreachable
		}
		return nil, resp.StatusCode, fail(r, "protected resource metadata: HTTP %d", resp.StatusCode)
	}
	var prm oauthex.ProtectedResourceMetadata
	if err := decodeJSON(resp.Body, &prm); err != nil {
		return nil, resp.StatusCode, c.classify(ReasonInvalidMetadata, err)
	}
	return &prm, resp.StatusCode, nil
}

// RegisterOptions says how askbi may register with an authorization
// server.
type RegisterOptions struct {
	RedirectURI string
	// MetadataURL is the client ID metadata document's URL (https), used
	// as client_id where the server supports such documents.
	MetadataURL string
	// Preregistered are clients registered by hand, by issuer.
	Preregistered []Registration
	ClientName    string
	ClientURI     string
}

// Registration is askbi's client at one authorization server.
type Registration struct {
	Issuer      string `json:"issuer"`
	ClientID    string `json:"client_id"`
	Secret      string `json:"client_secret,omitempty"`
	AuthMethod  string `json:"auth_method,omitempty"` // none, client_secret_basic, client_secret_post
	RedirectURI string `json:"redirect_uri"`
	Method      string `json:"method"` // metadata_document, preregistered, dynamic
}

// Register returns askbi's client at md's authorization server, in the
// MCP order: a client ID metadata document when the server supports
// them, else a pre-registered client for this issuer, else dynamic
// registration. A client is never carried over from another issuer.
func Register(ctx context.Context, c *Client, md *Metadata, o RegisterOptions) (Registration, error) {
	if o.MetadataURL != "" && md.MetadataDocuments {
		return Registration{Issuer: md.Issuer, ClientID: o.MetadataURL, AuthMethod: "none", RedirectURI: o.RedirectURI, Method: "metadata_document"}, nil
	}
	for _, p := range o.Preregistered {
		if p.Issuer == md.Issuer {
			p.RedirectURI, p.Method = o.RedirectURI, "preregistered"
			if p.AuthMethod == "" {
				p.AuthMethod = pickAuthMethod(md.AuthMethods, p.Secret != "")
			}
			return p, nil
		}
	}
	if md.RegistrationEndpoint == "" {
		return Registration{}, fail(ReasonNoRegistration, "the authorization server offers no registration")
	}
	method := pickAuthMethod(md.AuthMethods, true)
	meta := &oauthex.ClientRegistrationMetadata{
		RedirectURIs: []string{o.RedirectURI}, ClientName: o.ClientName, ClientURI: o.ClientURI,
		GrantTypes: []string{"authorization_code", "refresh_token"}, ResponseTypes: []string{"code"},
		TokenEndpointAuthMethod: method, ApplicationType: applicationType(o.RedirectURI),
	}
	resp, err := oauthex.RegisterClient(ctx, md.RegistrationEndpoint, meta, c.HTTP())
	if err != nil {
		// A refusal is final (an RFC 7591 error, a 404 where no
		// registration is served); a server down or busy may pass.
		var refused *oauthex.ClientRegistrationError
		if st := int(c.status.Load()); errors.As(err, &refused) || st >= 400 && st < 500 && !temporary(st, "") {
			return Registration{}, c.classify(ReasonRegistrationNo, err)
		}
		return Registration{}, c.classify(ReasonRegistration, err)
	}
	reg := Registration{Issuer: md.Issuer, ClientID: resp.ClientID, Secret: resp.ClientSecret, AuthMethod: resp.TokenEndpointAuthMethod,
		RedirectURI: o.RedirectURI, Method: "dynamic"}
	if reg.AuthMethod == "" {
		reg.AuthMethod = method
		if reg.AuthMethod == "" {
			reg.AuthMethod = "client_secret_basic" // RFC 7591's default
		}
	}
	if reg.Secret == "" && reg.AuthMethod != "none" {
		reg.AuthMethod = "none"
	}
	return reg, nil
}

// pickAuthMethod chooses the token endpoint authentication among the
// server's: basic, then post (confidential), then none. An empty list
// leaves it to the server's default.
func pickAuthMethod(supported []string, confidential bool) string {
	if confidential {
		for _, m := range []string{"client_secret_basic", "client_secret_post"} {
			if slices.Contains(supported, m) {
				return m
			}
		}
	}
	if slices.Contains(supported, "none") {
		return "none"
	}
	if len(supported) > 0 {
		return supported[0]
	}
	return ""
}

// applicationType is OpenID's application_type for a redirect URI: native
// for loopback, web otherwise (MCP 2026-07-28 asks for the right one).
func applicationType(redirect string) string {
	u, err := url.Parse(redirect)
	if err != nil {
		return ""
	}
	if outbound.LoopbackHost(u.Hostname()) {
		return "native"
	}
	return "web"
}

// Scopes chooses the scopes to request (MCP's scope selection strategy):
// the challenge's, else the resource's scopes_supported, else none; with
// offline_access when the authorization server lists it and a refresh
// token is wanted; united with scopes granted or asked for before (step
// up never loses a scope).
func Scopes(ch Challenge, md *Metadata, earlier []string, refresh bool) []string {
	want := ch.Scopes
	if len(want) == 0 {
		want = md.ResourceScopes
	}
	out := slices.Clone(earlier)
	for _, s := range want {
		if !slices.Contains(out, s) {
			out = append(out, s)
		}
	}
	if refresh && slices.Contains(md.Scopes, "offline_access") && !slices.Contains(out, "offline_access") {
		out = append(out, "offline_access")
	}
	return out
}

func config(md *Metadata, reg Registration, scopes []string) *oauth2.Config {
	style := oauth2.AuthStyleInHeader
	if reg.AuthMethod == "client_secret_post" || reg.AuthMethod == "none" {
		style = oauth2.AuthStyleInParams
	}
	return &oauth2.Config{ClientID: reg.ClientID, ClientSecret: reg.Secret, RedirectURL: reg.RedirectURI, Scopes: scopes,
		Endpoint: oauth2.Endpoint{AuthURL: md.AuthorizationEndpoint, TokenURL: md.TokenEndpoint, AuthStyle: style}}
}

// NewVerifier returns a PKCE code verifier.
func NewVerifier() string { return oauth2.GenerateVerifier() }

// AuthURL is the authorization request: code flow, S256 PKCE, the
// resource indicator, state and the scopes (none: no scope parameter).
func AuthURL(md *Metadata, reg Registration, scopes []string, state, verifier string) string {
	return config(md, reg, scopes).AuthCodeURL(state, oauth2.S256ChallengeOption(verifier),
		oauth2.SetAuthURLParam("resource", md.Resource))
}

// CheckIss applies RFC 9207 to the authorization response's iss: when the
// server advertises it, it must be present; when present, it must equal
// the issuer byte for byte (no URL normalization).
func CheckIss(md *Metadata, iss string) error {
	switch {
	case iss == "" && md.IssSupported:
		return fail(ReasonIssMissing, "the authorization response has no iss, which the server advertises")
	case iss != "" && iss != md.Issuer:
		return fail(ReasonIssMismatch, "iss %q is not the issuer %q", iss, md.Issuer)
	}
	return nil
}

// Token is a token response.
type Token struct {
	Access  string
	Refresh string
	// ExpiresIn is the response's expires_in (0: not said). The caller
	// turns it into an expiry on its own clock.
	ExpiresIn time.Duration
	Scopes    []string // granted, when the response says
}

// Exchange trades an authorization code for tokens (with the PKCE
// verifier and the resource indicator).
func Exchange(ctx context.Context, c *Client, md *Metadata, reg Registration, code, verifier string) (Token, error) {
	ctx = context.WithValue(ctx, oauth2.HTTPClient, c.HTTP())
	tok, err := config(md, reg, nil).Exchange(ctx, code, oauth2.VerifierOption(verifier), oauth2.SetAuthURLParam("resource", md.Resource))
	if err != nil {
		return Token{}, c.tokenError(err)
	}
	return check(md, tok)
}

// Refresh uses a refresh token (with the resource indicator, which
// x/oauth2's token source cannot send, so the request is made here). A
// rotated refresh token comes back in Token.Refresh; an unrotated one is
// kept.
func Refresh(ctx context.Context, c *Client, md *Metadata, reg Registration, refresh string) (Token, error) {
	v := url.Values{"grant_type": {"refresh_token"}, "refresh_token": {refresh}, "resource": {md.Resource}}
	if reg.AuthMethod != "client_secret_basic" {
		v.Set("client_id", reg.ClientID)
		if reg.AuthMethod == "client_secret_post" && reg.Secret != "" {
			v.Set("client_secret", reg.Secret)
		}
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, md.TokenEndpoint, strings.NewReader(v.Encode()))
	if err != nil {
		return Token{}, fail(ReasonInvalidMetadata, "token endpoint: %v", err)
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Accept", "application/json")
	if reg.AuthMethod == "client_secret_basic" {
		req.SetBasicAuth(url.QueryEscape(reg.ClientID), url.QueryEscape(reg.Secret))
	}
	resp, err := c.HTTP().Do(req)
	if err != nil {
		return Token{}, c.classify(ReasonUnreachable, err)
	}
	defer resp.Body.Close()
	var body struct {
		AccessToken  string          `json:"access_token"`
		TokenType    string          `json:"token_type"`
		RefreshToken string          `json:"refresh_token"`
		ExpiresIn    json.Number     `json:"expires_in"`
		Scope        string          `json:"scope"`
		Resource     json.RawMessage `json:"resource"`
		Aud          json.RawMessage `json:"aud"`
		Error        string          `json:"error"`
	}
	if err := decodeJSON(resp.Body, &body); err != nil {
		if resp.StatusCode != http.StatusOK {
			// An error page that is not OAuth's (a proxy, a load
			// balancer): no answer about the refresh token.
			return Token{}, c.classify(ReasonUnreachable, fmt.Errorf("refresh: HTTP %d: %w", resp.StatusCode, err))
		}
		return Token{}, c.classify(ReasonTokenInvalid, err)
	}
	if resp.StatusCode != http.StatusOK || body.Error != "" {
		switch {
		case body.Error == "invalid_grant":
			return Token{}, fail(ReasonGrantRejected, "refresh: %s (HTTP %d)", body.Error, resp.StatusCode)
		case body.Error == "invalid_client" || body.Error == "unauthorized_client":
			return Token{}, fail(ReasonClientRefused, "refresh: %s (HTTP %d)", body.Error, resp.StatusCode)
		case temporary(resp.StatusCode, body.Error):
			return Token{}, fail(ReasonUnreachable, "refresh: %q (HTTP %d)", body.Error, resp.StatusCode)
		}
		return Token{}, fail(ReasonTokenError, "refresh: %q (HTTP %d)", body.Error, resp.StatusCode)
	}
	if body.AccessToken == "" {
		return Token{}, fail(ReasonTokenInvalid, "refresh: no access_token")
	}
	tok := (&oauth2.Token{AccessToken: body.AccessToken, TokenType: body.TokenType, RefreshToken: body.RefreshToken})
	extra := map[string]any{"scope": body.Scope}
	for k, raw := range map[string]json.RawMessage{"resource": body.Resource, "aud": body.Aud} {
		if len(raw) > 0 {
			var x any
			json.Unmarshal(raw, &x)
			extra[k] = x
		}
	}
	tok = tok.WithExtra(extra)
	if n, err := body.ExpiresIn.Int64(); err == nil && n > 0 {
		tok.ExpiresIn = n
	}
	out, err := check(md, tok)
	if out.Refresh == "" {
		out.Refresh = refresh
	}
	return out, err
}

func (c *Client) tokenError(err error) error {
	var re *oauth2.RetrieveError
	if errors.As(err, &re) {
		switch re.ErrorCode {
		case "invalid_grant":
			return &Error{Reason: ReasonGrantRejected, Err: err}
		case "invalid_client", "unauthorized_client":
			return &Error{Reason: ReasonClientRefused, Err: err}
		}
		if re.Response != nil && (temporary(re.Response.StatusCode, re.ErrorCode) || re.ErrorCode == "") {
			// Busy, down, or an error page that is not OAuth's: no
			// answer about the code.
			return &Error{Reason: ReasonUnreachable, Err: err}
		}
		return c.classify(ReasonTokenError, err)
	}
	if strings.Contains(err.Error(), "server response missing access_token") {
		return &Error{Reason: ReasonTokenInvalid, Err: err}
	}
	return c.classify(ReasonUnreachable, err)
}

// temporary reports whether a token endpoint's error answer says to
// come back later rather than no.
func temporary(status int, code string) bool {
	return status >= 500 || status == http.StatusTooManyRequests || status == http.StatusRequestTimeout ||
		code == "temporarily_unavailable" || code == "server_error"
}

// check refuses a token askbi cannot use: not a bearer token (DPoP and
// others are not supported), or one the response says is for another
// resource.
func check(md *Metadata, tok *oauth2.Token) (Token, error) {
	if t := tok.TokenType; t != "" && !strings.EqualFold(t, "bearer") {
		return Token{}, fail(ReasonTokenInvalid, "token_type %q", t)
	}
	for _, key := range []string{"resource", "aud"} {
		if !forResource(tok.Extra(key), md.Resource) {
			return Token{}, fail(ReasonTokenResource, "the token response's %s is not %q", key, md.Resource)
		}
	}
	out := Token{Access: tok.AccessToken, Refresh: tok.RefreshToken, ExpiresIn: time.Duration(max(tok.ExpiresIn, 0)) * time.Second}
	if s, ok := tok.Extra("scope").(string); ok {
		out.Scopes = strings.Fields(s)
	}
	return out, nil
}

// forResource reports whether a token response field (absent, a string
// or a list) names resource.
func forResource(v any, resource string) bool {
	switch x := v.(type) {
	case nil:
		return true
	case string:
		return x == "" || x == resource
	case []any:
		for _, e := range x {
			if s, _ := e.(string); s == resource {
				return true
			}
		}
		return len(x) == 0
	}
	return false
}

// maxJSON caps a metadata or token document read here (the outbound
// policy caps every body too).
const maxJSON = 256 << 10

func decodeJSON(r io.Reader, v any) error {
	d := json.NewDecoder(io.LimitReader(r, maxJSON+1))
	return d.Decode(v)
}
