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
	Handle     string            `json:"handle"`             // "@c1"
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
		items = append(items, ContextItem{
			ID: ref.ID, EntityType: ref.Type, Name: ref.Name, ProjectID: ref.ProjectID,
			Label:    Label(*ref),
			Metadata: map[string]string{"info": ref.Info},
			Handle:   fmt.Sprintf("@c%d", len(items)+1),
		})
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
// model: handles and labels, never IDs.
func contextBlock(items []ContextItem) string {
	if len(items) == 0 {
		return ""
	}
	var b strings.Builder
	b.WriteString("<selected_items trust=\"untrusted\">\n")
	for _, it := range items {
		fmt.Fprintf(&b, "%s %s %q (%s)\n", it.Handle, it.EntityType, it.Name, it.Metadata["info"])
	}
	b.WriteString("</selected_items>\n")
	return b.String()
}
