package ask

import (
	"context"
	"encoding/json"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/askbi/askbi"
	"github.com/askbi/askbi/access"
	"github.com/askbi/askbi/dataexec"
)

// owned returns conversation id when it belongs to live principal p, and
// NotFound otherwise.
func (a *Assistant) owned(ctx context.Context, p access.Principal, id string) (Conversation, error) {
	if id == "" || len(id) > 100 {
		return Conversation{}, askbi.Errorf(askbi.InvalidArgument, "conversation_id: must be 1 to 100 characters")
	}
	c, err := a.stores.Conversations.Conversation(ctx, id)
	if err == nil && (c.TeamID != p.TeamID || c.UserID != p.UserID) {
		err = askbi.E(askbi.NotFound)
	}
	if askbi.ErrorCode(err) == askbi.NotFound {
		return Conversation{}, askbi.Errorf(askbi.NotFound, "conversation not found")
	}
	return c, err
}

// CheckConversation returns nil when conversation id is p's, and
// NotFound otherwise, for an adapter that records a reference to it (a
// connection set up from the conversation).
func (a *Assistant) CheckConversation(ctx context.Context, p access.Principal, id string) (err error) {
	defer askbi.Wrap(&err, "ask.Assistant.CheckConversation")
	live, err := a.begin(ctx, p)
	if err != nil {
		return err
	}
	_, err = a.owned(ctx, live, id)
	return err
}

// CreateConversation starts an empty conversation for p.
func (a *Assistant) CreateConversation(ctx context.Context, p access.Principal) (_ Conversation, err error) {
	defer askbi.Wrap(&err, "ask.Assistant.CreateConversation")
	live, err := a.begin(ctx, p)
	if err != nil {
		return Conversation{}, err
	}
	now := a.o.Now().UTC()
	c := Conversation{ID: newID("conv"), TeamID: live.TeamID, UserID: live.UserID, CreatedAt: now, UpdatedAt: now}
	return c, a.stores.Conversations.CreateConversation(ctx, c)
}

// Conversations lists p's conversations, most recent first, at most limit
// (1 to 100; 0 means 50).
func (a *Assistant) Conversations(ctx context.Context, p access.Principal, limit int) (_ []Conversation, err error) {
	defer askbi.Wrap(&err, "ask.Assistant.Conversations")
	switch {
	case limit == 0:
		limit = 50
	case limit < 0 || limit > 100:
		return nil, askbi.Errorf(askbi.InvalidArgument, "limit: must be between 1 and 100")
	}
	live, err := a.begin(ctx, p)
	if err != nil {
		return nil, err
	}
	return a.stores.Conversations.Conversations(ctx, live.TeamID, live.UserID, limit)
}

// maxTitleChars bounds a conversation's title as a user names it.
const maxTitleChars = 100

// RenameConversation sets the title of one of p's conversations (spaces
// folded; a secret in it is masked, as in a question) and returns it.
// InvalidArgument for an empty title or one over 100 characters;
// NotFound when the conversation is not p's.
func (a *Assistant) RenameConversation(ctx context.Context, p access.Principal, id, title string) (_ Conversation, err error) {
	defer askbi.Wrap(&err, "ask.Assistant.RenameConversation")
	title = strings.Join(strings.Fields(title), " ")
	if title == "" || utf8.RuneCountInString(title) > maxTitleChars {
		return Conversation{}, askbi.Errorf(askbi.InvalidArgument, "title: must be 1 to %d characters", maxTitleChars)
	}
	live, err := a.begin(ctx, p)
	if err != nil {
		return Conversation{}, err
	}
	c, err := a.owned(ctx, live, id)
	if err != nil {
		return Conversation{}, err
	}
	c.Title, c.UpdatedAt = a.redact.String(title), a.o.Now().UTC()
	if err := a.stores.Conversations.UpdateConversation(ctx, c); err != nil {
		return Conversation{}, err
	}
	return c, nil
}

// DeleteConversation deletes one of p's conversations.
func (a *Assistant) DeleteConversation(ctx context.Context, p access.Principal, id string) (err error) {
	defer askbi.Wrap(&err, "ask.Assistant.DeleteConversation")
	live, err := a.begin(ctx, p)
	if err != nil {
		return err
	}
	if _, err := a.owned(ctx, live, id); err != nil {
		return err
	}
	// Approvals first: their arguments and results go with the history.
	if err := a.stores.Approvals.DeleteConversation(ctx, id); err != nil {
		return err
	}
	return a.stores.Conversations.DeleteConversation(ctx, id)
}

// View is an opened conversation: what the client shows.
type View struct {
	Conversation Conversation      `json:"conversation"`
	Messages     []MessageView     `json:"messages"`
	Context      []ContextItem     `json:"context"`
	Notice       string            `json:"notice,omitempty"`
	WorkSummary  []ToolRun         `json:"work_summary"`
	Pending      []PendingApproval `json:"pending_approvals"`
	// Decided are the approvals of the work summary's runs that are no
	// longer pending (used, rejected or expired), for their receipts.
	Decided []DecidedApproval `json:"decided_approvals"`
	// Turns are the conversation's turns with their states, oldest
	// first. A turn its process abandoned (see Open) shows as failed.
	Turns []Turn `json:"turns"`
}

// MessageView is one user or assistant message of the history.
type MessageView struct {
	Role Role   `json:"role"`
	Text string `json:"text"`
	// Attachments name a user message's files (name, type, size), never
	// their content.
	Attachments []AttachmentInfo `json:"attachments,omitempty"`
	// Context are the items a user message was sent with (Entry.Context),
	// each as it was named then, with its page as it stands now.
	Context   []MessageItem `json:"context,omitempty"`
	TurnID    string        `json:"turn_id"`
	CreatedAt time.Time     `json:"created_at"`
}

// MessageItem is an item a user message was sent with, as an opened
// conversation shows it: the reference recorded with the message, and
// whether the user can still open the entity. An available item links
// to its page (as ContextItem.URL does; none for a type the host has no
// page for, such as a connection); a deleted or no longer accessible one
// has no URL, and the client says that it is no longer available rather
// than link to a page that answers "not found".
type MessageItem struct {
	SentItem
	URL       string `json:"url,omitempty"`
	Available bool   `json:"available"`
}

// PendingApproval is a gated call waiting for the user: what the
// tool.approval_required event showed, for a client that reopens the
// conversation.
type PendingApproval struct {
	ApprovalID string         `json:"approval_id"`
	CallID     string         `json:"call_id"`
	TurnID     string         `json:"turn_id"`
	Tool       string         `json:"tool"`
	Label      string         `json:"label"`
	Title      string         `json:"title"`
	Class      dataexec.Class `json:"class"`
	// Targets are the entities the arguments name that the user can
	// still see, by name.
	Targets []dataexec.Ref `json:"targets"`
	// Shared says that others see the change (ToolEvent.Shared).
	Shared    string          `json:"shared,omitempty"`
	Arguments json.RawMessage `json:"arguments"`
	ExpiresAt time.Time       `json:"expires_at"`
	// CanApprove is false when the user's role may not approve this call
	// (ToolEvent.CanApprove).
	CanApprove bool `json:"can_approve"`
}

// DecidedApproval is an approval that is no longer pending, as its
// receipt shows it in a reopened conversation: the action and what its
// card showed when the call was proposed (the targets by name as they
// were then, also once they are gone; the arguments, redacted). The
// outcome is its run's in the work summary (the run with its CallID).
type DecidedApproval struct {
	ApprovalID string          `json:"approval_id"`
	CallID     string          `json:"call_id"`
	Tool       string          `json:"tool"`
	Title      string          `json:"title"`
	Class      dataexec.Class  `json:"class"`
	Targets    []dataexec.Ref  `json:"targets"`
	Arguments  json.RawMessage `json:"arguments"`
}

// maxViewEntries bounds the history Open returns.
const maxViewEntries = 200

// Open returns one of p's conversations with its history (each user
// message with the items it was sent with, linked while p can still open
// them: [MessageItem]), its active context revalidated (unavailable items are removed, with Notice), its
// work summary (chart results re-resolved: a chart placed on a dashboard
// shows as saved everywhere, a deleted one as unavailable; setup cards
// resolved afresh, every one but the latest inert) and pending
// approvals.
//
// A running turn whose lease (Options.TurnLease) ran out was abandoned:
// the process running it, which renews the lease while it runs, died
// (kill -9, a crash, a lost machine). Open records such a turn as failed
// (unavailable), with its running tool calls, so it never shows as
// running forever; should that process still be alive, it finds its
// lease lost and stops the turn.
func (a *Assistant) Open(ctx context.Context, p access.Principal, id string) (_ *View, err error) {
	defer askbi.Wrap(&err, "ask.Assistant.Open")
	live, err := a.begin(ctx, p)
	if err != nil {
		return nil, err
	}
	conv, err := a.owned(ctx, live, id)
	if err != nil {
		return nil, err
	}
	v := &View{Conversation: conv, Messages: []MessageView{}, WorkSummary: []ToolRun{}, Pending: []PendingApproval{}, Decided: []DecidedApproval{}}
	if v.Turns, err = a.failAbandoned(ctx, conv.ID); err != nil {
		return nil, err
	}
	if v.Context, v.Notice, err = a.revalidate(ctx, live, conv.ID); err != nil {
		return nil, err
	}
	entries, err := a.stores.Turns.Entries(ctx, conv.ID, maxViewEntries)
	if err != nil {
		return nil, err
	}
	for _, e := range entries {
		if (e.Role == RoleUser || e.Role == RoleAssistant) && e.Text != "" {
			m := MessageView{Role: e.Role, Text: e.Text, TurnID: e.TurnID, CreatedAt: e.CreatedAt}
			for _, info := range e.Attachments {
				info.Text = ""
				m.Attachments = append(m.Attachments, info)
			}
			for _, it := range e.Context {
				m.Context = append(m.Context, MessageItem{SentItem: it})
			}
			v.Messages = append(v.Messages, m)
		}
	}
	if err := a.linkSent(ctx, live, v.Messages); err != nil {
		return nil, err
	}
	runs, err := a.stores.ToolRuns.ToolRuns(ctx, conv.ID)
	if err != nil {
		return nil, err
	}
	if v.WorkSummary, err = a.refreshCharts(ctx, live, runs); err != nil {
		return nil, err
	}
	tools, err := a.toolbox(ctx, live)
	if err != nil {
		return nil, err
	}
	a.refreshResults(ctx, live, tools, v.WorkSummary)
	inertSetups(v.WorkSummary)
	pending, err := a.stores.Approvals.Pending(ctx, conv.ID, a.o.Now())
	if err != nil {
		return nil, err
	}
	waiting := map[string]bool{} // the pending approvals' IDs
	for _, ap := range pending {
		waiting[ap.ID] = true
	}
	for _, ap := range pending {
		t, _ := tools.lookup(ap.Tool)
		targets, err := a.targets(ctx, live, ap.Arguments)
		if err != nil {
			return nil, err
		}
		shared, err := a.shared(ctx, live, targets)
		if err != nil {
			return nil, err
		}
		v.Pending = append(v.Pending, PendingApproval{ApprovalID: ap.ID, CallID: ap.ToolCallID, TurnID: ap.TurnID, Tool: ap.Tool,
			Label: t.Label, Title: t.Title, Class: t.Class, Targets: targets, Shared: shared, Arguments: ap.Arguments, ExpiresAt: ap.ExpiresAt,
			CanApprove: mayApprove(live, t) == nil})
	}
	if v.Decided, err = a.decided(ctx, tools, v.WorkSummary, waiting); err != nil {
		return nil, err
	}
	return v, nil
}

// linkSent checks, in place, which items the messages were sent with p
// can still open, and links those: each entity once, however many
// messages name it.
func (a *Assistant) linkSent(ctx context.Context, p access.Principal, msgs []MessageView) error {
	var ents []access.Entity
	at := map[access.Entity]int{}
	for _, m := range msgs {
		for _, it := range m.Context {
			e := access.Entity{Type: it.EntityType, ID: it.ID}
			if _, ok := at[e]; !ok {
				at[e] = len(ents)
				ents = append(ents, e)
			}
		}
	}
	available := make([]bool, len(ents))
	for i := 0; i < len(ents); i += maxResolve {
		refs, err := a.exec.Resolve(ctx, p, ents[i:min(i+maxResolve, len(ents))])
		if err != nil {
			return err
		}
		for j, r := range refs {
			available[i+j] = r != nil
		}
	}
	for _, m := range msgs {
		for j, it := range m.Context {
			if available[at[access.Entity{Type: it.EntityType, ID: it.ID}]] {
				m.Context[j].Available, m.Context[j].URL = true, itemURL(a.exec.Links(), it.EntityType, it.ID)
			}
		}
	}
	return nil
}

// maxResolve is how many references one dataexec Resolve call takes.
const maxResolve = 50

// decided reads the approvals of runs that are not waiting (the pending
// approvals' IDs), in the runs' order, for their receipts. A tool no
// longer offered keeps its run's label as the title.
//
// It also says, in place, where a run stands that is still stored as
// waiting though its approval is no longer pending (decidedState).
func (a *Assistant) decided(ctx context.Context, tools *toolbox, runs []ToolRun, waiting map[string]bool) ([]DecidedApproval, error) {
	out := []DecidedApproval{}
	for i, r := range runs {
		if r.ApprovalID == "" || waiting[r.ApprovalID] {
			continue
		}
		ap, err := a.stores.Approvals.Approval(ctx, r.ApprovalID)
		if askbi.ErrorCode(err) == askbi.NotFound {
			if r.State == RunApprovalRequired {
				runs[i].State = RunExpired
			}
			continue
		}
		if err != nil {
			return nil, err
		}
		if r.State == RunApprovalRequired {
			if runs[i], err = a.decidedState(ctx, r, ap); err != nil {
				return nil, err
			}
		}
		t, ok := tools.lookup(ap.Tool)
		if !ok {
			t.Title = r.Label
		}
		out = append(out, DecidedApproval{ApprovalID: ap.ID, CallID: ap.ToolCallID, Tool: ap.Tool, Title: t.Title, Class: t.Class,
			Targets: orEmpty(ap.Targets), Arguments: json.RawMessage(a.redact.String(string(ap.Arguments)))})
	}
	return out, nil
}

// decidedState is run r, stored as waiting for approval ap, which is no
// longer pending, as it stands. Pending but past its expiry: it expired,
// and the call never ran. Rejected: the rejection is being recorded.
// Used: its call has started (Approve uses the approval, then records the
// run as running), so it shows as running, or as its receipt says once
// there is one; a used approval that left no receipt and no running run
// long after it could have been used (past its expiry and the wait of a
// concurrent approve) lost its run, which failed.
func (a *Assistant) decidedState(ctx context.Context, r ToolRun, ap Approval) (ToolRun, error) {
	switch ap.State {
	case ApprovalRejected:
		r.State = RunRejected
		return r, nil
	case ApprovalConsumed:
	default:
		r.State = RunExpired
		return r, nil
	}
	rc, err := a.stores.Receipts.Receipt(ctx, ap.ID)
	switch {
	case err == nil && rc.ErrorCode != "":
		r.State, r.ErrorCode, r.ErrorMessage = RunFailed, rc.ErrorCode, rc.ErrorMessage
	case err == nil:
		r.State, r.Result = RunCompleted, rc.Result
	case askbi.ErrorCode(err) != askbi.NotFound:
		return r, err
	case a.o.Now().After(ap.ExpiresAt.Add(receiptWait)):
		r.State, r.ErrorCode, r.ErrorMessage = RunFailed, string(askbi.Unavailable), "The assistant stopped before this finished."
	default:
		r.State = RunRunning
	}
	return r, nil
}

// failAbandoned returns the turns of a conversation after recording the
// abandoned ones (see Open) as failed, with their running tool calls.
func (a *Assistant) failAbandoned(ctx context.Context, conversationID string) ([]Turn, error) {
	turns, err := a.stores.Turns.Turns(ctx, conversationID)
	if err != nil {
		return nil, err
	}
	turns = append([]Turn{}, turns...)
	now := a.o.Now().UTC()
	abandoned := map[string]bool{}
	for i, t := range turns {
		if t.State == TurnRunning && now.Sub(t.UpdatedAt) > a.o.TurnLease {
			t.State, t.ErrorCode, t.UpdatedAt = TurnFailed, string(askbi.Unavailable), now
			if err := a.stores.Turns.SaveTurn(ctx, t); err != nil {
				return nil, err
			}
			turns[i], abandoned[t.ID] = t, true
		}
	}
	if len(abandoned) == 0 {
		return turns, nil
	}
	runs, err := a.stores.ToolRuns.ToolRuns(ctx, conversationID)
	if err != nil {
		return nil, err
	}
	for _, r := range runs {
		if abandoned[r.TurnID] && r.State == RunRunning {
			r.State, r.ErrorCode, r.UpdatedAt = RunFailed, string(askbi.Unavailable), now
			r.ErrorMessage = "The assistant stopped before this finished."
			if err := a.stores.ToolRuns.SaveToolRun(ctx, r); err != nil {
				return nil, err
			}
		}
	}
	return turns, nil
}

// refreshCharts re-resolves the chart results of runs, all in one
// executor call, so opening a conversation with hundreds of charts costs
// one request.
func (a *Assistant) refreshCharts(ctx context.Context, p access.Principal, runs []ToolRun) ([]ToolRun, error) {
	var at []int
	var saved []dataexec.ChartResult
	for i, r := range runs {
		if cr, ok := chartOfRun(r); ok {
			at, saved = append(at, i), append(saved, cr)
		}
	}
	if len(saved) == 0 {
		return append([]ToolRun{}, runs...), nil
	}
	now, err := a.exec.RefreshCharts(ctx, p, saved)
	if err != nil {
		return nil, err
	}
	out := append([]ToolRun{}, runs...)
	for j, i := range at {
		out[i].Result, _ = json.Marshal(now[j])
	}
	return out, nil
}

// refreshResults re-reads, in place, the saved results of completed
// runs whose tool has a Refresh (a connection setup card). A result that
// cannot be re-read now (a resolver down) keeps its saved one: one card
// does not keep the whole conversation from opening.
func (a *Assistant) refreshResults(ctx context.Context, p access.Principal, tools *toolbox, runs []ToolRun) {
	for i, r := range runs {
		if r.State != RunCompleted || len(r.Result) == 0 {
			continue
		}
		t, ok := tools.Tool(r.Tool)
		if !ok || t.Refresh == nil {
			continue
		}
		res, err := t.Refresh(ctx, p, r.Result)
		if err != nil {
			if askbi.ErrorCode(err) == askbi.Internal {
				a.o.Logger.Error("ask: refresh a saved result", "tool", r.Tool, "err", err)
			}
			continue
		}
		runs[i].Result = res
	}
}

// inertSetups marks, in place, every setup card of runs but the latest
// inert (ConnectionSetup.Inert): only the latest offers actions.
func inertSetups(runs []ToolRun) {
	last := -1
	for i, r := range runs {
		if r.State == RunCompleted && isSetup(r.Result) {
			last = i
		}
	}
	for i := range last {
		var s ConnectionSetup
		if runs[i].State != RunCompleted || !isSetup(runs[i].Result) || json.Unmarshal(runs[i].Result, &s) != nil {
			continue
		}
		s.Inert = true
		if b, err := json.Marshal(s); err == nil {
			runs[i].Result = b
		}
	}
}

// revalidate resolves the stored context, drops what is gone and saves
// the smaller set.
func (a *Assistant) revalidate(ctx context.Context, p access.Principal, convID string) ([]ContextItem, string, error) {
	refs, err := a.stores.Context.Context(ctx, convID)
	if err != nil {
		return nil, "", err
	}
	items, kept, dropped, err := resolveContext(ctx, a.exec, p, refs)
	if err != nil || !dropped {
		return orEmpty(items), "", err
	}
	if err := a.stores.Context.SetContext(ctx, convID, kept); err != nil {
		return nil, "", err
	}
	return orEmpty(items), UnavailableNotice, nil
}

// orEmpty is s, or an empty list for nil: a list the JSON answer
// always carries.
func orEmpty[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}
