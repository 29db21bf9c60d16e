package signin

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"slices"
	"time"

	"github.com/askbi/askbi"
	"github.com/askbi/askbi/access"
	"github.com/askbi/askbi/connections"
	"github.com/askbi/askbi/dataexec"
	"github.com/askbi/askbi/dataexec/mcpsource"
	"github.com/askbi/askbi/internal/mcpoauth"
	"github.com/askbi/askbi/seal"
)

// Audit actions of the sign-in. Details never hold a token, code,
// verifier or client secret.
const (
	ActionOAuthStart    = "connection.oauth_start"
	ActionOAuthComplete = "connection.oauth_complete"
	ActionSignInNeeded  = "connection.sign_in_needed"
)

// Options configures a [Service]. The zero value is valid; each zero
// field means its default. OAuth sign-in is off (StartOAuth answers
// Unsupported) until RedirectURL is set.
type Options struct {
	// RedirectURL is the callback URL registered with authorization
	// servers: the host's route that calls CompleteOAuth, such as
	// connhttp's (connhttp.RedirectURL gives it). Required.
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
	// Leases, when set, keeps one refresh of a connection's tokens at a
	// time across the instances sharing the store (pgstore.Leases): an
	// instance that finds another refreshing waits for its tokens
	// rather than spending the same refresh token, which a provider
	// that rotates them takes as a replay and answers by revoking the
	// grant. Default nil: one refresh at a time in this process only.
	Leases dataexec.Leases
	// Audit records sign-ins started and completed, and connections that
	// need sign-in again. Default none.
	Audit access.AuditSink
	// Logger logs internal errors. Default slog.Default().
	Logger *slog.Logger
	// Now is the clock. Default time.Now.
	Now func() time.Time
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

// Service is the sign-in of a team's remote MCP connections, and the
// only holder of their secrets: it alone opens the sealed tokens (a
// bearer token, an OAuth grant), and it alone talks to authorization
// servers. It gives the connections core and the calls the credential
// of a session ([Service.Credential], a connections.Credentials), renews
// OAuth tokens with rotation, one refresh of a connection at a time
// (Options.Leases across instances), and runs the OAuth sign-in: save
// and connect ([Service.Connect]), [Service.StartOAuth] and
// [Service.CompleteOAuth]. It is safe for concurrent use.
type Service struct {
	conns  *connections.Service
	recs   *connections.Records
	store  connections.Store
	client *mcpsource.Client
	keys   seal.Keyring
	o      Options
	audit  *access.Auditor

	refreshing refreshLocks
}

// New returns the sign-in of the connections of conns, opening their
// secrets with keys (the keyring conns seals with). opts may be nil.
func New(conns *connections.Service, keys seal.Keyring, opts *Options) *Service {
	s := &Service{conns: conns, recs: conns.Records(), keys: keys}
	s.store, s.client = s.recs.Store(), s.recs.Client()
	if opts != nil {
		s.o = *opts
	}
	o := &s.o
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
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	s.audit = access.NewAuditor(o.Audit, o.Logger, o.Now)
	return s
}

var _ connections.Credentials = (*Service)(nil)

// oauthClient is the outbound policy's client for OAuth requests.
func (s *Service) oauthClient() *mcpoauth.Client {
	return mcpoauth.NewClient(s.client.HTTPClient(s.o.MaxResponseBytes, s.o.Timeout))
}

// Credential implements connections.Credentials: how a session to st's
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
	s.recs.Publish(ctx, st.Connection)
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

// PurgeOAuth removes the sign-ins that were started and never completed
// and have expired; a host runs it with its other retention steps.
func (s *Service) PurgeOAuth(ctx context.Context) (int, error) {
	return s.o.Flows.PurgeFlows(ctx, s.o.Now())
}
