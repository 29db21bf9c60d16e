package oauth

// The adapter between fosite's storage interfaces and Store. Fosite's
// types stay in this file and server.go; none reaches the package's
// exported API.

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"errors"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/ory/fosite"
	"github.com/ory/fosite/handler/oauth2"
	"github.com/ory/fosite/token/hmac"

	"github.com/askbi/askbi"
	"github.com/askbi/askbi/access"
)

// Token prefixes: MCP tokens are told apart from product session tokens
// (askbi_session_) and API keys (askbi_<prefix>_<secret>) by shape.
const (
	prefixAccess  = "askbi_at_"
	prefixRefresh = "askbi_rt_"
	prefixCode    = "askbi_ac_"
)

// IsAccessToken reports whether token has the shape of an access token
// of this package (it may still be invalid).
func IsAccessToken(token string) bool { return strings.HasPrefix(token, prefixAccess) }

// strategy is fosite's HMAC strategy with our prefixes.
type strategy struct {
	*oauth2.HMACSHAStrategyUnPrefixed
}

func newStrategy(cfg *fosite.Config) strategy {
	return strategy{oauth2.NewHMACSHAStrategyUnPrefixed(&hmac.HMACStrategy{Config: cfg}, cfg)}
}

func (s strategy) AccessTokenSignature(ctx context.Context, token string) string {
	return s.HMACSHAStrategyUnPrefixed.AccessTokenSignature(ctx, strings.TrimPrefix(token, prefixAccess))
}
func (s strategy) RefreshTokenSignature(ctx context.Context, token string) string {
	return s.HMACSHAStrategyUnPrefixed.RefreshTokenSignature(ctx, strings.TrimPrefix(token, prefixRefresh))
}
func (s strategy) AuthorizeCodeSignature(ctx context.Context, token string) string {
	return s.HMACSHAStrategyUnPrefixed.AuthorizeCodeSignature(ctx, strings.TrimPrefix(token, prefixCode))
}
func (s strategy) GenerateAccessToken(ctx context.Context, r fosite.Requester) (string, string, error) {
	t, sig, err := s.HMACSHAStrategyUnPrefixed.GenerateAccessToken(ctx, r)
	return prefixAccess + t, sig, err
}
func (s strategy) ValidateAccessToken(ctx context.Context, r fosite.Requester, token string) error {
	return s.HMACSHAStrategyUnPrefixed.ValidateAccessToken(ctx, r, strings.TrimPrefix(token, prefixAccess))
}
func (s strategy) GenerateRefreshToken(ctx context.Context, r fosite.Requester) (string, string, error) {
	t, sig, err := s.HMACSHAStrategyUnPrefixed.GenerateRefreshToken(ctx, r)
	return prefixRefresh + t, sig, err
}
func (s strategy) ValidateRefreshToken(ctx context.Context, r fosite.Requester, token string) error {
	return s.HMACSHAStrategyUnPrefixed.ValidateRefreshToken(ctx, r, strings.TrimPrefix(token, prefixRefresh))
}
func (s strategy) GenerateAuthorizeCode(ctx context.Context, r fosite.Requester) (string, string, error) {
	t, sig, err := s.HMACSHAStrategyUnPrefixed.GenerateAuthorizeCode(ctx, r)
	return prefixCode + t, sig, err
}
func (s strategy) ValidateAuthorizeCode(ctx context.Context, r fosite.Requester, token string) error {
	return s.HMACSHAStrategyUnPrefixed.ValidateAuthorizeCode(ctx, r, strings.TrimPrefix(token, prefixCode))
}

// hashSignature is how a token is stored: the SHA-256 of fosite's HMAC
// signature of it.
func hashSignature(sig string) []byte {
	sum := sha256.Sum256([]byte(sig))
	return sum[:]
}

// sha256Hasher checks client secrets: 256-bit random secrets need no
// password stretching, and bcrypt (fosite's default) would cost 100 ms a
// token request.
type sha256Hasher struct{}

func (sha256Hasher) Compare(_ context.Context, hash, data []byte) error {
	sum := sha256.Sum256(data)
	if subtle.ConstantTimeCompare(hash, sum[:]) != 1 {
		return errors.New("secret mismatch")
	}
	return nil
}

func (sha256Hasher) Hash(_ context.Context, data []byte) ([]byte, error) {
	sum := sha256.Sum256(data)
	return sum[:], nil
}

// fositeClient is a Client as fosite sees it.
type fositeClient struct {
	c        Client
	audience []string
	redirect []string // the registered URIs, plus a matched loopback one
}

func (f *fositeClient) GetID() string             { return f.c.ID }
func (f *fositeClient) GetHashedSecret() []byte   { return f.c.SecretHash }
func (f *fositeClient) GetRedirectURIs() []string { return f.redirect }
func (f *fositeClient) GetGrantTypes() fosite.Arguments {
	return slices.Clone(grantTypes)
}
func (f *fositeClient) GetResponseTypes() fosite.Arguments { return fosite.Arguments{"code"} }
func (f *fositeClient) GetScopes() fosite.Arguments {
	// offline_access is accepted and ignored: refresh tokens are always
	// issued (see Server.authorize). data:read is always allowed, also to
	// a client stored before registration added it (withDataRead).
	return append(scopeArgs(withDataRead(f.c.Scopes)), "offline_access")
}
func (f *fositeClient) IsPublic() bool                     { return f.c.AuthMethod == "none" }
func (f *fositeClient) GetAudience() fosite.Arguments      { return f.audience }
func (f *fositeClient) GetTokenEndpointAuthMethod() string { return f.c.AuthMethod }

func scopeArgs(scopes []access.Scope) fosite.Arguments {
	out := make(fosite.Arguments, len(scopes))
	for i, s := range scopes {
		out[i] = string(s)
	}
	return out
}

func scopesOf(args fosite.Arguments) []access.Scope { return knownScopes(args) }

// ctxKey carries per-request state through fosite's calls.
type ctxKey int

const (
	redirectKey ctxKey = iota // the redirect URI the request matched
	exchangeKey               // *exchange of a token request
)

// exchange records that this token request consumed its code, so the
// code reads as used only to other requests (a replay).
type exchange struct{ consumed []byte }

// storage implements fosite's storage interfaces on a Store.
type storage struct {
	srv *Server
}

func (st storage) store() Store { return st.srv.store }

// GetClient loads a client (Server.client: registered, or described by
// its metadata document). A loopback redirect URI that matched a
// registered one with another port is added for this request only.
func (st storage) GetClient(ctx context.Context, id string) (fosite.Client, error) {
	c, err := st.srv.client(ctx, id)
	if askbi.ErrorCode(err) == askbi.NotFound {
		return nil, fosite.ErrNotFound
	}
	if err != nil {
		return nil, fositeClientError(err)
	}
	fc := &fositeClient{c: c, audience: []string{st.srv.resource}, redirect: slices.Clone(c.RedirectURIs)}
	if u, ok := ctx.Value(redirectKey).(string); ok && matchRedirect(c.RedirectURIs, u) && !slices.Contains(fc.redirect, u) {
		fc.redirect = append(fc.redirect, u)
	}
	return fc, nil
}

// Client assertions (private_key_jwt) are not offered.
func (storage) ClientAssertionJWTValid(context.Context, string) error { return nil }
func (storage) SetClientAssertionJWT(context.Context, string, time.Time) error {
	return nil
}

func (st storage) put(ctx context.Context, kind TokenKind, sig string, r fosite.Requester, expires time.Time) error {
	t := Token{
		Hash: hashSignature(sig), Kind: kind, GrantID: r.GetID(), ClientID: r.GetClient().GetID(),
		Scopes: scopesOf(r.GetGrantedScopes()), Audience: slices.Clone(r.GetGrantedAudience()),
		RequestedAt: r.GetRequestedAt().UTC(), ExpiresAt: expires.UTC(),
	}
	if kind == KindCode {
		f := r.GetRequestForm()
		t.RedirectURI, t.Challenge, t.ChallengeMethod = f.Get("redirect_uri"), f.Get("code_challenge"), f.Get("code_challenge_method")
	}
	return st.store().CreateToken(ctx, t)
}

// get rebuilds the fosite request of a stored token.
func (st storage) get(ctx context.Context, kind TokenKind, sig string) (*fosite.Request, Token, error) {
	t, err := st.store().Token(ctx, hashSignature(sig))
	// An expired code or token is gone on the server's clock, as in
	// Verify, whether or not Purge has run yet.
	if askbi.ErrorCode(err) == askbi.NotFound || err == nil && (t.Kind != kind || !t.ExpiresAt.IsZero() && !t.ExpiresAt.After(st.srv.now())) {
		return nil, Token{}, fosite.ErrNotFound
	}
	if err != nil {
		return nil, Token{}, err
	}
	g, err := st.store().Grant(ctx, t.GrantID)
	if askbi.ErrorCode(err) == askbi.NotFound {
		return nil, Token{}, fosite.ErrNotFound
	}
	if err != nil {
		return nil, Token{}, err
	}
	c, err := st.GetClient(ctx, t.ClientID)
	if err != nil {
		return nil, Token{}, err
	}
	sess := &fosite.DefaultSession{Subject: g.UserID, ExpiresAt: map[fosite.TokenType]time.Time{}}
	switch kind {
	case KindCode:
		sess.ExpiresAt[fosite.AuthorizeCode] = t.ExpiresAt
	case KindAccess:
		sess.ExpiresAt[fosite.AccessToken] = t.ExpiresAt
	case KindRefresh:
		sess.ExpiresAt[fosite.RefreshToken] = t.ExpiresAt
	}
	form := url.Values{}
	if kind == KindCode {
		form.Set("redirect_uri", t.RedirectURI)
		form.Set("code_challenge", t.Challenge)
		form.Set("code_challenge_method", t.ChallengeMethod)
	}
	r := &fosite.Request{
		ID: t.GrantID, RequestedAt: t.RequestedAt, Client: c, Session: sess, Form: form,
		RequestedScope: scopeArgs(t.Scopes), GrantedScope: scopeArgs(t.Scopes),
		RequestedAudience: slices.Clone(t.Audience), GrantedAudience: slices.Clone(t.Audience),
	}
	return r, t, nil
}

// usedByOther reports whether t was used, and not by this token
// request.
func usedByOther(ctx context.Context, t Token) bool {
	if t.UsedAt.IsZero() {
		return false
	}
	ex, _ := ctx.Value(exchangeKey).(*exchange)
	return ex == nil || !slices.Equal(ex.consumed, t.Hash)
}

func (st storage) CreateAuthorizeCodeSession(ctx context.Context, sig string, r fosite.Requester) error {
	return st.put(ctx, KindCode, sig, r, r.GetSession().GetExpiresAt(fosite.AuthorizeCode))
}

// GetAuthorizeCodeSession returns fosite.ErrInvalidatedAuthorizeCode for
// a code already exchanged; fosite then revokes what it issued.
func (st storage) GetAuthorizeCodeSession(ctx context.Context, sig string, _ fosite.Session) (fosite.Requester, error) {
	r, t, err := st.get(ctx, KindCode, sig)
	if err != nil {
		return nil, err
	}
	if usedByOther(ctx, t) {
		return r, fosite.ErrInvalidatedAuthorizeCode
	}
	return r, nil
}

// InvalidateAuthorizeCodeSession marks the code used, unless this request
// already did so when it read the PKCE data.
func (st storage) InvalidateAuthorizeCodeSession(ctx context.Context, sig string) error {
	return st.consume(ctx, sig)
}

// consume uses code sig once for this token request. Losing a race to
// another request is a replay: the grant is revoked.
func (st storage) consume(ctx context.Context, sig string) error {
	ex, _ := ctx.Value(exchangeKey).(*exchange)
	h := hashSignature(sig)
	if ex != nil && slices.Equal(ex.consumed, h) {
		return nil
	}
	err := st.store().UseToken(ctx, h, st.srv.now().UTC())
	if askbi.ErrorCode(err) == askbi.Conflict {
		if t, terr := st.store().Token(ctx, h); terr == nil {
			st.srv.revokeGrant(ctx, t.GrantID, "code_reuse")
		}
		return fosite.ErrInvalidatedAuthorizeCode
	}
	if err != nil {
		return err
	}
	if ex != nil {
		ex.consumed = h
	}
	return nil
}

// The PKCE data is the code's own record: reading it finds the code,
// and "deleting" it consumes the code, so a failed verifier burns the
// code as fosite's own stores do.
func (st storage) CreatePKCERequestSession(context.Context, string, fosite.Requester) error {
	return nil
}

func (st storage) GetPKCERequestSession(ctx context.Context, sig string, _ fosite.Session) (fosite.Requester, error) {
	r, t, err := st.get(ctx, KindCode, sig)
	if err != nil {
		return nil, err
	}
	if usedByOther(ctx, t) {
		return nil, fosite.ErrNotFound
	}
	return r, nil
}

func (st storage) DeletePKCERequestSession(ctx context.Context, sig string) error {
	return st.consume(ctx, sig)
}

func (st storage) CreateAccessTokenSession(ctx context.Context, sig string, r fosite.Requester) error {
	return st.put(ctx, KindAccess, sig, r, r.GetSession().GetExpiresAt(fosite.AccessToken))
}

func (st storage) GetAccessTokenSession(ctx context.Context, sig string, _ fosite.Session) (fosite.Requester, error) {
	r, _, err := st.get(ctx, KindAccess, sig)
	if err != nil {
		return nil, err
	}
	return r, nil
}

// DeleteAccessTokenSession is only reached on paths that revoke the
// whole grant right after; the grant's revocation deletes the token.
func (storage) DeleteAccessTokenSession(context.Context, string) error { return nil }

func (st storage) CreateRefreshTokenSession(ctx context.Context, sig, _ string, r fosite.Requester) error {
	return st.put(ctx, KindRefresh, sig, r, r.GetSession().GetExpiresAt(fosite.RefreshToken))
}

// GetRefreshTokenSession returns fosite.ErrInactiveToken for a rotated
// refresh token; fosite then calls RevokeRefreshToken, which revokes the
// grant.
func (st storage) GetRefreshTokenSession(ctx context.Context, sig string, _ fosite.Session) (fosite.Requester, error) {
	r, t, err := st.get(ctx, KindRefresh, sig)
	if err != nil {
		return nil, err
	}
	if !t.UsedAt.IsZero() {
		return r, fosite.ErrInactiveToken
	}
	return r, nil
}

// DeleteRefreshTokenSession precedes RevokeRefreshToken (a replay); the
// grant's revocation deletes the token.
func (storage) DeleteRefreshTokenSession(context.Context, string) error { return nil }

// RotateRefreshToken uses the presented refresh token once and deletes
// the grant's earlier access tokens. Of two concurrent refreshes with one
// token, the loser is a replay and revokes the grant.
func (st storage) RotateRefreshToken(ctx context.Context, requestID, sig string) error {
	err := st.store().UseToken(ctx, hashSignature(sig), st.srv.now().UTC())
	if askbi.ErrorCode(err) == askbi.Conflict {
		st.srv.revokeGrant(ctx, requestID, "refresh_replay")
		return fosite.ErrInactiveToken
	}
	if err != nil {
		return err
	}
	return st.store().DeleteTokens(ctx, requestID, KindAccess)
}

// RevokeRefreshToken revokes the whole grant: fosite calls it on a code
// or refresh token replay and on the revocation endpoint.
func (st storage) RevokeRefreshToken(ctx context.Context, requestID string) error {
	reason := "revocation_endpoint"
	if r, ok := ctx.Value(revokeReasonKey).(string); ok {
		reason = r
	}
	st.srv.revokeGrant(ctx, requestID, reason)
	return nil
}

func (st storage) RevokeRefreshTokenMaybeGracePeriod(ctx context.Context, requestID, _ string) error {
	return st.RevokeRefreshToken(ctx, requestID)
}

func (st storage) RevokeAccessToken(ctx context.Context, requestID string) error {
	return st.store().DeleteTokens(ctx, requestID, KindAccess)
}

const revokeReasonKey ctxKey = 100
