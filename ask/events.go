package ask

import (
	"encoding/json"
	"sync"
	"time"

	"github.com/askbi/askbi/dataexec"
)

// EventType names one kind of turn event.
type EventType string

// Event types, in the order a turn can produce them.
const (
	EventContextUpdated       EventType = "context.updated"
	EventMessageDelta         EventType = "message.delta"
	EventMessageCompleted     EventType = "message.completed"
	EventToolRunning          EventType = "tool.running"
	EventToolCompleted        EventType = "tool.completed"
	EventToolFailed           EventType = "tool.failed"
	EventToolApprovalRequired EventType = "tool.approval_required"
	EventToolRejected         EventType = "tool.rejected"
	EventRequestCompleted     EventType = "request.completed"
	EventRequestFailed        EventType = "request.failed"
)

// Event is one typed event of a turn. The same events go over SSE and as
// one JSON list (package askhttp). Nothing in an event is raw tool data, a secret or an
// internal error.
type Event struct {
	Seq            int       `json:"seq"`
	Type           EventType `json:"type"`
	ConversationID string    `json:"conversation_id"`
	TurnID         string    `json:"turn_id,omitempty"`
	// Delta is a streamed piece of the assistant's text (message.delta).
	Delta string `json:"delta,omitempty"`
	// Text is the whole assistant message (message.completed).
	Text string `json:"text,omitempty"`
	// Tool describes a tool call (tool.*).
	Tool *ToolEvent `json:"tool,omitempty"`
	// Context is the safe active set (context.updated).
	Context []ContextItem `json:"context,omitempty"`
	// Notice tells the user something changed, such as a selected item
	// that is no longer available.
	Notice string `json:"notice,omitempty"`
	// State is the turn's state when the request ends.
	State TurnState `json:"state,omitempty"`
	// Error is set on tool.failed and request.failed.
	Error *ErrorBody `json:"error,omitempty"`
}

// ToolEvent is a tool call in an event.
type ToolEvent struct {
	CallID string         `json:"call_id"`
	Name   string         `json:"name"`
	Label  string         `json:"label"`
	State  RunState       `json:"state"`
	Class  dataexec.Class `json:"class"`
	// ApprovalID, Title, Targets, Shared, Arguments, ExpiresAt and
	// CanApprove are set on tool.approval_required: the user sees what
	// they approve, in words (Title, and the entities the arguments name,
	// by name), and a client sends Arguments back as they are.
	ApprovalID string         `json:"approval_id,omitempty"`
	Title      string         `json:"title,omitempty"`
	Targets    []dataexec.Ref `json:"targets,omitempty"`
	// Shared says, in a sentence naming the dashboard, that others see
	// the change: it reaches a dashboard (a target, or the dashboard a
	// target chart sits on), and every dashboard is shared with everyone
	// who can open its project. "Growth overview is a shared dashboard:
	// everyone who can open it sees this change." Empty for a change no
	// dashboard shows, such as one to a preview.
	Shared    string          `json:"shared,omitempty"`
	Arguments json.RawMessage `json:"arguments,omitempty"`
	ExpiresAt *time.Time      `json:"expires_at,omitempty"`
	// CanApprove is set on tool.approval_required: false when the user's
	// role may not approve this call (Tool.ApproveRight), so a client
	// offers no Approve and says "Ask an admin". Reject stays open.
	CanApprove *bool           `json:"can_approve,omitempty"`
	Summary    string          `json:"summary,omitempty"`
	Result     json.RawMessage `json:"result,omitempty"`
	Retry      bool            `json:"retry,omitempty"`
}

// ErrorBody is a safe error: a stable code and a message for users.
type ErrorBody struct {
	Code    string `json:"code"`
	Message string `json:"message"`
	// Kind and Repair are set for a failed data request whose cause is
	// known (dataexec.FailureKind): Repair is the one action that fixes it,
	// fix_dataset, open_connection or try_again.
	Kind   string `json:"kind,omitempty"`
	Repair string `json:"repair,omitempty"`
	// RetryAfter is set on rate_limited and unavailable: the seconds to
	// wait before the same call may succeed (askbi.RetryAfter).
	RetryAfter int `json:"retry_after,omitempty"`
}

// Emit receives a turn's events in order. It must not block for long; a
// slow client slows the turn.
type Emit func(Event)

// Collect returns an Emit that appends to a list, and the list, for the
// JSON answer.
func Collect() (Emit, func() []Event) {
	var mu sync.Mutex
	var events []Event
	return func(e Event) {
			mu.Lock()
			events = append(events, e)
			mu.Unlock()
		}, func() []Event {
			mu.Lock()
			defer mu.Unlock()
			return append([]Event(nil), events...)
		}
}
