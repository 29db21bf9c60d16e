package dataexec

import (
	"context"
	"slices"
	"strings"

	"github.com/askbi/askbi/access"
)

// MaxDestinations bounds Destinations: one search page.
const MaxDestinations = MaxSearchLimit

// Destinations lists, by name, the dashboards p may place a preview of
// project on: those in that project on which p has
// [access.RightEditDashboard], at most [MaxDestinations] of the most recently
// updated. It is empty for a user who may edit no such dashboard (a
// viewer), so a client hides placement. The chat's chart results and the
// preview page both offer these. Errors: those of Search.
func Destinations(ctx context.Context, e *Executor, p access.Principal, project string) ([]Ref, error) {
	refs, err := e.Search(ctx, p, SearchQuery{Types: []access.EntityType{access.TypeDashboard}, Limit: MaxDestinations})
	if err != nil {
		return nil, err
	}
	out := []Ref{}
	for _, d := range refs {
		ent := access.Entity{Type: access.TypeDashboard, ID: d.ID, TeamID: p.TeamID, ProjectID: d.ProjectID}
		if d.ProjectID == project && access.Allow(p, access.RightEditDashboard, ent) == nil {
			out = append(out, d)
		}
	}
	slices.SortStableFunc(out, func(x, y Ref) int { return strings.Compare(x.Name, y.Name) })
	return out, nil
}
