package pgstore

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"time"

	"github.com/jmoiron/sqlx"
	"github.com/lib/pq"

	"github.com/askbi/askbi"
	"github.com/askbi/askbi/access"
	"github.com/askbi/askbi/ask"
)

// NewAskStores returns the [ask.Stores] on a migrated database: one
// [ConversationStore] for Conversations, Turns, Context and ToolRuns, and one
// [ApprovalStore] for Approvals and Receipts.
func NewAskStores(db *sqlx.DB) ask.Stores {
	convs, approvals := NewConversationStore(db), NewApprovalStore(db)
	return ask.Stores{Conversations: convs, Turns: convs, Context: convs, ToolRuns: convs, Approvals: approvals, Receipts: approvals}
}

// ConversationStore is an [ask.ConversationStore], [ask.TurnStore],
// [ask.ContextStore] and [ask.ToolRunStore] in PostgreSQL. A
// conversation's turns, entries, context and tool runs reference it with
// ON DELETE CASCADE. AppendEntry and SetContext lock the conversation's row
// for their transaction, so concurrent appends get distinct, increasing
// Seqs and concurrent SetContexts apply one after another, also across
// processes sharing the database. It is safe for concurrent use.
//
// It decides what those interfaces leave open as
// [ask.MemoryConversationStore] does: turns and tool runs are identified
// within their conversation, and saving one again keeps its first
// CreatedAt; a limit below 1 lists nothing; an unknown conversation has
// empty lists; SetContext drops repeated refs; a JSON field that is not
// valid JSON is InvalidArgument. JSON comes back byte for byte.
type ConversationStore struct {
	db *sqlx.DB
}

// NewConversationStore returns a [ConversationStore] on a migrated database.
func NewConversationStore(db *sqlx.DB) *ConversationStore { return &ConversationStore{db: db} }

var (
	_ ask.ConversationStore = (*ConversationStore)(nil)
	_ ask.TurnStore         = (*ConversationStore)(nil)
	_ ask.ContextStore      = (*ConversationStore)(nil)
	_ ask.ToolRunStore      = (*ConversationStore)(nil)
)

const conversationColumns = `id, team_id, user_id, title, created_at, updated_at`

type conversationRow struct {
	ID        string    `db:"id"`
	TeamID    string    `db:"team_id"`
	UserID    string    `db:"user_id"`
	Title     string    `db:"title"`
	CreatedAt time.Time `db:"created_at"`
	UpdatedAt time.Time `db:"updated_at"`
}

func (r conversationRow) conversation() ask.Conversation {
	return ask.Conversation{ID: r.ID, TeamID: r.TeamID, UserID: r.UserID, Title: r.Title,
		CreatedAt: r.CreatedAt.UTC(), UpdatedAt: r.UpdatedAt.UTC()}
}

func errConversationNotFound() error { return askbi.Errorf(askbi.NotFound, "Conversation not found.") }

// CreateConversation implements [ask.ConversationStore].
func (s *ConversationStore) CreateConversation(ctx context.Context, c ask.Conversation) error {
	return write(ctx, s.db, "pgstore.ConversationStore.CreateConversation", askbi.Errorf(askbi.Conflict, "Conversation already exists."),
		`INSERT INTO conversations (`+conversationColumns+`) VALUES ($1, $2, $3, $4, $5, $6)`,
		c.ID, c.TeamID, c.UserID, c.Title, c.CreatedAt, c.UpdatedAt)
}

// Conversation implements [ask.ConversationStore].
func (s *ConversationStore) Conversation(ctx context.Context, id string) (ask.Conversation, error) {
	var r conversationRow
	err := s.db.GetContext(ctx, &r, `SELECT `+conversationColumns+` FROM conversations WHERE id = $1`, id)
	if errors.Is(err, sql.ErrNoRows) {
		return ask.Conversation{}, errConversationNotFound()
	}
	if err != nil {
		return ask.Conversation{}, internal("pgstore.ConversationStore.Conversation", err)
	}
	return r.conversation(), nil
}

// Conversations implements [ask.ConversationStore]. Ties in UpdatedAt go to
// the greater ID first.
func (s *ConversationStore) Conversations(ctx context.Context, teamID, userID string, limit int) ([]ask.Conversation, error) {
	if limit < 1 {
		return nil, nil
	}
	var rows []conversationRow
	err := s.db.SelectContext(ctx, &rows, `SELECT `+conversationColumns+` FROM conversations
		WHERE team_id = $1 AND user_id = $2 ORDER BY updated_at DESC, id DESC LIMIT $3`, teamID, userID, limit)
	if err != nil {
		return nil, internal("pgstore.ConversationStore.Conversations", err)
	}
	out := make([]ask.Conversation, len(rows))
	for i, r := range rows {
		out[i] = r.conversation()
	}
	return out, nil
}

// UpdateConversation implements [ask.ConversationStore].
func (s *ConversationStore) UpdateConversation(ctx context.Context, c ask.Conversation) error {
	return execOne(ctx, s.db, "pgstore.ConversationStore.UpdateConversation", errConversationNotFound(),
		`UPDATE conversations SET title = $2, updated_at = $3 WHERE id = $1`, c.ID, c.Title, c.UpdatedAt)
}

// DeleteConversation implements [ask.ConversationStore].
func (s *ConversationStore) DeleteConversation(ctx context.Context, id string) error {
	return execOne(ctx, s.db, "pgstore.ConversationStore.DeleteConversation", errConversationNotFound(),
		`DELETE FROM conversations WHERE id = $1`, id)
}

// SaveTurn implements [ask.TurnStore].
func (s *ConversationStore) SaveTurn(ctx context.Context, t ask.Turn) error {
	u := t.Usage
	_, err := s.db.ExecContext(ctx, `INSERT INTO conversation_turns (conversation_id, id, state, error_code, created_at, updated_at,
			input_tokens, cached_input_tokens, cache_write_tokens, output_tokens)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)
		ON CONFLICT (conversation_id, id) DO UPDATE
		SET state = excluded.state, error_code = excluded.error_code, updated_at = excluded.updated_at,
			input_tokens = excluded.input_tokens, cached_input_tokens = excluded.cached_input_tokens,
			cache_write_tokens = excluded.cache_write_tokens, output_tokens = excluded.output_tokens`,
		t.ConversationID, t.ID, t.State, t.ErrorCode, t.CreatedAt, t.UpdatedAt, u.InputTokens, u.CachedInputTokens, u.CacheWriteTokens, u.OutputTokens)
	return childError("pgstore.ConversationStore.SaveTurn", err)
}

// RenewTurn implements [ask.TurnStore].
func (s *ConversationStore) RenewTurn(ctx context.Context, conversationID, id string, at time.Time) (bool, error) {
	var state string
	err := s.db.GetContext(ctx, &state, `WITH u AS (UPDATE conversation_turns SET updated_at = $3
		WHERE conversation_id = $1 AND id = $2 AND state = 'running' RETURNING state)
		SELECT state FROM u UNION ALL SELECT state FROM conversation_turns WHERE conversation_id = $1 AND id = $2 LIMIT 1`,
		conversationID, id, at)
	if errors.Is(err, sql.ErrNoRows) {
		return false, askbi.Errorf(askbi.NotFound, "turn not found")
	}
	if err != nil {
		return false, internal("pgstore.ConversationStore.RenewTurn", err)
	}
	return state == string(ask.TurnRunning), nil
}

type turnRow struct {
	ConversationID    string    `db:"conversation_id"`
	ID                string    `db:"id"`
	State             string    `db:"state"`
	ErrorCode         string    `db:"error_code"`
	CreatedAt         time.Time `db:"created_at"`
	UpdatedAt         time.Time `db:"updated_at"`
	InputTokens       int64     `db:"input_tokens"`
	CachedInputTokens int64     `db:"cached_input_tokens"`
	CacheWriteTokens  int64     `db:"cache_write_tokens"`
	OutputTokens      int64     `db:"output_tokens"`
}

const turnColumns = `conversation_id, id, state, error_code, created_at, updated_at,
	input_tokens, cached_input_tokens, cache_write_tokens, output_tokens`

// Turns implements [ask.TurnStore]. Turns created at the same time
// keep the order they were first saved in.
func (s *ConversationStore) Turns(ctx context.Context, conversationID string) ([]ask.Turn, error) {
	var rows []turnRow
	err := s.db.SelectContext(ctx, &rows, `SELECT `+turnColumns+`
		FROM conversation_turns WHERE conversation_id = $1 ORDER BY created_at, n`, conversationID)
	if err != nil {
		return nil, internal("pgstore.ConversationStore.Turns", err)
	}
	out := make([]ask.Turn, len(rows))
	for i, r := range rows {
		out[i] = r.turn()
	}
	return out, nil
}

// Turn implements [ask.TurnStore].
func (s *ConversationStore) Turn(ctx context.Context, conversationID, id string) (ask.Turn, error) {
	var r turnRow
	err := s.db.GetContext(ctx, &r, `SELECT `+turnColumns+`
		FROM conversation_turns WHERE conversation_id = $1 AND id = $2`, conversationID, id)
	if errors.Is(err, sql.ErrNoRows) {
		return ask.Turn{}, askbi.Errorf(askbi.NotFound, "Turn not found.")
	}
	if err != nil {
		return ask.Turn{}, internal("pgstore.ConversationStore.Turn", err)
	}
	return r.turn(), nil
}

func (r turnRow) turn() ask.Turn {
	return ask.Turn{ID: r.ID, ConversationID: r.ConversationID, State: ask.TurnState(r.State), ErrorCode: r.ErrorCode,
		Usage:     ask.Usage{InputTokens: r.InputTokens, CachedInputTokens: r.CachedInputTokens, CacheWriteTokens: r.CacheWriteTokens, OutputTokens: r.OutputTokens},
		CreatedAt: r.CreatedAt.UTC(), UpdatedAt: r.UpdatedAt.UTC()}
}

const entryColumns = `conversation_id, seq, id, turn_id, role, text, tool_calls, tool_call_id, tool, output, sharing, created_at, attachments, context`

type entryRow struct {
	ConversationID string    `db:"conversation_id"`
	Seq            int64     `db:"seq"`
	ID             string    `db:"id"`
	TurnID         string    `db:"turn_id"`
	Role           string    `db:"role"`
	Text           string    `db:"text"`
	ToolCalls      []byte    `db:"tool_calls"`
	ToolCallID     string    `db:"tool_call_id"`
	Tool           string    `db:"tool"`
	Output         []byte    `db:"output"`
	Sharing        string    `db:"sharing"`
	CreatedAt      time.Time `db:"created_at"`
	Attachments    []byte    `db:"attachments"`
	Context        []byte    `db:"context"`
}

func (r entryRow) entry() (ask.Entry, error) {
	e := ask.Entry{ID: r.ID, ConversationID: r.ConversationID, TurnID: r.TurnID, Seq: r.Seq, Role: ask.Role(r.Role),
		Text: r.Text, ToolCallID: r.ToolCallID, Tool: r.Tool, Output: rawJSON(r.Output), Sharing: ask.Sharing(r.Sharing),
		CreatedAt: r.CreatedAt.UTC()}
	if r.ToolCalls != nil {
		if err := json.Unmarshal(r.ToolCalls, &e.ToolCalls); err != nil {
			return ask.Entry{}, err
		}
	}
	if r.Attachments != nil {
		if err := json.Unmarshal(r.Attachments, &e.Attachments); err != nil {
			return ask.Entry{}, err
		}
	}
	if r.Context != nil {
		if err := json.Unmarshal(r.Context, &e.Context); err != nil {
			return ask.Entry{}, err
		}
	}
	return e, nil
}

// AppendEntry implements [ask.TurnStore]. Seqs start at 1.
func (s *ConversationStore) AppendEntry(ctx context.Context, e ask.Entry) (ask.Entry, error) {
	calls, err := toolCallsJSON(e.ToolCalls)
	if err != nil {
		return ask.Entry{}, err
	}
	if !validJSON(e.Output) {
		return ask.Entry{}, errInvalidJSON("output")
	}
	var atts []byte // NULL without attachments
	if len(e.Attachments) > 0 {
		if atts, err = json.Marshal(e.Attachments); err != nil {
			return ask.Entry{}, err
		}
	}
	var items []byte // NULL without items
	if len(e.Context) > 0 {
		if items, err = json.Marshal(e.Context); err != nil {
			return ask.Entry{}, err
		}
	}
	err = Transact(ctx, s.db, func(tx *sqlx.Tx) error {
		err := tx.GetContext(ctx, &e.Seq, `UPDATE conversations SET last_seq = last_seq + 1 WHERE id = $1 RETURNING last_seq`,
			e.ConversationID)
		if errors.Is(err, sql.ErrNoRows) {
			return errConversationNotFound()
		}
		if err != nil {
			return err
		}
		_, err = tx.ExecContext(ctx, `INSERT INTO conversation_entries (`+entryColumns+`)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14)`,
			e.ConversationID, e.Seq, e.ID, e.TurnID, e.Role, e.Text, calls, e.ToolCallID, e.Tool, jsonArg(e.Output),
			e.Sharing, e.CreatedAt, jsonArg(atts), jsonArg(items))
		return err
	})
	if err != nil {
		return ask.Entry{}, storeError("pgstore.ConversationStore.AppendEntry", err)
	}
	return e, nil
}

// Entries implements [ask.TurnStore].
func (s *ConversationStore) Entries(ctx context.Context, conversationID string, limit int) ([]ask.Entry, error) {
	if limit < 1 {
		return nil, nil
	}
	var rows []entryRow
	err := s.db.SelectContext(ctx, &rows, `SELECT * FROM (
		SELECT `+entryColumns+` FROM conversation_entries WHERE conversation_id = $1 ORDER BY seq DESC LIMIT $2
	) last ORDER BY seq`, conversationID, limit)
	if err != nil {
		return nil, internal("pgstore.ConversationStore.Entries", err)
	}
	out := make([]ask.Entry, len(rows))
	for i, r := range rows {
		if out[i], err = r.entry(); err != nil {
			return nil, internal("pgstore.ConversationStore.Entries", err)
		}
	}
	return out, nil
}

// SetContext implements [ask.ContextStore].
func (s *ConversationStore) SetContext(ctx context.Context, conversationID string, refs []ask.ContextRef) error {
	var types, ids pq.StringArray
	seen := map[ask.ContextRef]bool{}
	for _, r := range refs {
		if !seen[r] {
			seen[r] = true
			types, ids = append(types, string(r.Type)), append(ids, r.ID)
		}
	}
	err := Transact(ctx, s.db, func(tx *sqlx.Tx) error {
		var one int
		err := tx.GetContext(ctx, &one, `SELECT 1 FROM conversations WHERE id = $1 FOR NO KEY UPDATE`, conversationID)
		if errors.Is(err, sql.ErrNoRows) {
			return errConversationNotFound()
		}
		if err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, `DELETE FROM conversation_context c WHERE conversation_id = $1
			AND NOT EXISTS (SELECT FROM unnest($2::text[], $3::text[]) AS r (entity_type, entity_id)
				WHERE r.entity_type = c.entity_type AND r.entity_id = c.entity_id)`,
			conversationID, types, ids); err != nil {
			return err
		}
		_, err = tx.ExecContext(ctx, `INSERT INTO conversation_context (conversation_id, entity_type, entity_id, position)
			SELECT $1, r.entity_type, r.entity_id, r.position
			FROM unnest($2::text[], $3::text[]) WITH ORDINALITY AS r (entity_type, entity_id, position)
			ON CONFLICT (conversation_id, entity_type, entity_id) DO UPDATE SET position = excluded.position`,
			conversationID, types, ids)
		return err
	})
	if err != nil {
		return storeError("pgstore.ConversationStore.SetContext", err)
	}
	return nil
}

// Context implements [ask.ContextStore].
func (s *ConversationStore) Context(ctx context.Context, conversationID string) ([]ask.ContextRef, error) {
	var rows []struct {
		Type string `db:"entity_type"`
		ID   string `db:"entity_id"`
	}
	err := s.db.SelectContext(ctx, &rows, `SELECT entity_type, entity_id FROM conversation_context
		WHERE conversation_id = $1 ORDER BY position`, conversationID)
	if err != nil {
		return nil, internal("pgstore.ConversationStore.Context", err)
	}
	out := make([]ask.ContextRef, len(rows))
	for i, r := range rows {
		out[i] = ask.ContextRef{Type: access.EntityType(r.Type), ID: r.ID}
	}
	return out, nil
}

const toolRunColumns = `conversation_id, call_id, turn_id, tool, label, state, error_code, error_message, retry, approval_id,
	result, created_at, updated_at`

type toolRunRow struct {
	ConversationID string    `db:"conversation_id"`
	CallID         string    `db:"call_id"`
	TurnID         string    `db:"turn_id"`
	Tool           string    `db:"tool"`
	Label          string    `db:"label"`
	State          string    `db:"state"`
	ErrorCode      string    `db:"error_code"`
	ErrorMessage   string    `db:"error_message"`
	Retry          bool      `db:"retry"`
	ApprovalID     string    `db:"approval_id"`
	Result         []byte    `db:"result"`
	CreatedAt      time.Time `db:"created_at"`
	UpdatedAt      time.Time `db:"updated_at"`
}

// SaveToolRun implements [ask.ToolRunStore].
func (s *ConversationStore) SaveToolRun(ctx context.Context, r ask.ToolRun) error {
	if !validJSON(r.Result) {
		return errInvalidJSON("result")
	}
	_, err := s.db.ExecContext(ctx, `INSERT INTO tool_runs (`+toolRunColumns+`)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13)
		ON CONFLICT (conversation_id, call_id) DO UPDATE SET turn_id = excluded.turn_id, tool = excluded.tool,
			label = excluded.label, state = excluded.state, error_code = excluded.error_code,
			error_message = excluded.error_message, retry = excluded.retry, approval_id = excluded.approval_id,
			result = excluded.result, updated_at = excluded.updated_at`,
		r.ConversationID, r.CallID, r.TurnID, r.Tool, r.Label, r.State, r.ErrorCode, r.ErrorMessage, r.Retry, r.ApprovalID,
		jsonArg(r.Result), r.CreatedAt, r.UpdatedAt)
	return childError("pgstore.ConversationStore.SaveToolRun", err)
}

// ToolRuns implements [ask.ToolRunStore]. Runs created at the same time
// keep the order they were first saved in.
func (s *ConversationStore) ToolRuns(ctx context.Context, conversationID string) ([]ask.ToolRun, error) {
	var rows []toolRunRow
	err := s.db.SelectContext(ctx, &rows, `SELECT `+toolRunColumns+` FROM tool_runs
		WHERE conversation_id = $1 ORDER BY created_at, n`, conversationID)
	if err != nil {
		return nil, internal("pgstore.ConversationStore.ToolRuns", err)
	}
	out := make([]ask.ToolRun, len(rows))
	for i, r := range rows {
		out[i] = ask.ToolRun{CallID: r.CallID, ConversationID: r.ConversationID, TurnID: r.TurnID, Tool: r.Tool, Label: r.Label,
			State: ask.RunState(r.State), ErrorCode: r.ErrorCode, ErrorMessage: r.ErrorMessage, Retry: r.Retry,
			ApprovalID: r.ApprovalID, Result: rawJSON(r.Result), CreatedAt: r.CreatedAt.UTC(), UpdatedAt: r.UpdatedAt.UTC()}
	}
	return out, nil
}

// ApprovalStore is an [ask.ApprovalStore] and [ask.ReceiptStore] in
// PostgreSQL. Consume and Reject are each one conditional UPDATE of the
// approval's row, and a partial unique index admits one consumed approval
// per tool call, so of any number of concurrent calls, from any number of
// processes sharing the database, at most one succeeds. It is safe for
// concurrent use.
//
// It decides what those interfaces leave open as [ask.MemoryApprovalStore]
// does: a tool call is identified by its conversation and ToolCallID;
// CreateApproval stores every approval as pending; Reject is never
// Conflict; PutReceipt is Conflict for an approval that is not consumed or
// whose ToolCallID differs from the receipt's; Arguments that are not valid
// JSON are InvalidArgument. Arguments come back byte for byte.
type ApprovalStore struct {
	db *sqlx.DB
}

// NewApprovalStore returns an [ApprovalStore] on a migrated database.
func NewApprovalStore(db *sqlx.DB) *ApprovalStore { return &ApprovalStore{db: db} }

var (
	_ ask.ApprovalStore = (*ApprovalStore)(nil)
	_ ask.ReceiptStore  = (*ApprovalStore)(nil)
)

const approvalColumns = `id, user_id, team_id, conversation_id, turn_id, tool_call_id, tool, args_hash, arguments, state,
	created_at, expires_at, target, targets`

type approvalRow struct {
	ID             string    `db:"id"`
	UserID         string    `db:"user_id"`
	TeamID         string    `db:"team_id"`
	ConversationID string    `db:"conversation_id"`
	TurnID         string    `db:"turn_id"`
	ToolCallID     string    `db:"tool_call_id"`
	Tool           string    `db:"tool"`
	ArgsHash       string    `db:"args_hash"`
	Arguments      []byte    `db:"arguments"`
	State          string    `db:"state"`
	CreatedAt      time.Time `db:"created_at"`
	ExpiresAt      time.Time `db:"expires_at"`
	Target         string    `db:"target"`
	Targets        []byte    `db:"targets"` // NULL for none
}

func (r approvalRow) approval() (ask.Approval, error) {
	a := ask.Approval{ID: r.ID, UserID: r.UserID, TeamID: r.TeamID, ConversationID: r.ConversationID, TurnID: r.TurnID,
		ToolCallID: r.ToolCallID, Tool: r.Tool, Target: r.Target, ArgsHash: r.ArgsHash, Arguments: rawJSON(r.Arguments),
		State: ask.ApprovalState(r.State), CreatedAt: r.CreatedAt.UTC(), ExpiresAt: r.ExpiresAt.UTC()}
	if r.Targets != nil {
		if err := json.Unmarshal(r.Targets, &a.Targets); err != nil {
			return ask.Approval{}, internal("pgstore.ApprovalStore: read targets", err)
		}
	}
	return a, nil
}

func errApprovalInvalid() error {
	return askbi.Errorf(askbi.ApprovalInvalid, "The approval is invalid or has expired.")
}

// CreateApproval implements [ask.ApprovalStore].
func (s *ApprovalStore) CreateApproval(ctx context.Context, a ask.Approval) error {
	if !validJSON(a.Arguments) {
		return errInvalidJSON("arguments")
	}
	var targets []byte // NULL without targets
	if len(a.Targets) > 0 {
		var err error
		if targets, err = json.Marshal(a.Targets); err != nil {
			return internal("pgstore.ApprovalStore.CreateApproval", err)
		}
	}
	return write(ctx, s.db, "pgstore.ApprovalStore.CreateApproval", askbi.Errorf(askbi.Conflict, "Approval already exists."),
		`INSERT INTO approvals (`+approvalColumns+`) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, 'pending', $10, $11, $12, $13)`,
		a.ID, a.UserID, a.TeamID, a.ConversationID, a.TurnID, a.ToolCallID, a.Tool, a.ArgsHash, jsonArg(a.Arguments),
		a.CreatedAt, a.ExpiresAt, a.Target, jsonArg(targets))
}

// Approval implements [ask.ApprovalStore].
func (s *ApprovalStore) Approval(ctx context.Context, id string) (ask.Approval, error) {
	var r approvalRow
	err := s.db.GetContext(ctx, &r, `SELECT `+approvalColumns+` FROM approvals WHERE id = $1`, id)
	if errors.Is(err, sql.ErrNoRows) {
		return ask.Approval{}, askbi.Errorf(askbi.NotFound, "Approval not found.")
	}
	if err != nil {
		return ask.Approval{}, internal("pgstore.ApprovalStore.Approval", err)
	}
	return r.approval()
}

// Pending implements [ask.ApprovalStore]. Approvals created at the same time
// keep the order they were created in.
func (s *ApprovalStore) Pending(ctx context.Context, conversationID string, now time.Time) ([]ask.Approval, error) {
	var rows []approvalRow
	err := s.db.SelectContext(ctx, &rows, `SELECT `+approvalColumns+` FROM approvals a
		WHERE conversation_id = $1 AND state = 'pending' AND expires_at > $2
		  AND NOT EXISTS (SELECT 1 FROM approvals c WHERE c.conversation_id = a.conversation_id
		                  AND c.tool_call_id = a.tool_call_id AND c.state = 'consumed')
		ORDER BY created_at, n`, conversationID, now)
	if err != nil {
		return nil, internal("pgstore.ApprovalStore.Pending", err)
	}
	out := make([]ask.Approval, len(rows))
	for i, r := range rows {
		if out[i], err = r.approval(); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// Consume implements [ask.ApprovalStore].
func (s *ApprovalStore) Consume(ctx context.Context, id string, b ask.Binding, now time.Time) (ask.Approval, error) {
	a, err := s.settle(ctx, ask.ApprovalConsumed, id, b, now)
	switch {
	case isUniqueViolation(err):
		return ask.Approval{}, askbi.Errorf(askbi.Conflict, "Another approval of this tool call was already used.")
	case err != nil:
		return ask.Approval{}, storeError("pgstore.ApprovalStore.Consume", err)
	}
	return a, nil
}

// Reject implements [ask.ApprovalStore].
func (s *ApprovalStore) Reject(ctx context.Context, id string, b ask.Binding, now time.Time) (ask.Approval, error) {
	a, err := s.settle(ctx, ask.ApprovalRejected, id, b, now)
	if err != nil {
		return ask.Approval{}, storeError("pgstore.ApprovalStore.Reject", err)
	}
	return a, nil
}

// settle moves approval id from pending to state, when b matches it and it
// has not expired at now. The row lock makes concurrent calls wait and then
// see the state the winner left.
func (s *ApprovalStore) settle(ctx context.Context, state ask.ApprovalState, id string, b ask.Binding, now time.Time) (ask.Approval, error) {
	var a ask.Approval
	err := Transact(ctx, s.db, func(tx *sqlx.Tx) error {
		var r approvalRow
		err := tx.GetContext(ctx, &r, `SELECT `+approvalColumns+` FROM approvals WHERE id = $1 FOR UPDATE`, id)
		if errors.Is(err, sql.ErrNoRows) {
			return errApprovalInvalid()
		}
		if err != nil {
			return err
		}
		if a, err = r.approval(); err != nil {
			return err
		}
		if a.State != ask.ApprovalPending || !now.Before(a.ExpiresAt) || !b.Matches(a) {
			return errApprovalInvalid()
		}
		a.State = state
		_, err = tx.ExecContext(ctx, `UPDATE approvals SET state = $1 WHERE id = $2`, state, id)
		return err
	})
	if err != nil {
		return ask.Approval{}, err
	}
	return a, nil
}

// Release implements [ask.ApprovalStore].
func (s *ApprovalStore) Release(ctx context.Context, id string) error {
	const op = "pgstore.ApprovalStore.Release"
	res, err := s.db.ExecContext(ctx, `UPDATE approvals SET state = 'pending'
		WHERE id = $1 AND state = 'consumed' AND NOT EXISTS (SELECT 1 FROM approval_receipts WHERE approval_id = $1)`, id)
	if err != nil {
		return internal(op, err)
	}
	if n, err := res.RowsAffected(); err != nil {
		return internal(op, err)
	} else if n == 1 {
		return nil
	}
	if _, err := s.Approval(ctx, id); err != nil {
		return err
	}
	return askbi.Errorf(askbi.Conflict, "Only a consumed approval without a result can be released.")
}

// PutReceipt implements [ask.ReceiptStore].
func (s *ApprovalStore) PutReceipt(ctx context.Context, r ask.Receipt) error {
	const op = "pgstore.ApprovalStore.PutReceipt"
	if !validJSON(r.Result) {
		return errInvalidJSON("result")
	}
	// Only the caller that consumed an approval stores its receipt or
	// releases it, so what this reads still holds when the insert runs;
	// the insert's keys settle races between receipts.
	var a approvalRow
	err := s.db.GetContext(ctx, &a, `SELECT `+approvalColumns+` FROM approvals WHERE id = $1`, r.ApprovalID)
	if errors.Is(err, sql.ErrNoRows) {
		return askbi.Errorf(askbi.NotFound, "Approval not found.")
	}
	if err != nil {
		return internal(op, err)
	}
	if a.State != string(ask.ApprovalConsumed) || a.ToolCallID != r.ToolCallID {
		return askbi.Errorf(askbi.Conflict, "This action belongs to a different approval request.")
	}
	return write(ctx, s.db, op, askbi.Errorf(askbi.Conflict, "This approval already has a result."),
		`INSERT INTO approval_receipts (approval_id, conversation_id, tool_call_id, summary, result, error_code, error_message, created_at)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8)`,
		r.ApprovalID, a.ConversationID, r.ToolCallID, r.Summary, jsonArg(r.Result), r.ErrorCode, r.ErrorMessage, r.CreatedAt)
}

// DeleteConversation implements [ask.ApprovalStore]; receipts go with their
// approvals (ON DELETE CASCADE).
func (s *ApprovalStore) DeleteConversation(ctx context.Context, conversationID string) error {
	if _, err := s.db.ExecContext(ctx, `DELETE FROM approvals WHERE conversation_id = $1`, conversationID); err != nil {
		return internal("pgstore.ApprovalStore.DeleteConversation", err)
	}
	return nil
}

// Receipt implements [ask.ReceiptStore].
func (s *ApprovalStore) Receipt(ctx context.Context, approvalID string) (ask.Receipt, error) {
	var r struct {
		ApprovalID   string    `db:"approval_id"`
		ToolCallID   string    `db:"tool_call_id"`
		Summary      string    `db:"summary"`
		Result       []byte    `db:"result"`
		ErrorCode    string    `db:"error_code"`
		ErrorMessage string    `db:"error_message"`
		CreatedAt    time.Time `db:"created_at"`
	}
	err := s.db.GetContext(ctx, &r, `SELECT approval_id, tool_call_id, summary, result, error_code, error_message, created_at
		FROM approval_receipts WHERE approval_id = $1`, approvalID)
	if errors.Is(err, sql.ErrNoRows) {
		return ask.Receipt{}, askbi.Errorf(askbi.NotFound, "Receipt not found.")
	}
	if err != nil {
		return ask.Receipt{}, internal("pgstore.ApprovalStore.Receipt", err)
	}
	return ask.Receipt{ApprovalID: r.ApprovalID, ToolCallID: r.ToolCallID, Summary: r.Summary, Result: rawJSON(r.Result),
		ErrorCode: r.ErrorCode, ErrorMessage: r.ErrorMessage, CreatedAt: r.CreatedAt.UTC()}, nil
}

// validJSON reports whether raw is empty (no value) or one JSON value.
func validJSON(raw []byte) bool { return len(raw) == 0 || json.Valid(raw) }

func errInvalidJSON(field string) error {
	return askbi.Errorf(askbi.InvalidArgument, "%s: not valid JSON", field)
}

// jsonArg passes raw to a json column: as text, since lib/pq sends []byte
// as bytea, and as NULL when empty.
func jsonArg(raw []byte) any {
	if len(raw) == 0 {
		return nil
	}
	return string(raw)
}

// rawJSON returns a json column as read, nil for NULL.
func rawJSON(b []byte) json.RawMessage {
	if b == nil {
		return nil
	}
	return json.RawMessage(b)
}

// toolCallsJSON encodes calls for a json column, each call's Arguments as
// given rather than re-encoded (json.Marshal would compact and escape
// them), NULL for none.
func toolCallsJSON(calls []ask.ToolCall) (any, error) {
	if calls == nil {
		return nil, nil
	}
	b := []byte{'['}
	for i, c := range calls {
		if !validJSON(c.Arguments) {
			return nil, errInvalidJSON("tool_calls.arguments")
		}
		if i > 0 {
			b = append(b, ',')
		}
		id, _ := json.Marshal(c.ID) // strings always encode
		name, _ := json.Marshal(c.Name)
		b = append(append(append(append(b, `{"id":`...), id...), `,"name":`...), name...)
		if len(c.Arguments) > 0 {
			b = append(append(b, `,"arguments":`...), c.Arguments...)
		}
		b = append(b, '}')
	}
	return string(append(b, ']')), nil
}

// childError maps the error of writing a conversation's child row: a
// missing conversation fails its foreign key.
func childError(op string, err error) error {
	var pe *pq.Error
	switch {
	case err == nil:
		return nil
	case errors.As(err, &pe) && pe.Code == "23503": // foreign_key_violation
		return errConversationNotFound()
	}
	return internal(op, err)
}

// storeError passes on an *askbi.Error and wraps any other error as
// internal.
func storeError(op string, err error) error {
	var e *askbi.Error
	if errors.As(err, &e) {
		return err
	}
	return internal(op, err)
}
