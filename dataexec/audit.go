package dataexec

import (
	"context"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/askbi/askbi/access"
)

// Audit actions the Executor records. Adapters add their own, such as
// "mcp.tool_call".
const (
	ActionDatasetSave     = "dataset.save"
	ActionChartPreview    = "chart.preview"
	ActionChartUpdate     = "chart.update"
	ActionChartPlace      = "chart.place"
	ActionDashboardDelete = "dashboard.delete"
)

// OutcomeOK is the Outcome of a successful action; a failed one records
// its error code.
const OutcomeOK = "ok"

// AuditEntry is one audited action. It never holds secrets, SQL text, tool
// argument values, filter or variable values, or memory text: only who did
// what to which entity, how it ended, and small safe details (counts,
// types, tool names).
type AuditEntry struct {
	Time         time.Time         `json:"time"`
	Action       string            `json:"action"`
	UserID       string            `json:"user_id"`
	TeamID       string            `json:"team_id"`
	Auth         access.AuthMethod `json:"auth"`
	CredentialID string            `json:"credential_id,omitempty"`
	Target       access.Entity     `json:"target"`
	Outcome      string            `json:"outcome"` // OutcomeOK or an askbi error code
	Duration     time.Duration     `json:"duration"`
	Details      map[string]string `json:"details,omitempty"`
}

// AuditSink stores audit entries. Implementations must be safe for
// concurrent use.
type AuditSink interface {
	// Record stores e. It returns Unavailable when the store cannot be
	// reached; the Executor logs such failures and carries on.
	Record(ctx context.Context, e AuditEntry) error
}

// MemoryAudit is an in-memory AuditSink that keeps the most recent
// entries, for tests and the embedded default. It is safe for concurrent
// use.
type MemoryAudit struct {
	max     int
	mu      sync.Mutex
	entries []AuditEntry
}

// NewMemoryAudit returns a sink keeping the last max entries; max <= 0
// means 1,000.
func NewMemoryAudit(max int) *MemoryAudit {
	if max <= 0 {
		max = 1000
	}
	return &MemoryAudit{max: max}
}

// Record implements AuditSink. It never fails.
func (a *MemoryAudit) Record(_ context.Context, e AuditEntry) error {
	e.Details = maps.Clone(e.Details)
	a.mu.Lock()
	defer a.mu.Unlock()
	if len(a.entries) == a.max {
		a.entries = slices.Delete(a.entries, 0, 1)
	}
	a.entries = append(a.entries, e)
	return nil
}

// Entries returns a copy of the kept entries, oldest first.
func (a *MemoryAudit) Entries() []AuditEntry {
	a.mu.Lock()
	defer a.mu.Unlock()
	out := slices.Clone(a.entries)
	for i := range out {
		out[i].Details = maps.Clone(out[i].Details)
	}
	return out
}
