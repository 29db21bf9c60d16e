package signin

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"slices"
	"sync"
	"time"

	"golang.org/x/oauth2"

	"github.com/askbi/askbi"
	"github.com/askbi/askbi/access"
	"github.com/askbi/askbi/connections"
	"github.com/askbi/askbi/dataexec"
	"github.com/askbi/askbi/dataexec/mcpsource"
	"github.com/askbi/askbi/internal/mcpoauth"
	"github.com/askbi/askbi/seal"
)

// Credential implements [connections.Credentials]: how a session to st's
// server authenticates. Its bearer token, opened here; none; or for
// OAuth a session handler with its access token, renewed first when it
// has expired and again when the server refuses it (Forbidden, failure
// kind sign_in, when it cannot be: the connection then needs sign-in).
func (s *Service) Credential(ctx context.Context, st connections.State) (mcpsource.Credential, error) {
	switch {
	case st.Auth == connections.AuthOAuth:
		o, err := s.oauthSession(ctx, st)
		if err != nil {
			return mcpsource.Credential{}, err
		}
		return mcpsource.Credential{OAuth: o}, nil
	case !st.HasToken:
		return mcpsource.Credential{}, nil
	}
	b, err := seal.Open(s.keys, st.Token, connections.TokenContext(st.TeamID, st.ID))
	if err != nil {
		return mcpsource.Credential{}, dataexec.Fail(dataexec.FailSignIn, askbi.Forbidden, err, "the connection's token cannot be read with the current keys; enter it again")
	}
	return mcpsource.Credential{Bearer: string(b)}, nil
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

func (s *Service) openGrant(st connections.State) (grant, bool) {
	if st.Token.KeyID == "" || st.Auth != connections.AuthOAuth {
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

func (s *Service) sealGrant(st *connections.State, g grant) error {
	b, _ := json.Marshal(g)
	box, err := seal.Seal(s.keys, b, grantAD(st.TeamID, st.ID))
	if err != nil {
		return &askbi.Error{Code: askbi.Internal, Message: "the sign-in could not be sealed", Err: err}
	}
	st.Token = box
	st.HasToken = g.Access != ""
	return nil
}

// oauthSession is the go-sdk OAuthHandler of one session of an OAuth
// connection: it gives the transport the current access token, and on a
// 401 refreshes it once (one refresh of the connection at a time,
// keeping a rotated refresh token); a failed refresh marks the
// connection as needing sign-in. A 403 insufficient_scope records the
// challenged scopes for the next sign-in (never granted silently) and
// fails with sign-in needed.
type oauthSession struct {
	s      *Service
	st     connections.State
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

// Watch implements [mcpsource.OAuth].
func (o *oauthSession) Watch(p *mcpsource.Probe) { o.probe = p }

// Failure implements [mcpsource.OAuth].
func (o *oauthSession) Failure() error {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.failure
}

// Rejected implements [mcpsource.OAuth]: the failure of a token the server
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
func (s *Service) oauthSession(ctx context.Context, st connections.State) (*oauthSession, error) {
	g, ok := s.openGrant(st)
	if !ok || !st.HasToken || g.Access == "" {
		return nil, connections.NeedsSignIn(st.Name)
	}
	access := g.Access
	if !s.unexpired(g) {
		var err error
		if access, err = s.refresh(ctx, st, g.Access); err != nil {
			return nil, err
		}
	}
	return &oauthSession{s: s, st: st, access: access}, nil
}

// refresh renews the access token of connection st, whose token stale
// stopped working or expired. One refresh of a connection runs at a
// time (holdRefresh: a lock in this process, the lease
// Options.Leases across instances), and it reads the connection
// only once it holds it: when another refresh renewed the token
// meanwhile, that token is used and no refresh token is spent twice.
// Otherwise the refresh token is spent, outside any transaction, and
// the rotated one saved under the connection's lock: only the write
// holds it, never the token request. A refused refresh (invalid_grant,
// invalid_client, a token for another resource) or none to use marks
// the connection as needing sign-in; any other failure (a server that
// cannot be reached or is busy) leaves it as it is.
//
// The refresh and the save of the rotated refresh token outlive the
// caller (a cancelled chat turn): once the provider rotated, the old
// refresh token is spent, and a save dropped by the cancellation would
// have the next refresh replay it, which revokes the grant for the
// whole team. They are bounded by their own timeout instead: the token
// request's, and as long again for the wait, the reads and the save.
func (s *Service) refresh(ctx context.Context, st connections.State, stale string) (string, error) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*s.o.Timeout)
	defer cancel()
	release, renewed, err := s.holdRefresh(ctx, st, stale)
	if err != nil || renewed != "" {
		return renewed, err
	}
	defer release()
	cur, err := s.store.Get(ctx, st.ID)
	if err != nil {
		return "", err
	}
	g, ok := s.openGrant(cur)
	var reason error
	switch {
	case !ok || !cur.HasToken || g.Access == "":
		reason = connections.NeedsSignIn(cur.Name)
	case g.Access != stale && s.unexpired(g):
		return g.Access, nil // renewed by the refresh that held it before
	case g.Refresh == "":
		reason = dataexec.Fail(dataexec.FailSignIn, askbi.Forbidden, nil, "%s's sign-in expired and cannot be renewed; open the connection and sign in again", cur.Name)
	}
	if reason == nil {
		tok, err := mcpoauth.Refresh(ctx, s.oauthClient(), &g.Metadata, g.Client, g.Refresh)
		if err == nil {
			return s.saveRefresh(ctx, st.ID, g, tok)
		}
		reason = err
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
	s.markSignInNeeded(ctx, st.ID, g.Access, reason)
	return "", reason
}

// saveRefresh keeps the tokens tok renewed grant g with, under the
// connection's lock, and returns the new access token. When the
// connection holds another grant by now (a sign-in completed during the
// refresh), that one stays: tok still serves this call.
func (s *Service) saveRefresh(ctx context.Context, id string, g grant, tok mcpoauth.Token) (string, error) {
	next := g
	next.Access, next.Refresh, next.Expiry = tok.Access, tok.Refresh, s.expiry(tok)
	if tok.Scopes != nil {
		next.Scopes = tok.Scopes
	}
	_, err := s.store.Update(ctx, id, func(cur *connections.State) error {
		if now, ok := s.openGrant(*cur); !ok || now.Refresh != g.Refresh {
			return errNewerGrant
		}
		return s.sealGrant(cur, next)
	})
	if err != nil && !errors.Is(err, errNewerGrant) {
		return "", err
	}
	return tok.Access, nil
}

// unexpired reports whether g's access token works for a while yet
// (30 s), as far as its expiry says.
func (s *Service) unexpired(g grant) bool {
	return g.Expiry.IsZero() || s.o.Now().Add(30*time.Second).Before(g.Expiry)
}

// refreshLease is how long a refresh holds its lease at most: its whole
// bound (Service.refresh) and a margin. A lease of an instance that died
// during a refresh frees itself after it.
func (s *Service) refreshLease() time.Duration { return 2*s.o.Timeout + 10*time.Second }

// holdRefresh takes the refresh of connection st: the lock of this
// process, then, with Options.Leases, the lease every instance
// sharing the store takes for it. While another instance holds the
// lease it waits, reading the connection between tries: once that
// refresh is saved (an access token other than stale that has not
// expired), it returns that token as renewed, without the lease. Errors:
// Unavailable (the leases cannot be reached, or the wait outlasted the
// refresh's bound).
func (s *Service) holdRefresh(ctx context.Context, st connections.State, stale string) (release func(), renewed string, err error) {
	unlock, err := s.refreshing.lock(ctx, st.ID)
	if err != nil {
		return nil, "", s.errRenewLater(st, err)
	}
	if s.o.Leases == nil {
		return unlock, "", nil
	}
	slot := []dataexec.Slot{{Key: "oauth_refresh:" + st.ID, Max: 1}}
	for wait := 10 * time.Millisecond; ; wait = min(2*wait, 250*time.Millisecond) {
		free, err := s.o.Leases.Acquire(ctx, slot, s.refreshLease())
		if err == nil {
			return func() { free(); unlock() }, "", nil
		}
		var full *dataexec.SlotFull
		if !errors.As(err, &full) {
			unlock()
			return nil, "", s.errRenewLater(st, err)
		}
		if cur, err := s.store.Get(ctx, st.ID); err == nil {
			if g, ok := s.openGrant(cur); ok && cur.HasToken && g.Access != "" && g.Access != stale && s.unexpired(g) {
				unlock()
				return nil, g.Access, nil
			}
		}
		select {
		case <-ctx.Done():
			unlock()
			return nil, "", s.errRenewLater(st, ctx.Err())
		case <-time.After(wait):
		}
	}
}

// errRenewLater is the failure of a refresh that could not run now.
func (s *Service) errRenewLater(st connections.State, err error) error {
	return dataexec.Fail(dataexec.FailTimeout, askbi.Unavailable, err, "%s's sign-in could not be renewed right now; try again", st.Name)
}

// refreshLocks are the locks of the refreshes running in this process,
// one per connection, kept while anyone holds or waits for one.
type refreshLocks struct {
	mu    sync.Mutex
	locks map[string]*refreshLock
}

type refreshLock struct {
	held  chan struct{} // full while held
	users int
}

// lock takes connection id's lock, or fails when ctx ends first; it
// returns the release.
func (r *refreshLocks) lock(ctx context.Context, id string) (func(), error) {
	r.mu.Lock()
	if r.locks == nil {
		r.locks = map[string]*refreshLock{}
	}
	l := r.locks[id]
	if l == nil {
		l = &refreshLock{held: make(chan struct{}, 1)}
		r.locks[id] = l
	}
	l.users++
	r.mu.Unlock()
	done := func() {
		r.mu.Lock()
		if l.users--; l.users == 0 {
			delete(r.locks, id)
		}
		r.mu.Unlock()
	}
	select {
	case l.held <- struct{}{}:
		return func() { <-l.held; done() }, nil
	case <-ctx.Done():
		done()
		return nil, ctx.Err()
	}
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
	st, ok := s.note(ctx, id, "mark sign-in needed", func(st *connections.State) error {
		if st.Auth != connections.AuthOAuth {
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
		si := signInOf(st, connections.SignInNeeded)
		si.State, si.Error = connections.SignInNeeded, connections.NewErrorInfo(cause, at)
		st.Version++
		st.UpdatedAt = at
		return nil
	})
	if !ok {
		return
	}
	s.audit.Record(ctx, access.Principal{TeamID: team}, ActionSignInNeeded, connections.Ref(st.Connection), at, cause, nil)
	s.recs.SaveCatalog(ctx, st.Connection)
	s.recs.Notify(ctx, team)
}

// recordStepUp keeps scopes a server challenged for, for the next sign-in.
func (s *Service) recordStepUp(ctx context.Context, id string, scopes []string) {
	if len(scopes) == 0 {
		return
	}
	s.note(ctx, id, "record step-up", func(st *connections.State) error {
		if st.Auth != connections.AuthOAuth {
			return errNotOAuth
		}
		si := signInOf(st, connections.SignInNeeded)
		for _, sc := range scopes {
			if len(si.StepUp) < 50 && len(sc) <= 200 && !slices.Contains(si.StepUp, sc) {
				si.StepUp = append(si.StepUp, sc)
			}
		}
		return nil
	})
}

// recordSignInError keeps a failure on the connection (if it exists) for
// the connection page; nothing else changes.
func (s *Service) recordSignInError(ctx context.Context, id string, cause error) {
	if id == "" {
		return
	}
	at := s.o.Now().UTC()
	s.note(ctx, id, "record sign-in failure", func(st *connections.State) error {
		if st.Auth != connections.AuthOAuth {
			return errNotOAuth
		}
		signInOf(st, connections.SignInNeeded).Error = connections.NewErrorInfo(cause, at)
		return nil
	})
}

var (
	errNotOAuth   = errors.New("not an OAuth connection")
	errNewerGrant = errors.New("the connection holds a newer grant")
)

// signInOf is st's sign-in, to change in place (st is Store.Update's
// copy), made in state def when st has none.
func signInOf(st *connections.State, def connections.SignInState) *connections.SignIn {
	if st.SignIn == nil {
		st.SignIn = &connections.SignIn{State: def}
	}
	return st.SignIn
}

// note is a Store.Update that outlives the request and that nobody
// waits on (a failure recorded, a registration kept): fn may decline
// with errNotOAuth or errNewerGrant, a connection deleted meanwhile is no
// error, and any other failure is logged as what. It reports whether the
// update was written.
func (s *Service) note(ctx context.Context, id, what string, fn func(*connections.State) error) (connections.State, bool) {
	st, err := s.store.Update(context.WithoutCancel(ctx), id, fn)
	if err != nil && !errors.Is(err, errNotOAuth) && !errors.Is(err, errNewerGrant) && askbi.ErrorCode(err) != askbi.NotFound {
		s.o.Logger.Error("signin: "+what, "connection", id, "err", err)
	}
	return st, err == nil
}
