package mcpserver

import (
	"context"
	"slices"
	"sync"
	"time"

	"github.com/askbi/askbi/dataexec"
)

// ActivityItem is one recent change or metric evaluation in a workspace.
type ActivityItem struct {
	Time      time.Time    `json:"time"`
	Kind      string       `json:"kind"` // e.g. "chart_updated", "dataset_created", "metric_evaluated"
	ProjectID string       `json:"project_id,omitempty"`
	Entity    dataexec.Ref `json:"entity"`
	Summary   string       `json:"summary"` // one safe line, e.g. "MRR rose 4% week over week"
}

// ActivityQuery selects recent activity of one team.
type ActivityQuery struct {
	TeamID string
	// Projects the caller may see; items outside them are never returned.
	ProjectIDs []string // nil means every project
	ProjectID  string   // optional narrowing to one project
	From, To   time.Time
	Limit      int
}

// Activity is the host's feed of recent changes and metric evaluations.
// Implementations must be safe for concurrent use.
type Activity interface {
	// Recent returns the items of q.TeamID in [q.From, q.To), newest first,
	// at most q.Limit, only from q.ProjectIDs (all projects when nil) and
	// q.ProjectID when set. Team-wide items (no project) are included. It
	// returns no error codes of its own.
	Recent(ctx context.Context, q ActivityQuery) ([]ActivityItem, error)
}

// MemoryActivity is an in-memory Activity for tests and the embedded
// default.
type MemoryActivity struct {
	mu    sync.RWMutex
	items map[string][]ActivityItem // by team
}

// NewMemoryActivity returns an empty feed.
func NewMemoryActivity() *MemoryActivity {
	return &MemoryActivity{items: map[string][]ActivityItem{}}
}

// Add records an item for team.
func (a *MemoryActivity) Add(teamID string, it ActivityItem) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.items[teamID] = append(a.items[teamID], it)
}

// Recent implements Activity.
func (a *MemoryActivity) Recent(_ context.Context, q ActivityQuery) ([]ActivityItem, error) {
	a.mu.RLock()
	defer a.mu.RUnlock()
	var out []ActivityItem
	for _, it := range a.items[q.TeamID] {
		if it.Time.Before(q.From) || !it.Time.Before(q.To) {
			continue
		}
		if it.ProjectID != "" {
			if q.ProjectID != "" && it.ProjectID != q.ProjectID {
				continue
			}
			if q.ProjectIDs != nil && !slices.Contains(q.ProjectIDs, it.ProjectID) {
				continue
			}
		}
		out = append(out, it)
	}
	slices.SortFunc(out, func(x, y ActivityItem) int { return y.Time.Compare(x.Time) })
	if len(out) > q.Limit {
		out = out[:q.Limit]
	}
	return out, nil
}
