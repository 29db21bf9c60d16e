package ask

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/askbi/askbi"
	"github.com/askbi/askbi/access"
	"github.com/askbi/askbi/dataexec"
)

// MaxContextItems is the most entities a conversation's active context
// holds.
const MaxContextItems = 10

// UnavailableNotice is what the user sees when a selected item was
// deleted or is no longer accessible.
const UnavailableNotice = "This item is no longer available. Select another item."

// ContextItem is one entity of the active context as clients and the
// model see it. Label and Name never hold internal IDs; the model refers
// to the item by Handle, which tools resolve to the validated reference.
type ContextItem struct {
	ID         string            `json:"id"`
	EntityType access.EntityType `json:"entity_type"`
	Label      string            `json:"label"` // e.g. "Chart: Weekly signups"
	Name       string            `json:"name"`
	ProjectID  string            `json:"project_id,omitempty"`
	Metadata   map[string]string `json:"metadata,omitempty"` // "info": one line
	// Handle is how the model refers to an item of the active context
	// ("@c1"); empty for a search result.
	Handle string `json:"handle,omitempty"`
	// URL opens the item's page in the product, from the executor's
	// Links: a dashboard's, a dataset's, or a chart's chart page (also a
	// preview's: it shows it as one, and the link stays once the preview
	// is placed). Empty for a connection, which has no page among
	// dataexec's, and for a page the host does not have.
	URL string `json:"url,omitempty"`
}

// itemOf is ref as a context item (without a handle), linked through
// links.
func itemOf(ref dataexec.Ref, links dataexec.Links) ContextItem {
	return ContextItem{ID: ref.ID, EntityType: ref.Type, Name: ref.Name, ProjectID: ref.ProjectID, Label: Label(ref),
		Metadata: map[string]string{"info": ref.Info}, URL: itemURL(links, ref.Type, ref.ID)}
}

// itemURL is the page of a selected entity as links give it
// (ContextItem.URL), or "".
func itemURL(links dataexec.Links, typ access.EntityType, id string) string {
	page, ok := map[access.EntityType]dataexec.Page{access.TypeDashboard: dataexec.PageDashboard,
		access.TypeChart: dataexec.PageChart, access.TypeDataset: dataexec.PageDataset}[typ]
	if !ok || links == nil {
		return ""
	}
	return links(page, id)
}

// sent is items as a user message records them (Entry.Context).
func sent(items []ContextItem) []SentItem {
	var out []SentItem
	for _, it := range items {
		out = append(out, SentItem{EntityType: it.EntityType, ID: it.ID, Name: it.Name, Label: it.Label})
	}
	return out
}

var contextTypes = []access.EntityType{access.TypeDashboard, access.TypeChart, access.TypeDataset, access.TypeConnection}

// normalizeContext validates a requested set: known types, IDs present,
// duplicates removed (first kept), at most MaxContextItems.
func normalizeContext(refs []ContextRef) ([]ContextRef, error) {
	var out []ContextRef
	for i, r := range refs {
		if !slices.Contains(contextTypes, r.Type) {
			return nil, askbi.Errorf(askbi.InvalidArgument, "context[%d].entity_type: must be dashboard, chart, dataset or connection", i)
		}
		if r.ID == "" || len(r.ID) > 100 {
			return nil, askbi.Errorf(askbi.InvalidArgument, "context[%d].id: must be 1 to 100 characters", i)
		}
		if !slices.Contains(out, r) {
			out = append(out, r)
		}
	}
	if len(out) > MaxContextItems {
		return nil, askbi.Errorf(askbi.InvalidArgument, "context: at most %d items", MaxContextItems)
	}
	return out, nil
}

// resolveContext revalidates refs for p, returning the items still
// available and whether any were dropped.
func resolveContext(ctx context.Context, exec *dataexec.Executor, p access.Principal, refs []ContextRef) (items []ContextItem, kept []ContextRef, dropped bool, err error) {
	ents := make([]access.Entity, len(refs))
	for i, r := range refs {
		ents[i] = access.Entity{Type: r.Type, ID: r.ID}
	}
	resolved, err := exec.Resolve(ctx, p, ents)
	if err != nil {
		return nil, nil, false, err
	}
	for i, ref := range resolved {
		if ref == nil {
			dropped = true
			continue
		}
		kept = append(kept, refs[i])
		it := itemOf(*ref, exec.Links())
		it.Handle = fmt.Sprintf("@c%d", len(items)+1)
		items = append(items, it)
	}
	return items, kept, dropped, nil
}

// Label is how the context picker and the active context name an entity:
// its type and name, such as "Chart: Weekly signups", never its ID.
func Label(ref dataexec.Ref) string {
	t := string(ref.Type)
	return strings.ToUpper(t[:1]) + t[1:] + ": " + ref.Name
}

// contextBlock is the untrusted description of the selection for the
// model: handles and labels, never IDs. Names are the workspace's (any
// member, or an MCP client, may name a preview), so they are
// neutralized like any untrusted text.
func contextBlock(items []ContextItem) string {
	if len(items) == 0 {
		return ""
	}
	var b strings.Builder
	b.WriteString("<selected_items trust=\"untrusted\">\n")
	for _, it := range items {
		fmt.Fprintf(&b, "%s %s %q (%s)\n", it.Handle, it.EntityType, neutralize(it.Name), neutralize(it.Metadata["info"]))
	}
	b.WriteString("</selected_items>\n")
	return b.String()
}

// ContextQuery is a search of the context picker.
type ContextQuery struct {
	// TeamID must be the principal's team; another team answers NotFound,
	// so a team's existence is never revealed.
	TeamID string
	// Text matches names; empty lists the most recently updated items.
	Text string
	// Types limits the entity types (dashboard, chart, dataset,
	// connection); empty means all four.
	Types []access.EntityType
	// Limit is 1 to 50; 0 means 20.
	Limit int
}

// ContextGroup is one group of the context picker.
type ContextGroup struct {
	Name  string        `json:"name"`
	Items []ContextItem `json:"items"`
}

// recentItems is how many of an empty query's results go in the Recent
// group.
const recentItems = 5

// SearchContext finds the entities p may select, with the same search as
// the MCP search_workspace tool ([dataexec.Executor.Search]), grouped for
// the picker: always the five groups Recent, Dashboards, Charts, Datasets
// and Connections, in this order, each item once, with one info line.
// With an empty query the first five results (the most recently updated)
// form Recent and the rest go to their type's group; with a query, Recent
// is empty.
//
// Errors: those of Search; NotFound for another team.
func (a *Assistant) SearchContext(ctx context.Context, p access.Principal, q ContextQuery) (_ []ContextGroup, err error) {
	defer askbi.Wrap(&err, "ask.Assistant.SearchContext")
	live, err := a.begin(ctx, p)
	if err != nil {
		return nil, err
	}
	if q.TeamID != live.TeamID {
		return nil, askbi.Errorf(askbi.NotFound, "team not found")
	}
	limit := q.Limit
	switch {
	case limit == 0:
		limit = dataexec.DefaultSearchLimit
	case limit < 0 || limit > dataexec.MaxSearchLimit:
		return nil, askbi.Errorf(askbi.InvalidArgument, "limit must be between 1 and %d", dataexec.MaxSearchLimit)
	}
	// Read as many as search gives, so that previews (asked for again in
	// chat after chat, each a chart of the same name) do not crowd out
	// the saved items: those are listed first, and the previews of one
	// name and kind become one item, the newest.
	refs, err := a.exec.Search(ctx, live, dataexec.SearchQuery{Text: q.Text, Types: q.Types, Limit: dataexec.MaxSearchLimit})
	if err != nil {
		return nil, err
	}
	recent := strings.TrimSpace(q.Text) == ""
	refs = rankSaved(foldPreviews(refs), recent)
	refs = refs[:min(len(refs), limit)]
	groups := []ContextGroup{{Name: "Recent"}, {Name: "Dashboards"}, {Name: "Charts"}, {Name: "Datasets"}, {Name: "Connections"}}
	byType := map[access.EntityType]int{access.TypeDashboard: 1, access.TypeChart: 2, access.TypeDataset: 3, access.TypeConnection: 4}
	for i, ref := range refs {
		g, ok := byType[ref.Type]
		if !ok {
			continue
		}
		if recent && i < recentItems {
			g = 0
		}
		groups[g].Items = append(groups[g].Items, itemOf(ref, a.exec.Links()))
	}
	for i := range groups {
		if groups[i].Items == nil {
			groups[i].Items = []ContextItem{}
		}
	}
	return groups, nil
}

// isPreview reports whether ref is a preview chart: its info line, as
// dataexec's search writes it, starts with "Preview".
func isPreview(ref dataexec.Ref) bool {
	return ref.Type == access.TypeChart && strings.HasPrefix(ref.Info, "Preview ·")
}

// foldPreviews keeps, of the previews of one name and kind, the first
// (the newest: search lists the most recently updated first), its info
// line saying how many there are ("Preview · line chart · 12 previews
// of this name").
func foldPreviews(refs []dataexec.Ref) []dataexec.Ref {
	n := map[string]int{}
	key := func(r dataexec.Ref) string { return r.Name + "\x00" + r.Info }
	for _, r := range refs {
		if isPreview(r) {
			n[key(r)]++
		}
	}
	var out []dataexec.Ref
	seen := map[string]bool{}
	for _, r := range refs {
		if !isPreview(r) {
			out = append(out, r)
			continue
		}
		k := key(r)
		if seen[k] {
			continue
		}
		seen[k] = true
		if n[k] > 1 {
			r.Info += fmt.Sprintf(" · %d previews of this name", n[k])
		}
		out = append(out, r)
	}
	return out
}

// rankSaved lists saved items before previews, each in search's order.
// With recent set (an empty query) the first recentItems keep their
// place: Recent is the most recently updated, previews or not.
func rankSaved(refs []dataexec.Ref, recent bool) []dataexec.Ref {
	head := 0
	if recent {
		head = min(recentItems, len(refs))
	}
	rest := slices.Clone(refs[head:])
	slices.SortStableFunc(rest, func(a, b dataexec.Ref) int {
		switch pa, pb := isPreview(a), isPreview(b); {
		case pa == pb:
			return 0
		case pb:
			return -1
		}
		return 1
	})
	return append(slices.Clone(refs[:head]), rest...)
}
