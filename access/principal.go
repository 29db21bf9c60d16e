package access

import (
	"context"
	"slices"
	"strings"
	"sync/atomic"

	"github.com/askbi/askbi"
)

// Role is a member's role in a team.
type Role string

// Roles, from most to least powerful.
const (
	RoleOwner  Role = "owner"
	RoleAdmin  Role = "admin"
	RoleEditor Role = "editor"
	RoleViewer Role = "viewer"
)

func (r Role) rank() int {
	switch r {
	case RoleOwner:
		return 4
	case RoleAdmin:
		return 3
	case RoleEditor:
		return 2
	case RoleViewer:
		return 1
	}
	return 0
}

// Valid reports whether r is one of the four roles.
func (r Role) Valid() bool { return r.rank() > 0 }

// AtLeast reports whether r is min or a more powerful role.
func (r Role) AtLeast(min Role) bool { return r.Valid() && r.rank() >= min.rank() }

// Scope limits what a token (API key or OAuth grant) may do. Session
// principals are not scope-limited.
type Scope string

// The four scopes. The write scopes (ScopeChartsPreview, ScopeDatasetsWrite)
// are never granted unless asked for.
const (
	ScopeDataRead      Scope = "data:read"
	ScopeDataRefresh   Scope = "data:refresh"
	ScopeChartsPreview Scope = "charts:preview"
	ScopeDatasetsWrite Scope = "datasets:write"
)

// AllScopes lists every scope in documented order.
var AllScopes = []Scope{ScopeDataRead, ScopeDataRefresh, ScopeChartsPreview, ScopeDatasetsWrite}

// ParseScopes validates, de-duplicates and orders scope names. An empty list,
// an empty name or an unknown name is InvalidArgument.
func ParseScopes(names []string) ([]Scope, error) {
	if len(names) == 0 {
		return nil, askbi.Errorf(askbi.InvalidArgument, "scopes: at least one scope is required")
	}
	seen := map[Scope]bool{}
	for _, n := range names {
		s := Scope(strings.TrimSpace(n))
		if !slices.Contains(AllScopes, s) {
			return nil, askbi.Errorf(askbi.InvalidArgument, "scopes: unknown scope %q", n)
		}
		seen[s] = true
	}
	var out []Scope
	for _, s := range AllScopes {
		if seen[s] {
			out = append(out, s)
		}
	}
	return out, nil
}

// AuthMethod says how a principal was authenticated.
type AuthMethod string

// Authentication methods.
const (
	AuthSession AuthMethod = "session"
	AuthAPIKey  AuthMethod = "api_key"
	AuthOAuth   AuthMethod = "oauth"
)

// token reports whether the method is scope-limited.
func (m AuthMethod) token() bool { return m == AuthAPIKey || m == AuthOAuth }

// Projects is a set of project IDs, or every project of the team.
type Projects struct {
	All bool     `json:"all"`
	IDs []string `json:"ids,omitempty"` // sorted, unique; ignored when All
}

// AllProjects is access to every project of a team, present and future.
func AllProjects() Projects { return Projects{All: true} }

// ProjectSet is access to the given projects only.
func ProjectSet(ids ...string) Projects {
	ids = slices.Clone(ids)
	slices.Sort(ids)
	return Projects{IDs: slices.Compact(ids)}
}

// Contains reports whether the set includes project id.
func (p Projects) Contains(id string) bool {
	if p.All {
		return true
	}
	_, ok := slices.BinarySearch(p.IDs, id)
	return ok
}

// Intersect returns the projects in both p and q.
func (p Projects) Intersect(q Projects) Projects {
	switch {
	case p.All:
		return q
	case q.All:
		return p
	}
	var ids []string
	for _, id := range p.IDs {
		if q.Contains(id) {
			ids = append(ids, id)
		}
	}
	return Projects{IDs: ids}
}

// Principal is who is acting: a user in one team, how they authenticated,
// and what their credential allows.
//
// A Principal built by an authenticator carries the credential's limits
// (Projects, Scopes). [Checker.Live] turns it into a live principal whose Role
// and Projects come from the Directory at that moment; only a live principal
// passes Allow.
type Principal struct {
	UserID string
	TeamID string
	// Role is the team role. Authenticators fill it in; Checker.Live
	// replaces it with the live role.
	Role Role
	// Projects is the project access. For a token it is the credential's
	// project set; Checker.Live narrows it to the live grants.
	Projects Projects
	// Scopes limit token principals (AuthAPIKey, AuthOAuth). Ignored for
	// AuthSession.
	Scopes []Scope
	Auth   AuthMethod
	// CredentialID is the API key or OAuth grant ID; empty for sessions.
	CredentialID string

	live      bool
	withdrawn map[Right][]Role // the Checker's CheckerOptions.Withdraw
	// read is the membership the authenticator read for this request,
	// for the first Checker.Live to take rather than read again.
	read *memberRead
}

// memberRead is a membership read from dir, taken once.
type memberRead struct {
	dir   Directory
	m     Membership
	taken atomic.Bool
}

// HasScope reports whether p may use s: always for sessions, and for tokens
// when the scope was granted.
func (p Principal) HasScope(s Scope) bool {
	return !p.Auth.token() || slices.Contains(p.Scopes, s)
}

// IsLive reports whether p came from [Checker.Live].
func (p Principal) IsLive() bool { return p.live }

type principalKey struct{}

// NewContext returns a context carrying p.
func NewContext(ctx context.Context, p Principal) context.Context {
	return context.WithValue(ctx, principalKey{}, p)
}

// FromContext returns the principal stored by [NewContext].
func FromContext(ctx context.Context) (Principal, bool) {
	p, ok := ctx.Value(principalKey{}).(Principal)
	return p, ok
}
