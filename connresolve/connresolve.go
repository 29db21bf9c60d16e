package connresolve

import (
	"context"
	"net/url"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/askbi/askbi"
	"github.com/askbi/askbi/access"
	"github.com/askbi/askbi/internal/outbound"
)

// Capability is a kind of data a question needs.
type Capability string

// Capabilities.
const (
	ProductAnalytics Capability = "product_analytics" // events, funnels, retention
	WebAnalytics     Capability = "web_analytics"     // pageviews, visitors, referrers
	Database         Capability = "database"          // tables queried with SQL
	CRM              Capability = "crm"               // accounts, deals, contacts
	IssueTracking    Capability = "issue_tracking"    // issues, projects, cycles
	ErrorTracking    Capability = "error_tracking"    // errors, releases
)

// Capabilities lists every capability in documented order.
var Capabilities = []Capability{ProductAnalytics, WebAnalytics, Database, CRM, IssueTracking, ErrorTracking}

// Provider is a verified remote MCP provider (see Verified).
type Provider struct {
	Name         string   // the official name, e.g. "PostHog"
	Aliases      []string // lower-case names it is asked for by
	Capabilities []Capability
	MCPURL       string // the official remote endpoint
	OAuth        bool   // signs in with OAuth (discovery, registration, PKCE)
	Docs         string // the vendor's setup documentation
	Notes        string // safe setup notes for the user
}

// NativeSource is a source type the host has installed, such as its
// PostgreSQL connector.
type NativeSource struct {
	Type      string   // the workspace.Connection type, e.g. "postgres"
	Name      string   // e.g. "PostgreSQL"
	Providers []string // lower-case provider names it serves: "postgresql", "supabase"
	// Capabilities it serves.
	Capabilities []Capability
}

// Connected is one connection of the team, as the resolver reads it.
type Connected struct {
	ID   string
	Name string
	// Type is the connection's type ("postgres", "mcp", ...); ProjectID is
	// "" for a team-wide connection.
	Type      string
	ProjectID string
	TeamID    string
	// Provider names what it connects to, lower case ("posthog",
	// "postgresql"); empty when unknown.
	Provider     string
	Capabilities []Capability
	// Ready is true when the connection can answer now: active, and for a
	// remote MCP connection signed in with at least one approved tool.
	// Inactive and unapproved connections are never offered as connected.
	Ready bool
	// NoTools is true for a remote MCP connection that is active and
	// signed in but has no tool approved for Ask yet: the resolver names
	// it and the step left (allow a tool) instead of offering to connect
	// it again.
	NoTools bool
}

// Connections lists a team's connections. Implementations must be safe for
// concurrent use.
type Connections interface {
	// Connections returns the connections of live principal p's team;
	// the resolver keeps those p may read.
	Connections(ctx context.Context, p access.Principal) ([]Connected, error)
}

// OptionState is what an option asks of the user.
type OptionState string

// States.
const (
	StateConnected      OptionState = "connected"
	StateNativeSetup    OptionState = "native_setup"
	StateMCPOAuthSetup  OptionState = "mcp_oauth_setup"
	StateManualMCPSetup OptionState = "manual_mcp_setup"
	StateAdminRequired  OptionState = "admin_required"
	StateUnsupported    OptionState = "unsupported"
)

// Option is one way to the data.
type Option struct {
	State OptionState `json:"state"`
	// Provider is the display name of what the option connects to.
	Provider string `json:"provider,omitempty"`
	// ConnectionID and ConnectionName name a connected connection.
	ConnectionID   string `json:"connection_id,omitempty"`
	ConnectionName string `json:"connection_name,omitempty"`
	// SourceType is the native source type to set up (native_setup).
	SourceType string `json:"source_type,omitempty"`
	// MCPURL is the remote endpoint a setup uses: the verified one for
	// mcp_oauth_setup, empty for manual setup.
	MCPURL string `json:"mcp_url,omitempty"`
	// Docs is the provider's setup documentation.
	Docs string `json:"docs,omitempty"`
	// Message says in words what the option is and what happens next.
	Message string `json:"message"`
}

// Request is what a question needs: an optional provider by name, and a
// capability (required when the provider is empty).
type Request struct {
	Provider   string     `json:"provider,omitempty"`
	Capability Capability `json:"capability,omitempty"`
}

// MaxOptions is the most options Resolve returns.
const MaxOptions = 5

// ResolverOptions configures a Resolver. The zero value is valid.
type ResolverOptions struct {
	// Verified replaces the verified provider catalog (tests, a demo).
	// Default Verified.
	Verified []Provider
	// LoopbackHTTP counts a verified endpoint on a loopback address
	// (http://127.0.0.1, [::1], localhost) as HTTPS, for a demo or
	// development provider on the same machine, where no traffic leaves
	// it. Default false: only https endpoints get the OAuth action.
	LoopbackHTTP bool
}

// Resolver resolves requests. It is safe for concurrent use.
type Resolver struct {
	conns    Connections
	natives  []NativeSource
	verified []Provider
	loopback bool
}

// NewResolver returns a resolver over the host's connections and its installed
// native source types. opts may be nil.
func NewResolver(conns Connections, natives []NativeSource, opts *ResolverOptions) *Resolver {
	r := &Resolver{conns: conns, natives: slices.Clone(natives), verified: Verified}
	if opts != nil && opts.Verified != nil {
		r.verified = opts.Verified
	}
	if opts != nil {
		r.loopback = opts.LoopbackHTTP
	}
	return r
}

// OAuthProvider returns the verified provider called name (or by one of
// its aliases) when it offers the OAuth setup: an HTTPS endpoint and
// OAuth sign-in. A host's "Connect" action takes the endpoint from here,
// never from the client.
func (r *Resolver) OAuthProvider(name string) (Provider, bool) {
	n := normalize(name)
	for _, v := range r.verified {
		if (normalize(v.Name) == n || slices.Contains(v.Aliases, n)) && r.oauthReady(v) {
			return v, true
		}
	}
	return Provider{}, false
}

func (r *Resolver) oauthReady(v Provider) bool {
	return v.OAuth && (isHTTPS(v.MCPURL) || r.loopback && isLoopbackHTTP(v.MCPURL))
}

// Resolve returns at most [MaxOptions] ways to the data req needs, for live
// principal p (see the package doc for the order).
//
// Errors: InvalidArgument for a provider name over 100 characters or not
// text, an unknown capability, or neither a provider nor a capability;
// Internal when p is not live; those of Connections.
func (r *Resolver) Resolve(ctx context.Context, p access.Principal, req Request) (_ []Option, err error) {
	defer askbi.Wrap(&err, "connresolve.Resolver.Resolve")
	provider := normalize(req.Provider)
	switch {
	case !utf8.ValidString(req.Provider) || utf8.RuneCountInString(req.Provider) > 100 || strings.ContainsFunc(req.Provider, unicode.IsControl):
		return nil, askbi.Errorf(askbi.InvalidArgument, "provider: at most 100 characters of text, without control characters")
	case req.Capability != "" && !slices.Contains(Capabilities, req.Capability):
		return nil, askbi.Errorf(askbi.InvalidArgument, "capability: must be one of %s", joinCaps())
	case provider == "" && req.Capability == "":
		return nil, askbi.Errorf(askbi.InvalidArgument, "give a provider or a capability")
	}
	if err := access.Allow(p, access.RightRead, access.Team(p.TeamID)); err != nil {
		return nil, err
	}
	all, err := r.conns.Connections(ctx, p)
	if err != nil {
		return nil, err
	}
	matches := func(name string, caps []Capability, aliases ...string) bool {
		if provider != "" {
			return name == provider || slices.Contains(aliases, provider)
		}
		return slices.Contains(caps, req.Capability)
	}

	// 1. A connection that is ready and that p may read.
	var out []Option
	for _, c := range all {
		ent := access.Entity{Type: access.TypeConnection, ID: c.ID, TeamID: c.TeamID, ProjectID: c.ProjectID}
		if !c.Ready || access.Allow(p, access.RightRead, ent) != nil || !matches(c.Provider, c.Capabilities, normalize(c.Name)) {
			continue
		}
		out = append(out, Option{State: StateConnected, Provider: c.Name, ConnectionID: c.ID, ConnectionName: c.Name,
			Message: c.Name + " is connected; Ask can use it now."})
	}
	if len(out) > 0 {
		return capped(out), nil
	}

	canConfigure := access.Allow(p, access.RightManageConnections, access.Team(p.TeamID)) == nil

	// A connection set up but with no tool allowed yet: one step is left,
	// on its page. Connecting it again would only make a second one.
	for _, c := range all {
		ent := access.Entity{Type: access.TypeConnection, ID: c.ID, TeamID: c.TeamID, ProjectID: c.ProjectID}
		if !c.NoTools || access.Allow(p, access.RightRead, ent) != nil || !matches(c.Provider, c.Capabilities, normalize(c.Name)) {
			continue
		}
		if !canConfigure {
			return []Option{{State: StateAdminRequired, Provider: c.Name,
				Message: c.Name + " is connected, but Ask may use none of its tools yet. A team owner or admin can allow them on the connection's page."}}, nil
		}
		return []Option{{State: StateMCPOAuthSetup, Provider: c.Name, ConnectionID: c.ID, ConnectionName: c.Name,
			Message: c.Name + " is connected, but Ask may use none of its tools yet. Allow at least one tool on its page, then continue."}}, nil
	}

	adminRequired := func(name string) []Option {
		return []Option{{State: StateAdminRequired, Provider: name,
			Message: "Connecting " + name + " needs a team owner or admin. Ask one of them to set it up; nothing was changed."}}
	}

	// 2. An installed native source.
	for _, n := range r.natives {
		if !matches(normalize(n.Name), n.Capabilities, n.Providers...) {
			continue
		}
		if !canConfigure {
			return adminRequired(n.Name), nil
		}
		out = append(out, Option{State: StateNativeSetup, Provider: n.Name, SourceType: n.Type,
			Message: "Set up a " + n.Name + " connection. It connects directly, without MCP."})
	}
	if len(out) > 0 {
		return capped(out), nil
	}

	// 3. A verified MCP provider with a remote HTTPS endpoint and OAuth.
	var known *Provider
	for i := range r.verified {
		v := &r.verified[i]
		if !matches(normalize(v.Name), v.Capabilities, v.Aliases...) {
			continue
		}
		if provider != "" {
			known = v
		}
		if !r.oauthReady(*v) {
			continue
		}
		if !canConfigure {
			return adminRequired(v.Name), nil
		}
		out = append(out, Option{State: StateMCPOAuthSetup, Provider: v.Name, MCPURL: v.MCPURL, Docs: v.Docs,
			Message: "Connect " + v.Name + " through its official MCP server: you sign in with " + v.Name +
				", then choose which of its tools Ask may use. " + v.Notes})
	}
	if len(out) > 0 {
		return capped(out), nil
	}

	// 4. Manual MCP setup, for a provider named but not verified with
	// OAuth; 5. otherwise nothing serves the request.
	if provider == "" {
		return []Option{{State: StateUnsupported,
			Message: "No installed source or verified provider serves " + string(req.Capability) + " data yet."}}, nil
	}
	name := req.Provider
	o := Option{State: StateManualMCPSetup, Provider: strings.TrimSpace(name),
		Message: "There is no verified setup for " + strings.TrimSpace(name) + ". If it has a remote MCP server, add it by its URL; you will choose which tools Ask may use."}
	if known != nil {
		o.Provider, o.Docs = known.Name, known.Docs
	}
	if !canConfigure {
		return adminRequired(o.Provider), nil
	}
	return []Option{o}, nil
}

func capped(out []Option) []Option { return out[:min(len(out), MaxOptions)] }

// normalize is a provider name as the catalog matches it.
func normalize(s string) string { return strings.ToLower(strings.Join(strings.Fields(s), " ")) }

func isHTTPS(raw string) bool {
	u, err := url.Parse(raw)
	return err == nil && u.Scheme == "https" && u.Host != "" && u.User == nil
}

func isLoopbackHTTP(raw string) bool {
	u, err := url.Parse(raw)
	if err != nil || u.Scheme != "http" || u.User != nil {
		return false
	}
	return outbound.LoopbackHost(u.Hostname())
}

func joinCaps() string {
	names := make([]string, len(Capabilities))
	for i, c := range Capabilities {
		names[i] = string(c)
	}
	return strings.Join(names, ", ")
}
