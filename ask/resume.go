package ask

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
)

// The messages of a connection setup card's buttons (seed 000 "Missing
// connection"): normal chat messages a client sends as they are. Ask
// answers either by checking the connection again (see Send).
const (
	ContinueRequest = "Continue request"
	AddedConnection = "I added the connection"
)

// isContinue reports whether msg is one of the setup card's messages,
// as sent or typed (any case, a final period).
func isContinue(msg string) bool {
	m := strings.TrimSuffix(strings.TrimSpace(msg), ".")
	return strings.EqualFold(m, ContinueRequest) || strings.EqualFold(m, AddedConnection)
}

// resumption is what a turn that continues a question knows: the
// question the user asked before the setup card, and the card's provider.
type resumption struct {
	question string
	provider string
}

// resume answers ContinueRequest and AddedConnection in a conversation
// that showed a setup card: it checks fresh, with the tool that made the
// card and the card's provider and capability, as a call of the product's
// that the work summary shows. Still not connected: the new card answers
// (its missing access), and nothing is granted or run. Connected: the
// turn goes on with the question that led to the card, which the model
// is told as product context (see continueBlock) with the connection's
// approved tools offered as usual, and the new card offers no actions
// (ConnectionSetup.Inert). It returns handled false, and does nothing,
// when there is no card to continue (the model answers the message), or
// the check failed (the model sees the failure).
func (tr *turn) resume(ctx context.Context) (handled bool, err error) {
	card, question, err := tr.setupToContinue(ctx)
	if err != nil || card == nil {
		return false, err
	}
	tool, ok := tr.tools.Tool(card.Tool)
	if !ok {
		return false, nil
	}
	var saved ConnectionSetup
	json.Unmarshal(card.Result, &saved)
	args, _ := json.Marshal(connectionsInput{Provider: saved.Provider, Capability: saved.Capability})
	check := tool
	check.Run = func(ctx context.Context, c Call) (Output, error) {
		out, err := tool.Run(ctx, c)
		if s, ok := out.Result.(ConnectionSetup); ok && err == nil && !s.NeedsSetup {
			s.Inert = true // the request continues: its card has done its work
			out.Result = s
		}
		return out, err
	}
	c := ToolCall{ID: newID("call"), Name: tool.Name, Arguments: args}
	if _, err := tr.a.stores.Turns.AppendEntry(ctx, Entry{ID: newID("ent"), ConversationID: tr.conv.ID, TurnID: tr.t.ID,
		Role: RoleAssistant, ToolCalls: []ToolCall{c}, CreatedAt: tr.a.o.Now().UTC()}); err != nil {
		return false, err
	}
	result, err := tr.run(ctx, check, c, "")
	if err != nil {
		return false, storageOnly(err)
	}
	var now ConnectionSetup
	if json.Unmarshal(result, &now) != nil || now.Type != ConnectionSetupType {
		return false, nil
	}
	if now.NeedsSetup {
		return true, tr.answer(ctx, now.Missing)
	}
	tr.resumed = &resumption{question: question, provider: now.Provider}
	return false, nil
}

// setupToContinue finds the conversation's latest setup card (a
// completed run whose result is a ConnectionSetup) and the question that
// led to it: the user's message of the card's turn or, when that turn
// was itself a ContinueRequest or AddedConnection, the question that turn
// continued. nil when there is none.
func (tr *turn) setupToContinue(ctx context.Context) (*ToolRun, string, error) {
	runs, err := tr.a.stores.ToolRuns.ToolRuns(ctx, tr.conv.ID)
	if err != nil {
		return nil, "", err
	}
	entries, err := tr.a.stores.Turns.Entries(ctx, tr.conv.ID, maxViewEntries)
	if err != nil {
		return nil, "", err
	}
	asked := map[string]string{} // turn → the user's message
	for _, e := range entries {
		if e.Role == RoleUser {
			asked[e.TurnID] = e.Text
		}
	}
	var card *ToolRun
	for i := len(runs) - 1; i >= 0; i-- {
		r := runs[i]
		if r.TurnID == tr.t.ID || r.State != RunCompleted || !isSetup(r.Result) {
			continue
		}
		if card == nil {
			card = &runs[i]
		}
		q, ok := asked[r.TurnID]
		if !ok {
			return nil, "", nil // older than the history kept: nothing to continue
		}
		if !isContinue(q) {
			return card, q, nil
		}
	}
	return nil, "", nil
}

// isSetup reports whether a saved result is a connection setup card.
func isSetup(result json.RawMessage) bool {
	var s struct{ Type string }
	return json.Unmarshal(result, &s) == nil && s.Type == ConnectionSetupType
}

// continueBlock is the product's note, in a continued turn's user
// message, of the question to continue: the user's words quoted as data.
func continueBlock(r *resumption) string {
	if r == nil {
		return ""
	}
	q := neutralize(r.question)
	return fmt.Sprintf("<continue_request from=\"product\" provider=%q>\n"+
		"The user chose %q on the connection setup card, and the connection is ready now (the list_connections result of this turn). "+
		"Answer the question the user asked before the card, with the connection's tools:\n%s\n</continue_request>\n", r.provider, ContinueRequest, q)
}
