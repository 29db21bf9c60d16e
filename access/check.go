package access

import (
	"context"
	"reflect"
	"slices"

	"github.com/askbi/askbi"
)

// EntityType names a kind of workspace entity.
type EntityType string

// Entity types. TypeTeam stands for the team itself, for team-wide rights.
const (
	TypeDashboard  EntityType = "dashboard"
	TypeChart      EntityType = "chart"
	TypeDataset    EntityType = "dataset"
	TypeConnection EntityType = "connection"
	TypeTeam       EntityType = "team"
)

// Entity is a reference to something access is checked on. Every entity
// belongs to one team; ProjectID empty means team-wide (visible to every
// member, such as a team connection or the team itself).
type Entity struct {
	Type      EntityType
	ID        string
	TeamID    string
	ProjectID string
	// Private marks an entity that belongs to one member until it is
	// shared, such as a chart preview: only OwnerID reaches it, and a
	// private entity with no OwnerID reaches nobody (ReachedBy).
	Private bool   `json:",omitempty"`
	OwnerID string `json:",omitempty"`
}

// ReachedBy reports whether the owner rule lets user userID reach e: e is
// not private, or it is userID's. It is the part of Sees that a
// catalog's search applies for the caller (workspace.CatalogQuery.UserID).
func (e Entity) ReachedBy(userID string) bool {
	return !e.Private || e.OwnerID != "" && e.OwnerID == userID
}

// Right is something a principal may do to an entity.
type Right string

// Rights. Each one's rule is in rules below; see Allow.
const (
	// RightRead reads an entity and its current data.
	RightRead Right = "read"
	// RightRefresh reads fresh data, bypassing the cache.
	RightRefresh Right = "refresh"
	// RightPreviewChart creates a temporary chart from a dataset.
	RightPreviewChart Right = "preview_chart"
	// RightExplore inspects and previews a connection's raw source.
	RightExplore Right = "explore"
	// RightSaveDataset saves a new dataset from a source request.
	RightSaveDataset Right = "save_dataset"
	// RightEditDashboard changes a dashboard or places a chart on it.
	RightEditDashboard Right = "edit_dashboard"
	// RightManageConnections creates and changes connections.
	RightManageConnections Right = "manage_connections"
	// RightApproveTools approves remote MCP tools for Ask.
	RightApproveTools Right = "approve_tools"
	// RightUseAssistant uses Ask: its conversations, turns, approvals and
	// context search. Every role has it unless the host withdraws it
	// (CheckerOptions.Withdraw).
	RightUseAssistant Right = "use_assistant"
	// RightManageMemory lists and changes one's own explicit memory.
	RightManageMemory Right = "manage_memory"
	// RightCallMutatingTool approves (and so runs) an Ask call of an
	// allowed remote MCP tool that may change something: mutating, or of
	// unknown class. Below it the approval card says "Ask an admin".
	RightCallMutatingTool Right = "call_mutating_tool"
	// RightCallDestructiveTool approves an Ask call of an allowed remote
	// MCP tool marked destructive.
	RightCallDestructiveTool Right = "call_destructive_tool"
	// RightViewUsage reads one's own usage of the assistant and the MCP
	// server, and the budgets that apply to one (package usage).
	RightViewUsage Right = "view_usage"
	// RightViewTeamUsage reads every member's usage of the team: the
	// usage view's whole team. Below it a member sees their own row only.
	RightViewTeamUsage Right = "view_team_usage"
	// RightSetBudgets sets and removes the team's token budgets.
	RightSetBudgets Right = "set_budgets"
)

// rule is what one Right needs.
type rule struct {
	scopes []Scope // required for token principals
	role   Role    // minimum live role for every principal
	// tokenAdminAllProjects applies the private-alpha rule to tokens:
	// owner or admin, with a credential valid for all projects.
	tokenAdminAllProjects bool
	sessionOnly           bool
}

var rules = map[Right]rule{
	RightRead:              {scopes: []Scope{ScopeDataRead}, role: RoleViewer},
	RightRefresh:           {scopes: []Scope{ScopeDataRead, ScopeDataRefresh}, role: RoleViewer},
	RightPreviewChart:      {scopes: []Scope{ScopeDataRead, ScopeChartsPreview}, role: RoleViewer, tokenAdminAllProjects: true},
	RightExplore:           {scopes: []Scope{ScopeDataRead}, role: RoleEditor, tokenAdminAllProjects: true},
	RightSaveDataset:       {scopes: []Scope{ScopeDatasetsWrite}, role: RoleEditor, tokenAdminAllProjects: true},
	RightEditDashboard:     {scopes: []Scope{ScopeDatasetsWrite}, role: RoleEditor},
	RightManageConnections: {role: RoleAdmin, sessionOnly: true},
	RightApproveTools:      {role: RoleAdmin, sessionOnly: true},
	RightUseAssistant:      {role: RoleViewer, sessionOnly: true},
	RightManageMemory:      {role: RoleViewer, sessionOnly: true},
	// A remote call goes out with the team's credential for the tool's
	// server, whoever approves it: the role decides who may.
	RightCallMutatingTool:    {role: RoleEditor, sessionOnly: true},
	RightCallDestructiveTool: {role: RoleAdmin, sessionOnly: true},
	RightViewUsage:           {role: RoleViewer, sessionOnly: true},
	RightViewTeamUsage:       {role: RoleAdmin, sessionOnly: true},
	RightSetBudgets:          {role: RoleAdmin, sessionOnly: true},
}

// Scopes returns the scopes a token principal needs for r (none for a
// session-only right), so adapters can show only what a token can use.
func (r Right) Scopes() []Scope { return slices.Clone(rules[r].scopes) }

// Rights lists every right, in documented order.
var Rights = []Right{
	RightRead, RightRefresh, RightPreviewChart, RightExplore,
	RightSaveDataset, RightEditDashboard, RightManageConnections, RightApproveTools,
	RightUseAssistant, RightManageMemory, RightCallMutatingTool, RightCallDestructiveTool,
	RightViewUsage, RightViewTeamUsage, RightSetBudgets,
}

// CheckerOptions configures a Checker. The zero value is valid.
type CheckerOptions struct {
	// Withdraw takes rights away from roles, on top of the rules table:
	// {RightUseAssistant: {RoleViewer}} keeps viewers out of the
	// assistant. A withdrawn right answers Forbidden. Rights cannot be
	// granted beyond the table this way.
	Withdraw map[Right][]Role
}

// Checker makes every access decision askbi needs, against live membership.
// The chat and MCP paths both call it; there is no second copy of a check.
type Checker struct {
	dir      Directory
	withdraw map[Right][]Role
}

// NewChecker returns a Checker reading membership from dir. opts may be
// nil.
func NewChecker(dir Directory, opts *CheckerOptions) *Checker {
	c := &Checker{dir: dir}
	if opts != nil && len(opts.Withdraw) > 0 {
		c.withdraw = map[Right][]Role{}
		for r, roles := range opts.Withdraw {
			c.withdraw[r] = slices.Clone(roles)
		}
	}
	return c
}

// Live returns p as it stands now: its live role, and its project access
// narrowed to the live grants. A user who is no longer a member of p's team
// gets Forbidden.
func (c *Checker) Live(ctx context.Context, p Principal) (_ Principal, err error) {
	defer askbi.Wrap(&err, "access.Checker.Live")
	if p.UserID == "" || p.TeamID == "" {
		return Principal{}, askbi.Errorf(askbi.Unauthenticated, "no user or team")
	}
	if p.Auth.token() && p.CredentialID == "" {
		return Principal{}, askbi.Errorf(askbi.Unauthenticated, "token principal without a credential")
	}
	var m Membership
	if r := p.read; r != nil && sameDirectory(r.dir, c.dir) && r.taken.CompareAndSwap(false, true) {
		m = r.m // read by the request's authenticator a moment ago: once
	} else if m, err = c.dir.Member(ctx, p.TeamID, p.UserID); askbi.ErrorCode(err) == askbi.NotFound {
		return Principal{}, askbi.Errorf(askbi.Forbidden, "you are not a member of this team")
	} else if err != nil {
		return Principal{}, err
	}
	p.read = nil
	grants := m.Projects
	if m.Role.AtLeast(RoleAdmin) {
		grants = AllProjects()
	}
	p.Role = m.Role
	if p.Auth.token() {
		p.Projects = p.Projects.Intersect(grants)
	} else {
		p.Projects = grants
	}
	p.live = true
	p.withdrawn = c.withdraw
	return p, nil
}

// Authenticated is what an authenticator returns for token principal p
// (an API key's, an OAuth grant's): p with its owner's role read now,
// and Forbidden when the owner is no longer a member. It is not live: the
// request's [Gate.Begin] still passes it (and charges its rate budget),
// taking this read instead of reading the membership again; any later
// Live of the same principal reads the directory.
func (c *Checker) Authenticated(ctx context.Context, p Principal) (Principal, error) {
	return readMember(ctx, c.dir, p)
}

// readMember is Authenticated on dir.
func readMember(ctx context.Context, dir Directory, p Principal) (Principal, error) {
	m, err := dir.Member(ctx, p.TeamID, p.UserID)
	if askbi.ErrorCode(err) == askbi.NotFound {
		return Principal{}, askbi.Errorf(askbi.Forbidden, "you are not a member of this team")
	}
	if err != nil {
		return Principal{}, err
	}
	p.Role, p.read = m.Role, &memberRead{dir: dir, m: m}
	return p, nil
}

// sameDirectory reports whether a and b are one Directory value.
func sameDirectory(a, b Directory) bool {
	t := reflect.TypeOf(a)
	return t == reflect.TypeOf(b) && t != nil && t.Comparable() && a == b
}

// Can reports whether p may exercise right on e, reading live membership.
// It returns nil, or an error with code NotFound (e is outside p's reach),
// ScopeRequired, Forbidden, or Unauthenticated.
func (c *Checker) Can(ctx context.Context, p Principal, right Right, e Entity) error {
	live, err := c.Live(ctx, p)
	if err != nil {
		return err
	}
	return Allow(live, right, e)
}

// Sees reports whether live principal p can see e at all: same team, e
// is team-wide or in one of p's projects, and e is not another member's
// private entity ([Entity.ReachedBy]). An entity p cannot see answers
// NotFound, like an unknown one.
func Sees(p Principal, e Entity) bool {
	return p.live && e.TeamID == p.TeamID && (e.ProjectID == "" || p.Projects.Contains(e.ProjectID)) && e.ReachedBy(p.UserID)
}

// Allow decides right on e for a live principal (from [Checker.Live]), so a
// caller checking many entities reads membership once. Order: reach
// (NotFound), then scope (ScopeRequired), then role and credential
// (Forbidden).
func Allow(p Principal, right Right, e Entity) error {
	const op = "access.Allow"
	if !p.live {
		return &askbi.Error{Code: askbi.Internal, Op: op, Message: "access check on an unresolved principal"}
	}
	r, ok := rules[right]
	if !ok {
		return &askbi.Error{Code: askbi.Internal, Op: op, Message: "unknown right " + string(right)}
	}
	if !Sees(p, e) {
		return &askbi.Error{Code: askbi.NotFound, Op: op, Message: string(e.Type) + " not found"}
	}
	if p.Auth.token() {
		if r.sessionOnly {
			return &askbi.Error{Code: askbi.Forbidden, Op: op, Message: "this action is only available when signed in to the product"}
		}
		for _, s := range r.scopes {
			if !p.HasScope(s) {
				return &askbi.Error{Code: askbi.ScopeRequired, Op: op, Message: "this action requires the " + string(s) + " scope"}
			}
		}
		if r.tokenAdminAllProjects && (!p.Role.AtLeast(RoleAdmin) || !p.Projects.All) {
			return &askbi.Error{Code: askbi.Forbidden, Op: op, Message: "this action requires a team owner or admin with an all-project key"}
		}
	}
	if !p.Role.AtLeast(r.role) {
		return &askbi.Error{Code: askbi.Forbidden, Op: op, Message: "this action requires the " + string(r.role) + " role or above"}
	}
	if slices.Contains(p.withdrawn[right], p.Role) {
		return &askbi.Error{Code: askbi.Forbidden, Op: op, Message: "this is not available to the " + string(p.Role) + " role in this team"}
	}
	return nil
}
