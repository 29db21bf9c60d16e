package connresolve

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"errors"
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
	var who access.Principal
	target := access.Entity{Type: access.TypeConnection}
	details := map[string]string{}
	began := s.audit.Now()
	// The callback is unauthenticated: what anyone can send (a forged
	// state, an expired one in another browser) is not audited, so it
	// cannot fill the audit log.
	quiet := false
	defer func() {
		if !quiet {
			s.audit.Record(ctx, who, ActionOAuthComplete, target, began, err, details)
		}
	}()

	var claims stateClaims
	flow := FlowOfState(cb.State)
	if flow == "" || len(cb.State) > 4096 || !s.openText(cb.State[len(flow)+1:], stateAD(flow), &claims) || claims.Flow != flow {
		quiet = true
		return res, askbi.Errorf(askbi.InvalidArgument, "the sign-in answer is not valid (its state is not one askbi issued); start the sign-in again from the connection")
	}
	who = access.Principal{UserID: claims.User, TeamID: claims.Team, Auth: access.AuthSession}
	target = access.Entity{Type: access.TypeConnection, ID: claims.Connection, TeamID: claims.Team}
	res = OAuthResult{ConnectionID: claims.Connection, TeamID: claims.Team, ConversationID: claims.Conversation}
	// refuse is a callback that is not the starter's: audited (a real
	// state in other hands), but nothing is recorded on the connection.
	refuse := func(reason string, e error) (OAuthResult, error) {
		details["reason"] = reason
		// Nor does the result name the conversation or team to a
		// browser that is not the starter's.
		return OAuthResult{ConnectionID: claims.Connection}, e
	}
	fail := func(reason string, e error) (OAuthResult, error) {
		details["reason"] = reason
		s.recordSignInError(ctx, claims.Connection, e)
		return res, e
	}
	// retry is a failure that may pass: the flow stays for the same
	// callback. final ends the sign-in: the flow is taken, so its state
	// cannot be used again.
	retry := func(reason string, e error) (OAuthResult, error) {
		res.Retry = true
		return fail(reason, e)
	}
	final := func(reason string, e error) (OAuthResult, error) {
		s.o.OAuth.Flows.TakeFlow(context.WithoutCancel(ctx), flow) // a flow left behind expires
		return fail(reason, e)
	}

	// Everything that can fail by itself passing (the request, the gate,
	// the store) is checked before the flow is taken; a failure of the
	// binding is someone else's and leaves the flow alone.
	var b bindingClaims
	bound := cb.Binding != "" && s.openText(cb.Binding, bindingAD(flow), &b) && b.Flow == flow
	expired := s.o.Now().Unix() > claims.Expires
	errExpired := askbi.Errorf(askbi.Timeout, "the sign-in took longer than %s and expired; start it again", s.o.OAuth.FlowTTL)
	switch {
	case expired && !bound:
		quiet = true
		return res, errExpired
	case cb.Caller != nil && (cb.Caller.UserID != claims.User || cb.Caller.TeamID != claims.Team):
		return refuse("other_user", askbi.Errorf(askbi.Forbidden, "this sign-in was started by another user or in another team; start it again yourself"))
	case !bound:
		return refuse("other_browser", askbi.Errorf(askbi.Forbidden, "this sign-in was started in another browser or session; start it again here"))
	case b.User != claims.User || b.Team != claims.Team:
		return refuse("other_user", askbi.Errorf(askbi.Forbidden, "this sign-in was started by another user or in another team; start it again yourself"))
	case expired:
		return final("expired", errExpired)
	case ctx.Err() != nil:
		return retry("cancelled", &askbi.Error{Code: askbi.Unavailable, Message: "the sign-in request was cancelled; nothing was connected", Err: ctx.Err()})
	}

	// The person who started must still be there and allowed.
	live, st, err := s.load(ctx, who, claims.Connection, access.RightManageConnections)
	if passing(err) {
		return retry("access", err)
	}
	if err != nil {
		return final("access", err)
	}
	who = live
	switch {
	case cb.Error != "":
		details["provider_error"] = knownError(cb.Error)
		return final("denied", askbi.Errorf(askbi.Forbidden, "%s did not grant access (%s); nothing was connected. Start the sign-in again to retry", st.Name, knownError(cb.Error)))
	case cb.Code == "":
		return final("no_code", askbi.Errorf(askbi.InvalidArgument, "the sign-in answer has no authorization code; start the sign-in again"))
	case len(cb.Code) > 4096 || len(cb.Iss) > 2048:
		return final("too_large", askbi.Errorf(askbi.TooLarge, "the sign-in answer is too large"))
	}

	// Taken right before the code is spent: of two callbacks with the
	// same state (a replay, a double click) one goes on.
	f, err := s.o.OAuth.Flows.TakeFlow(ctx, flow)
	if askbi.ErrorCode(err) == askbi.NotFound {
		// A replay is refused, and records nothing on the connection: a
		// reload after its first request completed the sign-in must not
		// mark a signed-in connection as failed.
		details["reason"] = "replayed"
		return res, askbi.Errorf(askbi.Conflict, "this sign-in answer was already used (or cancelled); open the connection to see whether it is signed in, and start the sign-in again if not")
	}
	if err != nil {
		return retry("store", err)
	}
	if f.ConnectionID != claims.Connection || f.UserID != claims.User || f.TeamID != claims.Team {
		return fail("state_invalid", askbi.Errorf(askbi.InvalidArgument, "the sign-in answer does not match its sign-in; start it again"))
	}
	var sec flowSecret
	if plain, err := seal.Open(s.keys, f.Secret, flowAD(f.ID, f.ConnectionID)); err != nil || json.Unmarshal(plain, &sec) != nil {
		return fail("state_invalid", &askbi.Error{Code: askbi.Internal, Message: "the sign-in's record cannot be read; start it again", Err: err})
	}
	if st.URL != sec.URL || st.Auth != AuthOAuth {
		return fail("changed", askbi.Errorf(askbi.Conflict, "the connection changed since its sign-in started; start it again"))
	}
	if err := mcpoauth.CheckIss(&sec.Metadata, cb.Iss); err != nil {
		return fail(string(mcpoauth.ReasonOf(err)), oauthFailure(err, st.Name))
	}
	// From the exchange on, the sign-in outlives the request: a browser
	// that goes away must not waste a code the provider may have spent.
	// The bound: the exchange's, the discovery's, and the first again
	// for the save.
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*s.o.OAuth.Timeout+s.o.DiscoveryTimeout)
	defer cancel()
	oc := s.oauthClient()
	tok, err := mcpoauth.Exchange(ctx, oc, &sec.Metadata, sec.Client, cb.Code, sec.Verifier)
	if err != nil {
		if r := mcpoauth.ReasonOf(err); r == mcpoauth.ReasonUnreachable || r == mcpoauth.ReasonRefused {
			// No definite answer (no connection, a timeout, a 5xx, 429
			// or 408, an error page that is not OAuth's, the outbound
			// policy refusing to send): the flow goes back for a retry
			// of the same callback. Where the code never reached the
			// provider, the retry spends it. Where it may have (a 5xx,
			// an answer lost on the way), the retry gets invalid_grant,
			// a definite answer that ends the sign-in; the provider may
			// revoke what it issued for the code (RFC 6749 4.1.2), and
			// askbi kept nothing of that.
			if perr := s.o.OAuth.Flows.CreateFlow(ctx, f); perr != nil {
				s.o.Logger.Error("mcpsource: put a sign-in back for a retry", "connection", st.ID, "err", perr)
			} else {
				res.Retry = true
			}
		}
		return fail(string(mcpoauth.ReasonOf(err)), oauthFailure(err, st.Name))
	}
	// The new token must work before anything is saved: list the tools.
	l, derr := s.discoverWith(ctx, st, st.ToolFocus, mcpsource.Credential{OAuth: &oauthSession{s: s, st: st, access: tok.Access, fresh: true}})
	usable := 0
	if derr == nil {
		usable, derr = usableOf(l)
	}
	if derr != nil {
		return fail("discovery", derr)
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
		return fail("save", err)
	}
	details["registration"] = sec.Client.Method
	details["tools"] = strconv.Itoa(out.Discovery.Tools)
	s.publish(ctx, out.Connection)
	s.notify(out.TeamID)
	res.Connection = out.Connection
	return res, nil
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
	msg := func(code askbi.Code, text string) error { return &askbi.Error{Code: code, Message: text, Err: err} }
	switch mcpoauth.ReasonOf(err) {
	case mcpoauth.ReasonUnreachable:
		return msg(askbi.Unavailable, "the sign-in server of "+name+" could not be reached or is busy; try again later")
	case mcpoauth.ReasonTooLarge:
		return msg(askbi.TooLarge, "the sign-in server of "+name+" sent an answer larger than askbi accepts; nothing was connected")
	case mcpoauth.ReasonRefused:
		return msg(askbi.Forbidden, "the sign-in server of "+name+" is at an address askbi may not call (link-local, cloud metadata, private, or too many redirects)")
	case mcpoauth.ReasonResourceMismatch:
		return msg(askbi.InvalidResult, name+"'s sign-in metadata is for another server than this connection's URL, so askbi will not sign in there")
	case mcpoauth.ReasonIssuerMismatch:
		return msg(askbi.InvalidResult, name+"'s authorization server describes itself as another issuer, so askbi will not sign in there")
	case mcpoauth.ReasonNoPKCE:
		return msg(askbi.InvalidResult, name+"'s authorization server does not offer S256 PKCE, which askbi requires")
	case mcpoauth.ReasonInvalidMetadata:
		return msg(askbi.InvalidResult, name+"'s sign-in metadata could not be used; check the connection's URL")
	case mcpoauth.ReasonNoRegistration:
		return msg(askbi.Unsupported, name+"'s authorization server offers no client registration, and no client is registered for it here")
	case mcpoauth.ReasonRegistration:
		return msg(askbi.Unavailable, name+"'s authorization server could not register askbi right now; try again later")
	case mcpoauth.ReasonRegistrationNo:
		return msg(askbi.Unsupported, name+"'s authorization server refused to register askbi; check the connection's URL, or register a client with the provider for askbi to use")
	case mcpoauth.ReasonIssMissing, mcpoauth.ReasonIssMismatch:
		return msg(askbi.InvalidResult, "the sign-in answer did not come from "+name+"'s authorization server (its iss does not match), so it was refused")
	case mcpoauth.ReasonGrantRejected:
		return msg(askbi.Forbidden, name+" did not accept the sign-in code (expired, used, or for another sign-in); start the sign-in again")
	case mcpoauth.ReasonClientRefused:
		return msg(askbi.Forbidden, name+"'s authorization server refused askbi's client; start the sign-in again")
	case mcpoauth.ReasonTokenResource:
		return msg(askbi.InvalidResult, name+" issued a token for another resource, so it was refused")
	case mcpoauth.ReasonTokenError:
		return msg(askbi.Forbidden, name+"'s authorization server refused the sign-in; start it again")
	case mcpoauth.ReasonTokenInvalid:
		return msg(askbi.InvalidResult, name+"'s authorization server answered with a token askbi cannot use")
	}
	return msg(askbi.Unavailable, "the sign-in with "+name+" failed; try again")
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
	s.notify(team)
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

// PurgeOAuth removes the sign-ins that were started and never completed
// and have expired; a host runs it with its other retention steps.
func (s *Service) PurgeOAuth(ctx context.Context) (int, error) {
	return s.o.OAuth.Flows.PurgeFlows(ctx, s.o.Now())
}
