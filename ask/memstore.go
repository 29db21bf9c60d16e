package ask

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/askbi/askbi"
)

// MemoryConversationStore is an in-memory [ConversationStore], [TurnStore],
// [ContextStore] and [ToolRunStore], the embedded default and the fake for
// tests ([NewMemoryStores]). It is safe for concurrent use: one mutex
// guards all state, so every call is atomic. It stores and returns copies,
// so callers can neither change stored state through a value they passed
// in nor through one they got back.
//
// Where those interfaces leave details open it behaves as the PostgreSQL
// store does: a turn or tool run is identified by its conversation and ID,
// and saving it again keeps the CreatedAt it was first saved with; a limit
// below 1 lists nothing; the lists of an unknown conversation are empty;
// SetContext drops repeated refs, keeping the first; a JSON field (Output,
// Result, a tool call's Arguments) that is not valid JSON is
// InvalidArgument and nothing is stored.
type MemoryConversationStore struct {
	mu    sync.Mutex
	convs map[string]*memConversation
}

type memConversation struct {
	c       Conversation
	turns   []Turn // in insertion order
	entries []Entry
	lastSeq int64
	context []ContextRef
	runs    []ToolRun // in insertion order
}

// NewMemoryConversationStore returns an empty store.
func NewMemoryConversationStore() *MemoryConversationStore {
	return &MemoryConversationStore{convs: map[string]*memConversation{}}
}

var (
	_ ConversationStore = (*MemoryConversationStore)(nil)
	_ TurnStore         = (*MemoryConversationStore)(nil)
	_ ContextStore      = (*MemoryConversationStore)(nil)
	_ ToolRunStore      = (*MemoryConversationStore)(nil)
)

func errConversationNotFound() error { return askbi.Errorf(askbi.NotFound, "Conversation not found.") }

// CreateConversation implements [ConversationStore].
func (s *MemoryConversationStore) CreateConversation(_ context.Context, c Conversation) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.convs[c.ID]; ok {
		return askbi.Errorf(askbi.Conflict, "Conversation already exists.")
	}
	s.convs[c.ID] = &memConversation{c: c}
	return nil
}

// Conversation implements [ConversationStore].
func (s *MemoryConversationStore) Conversation(_ context.Context, id string) (Conversation, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	mc, ok := s.convs[id]
	if !ok {
		return Conversation{}, errConversationNotFound()
	}
	return mc.c, nil
}

// Conversations implements [ConversationStore]. Ties in UpdatedAt go to the
// greater ID first.
func (s *MemoryConversationStore) Conversations(_ context.Context, teamID, userID string, limit int) ([]Conversation, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []Conversation
	for _, mc := range s.convs {
		if mc.c.TeamID == teamID && mc.c.UserID == userID {
			out = append(out, mc.c)
		}
	}
	slices.SortFunc(out, func(a, b Conversation) int {
		return cmp.Or(b.UpdatedAt.Compare(a.UpdatedAt), strings.Compare(b.ID, a.ID))
	})
	return out[:min(len(out), max(limit, 0))], nil
}

// UpdateConversation implements [ConversationStore].
func (s *MemoryConversationStore) UpdateConversation(_ context.Context, c Conversation) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	mc, ok := s.convs[c.ID]
	if !ok {
		return errConversationNotFound()
	}
	mc.c.Title, mc.c.UpdatedAt = c.Title, c.UpdatedAt
	return nil
}

// DeleteConversation implements [ConversationStore].
func (s *MemoryConversationStore) DeleteConversation(_ context.Context, id string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.convs[id]; !ok {
		return errConversationNotFound()
	}
	delete(s.convs, id)
	return nil
}

// SaveTurn implements [TurnStore].
func (s *MemoryConversationStore) SaveTurn(_ context.Context, t Turn) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	mc, ok := s.convs[t.ConversationID]
	if !ok {
		return errConversationNotFound()
	}
	i := slices.IndexFunc(mc.turns, func(old Turn) bool { return old.ID == t.ID })
	if i < 0 {
		mc.turns = append(mc.turns, t)
		return nil
	}
	t.CreatedAt = mc.turns[i].CreatedAt
	mc.turns[i] = t
	return nil
}

// RenewTurn implements [TurnStore].
func (s *MemoryConversationStore) RenewTurn(_ context.Context, conversationID, id string, at time.Time) (bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if mc, ok := s.convs[conversationID]; ok {
		if i := slices.IndexFunc(mc.turns, func(t Turn) bool { return t.ID == id }); i >= 0 {
			if mc.turns[i].State != TurnRunning {
				return false, nil
			}
			mc.turns[i].UpdatedAt = at
			return true, nil
		}
	}
	return false, askbi.Errorf(askbi.NotFound, "turn not found")
}

// Turn implements [TurnStore].
func (s *MemoryConversationStore) Turn(_ context.Context, conversationID, id string) (Turn, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if mc, ok := s.convs[conversationID]; ok {
		if i := slices.IndexFunc(mc.turns, func(t Turn) bool { return t.ID == id }); i >= 0 {
			return mc.turns[i], nil
		}
	}
	return Turn{}, askbi.Errorf(askbi.NotFound, "Turn not found.")
}

// Turns implements [TurnStore]. Turns created at the same time keep the
// order they were first saved in.
func (s *MemoryConversationStore) Turns(_ context.Context, conversationID string) ([]Turn, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	mc, ok := s.convs[conversationID]
	if !ok {
		return nil, nil
	}
	out := slices.Clone(mc.turns)
	slices.SortStableFunc(out, func(a, b Turn) int { return a.CreatedAt.Compare(b.CreatedAt) })
	return out, nil
}

// AppendEntry implements [TurnStore]. Seqs start at 1.
func (s *MemoryConversationStore) AppendEntry(_ context.Context, e Entry) (Entry, error) {
	if err := validEntry(e); err != nil {
		return Entry{}, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	mc, ok := s.convs[e.ConversationID]
	if !ok {
		return Entry{}, errConversationNotFound()
	}
	mc.lastSeq++
	e.Seq = mc.lastSeq
	e = cloneEntry(e)
	mc.entries = append(mc.entries, e)
	return cloneEntry(e), nil
}

// Entries implements [TurnStore].
func (s *MemoryConversationStore) Entries(_ context.Context, conversationID string, limit int) ([]Entry, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	mc, ok := s.convs[conversationID]
	if !ok || limit < 1 {
		return nil, nil
	}
	tail := mc.entries[max(len(mc.entries)-limit, 0):]
	out := make([]Entry, len(tail))
	for i, e := range tail {
		out[i] = cloneEntry(e)
	}
	return out, nil
}

// SetContext implements [ContextStore].
func (s *MemoryConversationStore) SetContext(_ context.Context, conversationID string, refs []ContextRef) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	mc, ok := s.convs[conversationID]
	if !ok {
		return errConversationNotFound()
	}
	mc.context = uniqueRefs(refs)
	return nil
}

// uniqueRefs returns a new slice of refs without repeats, first kept.
func uniqueRefs(refs []ContextRef) []ContextRef {
	out := make([]ContextRef, 0, len(refs))
	for _, r := range refs {
		if !slices.Contains(out, r) {
			out = append(out, r)
		}
	}
	return out
}

// Context implements [ContextStore].
func (s *MemoryConversationStore) Context(_ context.Context, conversationID string) ([]ContextRef, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	mc, ok := s.convs[conversationID]
	if !ok {
		return nil, nil
	}
	return slices.Clone(mc.context), nil
}

// SaveToolRun implements [ToolRunStore].
func (s *MemoryConversationStore) SaveToolRun(_ context.Context, r ToolRun) error {
	if !validJSON(r.Result) {
		return errInvalidJSON("result")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	mc, ok := s.convs[r.ConversationID]
	if !ok {
		return errConversationNotFound()
	}
	r.Result = bytes.Clone(r.Result)
	i := slices.IndexFunc(mc.runs, func(old ToolRun) bool { return old.CallID == r.CallID })
	if i < 0 {
		mc.runs = append(mc.runs, r)
		return nil
	}
	r.CreatedAt = mc.runs[i].CreatedAt
	mc.runs[i] = r
	return nil
}

// ToolRuns implements [ToolRunStore]. Runs created at the same time
// keep the order they were first saved in.
func (s *MemoryConversationStore) ToolRuns(_ context.Context, conversationID string) ([]ToolRun, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	mc, ok := s.convs[conversationID]
	if !ok {
		return nil, nil
	}
	out := make([]ToolRun, len(mc.runs))
	for i, r := range mc.runs {
		r.Result = bytes.Clone(r.Result)
		out[i] = r
	}
	slices.SortStableFunc(out, func(a, b ToolRun) int { return a.CreatedAt.Compare(b.CreatedAt) })
	return out, nil
}

// validJSON reports whether raw is empty (no value) or one JSON value.
func validJSON(raw json.RawMessage) bool { return len(raw) == 0 || json.Valid(raw) }

func errInvalidJSON(field string) error {
	return askbi.Errorf(askbi.InvalidArgument, "%s: not valid JSON", field)
}

func validEntry(e Entry) error {
	if !validJSON(e.Output) {
		return errInvalidJSON("output")
	}
	for _, c := range e.ToolCalls {
		if !validJSON(c.Arguments) {
			return errInvalidJSON("tool_calls.arguments")
		}
	}
	return nil
}

func cloneEntry(e Entry) Entry {
	e.Output = bytes.Clone(e.Output)
	e.Attachments = slices.Clone(e.Attachments)
	e.Context = slices.Clone(e.Context)
	if e.ToolCalls != nil {
		calls := make([]ToolCall, len(e.ToolCalls))
		for i, c := range e.ToolCalls {
			c.Arguments = bytes.Clone(c.Arguments)
			calls[i] = c
		}
		e.ToolCalls = calls
	}
	return e
}

// MemoryApprovalStore is an in-memory [ApprovalStore] and [ReceiptStore], the
// embedded default and the fake for tests ([NewMemoryStores]). It is safe
// for concurrent use: one mutex guards all state, so Consume, Reject and
// PutReceipt are atomic within the process (it is not shared across
// processes). It stores and returns copies.
//
// Where those interfaces leave details open it behaves as the PostgreSQL
// store does: a tool call is identified by its conversation and
// ToolCallID; CreateApproval stores the approval as pending whatever its
// State; Reject is never Conflict, so a stale approval of a call that
// already ran can still be dismissed; PutReceipt is Conflict for an
// approval that is not consumed or whose ToolCallID differs from r's;
// Arguments that are not valid JSON are InvalidArgument.
type MemoryApprovalStore struct {
	mu        sync.Mutex
	approvals map[string]*memApproval
	seq       int64              // insertion counter, orders equal CreatedAt
	consumed  map[callKey]string // tool call → the approval consumed for it
	receipts  map[string]Receipt // by approval ID
}

type memApproval struct {
	a   Approval
	seq int64
}

// callKey identifies a tool call.
type callKey struct{ conversationID, toolCallID string }

// NewMemoryApprovalStore returns an empty store.
func NewMemoryApprovalStore() *MemoryApprovalStore {
	return &MemoryApprovalStore{
		approvals: map[string]*memApproval{},
		consumed:  map[callKey]string{},
		receipts:  map[string]Receipt{},
	}
}

var (
	_ ApprovalStore = (*MemoryApprovalStore)(nil)
	_ ReceiptStore  = (*MemoryApprovalStore)(nil)
)

// CreateApproval implements [ApprovalStore].
func (s *MemoryApprovalStore) CreateApproval(_ context.Context, a Approval) error {
	if !validJSON(a.Arguments) {
		return errInvalidJSON("arguments")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.approvals[a.ID]; ok {
		return askbi.Errorf(askbi.Conflict, "Approval already exists.")
	}
	s.seq++
	a.State = ApprovalPending
	a.Arguments = bytes.Clone(a.Arguments)
	s.approvals[a.ID] = &memApproval{a: a, seq: s.seq}
	return nil
}

// Approval implements [ApprovalStore].
func (s *MemoryApprovalStore) Approval(_ context.Context, id string) (Approval, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	ma, ok := s.approvals[id]
	if !ok {
		return Approval{}, askbi.Errorf(askbi.NotFound, "Approval not found.")
	}
	return cloneApproval(ma.a), nil
}

// Pending implements [ApprovalStore]. Approvals created at the same time
// keep the order they were created in.
func (s *MemoryApprovalStore) Pending(_ context.Context, conversationID string, now time.Time) ([]Approval, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var found []*memApproval
	for _, ma := range s.approvals {
		_, ran := s.consumed[callKey{ma.a.ConversationID, ma.a.ToolCallID}]
		if ma.a.ConversationID == conversationID && ma.a.State == ApprovalPending && ma.a.ExpiresAt.After(now) && !ran {
			found = append(found, ma)
		}
	}
	slices.SortFunc(found, func(a, b *memApproval) int {
		return cmp.Or(a.a.CreatedAt.Compare(b.a.CreatedAt), cmp.Compare(a.seq, b.seq))
	})
	out := make([]Approval, len(found))
	for i, ma := range found {
		out[i] = cloneApproval(ma.a)
	}
	return out, nil
}

// Consume implements [ApprovalStore].
func (s *MemoryApprovalStore) Consume(_ context.Context, id string, b Binding, now time.Time) (Approval, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	ma, err := s.usable(id, b, now)
	if err != nil {
		return Approval{}, err
	}
	key := callKey{ma.a.ConversationID, ma.a.ToolCallID}
	if _, ok := s.consumed[key]; ok {
		return Approval{}, askbi.Errorf(askbi.Conflict, "Another approval of this tool call was already used.")
	}
	s.consumed[key] = id
	ma.a.State = ApprovalConsumed
	return cloneApproval(ma.a), nil
}

// Reject implements [ApprovalStore].
func (s *MemoryApprovalStore) Reject(_ context.Context, id string, b Binding, now time.Time) (Approval, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	ma, err := s.usable(id, b, now)
	if err != nil {
		return Approval{}, err
	}
	ma.a.State = ApprovalRejected
	return cloneApproval(ma.a), nil
}

// usable returns approval id when it is pending, unexpired at now and
// bound as b claims. s.mu must be held.
func (s *MemoryApprovalStore) usable(id string, b Binding, now time.Time) (*memApproval, error) {
	ma, ok := s.approvals[id]
	if !ok || ma.a.State != ApprovalPending || !now.Before(ma.a.ExpiresAt) || !b.Matches(ma.a) {
		return nil, errApprovalInvalid()
	}
	return ma, nil
}

// Release implements [ApprovalStore].
func (s *MemoryApprovalStore) Release(_ context.Context, id string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	ma, ok := s.approvals[id]
	if !ok {
		return askbi.Errorf(askbi.NotFound, "Approval not found.")
	}
	if _, ran := s.receipts[id]; ran || ma.a.State != ApprovalConsumed {
		return askbi.Errorf(askbi.Conflict, "Only a consumed approval without a result can be released.")
	}
	ma.a.State = ApprovalPending
	delete(s.consumed, callKey{ma.a.ConversationID, ma.a.ToolCallID})
	return nil
}

// PutReceipt implements [ReceiptStore].
func (s *MemoryApprovalStore) PutReceipt(_ context.Context, r Receipt) error {
	if !validJSON(r.Result) {
		return errInvalidJSON("result")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	ma, ok := s.approvals[r.ApprovalID]
	if !ok {
		return askbi.Errorf(askbi.NotFound, "Approval not found.")
	}
	if _, ok := s.receipts[r.ApprovalID]; ok {
		return askbi.Errorf(askbi.Conflict, "This approval already has a result.")
	}
	// Only one approval of a tool call can be consumed, so this also keeps
	// a call's result from being stored under another approval.
	if ma.a.State != ApprovalConsumed || ma.a.ToolCallID != r.ToolCallID {
		return askbi.Errorf(askbi.Conflict, "This action belongs to a different approval request.")
	}
	r.Result = bytes.Clone(r.Result)
	s.receipts[r.ApprovalID] = r
	return nil
}

// DeleteConversation implements [ApprovalStore].
func (s *MemoryApprovalStore) DeleteConversation(_ context.Context, conversationID string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	for id, ma := range s.approvals {
		if ma.a.ConversationID == conversationID {
			delete(s.approvals, id)
			delete(s.receipts, id)
		}
	}
	for k := range s.consumed {
		if k.conversationID == conversationID {
			delete(s.consumed, k)
		}
	}
	return nil
}

// Receipt implements [ReceiptStore].
func (s *MemoryApprovalStore) Receipt(_ context.Context, approvalID string) (Receipt, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	r, ok := s.receipts[approvalID]
	if !ok {
		return Receipt{}, askbi.Errorf(askbi.NotFound, "Receipt not found.")
	}
	r.Result = bytes.Clone(r.Result)
	return r, nil
}

func cloneApproval(a Approval) Approval {
	a.Arguments = bytes.Clone(a.Arguments)
	a.Targets = slices.Clone(a.Targets)
	return a
}
