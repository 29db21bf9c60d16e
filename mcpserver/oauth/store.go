package oauth

import (
	"context"
	"time"

	"github.com/askbi/askbi/access"
)

// Client is a registered OAuth client (RFC 7591). Its name is what the
// client said about itself: the consent page shows it as unverified.
type Client struct {
	ID string
	// SecretHash is the SHA-256 of a confidential client's secret; nil
	// for a public client. The secret has 256 bits of entropy, so one
	// SHA-256 is enough (no password stretching).
	SecretHash []byte
	// AuthMethod is the token endpoint auth method: "none",
	// "client_secret_post" or "client_secret_basic".
	AuthMethod   string
	Name         string
	RedirectURIs []string // exact; a loopback redirect's port may vary
	// Scopes the client may request (RFC 7591 "scope"); all four by
	// default.
	Scopes    []access.Scope
	CreatedAt time.Time
}

// Request is an authorization request waiting for the user's consent: the
// consent page's form refers to it by ID and proves it came from that
// page with the CSRF token whose hash is kept here.
type Request struct {
	ID       string
	ClientID string
	// UserID is the signed-in user the consent page was shown to; only
	// they may answer it.
	UserID   string
	CSRFHash []byte
	// Query is the validated authorization request (response_type,
	// client_id, redirect_uri, state, scope, resource, code_challenge,
	// code_challenge_method), URL-encoded. It holds no secret.
	Query     string
	ExpiresAt time.Time
}

// Grant is one consent: one client, one user, one team, the scopes and
// projects the user approved. Its ID is the CredentialID of every
// principal its tokens verify into. A grant is never widened: another
// consent for the same client, user and team replaces it.
type Grant struct {
	ID        string
	ClientID  string
	UserID    string
	TeamID    string
	Scopes    []access.Scope
	Projects  access.Projects
	CreatedAt time.Time
	RevokedAt time.Time // zero while active
}

// TokenKind is the kind of a stored token.
type TokenKind string

// Token kinds.
const (
	KindCode    TokenKind = "code"
	KindAccess  TokenKind = "access"
	KindRefresh TokenKind = "refresh"
)

// Token is an authorization code, access token or refresh token, stored
// by the SHA-256 of its signature: the store never sees a usable token.
type Token struct {
	Hash     []byte
	Kind     TokenKind
	GrantID  string
	ClientID string
	Scopes   []access.Scope
	Audience []string
	// RedirectURI, Challenge and ChallengeMethod are the authorization
	// request's, kept with a code for the token request's checks.
	RedirectURI     string
	Challenge       string
	ChallengeMethod string
	RequestedAt     time.Time
	ExpiresAt       time.Time
	// UsedAt is when a code was exchanged or a refresh token rotated;
	// zero while unused. Used tokens are kept until they expire, so a
	// replay is recognized and revokes the grant.
	UsedAt time.Time
}

// ClientStore keeps registered clients.
type ClientStore interface {
	// CreateClient stores c. It returns Conflict when c.ID exists.
	CreateClient(ctx context.Context, c Client) error
	// Client returns client id, or NotFound.
	Client(ctx context.Context, id string) (Client, error)
}

// RequestStore keeps authorization requests waiting for consent.
type RequestStore interface {
	// CreateRequest stores r. It returns Conflict when r.ID exists.
	CreateRequest(ctx context.Context, r Request) error
	// TakeRequest removes request id and returns it. It returns NotFound
	// for an unknown, already taken or expired (ExpiresAt not after now)
	// request. Two concurrent takes of one request: one gets it, the
	// other NotFound, also across processes sharing the store.
	TakeRequest(ctx context.Context, id string, now time.Time) (Request, error)
}

// GrantStore keeps grants.
type GrantStore interface {
	// CreateGrant stores g. It returns Conflict when g.ID exists.
	CreateGrant(ctx context.Context, g Grant) error
	// Grant returns grant id, revoked or not, or NotFound.
	Grant(ctx context.Context, id string) (Grant, error)
	// Grants returns userID's active grants in every team, newest first.
	Grants(ctx context.Context, userID string) ([]Grant, error)
	// RevokeGrant marks grant id revoked at t and deletes all its
	// tokens, in one step. It returns NotFound for an unknown id and
	// leaves an already revoked grant's time unchanged.
	RevokeGrant(ctx context.Context, id string, t time.Time) error
}

// TokenStore keeps token hashes.
type TokenStore interface {
	// CreateToken stores t. It returns Conflict when t.Hash exists.
	CreateToken(ctx context.Context, t Token) error
	// Token returns the token with hash, used or not, or NotFound.
	Token(ctx context.Context, hash []byte) (Token, error)
	// UseToken marks the token with hash used at t. It returns NotFound
	// for an unknown hash and Conflict when it was already used: of two
	// concurrent uses, also across processes, exactly one succeeds.
	UseToken(ctx context.Context, hash []byte, t time.Time) error
	// DeleteTokens deletes grantID's tokens of kind.
	DeleteTokens(ctx context.Context, grantID string, kind TokenKind) error
}

// Store is everything the authorization server keeps. Implementations
// must be safe for concurrent use; oauthtest.RunStore proves one.
type Store interface {
	ClientStore
	RequestStore
	GrantStore
	TokenStore
	// Purge is the retention step: it deletes the requests and tokens
	// that expired at or before now, then the grants that are revoked or
	// have no token left. It returns how many rows it deleted.
	Purge(ctx context.Context, now time.Time) (int, error)
}
