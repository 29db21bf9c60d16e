package signin

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"

	"github.com/askbi/askbi"
	"github.com/askbi/askbi/access"
	"github.com/askbi/askbi/connections"
	"github.com/askbi/askbi/dataexec/mcpsource"
	"github.com/askbi/askbi/internal/mcpoauth"
	"github.com/askbi/askbi/seal"
)

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
	ConnectionID   string                 `json:"connection_id,omitempty"`
	TeamID         string                 `json:"team_id,omitempty"`
	ConversationID string                 `json:"conversation_id,omitempty"`
	Connection     connections.Connection `json:"connection"`
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
// [ActionOAuthComplete].
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
	// Each step is bounded instead: the exchange by twice the sign-in's
	// Timeout, the listing by the discovery's, the save by Timeout.
	ctx = context.WithoutCancel(ctx)
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
	s.recs.SaveCatalog(ctx, out.Connection)
	s.recs.Notify(ctx, out.TeamID)
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
		c.s.o.Flows.TakeFlow(context.WithoutCancel(ctx), c.flow) // a flow left behind expires
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
	errExpired := askbi.Errorf(askbi.Timeout, "the sign-in took longer than %s and expired; start it again", c.s.o.FlowTTL)
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
func (c *completion) checkStarter(ctx context.Context) (connections.State, *failure) {
	live, st, err := c.s.conns.Load(ctx, c.who, c.claims.Connection, access.RightManageConnections)
	if passing(err) {
		return connections.State{}, &failure{endRetry, "access", err}
	}
	if err != nil {
		return connections.State{}, &failure{endFinal, "access", err}
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
func (c *completion) takeFlow(ctx context.Context, st connections.State) (Flow, flowSecret, *failure) {
	f, err := c.s.o.Flows.TakeFlow(ctx, c.flow)
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
	if st.URL != sec.URL || st.Auth != connections.AuthOAuth {
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
func (c *completion) exchange(ctx context.Context, st connections.State, fl Flow, sec flowSecret) (mcpoauth.Token, *failure) {
	// The exchange's bound, and as long again to put the flow back.
	ctx, cancel := context.WithTimeout(ctx, 2*c.s.o.Timeout)
	defer cancel()
	tok, err := mcpoauth.Exchange(ctx, c.s.oauthClient(), &sec.Metadata, sec.Client, c.cb.Code, sec.Verifier)
	if err == nil {
		return tok, nil
	}
	end := endFail
	if r := mcpoauth.ReasonOf(err); r == mcpoauth.ReasonUnreachable || r == mcpoauth.ReasonRefused {
		if perr := c.s.o.Flows.CreateFlow(ctx, fl); perr != nil {
			c.s.o.Logger.Error("signin: put a sign-in back for a retry", "connection", st.ID, "err", perr)
		} else {
			end = endRetry
		}
	}
	return tok, &failure{end, string(mcpoauth.ReasonOf(err)), oauthFailure(err, st.Name)}
}

// save lists the server's tools with the new token, which must work
// before anything is saved, then saves the sealed tokens and activates
// the connection, unless it changed meanwhile.
func (c *completion) save(ctx context.Context, st connections.State, sec flowSecret, tok mcpoauth.Token) (connections.State, *failure) {
	s := c.s
	found, err := s.recs.ListTools(ctx, st, st.ToolFocus, mcpsource.Credential{OAuth: &oauthSession{s: s, st: st, access: tok.Access, fresh: true}})
	if err != nil {
		return connections.State{}, &failure{endFail, "discovery", err}
	}
	now := s.o.Now().UTC()
	granted := sec.Scopes
	if tok.Scopes != nil {
		granted = tok.Scopes
	}
	g := grant{Metadata: sec.Metadata, Client: sec.Client, Access: tok.Access, Refresh: tok.Refresh, Expiry: s.expiry(tok), Scopes: granted}
	ctx, cancel := context.WithTimeout(ctx, s.o.Timeout)
	defer cancel()
	out, err := s.store.Update(ctx, st.ID, func(cur *connections.State) error {
		if cur.URL != sec.URL || cur.Auth != connections.AuthOAuth {
			return askbi.Errorf(askbi.Conflict, "the connection changed while its sign-in completed; start it again")
		}
		if err := s.sealGrant(cur, g); err != nil {
			return err
		}
		stepUp := stepUpLeft(cur.SignIn, granted)
		cur.SignIn = &connections.SignIn{State: connections.SignedIn, Issuer: sec.Metadata.Issuer, Scopes: granted, At: now, StepUp: stepUp}
		found.Merge(cur, now)
		return nil
	})
	if err != nil {
		return connections.State{}, &failure{endFail, "save", err}
	}
	return out, nil
}

// stepUpLeft is the step-up scopes of si a new grant still lacks.
func stepUpLeft(si *connections.SignIn, granted []string) []string {
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
