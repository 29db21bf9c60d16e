package ask

import (
	"context"
	"fmt"
	"regexp"
	"strings"
	"unicode/utf8"

	"github.com/askbi/askbi"
	"github.com/askbi/askbi/access"
	"github.com/askbi/askbi/memory"
)

// SendRequest is one user message.
type SendRequest struct {
	ConversationID string
	Message        string
	// Context replaces the active context when non-nil; an empty slice
	// clears it; nil keeps it.
	Context *[]ContextRef
	// Attachments are files sent with the message, at most
	// MaxAttachments (see Attachment and the limits beside it).
	Attachments []Attachment
	// Headless runs have no person to approve: gated tools are
	// unavailable.
	Headless bool
}

// Send runs one turn: it saves the question, then calls the model and
// tools until an answer, an approval request, the iteration cap or the
// deadline. [ContinueRequest] and [AddedConnection], in a conversation that
// showed a connection setup card, check the connection again first and,
// once it is ready, continue the question that led to the card (see
// turn.resume); while it is not, the new card answers and nothing runs. Events go to emit in order. Cancelling ctx (the client left)
// stops the model call and its queries; the turn is saved as stopped.
//
// The returned error is also sent as request.failed when the turn had
// started. Errors: InvalidArgument (empty message, bad context, a
// malformed attachment), TooLarge (message, input or an attachment over
// its cap), Unsupported (an attachment type not allowed, data that is not
// the image it claims, an image for a text-only model: refused before
// anything is saved, so the client can send again without it), NotFound
// (unknown conversation, another user's conversation, context entity
// outside the user's reach), BudgetExceeded (a token budget of the team
// or the user is used up: Options.Usage; refused before anything is
// saved), and the provider's and executor's codes.
func (a *Assistant) Send(ctx context.Context, p access.Principal, req SendRequest, emit Emit) (err error) {
	ctx, done := a.request(ctx, p, "send", req.ConversationID)
	defer func() { done(err) }()
	defer askbi.Wrap(&err, "ask.Assistant.Send")
	msg := strings.TrimSpace(req.Message)
	switch {
	case !utf8.ValidString(msg):
		return askbi.Errorf(askbi.InvalidArgument, "message: must be valid UTF-8 text")
	case msg == "":
		return askbi.Errorf(askbi.InvalidArgument, "message: must not be empty")
	case utf8.RuneCountInString(msg) > a.o.MaxMessageChars:
		return askbi.Errorf(askbi.TooLarge, "message: at most %d characters", a.o.MaxMessageChars)
	}
	atts, err := a.checkInput(msg, req.Attachments)
	if err != nil {
		return err
	}
	var wanted []ContextRef
	if req.Context != nil {
		if wanted, err = normalizeContext(*req.Context); err != nil {
			return err
		}
	}
	live, err := a.begin(ctx, p)
	if err != nil {
		return err
	}
	for _, at := range atts {
		if at.image != nil && !readsImages(a.provider) {
			return askbi.Errorf(askbi.Unsupported, "%s", textOnlyModel)
		}
	}
	conv, err := a.owned(ctx, live, req.ConversationID)
	if err != nil {
		return err
	}
	if text, ok := memory.ParseRemember(msg); ok {
		if len(atts) > 0 {
			return askbi.Errorf(askbi.InvalidArgument, "attachments: %s saves text only; send the files with a question", memory.Command)
		}
		return a.remember(ctx, live, conv, msg, text, emit)
	}
	if a.o.Usage != nil {
		// Before anything is saved and before the model: a refused
		// message leaves no trace but its answer.
		if err := a.o.Usage.Check(ctx, live); err != nil {
			return err
		}
	}
	release, err := a.running.acquire(ctx, live)
	if err != nil {
		return err
	}
	defer release()
	level, err := a.o.Sharing.Sharing(ctx, live.TeamID)
	if err != nil {
		return err
	}
	tr := a.newTurn(live, conv, emit)
	tr.headless, tr.level, tr.attached = req.Headless, level, atts
	if tr.tools, err = a.toolbox(ctx, live); err != nil {
		return err
	}

	// The context: replace it (all or nothing), or revalidate the stored one.
	if req.Context != nil {
		items, _, dropped, err := resolveContext(ctx, a.exec, live, wanted)
		if err != nil {
			return err
		}
		if dropped {
			return askbi.Errorf(askbi.NotFound, "context: an item is not available; select another item")
		}
		if err := a.stores.Context.SetContext(ctx, conv.ID, wanted); err != nil {
			return err
		}
		tr.items = orEmpty(items)
		tr.send(Event{Type: EventContextUpdated, Context: tr.items})
	} else {
		items, notice, err := a.revalidate(ctx, live, conv.ID)
		if err != nil {
			return err
		}
		tr.items = items
		if notice != "" {
			tr.send(Event{Type: EventContextUpdated, Context: items, Notice: notice})
		}
	}

	ctx, err = tr.ask(ctx, msg)
	if err != nil {
		return err
	}
	if q := ambiguousChart(msg, tr.items); q != "" {
		return tr.finish(ctx, tr.answer(ctx, q))
	}
	if isContinue(msg) {
		if handled, err := tr.resume(ctx); handled || err != nil {
			return tr.finish(ctx, err)
		}
	}
	return tr.finish(ctx, tr.loop(ctx))
}

// checkInput checks a message's attachments and that the message and
// the attached text fit the input cap together.
func (a *Assistant) checkInput(msg string, in []Attachment) ([]attachment, error) {
	atts, err := checkAttachments(in, a.redact.String)
	if err != nil {
		return nil, err
	}
	n := utf8.RuneCountInString(msg)
	for _, at := range atts {
		n += utf8.RuneCountInString(at.text)
	}
	if n > a.o.MaxInputChars {
		return nil, askbi.Errorf(askbi.TooLarge, "input: the message and attached text at most %d characters together", a.o.MaxInputChars)
	}
	return atts, nil
}

// remember saves a memory without a model call. The message stays in the
// visible history as the user sent it (redacted like any message); model
// replay leaves its text out (see turn.request), so edits and deletions
// of the memory apply from the next turn.
func (a *Assistant) remember(ctx context.Context, p access.Principal, conv Conversation, msg, text string, emit Emit) error {
	if a.o.Memory == nil {
		return askbi.Errorf(askbi.Unsupported, "memory is not enabled here")
	}
	if _, err := a.o.Memory.Add(ctx, p, text); err != nil {
		return err
	}
	tr := a.newTurn(p, conv, emit)
	ctx, err := tr.ask(ctx, msg)
	if err != nil {
		return err
	}
	return tr.finish(ctx, tr.answer(ctx, memory.SavedReply))
}

// newTurn is a new running turn of conv for live principal p: the one
// way a turn is made.
func (a *Assistant) newTurn(p access.Principal, conv Conversation, emit Emit) *turn {
	now := a.o.Now().UTC()
	return &turn{a: a, p: p, conv: conv, emit: emit, tools: &toolbox{reg: a.tools, extra: &Registry{}},
		t: Turn{ID: newID("turn"), ConversationID: conv.ID, State: TurnRunning, CreatedAt: now, UpdatedAt: now}}
}

// ask saves the turn (and holds its lease: the context returned is the
// turn's) and its question (redacted) before anything is generated, so a
// failed turn still leaves history, and names an untitled conversation
// after its first question. The turn's attachments are saved as their
// names, types and sizes, and a text file's text only under SharingRows;
// the items of its context as safe references (Entry.Context).
func (tr *turn) ask(ctx context.Context, question string) (context.Context, error) {
	a := tr.a
	ctx, err := tr.hold(ctx)
	if err != nil {
		return ctx, err
	}
	question = a.redact.String(question)
	tr.question = question
	e := Entry{ID: newID("ent"), ConversationID: tr.conv.ID, TurnID: tr.t.ID, Role: RoleUser, Text: question,
		Context: sent(tr.items), CreatedAt: tr.t.CreatedAt}
	for _, at := range tr.attached {
		info := at.info
		if at.image == nil && tr.level == SharingRows {
			info.Text = at.text
		}
		e.Attachments, e.Sharing = append(e.Attachments, info), tr.level
	}
	if _, err := a.stores.Turns.AppendEntry(ctx, e); err != nil {
		return ctx, err
	}
	if tr.conv.Title == "" {
		tr.conv.Title = title(question)
	}
	tr.conv.UpdatedAt = tr.t.CreatedAt
	return ctx, a.stores.Conversations.UpdateConversation(ctx, tr.conv)
}

func title(msg string) string {
	msg = strings.Join(strings.Fields(msg), " ")
	if r := []rune(msg); len(r) > 60 {
		return string(r[:59]) + "…"
	}
	return msg
}

var thisChart = regexp.MustCompile(`(?i)\bthis( chart)?\b`)

// ambiguousChart returns a question when the message points at "this
// chart" while several charts are selected, whatever the model would do.
func ambiguousChart(msg string, items []ContextItem) string {
	var names []string
	for _, it := range items {
		if it.EntityType == access.TypeChart {
			names = append(names, fmt.Sprintf("%q", it.Name))
		}
	}
	if len(names) < 2 || !thisChart.MatchString(msg) {
		return ""
	}
	return "Which chart do you mean: " + strings.Join(names[:len(names)-1], ", ") + " or " + names[len(names)-1] + "?"
}
