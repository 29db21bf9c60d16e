package connresolve

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/oauth2"

	"github.com/askbi/askbi"
	"github.com/askbi/askbi/access"
	"github.com/askbi/askbi/dataexec"
	"github.com/askbi/askbi/dataexec/mcpsource"
	"github.com/askbi/askbi/internal/mcpoauth"
	"github.com/askbi/askbi/internal/outbound"
	"github.com/askbi/askbi/seal"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Audit actions of OAuth sign-in. Details never hold a token, code,
// verifier or client secret.
const (
	ActionOAuthStart    = "connection.oauth_start"
	ActionOAuthComplete = "connection.oauth_complete"
	ActionSignInNeeded  = "connection.sign_in_needed"
)

// OAuthOptions configures the OAuth sign-in of connections with
// AuthOAuth. The zero value leaves OAuth off (StartOAuth answers
// Unsupported) until RedirectURL is set.
type OAuthOptions struct {
	// RedirectURL is the callback URL registered with authorization
	// servers: the host's route that calls CompleteOAuth (askhttp serves
	// one at <prefix>/connections/oauth/callback). Required.
	RedirectURL string
	// ClientName and ClientURI are what consent pages show. Default
	// "askbi" and none.
	ClientName string
	ClientURI  string
	// ClientMetadataURL is the host's client ID metadata document, an
	// https URL the host serves; used as client_id where the
	// authorization server supports such documents. Default none:
	// pre-registered clients, then dynamic registration.
	ClientMetadataURL string
	// Clients are clients registered by hand with authorization servers
	// that offer no registration, by issuer.
	Clients []OAuthClient
	// Flows keeps started sign-ins between start and callback. Default an
	// in-memory store (one process; restart loses started sign-ins).
	Flows FlowStore
	// FlowTTL bounds a sign-in from start to callback. Default 10
	// minutes.
	FlowTTL time.Duration
	// MaxResponseBytes caps each metadata, registration and token
	// response. Default 256 KiB.
	MaxResponseBytes int64
	// Timeout bounds each OAuth request. Default 20 s.
	Timeout time.Duration
}

// OAuthClient is a client registered by hand with an authorization
// server.
type OAuthClient struct {
	Issuer       string
	ClientID     string
	ClientSecret string
	// AuthMethod is none, client_secret_basic or client_secret_post.
	// Default: the first of basic, post, none the server offers.
	AuthMethod string
}

func (s *Service) oauthDefaults() {
	o := &s.o.OAuth
	if o.Flows == nil {
		o.Flows = NewMemoryFlowStore()
	}
	if o.FlowTTL <= 0 {
		o.FlowTTL = 10 * time.Minute
	}
	if o.MaxResponseBytes <= 0 {
		o.MaxResponseBytes = 256 << 10
	}
	if o.Timeout <= 0 {
		o.Timeout = 20 * time.Second
	}
	if o.ClientName == "" {
		o.ClientName = "askbi"
	}
}

// oauthClient is the outbound policy's client for OAuth requests.
func (s *Service) oauthClient() *mcpoauth.Client {
	return mcpoauth.NewClient(s.client.HTTPClient(s.o.OAuth.MaxResponseBytes, s.o.OAuth.Timeout))
}

// grant is what an OAuth connection's sealed box holds: the
// authorization server found at sign-in, askbi's client there, and the
// tokens (none after sign-in is needed again: the client is kept for the
// next sign-in at the same server).
type grant struct {
	Metadata mcpoauth.Metadata     `json:"metadata"`
	Client   mcpoauth.Registration `json:"client"`
	Access   string                `json:"access,omitempty"`
	Refresh  string                `json:"refresh,omitempty"`
	Expiry   time.Time             `json:"expiry,omitzero"`
	Scopes   []string              `json:"scopes,omitempty"`
}

func grantAD(teamID, id string) []byte { return seal.Context("askbi.mcp.oauth.grant.v1", teamID, id) }

func (s *Service) openGrant(st State) (grant, bool) {
	if st.Token.KeyID == "" || st.Auth != AuthOAuth {
		return grant{}, false
	}
	b, err := seal.Open(s.keys, st.Token, grantAD(st.TeamID, st.ID))
	if err != nil {
		return grant{}, false
	}
	var g grant
	if json.Unmarshal(b, &g) != nil {
		return grant{}, false
	}
	return g, true
}

func (s *Service) sealGrant(st *State, g grant) error {
	b, _ := json.Marshal(g)
	box, err := seal.Seal(s.keys, b, grantAD(st.TeamID, st.ID))
	if err != nil {
		return &askbi.Error{Code: askbi.Internal, Message: "the sign-in could not be sealed", Err: err}
	}
	st.Token = box
	st.HasToken = g.Access != ""
	return nil
}

// OAuthStart is a started sign-in.
type OAuthStart struct {
	// AuthorizationURL is where the user signs in (the browser goes
	// there).
	AuthorizationURL string `json:"authorization_url"`
	// FlowID names the sign-in; it is also the start of the state
	// parameter, so a host can find the browser's Binding for it.
	FlowID string `json:"-"`
	// Binding ties the callback to the browser that started the sign-in:
	// the host keeps it there (an HttpOnly cookie) and passes it to
	// CompleteOAuth, so a callback link sent to someone else cannot
	// complete another user's sign-in. Secret.
	Binding   string    `json:"-"`
	ExpiresAt time.Time `json:"expires_at"`
	// Reused is Connect's: the conversation's connection was used again
	// rather than a new one saved (also when the start failed, and when
	// nothing had to start).
	Reused bool `json:"-"`
}

// StartOAuth starts the sign-in of OAuth connection id, for a person
// (access.RightManageConnections): it asks the MCP server for its
// challenge, discovers its protected resource metadata and authorization
// server (RFC 9728, RFC 8414), registers askbi there (a client ID
// metadata document, a pre-registered client, or dynamic registration),
// and returns the authorization URL with S256 PKCE, the resource
// indicator, the scopes MCP's selection strategy picks (united with
// those granted and asked for by a step-up challenge), and a state that
// carries a sealed, expiring reference to the conversation, user and
// team. conversationID may be "".
//
// Nothing about the connection changes but its SignIn.Error, which
// records a failure: the saved connection stays to retry. Errors:
// InvalidArgument (not an OAuth connection), Unsupported (OAuth not
// configured), NotFound, Forbidden, and the discovery's: Unavailable (a
// server unreachable), InvalidResult (metadata for another resource,
// another issuer, no PKCE, no way to register), TooLarge.
func (s *Service) StartOAuth(ctx context.Context, p access.Principal, id, conversationID string) (_ OAuthStart, err error) {
	o, err := s.open(ctx, p, ActionOAuthStart, id, access.RightManageConnections, map[string]string{})
	defer o.end(&err)
	if err != nil {
		return OAuthStart{}, err
	}
	live, st := o.live, o.st
	details := o.details
	switch {
	case st.Auth != AuthOAuth:
		return OAuthStart{}, askbi.Errorf(askbi.InvalidArgument, "auth: this connection does not sign in with OAuth")
	case s.o.OAuth.RedirectURL == "":
		return OAuthStart{}, askbi.Errorf(askbi.Unsupported, "OAuth sign-in is not configured here")
	case len(conversationID) > 100:
		return OAuthStart{}, askbi.Errorf(askbi.InvalidArgument, "conversation_id: at most 100 characters")
	}
	start, method, err := s.start(ctx, live, st, conversationID)
	if method != "" {
		details["registration"] = method
	}
	if err != nil && ctx.Err() != nil {
		// Not the provider's failure: nothing to record.
		return OAuthStart{}, &askbi.Error{Code: askbi.Unavailable, Message: "the sign-in request was cancelled; nothing changed", Err: err}
	}
	if err != nil {
		s.recordSignInError(ctx, id, err)
		return OAuthStart{}, err
	}
	return start, nil
}

// flowSecret is a flow's sealed part.
type flowSecret struct {
	Metadata mcpoauth.Metadata     `json:"metadata"`
	Client   mcpoauth.Registration `json:"client"`
	Verifier string                `json:"verifier"`
	Scopes   []string              `json:"scopes,omitempty"`
	URL      string                `json:"url"` // the connection's URL at start
}

// stateClaims is what the state parameter carries, sealed.
type stateClaims struct {
	Flow         string `json:"f"`
	User         string `json:"u"`
	Team         string `json:"t"`
	Connection   string `json:"c"`
	Conversation string `json:"v,omitempty"`
	Expires      int64  `json:"e"`
}

// bindingClaims is what the browser binding carries, sealed.
type bindingClaims struct {
	Flow string `json:"f"`
	User string `json:"u"`
	Team string `json:"t"`
}

func stateAD(flow string) []byte   { return seal.Context("askbi.mcp.oauth.state.v1", flow) }
func bindingAD(flow string) []byte { return seal.Context("askbi.mcp.oauth.binding.v1", flow) }

// boxJSON is a seal.Box as text.
type boxJSON struct {
	K string `json:"k"`
	N []byte `json:"n"`
	C []byte `json:"c"`
}

func (s *Service) sealText(v any, ad []byte) (string, error) {
	b, _ := json.Marshal(v)
	box, err := seal.Seal(s.keys, b, ad)
	if err != nil {
		return "", &askbi.Error{Code: askbi.Internal, Message: "the sign-in could not be sealed", Err: err}
	}
	out, _ := json.Marshal(boxJSON{K: box.KeyID, N: box.Nonce, C: box.Ciphertext})
	return base64.RawURLEncoding.EncodeToString(out), nil
}

func (s *Service) openText(text string, ad []byte, v any) bool {
	raw, err := base64.RawURLEncoding.DecodeString(text)
	if err != nil || len(raw) > 4096 {
		return false
	}
	var bj boxJSON
	if json.Unmarshal(raw, &bj) != nil {
		return false
	}
	b, err := seal.Open(s.keys, seal.Box{KeyID: bj.K, Nonce: bj.N, Ciphertext: bj.C}, ad)
	return err == nil && json.Unmarshal(b, v) == nil
}

// FlowOfState returns the flow ID a state parameter names (its public
// prefix), or "" when it names none; for a host to find the browser's
// Binding before CompleteOAuth.
func FlowOfState(state string) string {
	id, _, ok := strings.Cut(state, ".")
	if !ok || !flowID.MatchString(id) {
		return ""
	}
	return id
}

var flowID = regexp.MustCompile(`^fl[a-z2-7]{20}$`)

func newFlowID() string { return "fl" + strings.ToLower(rand.Text()[:20]) }

func (s *Service) start(ctx context.Context, live access.Principal, st State, conversationID string) (OAuthStart, string, error) {
	oc := s.oauthClient()
	ch := s.challenge(ctx, st.URL)
	md, err := mcpoauth.Discover(ctx, oc, st.URL, ch)
	if err != nil {
		return OAuthStart{}, "", oauthFailure(err, st.Name)
	}
	// Earlier scopes and the client are kept only at the same
	// authorization server: credentials never cross issuers.
	var earlier []string
	var reg mcpoauth.Registration
	if g, ok := s.openGrant(st); ok && g.Client.Issuer == md.Issuer && g.Client.RedirectURI == s.o.OAuth.RedirectURL &&
		g.Client.Method != "preregistered" {
		reg = g.Client
		earlier = g.Scopes
	}
	if st.SignIn != nil && (st.SignIn.Issuer == "" || st.SignIn.Issuer == md.Issuer) {
		for _, sc := range st.SignIn.StepUp {
			if !slices.Contains(earlier, sc) {
				earlier = append(earlier, sc)
			}
		}
	}
	if reg.ClientID == "" {
		pre := make([]mcpoauth.Registration, len(s.o.OAuth.Clients))
		for i, c := range s.o.OAuth.Clients {
			pre[i] = mcpoauth.Registration{Issuer: c.Issuer, ClientID: c.ClientID, Secret: c.ClientSecret, AuthMethod: c.AuthMethod}
		}
		reg, err = mcpoauth.Register(ctx, oc, md, mcpoauth.RegisterOptions{RedirectURI: s.o.OAuth.RedirectURL,
			MetadataURL: s.o.OAuth.ClientMetadataURL, Preregistered: pre, ClientName: s.o.OAuth.ClientName, ClientURI: s.o.OAuth.ClientURI})
		if err != nil {
			return OAuthStart{}, "", oauthFailure(err, st.Name)
		}
		if reg.Method == "dynamic" {
			s.keepRegistration(ctx, st.ID, st.URL, md, reg)
		}
	}
	scopes := mcpoauth.Scopes(ch, md, earlier, true)
	now := s.o.Now().UTC()
	f := Flow{ID: newFlowID(), ConnectionID: st.ID, TeamID: live.TeamID, UserID: live.UserID, ConversationID: conversationID,
		CreatedAt: now, ExpiresAt: now.Add(s.o.OAuth.FlowTTL)}
	verifier := mcpoauth.NewVerifier()
	secret, _ := json.Marshal(flowSecret{Metadata: *md, Client: reg, Verifier: verifier, Scopes: scopes, URL: st.URL})
	box, err := seal.Seal(s.keys, secret, flowAD(f.ID, st.ID))
	if err != nil {
		return OAuthStart{}, "", &askbi.Error{Code: askbi.Internal, Message: "the sign-in could not be sealed", Err: err}
	}
	f.Secret = box
	sealed, err := s.sealText(stateClaims{Flow: f.ID, User: live.UserID, Team: live.TeamID, Connection: st.ID,
		Conversation: conversationID, Expires: f.ExpiresAt.Unix()}, stateAD(f.ID))
	if err != nil {
		return OAuthStart{}, "", err
	}
	binding, err := s.sealText(bindingClaims{Flow: f.ID, User: live.UserID, Team: live.TeamID}, bindingAD(f.ID))
	if err != nil {
		return OAuthStart{}, "", err
	}
	if err := s.o.OAuth.Flows.CreateFlow(ctx, f); err != nil {
		return OAuthStart{}, "", err
	}
	return OAuthStart{AuthorizationURL: mcpoauth.AuthURL(md, reg, scopes, f.ID+"."+sealed, verifier), FlowID: f.ID,
		Binding: binding, ExpiresAt: f.ExpiresAt}, reg.Method, nil
}

// keepRegistration keeps a dynamically registered client on a connection
// that has no tokens yet, so the next start at the same server (another
// click, a retry) registers nothing new. A signed-in connection keeps its
// grant as it is.
func (s *Service) keepRegistration(ctx context.Context, id, url string, md *mcpoauth.Metadata, reg mcpoauth.Registration) {
	s.updateQuietly(ctx, id, "keep the client registration", func(st *State) error {
		if st.Auth != AuthOAuth || st.HasToken || st.URL != url {
			return errNotOAuth
		}
		return s.sealGrant(st, grant{Metadata: *md, Client: reg})
	})
}

func flowAD(flow, conn string) []byte { return seal.Context("askbi.mcp.oauth.flow.v1", flow, conn) }

// challenge asks the MCP server, without credentials, what it wants: the
// WWW-Authenticate of its first 401 or 403 over a short MCP session (a
// server may let the handshake pass and challenge the tool list). A
// server that challenges nothing gives an empty challenge.
func (s *Service) challenge(ctx context.Context, url string) mcpoauth.Challenge {
	ctx, cancel := context.WithTimeout(ctx, s.o.OAuth.Timeout)
	defer cancel()
	o := &oauthSession{probeOnly: true}
	if se, err := s.client.Open(ctx, url, mcpsource.Credential{OAuth: o}, 1<<20); err == nil {
		se.ListTools(ctx, 1, 1<<20, func([]*mcp.Tool) {})
		se.Close()
	}
	if o.probe != nil {
		if h := o.probe.Challenge(); h != nil {
			return mcpoauth.ParseChallenge(h)
		}
	}
	return mcpoauth.Challenge{}
}

// OAuthCallback is what the authorization server's redirect brought back,
// with the browser's Binding.
type OAuthCallback struct {
	State   string
	Code    string
	Iss     string
	Error   string // the error parameter (access_denied, ...); its description is never read
	Binding string
	// Caller, when the host authenticated the callback request itself
	// (a session cookie), must be the user and team that started.
	Caller *access.Principal
}

// OAuthResult says where a callback leads: the connection, its team and
// the conversation the sign-in started from, as far as a valid state
// named them (all empty for a forged one).
type OAuthResult struct {
	ConnectionID   string     `json:"connection_id,omitempty"`
	TeamID         string     `json:"team_id,omitempty"`
	ConversationID string     `json:"conversation_id,omitempty"`
	Connection     Connection `json:"connection"`
	// Retry is set on a failure that may pass by itself (the request
	// cancelled, a store down, the token endpoint down or busy) and used
	// nothing up: the same callback can complete the sign-in later, so a
	// host keeps the browser's Binding.
	Retry bool `json:"retry,omitempty"`
}

// CompleteOAuth finishes a sign-in from its callback: it opens the state
// (sealed: a forged one is refused) and checks that the browser's
// Binding (and Caller, when given) is the user and team that started,
// that the state has not expired, and that the user may still manage
// the connection; it refuses an error from the provider and a missing
// code; then it takes the flow (single use: a replay is refused),
// refuses a wrong or missing iss (RFC 9207, compared byte for byte),
// trades the code for tokens (PKCE verifier, resource indicator),
// refuses a token for another resource, lists the server's tools with
// the new token, and only then saves the sealed tokens and activates the
// connection. Any failure leaves the connection as it was (inactive for
// a first sign-in) with the failure in SignIn.Error. A failure that may
// pass (the request cancelled, a store down, the token endpoint
// unreachable or busy) uses nothing up and sets OAuthResult.Retry: the
// same callback can be tried again. From the exchange on, the request's
// cancellation no longer stops the sign-in. It is audited as
// ActionOAuthComplete.
//
// Errors: InvalidArgument (a forged state, no code), Timeout (an expired
// state), Conflict (a used state; the connection's URL changed since the
// start), Forbidden (another browser, user or team; the provider refused
// or denied; the user may no longer manage connections), InvalidResult
// (another issuer, a token for another resource or not a bearer token),
// TooLarge, Unavailable (also a cancelled request), NotFound (the
// connection is gone), and discovery's.
func (s *Service) CompleteOAuth(ctx context.Context, cb OAuthCallback) (res OAuthResult, err error) {
	c := &completion{s: s, cb: cb, flow: FlowOfState(cb.State), details: map[string]string{}}
	target := access.Entity{Type: access.TypeConnection}
	began := s.audit.Now()
	defer func() {
		if !c.quiet {
			s.audit.Record(ctx, c.who, ActionOAuthComplete, target, began, err, c.details)
		}
	}()

	if !c.openState() {
		c.quiet = true
		return res, askbi.Errorf(askbi.InvalidArgument, "the sign-in answer is not valid (its state is not one askbi issued); start the sign-in again from the connection")
	}
	target = access.Entity{Type: access.TypeConnection, ID: c.claims.Connection, TeamID: c.claims.Team}
	res = OAuthResult{ConnectionID: c.claims.Connection, TeamID: c.claims.Team, ConversationID: c.claims.Conversation}
	if f := c.checkCallback(ctx); f != nil {
		return c.end(ctx, res, f)
	}
	st, f := c.checkStarter(ctx)
	if f != nil {
		return c.end(ctx, res, f)
	}
	fl, sec, f := c.takeFlow(ctx, st)
	if f != nil {
		return c.end(ctx, res, f)
	}
	// From the exchange on, the sign-in outlives the request: a browser
	// that goes away must not waste a code the provider may have spent.
	// The bound: the exchange's, the discovery's, and the first again
	// for the save.
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*s.o.OAuth.Timeout+s.o.DiscoveryTimeout)
	defer cancel()
	tok, f := c.exchange(ctx, st, fl, sec)
	if f != nil {
		return c.end(ctx, res, f)
	}
	out, f := c.save(ctx, st, sec, tok)
	if f != nil {
		return c.end(ctx, res, f)
	}
	c.details["registration"] = sec.Client.Method
	c.details["tools"] = strconv.Itoa(out.Discovery.Tools)
	s.publish(ctx, out.Connection)
	s.notify(ctx, out.TeamID)
	res.Connection = out.Connection
	return res, nil
}

// completion is one callback on its way through CompleteOAuth's steps.
type completion struct {
	s       *Service
	cb      OAuthCallback
	flow    string
	claims  stateClaims
	who     access.Principal  // the starter, once the state is open; live once loaded
	details map[string]string // the audit entry's
	quiet   bool              // not audited
}

// ending is how a failed step ends a callback.
type ending int

const (
	// endQuiet is what anyone can send (an expired state in another
	// browser): not audited, so it cannot fill the audit log.
	endQuiet ending = iota
	// endRefuse is a real state in other hands: audited, nothing recorded
	// on the connection, and the result names neither the conversation
	// nor the team.
	endRefuse
	// endReplay is a state already used: audited, nothing recorded (a
	// reload after its first request completed the sign-in must not mark
	// a signed-in connection as failed).
	endReplay
	// endFail records the failure on the connection.
	endFail
	// endRetry is a failure that may pass: recorded, the flow stays (or
	// went back) for the same callback, and OAuthResult.Retry is set.
	endRetry
	// endFinal ends the sign-in: recorded, and the flow is taken so that
	// its state cannot be used again.
	endFinal
)

// failure is a failed step: how it ends, the audit reason, the error.
type failure struct {
	end    ending
	reason string
	err    error
}

// end finishes a callback that failure f stopped.
func (c *completion) end(ctx context.Context, res OAuthResult, f *failure) (OAuthResult, error) {
	switch f.end {
	case endQuiet:
		c.quiet = true
		return res, f.err
	case endRefuse:
		c.details["reason"] = f.reason
		return OAuthResult{ConnectionID: c.claims.Connection}, f.err
	case endReplay:
		c.details["reason"] = f.reason
		return res, f.err
	case endRetry:
		res.Retry = true
	case endFinal:
		c.s.o.OAuth.Flows.TakeFlow(context.WithoutCancel(ctx), c.flow) // a flow left behind expires
	}
	c.details["reason"] = f.reason
	c.s.recordSignInError(ctx, c.claims.Connection, f.err)
	return res, f.err
}

// openState opens the sealed state: false for a forged one.
func (c *completion) openState() bool {
	st := c.cb.State
	if c.flow == "" || len(st) > 4096 || !c.s.openText(st[len(c.flow)+1:], stateAD(c.flow), &c.claims) || c.claims.Flow != c.flow {
		return false
	}
	c.who = access.Principal{UserID: c.claims.User, TeamID: c.claims.Team, Auth: access.AuthSession}
	return true
}

// checkCallback checks that the callback is the starter's (browser
// binding, caller) and in time, and that the request still stands.
// Everything that can fail by itself passing (the request, the gate, the
// store) is checked before the flow is taken; a failure of the binding
// is someone else's and leaves the flow alone.
func (c *completion) checkCallback(ctx context.Context) *failure {
	var b bindingClaims
	bound := c.cb.Binding != "" && c.s.openText(c.cb.Binding, bindingAD(c.flow), &b) && b.Flow == c.flow
	expired := c.s.o.Now().Unix() > c.claims.Expires
	errExpired := askbi.Errorf(askbi.Timeout, "the sign-in took longer than %s and expired; start it again", c.s.o.OAuth.FlowTTL)
	errOtherUser := askbi.Errorf(askbi.Forbidden, "this sign-in was started by another user or in another team; start it again yourself")
	switch {
	case expired && !bound:
		return &failure{endQuiet, "", errExpired}
	case c.cb.Caller != nil && (c.cb.Caller.UserID != c.claims.User || c.cb.Caller.TeamID != c.claims.Team):
		return &failure{endRefuse, "other_user", errOtherUser}
	case !bound:
		return &failure{endRefuse, "other_browser", askbi.Errorf(askbi.Forbidden, "this sign-in was started in another browser or session; start it again here")}
	case b.User != c.claims.User || b.Team != c.claims.Team:
		return &failure{endRefuse, "other_user", errOtherUser}
	case expired:
		return &failure{endFinal, "expired", errExpired}
	case ctx.Err() != nil:
		return &failure{endRetry, "cancelled", &askbi.Error{Code: askbi.Unavailable, Message: "the sign-in request was cancelled; nothing was connected", Err: ctx.Err()}}
	}
	return nil
}

// checkStarter checks that the person who started is still there and
// allowed, and that the provider granted a code of a sane size. It
// returns the connection.
func (c *completion) checkStarter(ctx context.Context) (State, *failure) {
	live, st, err := c.s.load(ctx, c.who, c.claims.Connection, access.RightManageConnections)
	if passing(err) {
		return State{}, &failure{endRetry, "access", err}
	}
	if err != nil {
		return State{}, &failure{endFinal, "access", err}
	}
	c.who = live
	switch {
	case c.cb.Error != "":
		c.details["provider_error"] = knownError(c.cb.Error)
		return st, &failure{endFinal, "denied", askbi.Errorf(askbi.Forbidden, "%s did not grant access (%s); nothing was connected. Start the sign-in again to retry", st.Name, knownError(c.cb.Error))}
	case c.cb.Code == "":
		return st, &failure{endFinal, "no_code", askbi.Errorf(askbi.InvalidArgument, "the sign-in answer has no authorization code; start the sign-in again")}
	case len(c.cb.Code) > 4096 || len(c.cb.Iss) > 2048:
		return st, &failure{endFinal, "too_large", askbi.Errorf(askbi.TooLarge, "the sign-in answer is too large")}
	}
	return st, nil
}

// takeFlow takes the flow right before the code is spent, so that of two
// callbacks with the same state (a replay, a double click) one goes on,
// and opens its secret: it must match the state and the connection as it
// is, and the callback's iss its issuer (RFC 9207, byte for byte).
func (c *completion) takeFlow(ctx context.Context, st State) (Flow, flowSecret, *failure) {
	f, err := c.s.o.OAuth.Flows.TakeFlow(ctx, c.flow)
	if askbi.ErrorCode(err) == askbi.NotFound {
		return f, flowSecret{}, &failure{endReplay, "replayed", askbi.Errorf(askbi.Conflict, "this sign-in answer was already used (or cancelled); open the connection to see whether it is signed in, and start the sign-in again if not")}
	}
	if err != nil {
		return f, flowSecret{}, &failure{endRetry, "store", err}
	}
	if f.ConnectionID != c.claims.Connection || f.UserID != c.claims.User || f.TeamID != c.claims.Team {
		return f, flowSecret{}, &failure{endFail, "state_invalid", askbi.Errorf(askbi.InvalidArgument, "the sign-in answer does not match its sign-in; start it again")}
	}
	var sec flowSecret
	if plain, err := seal.Open(c.s.keys, f.Secret, flowAD(f.ID, f.ConnectionID)); err != nil || json.Unmarshal(plain, &sec) != nil {
		return f, sec, &failure{endFail, "state_invalid", &askbi.Error{Code: askbi.Internal, Message: "the sign-in's record cannot be read; start it again", Err: err}}
	}
	if st.URL != sec.URL || st.Auth != AuthOAuth {
		return f, sec, &failure{endFail, "changed", askbi.Errorf(askbi.Conflict, "the connection changed since its sign-in started; start it again")}
	}
	if err := mcpoauth.CheckIss(&sec.Metadata, c.cb.Iss); err != nil {
		return f, sec, &failure{endFail, string(mcpoauth.ReasonOf(err)), oauthFailure(err, st.Name)}
	}
	return f, sec, nil
}

// exchange trades the code for tokens (PKCE verifier, resource
// indicator). Without a definite answer (no connection, a timeout, a 5xx,
// 429 or 408, an error page that is not OAuth's, the outbound policy
// refusing to send) the flow goes back for a retry of the same callback.
// Where the code never reached the provider, the retry spends it. Where it
// may have (a 5xx, an answer lost on the way), the retry gets
// invalid_grant, a definite answer that ends the sign-in; the provider may
// revoke what it issued for the code (RFC 6749 4.1.2), and askbi kept
// nothing of that.
func (c *completion) exchange(ctx context.Context, st State, fl Flow, sec flowSecret) (mcpoauth.Token, *failure) {
	tok, err := mcpoauth.Exchange(ctx, c.s.oauthClient(), &sec.Metadata, sec.Client, c.cb.Code, sec.Verifier)
	if err == nil {
		return tok, nil
	}
	end := endFail
	if r := mcpoauth.ReasonOf(err); r == mcpoauth.ReasonUnreachable || r == mcpoauth.ReasonRefused {
		if perr := c.s.o.OAuth.Flows.CreateFlow(ctx, fl); perr != nil {
			c.s.o.Logger.Error("mcpsource: put a sign-in back for a retry", "connection", st.ID, "err", perr)
		} else {
			end = endRetry
		}
	}
	return tok, &failure{end, string(mcpoauth.ReasonOf(err)), oauthFailure(err, st.Name)}
}

// save lists the server's tools with the new token, which must work
// before anything is saved, then saves the sealed tokens and activates
// the connection, unless it changed meanwhile.
func (c *completion) save(ctx context.Context, st State, sec flowSecret, tok mcpoauth.Token) (State, *failure) {
	s := c.s
	l, err := s.discoverWith(ctx, st, st.ToolFocus, mcpsource.Credential{OAuth: &oauthSession{s: s, st: st, access: tok.Access, fresh: true}})
	usable := 0
	if err == nil {
		usable, err = usableOf(l)
	}
	if err != nil {
		return State{}, &failure{endFail, "discovery", err}
	}
	now := s.o.Now().UTC()
	granted := sec.Scopes
	if tok.Scopes != nil {
		granted = tok.Scopes
	}
	g := grant{Metadata: sec.Metadata, Client: sec.Client, Access: tok.Access, Refresh: tok.Refresh, Expiry: s.expiry(tok), Scopes: granted}
	out, err := s.store.Update(ctx, st.ID, func(cur *State) error {
		if cur.URL != sec.URL || cur.Auth != AuthOAuth {
			return askbi.Errorf(askbi.Conflict, "the connection changed while its sign-in completed; start it again")
		}
		if err := s.sealGrant(cur, g); err != nil {
			return err
		}
		stepUp := cur.SignIn.stepUpLeft(granted)
		cur.SignIn = &SignIn{State: SignedIn, Issuer: sec.Metadata.Issuer, Scopes: granted, At: now, StepUp: stepUp}
		s.applyDiscovery(cur, l, usable, now)
		return nil
	})
	if err != nil {
		return State{}, &failure{endFail, "save", err}
	}
	return out, nil
}

// stepUpLeft is the step-up scopes a new grant still lacks.
func (si *SignIn) stepUpLeft(granted []string) []string {
	if si == nil {
		return nil
	}
	var out []string
	for _, sc := range si.StepUp {
		if !slices.Contains(granted, sc) {
			out = append(out, sc)
		}
	}
	return out
}

// passing reports whether a failure may pass by itself: a store or
// server down or busy, a rate limit, a cancelled request.
func passing(err error) bool {
	switch askbi.ErrorCode(err) {
	case askbi.Unavailable, askbi.RateLimited, askbi.Timeout, askbi.Internal:
		return true
	}
	return err != nil && (errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded))
}

// knownError is an RFC 6749 authorization error code, or "error": the
// provider's own text is never shown.
func knownError(code string) string {
	switch code {
	case "access_denied", "invalid_request", "unauthorized_client", "unsupported_response_type", "invalid_scope",
		"server_error", "temporarily_unavailable", "invalid_target", "login_required", "consent_required", "interaction_required":
		return code
	}
	return "error"
}

// oauthFailure is the safe error of a failed OAuth step.
func oauthFailure(err error, name string) error {
	var ae *askbi.Error
	if errors.As(err, &ae) {
		return err
	}
	m, ok := oauthFailures[mcpoauth.ReasonOf(err)]
	if !ok {
		m = oauthMessage{askbi.Unavailable, "the sign-in with %s failed; try again"}
	}
	return &askbi.Error{Code: m.code, Message: fmt.Sprintf(m.text, name), Err: err}
}

// oauthMessage is the code and the message (with %s for the connection's
// name) a user sees for one reason an OAuth step failed.
type oauthMessage struct {
	code askbi.Code
	text string
}

// oauthFailures maps each mcpoauth.Reason to what the user sees.
var oauthFailures = map[mcpoauth.Reason]oauthMessage{
	mcpoauth.ReasonUnreachable:      {askbi.Unavailable, "the sign-in server of %s could not be reached or is busy; try again later"},
	mcpoauth.ReasonTooLarge:         {askbi.TooLarge, "the sign-in server of %s sent an answer larger than askbi accepts; nothing was connected"},
	mcpoauth.ReasonRefused:          {askbi.Forbidden, "the sign-in server of %s is at an address askbi may not call (link-local, cloud metadata, private, or too many redirects)"},
	mcpoauth.ReasonResourceMismatch: {askbi.InvalidResult, "%s's sign-in metadata is for another server than this connection's URL, so askbi will not sign in there"},
	mcpoauth.ReasonIssuerMismatch:   {askbi.InvalidResult, "%s's authorization server describes itself as another issuer, so askbi will not sign in there"},
	mcpoauth.ReasonNoPKCE:           {askbi.InvalidResult, "%s's authorization server does not offer S256 PKCE, which askbi requires"},
	mcpoauth.ReasonInvalidMetadata:  {askbi.InvalidResult, "%s's sign-in metadata could not be used; check the connection's URL"},
	mcpoauth.ReasonNoRegistration:   {askbi.Unsupported, "%s's authorization server offers no client registration, and no client is registered for it here"},
	mcpoauth.ReasonRegistration:     {askbi.Unavailable, "%s's authorization server could not register askbi right now; try again later"},
	mcpoauth.ReasonRegistrationNo:   {askbi.Unsupported, "%s's authorization server refused to register askbi; check the connection's URL, or register a client with the provider for askbi to use"},
	mcpoauth.ReasonIssMissing:       {askbi.InvalidResult, "the sign-in answer did not come from %s's authorization server (its iss does not match), so it was refused"},
	mcpoauth.ReasonIssMismatch:      {askbi.InvalidResult, "the sign-in answer did not come from %s's authorization server (its iss does not match), so it was refused"},
	mcpoauth.ReasonGrantRejected:    {askbi.Forbidden, "%s did not accept the sign-in code (expired, used, or for another sign-in); start the sign-in again"},
	mcpoauth.ReasonClientRefused:    {askbi.Forbidden, "%s's authorization server refused askbi's client; start the sign-in again"},
	mcpoauth.ReasonTokenResource:    {askbi.InvalidResult, "%s issued a token for another resource, so it was refused"},
	mcpoauth.ReasonTokenError:       {askbi.Forbidden, "%s's authorization server refused the sign-in; start it again"},
	mcpoauth.ReasonTokenInvalid:     {askbi.InvalidResult, "%s's authorization server answered with a token askbi cannot use"},
}

// recordSignInError keeps a failure on the connection (if it exists) for
// the connection page; nothing else changes.
func (s *Service) recordSignInError(ctx context.Context, id string, cause error) {
	if id == "" {
		return
	}
	at := s.o.Now().UTC()
	s.updateQuietly(ctx, id, "record sign-in failure", func(st *State) error {
		if st.Auth != AuthOAuth {
			return errNotOAuth
		}
		si := cloneSignIn(st.SignIn)
		if si == nil {
			si = &SignIn{State: SignInNeeded}
		}
		si.Error = errorInfo(cause, at)
		st.SignIn = si
		return nil
	})
}

var (
	errNotOAuth   = errors.New("not an OAuth connection")
	errNewerGrant = errors.New("the connection holds a newer grant")
)

// errSignInFirst is the failure of an OAuth connection without tokens.
func errSignInFirst(name string) error {
	return dataexec.Fail(dataexec.FailSignIn, askbi.Forbidden, nil, "%s needs sign-in: open the connection and sign in", name)
}

// oauthSession is the go-sdk OAuthHandler of one session of an OAuth
// connection: it gives the transport the current access token, and on a
// 401 refreshes it once (under the connection's lock, keeping a rotated
// refresh token); a failed refresh marks the connection as needing
// sign-in. A 403 insufficient_scope records the challenged scopes for the
// next sign-in (never granted silently) and fails with sign-in needed.
type oauthSession struct {
	s      *Service
	st     State
	access string
	// fresh marks a token not yet saved (CompleteOAuth's check): no
	// refresh, and a refusal changes nothing stored.
	fresh bool
	// probeOnly sends no token at all (StartOAuth's challenge).
	probeOnly bool

	probe   *mcpsource.Probe
	mu      sync.Mutex
	tried   bool
	failure error
}

// TokenSource implements auth.OAuthHandler.
func (o *oauthSession) TokenSource(context.Context) (oauth2.TokenSource, error) {
	if o.probeOnly {
		return nil, nil
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	return oauth2.StaticTokenSource(&oauth2.Token{AccessToken: o.access, TokenType: "Bearer"}), nil
}

// Authorize implements auth.OAuthHandler.
func (o *oauthSession) Authorize(ctx context.Context, _ *http.Request, resp *http.Response) error {
	resp.Body.Close()
	if o.probeOnly {
		return errors.New("probe: challenged") // the transport's probe kept the challenge
	}
	ch := mcpoauth.ParseChallenge(resp.Header)
	o.mu.Lock()
	defer o.mu.Unlock()
	if resp.StatusCode == http.StatusForbidden {
		if ch.Error != "insufficient_scope" {
			return errors.New("forbidden")
		}
		o.s.recordStepUp(ctx, o.st.ID, ch.Scopes)
		// The scopes are the remote server's text: kept for the next
		// sign-in, never quoted in a message the model reads.
		o.failure = dataexec.Fail(dataexec.FailSignIn, askbi.Forbidden, nil,
			"%s asks for more permissions for this request: open the connection and sign in again to grant them", o.st.Name)
		return o.failure
	}
	if o.tried || o.fresh {
		return errors.New("unauthorized after refresh")
	}
	o.tried = true
	tok, err := o.s.refresh(ctx, o.st, o.access)
	if err != nil {
		o.failure = err
		return err
	}
	o.access = tok
	if o.probe != nil {
		o.probe.Reset()
	}
	return nil
}

// Watch implements mcpsource.OAuth.
func (o *oauthSession) Watch(p *mcpsource.Probe) { o.probe = p }

// Failure implements mcpsource.OAuth.
func (o *oauthSession) Failure() error {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.failure
}

// Rejected implements mcpsource.OAuth: the failure of a token the server
// refused for good (a 401 after a refresh, or with nothing to refresh):
// the connection needs sign-in again.
func (o *oauthSession) Rejected(ctx context.Context) error {
	err := dataexec.Fail(dataexec.FailSignIn, askbi.Forbidden, nil, "%s refused the connection's sign-in; open the connection and sign in again", o.st.Name)
	if o.probeOnly {
		return err
	}
	if !o.fresh {
		o.mu.Lock()
		failed := o.access
		o.mu.Unlock()
		o.s.markSignInNeeded(ctx, o.st.ID, failed, err)
	}
	return err
}

// oauthSession returns the session handler of OAuth connection st, its
// token refreshed first when it has expired.
func (s *Service) oauthSession(ctx context.Context, st State) (*oauthSession, error) {
	g, ok := s.openGrant(st)
	if !ok || !st.HasToken || g.Access == "" {
		return nil, errSignInFirst(st.Name)
	}
	access := g.Access
	if !g.Expiry.IsZero() && !s.o.Now().Add(30*time.Second).Before(g.Expiry) {
		var err error
		if access, err = s.refresh(ctx, st, g.Access); err != nil {
			return nil, err
		}
	}
	return &oauthSession{s: s, st: st, access: access}, nil
}

// refresh renews the access token of connection st, whose token stale
// stopped working or expired, under the connection's lock: when another
// call renewed it meanwhile, that token is used; otherwise the refresh
// token is spent and the rotated one kept. A refused refresh
// (invalid_grant, invalid_client, a token for another resource) or none
// to use marks the connection as needing sign-in; any other failure (a
// server that cannot be reached or is busy) leaves it as it is.
//
// The refresh and the save of the rotated refresh token outlive the
// caller (a cancelled chat turn): once the provider rotated, the old
// refresh token is spent, and a save rolled back by the cancellation
// would have the next refresh replay it, which revokes the grant for the
// whole team. They are bounded by their own timeout instead: the token
// request's, and as long again for the connection's lock and the save.
func (s *Service) refresh(ctx context.Context, st State, stale string) (string, error) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*s.o.OAuth.Timeout)
	defer cancel()
	var out, seen string
	var reason error
	_, err := s.store.Update(ctx, st.ID, func(cur *State) error {
		g, ok := s.openGrant(*cur)
		seen = g.Access
		if !ok || !cur.HasToken || g.Access == "" {
			reason = errSignInFirst(cur.Name)
			return reason
		}
		if g.Access != stale && (g.Expiry.IsZero() || s.o.Now().Add(30*time.Second).Before(g.Expiry)) {
			out = g.Access
			return nil
		}
		if g.Refresh == "" {
			reason = dataexec.Fail(dataexec.FailSignIn, askbi.Forbidden, nil, "%s's sign-in expired and cannot be renewed; open the connection and sign in again", cur.Name)
			return reason
		}
		tok, err := mcpoauth.Refresh(ctx, s.oauthClient(), &g.Metadata, g.Client, g.Refresh)
		if err != nil {
			reason = err
			return err
		}
		g.Access, g.Refresh, g.Expiry = tok.Access, tok.Refresh, s.expiry(tok)
		if tok.Scopes != nil {
			g.Scopes = tok.Scopes
		}
		out = tok.Access
		return s.sealGrant(cur, g)
	})
	if err == nil {
		return out, nil
	}
	if reason == nil {
		return "", err
	}
	switch mcpoauth.ReasonOf(reason) {
	case "":
		// errSignInFirst or no refresh token.
	case mcpoauth.ReasonGrantRejected, mcpoauth.ReasonClientRefused, mcpoauth.ReasonTokenResource:
		// The authorization server said no for good: the refresh token
		// or the client is no longer valid, or it issued a token for
		// another resource.
		reason = dataexec.Fail(dataexec.FailSignIn, askbi.Forbidden, reason, "%s did not renew the connection's sign-in; open the connection and sign in again", st.Name)
	default:
		// Anything else may pass (a server down or busy, an answer askbi
		// cannot use, the outbound policy refusing it now): the tokens
		// stay for the next try.
		return "", dataexec.Fail(dataexec.FailTimeout, askbi.Unavailable, reason, "%s's sign-in could not be renewed right now; try again", st.Name)
	}
	s.markSignInNeeded(ctx, st.ID, seen, reason)
	return "", reason
}

// expiry is when tok stops working, on the service's clock (zero:
// unknown).
func (s *Service) expiry(tok mcpoauth.Token) time.Time {
	if tok.ExpiresIn <= 0 {
		return time.Time{}
	}
	return s.o.Now().UTC().Add(tok.ExpiresIn)
}

// markSignInNeeded drops a connection's tokens (keeping its client for
// the next sign-in at the same server) and turns it inactive until a
// sign-in completes. The approvals stay. failed is the access token that
// stopped working ("" for none): when the connection holds another one
// by now (a sign-in or refresh completed meanwhile), it is left alone.
func (s *Service) markSignInNeeded(ctx context.Context, id, failed string, cause error) {
	at := s.o.Now().UTC()
	var team string
	st, ok := s.updateQuietly(ctx, id, "mark sign-in needed", func(st *State) error {
		if st.Auth != AuthOAuth {
			return errNotOAuth
		}
		team = st.TeamID
		g, ok := s.openGrant(*st)
		if g.Access != failed {
			return errNewerGrant
		}
		if ok {
			g.Access, g.Refresh, g.Expiry = "", "", time.Time{}
			if err := s.sealGrant(st, g); err != nil {
				return err
			}
		}
		st.HasToken, st.Active = false, false
		si := cloneSignIn(st.SignIn)
		if si == nil {
			si = &SignIn{}
		}
		si.State = SignInNeeded
		si.Error = errorInfo(cause, at)
		st.SignIn = si
		st.Version++
		st.UpdatedAt = at
		return nil
	})
	if !ok {
		return
	}
	s.audit.Record(ctx, access.Principal{TeamID: team}, ActionSignInNeeded, ref(st.Connection), at, cause, nil)
	s.publish(ctx, st.Connection)
	s.notify(ctx, team)
}

// recordStepUp keeps scopes a server challenged for, for the next sign-in.
func (s *Service) recordStepUp(ctx context.Context, id string, scopes []string) {
	if len(scopes) == 0 {
		return
	}
	s.updateQuietly(ctx, id, "record step-up", func(st *State) error {
		if st.Auth != AuthOAuth {
			return errNotOAuth
		}
		si := cloneSignIn(st.SignIn)
		if si == nil {
			si = &SignIn{State: SignInNeeded}
		}
		for _, sc := range scopes {
			if len(si.StepUp) < 50 && len(sc) <= 200 && !slices.Contains(si.StepUp, sc) {
				si.StepUp = append(si.StepUp, sc)
			}
		}
		st.SignIn = si
		return nil
	})
}

// Connect saves a new OAuth connection and starts its sign-in, in one
// action ("Save and connect"). in.Auth must be OAuth or empty. When
// conversationID is set and that conversation already set up a connection
// to the same provider and URL, that one is used again (repeated clicks
// create nothing new; OAuthStart.Reused), and when it is already signed
// in and active nothing starts (no AuthorizationURL). Otherwise a
// verified provider's connection to the same URL that was never signed
// in is used again, from any conversation. A name the team uses gets a
// number ("PostHog 2").
//
// A failed save returns its error and starts nothing (the Connection is
// zero). When only the start fails, the saved Connection is returned with
// the start's error: StartOAuth retries it. Errors: Create's and
// StartOAuth's.
func (s *Service) Connect(ctx context.Context, p access.Principal, in Input, conversationID string) (Connection, OAuthStart, error) {
	if in.Auth != "" && in.Auth != AuthOAuth {
		return Connection{}, OAuthStart{}, askbi.Errorf(askbi.InvalidArgument, "auth: save and connect signs in with OAuth")
	}
	if len(conversationID) > 100 {
		return Connection{}, OAuthStart{}, askbi.Errorf(askbi.InvalidArgument, "conversation_id: at most 100 characters")
	}
	in.Auth = AuthOAuth
	live, err := s.begin(ctx, p, access.RightManageConnections, access.Team(p.TeamID))
	if err != nil {
		return Connection{}, OAuthStart{}, err
	}
	u, err := outbound.CheckURL(strings.TrimSpace(in.URL), s.outboundOptions())
	if err != nil {
		return Connection{}, OAuthStart{}, err
	}
	var conn Connection
	provider := strings.TrimSpace(in.Provider)
	if conversationID != "" || provider != "" {
		sts, err := s.store.List(ctx, live.TeamID)
		if err != nil {
			return Connection{}, OAuthStart{}, err
		}
		same := func(st State) bool { return st.Provider == provider && st.URL == u.String() && st.Auth == AuthOAuth }
		for _, st := range sts {
			if conversationID != "" && st.SetupConversation == conversationID && same(st) {
				conn = st.Connection
				break
			}
		}
		// A verified provider's connection that was never signed in (a
		// start that failed, a sign-in abandoned) is used again from any
		// conversation, so clicks do not pile up connections.
		for _, st := range sts {
			if conn.ID == "" && provider != "" && same(st) && !st.HasToken && !st.Active {
				conn = st.Connection
			}
		}
	}
	reused := conn.ID != ""
	if reused && conn.Active && conn.HasToken {
		return conn, OAuthStart{Reused: true}, nil
	}
	if !reused {
		name := strings.TrimSpace(in.Name)
		for n := 1; ; n++ {
			try := in
			if n > 1 {
				try.Name = name + " " + strconv.Itoa(n)
			}
			conn, err = s.create(ctx, live, try, conversationID)
			if askbi.ErrorCode(err) != askbi.Conflict || n == 5 || in.ID != "" {
				break
			}
		}
		if err != nil {
			return Connection{}, OAuthStart{}, err
		}
	}
	start, err := s.StartOAuth(ctx, live, conn.ID, conversationID)
	if err != nil {
		if c, gerr := s.Get(ctx, live, conn.ID); gerr == nil {
			conn = c
		}
		return conn, OAuthStart{Reused: reused}, err
	}
	start.Reused = reused
	return conn, start, nil
}

// ready reports whether connection st can be called now: active, and
// signed in when it uses OAuth. Ask's tools (ApprovedTools) and the
// connection resolver (Usable) both ask it, so they cannot disagree.
func (st State) ready() bool {
	return st.Active && (st.Auth != AuthOAuth || st.HasToken && st.SignIn != nil && st.SignIn.State == SignedIn)
}

// Usable returns the connections of p's team that Ask can use now:
// active, signed in when they use OAuth, with at least one approved
// usable tool. Inactive and unapproved connections are left out.
func (s *Service) Usable(ctx context.Context, p access.Principal) ([]Connection, error) {
	live, err := s.begin(ctx, p, access.RightRead, access.Team(p.TeamID))
	if err != nil {
		return nil, err
	}
	sts, err := s.store.List(ctx, live.TeamID)
	if err != nil {
		return nil, err
	}
	var out []Connection
	for _, st := range sts {
		if st.ready() && slices.ContainsFunc(st.Tools, Tool.Usable) {
			out = append(out, st.Connection)
		}
	}
	return out, nil
}

// AwaitingTools returns the connections of live principal p's team that
// are ready (active, signed in when they use OAuth) but have no tool Ask
// may use yet: one step, allowing a tool, is left. Errors: those of
// Usable.
func (s *Service) AwaitingTools(ctx context.Context, p access.Principal) ([]Connection, error) {
	live, err := s.begin(ctx, p, access.RightRead, access.Team(p.TeamID))
	if err != nil {
		return nil, err
	}
	sts, err := s.store.List(ctx, live.TeamID)
	if err != nil {
		return nil, err
	}
	var out []Connection
	for _, st := range sts {
		if st.ready() && !slices.ContainsFunc(st.Tools, Tool.Usable) {
			out = append(out, st.Connection)
		}
	}
	return out, nil
}

// PurgeOAuth removes the sign-ins that were started and never completed
// and have expired; a host runs it with its other retention steps.
func (s *Service) PurgeOAuth(ctx context.Context) (int, error) {
	return s.o.OAuth.Flows.PurgeFlows(ctx, s.o.Now())
}
