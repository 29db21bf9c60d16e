package connresolve

import (
	"context"
	"crypto/rand"
	"errors"
	"log/slog"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/askbi/askbi"
	"github.com/askbi/askbi/access"
	"github.com/askbi/askbi/dataexec"
	"github.com/askbi/askbi/dataexec/mcpsource"
	"github.com/askbi/askbi/internal/outbound"
	"github.com/askbi/askbi/seal"
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
	ActionRemoteCall         = "connection.remote_call"
)

// PageSize is how many tools one page of Tools lists.
const PageSize = 10

// Options configures a Service. The zero value is valid; each zero field
// means its default.
type Options struct {
	// Catalog is where connections are published, so that search, the
	// context picker and the data executor know them. Default none: the
	// host's catalog must learn them itself.
	Catalog dataexec.ConnectionWriter
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
	// DiscoveryTimeout bounds one discovery, all pages. Default 30 s.
	DiscoveryTimeout time.Duration
	// CallTimeout bounds one tool call from Ask. Default 30 s. (Dataset
	// runs take the executor's deadline.)
	CallTimeout time.Duration
	// ListingMaxAge bounds the age of the tool listing a call is checked
	// against: before a call (Ask's Call, a dataset run) whose
	// connection's last listing is older, or whose server said its tool
	// list changed since (notifications/tools/list_changed, received
	// during any session), the tools are listed again and merged as
	// Discover does, so a widening change blocks the call ("needs
	// approval again") instead of running it on the old classification.
	// A listing that fails changes nothing and fails the call, retryably.
	// Default 60 s.
	ListingMaxAge time.Duration
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
	// MaxResultBytes caps one tool call's response. Default 8 MiB.
	MaxResultBytes int64
	// OAuth configures the sign-in of OAuth connections. Default off
	// (see OAuthOptions).
	OAuth OAuthOptions
	// Publish, when set, tells the other instances sharing the store
	// that a connection of team teamID, or its tools' approvals, changed,
	// once the change is stored (pgstore.ConnectionChanges): each passes
	// it to its Service's Changed, which stops their Ask turns that use
	// the team's remote tools, as this instance's own stop. A failure is
	// logged; a call those turns make is still checked against the
	// stored approval. Default nil: one process.
	Publish func(ctx context.Context, teamID string) error
	// Audit records connection changes, discoveries, approvals, remote
	// calls and OAuth sign-ins. Default none.
	Audit access.AuditSink
	// Logger logs internal errors. Default slog.Default().
	Logger *slog.Logger
	// Now is the clock. Default time.Now.
	Now func() time.Time
}

// Service manages a team's remote MCP connections: creating, changing
// and deleting them (access.RightManageConnections), discovering their
// tools within bounds, approving tools one by one or all at once
// (access.RightApproveTools), and using the approved ones for Ask and
// datasets. Every method takes the request's principal and passes it
// through the gate (a live principal passes uncharged). It is safe for
// concurrent use.
type Service struct {
	store Store
	keys  seal.Keyring
	gate  *access.Gate
	o     Options
	audit *access.Auditor
	// client makes every remote call (discovery, tool calls, OAuth)
	// under the outbound policy, made once so that calls to a server
	// reuse its connections.
	client *mcpsource.Client

	mu      sync.Mutex
	changed map[string]chan struct{} // per team; closed on a change

	refreshing refreshLocks
}

// NewService returns a service over store, sealing tokens with keys.
// opts may be nil.
func NewService(store Store, keys seal.Keyring, gate *access.Gate, opts *Options) *Service {
	s := &Service{store: store, keys: keys, gate: gate, changed: map[string]chan struct{}{}}
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
	if o.CallTimeout <= 0 {
		o.CallTimeout = 30 * time.Second
	}
	if o.ListingMaxAge <= 0 {
		o.ListingMaxAge = 60 * time.Second
	}
	if o.MaxListBytes <= 0 {
		o.MaxListBytes = 8 << 20
	}
	if o.MaxResultBytes <= 0 {
		o.MaxResultBytes = 8 << 20
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	s.audit = access.NewAuditor(o.Audit, o.Logger, o.Now)
	s.oauthDefaults()
	s.client = mcpsource.NewClient(&mcpsource.ClientOptions{DenyLoopback: o.DenyLoopback, AllowPrivateNetworks: o.AllowPrivateNetworks,
		Timeout: max(o.DiscoveryTimeout, o.CallTimeout), Resolver: o.Resolver})
	return s
}

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
	// (package connresolve), e.g. "PostHog"; "" for one set up by hand.
	Provider string
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

func (s *Service) outboundOptions() *outbound.Options {
	return &outbound.Options{DenyLoopback: s.o.DenyLoopback, AllowPrivate: s.o.AllowPrivateNetworks}
}

// begin passes the gate and checks right on e.
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

// load reads a connection and decides right on it; another team's
// connection is NotFound, as an unknown one.
func (s *Service) load(ctx context.Context, p access.Principal, id string, right access.Right) (access.Principal, State, error) {
	live, err := s.gate.Begin(ctx, p)
	if err != nil {
		return access.Principal{}, State{}, err
	}
	if id == "" || len(id) > 100 {
		return access.Principal{}, State{}, errNotFound()
	}
	st, err := s.store.Get(ctx, id)
	if err != nil {
		return access.Principal{}, State{}, err
	}
	if err := access.Allow(live, right, ref(st.Connection)); err != nil {
		if askbi.ErrorCode(err) == askbi.NotFound {
			return access.Principal{}, State{}, errNotFound()
		}
		return access.Principal{}, State{}, err
	}
	return live, st, nil
}

func ref(c Connection) access.Entity {
	return access.Entity{Type: access.TypeConnection, ID: c.ID, TeamID: c.TeamID}
}

func tokenAD(teamID, id string) []byte { return seal.Context("askbi.mcp.token.v1", teamID, id) }

func newID() string { return "conn_" + strings.ToLower(rand.Text()[:16]) }

// Create stores a new connection, inactive until its first discovery. It
// needs access.RightManageConnections. Errors: InvalidArgument (the
// message names the field: a URL with user information, a non-HTTP scheme,
// a metadata, link-local or private address, a credential in the query;
// a bad name or token), Conflict for a name the team uses, Forbidden.
// Nothing is stored on error. The token is sealed; it is never returned.
func (s *Service) Create(ctx context.Context, p access.Principal, in Input) (Connection, error) {
	return s.create(ctx, p, in, "")
}

// create is Create, noting the conversation the connection is set up
// from.
func (s *Service) create(ctx context.Context, p access.Principal, in Input, conversationID string) (_ Connection, err error) {
	target := access.Entity{Type: access.TypeConnection}
	details := map[string]string{}
	defer s.audit.Track(ctx, p, ActionConnectionCreate, &target, details)(&err)
	live, err := s.begin(ctx, p, access.RightManageConnections, access.Team(p.TeamID))
	if err != nil {
		return Connection{}, err
	}
	target.TeamID = live.TeamID
	if utf8.RuneCountInString(in.Provider) > 100 || !utf8.ValidString(in.Provider) {
		return Connection{}, askbi.Errorf(askbi.InvalidArgument, "provider: at most 100 characters")
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
		Provider: strings.TrimSpace(in.Provider)}, SetupConversation: conversationID}}
	if err := s.apply(&st, Patch{Name: &in.Name, URL: &in.URL, Auth: &in.Auth, Token: &in.Token, ToolFocus: &in.ToolFocus}); err != nil {
		return Connection{}, err
	}
	target.ID = st.ID
	details["auth"] = string(st.Auth)
	if err := s.store.Create(ctx, st); err != nil {
		return Connection{}, err
	}
	s.publish(ctx, st.Connection)
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
		u, err := outbound.CheckURL(strings.TrimSpace(*pt.URL), s.outboundOptions())
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
			box, err := seal.Seal(s.keys, []byte(*pt.Token), tokenAD(st.TeamID, st.ID))
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
// It needs access.RightManageConnections; errors as Create's, and
// NotFound. It stops the Ask turns that use the team's remote tools.
func (s *Service) Update(ctx context.Context, p access.Principal, id string, pt Patch) (_ Connection, err error) {
	o, err := s.open(ctx, p, ActionConnectionUpdate, id, access.RightManageConnections, nil)
	defer o.end(&err)
	if err != nil {
		return Connection{}, err
	}
	st, err := s.store.Update(ctx, id, func(st *State) error {
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
	s.publish(ctx, st.Connection)
	s.notify(ctx, st.TeamID)
	return st.Connection, nil
}

// Delete removes a connection and its tools. Datasets on it stay and
// answer Unavailable. It needs access.RightManageConnections; NotFound.
// It stops the Ask turns that use the team's remote tools.
func (s *Service) Delete(ctx context.Context, p access.Principal, id string) (err error) {
	o, err := s.open(ctx, p, ActionConnectionDelete, id, access.RightManageConnections, nil)
	defer o.end(&err)
	if err != nil {
		return err
	}
	st := o.st
	if err := s.store.Delete(ctx, id); err != nil {
		return err
	}
	if s.o.Catalog != nil {
		if err := s.o.Catalog.DeleteConnection(context.WithoutCancel(ctx), id); err != nil {
			s.o.Logger.Error("mcpsource: catalog delete", "connection", id, "err", err)
		}
	}
	s.notify(ctx, st.TeamID)
	return nil
}

// Get returns one connection; any member may read it (access.RightRead).
func (s *Service) Get(ctx context.Context, p access.Principal, id string) (Connection, error) {
	_, st, err := s.load(ctx, p, id, access.RightRead)
	return st.Connection, err
}

// List returns the team's connections, by name.
func (s *Service) List(ctx context.Context, p access.Principal) ([]Connection, error) {
	l, err := s.Listing(ctx, p)
	return l.Connections, err
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
	sts, err := s.store.List(ctx, live.TeamID)
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

// Discover lists the server's tools within the bounds (time, pages,
// bytes, count) and merges them into the connection under its lock:
// approvals are kept, new tools start off, a widening change turns an
// approved tool off until it is approved again, a description change is
// recorded. Tools that fail the schema safety checks are excluded and
// counted. More than 250 usable tools are matched against the tool focus
// (focus, when given, replaces the saved one). The first success makes
// the connection active.
//
// More than MaxTools tools are not a failure: the approved ones and the
// best matches of the focus are kept, the rest counted
// (Discovery.LeftOut, Unread).
//
// It needs access.RightManageConnections. On failure (an unreachable
// server, a bad token: distinct codes and messages; TooLarge for a
// response over the cap; InvalidResult when no listed tool is usable)
// the previous tool list and approvals stay, the failure is recorded on
// the connection, and the error is returned.
func (s *Service) Discover(ctx context.Context, p access.Principal, id string, focus *string) (_ Connection, err error) {
	o, err := s.open(ctx, p, ActionConnectionDiscover, id, access.RightManageConnections, map[string]string{})
	defer o.end(&err)
	if err != nil {
		return Connection{}, err
	}
	cur := o.st
	details := o.details
	if focus != nil && utf8.RuneCountInString(*focus) > 500 {
		return Connection{}, askbi.Errorf(askbi.InvalidArgument, "tool_focus: at most 500 characters")
	}
	f := cur.ToolFocus
	if focus != nil {
		f = strings.TrimSpace(*focus)
	}
	l, derr := s.discover(ctx, cur, f)
	usable := 0
	if derr == nil {
		usable, derr = usableOf(l)
	}
	now := s.o.Now().UTC()
	if derr != nil {
		s.updateQuietly(ctx, id, "record discovery failure", func(st *State) error {
			st.Discovery.Error = errorInfo(derr, now)
			return nil
		})
		return Connection{}, derr
	}
	var changed bool
	st, err := s.store.Update(ctx, id, func(st *State) error {
		if st.URL != cur.URL {
			// The URL changed while we listed: this list is of the old one.
			return askbi.Errorf(askbi.Conflict, "the connection's URL changed during discovery; discover again")
		}
		if focus != nil {
			st.ToolFocus = f
		}
		changed = s.applyDiscovery(st, l, usable, now)
		return nil
	})
	if err != nil {
		return Connection{}, err
	}
	details["tools"], details["excluded"] = strconv.Itoa(st.Discovery.Tools), strconv.Itoa(st.Discovery.Excluded)
	if st.Discovery.LeftOut > 0 {
		details["left_out"] = strconv.Itoa(st.Discovery.LeftOut)
	}
	s.publish(ctx, st.Connection)
	if changed {
		s.notify(ctx, st.TeamID)
	}
	return st.Connection, nil
}

// updateQuietly is an Update that outlives the request and that nobody
// waits on (a failure recorded, a registration kept): fn may decline
// with errNotOAuth or errNewerGrant, a connection deleted meanwhile is
// no error, and any other failure is logged as what. It reports whether
// the update was written.
func (s *Service) updateQuietly(ctx context.Context, id, what string, fn func(*State) error) (State, bool) {
	st, err := s.store.Update(context.WithoutCancel(ctx), id, fn)
	if err != nil && !errors.Is(err, errNotOAuth) && !errors.Is(err, errNewerGrant) && askbi.ErrorCode(err) != askbi.NotFound {
		s.o.Logger.Error("mcpsource: "+what, "connection", id, "err", err)
	}
	return st, err == nil
}

// errorInfo is err as a connection shows it: its code and safe message.
func errorInfo(err error, at time.Time) *ErrorInfo {
	return &ErrorInfo{Code: askbi.ErrorCode(err), Message: askbi.ErrorMessage(err), At: at}
}

// usableOf counts the usable tools of a discovery; none is an
// InvalidResult that says whether the server listed no tools or none
// that passed the schema safety checks.
func usableOf(l listing) (int, error) {
	usable := 0
	for _, t := range l.found {
		if t.Excluded == "" {
			usable++
		}
	}
	switch {
	case usable > 0:
		return usable, nil
	case len(l.found) == 0 && l.invalid == 0:
		return 0, askbi.Errorf(askbi.InvalidResult, "the MCP server lists no tools")
	}
	return 0, askbi.Errorf(askbi.InvalidResult, "none of the server's %d tools passed the schema safety checks, so none can be used", len(l.found)+l.invalid)
}

// applyDiscovery puts a successful discovery on st (under its lock): the
// tools merged, the counts, active, a new version. It reports whether
// the tools changed.
func (s *Service) applyDiscovery(st *State, l listing, usable int, now time.Time) bool {
	changed := merge(st, l.found, st.ToolFocus, s.o.FullListLimit)
	st.Discovery.At, st.Discovery.Error = now, nil
	st.Discovery.Tools, st.Discovery.Excluded = usable, l.invalid+len(l.found)-usable
	st.Discovery.LeftOut, st.Discovery.Unread, st.Discovery.Stale = l.leftOut, l.unread, l.listChanged
	st.Active = true
	st.Version++
	st.UpdatedAt = now
	return changed
}

// discover lists and inspects the tools of st's server, keeping at most
// MaxTools of them: those approved before, then the best matches of
// focus.
func (s *Service) discover(ctx context.Context, st State, focus string) (listing, error) {
	cred, err := s.credential(ctx, st)
	if err != nil {
		return listing{}, err
	}
	return s.discoverWith(ctx, st, focus, cred)
}

// discoverWith lists the tools at st's URL with cred.
func (s *Service) discoverWith(ctx context.Context, st State, focus string, cred mcpsource.Credential) (listing, error) {
	ctx, cancel := context.WithTimeout(ctx, s.o.DiscoveryTimeout)
	defer cancel()
	se, err := s.client.Open(ctx, st.URL, cred, s.o.MaxListBytes)
	if err != nil {
		return listing{}, err
	}
	approved := map[string]bool{}
	for _, t := range st.Tools {
		if t.Access.ApprovedSchemaHash != "" {
			approved[t.Name] = true
		}
	}
	k := newKeeper(s.o.MaxTools, focus, approved)
	unread, err := se.ListTools(ctx, s.o.MaxPages, s.o.MaxListBytes, func(page []*mcp.Tool) { k.add(page, &s.o) })
	se.Close()
	if err != nil {
		return listing{}, err
	}
	l := k.result(unread)
	l.listChanged = se.ListChanged()
	return l, nil
}

// credential is how a session to st's server authenticates: its bearer
// token, or for OAuth its tokens (refreshed first when they expire).
func (s *Service) credential(ctx context.Context, st State) (mcpsource.Credential, error) {
	switch {
	case st.Auth == AuthOAuth:
		o, err := s.oauthSession(ctx, st)
		if err != nil {
			return mcpsource.Credential{}, err
		}
		return mcpsource.Credential{OAuth: o}, nil
	case !st.HasToken:
		return mcpsource.Credential{}, nil
	}
	b, err := seal.Open(s.keys, st.Token, tokenAD(st.TeamID, st.ID))
	if err != nil {
		return mcpsource.Credential{}, dataexec.Fail(dataexec.FailSignIn, askbi.Forbidden, err, "the connection's token cannot be read with the current keys; enter it again")
	}
	return mcpsource.Credential{Bearer: string(b)}, nil
}

// ToolQuery selects a page of a connection's tools.
type ToolQuery struct {
	// Search matches name, title and description (case-insensitive).
	Search string
	// Hint keeps tools of one class: read_only, mutating, destructive or
	// unknown.
	Hint dataexec.Class
	// Page is the page to return, from 1. Default 1.
	Page int
}

// ToolView is one tool as the connection page shows it. Description and
// title are the remote server's, untrusted.
type ToolView struct {
	Name        string         `json:"name"`
	Title       string         `json:"title,omitempty"`
	Description string         `json:"description,omitempty"`
	Class       dataexec.Class `json:"class"`
	State       ToolState      `json:"state"`
	// Reason says why a tool is blocked, excluded or needs approval again.
	Reason             string `json:"reason,omitempty"`
	DescriptionChanged bool   `json:"description_changed,omitempty"`
	// Action is what the viewer can do: "allow" or "disallow" (admins),
	// "ask_admin" (others, for a tool that is not allowed), or "" (none).
	Action string `json:"action,omitempty"`
}

// ToolPage is one page of a connection's tools.
type ToolPage struct {
	Tools      []ToolView `json:"tools"`
	Page       int        `json:"page"`
	Pages      int        `json:"pages"`
	Total      int        `json:"total"` // after the filters
	PageSize   int        `json:"page_size"`
	CanApprove bool       `json:"can_approve"`
	// ToolFocus is set only when tools were omitted from the selection
	// or left out of the discovery.
	ToolFocus *string `json:"tool_focus,omitempty"`
	Omitted   int     `json:"omitted"`
	Excluded  int     `json:"excluded"`
	// LeftOut and Unread are the discovery's (Discovery.LeftOut).
	LeftOut int  `json:"left_out"`
	Unread  bool `json:"unread,omitempty"`
}

// Tools returns one page (PageSize) of a connection's shown tools, the
// search and hint filters applied to the whole list before paging. Any
// member may read it; CanApprove says whether the viewer may change
// access (others see "ask_admin").
func (s *Service) Tools(ctx context.Context, p access.Principal, id string, q ToolQuery) (ToolPage, error) {
	live, st, err := s.load(ctx, p, id, access.RightRead)
	if err != nil {
		return ToolPage{}, err
	}
	if q.Hint != "" && !slices.Contains(dataexec.Classes, q.Hint) {
		return ToolPage{}, askbi.Errorf(askbi.InvalidArgument, "hint: must be read_only, mutating, destructive or unknown")
	}
	if q.Page <= 0 {
		q.Page = 1
	}
	canApprove := access.Allow(live, access.RightApproveTools, ref(st.Connection)) == nil
	search := strings.ToLower(strings.TrimSpace(q.Search))
	var list []ToolView
	for _, t := range st.Tools {
		if !t.Selected && t.Excluded == "" && t.Present {
			continue
		}
		if q.Hint != "" && t.Class != q.Hint {
			continue
		}
		if search != "" && !strings.Contains(strings.ToLower(t.Name+"\n"+t.Title+"\n"+t.Description), search) {
			continue
		}
		list = append(list, view(t, canApprove))
	}
	page := ToolPage{Page: q.Page, Total: len(list), PageSize: PageSize, CanApprove: canApprove,
		Omitted: st.Discovery.Omitted, Excluded: st.Discovery.Excluded, LeftOut: st.Discovery.LeftOut, Unread: st.Discovery.Unread,
		Tools: []ToolView{}}
	page.Pages = (len(list) + PageSize - 1) / PageSize
	if from := (q.Page - 1) * PageSize; from < len(list) {
		page.Tools = list[from:min(from+PageSize, len(list))]
	}
	if st.Discovery.Omitted > 0 || st.Discovery.LeftOut > 0 || st.Discovery.Unread {
		f := st.ToolFocus
		page.ToolFocus = &f
	}
	return page, nil
}

func view(t Tool, canApprove bool) ToolView {
	v := ToolView{Name: t.Name, Title: t.Title, Description: t.Description, Class: t.Class, State: t.State(),
		DescriptionChanged: t.Access.DescriptionChanged}
	switch v.State {
	case ToolBlocked:
		v.Reason = "marked destructive: it cannot be allowed"
	case ToolExcluded:
		v.Reason = t.Excluded
	case ToolReapprove:
		v.Reason = t.Access.Reapprove + "; approve it again to use it"
	case ToolRemoved:
		v.Reason = "the server no longer lists it"
	}
	switch {
	case v.State == ToolAllowed && canApprove:
		v.Action = "disallow"
	case (v.State == ToolOff || v.State == ToolReapprove) && canApprove:
		v.Action = "allow"
	case v.State == ToolOff || v.State == ToolReapprove:
		v.Action = "ask_admin"
	}
	return v
}

// SetAccess turns one tool's access on or off, for Ask and datasets
// together, under the connection's lock. It needs
// access.RightApproveTools (a person: session principals, owner or
// admin; the model has no tool that reaches it). Allowing records what
// was approved (class, schema, description). Errors: NotFound (also an
// unknown tool), Forbidden, and Conflict for a tool that cannot be
// allowed (destructive, excluded, removed). It stops the Ask turns that
// use the team's remote tools.
func (s *Service) SetAccess(ctx context.Context, p access.Principal, id, tool string, allowed bool) (_ ToolView, err error) {
	o, err := s.open(ctx, p, ActionToolAccess, id, access.RightApproveTools, map[string]string{"tool": capRunes(tool, 128), "allowed": strconv.FormatBool(allowed)})
	defer o.end(&err)
	if err != nil {
		return ToolView{}, err
	}
	live, cur := o.live, o.st
	var out Tool
	_, err = s.store.Update(ctx, id, func(st *State) error {
		t, ok := st.Tool(tool)
		if !ok {
			return askbi.Errorf(askbi.NotFound, "tool not found")
		}
		if allowed {
			if err := allow(t, live.UserID, s.o.Now().UTC()); err != nil {
				return err
			}
		} else {
			t.Access.Allowed, t.Access.Reapprove = false, ""
		}
		out = *t
		st.Version++
		st.UpdatedAt = s.o.Now().UTC()
		return nil
	})
	if err != nil {
		return ToolView{}, err
	}
	s.notify(ctx, cur.TeamID)
	return view(out, true), nil
}

func allow(t *Tool, by string, now time.Time) error {
	switch t.State() {
	case ToolBlocked:
		return askbi.Errorf(askbi.Conflict, "this tool is marked destructive and cannot be allowed")
	case ToolExcluded:
		return askbi.Errorf(askbi.Conflict, "this tool failed the schema safety checks (%s) and cannot be allowed", t.Excluded)
	case ToolRemoved:
		return askbi.Errorf(askbi.Conflict, "the server no longer lists this tool")
	}
	t.Access = Access{Allowed: true, ApprovedClass: t.Class, ApprovedSchemaHash: t.SchemaHash,
		ApprovedDescriptionHash: t.DescriptionHash, ApprovedBy: by, ApprovedAt: now}
	return nil
}

// AllowAllResult is what AllowAll did.
type AllowAllResult struct {
	Allowed int `json:"allowed"` // tools newly allowed
	Skipped int `json:"skipped"` // destructive, unknown, excluded or removed tools left as they were
}

// AllowAll allows every shown tool across all pages and filters, except
// those marked destructive or with unknown annotations (treated as
// destructive) and those that cannot be allowed, in one change under the
// connection's lock. It needs access.RightApproveTools.
func (s *Service) AllowAll(ctx context.Context, p access.Principal, id string) (_ AllowAllResult, err error) {
	o, err := s.open(ctx, p, ActionToolAllowAll, id, access.RightApproveTools, map[string]string{})
	defer o.end(&err)
	if err != nil {
		return AllowAllResult{}, err
	}
	live, cur := o.live, o.st
	details := o.details
	var res AllowAllResult
	_, err = s.store.Update(ctx, id, func(st *State) error {
		res = AllowAllResult{}
		now := s.o.Now().UTC()
		for i := range st.Tools {
			t := &st.Tools[i]
			switch {
			case !t.Selected && t.Present && t.Excluded == "":
				continue // not shown: Tool focus left it out
			case t.Usable():
				continue
			case t.Class == dataexec.ClassUnknown || t.State() != ToolOff && t.State() != ToolReapprove:
				res.Skipped++
				continue
			}
			if allow(t, live.UserID, now) == nil {
				res.Allowed++
			}
		}
		st.Version++
		st.UpdatedAt = now
		return nil
	})
	if err != nil {
		return AllowAllResult{}, err
	}
	details["allowed"], details["skipped"] = strconv.Itoa(res.Allowed), strconv.Itoa(res.Skipped)
	s.notify(ctx, cur.TeamID)
	return res, nil
}

// publish writes c to the host's catalog, as a team-wide connection.
func (s *Service) publish(ctx context.Context, c Connection) {
	if s.o.Catalog == nil {
		return
	}
	dc := dataexec.Connection{ID: c.ID, TeamID: c.TeamID, Name: c.Name, Type: mcpsource.TypeMCP, Active: c.Active,
		CreatedAt: c.CreatedAt, UpdatedAt: c.UpdatedAt}
	if err := s.o.Catalog.SaveConnection(context.WithoutCancel(ctx), dc); err != nil {
		s.o.Logger.Error("mcpsource: catalog save", "connection", c.ID, "err", err)
	}
}

// SyncCatalog publishes every stored connection to the catalog, for a
// host whose catalog does not keep them itself (such as the reference
// server's in-memory catalog, seeded at each start) or may have missed a
// change (a catalog write that failed after the connection was saved).
func (s *Service) SyncCatalog(ctx context.Context) error {
	if s.o.Catalog == nil {
		return nil
	}
	sts, err := s.store.List(ctx, "")
	if err != nil {
		return err
	}
	for _, st := range sts {
		s.publish(ctx, st.Connection)
	}
	return nil
}

// Changes returns a channel that is closed at the next change of a
// connection of team teamID, or of its tools' approvals: made through
// this Service, or through another sharing its store and told by Changed
// (see Options.Publish).
func (s *Service) Changes(teamID string) <-chan struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	ch, ok := s.changed[teamID]
	if !ok {
		ch = make(chan struct{})
		s.changed[teamID] = ch
	}
	return ch
}

// notify closes the Changes channel of team teamID after a change
// stored through this Service, and publishes the change to the other
// instances (Options.Publish).
func (s *Service) notify(ctx context.Context, teamID string) {
	s.Changed(teamID)
	if s.o.Publish == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	if err := s.o.Publish(ctx, teamID); err != nil {
		s.o.Logger.Warn("connresolve: the change could not be published to the other instances; their turns run on, each call checked against the stored approval",
			"team", teamID, "err", err)
	}
}

// Changed closes the Changes channel of team teamID, so the Ask turns
// that use its remote tools stop: call it when another instance sharing
// the store published a change (Options.Publish). An empty teamID means
// every team, for changes that may have been missed.
func (s *Service) Changed(teamID string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for team, ch := range s.changed {
		if teamID == "" || team == teamID {
			close(ch)
			delete(s.changed, team)
		}
	}
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
	live, st, err := s.load(ctx, p, id, right)
	if err != nil {
		return o, err
	}
	o.live, o.st, o.target = live, st, ref(st.Connection)
	return o, nil
}
