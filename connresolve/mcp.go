package connresolve

import (
	"context"
	"strings"

	"github.com/askbi/askbi/access"
	"github.com/askbi/askbi/connections"
	"github.com/askbi/askbi/dataexec/mcpsource"
)

// Usable gives the remote MCP connections of a team that Ask can use
// now (ready, with an approved tool), and those that lack only an
// approved tool (remote.Tools is one).
type Usable interface {
	Usable(ctx context.Context, p access.Principal) ([]connections.Connection, error)
	AwaitingTools(ctx context.Context, p access.Principal) ([]connections.Connection, error)
}

// MCPConnections is the remote half of a host's [Connections]: the remote
// MCP connections of p's team that Ask can use now (u's Usable), and
// those that lack only an approved tool (Connected.NoTools), each with
// the capabilities of the verified provider it was set up for (one of
// verified). The host adds its native connections.
func MCPConnections(ctx context.Context, u Usable, p access.Principal, verified []Provider) ([]Connected, error) {
	usable, err := u.Usable(ctx, p)
	if err != nil {
		return nil, err
	}
	waiting, err := u.AwaitingTools(ctx, p)
	if err != nil {
		return nil, err
	}
	out := make([]Connected, 0, len(usable)+len(waiting))
	for i, m := range append(usable, waiting...) {
		c := Connected{ID: m.ID, Name: m.Name, Type: mcpsource.TypeMCP, TeamID: m.TeamID, Ready: i < len(usable), NoTools: i >= len(usable),
			Provider: strings.ToLower(m.Provider)}
		for _, v := range verified {
			if v.Name == m.Provider {
				c.Capabilities = v.Capabilities
			}
		}
		out = append(out, c)
	}
	return out, nil
}
