package connections

import (
	"context"
	"crypto/rand"
	"log/slog"
	"net/url"
	"regexp"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/askbi/askbi"
	"github.com/askbi/askbi/access"
	"github.com/askbi/askbi/dataexec/mcpsource"
	"github.com/askbi/askbi/internal/outbound"
	"github.com/askbi/askbi/seal"
	"github.com/askbi/askbi/workspace"
)

// Audit actions of the service (access.AuditEntry.Action). Details hold
// tool names and counts, never a token or argument values.
const (
	ActionConnectionCreate   = "connection.create"
	ActionConnectionUpdate   = "connection.update"
	ActionConnectionDelete   = "connection.delete"
	ActionConnectionDiscover = "connection.discover"
	ActionToolAccess         = "connection.tool_access"
	ActionToolAllowAll       = "connection.tool_allow_all"
)

// Options configures a [Service]. The zero value is valid; each zero
// field means its default.
type Options struct {
	// Catalog is where connections are published, so that search, the
	// context picker and the data executor know them. Default none: the
	// host's catalog must learn them itself.
	Catalog workspace.ConnectionWriter
	// DenyLoopback refuses servers on loopback addresses: when a URL is
	// saved, a host that is loopback without asking a resolver (127.1,
	// 2130706433, 0x7f000001, [::ffff:127.0.0.1], localhost, names under
	// localhost, ...), and where it is dialled, every address a name
	// resolves to. Default false: an owner may run an MCP server on the
	// same machine, on purpose.
	DenyLoopback bool
	// AllowPrivateNetworks allows servers on private addresses (10/8,
	// 172.16/12, 192.168/16, 100.64/10, 198.18/15, fc00::/7, fec0::/10).
	// Default false. Link-local and cloud-metadata addresses are always
	// refused.
	AllowPrivateNetworks bool
	// Resolver resolves server names. Default the system's. Each address
	// it answers passes the outbound policy where it is dialled.
	Resolver mcpsource.Resolver
	// DiscoveryTimeout bounds one listing of a server's tools, all pages,
	// and each HTTP exchange of [Records.Client]. Default 30 s.
	DiscoveryTimeout time.Duration
	// MaxTools is the most tools a discovery keeps, of a list of any
	// length: those approved before, then the best matches of Tool
	// focus; the rest are counted (Discovery.LeftOut). A large count
	// alone never fails setup. Default 1,000.
	MaxTools int
	// MaxPages bounds the pages of one tool list read; the pages past it
	// are left unread (Discovery.Unread). Default 20.
	MaxPages int
	// MaxListBytes bounds the tool list's size: each response (a larger
	// one is TooLarge and changes nothing) and the total read, past which
	// the pages left are unread. Default 8 MiB.
	MaxListBytes int64
	// FullListLimit is the most tools shown without Tool focus. Default
	// 250.
	FullListLimit int
	// MaxSchemaBytes and MaxSchemaDepth are the schema safety checks.
	// Default 16 KiB and 10 levels.
	MaxSchemaBytes int
	MaxSchemaDepth int
	// Publish, when set, tells the other instances sharing the store
	// that a connection of team teamID, or its tools' approvals, changed,
	// once the change is stored (pgstore.ConnectionChanges): each passes
	// it to its [Records.Changed], which stops their Ask turns that use
	// the team's remote tools, as this instance's own stop. A failure is
	// logged; a call those turns make is still checked against the
	// stored approval. Default nil: one process.
	Publish func(ctx context.Context, teamID string) error
	// Audit records connection changes, discoveries and approvals.
	// Default none.
	Audit access.AuditSink
	// Logger logs internal errors. Default slog.Default().
	Logger *slog.Logger
	// Now is the clock. Default time.Now.
	Now func() time.Time
}

// Service manages a team's remote MCP connections for people: creating,
// changing and deleting them ([access.RightManageConnections]),
// discovering their tools within bounds, and approving tools one by one
// or all at once ([access.RightApproveTools]). Every method takes the
// request's principal and passes it through the gate (a live principal
// passes uncharged), and every change is audited. It holds no secret it
// can read: it seals bearer tokens, and asks [Credentials] (package
// signin) how to reach a server. The packages built on it (signin,
// remote) share its [Records]. It is safe for concurrent use.
type Service struct {
	keys  seal.Keyring
	gate  *access.Gate
	o     Options
	audit *access.Auditor
	recs  *Records
}

// NewService returns a service over store, sealing bearer tokens with
// keys. opts may be nil.
func NewService(store Store, keys seal.Keyring, gate *access.Gate, opts *Options) *Service {
	s := &Service{keys: keys, gate: gate}
	if opts != nil {
		s.o = *opts
	}
	o := &s.o
	def := func(v *int, d int) {
		if *v <= 0 {
			*v = d
		}
	}
	def(&o.MaxTools, 1000)
	def(&o.MaxPages, 20)
	def(&o.FullListLimit, 250)
	def(&o.MaxSchemaBytes, 16<<10)
	def(&o.MaxSchemaDepth, 10)
	if o.DiscoveryTimeout <= 0 {
		o.DiscoveryTimeout = 30 * time.Second
	}
	if o.MaxListBytes <= 0 {
		o.MaxListBytes = 8 << 20
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	s.audit = access.NewAuditor(o.Audit, o.Logger, o.Now)
	s.recs = newRecords(store, o)
	return s
}

// Records returns the connections as stored, which the packages built on
// the service (signin, remote) and the host's change feed share.
func (s *Service) Records() *Records { return s.recs }

// Input is a new connection.
type Input struct {
	// ID is the connection's ID, for a host that imports connections or
	// seeds a demo: 1 to 64 of a-z, 0-9 and _. Default: assigned.
	ID    string
	Name  string
	URL   string
	Auth  Auth   // default AuthNone, or AuthBearer when Token is set
	Token string // for AuthBearer
	// ToolFocus is the question a list of more than 250 tools is matched
	// against.
	ToolFocus string
	// Provider names the verified provider the connection is for
	// (connresolve.Verified), e.g. "PostHog"; "" for one set up by hand.
	Provider string
	// SetupConversation is the Ask conversation the connection is set up
	// from, if any (Record.SetupConversation): package signin's Connect
	// uses it again on repeated clicks there.
	SetupConversation string
}

// Patch changes a connection; nil fields keep their values.
type Patch struct {
	Name      *string
	URL       *string
	Auth      *Auth
	Token     *string // "" removes the token
	ToolFocus *string
}

const maxToken = 4096

var connID = regexp.MustCompile(`^[a-z0-9_]{1,64}$`)

func validName(s string) bool {
	if s == "" || utf8.RuneCountInString(s) > 64 || !utf8.ValidString(s) {
		return false
	}
	return strings.IndexFunc(s, func(r rune) bool { return !unicode.IsPrint(r) }) < 0
}

func validToken(s string) bool {
	if s == "" || len(s) > maxToken {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] <= ' ' || s[i] >= 0x7f {
			return false
		}
	}
	return true
}

// Begin passes p through the service's request gate (live membership,
// then the rate limit) and returns the live principal, for an adapter
// that calls other parts with it (connhttp's setup card). A live
// principal passes uncharged.
func (s *Service) Begin(ctx context.Context, p access.Principal) (access.Principal, error) {
	return s.gate.Begin(ctx, p)
}

func (s *Service) begin(ctx context.Context, p access.Principal, right access.Right, e access.Entity) (access.Principal, error) {
	live, err := s.gate.Begin(ctx, p)
	if err != nil {
		return access.Principal{}, err
	}
	if err := access.Allow(live, right, e); err != nil {
		return access.Principal{}, err
	}
	return live, nil
}

// Load reads connection id for p, with right decided on it, and returns
// the live principal with it: the one check of everything done to a
// connection, here and in the packages built on the service (signin's
// sign-in, remote's calls). Another team's connection is NotFound, as an
// unknown one; Forbidden when p lacks right; the gate's errors.
func (s *Service) Load(ctx context.Context, p access.Principal, id string, right access.Right) (access.Principal, State, error) {
	live, err := s.gate.Begin(ctx, p)
	if err != nil {
		return access.Principal{}, State{}, err
	}
	if id == "" || len(id) > 100 {
		return access.Principal{}, State{}, errNotFound()
	}
	st, err := s.recs.store.Get(ctx, id)
	if err != nil {
		return access.Principal{}, State{}, err
	}
	if err := access.Allow(live, right, Ref(st.Connection)); err != nil {
		if askbi.ErrorCode(err) == askbi.NotFound {
			return access.Principal{}, State{}, errNotFound()
		}
		return access.Principal{}, State{}, err
	}
	return live, st, nil
}

// Ref is connection c as an [access.Entity]: team-wide.
func Ref(c Connection) access.Entity {
	return access.Entity{Type: access.TypeConnection, ID: c.ID, TeamID: c.TeamID}
}

func newID() string { return "conn_" + strings.ToLower(rand.Text()[:16]) }

// Create stores a new connection, inactive until its first discovery. It
// needs [access.RightManageConnections]. Errors: InvalidArgument (the
// message names the field: a URL with user information, a non-HTTP scheme,
// a metadata, link-local or private address, a credential in the query;
// a bad name or token), Conflict for a name the team uses, Forbidden.
// Nothing is stored on error. The token is sealed; it is never returned.
func (s *Service) Create(ctx context.Context, p access.Principal, in Input) (_ Connection, err error) {
	target := access.Entity{Type: access.TypeConnection}
	details := map[string]string{}
	defer s.audit.Track(ctx, p, ActionConnectionCreate, &target, details)(&err)
	live, err := s.begin(ctx, p, access.RightManageConnections, access.Team(p.TeamID))
	if err != nil {
		return Connection{}, err
	}
	target.TeamID = live.TeamID
	switch {
	case utf8.RuneCountInString(in.Provider) > 100 || !utf8.ValidString(in.Provider):
		return Connection{}, askbi.Errorf(askbi.InvalidArgument, "provider: at most 100 characters")
	case len(in.SetupConversation) > 100:
		return Connection{}, askbi.Errorf(askbi.InvalidArgument, "conversation_id: at most 100 characters")
	}
	if in.Auth == "" {
		in.Auth = AuthNone
		if in.Token != "" {
			in.Auth = AuthBearer
		}
	}
	id := in.ID
	if id == "" {
		id = newID()
	} else if !connID.MatchString(id) {
		return Connection{}, askbi.Errorf(askbi.InvalidArgument, "id: must be 1 to 64 of a-z, 0-9 and _")
	}
	now := s.o.Now().UTC()
	st := State{Record: Record{Connection: Connection{ID: id, TeamID: live.TeamID, CreatedAt: now, UpdatedAt: now, Version: 1,
		Provider: strings.TrimSpace(in.Provider)}, SetupConversation: in.SetupConversation}}
	if err := s.apply(&st, Patch{Name: &in.Name, URL: &in.URL, Auth: &in.Auth, Token: &in.Token, ToolFocus: &in.ToolFocus}); err != nil {
		return Connection{}, err
	}
	target.ID = st.ID
	details["auth"] = string(st.Auth)
	if err := s.recs.store.Create(ctx, st); err != nil {
		return Connection{}, err
	}
	s.recs.SaveCatalog(ctx, st.Connection)
	return st.Connection, nil
}

// apply validates patch and applies it to st (not yet stored).
func (s *Service) apply(st *State, pt Patch) error {
	bad := func(format string, args ...any) error { return askbi.Errorf(askbi.InvalidArgument, format, args...) }
	dropped := false // a bearer token dropped by a move to another origin
	if pt.Name != nil {
		name := strings.TrimSpace(*pt.Name)
		if !validName(name) {
			return bad("name: must be 1 to 64 printable characters")
		}
		st.Name = name
	}
	if pt.URL != nil {
		u, err := s.recs.client.CheckURL(strings.TrimSpace(*pt.URL))
		if err != nil {
			return err
		}
		if u.String() != st.URL && st.URL != "" {
			// Another URL may be another server: nothing it lists is
			// approved until an admin approves it there, and OAuth
			// tokens, bound to the old resource, are dropped.
			st.Active = false
			for i := range st.Tools {
				if a := &st.Tools[i].Access; a.Allowed {
					a.Allowed, a.Reapprove = false, "the connection's URL changed"
				}
			}
			if st.Auth == AuthOAuth {
				st.Token, st.HasToken = seal.Box{}, false
				st.SignIn = &SignIn{State: SignInNeeded}
			}
			// A bearer token belongs to its origin's server: another
			// origin gets none of it, so it is dropped and must be
			// entered again (in the same change, or the change is
			// refused below: bearer auth needs a token).
			if old, err := url.Parse(st.URL); err != nil || outbound.Origin(old) != outbound.Origin(u) {
				if st.Auth != AuthOAuth && st.HasToken {
					st.Token, st.HasToken, dropped = seal.Box{}, false, true
				}
			}
		}
		st.URL = u.String()
	}
	if pt.Auth != nil {
		switch *pt.Auth {
		case AuthNone, AuthBearer, AuthOAuth:
		default:
			return bad("auth: must be none, bearer or oauth")
		}
		if *pt.Auth != st.Auth && st.Auth == AuthOAuth {
			// Leaving OAuth drops its sign-in.
			st.Token, st.HasToken, st.SignIn = seal.Box{}, false, nil
			st.Active = false
		}
		if *pt.Auth == AuthOAuth && st.Auth != AuthOAuth && st.HasToken && (pt.Token == nil || *pt.Token != "") {
			return bad("token: an OAuth connection signs in instead; send \"token\": \"\" to remove the bearer token")
		}
		if *pt.Auth == AuthOAuth && st.Auth != AuthOAuth {
			st.Token, st.HasToken, st.Active = seal.Box{}, false, false
			st.SignIn = &SignIn{State: SignInNeeded}
		}
		st.Auth = *pt.Auth
	}
	if pt.Token != nil {
		switch {
		case *pt.Token == "":
			if st.Auth != AuthOAuth {
				st.Token, st.HasToken = seal.Box{}, false
			}
		case st.Auth == AuthOAuth:
			return bad("token: an OAuth connection signs in instead of taking a token")
		case !validToken(*pt.Token):
			return bad("token: must be 1 to %d printable characters without spaces", maxToken)
		default:
			box, err := seal.Seal(s.keys, []byte(*pt.Token), TokenContext(st.TeamID, st.ID))
			if err != nil {
				return &askbi.Error{Code: askbi.Internal, Message: "the token could not be sealed", Err: err}
			}
			st.Token, st.HasToken = box, true
		}
	}
	if pt.ToolFocus != nil {
		f := strings.TrimSpace(*pt.ToolFocus)
		if utf8.RuneCountInString(f) > 500 {
			return bad("tool_focus: at most 500 characters")
		}
		st.ToolFocus = f
	}
	switch {
	case st.Auth == AuthBearer && !st.HasToken && dropped:
		return bad("token: the new URL is on another origin (scheme, host or port), where the stored token is not sent; enter the token again")
	case st.Auth == AuthBearer && !st.HasToken:
		return bad("token: required for bearer auth")
	case st.Auth == AuthNone && st.HasToken:
		return bad("token: only for bearer auth")
	case st.Auth == AuthOAuth && st.SignIn == nil:
		st.SignIn = &SignIn{State: SignInNeeded}
	}
	return nil
}

// Update changes a connection under its lock. A new URL turns the
// connection inactive and every approval off (reapprove) until the next
// discovery and an admin's approval: another URL may be another server.
// A URL on another origin (scheme, host or port) drops a bearer token:
// the same patch must carry the token again (InvalidArgument otherwise,
// and nothing changes), so a stored token never reaches another server.
// It needs [access.RightManageConnections]; errors as [Service.Create]'s,
// and NotFound. It stops the Ask turns that use the team's remote tools.
func (s *Service) Update(ctx context.Context, p access.Principal, id string, pt Patch) (_ Connection, err error) {
	o, err := s.open(ctx, p, ActionConnectionUpdate, id, access.RightManageConnections, nil)
	defer o.end(&err)
	if err != nil {
		return Connection{}, err
	}
	st, err := s.recs.store.Update(ctx, id, func(st *State) error {
		if err := s.apply(st, pt); err != nil {
			return err
		}
		if pt.ToolFocus != nil {
			st.Discovery.Shown, st.Discovery.Omitted = selectTools(st.Tools, st.ToolFocus, s.o.FullListLimit)
		}
		st.Version++
		st.UpdatedAt = s.o.Now().UTC()
		return nil
	})
	if err != nil {
		return Connection{}, err
	}
	s.recs.SaveCatalog(ctx, st.Connection)
	s.recs.Notify(ctx, st.TeamID)
	return st.Connection, nil
}

// Delete removes a connection and its tools. Datasets on it stay and
// answer Unavailable. It needs [access.RightManageConnections]; NotFound.
// It stops the Ask turns that use the team's remote tools.
func (s *Service) Delete(ctx context.Context, p access.Principal, id string) (err error) {
	o, err := s.open(ctx, p, ActionConnectionDelete, id, access.RightManageConnections, nil)
	defer o.end(&err)
	if err != nil {
		return err
	}
	if err := s.recs.store.Delete(ctx, id); err != nil {
		return err
	}
	s.recs.unpublish(ctx, id)
	s.recs.Notify(ctx, o.st.TeamID)
	return nil
}

// Get returns one connection; any member may read it ([access.RightRead]).
func (s *Service) Get(ctx context.Context, p access.Principal, id string) (Connection, error) {
	_, st, err := s.Load(ctx, p, id, access.RightRead)
	return st.Connection, err
}

// Listing is the team's connections as the connection page shows them:
// with whether the viewer may manage them, so a page shows its controls
// by the same rule the service enforces.
type Listing struct {
	Connections []Connection `json:"connections"`
	// CanManage says whether the viewer may create, edit, delete and
	// discover connections (access.RightManageConnections, decided on the
	// live principal).
	CanManage bool `json:"can_manage"`
}

// Listing returns the team's connections, by name, and whether p may
// manage them. Any member may read them.
func (s *Service) Listing(ctx context.Context, p access.Principal) (Listing, error) {
	live, err := s.begin(ctx, p, access.RightRead, access.Team(p.TeamID))
	if err != nil {
		return Listing{}, err
	}
	sts, err := s.recs.store.List(ctx, live.TeamID)
	if err != nil {
		return Listing{}, err
	}
	out := Listing{Connections: make([]Connection, len(sts)),
		CanManage: access.Allow(live, access.RightManageConnections, access.Team(live.TeamID)) == nil}
	for i, st := range sts {
		out.Connections[i] = st.Connection
	}
	return out, nil
}

// op is one audited operation on a connection, recorded as it ends.
type op struct {
	live    access.Principal
	st      State
	target  access.Entity
	details map[string]string
	end     func(errp *error)
}

// open starts action by p on connection id, audited with details (nil
// for none): it loads the connection and decides right. The caller
// defers o.end(&err) at once, so a refused or failed opening is recorded
// too:
//
//	o, err := s.open(ctx, p, ActionConnectionDiscover, id, access.RightManageConnections, nil)
//	defer o.end(&err)
func (s *Service) open(ctx context.Context, p access.Principal, action, id string, right access.Right, details map[string]string) (*op, error) {
	if details == nil {
		details = map[string]string{}
	}
	o := &op{details: details, target: access.Entity{Type: access.TypeConnection, ID: id}}
	o.end = s.audit.Track(ctx, p, action, &o.target, details)
	live, st, err := s.Load(ctx, p, id, right)
	if err != nil {
		return o, err
	}
	o.live, o.st, o.target = live, st, Ref(st.Connection)
	return o, nil
}
