package dataexec

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/askbi/askbi"
	"github.com/askbi/askbi/access"
	"github.com/askbi/askbi/workspace"
)

// Search limits.
const (
	DefaultSearchLimit = 20
	MaxSearchLimit     = 50
	maxSearchText      = 200
)

// searchTypes are the entity types workspace search finds.
var searchTypes = []access.EntityType{access.TypeDashboard, access.TypeChart, access.TypeDataset, access.TypeConnection}

// Ref is a safe, typed reference to a workspace entity, as search results
// and chart results carry it. Name and Info are labels for people: they
// never hold internal IDs. Clients build URLs from Type and ID.
type Ref struct {
	Type      access.EntityType `json:"type"`
	ID        string            `json:"id"`
	Name      string            `json:"name"`
	ProjectID string            `json:"project_id,omitempty"`
	// Info is one short line: a dashboard's chart count ("4 charts"), a
	// chart's dashboard and type ("Growth overview · line chart", or
	// "Preview · bar chart"), a dataset's connection and source type
	// ("Warehouse · PostgreSQL"), a connection's type and state
	// ("PostgreSQL · active"). A scoped dataset's ends with its scope
	// ("Warehouse · PostgreSQL · Scope: page_path = /pricing").
	Info string `json:"info,omitempty"`
	// Scope is a dataset's scope (DatasetScope), or what a chart shows of
	// its dataset (ChartScope: its filters and date range, then the
	// dataset's scope); nil when it has none.
	Scope *ScopeRef `json:"scope,omitempty"`
}

// SearchQuery is a workspace search.
type SearchQuery struct {
	// Text matches names, case-insensitively; empty lists recent items.
	Text string `json:"query"`
	// Types limits the entity types: dashboard, chart, dataset,
	// connection. Empty means all four.
	Types []access.EntityType `json:"types,omitempty"`
	// Limit is 1 to 50; 0 means 20.
	Limit int `json:"limit,omitempty"`
}

// Search finds the dashboards, charts, datasets and connections whose name
// contains q.Text, most recently updated first, among those the principal
// may read ([access.RightRead] on each: same team, a project it can reach
// or team-wide, and a preview only when it created it). It serves both
// the chat context picker and the MCP search_workspace tool.
//
// Errors: TooLarge, Forbidden,
// ScopeRequired (a token without data:read); InvalidArgument for a limit
// outside 1 to 50 ("limit must be between 1 and 50"), an unknown type or
// text over 200 characters.
func (e *Executor) Search(ctx context.Context, p access.Principal, q SearchQuery) (_ []Ref, err error) {
	defer askbi.Wrap(&err, "dataexec.Executor.Search")
	if len(q.Text)+16*len(q.Types) > e.maxRequest {
		return nil, e.tooLarge()
	}
	live, err := e.begin(p, 0)
	if err != nil {
		return nil, err
	}
	if err := access.Allow(live, access.RightRead, access.Team(live.TeamID)); err != nil {
		return nil, err
	}
	limit := q.Limit
	switch {
	case limit == 0:
		limit = DefaultSearchLimit
	case limit < 0 || limit > MaxSearchLimit:
		return nil, askbi.Errorf(askbi.InvalidArgument, "limit must be between 1 and %d", MaxSearchLimit)
	}
	text := strings.TrimSpace(q.Text)
	if !utf8.ValidString(text) || utf8.RuneCountInString(text) > maxSearchText {
		return nil, askbi.Errorf(askbi.InvalidArgument, "query: must be at most %d characters of text", maxSearchText)
	}
	var types []access.EntityType
	for _, t := range q.Types {
		if !slices.Contains(searchTypes, t) {
			return nil, askbi.Errorf(askbi.InvalidArgument, "types: %s is not one of dashboard, chart, dataset, connection", safeName(string(t)))
		}
		if !slices.Contains(types, t) {
			types = append(types, t)
		}
	}
	rows, err := e.catalog.Search(ctx, workspace.CatalogQuery{TeamID: live.TeamID, Text: text, Types: types, Projects: live.Projects,
		UserID: live.UserID, Limit: limit})
	if err != nil {
		return nil, err
	}
	refs := []Ref{}
	for _, r := range rows {
		if len(refs) == limit {
			break
		}
		if !slices.Contains(searchTypes, r.Entity.Type) || len(types) > 0 && !slices.Contains(types, r.Entity.Type) ||
			access.Allow(live, access.RightRead, r.Entity) != nil {
			continue
		}
		ref := Ref{Type: r.Entity.Type, ID: r.Entity.ID, Name: r.Name, ProjectID: r.Entity.ProjectID, Info: infoLine(r)}
		if r.Entity.Type == access.TypeDataset {
			ref.Scope = scopeRef(eachOnce(r.Scope))
		}
		refs = append(refs, ref)
	}
	return refs, nil
}

// infoLine is a search row's one line of context.
func infoLine(r workspace.SearchRow) string {
	switch r.Entity.Type {
	case access.TypeDashboard:
		if r.ChartCount == 1 {
			return "1 chart"
		}
		return fmt.Sprintf("%d charts", r.ChartCount)
	case access.TypeChart:
		where := r.DashboardName
		if where == "" {
			where = "Preview"
		}
		return where + " · " + chartTypeLabel(r.ChartType)
	case access.TypeDataset:
		info := "No connection"
		if r.ConnectionName != "" {
			info = r.ConnectionName + " · " + sourceLabel(r.ConnectionType)
		}
		if scope := eachOnce(r.Scope); len(scope) > 0 {
			info += " · Scope: " + ScopeText(scope)
		}
		return info
	case access.TypeConnection:
		state := "inactive"
		if r.Active {
			state = "active"
		}
		return sourceLabel(r.ConnectionType) + " · " + state
	}
	return ""
}

// datasetRef is a dataset's reference, with its connection and scope as
// info line, and its scope as data.
func datasetRef(d workspace.Dataset, conn workspace.Connection) Ref {
	row := workspace.SearchRow{Entity: d.Ref(), ConnectionName: conn.Name, ConnectionType: conn.Type, Scope: DatasetScope(d)}
	r := Ref{Type: access.TypeDataset, ID: d.ID, Name: d.Name, ProjectID: d.ProjectID, Info: infoLine(row)}
	if conn.Name == "" && len(row.Scope) == 0 {
		r.Info = ""
	}
	r.Scope = scopeRef(row.Scope)
	return r
}

func chartTypeLabel(t workspace.ChartType) string {
	switch t {
	case workspace.ChartTable:
		return "table"
	case workspace.ChartKPI:
		return "KPI"
	}
	return string(t) + " chart"
}

// sourceLabel is the display name of a connection type.
func sourceLabel(typ string) string {
	switch strings.ToLower(typ) {
	case "postgres", "postgresql":
		return "PostgreSQL"
	case "mysql":
		return "MySQL"
	case "mcp":
		return "MCP"
	}
	return typ
}
