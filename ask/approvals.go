package ask

import (
	"context"
	"encoding/json"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/askbi/askbi"
	"github.com/askbi/askbi/access"
	"github.com/askbi/askbi/dataexec"
	"github.com/askbi/askbi/internal/canonjson"
)

// ApproveRequest approves or rejects one pending call. Tool and Arguments
// are what the user was shown; they must match the approval exactly.
type ApproveRequest struct {
	ConversationID string
	ApprovalID     string
	Tool           string
	Arguments      json.RawMessage
}

var approvalID = regexp.MustCompile(`^apr_[a-z0-9]{20}$`)

// receiptWait bounds how long an approve waits for the receipt of the call
// a concurrent approve of the same approval is running.
const receiptWait = 30 * time.Second

// decision is what Approve and Reject share: everything a decision needs,
// read before the approval is used, so that nothing that can fail for a
// transient reason (the rate limit, the database, the request going away)
// runs between using the approval and running its call.
type decision struct {
	b          Binding
	ap         Approval // as stored when the request began
	tool       Tool
	registered bool  // false when the tool is no longer in the registry
	tr         *turn // the paused turn, ready to resume
}

// decide validates an approve or reject request for p and prepares the
// turn it resumes.
func (a *Assistant) decide(ctx context.Context, p access.Principal, req ApproveRequest, emit Emit) (*decision, error) {
	if !approvalID.MatchString(req.ApprovalID) {
		return nil, askbi.Errorf(askbi.InvalidArgument, "approval_id: malformed")
	}
	live, err := a.begin(ctx, p)
	if err != nil {
		return nil, err
	}
	conv, err := a.owned(ctx, live, req.ConversationID)
	if err != nil {
		return nil, err
	}
	hash, err := canonjson.Hash(req.Arguments)
	if err != nil {
		return nil, askbi.Errorf(askbi.InvalidArgument, "arguments: must be the JSON object shown for approval")
	}
	d := &decision{b: Binding{UserID: live.UserID, TeamID: live.TeamID, ConversationID: conv.ID, Tool: req.Tool, ArgsHash: hash}}
	d.ap, err = a.stores.Approvals.Approval(ctx, req.ApprovalID)
	if err == nil {
		d.b.Target = d.ap.Target // checked against the tool below
	}
	if askbi.ErrorCode(err) == askbi.NotFound || err == nil && !d.b.Matches(d.ap) {
		return nil, errApprovalInvalid()
	}
	if err != nil {
		return nil, err
	}
	tools, err := a.toolbox(ctx, live)
	if err != nil {
		return nil, err
	}
	d.tool, d.registered = tools.lookup(d.ap.Tool)
	// A tool no longer offered (turned off, removed, or changed in what it
	// may do until an admin allows it again) has no target to compare:
	// Approve answers that the action is no longer available and leaves
	// the approval pending. An offered tool's target is the tool's as it
	// stands now: an approval of a remote tool whose connection, name or
	// definition changed no longer matches.
	if d.registered {
		if d.b.Target = d.tool.Target; !d.b.Matches(d.ap) {
			return nil, errApprovalInvalid()
		}
	}
	if d.tr, err = a.resume(ctx, live, conv, d.ap.TurnID, emit); err != nil {
		return nil, err
	}
	d.tr.tools = tools
	return d, nil
}

// errNoLongerAvailable is the answer to a call of a tool that is no
// longer offered. Waiting does not bring it back: an admin has to.
func errNoLongerAvailable() error {
	return askbi.NoRetry(askbi.Unavailable, "This action is no longer available.")
}

func errApprovalInvalid() error {
	return askbi.Errorf(askbi.ApprovalInvalid, "The approval is invalid or has expired.")
}

// Approve uses an approval and runs its call, then lets the model continue
// the turn. The approval must be pending, unexpired, and bound to this
// user, team, conversation, tool and arguments; otherwise ApprovalInvalid
// and nothing runs. A tool that is no longer offered (a remote tool turned
// off since the call was proposed) answers Unavailable ("no longer
// available"), runs nothing and leaves the approval pending; so does a
// user whose role may not approve the call (Tool.ApproveRight), with
// Forbidden.
//
// An approval is used only when its call runs: every check that can fail
// for a transient reason happens first, and a store failure between using
// the approval and starting the call puts it back to pending. Once the
// call starts it finishes and leaves a receipt, even if the request is
// cancelled. A retry of an approval that ran, or a concurrent duplicate of
// one that is running (it waits for the result, up to 30 seconds), returns
// the stored result without running again; another approval of a call
// that already ran is Conflict.
func (a *Assistant) Approve(ctx context.Context, p access.Principal, req ApproveRequest, emit Emit) (err error) {
	ctx, done := a.request(ctx, p, "approve", req.ConversationID)
	defer func() { done(err) }()
	defer askbi.Wrap(&err, "ask.Assistant.Approve")
	d, err := a.decide(ctx, p, req, emit)
	if err != nil {
		return err
	}
	if !d.registered {
		return errNoLongerAvailable()
	}
	// A role that may not approve the call leaves the approval as it is:
	// someone else cannot use it (it is bound to this user), and the user
	// may still reject it.
	if err := mayApprove(d.tr.p, d.tool); err != nil {
		return err
	}
	if ctx.Err() != nil {
		return askbi.Errorf(askbi.Unavailable, "the request was cancelled")
	}
	ap, rc, err := a.consume(ctx, d)
	if err != nil {
		return err
	}
	tr := d.tr
	if rc == nil {
		// This request runs the call: it takes a turn slot. A refusal at
		// the bound puts the approval back to pending, for the user to
		// press again, as any transient failure before the call does.
		// The other approves of the same approval run nothing (they wait
		// for, or read, its receipt) and take no slot.
		release, err := a.running.acquire(ctx, tr.p)
		if err != nil {
			a.release(ctx, ap.ID)
			return err
		}
		defer release()
	}
	if rc != nil {
		// A retry: answer from the receipt. The call's turn may since
		// wait on another approval: the client must not read it as done.
		tr.send(receiptEvent(d.tool, ap, *rc))
		state := TurnCompleted
		if tr.stored == TurnAwaitingApproval {
			state = TurnAwaitingApproval
		}
		tr.send(Event{Type: EventRequestCompleted, State: state})
		return nil
	}
	ctx, err = tr.hold(ctx)
	if err != nil {
		a.release(ctx, ap.ID)
		return err
	}
	if err := tr.runApproved(ctx, d.tool, ap); err != nil {
		return tr.finish(ctx, err)
	}
	return tr.finish(ctx, tr.loop(ctx))
}

// consume uses the approval, or finds the receipt of the call it already
// allowed: it returns the approval and, for a retry, its receipt.
func (a *Assistant) consume(ctx context.Context, d *decision) (Approval, *Receipt, error) {
	wait, cancel := context.WithTimeout(ctx, receiptWait)
	defer cancel()
	backoff := 10 * time.Millisecond
	for {
		ap, err := a.stores.Approvals.Consume(ctx, d.ap.ID, d.b, a.o.Now())
		if askbi.ErrorCode(err) != askbi.ApprovalInvalid {
			return ap, nil, err
		}
		cur, gerr := a.stores.Approvals.Approval(ctx, d.ap.ID)
		if gerr != nil || !d.b.Matches(cur) {
			return Approval{}, nil, err
		}
		switch cur.State {
		case ApprovalConsumed:
			rc, rerr := a.stores.Receipts.Receipt(ctx, cur.ID)
			if rerr == nil {
				return cur, &rc, nil
			}
			if askbi.ErrorCode(rerr) != askbi.NotFound {
				return Approval{}, nil, rerr
			}
			if a.o.Now().After(cur.ExpiresAt.Add(receiptWait)) {
				// Used long ago and never finished: the run was lost.
				return Approval{}, nil, err
			}
			// Another request is running the call right now.
		case ApprovalPending:
			if !a.o.Now().Before(cur.ExpiresAt) {
				return Approval{}, nil, err
			}
			// Released by a request that failed before running it: retry.
		default:
			return Approval{}, nil, err
		}
		select {
		case <-wait.Done():
			if ctx.Err() != nil {
				return Approval{}, nil, askbi.Errorf(askbi.Unavailable, "the request was cancelled")
			}
			return Approval{}, nil, askbi.Errorf(askbi.Unavailable, "the approved action is still running; try again in 2 s")
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, 250*time.Millisecond)
	}
}

// release puts a used approval back to pending after a failure that struck
// before its call started.
func (a *Assistant) release(ctx context.Context, id string) {
	sctx, cancel := store(ctx)
	defer cancel()
	if err := a.stores.Approvals.Release(sctx, id); err != nil {
		a.o.Logger.Error("ask: release approval", "approval", id, "err", err)
	}
}

// runApproved runs the call approval ap allowed, exactly once, and keeps
// its receipt, then records it in the work summary and history.
func (tr *turn) runApproved(ctx context.Context, tool Tool, ap Approval) error {
	run := tr.newRun(tool, ap.ToolCallID)
	run.State, run.ApprovalID = RunRunning, ap.ID
	if err := tr.a.stores.ToolRuns.SaveToolRun(ctx, run); err != nil {
		tr.a.release(ctx, ap.ID)
		return err
	}
	tr.send(Event{Type: EventToolRunning, Tool: toolEvent(tool, run)})

	// From here on the call finishes and leaves its receipt whatever
	// happens to the request: a call runs at most once, and its approval
	// counts as used only because it ran.
	stop := tr.keepLease(ctx)
	out, runErr := tr.measureTool(context.WithoutCancel(ctx), tool, func(ctx context.Context) (Output, error) {
		return tool.Run(ctx, Call{Principal: tr.p, ConversationID: tr.conv.ID, Arguments: ap.Arguments})
	})
	stop()
	sctx, cancel := store(ctx)
	defer cancel()
	rc := Receipt{ApprovalID: ap.ID, ToolCallID: ap.ToolCallID, CreatedAt: tr.a.o.Now().UTC()}
	var data json.RawMessage
	if runErr == nil {
		rc.Summary = tr.a.redact.String(out.Summary)
		if data, runErr = tr.marshalRedacted(out.Data); runErr == nil {
			rc.Result, runErr = tr.marshalRedacted(out.Result)
		}
	}
	if runErr != nil {
		body := tr.errorBody(runErr)
		rc.ErrorCode, rc.ErrorMessage = body.Code, body.Message
		data, _ = json.Marshal(map[string]any{"error": body})
	}
	// The call ran: a blip of the store must not lose what it did.
	err := retry(sctx, func() error {
		err := tr.a.stores.Receipts.PutReceipt(sctx, rc)
		if askbi.ErrorCode(err) == askbi.Conflict {
			if _, rerr := tr.a.stores.Receipts.Receipt(sctx, rc.ApprovalID); rerr == nil {
				return nil // an earlier attempt was stored after all
			}
		}
		return err
	})
	if err != nil {
		return err
	}
	run.State, run.Result, run.UpdatedAt = RunCompleted, rc.Result, tr.a.o.Now().UTC()
	if rc.ErrorCode != "" {
		run.State, run.ErrorCode, run.ErrorMessage = RunFailed, rc.ErrorCode, rc.ErrorMessage
	}
	if err := retry(sctx, func() error { return tr.a.stores.ToolRuns.SaveToolRun(sctx, run) }); err != nil {
		return err
	}
	if err := retry(sctx, func() error { return tr.saveOutput(sctx, tool, ap.ToolCallID, data) }); err != nil {
		return err
	}
	tr.send(receiptEvent(tool, ap, rc))
	return nil
}

// retry runs f again, a few times over about a second, while it fails for
// a reason that may pass (Unavailable, Timeout, Internal).
func retry(ctx context.Context, f func() error) error {
	err := f()
	for _, wait := range []time.Duration{50 * time.Millisecond, 200 * time.Millisecond, 800 * time.Millisecond} {
		switch askbi.ErrorCode(err) {
		case askbi.Unavailable, askbi.Timeout, askbi.Internal:
		default:
			return err
		}
		select {
		case <-ctx.Done():
			return err
		case <-time.After(wait):
		}
		err = f()
	}
	return err
}

// receiptEvent is the event a receipt answers with: the same for the
// request that ran the call and for every retry.
func receiptEvent(tool Tool, ap Approval, rc Receipt) Event {
	te := &ToolEvent{CallID: ap.ToolCallID, Name: tool.Name, Label: tool.Label, Class: tool.Class, ApprovalID: ap.ID}
	if rc.ErrorCode != "" {
		te.State = RunFailed
		msg := rc.ErrorMessage
		if msg == "" {
			msg = "The approved action failed."
		}
		return Event{Type: EventToolFailed, Tool: te, Error: &ErrorBody{Code: rc.ErrorCode, Message: msg}}
	}
	te.State, te.Summary, te.Result = RunCompleted, rc.Summary, rc.Result
	return Event{Type: EventToolCompleted, Tool: te}
}

// Reject burns an approval under the same binding rules as Approve, marks
// the call rejected, and lets the model answer.
func (a *Assistant) Reject(ctx context.Context, p access.Principal, req ApproveRequest, emit Emit) (err error) {
	ctx, done := a.request(ctx, p, "reject", req.ConversationID)
	defer func() { done(err) }()
	defer askbi.Wrap(&err, "ask.Assistant.Reject")
	d, err := a.decide(ctx, p, req, emit)
	if err != nil {
		return err
	}
	release, err := a.running.acquire(ctx, d.tr.p)
	if err != nil {
		return err
	}
	defer release()
	ap, err := a.stores.Approvals.Reject(ctx, d.ap.ID, d.b, a.o.Now())
	if err != nil {
		return err
	}
	tr := d.tr
	if ctx, err = tr.hold(ctx); err != nil {
		return tr.finish(ctx, err)
	}
	run := tr.newRun(d.tool, ap.ToolCallID)
	run.State, run.ApprovalID = RunRejected, ap.ID
	if err := a.stores.ToolRuns.SaveToolRun(ctx, run); err != nil {
		return tr.finish(ctx, err)
	}
	tr.send(Event{Type: EventToolRejected, Tool: toolEvent(d.tool, run)})
	if err := tr.saveOutput(ctx, d.tool, ap.ToolCallID, json.RawMessage(`{"rejected":"the user rejected this action; it did not run"}`)); err != nil {
		return tr.finish(ctx, err)
	}
	return tr.finish(ctx, tr.loop(ctx))
}

// resume prepares a paused turn to go on, without saving anything.
func (a *Assistant) resume(ctx context.Context, p access.Principal, conv Conversation, turnID string, emit Emit) (*turn, error) {
	level, err := a.o.Sharing.Sharing(ctx, p.TeamID)
	if err != nil {
		return nil, err
	}
	items, _, err := a.revalidate(ctx, p, conv.ID)
	if err != nil {
		return nil, err
	}
	tr := a.newTurn(p, conv, emit)
	tr.level, tr.items = level, items
	t, err := a.stores.Turns.Turn(ctx, conv.ID, turnID)
	switch askbi.ErrorCode(err) {
	case "":
		tr.stored = t.State
		t.State, t.ErrorCode, t.UpdatedAt = TurnRunning, "", tr.t.UpdatedAt
		tr.t = t
	case askbi.NotFound:
		tr.t.ID = turnID
	default:
		return nil, err
	}
	return tr, nil
}

// targetKeys are the arguments that name workspace entities, in the order
// an approval lists them.
var targetKeys = []struct {
	key string
	typ access.EntityType
}{
	{"dashboard_id", access.TypeDashboard}, {"chart_id", access.TypeChart},
	{"dataset_id", access.TypeDataset}, {"connection_id", access.TypeConnection},
}

// targets names the entities a call's arguments refer to, as p can see
// them now, so an approval shows its exact target by name rather than by
// ID. An entity p cannot see is left out.
func (a *Assistant) targets(ctx context.Context, p access.Principal, args json.RawMessage) ([]dataexec.Ref, error) {
	var top map[string]json.RawMessage
	if json.Unmarshal(args, &top) != nil {
		return []dataexec.Ref{}, nil
	}
	var ents []access.Entity
	for _, k := range targetKeys {
		var id string
		if json.Unmarshal(top[k.key], &id) == nil && id != "" {
			ents = append(ents, access.Entity{Type: k.typ, ID: id})
		}
		var ids []string // a batch: "chart_ids"
		if json.Unmarshal(top[k.key+"s"], &ids) == nil {
			for _, id := range ids[:min(len(ids), dataexec.MaxPlacements)] {
				ents = append(ents, access.Entity{Type: k.typ, ID: id})
			}
		}
	}
	out := []dataexec.Ref{}
	if len(ents) == 0 {
		return out, nil
	}
	refs, err := a.exec.Resolve(ctx, p, ents)
	if err != nil {
		return nil, err
	}
	for _, r := range refs {
		if r != nil {
			out = append(out, *r)
		}
	}
	return out, nil
}

// shared says who else sees a call's change, in a sentence, when the
// change reaches a dashboard: a target dashboard, or the dashboard a
// target chart sits on. Every dashboard is shared with everyone who can
// open its project (there are no private dashboards), so such a change
// is seen by others; a preview sits on none. "" when no dashboard is
// reached.
func (a *Assistant) shared(ctx context.Context, p access.Principal, targets []dataexec.Ref) (string, error) {
	var names, seen []string
	add := func(d dataexec.Ref) {
		if !slices.Contains(seen, d.ID) {
			seen, names = append(seen, d.ID), append(names, d.Name)
		}
	}
	var charts []dataexec.ChartResult
	for _, r := range targets {
		switch r.Type {
		case access.TypeDashboard:
			add(r)
		case access.TypeChart:
			charts = append(charts, dataexec.ChartResult{Chart: r})
		}
	}
	if len(charts) > 0 {
		now, err := a.exec.RefreshCharts(ctx, p, charts)
		if err != nil {
			return "", err
		}
		for _, cr := range now {
			if cr.Dashboard != nil {
				add(*cr.Dashboard)
			}
		}
	}
	switch len(names) {
	case 0:
		return "", nil
	case 1:
		return names[0] + " is a shared dashboard: everyone who can open it sees this change.", nil
	}
	return strings.Join(names[:len(names)-1], ", ") + " and " + names[len(names)-1] +
		" are shared dashboards: everyone who can open them sees this change.", nil
}
