package connresolve

import (
	"context"

	"github.com/askbi/askbi/access"
	"github.com/askbi/askbi/dataexec"
	"github.com/askbi/askbi/dataexec/mcpsource"
	"github.com/askbi/askbi/workspace"
)

// CatalogConnections is the [Connections] a host builds from its catalog
// and its remote tools: the native connections of the catalog that p may
// search (each with the first provider and the capabilities of the
// native source of its type; active ones are ready), then the remote MCP
// connections Ask can use now ([MCPConnections]; their catalog rows are
// left out, since readiness there depends on sign-in and approved tools).
type CatalogConnections struct {
	Catalog workspace.Catalog
	// Remote gives the usable remote MCP connections (remote.Tools).
	Remote Usable
	// Natives name the provider and capabilities of each native
	// connection type; a type not among them has neither.
	Natives []NativeSource
	// Verified gives remote connections their capabilities.
	Verified []Provider
}

// Connections implements [Connections].
func (c CatalogConnections) Connections(ctx context.Context, p access.Principal) ([]Connected, error) {
	rows, err := c.Catalog.Search(ctx, workspace.CatalogQuery{TeamID: p.TeamID, Types: []access.EntityType{access.TypeConnection},
		Projects: p.Projects, UserID: p.UserID, Limit: dataexec.MaxSearchLimit})
	if err != nil {
		return nil, err
	}
	var out []Connected
	for _, r := range rows {
		if r.ConnectionType == mcpsource.TypeMCP {
			continue
		}
		conn := Connected{ID: r.Entity.ID, Name: r.Name, Type: r.ConnectionType, TeamID: r.Entity.TeamID,
			ProjectID: r.Entity.ProjectID, Ready: r.Active}
		for _, n := range c.Natives {
			if n.Type == r.ConnectionType && len(n.Providers) > 0 {
				conn.Provider, conn.Capabilities = n.Providers[0], n.Capabilities
				break
			}
		}
		out = append(out, conn)
	}
	remote, err := MCPConnections(ctx, c.Remote, p, c.Verified)
	if err != nil {
		return nil, err
	}
	return append(out, remote...), nil
}
