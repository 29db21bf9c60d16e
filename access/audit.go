package access

import (
	"context"
	"log/slog"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/askbi/askbi"
)

// OutcomeOK is the Outcome of a successful action; a failed one records
// its error code.
const OutcomeOK = "ok"

// TypeMemory is the entity type of a memory, as an audit target.
const TypeMemory EntityType = "memory"

// The audit actions the usage view reads (package usage), named here, in
// the one audit vocabulary, so that the packages that record them and the
// view that reads them share one spelling. Other actions are named by the
// packages that record them (dataexec's "dataset.save", memory's
// "memory.add", ...).
const (
	// ActionMCPToolCall is an MCP tool call; Details["tool"] names the
	// tool, never its arguments.
	ActionMCPToolCall = "mcp.tool_call"
	// ActionMCPInitialize is an MCP client's initialize request;
	// Details["client"] and Details["client_version"] are what the client
	// calls itself (its clientInfo, unverified, cut to 64 characters).
	ActionMCPInitialize = "mcp.initialize"
	// ActionChatTurn is a chat request that ran a turn (a message, an
	// approval or a rejection); Details["op"] says which.
	ActionChatTurn = "chat.turn"
	// ActionChatToolCall is a tool run in a chat turn; Details["tool"]
	// names the tool.
	ActionChatToolCall = "chat.tool_call"
	// ActionRemoteCall is a call of a remote MCP connection's tool from
	// Ask; the target is the connection, Details["tool"] the tool and
	// Details["connection"] the connection's name.
	ActionRemoteCall = "connection.remote_call"
)

// AuditEntry is one audited action: who did what to which entity, how it
// ended, and small safe details (counts, types, tool names). It never
// holds secrets, SQL text, tool argument values, filter or variable
// values, or memory text. Each package names its own actions as constants
// ("dataset.save", "mcp.tool_call", "memory.add", ...).
type AuditEntry struct {
	Time         time.Time         `json:"time"`
	Action       string            `json:"action"`
	UserID       string            `json:"user_id"`
	TeamID       string            `json:"team_id"`
	Auth         AuthMethod        `json:"auth"`
	CredentialID string            `json:"credential_id,omitempty"`
	Target       Entity            `json:"target"`
	Outcome      string            `json:"outcome"` // OutcomeOK or an askbi error code
	Duration     time.Duration     `json:"duration"`
	Details      map[string]string `json:"details,omitempty"`
}

// AuditSink stores audit entries: the host's one audit log.
// Implementations must be safe for concurrent use.
type AuditSink interface {
	// Record stores e. It returns Unavailable when the store cannot be
	// reached.
	Record(ctx context.Context, e AuditEntry) error
}

// Auditor records actions on a sink: the one recorder every package uses.
// A nil *Auditor, or one without a sink, records nothing. It is safe for
// concurrent use.
type Auditor struct {
	sink AuditSink
	log  *slog.Logger
	now  func() time.Time
}

// NewAuditor returns an Auditor writing to sink (nil for none), logging
// its failures to log (nil for slog.Default()), timing with now (nil for
// time.Now).
func NewAuditor(sink AuditSink, log *slog.Logger, now func() time.Time) *Auditor {
	if log == nil {
		log = slog.Default()
	}
	if now == nil {
		now = time.Now
	}
	return &Auditor{sink: sink, log: log, now: now}
}

// Now is the auditor's clock, for the began time Record takes.
func (a *Auditor) Now() time.Time {
	if a == nil {
		return time.Now()
	}
	return a.now()
}

// Record writes the outcome of action by p on target, begun at began:
// [OutcomeOK] when err is nil, else err's code. It records with a context
// that is never cancelled, so a cancelled request still leaves its entry,
// and a failure to record is logged, never returned, so the outcome of a
// committed change is not misreported.
func (a *Auditor) Record(ctx context.Context, p Principal, action string, target Entity, began time.Time, err error, details map[string]string) {
	if a == nil || a.sink == nil {
		return
	}
	outcome := OutcomeOK
	if err != nil {
		outcome = string(askbi.ErrorCode(err))
	}
	if len(details) == 0 {
		details = nil
	}
	e := AuditEntry{Time: began, Action: action, UserID: p.UserID, TeamID: p.TeamID, Auth: p.Auth, CredentialID: p.CredentialID,
		Target: target, Outcome: outcome, Duration: a.now().Sub(began), Details: details}
	if rerr := a.sink.Record(context.WithoutCancel(ctx), e); rerr != nil {
		a.log.ErrorContext(ctx, "audit record failed", "action", action, "err", rerr)
	}
}

// Track starts action by p on *target and returns the function that
// records its outcome, to be deferred with the caller's error:
//
//	defer audit.Track(ctx, p, "chart.place", &target, details)(&err)
//
// target and details may still change before the function runs (a write
// learns its target's project on the way).
func (a *Auditor) Track(ctx context.Context, p Principal, action string, target *Entity, details map[string]string) func(errp *error) {
	began := a.Now()
	return func(errp *error) { a.Record(ctx, p, action, *target, began, *errp, details) }
}

// MemoryAudit is an in-memory [AuditSink] that keeps the most recent
// entries, for tests and the embedded default. It is safe for concurrent
// use.
type MemoryAudit struct {
	mu      sync.Mutex
	entries []AuditEntry // a ring of cap max once full
	next    int          // where the next entry goes once full: the oldest
}

// NewMemoryAudit returns a sink keeping the last max entries; max <= 0
// means 1,000.
func NewMemoryAudit(max int) *MemoryAudit {
	if max <= 0 {
		max = 1000
	}
	return &MemoryAudit{entries: make([]AuditEntry, 0, max)}
}

// Record implements [AuditSink]. It never fails.
func (a *MemoryAudit) Record(_ context.Context, e AuditEntry) error {
	e.Details = maps.Clone(e.Details)
	a.mu.Lock()
	defer a.mu.Unlock()
	if len(a.entries) < cap(a.entries) {
		a.entries = append(a.entries, e)
		return nil
	}
	a.entries[a.next] = e
	a.next = (a.next + 1) % len(a.entries)
	return nil
}

// Entries returns a copy of the kept entries, oldest first.
func (a *MemoryAudit) Entries() []AuditEntry {
	a.mu.Lock()
	defer a.mu.Unlock()
	out := slices.Concat(a.entries[a.next:], a.entries[:a.next])
	for i := range out {
		out[i].Details = maps.Clone(out[i].Details)
	}
	return out
}

// TeeAudit returns a sink that records each entry on every one of sinks
// (nil ones left out): the host's own audit log and a usage ledger,
// say. Its Record tries them all and returns the first error.
func TeeAudit(sinks ...AuditSink) AuditSink {
	var t teeAudit
	for _, s := range sinks {
		if s != nil {
			t = append(t, s)
		}
	}
	return t
}

type teeAudit []AuditSink

func (t teeAudit) Record(ctx context.Context, e AuditEntry) error {
	var first error
	for _, s := range t {
		if err := s.Record(ctx, e); err != nil && first == nil {
			first = err
		}
	}
	return first
}
