package ask

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"time"

	"github.com/askbi/askbi"
	"github.com/askbi/askbi/access"
	"github.com/askbi/askbi/dataexec"
	"github.com/askbi/askbi/internal/canonjson"
	"github.com/askbi/askbi/memory"
	"github.com/askbi/askbi/telemetry"
	"github.com/askbi/askbi/usage"
)

// turn is one running turn.
type turn struct {
	a        *Assistant
	p        access.Principal // live
	conv     Conversation
	t        Turn
	items    []ContextItem
	level    Sharing
	headless bool
	attached []attachment // this turn's attachments, images included
	tools    *toolbox     // the registry's tools and this turn's extra ones
	// setupNeeded is set once a tool said the data is not connected yet
	// (Output.NeedsSetup): later chart tool calls are refused.
	setupNeeded bool
	emit        Emit
	seq         int

	// question is the user's message of this turn, redacted; "" for a
	// turn that runs an approval.
	question string
	// resumed is set when this turn continues a question whose
	// connection is ready now (resume): the model is told which.
	resumed *resumption
	// unhold ends the lease that hold started; nil before.
	unhold func()
	// stored is the turn's state as saved before resume set it running:
	// what a replayed approval reports.
	stored TurnState
}

// asked is the question this turn answers: the user's message, or for
// a continued request the question it continues.
func (tr *turn) asked() string {
	if tr.resumed != nil && tr.resumed.question != "" {
		return tr.resumed.question
	}
	return tr.question
}

// errLeaseLost ends a turn that another instance recorded abandoned: its
// lease could not be renewed in time.
var errLeaseLost = errors.New("ask: the turn's lease was lost")

// hold saves the running turn and keeps its lease (Options.TurnLease)
// until finish: every third of the lease it renews the turn's UpdatedAt.
// The context it returns ends when the lease was lost (another instance,
// finding it expired, recorded the turn failed), so this instance stops
// the turn rather than run on in the dark. A renewal that fails (the
// store unreachable) is tried again at the next tick.
func (tr *turn) hold(ctx context.Context) (context.Context, error) {
	if err := tr.a.stores.Turns.SaveTurn(ctx, tr.t); err != nil {
		return ctx, err
	}
	ctx, cancel := context.WithCancelCause(ctx)
	done := make(chan struct{})
	tr.unhold = func() { close(done); cancel(nil) }
	go tr.renew(ctx, done, func() {
		tr.a.o.Logger.Warn("ask: turn lease lost; stopping the turn", "turn", tr.t.ID)
		cancel(errLeaseLost)
	})
	return ctx, nil
}

// renew renews the turn's lease every third of it until done is closed
// or ctx ends, and calls lost (then stops) when the turn no longer runs
// as stored.
func (tr *turn) renew(ctx context.Context, done <-chan struct{}, lost func()) {
	tick := time.NewTicker(tr.a.o.TurnLease / 3)
	defer tick.Stop()
	for {
		select {
		case <-done:
			return
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		sctx, stop := store(ctx)
		running, err := tr.a.stores.Turns.RenewTurn(sctx, tr.conv.ID, tr.t.ID, tr.a.o.Now().UTC())
		stop()
		switch {
		case err != nil:
			tr.a.o.Logger.Warn("ask: renew turn lease", "turn", tr.t.ID, "err", err)
		case !running:
			lost()
			return
		}
	}
}

// keepLease renews the turn's lease, as hold does, until the returned
// stop is called, also once the request is gone: for an approved call,
// which runs on after the user left (a reload), so that no one opening
// the conversation meanwhile records the turn abandoned and the call
// failed while it still runs.
func (tr *turn) keepLease(ctx context.Context) (stop func()) {
	done := make(chan struct{})
	go tr.renew(context.WithoutCancel(ctx), done, func() {})
	return func() { close(done) }
}

func (tr *turn) send(e Event) {
	tr.seq++
	e.Seq, e.ConversationID, e.TurnID = tr.seq, tr.conv.ID, tr.t.ID
	if tr.emit != nil {
		tr.emit(e)
	}
}

// store returns a context for saving state that outlives a cancelled
// request, so a stopped turn is still recorded.
func store(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
}

// finish saves the turn's final state and sends the closing event. It
// returns err, so a failed turn reaches the caller too.
func (tr *turn) finish(ctx context.Context, err error) error {
	sctx, cancel := store(ctx)
	defer cancel()
	if err == nil {
		if tr.t.State == TurnRunning {
			tr.t.State = TurnCompleted
		}
	} else {
		tr.t.State = TurnFailed
		if ctx.Err() != nil {
			tr.t.State = TurnStopped
		}
		tr.t.ErrorCode = string(askbi.ErrorCode(err))
		if tr.t.ErrorCode == string(askbi.Internal) {
			tr.a.o.Logger.Error("ask: turn failed", "conversation", tr.conv.ID, "turn", tr.t.ID, "err", err)
		}
	}
	if tr.unhold != nil {
		tr.unhold()
	}
	tr.t.UpdatedAt = tr.a.o.Now().UTC()
	if serr := tr.a.stores.Turns.SaveTurn(sctx, tr.t); serr != nil {
		tr.a.o.Logger.Error("ask: save turn", "turn", tr.t.ID, "err", serr)
	}
	if err != nil {
		tr.send(Event{Type: EventRequestFailed, State: tr.t.State, Error: tr.errorBody(err)})
		return err
	}
	tr.send(Event{Type: EventRequestCompleted, State: tr.t.State})
	return nil
}

// errorBody is err as users and the model see it: its code and safe
// message, with secrets masked (a validation message can echo a value).
func (tr *turn) errorBody(err error) *ErrorBody {
	b := &ErrorBody{Code: string(askbi.ErrorCode(err)), Message: tr.a.redact.String(askbi.ErrorMessage(err))}
	if kind, ok := dataFailure(err); ok {
		b.Kind, b.Repair = string(kind), string(kind.Repair())
	}
	b.RetryAfter, _ = askbi.RetryAfter(err)
	return b
}

// dataFailure is the failure kind of a data request's error, when its
// source marked one or it names a missing field: what the client offers
// as repair (Fix dataset, Open connection, Try again). Other errors get
// none: a bad argument of the model's is no dataset to fix.
func dataFailure(err error) (dataexec.FailureKind, bool) {
	var f *dataexec.Failure
	if errors.As(err, &f) {
		return f.Kind, true
	}
	if kind, _ := dataexec.FailureOf(err); kind == dataexec.FailMissingFields {
		return kind, true
	}
	return "", false
}

// answer saves and sends an assistant message that needs no model call.
func (tr *turn) answer(ctx context.Context, text string) error {
	if _, err := tr.a.stores.Turns.AppendEntry(ctx, Entry{ID: newID("ent"), ConversationID: tr.conv.ID, TurnID: tr.t.ID,
		Role: RoleAssistant, Text: text, CreatedAt: tr.a.o.Now().UTC()}); err != nil {
		return err
	}
	tr.send(Event{Type: EventMessageCompleted, Text: text})
	return nil
}

// loop calls the model and runs its tool calls until it answers, a gated
// call waits for approval, or a limit is hit.
func (tr *turn) loop(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, tr.a.o.TurnTimeout)
	defer cancel()
	ctx, unwatch := tr.tools.watch(ctx)
	defer unwatch()
	for range tr.a.o.MaxIterations {
		if err := aborted(ctx); err != nil {
			return err
		}
		req, err := tr.request(ctx)
		if err != nil {
			return err
		}
		// Deltas are redacted as a stream: a secret split across deltas
		// is held back until it can be masked whole.
		stream := tr.a.redact.Stream(func(d string) {
			tr.send(Event{Type: EventMessageDelta, Delta: d})
		})
		reply, err := tr.complete(ctx, req, stream.Write)
		stream.Flush()
		if err != nil {
			switch {
			case aborted(ctx) != nil:
				return aborted(ctx)
			case ctx.Err() == context.DeadlineExceeded:
				return askbi.Errorf(askbi.Timeout, "the assistant took longer than %s", tr.a.o.TurnTimeout)
			case ctx.Err() != nil:
				return &askbi.Error{Code: askbi.Unavailable, Message: "the request was cancelled", Err: err}
			}
			return err
		}
		// Our own call IDs: provider IDs need not be unique across
		// conversations, and they key the work summary.
		calls := make([]ToolCall, len(reply.ToolCalls))
		saved := make([]ToolCall, len(reply.ToolCalls)) // as history keeps them: redacted
		for i, c := range reply.ToolCalls {
			calls[i] = ToolCall{ID: newID("call"), Name: c.Name, Arguments: c.Arguments}
			saved[i] = calls[i]
			saved[i].Arguments = tr.redactJSON(c.Arguments)
		}
		// reply.Reasoning, the model's private reasoning, is dropped here:
		// it is never streamed, saved, shown or sent back.
		text := tr.a.redact.String(reply.Text)
		if _, err := tr.a.stores.Turns.AppendEntry(ctx, Entry{ID: newID("ent"), ConversationID: tr.conv.ID, TurnID: tr.t.ID,
			Role: RoleAssistant, Text: text, ToolCalls: saved, CreatedAt: tr.a.o.Now().UTC()}); err != nil {
			return err
		}
		if text != "" {
			tr.send(Event{Type: EventMessageCompleted, Text: text})
		}
		if len(calls) == 0 {
			return nil
		}
		paused := false
		for _, c := range calls {
			if paused {
				// One approval at a time: later calls are not run, and the
				// model may propose them again after the answer.
				if err := tr.saveOutput(ctx, Tool{Filter: ShowAll}, c.ID, json.RawMessage(`{"not_run":"waiting for the user to approve an earlier call"}`)); err != nil {
					return err
				}
				continue
			}
			if paused, err = tr.call(ctx, c); err != nil {
				return err
			}
		}
		if paused {
			tr.t.State = TurnAwaitingApproval
			return nil
		}
	}
	return askbi.Errorf(askbi.Unavailable, "the assistant stopped after %d steps without an answer; ask a narrower question", tr.a.o.MaxIterations)
}

// complete calls the model once, under its span, and records what the
// provider reported: the turn's usage, and the usage record of the call
// (Options.Usage), which a failed record does not fail.
func (tr *turn) complete(ctx context.Context, req ModelRequest, onText func(string)) (ModelReply, error) {
	a := tr.a
	mctx, sp := a.o.Telemetry.StartModel(ctx, a.provName, a.model, tr.p.TeamID)
	reply, err := a.provider.Complete(mctx, req, onText)
	u := reply.Usage
	sp.SetUsage(telemetry.Tokens{Input: u.InputTokens, CachedInput: u.CachedInputTokens, CacheWrite: u.CacheWriteTokens, Output: u.OutputTokens}, reply.FinishReason)
	sp.End(err)
	tr.t.Usage.Add(u)
	if a.o.Usage != nil {
		if cerr := a.o.Usage.Charge(ctx, tr.p, usage.ModelCall{Provider: a.provName, Model: a.model, Tokens: u}); cerr != nil {
			a.o.Logger.Error("ask: record a model call's usage", "turn", tr.t.ID, "err", cerr)
		}
	}
	return reply, err
}

// measureTool runs f, the call of tool, under the tool's span, and
// records it in the audit log (access.ActionChatToolCall: the tool's
// name, never its arguments or output).
func (tr *turn) measureTool(ctx context.Context, tool Tool, f func(context.Context) (Output, error)) (Output, error) {
	began := tr.a.audit.Now()
	tctx, sp := tr.a.o.Telemetry.StartTool(ctx, tool.Name)
	out, err := f(tctx)
	sp.End(err)
	tr.a.audit.Record(ctx, tr.p, access.ActionChatToolCall, access.Team(tr.p.TeamID), began, err, map[string]string{"tool": tool.Name})
	return out, err
}

// call handles one proposed tool call. It returns paused when the call
// now waits for approval. Tool failures go to the model and the user; only
// storage errors end the turn.
func (tr *turn) call(ctx context.Context, c ToolCall) (paused bool, err error) {
	tool, ok := tr.tools.lookup(c.Name)
	if !ok {
		return false, tr.refuse(ctx, tool, c.ID, tr.errorBody(askbi.Errorf(askbi.Unsupported, "there is no tool named %q", shorten(c.Name, 64))))
	}
	if tr.setupNeeded && tool.Chart {
		// Offered all along, so the tool list stays the same bytes
		// (providers cache it), but refused once the data is known to
		// be missing: the model explains that instead.
		return false, tr.refuse(ctx, tool, c.ID, tr.errorBody(askbi.NoRetry(askbi.Unavailable,
			"not run: the data this question needs is not connected yet; say which access is missing instead of making a chart")))
	}
	args, err := tr.resolveHandles(c.Arguments)
	if err == nil {
		err = tr.tools.validate(tool.Name, args)
	}
	if err != nil && tool.Class.Gated() {
		return false, tr.refuse(ctx, tool, c.ID, tr.errorBody(err))
	}
	if err != nil {
		return false, tr.fail(ctx, tool, c.ID, err, "")
	}
	if !tool.Class.Gated() {
		_, err := tr.run(ctx, tool, ToolCall{ID: c.ID, Name: c.Name, Arguments: args}, "")
		return false, storageOnly(err)
	}
	if tr.headless {
		return false, tr.fail(ctx, tool, c.ID, askbi.Errorf(askbi.Unavailable, "%s needs a person's approval; it is not available in this run", tool.Name), "")
	}
	if err := tr.ownCharts(ctx, tool, args); err != nil {
		return false, tr.notProposed(ctx, tool, c.ID, err)
	}
	if tool.Precheck != nil {
		if err := tool.Precheck(ctx, Call{Principal: tr.p, ConversationID: tr.conv.ID, Arguments: args}); err != nil {
			return false, tr.notProposed(ctx, tool, c.ID, err)
		}
	}
	targets, err := tr.a.targets(ctx, tr.p, args)
	if err != nil {
		return false, err
	}
	shared, err := tr.a.shared(ctx, tr.p, targets)
	if err != nil {
		return false, err
	}
	canon, err := canonjson.Canonical(args)
	if err != nil {
		return false, tr.refuse(ctx, tool, c.ID, tr.errorBody(askbi.Errorf(askbi.InvalidArgument, "arguments: %s", shorten(err.Error(), 120))))
	}
	hash, _ := canonjson.Hash(canon)
	now := tr.a.o.Now().UTC()
	ap := Approval{ID: newID("apr"), UserID: tr.p.UserID, TeamID: tr.p.TeamID, ConversationID: tr.conv.ID, TurnID: tr.t.ID,
		ToolCallID: c.ID, Tool: tool.Name, Target: tool.Target, ArgsHash: hash, Arguments: canon, Targets: targets,
		State: ApprovalPending, CreatedAt: now, ExpiresAt: now.Add(tr.a.o.ApprovalTTL)}
	if err := tr.a.stores.Approvals.CreateApproval(ctx, ap); err != nil {
		return false, err
	}
	run := tr.newRun(tool, c.ID)
	run.State, run.ApprovalID = RunApprovalRequired, ap.ID
	if err := tr.a.stores.ToolRuns.SaveToolRun(ctx, run); err != nil {
		return false, err
	}
	te := toolEvent(tool, run)
	te.Title, te.Targets, te.Shared = tool.Title, targets, shared
	te.Arguments, te.ExpiresAt = json.RawMessage(tr.a.redact.String(string(canon))), &ap.ExpiresAt
	can := mayApprove(tr.p, tool) == nil
	te.CanApprove = &can
	tr.send(Event{Type: EventToolApprovalRequired, Tool: te})
	return true, nil
}

// toolFailure marks an error a tool returned, as opposed to a storage
// error that must end the turn.
type toolFailure struct{ error }

func (f toolFailure) Unwrap() error { return f.error }

func storageOnly(err error) error {
	if _, ok := err.(toolFailure); ok {
		return nil
	}
	return err
}

// run runs a tool call and records it everywhere: work summary, history
// and events. It returns the stored output and the tool's error, wrapped
// as a toolFailure.
func (tr *turn) run(ctx context.Context, tool Tool, c ToolCall, approval string) (json.RawMessage, error) {
	run := tr.newRun(tool, c.ID)
	run.State, run.ApprovalID = RunRunning, approval
	if err := tr.a.stores.ToolRuns.SaveToolRun(ctx, run); err != nil {
		return nil, err
	}
	tr.send(Event{Type: EventToolRunning, Tool: toolEvent(tool, run)})
	out, err := tr.measureTool(ctx, tool, func(ctx context.Context) (Output, error) {
		return tr.runTool(ctx, tool, Call{Principal: tr.p, ConversationID: tr.conv.ID, Arguments: c.Arguments, Message: tr.asked()})
	})
	var data, result json.RawMessage
	if err == nil {
		if data, err = tr.marshalRedacted(out.Data); err == nil {
			result, err = tr.marshalRedacted(out.Result)
		}
	}
	if err != nil {
		if err := tr.fail(ctx, tool, c.ID, err, approval); err != nil {
			return nil, err
		}
		return nil, toolFailure{err}
	}
	tr.setupNeeded = tr.setupNeeded || out.NeedsSetup
	run.State, run.Result, run.ErrorMessage = RunCompleted, result, ""
	run.UpdatedAt = tr.a.o.Now().UTC()
	if err := tr.a.stores.ToolRuns.SaveToolRun(ctx, run); err != nil {
		return nil, err
	}
	if err := tr.saveOutput(ctx, tool, c.ID, data); err != nil {
		return nil, err
	}
	te := toolEvent(tool, run)
	te.Summary, te.Result = tr.a.redact.String(out.Summary), result
	tr.send(Event{Type: EventToolCompleted, Tool: te})
	return result, nil
}

// fail records a failed call: its safe error reaches the model, the work
// summary (with retry when the tool is read-only) and the user.
func (tr *turn) fail(ctx context.Context, tool Tool, callID string, cause error, approval string) error {
	state := RunFailed
	if askbi.ErrorCode(cause) == askbi.Unavailable && tool.Class.Gated() && tr.headless {
		state = RunUnavailable
	}
	return tr.record(ctx, tool, callID, tr.errorBody(cause), state, approval)
}

// notProposed refuses a gated call that its Precheck (or Tool.OwnCharts)
// refused: it is not proposed for approval, and the model hears why.
func (tr *turn) notProposed(ctx context.Context, tool Tool, callID string, cause error) error {
	body := tr.errorBody(cause)
	switch askbi.Code(body.Code) {
	case askbi.Forbidden, askbi.ScopeRequired:
		body.Message = "Your role cannot do this, so it was not proposed: " + body.Message
	default:
		body.Message = "Not proposed: " + body.Message
	}
	return tr.refuse(ctx, tool, callID, body)
}

// refuse answers a call refused before it could be proposed for approval
// (its tool is not offered, its arguments are invalid, its checks refuse
// it) to the model alone, which tells the user why. It is no step of the
// work summary: that lists the calls that were proposed or ran, and a
// deletion that was never proposed must not read as one that was tried.
func (tr *turn) refuse(ctx context.Context, tool Tool, callID string, body *ErrorBody) error {
	b, _ := json.Marshal(map[string]any{"error": body})
	return tr.saveOutput(ctx, tool, callID, b)
}

// record saves a call that did not succeed, in state, and tells the model
// and the user why.
func (tr *turn) record(ctx context.Context, tool Tool, callID string, body *ErrorBody, state RunState, approval string) error {
	run := tr.newRun(tool, callID)
	run.State, run.ErrorCode, run.ErrorMessage, run.ApprovalID = state, body.Code, body.Message, approval
	run.Retry = state == RunFailed && !tool.Class.Gated() && body.Code != string(askbi.InvalidArgument) && body.Code != string(askbi.Unsupported)
	if err := tr.a.stores.ToolRuns.SaveToolRun(ctx, run); err != nil {
		return err
	}
	b, _ := json.Marshal(map[string]any{"error": body})
	if err := tr.saveOutput(ctx, tool, callID, b); err != nil {
		return err
	}
	tr.send(Event{Type: EventToolFailed, Tool: toolEvent(tool, run), Error: body})
	return nil
}

// toolEvent is the event form of a tool call in the work summary: the one
// place a tool event is built.
func toolEvent(tool Tool, r ToolRun) *ToolEvent {
	return &ToolEvent{CallID: r.CallID, Name: tool.Name, Label: tool.Label, Class: tool.Class, State: r.State,
		ApprovalID: r.ApprovalID, Retry: r.Retry}
}

func (tr *turn) newRun(tool Tool, callID string) ToolRun {
	now := tr.a.o.Now().UTC()
	return ToolRun{CallID: callID, ConversationID: tr.conv.ID, TurnID: tr.t.ID, Tool: tool.Name, Label: tool.Label, CreatedAt: now, UpdatedAt: now}
}

// saveOutput appends a tool output to the history, stamped with the
// sharing level in force.
func (tr *turn) saveOutput(ctx context.Context, tool Tool, callID string, data json.RawMessage) error {
	_, err := tr.a.stores.Turns.AppendEntry(ctx, Entry{ID: newID("ent"), ConversationID: tr.conv.ID, TurnID: tr.t.ID, Role: RoleTool,
		ToolCallID: callID, Tool: tool.Name, Output: data, Sharing: tr.level, CreatedAt: tr.a.o.Now().UTC()})
	return err
}

// redactJSON is raw with secrets masked, or a notice when masking left it
// invalid.
func (tr *turn) redactJSON(raw json.RawMessage) json.RawMessage {
	if len(raw) == 0 {
		return raw
	}
	out := json.RawMessage(tr.a.redact.String(string(raw)))
	if !json.Valid(out) {
		return json.RawMessage(`{"redacted":"the arguments held a secret"}`)
	}
	return out
}

// marshalRedacted is v as JSON with secrets masked.
func (tr *turn) marshalRedacted(v any) (json.RawMessage, error) {
	if v == nil {
		return nil, nil
	}
	b, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	return json.RawMessage(tr.a.redact.String(string(b))), nil
}

var handle = regexp.MustCompile(`^@c([0-9]{1,2})$`)

// resolveHandles replaces "@cN" string values with the ID of the Nth
// selected item. An unknown handle is InvalidArgument.
func (tr *turn) resolveHandles(args json.RawMessage) (json.RawMessage, error) {
	if len(args) == 0 {
		return json.RawMessage(`{}`), nil
	}
	var v any
	d := json.NewDecoder(bytes.NewReader(args))
	d.UseNumber()
	if err := d.Decode(&v); err != nil {
		return nil, askbi.Errorf(askbi.InvalidArgument, "arguments must be a JSON object")
	}
	var bad error
	var walk func(any) any
	walk = func(v any) any {
		switch x := v.(type) {
		case string:
			if m := handle.FindStringSubmatch(x); m != nil {
				var n int
				fmt.Sscan(m[1], &n)
				if n < 1 || n > len(tr.items) {
					bad = askbi.Errorf(askbi.InvalidArgument, "%s does not name a selected item", x)
					return x
				}
				return tr.items[n-1].ID
			}
		case map[string]any:
			for k, e := range x {
				x[k] = walk(e)
			}
		case []any:
			for i, e := range x {
				x[i] = walk(e)
			}
		}
		return v
	}
	v = walk(v)
	if bad != nil {
		return nil, bad
	}
	return json.Marshal(v)
}

// request builds the model request: instructions, replayed history with
// every tool output filtered again, and this turn's selection and
// question.
func (tr *turn) request(ctx context.Context) (ModelRequest, error) {
	entries, err := tr.a.stores.Turns.Entries(ctx, tr.conv.ID, tr.a.o.HistoryEntries)
	if err != nil {
		return ModelRequest{}, err
	}
	outputs := map[string]Entry{}
	for _, e := range entries {
		if e.Role == RoleTool {
			outputs[e.ToolCallID] = e
		}
	}
	lastUser := -1
	var msgs []Message
	for _, e := range entries {
		switch e.Role {
		case RoleUser:
			text := e.Text
			if _, ok := memory.ParseRemember(text); ok {
				// Memory reaches the model only through the policy below.
				text = memory.Command + " [redacted]"
			}
			lastUser = len(msgs)
			blocks, images := tr.attachments(e)
			msgs = append(msgs, Message{Role: RoleUser, Text: blocks + text, Images: images})
		case RoleAssistant:
			msgs = append(msgs, Message{Role: RoleAssistant, Text: e.Text, ToolCalls: e.ToolCalls})
			// Each call's output follows its call, as providers require;
			// a call with no saved output (cut off, or waiting) says so.
			for _, c := range e.ToolCalls {
				text := wrapOutput(c.Name, json.RawMessage(`{"not_run":"no result was recorded"}`), tr.a.o.MaxToolOutputChars)
				if out, ok := outputs[c.ID]; ok {
					text = tr.modelView(out)
				}
				msgs = append(msgs, Message{Role: RoleTool, ToolCallID: c.ID, Text: text})
			}
		}
	}
	block := contextBlock(tr.items) + continueBlock(tr.resumed)
	if m := tr.a.o.Memory; m != nil {
		// Read fresh each turn, as the policy allows now; never stored.
		mems, err := m.ForModel(ctx, tr.p)
		if err != nil {
			return ModelRequest{}, err
		}
		block = tr.a.redact.String(memoryBlock(mems)) + block
	}
	if lastUser >= 0 {
		msgs[lastUser].Text = requestContext(tr.a.o.Now()) + block + msgs[lastUser].Text
	}
	return ModelRequest{System: systemPrompt, Messages: msgs, Tools: tr.tools.specs(tr.headless)}, nil
}

// requestContext is the product's note of what belongs to this request
// alone, today's date, at the start of its last user message: in the
// system prompt it would change that prompt every day.
func requestContext(now time.Time) string {
	return "<request_context from=\"product\">\nToday is " + now.UTC().Format("Monday, 2 January 2006") + " (UTC).\n</request_context>\n"
}

// attachments are the blocks and images of user entry e: this turn's
// files as sent, an earlier turn's (or this one's resumed after an
// approval) as history kept them, their text only while the sharing
// level in force still allows rows.
func (tr *turn) attachments(e Entry) (string, []Image) {
	if e.TurnID == tr.t.ID && len(tr.attached) > 0 {
		return attachmentBlocks(tr.attached)
	}
	kept := minSharing(e.Sharing, tr.level) == SharingRows
	atts := make([]attachment, len(e.Attachments))
	for i, info := range e.Attachments {
		atts[i] = replayed(info, kept)
	}
	return attachmentBlocks(atts)
}

// modelView is what the model sees of a saved tool output: the tool's
// filter at the lower of the stamped and current levels, capped and
// wrapped as untrusted data.
func (tr *turn) modelView(e Entry) string {
	level := minSharing(e.Sharing, tr.level)
	filter := ShowAll
	if e.Tool != "" {
		// A tool no longer registered shares nothing of its output.
		t, _ := tr.tools.lookup(e.Tool)
		filter = t.Filter
	}
	if isNotice(e.Output) {
		filter = ShowAll
	}
	return wrapOutput(e.Tool, filter(e.Output, level), tr.a.o.MaxToolOutputChars)
}

// isNotice reports whether a saved output is one of our own notices
// ({"error": ...}, {"rejected": ...}, {"not_run": ...}) rather than tool
// data, judged by its only top-level key.
func isNotice(out json.RawMessage) bool {
	var top map[string]json.RawMessage
	if json.Unmarshal(out, &top) != nil || len(top) != 1 {
		return false
	}
	for k := range top {
		return k == "error" || k == "rejected" || k == "not_run"
	}
	return false
}

// wrapOutput marks tool output as untrusted data, neutralized, and caps
// it.
func wrapOutput(tool string, data json.RawMessage, max int) string {
	s := neutralize(string(data))
	if r := []rune(s); len(r) > max {
		s = string(r[:max]) + "…(truncated)"
	}
	return fmt.Sprintf("<tool_output tool=%q trust=\"untrusted\">\n%s\n</tool_output>", neutralize(tool), s)
}

// memoryBlock is the user's memories as untrusted user context: things the
// user asked to be remembered, never instructions, permissions or
// approvals.
func memoryBlock(mems []string) string {
	if len(mems) == 0 {
		return ""
	}
	var b strings.Builder
	b.WriteString("<user_memory trust=\"untrusted\">\n")
	for _, m := range mems {
		fmt.Fprintf(&b, "- %s\n", neutralize(m))
	}
	b.WriteString("</user_memory>\n")
	return b.String()
}
