package signin

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/askbi/askbi"
	"github.com/askbi/askbi/access"
	"github.com/askbi/askbi/connections"
	"github.com/askbi/askbi/dataexec/mcpsource"
	"github.com/askbi/askbi/internal/mcpoauth"
	"github.com/askbi/askbi/seal"
)

// Connect saves a new OAuth connection and starts its sign-in, in one
// action ("Save and connect"). in.Auth must be OAuth or empty. When
// conversationID is set and that conversation already set up a connection
// to the same provider and URL, that one is used again (repeated clicks
// create nothing new; OAuthStart.Reused), and when it is already signed
// in and active nothing starts (no AuthorizationURL). Otherwise a
// verified provider's connection to the same URL is used again, from
// any conversation: one signed in and active as it is, else one never
// signed in. A connection saved by URL alone is not shared that way. A
// name the team uses gets a number ("PostHog 2").
//
// A failed save returns its error and starts nothing (the Connection is
// zero). When only the start fails, the saved Connection is returned with
// the start's error: StartOAuth retries it. Errors:
// connections.Service.Create's and [Service.StartOAuth]'s.
func (s *Service) Connect(ctx context.Context, p access.Principal, in connections.Input, conversationID string) (connections.Connection, OAuthStart, error) {
	if in.Auth != "" && in.Auth != connections.AuthOAuth {
		return connections.Connection{}, OAuthStart{}, askbi.Errorf(askbi.InvalidArgument, "auth: save and connect signs in with OAuth")
	}
	if len(conversationID) > 100 {
		return connections.Connection{}, OAuthStart{}, askbi.Errorf(askbi.InvalidArgument, "conversation_id: at most 100 characters")
	}
	in.Auth = connections.AuthOAuth
	live, err := s.conns.Begin(ctx, p)
	if err == nil {
		err = access.Allow(live, access.RightManageConnections, access.Team(live.TeamID))
	}
	if err != nil {
		return connections.Connection{}, OAuthStart{}, err
	}
	u, err := s.client.CheckURL(strings.TrimSpace(in.URL))
	if err != nil {
		return connections.Connection{}, OAuthStart{}, err
	}
	var conn connections.Connection
	provider := strings.TrimSpace(in.Provider)
	if conversationID != "" || provider != "" {
		sts, err := s.store.List(ctx, live.TeamID)
		if err != nil {
			return connections.Connection{}, OAuthStart{}, err
		}
		same := func(st connections.State) bool {
			return st.Provider == provider && st.URL == u.String() && st.Auth == connections.AuthOAuth
		}
		for _, st := range sts {
			if conversationID != "" && st.SetupConversation == conversationID && same(st) {
				conn = st.Connection
				break
			}
		}
		// A verified provider's connection is used again from any
		// conversation, so clicks do not pile up connections: one signed
		// in and active as it is (nothing starts; what may be left is
		// allowing a tool), else one never signed in (a start that
		// failed, a sign-in abandoned). One signed in but not active is
		// not: a new sign-in would replace its owner's token.
		for _, signedIn := range []bool{true, false} {
			for _, st := range sts {
				if conn.ID == "" && provider != "" && same(st) && st.HasToken == signedIn && st.Active == signedIn {
					conn = st.Connection
				}
			}
		}
	}
	reused := conn.ID != ""
	if reused && conn.Active && conn.HasToken {
		return conn, OAuthStart{Reused: true}, nil
	}
	if !reused {
		name := strings.TrimSpace(in.Name)
		in.SetupConversation = conversationID
		for n := 1; ; n++ {
			try := in
			if n > 1 {
				try.Name = name + " " + strconv.Itoa(n)
			}
			conn, err = s.conns.Create(ctx, live, try)
			if askbi.ErrorCode(err) != askbi.Conflict || n == 5 || in.ID != "" {
				break
			}
		}
		if err != nil {
			return connections.Connection{}, OAuthStart{}, err
		}
	}
	start, err := s.StartOAuth(ctx, live, conn.ID, conversationID)
	if err != nil {
		if c, gerr := s.conns.Get(ctx, live, conn.ID); gerr == nil {
			conn = c
		}
		return conn, OAuthStart{Reused: reused}, err
	}
	start.Reused = reused
	return conn, start, nil
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
// ([access.RightManageConnections]): it asks the MCP server for its
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
	target, details := access.Entity{Type: access.TypeConnection, ID: id}, map[string]string{}
	defer s.audit.Track(ctx, p, ActionOAuthStart, &target, details)(&err)
	live, st, err := s.conns.Load(ctx, p, id, access.RightManageConnections)
	if err != nil {
		return OAuthStart{}, err
	}
	target = connections.Ref(st.Connection)
	switch {
	case st.Auth != connections.AuthOAuth:
		return OAuthStart{}, askbi.Errorf(askbi.InvalidArgument, "auth: this connection does not sign in with OAuth")
	case s.o.RedirectURL == "":
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

func (s *Service) start(ctx context.Context, live access.Principal, st connections.State, conversationID string) (OAuthStart, string, error) {
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
	if g, ok := s.openGrant(st); ok && g.Client.Issuer == md.Issuer && g.Client.RedirectURI == s.o.RedirectURL &&
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
		pre := make([]mcpoauth.Registration, len(s.o.Clients))
		for i, c := range s.o.Clients {
			pre[i] = mcpoauth.Registration{Issuer: c.Issuer, ClientID: c.ClientID, Secret: c.ClientSecret, AuthMethod: c.AuthMethod}
		}
		reg, err = mcpoauth.Register(ctx, oc, md, mcpoauth.RegisterOptions{RedirectURI: s.o.RedirectURL,
			MetadataURL: s.o.ClientMetadataURL, Preregistered: pre, ClientName: s.o.ClientName, ClientURI: s.o.ClientURI})
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
		CreatedAt: now, ExpiresAt: now.Add(s.o.FlowTTL)}
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
	if err := s.o.Flows.CreateFlow(ctx, f); err != nil {
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
	s.note(ctx, id, "keep the client registration", func(st *connections.State) error {
		if st.Auth != connections.AuthOAuth || st.HasToken || st.URL != url {
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
	ctx, cancel := context.WithTimeout(ctx, s.o.Timeout)
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
