package connresolve

import (
	"context"
	"strings"

	"github.com/askbi/askbi/access"
)

// SetupType is the Type of a Setup.
const SetupType = "connection_setup"

// Setup is the connection setup card a client renders for a question
// that needs a provider or capability: the resolver's options in its
// order, and in words what is missing. Ask's list_connections tool
// answers it (ask.ConnectionSetup), and so does the setup route of
// package connhttp. It holds no credentials and no schemas.
type Setup struct {
	Type       string     `json:"type"` // SetupType
	Provider   string     `json:"provider,omitempty"`
	Capability Capability `json:"capability,omitempty"`
	// NeedsSetup is true when no option is a connection Ask can use now:
	// the card offers setup, and the turn offers no chart tools after it.
	NeedsSetup bool `json:"needs_setup"`
	// Missing says in words which access is missing (shown before the
	// options); "" when a connection is ready.
	Missing string   `json:"missing,omitempty"`
	Options []Option `json:"options"`
	// Inert is true when the card no longer offers actions (no Connect,
	// no Continue request): a later card of the conversation exists, or
	// the request it was shown for has continued. The conversation's
	// latest card is the live one.
	Inert bool `json:"inert,omitempty"`
}

// Setup resolves a provider and capability for live principal p into
// the setup card. Errors: Resolve's.
func (r *Resolver) Setup(ctx context.Context, p access.Principal, provider string, capability Capability) (Setup, error) {
	opts, err := r.Resolve(ctx, p, Request{Provider: provider, Capability: capability})
	if err != nil {
		return Setup{}, err
	}
	return setupOf(provider, capability, opts), nil
}

// setupOf is the setup card of a resolution.
func setupOf(provider string, capability Capability, opts []Option) Setup {
	s := Setup{Type: SetupType, Provider: strings.TrimSpace(provider), Capability: capability,
		Options: opts, NeedsSetup: true}
	if s.Options == nil {
		s.Options = []Option{}
	}
	for _, o := range opts {
		if o.State == StateConnected {
			s.NeedsSetup = false
		}
	}
	if !s.NeedsSetup {
		return s
	}
	what := strings.ReplaceAll(string(capability), "_", " ") + " data"
	if s.Provider != "" {
		what = s.Provider + " data"
		if len(opts) > 0 && opts[0].Provider != "" {
			what = opts[0].Provider + " data"
		}
	}
	s.Missing = "Your team has no connection to " + what + " that Ask can use yet, so this question cannot be answered now."
	if len(opts) > 0 && opts[0].ConnectionID != "" {
		// Connected, with no tool allowed: the step left is on its page.
		s.Missing = opts[0].ConnectionName + " is connected, but Ask may use none of its tools yet, so this question cannot be answered now. " +
			"Allow at least one tool on its connection page, then continue the request."
		return s
	}
	if len(opts) > 0 {
		switch opts[0].State {
		case StateAdminRequired:
			s.Missing += " Connecting it needs a team owner or admin."
		case StateUnsupported:
			s.Missing += " Nothing installed here serves it."
		default:
			s.Missing += " You can connect it below; nothing is connected until you do."
		}
	}
	return s
}
