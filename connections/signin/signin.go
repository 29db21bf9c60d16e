package signin

import (
	"context"
	"log/slog"
	"time"

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
// of a session ([Service.Credential], a [connections.Credentials]), renews
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

// PurgeOAuth removes the sign-ins that were started and never completed
// and have expired; a host runs it with its other retention steps.
func (s *Service) PurgeOAuth(ctx context.Context) (int, error) {
	return s.o.Flows.PurgeFlows(ctx, s.o.Now())
}
