package remote

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"log/slog"
	"slices"
	"strings"
	"time"
	"unicode"

	"github.com/askbi/askbi/access"
	"github.com/askbi/askbi/connections"
	"github.com/askbi/askbi/dataexec/mcpsource"
)

// ActionCall is the audit action of a call of a remote tool from Ask
// (access.AuditEntry.Action). Its details name the tool, never the
// arguments.
const ActionCall = access.ActionRemoteCall

// Options configures [Tools]. The zero value is valid; each zero field
// means its default.
type Options struct {
	// CallTimeout bounds one tool call from Ask, and each HTTP exchange of
	// a call (a dataset run also takes the executor's deadline). Default
	// 30 s.
	CallTimeout time.Duration
	// ListingMaxAge bounds the age of the tool listing a call is checked
	// against: before a call (Ask's Call, a dataset run) whose
	// connection's last listing is older, or whose server said its tool
	// list changed since (notifications/tools/list_changed, received
	// during any session), the tools are listed again and merged as
	// connections.Service.Discover does, so a widening change blocks the
	// call ("needs approval again") instead of running it on the old
	// classification. A listing that fails changes nothing and fails the
	// call, retryably. Default 60 s.
	ListingMaxAge time.Duration
	// MaxResultBytes caps one tool call's response. Default 8 MiB.
	MaxResultBytes int64
	// Audit records Ask's calls. Default none.
	Audit access.AuditSink
	// Logger logs internal errors. Default slog.Default().
	Logger *slog.Logger
	// Now is the clock. Default time.Now.
	Now func() time.Time
}

// Tools are the approved tools of a team's remote MCP connections, as
// the two consumers of remote tools see them: Ask ([Tools.ApprovedTools]
// and [Tools.Call], its ask.Remote; [Tools.Usable] for the resolver's
// connected sources) and datasets ([Tools.RunReadOnly] and
// [Tools.ReadOnlyTools], their [mcpsource.Tools]). They are the only code
// that calls a remote tool: each call re-reads the approval, checks the
// tool's definition against a fresh listing, and reaches the server with
// the connection's own credential ([connections.Credentials]: package
// signin). It is safe for concurrent use.
type Tools struct {
	conns  *connections.Service
	recs   *connections.Records
	store  connections.Store
	creds  connections.Credentials
	client *mcpsource.Client
	o      Options
	audit  *access.Auditor
}

// New returns the approved tools of the connections of conns, reached
// with the credentials of creds (the sign-in). opts may be nil.
func New(conns *connections.Service, creds connections.Credentials, opts *Options) *Tools {
	r := &Tools{conns: conns, recs: conns.Records(), creds: creds}
	r.store = r.recs.Store()
	if opts != nil {
		r.o = *opts
	}
	o := &r.o
	if o.CallTimeout <= 0 {
		o.CallTimeout = 30 * time.Second
	}
	if o.ListingMaxAge <= 0 {
		o.ListingMaxAge = 60 * time.Second
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
	r.audit = access.NewAuditor(o.Audit, o.Logger, o.Now)
	r.client = r.recs.Client().Bounded(o.CallTimeout)
	return r
}

var _ mcpsource.Tools = (*Tools)(nil)

// ApprovedTool is one usable remote tool of an active connection, as Ask
// offers it to the model.
type ApprovedTool struct {
	ConnectionID   string
	ConnectionName string
	// ModelName is <connection>__<tool>, sanitized to
	// ^[a-zA-Z0-9_-]{1,64}$, deterministic and unique in the team.
	ModelName string
	Tool      connections.Tool
}

// ApprovedTools implements ask.Remote: the usable tools of the ready
// connections of p's team, with their model-facing names, and a channel
// that is closed at the next change of the team's connections or
// approvals ([connections.Records.Changes]: this instance's, and the other
// instances' when the service publishes them). A turn that offers these
// tools stops when it closes; a call it makes re-reads the approval from
// the store in any case ([Tools.Call]).
func (r *Tools) ApprovedTools(ctx context.Context, p access.Principal) ([]ApprovedTool, <-chan struct{}, error) {
	live, err := r.team(ctx, p)
	if err != nil {
		return nil, nil, err
	}
	changes := r.recs.Changes(live.TeamID) // before reading, so no change is missed
	sts, err := r.store.List(ctx, live.TeamID)
	if err != nil {
		return nil, nil, err
	}
	var out []ApprovedTool
	for _, st := range sts {
		if !st.Ready() {
			continue
		}
		for _, t := range st.Tools {
			if t.Usable() {
				out = append(out, ApprovedTool{ConnectionID: st.ID, ConnectionName: st.Name, Tool: t})
			}
		}
	}
	modelNames(out)
	slices.SortFunc(out, func(a, b ApprovedTool) int { return strings.Compare(a.ModelName, b.ModelName) })
	return out, changes, nil
}

// Usable returns the connections of p's team that Ask can use now:
// ready ([connections.State.Ready]), with at least one approved usable
// tool. Inactive and unapproved connections are left out. It is what
// the resolver counts as connected (connresolve.MCPConnections).
func (r *Tools) Usable(ctx context.Context, p access.Principal) ([]connections.Connection, error) {
	live, err := r.team(ctx, p)
	if err != nil {
		return nil, err
	}
	sts, err := r.store.List(ctx, live.TeamID)
	if err != nil {
		return nil, err
	}
	var out []connections.Connection
	for _, st := range sts {
		if st.Ready() && slices.ContainsFunc(st.Tools, connections.Tool.Usable) {
			out = append(out, st.Connection)
		}
	}
	return out, nil
}

// AwaitingTools returns the connections of p's team that are ready
// ([connections.State.Ready]) but have no tool Ask may use yet: one
// step, allowing a tool, is left (connresolve names it). Errors: those
// of Usable.
func (r *Tools) AwaitingTools(ctx context.Context, p access.Principal) ([]connections.Connection, error) {
	live, err := r.team(ctx, p)
	if err != nil {
		return nil, err
	}
	sts, err := r.store.List(ctx, live.TeamID)
	if err != nil {
		return nil, err
	}
	var out []connections.Connection
	for _, st := range sts {
		if st.Ready() && !slices.ContainsFunc(st.Tools, connections.Tool.Usable) {
			out = append(out, st.Connection)
		}
	}
	return out, nil
}

// team passes p through the gate, as a reader of its team's connections.
func (r *Tools) team(ctx context.Context, p access.Principal) (access.Principal, error) {
	live, err := r.conns.Begin(ctx, p)
	if err != nil {
		return access.Principal{}, err
	}
	if err := access.Allow(live, access.RightRead, access.Team(live.TeamID)); err != nil {
		return access.Principal{}, err
	}
	return live, nil
}

// modelNames gives each approved tool its model-facing name,
// <connection>__<tool> sanitized to ^[a-zA-Z0-9_-]{1,64}$. It is
// deterministic: a name depends only on the connection's name and ID and
// the tool's name; a name that is too long or that two tools would share
// ends in a hash of connection ID and tool instead, for every tool that
// shares it, so adding a connection never renames another's tools except
// the colliding ones.
func modelNames(tools []ApprovedTool) {
	base := make([]string, len(tools))
	count := map[string]int{}
	for i, t := range tools {
		n := sanitize(t.ConnectionName) + "__" + sanitize(t.Tool.Name)
		if len(n) > 64 {
			n = hashed(n, t)
		}
		base[i] = n
		count[n]++
	}
	for i, t := range tools {
		if count[base[i]] > 1 {
			tools[i].ModelName = hashed(base[i], t)
		} else {
			tools[i].ModelName = base[i]
		}
	}
}

func hashed(n string, t ApprovedTool) string {
	sum := sha256.Sum256([]byte(t.ConnectionID + "/" + t.Tool.Name))
	h := hex.EncodeToString(sum[:4])
	return strings.TrimRight(n[:min(len(n), 64-9)], "_-") + "_" + h
}

// sanitize keeps [a-zA-Z0-9-] and turns every other run into "_".
func sanitize(s string) string {
	var b strings.Builder
	under := false
	for _, r := range s {
		if r < 128 && (unicode.IsLetter(r) || unicode.IsDigit(r) || r == '-') {
			b.WriteRune(r)
			under = false
		} else if !under {
			b.WriteByte('_')
			under = true
		}
	}
	out := strings.Trim(b.String(), "_")
	if out == "" {
		out = "x"
	}
	return out
}
