package ask

import (
	"context"
	"encoding/json"
	"time"

	"github.com/askbi/askbi/access"
	"github.com/askbi/askbi/dataexec"
)

// Conversation is one user's chat in one team.
type Conversation struct {
	ID        string    `json:"id"`
	TeamID    string    `json:"team_id"`
	UserID    string    `json:"user_id"`
	Title     string    `json:"title"` // from the first question
	CreatedAt time.Time `json:"created_at"`
	UpdatedAt time.Time `json:"updated_at"`
}

// TurnState is where a turn stands.
type TurnState string

// Turn states. A turn ends completed, failed or stopped; it waits in
// awaiting_approval while a gated call is pending.
const (
	TurnRunning          TurnState = "running"
	TurnAwaitingApproval TurnState = "awaiting_approval"
	TurnCompleted        TurnState = "completed"
	TurnFailed           TurnState = "failed"
	TurnStopped          TurnState = "stopped"
)

// Turn is one user message and the model and tool calls it started.
type Turn struct {
	ID             string    `json:"id"`
	ConversationID string    `json:"conversation_id"`
	State          TurnState `json:"state"`
	// ErrorCode is the askbi code a failed or stopped turn ended with.
	ErrorCode string `json:"error_code,omitempty"`
	// Usage is the tokens of the turn's model calls, summed as they
	// return: what the providers reported, their prompt cache's share
	// included.
	Usage     Usage     `json:"usage"`
	CreatedAt time.Time `json:"created_at"`
	UpdatedAt time.Time `json:"updated_at"`
}

// Entry is one saved item of a conversation's history: a user question,
// an assistant reply (with the tool calls it asked for), or a tool's
// output. History is replayed to the model within a bound, each tool
// output filtered again at its stamped Sharing level.
type Entry struct {
	ID             string `json:"id"`
	ConversationID string `json:"conversation_id"`
	TurnID         string `json:"turn_id"`
	// Seq orders a conversation's entries; the store assigns it.
	Seq       int64      `json:"seq"`
	Role      Role       `json:"role"`
	Text      string     `json:"text,omitempty"`
	ToolCalls []ToolCall `json:"tool_calls,omitempty"`
	// ToolCallID, Tool, Output and Sharing describe a tool output entry.
	ToolCallID string          `json:"tool_call_id,omitempty"`
	Tool       string          `json:"tool,omitempty"`
	Output     json.RawMessage `json:"output,omitempty"` // redacted, never shown raw to the model
	Sharing    Sharing         `json:"sharing,omitempty"`
	// Attachments are a user message's files: name, type and size, and
	// a text file's text only under SharingRows (see AttachmentInfo).
	// Sharing is then the level they were saved at.
	Attachments []AttachmentInfo `json:"attachments,omitempty"`
	// Context are the items of the active context a user message was
	// sent with: the turn's selection as revalidated when it began, in
	// order. They stay with the message when the items later leave the
	// context, or are deleted.
	Context   []SentItem `json:"context,omitempty"`
	CreatedAt time.Time  `json:"created_at"`
}

// SentItem is one entity a user message was sent with, as it was then:
// a safe reference, its type, ID, name and label ("Chart: Weekly
// signups"), never an internal ID in the label.
type SentItem struct {
	EntityType access.EntityType `json:"entity_type"`
	ID         string            `json:"id"`
	Name       string            `json:"name"`
	Label      string            `json:"label"`
}

// ContextRef is one entity of a conversation's active context, as stored.
// It is revalidated against the catalog and access on every use.
type ContextRef struct {
	Type access.EntityType `json:"entity_type"`
	ID   string            `json:"id"`
}

// RunState is the state of one tool call in the work summary.
type RunState string

// Tool call states. running, approval_required and the final states
// completed, failed, rejected and unavailable; expired is how an opened
// conversation shows a call whose approval expired before anyone decided
// (it did not run; the run stays approval_required as stored).
const (
	RunRunning          RunState = "running"
	RunApprovalRequired RunState = "approval_required"
	RunCompleted        RunState = "completed"
	RunFailed           RunState = "failed"
	RunRejected         RunState = "rejected"
	RunUnavailable      RunState = "unavailable"
	RunExpired          RunState = "expired"
)

// ToolRun is one tool call as the work summary shows it: built from saved
// calls and results, never written by the model. It holds no raw
// arguments, queries, credentials or stack traces.
type ToolRun struct {
	CallID         string   `json:"call_id"`
	ConversationID string   `json:"conversation_id"`
	TurnID         string   `json:"turn_id"`
	Tool           string   `json:"tool"`
	Label          string   `json:"label"` // e.g. "Previewed data"
	State          RunState `json:"state"`
	ErrorCode      string   `json:"error_code,omitempty"`
	ErrorMessage   string   `json:"error_message,omitempty"` // safe
	// Retry is true when running the call again is safe (read-only tools).
	Retry      bool   `json:"retry"`
	ApprovalID string `json:"approval_id,omitempty"`
	// Result is the safe result the client renders (chart references and
	// the like; Output.Result): no rows, but for a remote tool's answer.
	Result    json.RawMessage `json:"result,omitempty"`
	CreatedAt time.Time       `json:"created_at"`
	UpdatedAt time.Time       `json:"updated_at"`
}

// Stores are the Assistant's storage, one small interface per job. The
// stores of one Stores share state: Turns, Context and ToolRuns keep what
// belongs to the conversations that Conversations holds (their writes are
// NotFound for a conversation it does not hold, and its
// DeleteConversation deletes what they keep), and Receipts keeps the
// receipts of the approvals that Approvals holds. So one value usually
// fills several fields: [NewMemoryStores] fills all six with two in-memory
// stores, and a database adapter does the same with its own. Every field
// is required. The suites of package asktest prove each one.
type Stores struct {
	Conversations ConversationStore
	Turns         TurnStore
	Context       ContextStore
	ToolRuns      ToolRunStore
	Approvals     ApprovalStore
	Receipts      ReceiptStore
}

// NewMemoryStores returns empty in-memory Stores: one
// [MemoryConversationStore] for Conversations, Turns, Context and ToolRuns,
// and one [MemoryApprovalStore] for Approvals and Receipts.
func NewMemoryStores() Stores {
	convs, approvals := NewMemoryConversationStore(), NewMemoryApprovalStore()
	return Stores{Conversations: convs, Turns: convs, Context: convs, ToolRuns: convs, Approvals: approvals, Receipts: approvals}
}

// missing names the first nil field of s, or "".
func (s Stores) missing() string {
	switch {
	case s.Conversations == nil:
		return "Conversations"
	case s.Turns == nil:
		return "Turns"
	case s.Context == nil:
		return "Context"
	case s.ToolRuns == nil:
		return "ToolRuns"
	case s.Approvals == nil:
		return "Approvals"
	case s.Receipts == nil:
		return "Receipts"
	}
	return ""
}

// ConversationStore keeps conversations: a user's chats in a team, with
// their titles. The caller checks ownership first. Implementations must be
// safe for concurrent use; asktest.RunConversationStore proves one.
type ConversationStore interface {
	// CreateConversation stores c. Conflict when c.ID exists.
	CreateConversation(ctx context.Context, c Conversation) error
	// Conversation returns one conversation, or NotFound.
	Conversation(ctx context.Context, id string) (Conversation, error)
	// Conversations lists a user's conversations in a team, most recently
	// updated first, at most limit; nothing for a limit below 1.
	Conversations(ctx context.Context, teamID, userID string, limit int) ([]Conversation, error)
	// UpdateConversation sets the title and UpdatedAt of c.ID. NotFound
	// when it does not exist.
	UpdateConversation(ctx context.Context, c Conversation) error
	// DeleteConversation deletes a conversation with everything the
	// Turns, Context and ToolRuns of its Stores keep of it: its turns,
	// entries, context and tool runs. NotFound when it does not exist.
	DeleteConversation(ctx context.Context, id string) error
}

// TurnStore keeps the turns of conversations and their history: the
// entries replayed to the model. Every method is scoped by conversation
// ID; the caller checks ownership first. A write is NotFound for a
// conversation that the Conversations of its Stores do not hold; a list
// answers an empty list for an unknown conversation. Saving a turn again
// keeps its first CreatedAt. Implementations must be safe for concurrent
// use, and AppendEntry atomic per conversation, also across processes
// sharing the store; asktest.RunTurnStore proves one.
type TurnStore interface {
	// SaveTurn inserts or updates turn t. NotFound when its conversation
	// does not exist.
	SaveTurn(ctx context.Context, t Turn) error
	// RenewTurn sets the UpdatedAt of turn id of a conversation to at
	// while the turn is still running, and reports whether it was: false
	// once it ended, or another instance recorded it abandoned. It is a
	// running turn's lease (Options.TurnLease). NotFound when the turn
	// does not exist.
	RenewTurn(ctx context.Context, conversationID, id string, at time.Time) (bool, error)
	// Turn returns turn id of a conversation, or NotFound.
	Turn(ctx context.Context, conversationID, id string) (Turn, error)
	// Turns lists a conversation's turns, oldest first.
	Turns(ctx context.Context, conversationID string) ([]Turn, error)

	// AppendEntry adds e at the end of its conversation's history and
	// returns it with Seq assigned: concurrent appends get distinct,
	// increasing Seqs. NotFound when the conversation does not exist.
	AppendEntry(ctx context.Context, e Entry) (Entry, error)
	// Entries returns the last limit entries of a conversation, oldest
	// first; nothing for a limit below 1.
	Entries(ctx context.Context, conversationID string, limit int) ([]Entry, error)
}

// ContextStore keeps each conversation's active context: the entities the
// user is asking about. The caller checks ownership first, and revalidates
// every ref on use. SetContext is NotFound for a conversation that the
// Conversations of its Stores do not hold; Context answers an empty list
// for an unknown one. Implementations must be safe for concurrent use, and
// SetContext atomic, also across processes sharing the store: concurrent
// SetContexts leave one of the sets written. asktest.RunContextStore
// proves one.
type ContextStore interface {
	// SetContext replaces a conversation's active context with refs, in
	// one transaction: rows not in refs are deleted, missing ones
	// inserted, order kept. NotFound when the conversation does not exist.
	SetContext(ctx context.Context, conversationID string, refs []ContextRef) error
	// Context returns the active context in the order it was set.
	Context(ctx context.Context, conversationID string) ([]ContextRef, error)
}

// ToolRunStore keeps the work summary: each conversation's tool runs. The
// caller checks ownership first. SaveToolRun is NotFound for a
// conversation that the Conversations of its Stores do not hold; ToolRuns
// answers an empty list for an unknown one. Saving a run again keeps its
// first CreatedAt. Implementations must be safe for concurrent use;
// asktest.RunToolRunStore proves one.
type ToolRunStore interface {
	// SaveToolRun inserts or updates the run with r.CallID. NotFound when
	// its conversation does not exist.
	SaveToolRun(ctx context.Context, r ToolRun) error
	// ToolRuns lists a conversation's tool runs, oldest first.
	ToolRuns(ctx context.Context, conversationID string) ([]ToolRun, error)
}

// ApprovalState is where an approval stands.
type ApprovalState string

// Approval states. An approval is consumed or rejected at most once.
const (
	ApprovalPending  ApprovalState = "pending"
	ApprovalConsumed ApprovalState = "consumed"
	ApprovalRejected ApprovalState = "rejected"
)

// Approval is a single-use server record that lets one gated tool call run.
// It is bound to the user, team, conversation, tool, the tool's Target
// (for a remote tool: its connection, remote name and fingerprint) and the
// SHA-256 of the call's canonical arguments, and it expires.
type Approval struct {
	ID             string `json:"id"`
	UserID         string `json:"user_id"`
	TeamID         string `json:"team_id"`
	ConversationID string `json:"conversation_id"`
	TurnID         string `json:"turn_id"`
	ToolCallID     string `json:"tool_call_id"`
	Tool           string `json:"tool"`
	// Target is the Tool.Target of the tool when the call was proposed:
	// "" for the product's own tools; for a remote tool its connection,
	// remote name and fingerprint, so an approval cannot run a tool that
	// another connection now offers under the same name, or one whose
	// definition widened since.
	Target    string          `json:"target,omitempty"`
	ArgsHash  string          `json:"args_hash"` // hex SHA-256 of the canonical arguments
	Arguments json.RawMessage `json:"arguments"` // canonical JSON
	// Targets are the entities the arguments name, by name, as the card
	// showed them when the call was proposed: what its receipt names
	// after a reload, also once they are gone (a deleted dashboard). Not
	// part of the binding.
	Targets   []dataexec.Ref `json:"targets,omitempty"`
	State     ApprovalState  `json:"state"`
	CreatedAt time.Time      `json:"created_at"`
	ExpiresAt time.Time      `json:"expires_at"`
}

// Binding is what an approve or reject request claims about an approval.
// Every field must match the stored approval.
type Binding struct {
	UserID         string
	TeamID         string
	ConversationID string
	Tool           string
	Target         string
	ArgsHash       string
}

// Matches reports whether a is bound as b claims: the one comparison of a
// binding, which every store and the assistant use.
func (b Binding) Matches(a Approval) bool {
	return b == Binding{UserID: a.UserID, TeamID: a.TeamID, ConversationID: a.ConversationID, Tool: a.Tool, Target: a.Target, ArgsHash: a.ArgsHash}
}

// Receipt is the stored result of an approved call, bound to its approval:
// what a retry of the approval answers, without running the call again.
type Receipt struct {
	ApprovalID string          `json:"approval_id"`
	ToolCallID string          `json:"tool_call_id"`
	Summary    string          `json:"summary,omitempty"` // the call's one-line summary, redacted
	Result     json.RawMessage `json:"result,omitempty"`
	// ErrorCode and ErrorMessage (safe) are set when the call failed.
	ErrorCode    string    `json:"error_code,omitempty"`
	ErrorMessage string    `json:"error_message,omitempty"`
	CreatedAt    time.Time `json:"created_at"`
}

// ApprovalStore keeps approvals: the single-use records that let gated
// tool calls run. Consume and Reject are atomic: of any number of
// concurrent calls on one approval, across processes sharing the store, at
// most one succeeds. Implementations must be safe for concurrent use;
// asktest.RunApprovalStore proves one.
type ApprovalStore interface {
	// CreateApproval stores a pending approval. Conflict when a.ID exists.
	CreateApproval(ctx context.Context, a Approval) error
	// Approval returns one approval, or NotFound.
	Approval(ctx context.Context, id string) (Approval, error)
	// Pending lists a conversation's pending approvals that expire after
	// now, oldest first, leaving out those whose tool call already ran
	// under another approval.
	Pending(ctx context.Context, conversationID string, now time.Time) ([]Approval, error)
	// Consume marks approval id consumed when it is pending, every field of
	// b matches it and now is before its ExpiresAt, and returns it. Any
	// mismatch, expiry, replay or unknown id is ApprovalInvalid and changes
	// nothing. Conflict when another approval of the same tool call was
	// already consumed.
	Consume(ctx context.Context, id string, b Binding, now time.Time) (Approval, error)
	// Reject burns approval id under the same binding, state and expiry
	// rules as Consume, marking it rejected. It never returns Conflict.
	Reject(ctx context.Context, id string, b Binding, now time.Time) (Approval, error)
	// Release returns consumed approval id to pending, for a caller whose
	// call never started (a store or network failure after Consume), so a
	// transient failure never uses up an approval. It is Conflict when the
	// approval is not consumed or already has a receipt (in the Receipts
	// of its Stores), NotFound when it does not exist.
	Release(ctx context.Context, id string) error
	// DeleteConversation deletes every approval of a conversation, with
	// its arguments and its receipt. Deleting none is not an error.
	DeleteConversation(ctx context.Context, conversationID string) error
}

// ReceiptStore keeps receipts: the results of approved calls, what a retry
// of an approval answers without running the call again, for the
// approvals that the Approvals of its Stores hold. PutReceipt is atomic: of
// concurrent calls for one approval, across processes sharing the store, at
// most one succeeds. Implementations must be safe for concurrent use;
// asktest.RunReceiptStore proves one.
//
// Between Consume and PutReceipt the call runs; a retry in that window
// waits for the receipt. A crash in it leaves the approval consumed
// without a receipt: calls run at most once.
type ReceiptStore interface {
	// PutReceipt stores r for a consumed approval. Storing the same
	// approval's receipt again is Conflict; so is a receipt for an approval
	// that is not consumed, for another tool call, or for r.ToolCallID
	// under another approval. NotFound when the approval does not exist.
	PutReceipt(ctx context.Context, r Receipt) error
	// Receipt returns the receipt of approval id, or NotFound.
	Receipt(ctx context.Context, approvalID string) (Receipt, error)
}
