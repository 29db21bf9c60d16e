package askeval

import (
	"cmp"
	"context"
	"encoding/json"
	"log/slog"
	"sync"
	"time"

	"github.com/askbi/askbi"
	"github.com/askbi/askbi/access"
	"github.com/askbi/askbi/ask"
	"github.com/askbi/askbi/dataexec"
	"github.com/askbi/askbi/workspace"
)

// Workspace is what a run asks its questions of: the host's catalog,
// executor and sources, and the assistant's configuration, as the host
// wires them in production.
type Workspace struct {
	// Catalog is the executor's workspace catalog: the checks read the
	// saved filters of the datasets an answer used from it.
	Catalog workspace.Catalog
	// Executor runs the assistant's tools and the gold dataset runs.
	Executor *dataexec.Executor
	// Sources answer gold queries ([Gold].SQL), by connection ID. They are
	// queried directly, as the host's own code would: the gold is ground
	// truth, not a tool call. Optional when no case has a gold query.
	Sources dataexec.SourceMap
	// Gate is the request gate of the assistant and the gold runs.
	Gate *access.Gate
	// Principals are who may ask, by the name a case's As gives.
	Principals map[string]access.Principal
	// Default names the principal of a case without As.
	Default string
	// Tools are the assistant's tools, as its [ask.Registry] holds them.
	// Default [ask.ProductTools](Executor).
	Tools []ask.Tool
	// Options configure the assistant as in production ([ask.Options]): Sharing above
	// all (the model sees tool output at that level, and so does a
	// judge), Tools (remote MCP tools), Memory, Now.
	Options ask.Options
}

// Open returns the workspace one run of a case asks its question of.
// A run calls it once, before anything else, so that what an approved
// change did (a deleted dashboard) does not reach the next run: [Demo]
// builds a new one each time. A host that points it at a workspace it
// cannot copy should keep on_approval: approve out of its cases, since
// an approved call runs for real.
type Open func(ctx context.Context) (*Workspace, error)

// Options configure a Runner. The zero value is valid; each zero field
// means its default.
type Options struct {
	// Runs is how many times each case runs: models are not
	// deterministic. Default 1.
	Runs int
	// Parallel is how many runs go at once. Default 1.
	Parallel int
	// Judge, when set, is asked about each run's answer after the checks
	// ([ModelJudge]). Default none: the checks alone decide.
	Judge Judge
	// Prices turn tokens into money in the report. Default none: the
	// report gives tokens only, as providers report no prices.
	Prices *Prices
	// Provider names the model in the report, e.g. "openai gpt-4o-mini".
	Provider string
	// Logger logs each run's outcome at debug level and harness
	// failures at warn. Default slog.Default().
	Logger *slog.Logger
	// Now is the clock of the report's start and the runs' latency.
	// Default time.Now.
	Now func() time.Time
}

// Runner runs cases against an assistant on a model. It is safe for
// concurrent use.
type Runner struct {
	provider ask.Provider
	open     Open
	o        Options
}

// New returns a Runner asking provider's model the cases' questions, on
// the workspaces open returns. opts may be nil.
func New(provider ask.Provider, open Open, opts *Options) *Runner {
	r := &Runner{provider: provider, open: open}
	if opts != nil {
		r.o = *opts
	}
	r.o.Runs, r.o.Parallel = max(r.o.Runs, 1), max(r.o.Parallel, 1)
	if r.o.Logger == nil {
		r.o.Logger = slog.Default()
	}
	if r.o.Now == nil {
		r.o.Now = time.Now
	}
	return r
}

// Run runs each case [Options].Runs times and scores every run. A run
// that goes wrong in the assistant or the model is a failed run
// ([Error]), never an error of Run; Run fails only when a workspace
// cannot be opened, a case names a principal the workspace lacks, or
// ctx ends (then with what was measured so far left out).
func (r *Runner) Run(ctx context.Context, cases []Case) (*Report, error) {
	start := r.o.Now()
	results := make([][]RunResult, len(cases))
	for i := range results {
		results[i] = make([]RunResult, r.o.Runs)
	}
	type job struct{ c, run int }
	jobs := make(chan job)
	var (
		mu       sync.Mutex
		firstErr error
		wg       sync.WaitGroup
		level    ask.Sharing
	)
	for range r.o.Parallel {
		wg.Go(func() {
			for j := range jobs {
				res, lvl, err := r.runOnce(ctx, cases[j.c], j.run)
				mu.Lock()
				if err != nil && firstErr == nil {
					firstErr = err
				}
				if lvl != "" {
					level = lvl
				}
				results[j.c][j.run] = res
				mu.Unlock()
			}
		})
	}
feed:
	for ci := range cases {
		for run := range r.o.Runs {
			mu.Lock()
			stop := firstErr != nil
			mu.Unlock()
			if stop || ctx.Err() != nil {
				break feed
			}
			jobs <- job{ci, run}
		}
	}
	close(jobs)
	wg.Wait()
	if firstErr != nil {
		return nil, firstErr
	}
	if err := ctx.Err(); err != nil {
		return nil, askbi.Errorf(askbi.Timeout, "the evaluation was stopped: %v", err)
	}
	return newReport(cases, results, reportMeta{provider: r.o.Provider, runs: r.o.Runs, sharing: level,
		started: start, took: r.o.Now().Sub(start), prices: r.o.Prices, judged: r.o.Judge != nil}), nil
}

// runKey is the context key of the case, run and message a model call
// belongs to.
type runKey struct{}

type runID struct {
	caseID  string
	run     int
	message string
}

// withMessage is ctx of a run, for the turn of message msg.
func withMessage(ctx context.Context, msg string) context.Context {
	id, _ := ctx.Value(runKey{}).(runID)
	id.message = msg
	return context.WithValue(ctx, runKey{}, id)
}

// messageOf is the user message whose turn ctx's model call belongs to.
func messageOf(ctx context.Context) string {
	id, _ := ctx.Value(runKey{}).(runID)
	return id.message
}

// RunOf returns the case and run (from 0) that ctx's model call belongs
// to, when it is one of a Runner's: what a provider that replays or
// records answers per case ([Replay], [Recorder]) reads.
func RunOf(ctx context.Context) (caseID string, run int, ok bool) {
	id, ok := ctx.Value(runKey{}).(runID)
	return id.caseID, id.run, ok
}

// runOnce runs case c once, on a fresh workspace, and scores it. Its
// error is the harness's own (no workspace, an unknown principal); what
// the assistant did wrong is in the result.
func (r *Runner) runOnce(ctx context.Context, c Case, run int) (RunResult, ask.Sharing, error) {
	ctx = context.WithValue(ctx, runKey{}, runID{caseID: c.ID, run: run})
	ws, err := r.open(ctx)
	if err != nil {
		return RunResult{}, "", err
	}
	p, err := c.principal(ws)
	if err != nil {
		return RunResult{}, "", err
	}
	live, err := ws.Gate.Begin(ctx, p)
	if err != nil {
		return RunResult{}, "", askbi.Errorf(askbi.InvalidArgument, "case %s: principal %q: %s", c.ID, cmp.Or(c.As, ws.Default), askbi.ErrorMessage(err))
	}
	level := ask.SharingAggregates
	if ws.Options.Sharing != nil {
		if level, err = ws.Options.Sharing.Sharing(ctx, live.TeamID); err != nil {
			return RunResult{}, "", err
		}
	}
	res := RunResult{Run: run}
	var gold *table
	if g := c.Expect.Gold; g != nil {
		if gold, err = runGold(ctx, ws, live, *g); err != nil {
			// A gold that does not run is the case's fault, reported as
			// such on every run rather than stopping the others.
			res.Failures = []Failure{{Reason: Error, Detail: "the gold did not run: " + askbi.ErrorMessage(err)}}
			return res, level, nil
		}
	}
	tools := ws.Tools
	if tools == nil {
		tools = ask.ProductTools(ws.Executor)
	}
	reg, err := ask.NewRegistry(tools...)
	if err != nil {
		return RunResult{}, "", askbi.Errorf(askbi.InvalidArgument, "workspace tools: %v", err)
	}
	stores := ask.NewMemoryStores()
	assistant := ask.New(r.provider, ws.Gate, ws.Executor, stores, reg, &ws.Options)

	d := driver{a: assistant, p: live, c: c}
	conv, err := assistant.CreateConversation(ctx, live)
	if err != nil {
		res.Failures = []Failure{{Reason: Error, Detail: "creating the conversation: " + askbi.ErrorMessage(err)}}
		return res, level, nil
	}
	d.conv = conv.ID
	for _, h := range c.History {
		if err := d.send(ctx, h.Message, h.Context); err != nil {
			res.Failures = []Failure{{Reason: Error, Detail: "history turn " + quote(h.Message, 60) + ": " + errText(err)}}
			return res, level, nil
		}
	}
	began := r.o.Now()
	turnErr := d.send(ctx, c.Question, c.Context)
	res.LatencyMS = ms(r.o.Now().Sub(began))

	out, err := collect(ctx, ws, live, stores, reg, &d, level)
	if err != nil {
		return RunResult{}, "", err
	}
	out.err = turnErr
	res.Usage, res.Tools, res.Answer = out.usage, out.toolNames(), out.answer
	res.Failures = score(c, out, gold, level)
	if r.o.Judge != nil && !hasReason(res.Failures, Error) {
		// The judge sees what the model saw: the tool output at the
		// sharing level, never the gold or a row beyond it.
		v, err := r.o.Judge.Judge(ctx, JudgeInput{Case: c, Answer: out.answer, Evidence: out.evidence, Sharing: level})
		switch {
		case err != nil:
			res.Judge = "unclear: " + askbi.ErrorMessage(err)
		case v.Pass:
			res.Judge = "pass: " + v.Reason
		default:
			res.Judge = "fail: " + v.Reason
			res.Failures = append(res.Failures, Failure{Reason: Judged, Detail: v.Reason})
		}
	}
	res.Passed = len(res.Failures) == 0
	r.o.Logger.Debug("askeval: run", "case", c.ID, "run", run, "passed", res.Passed, "failures", res.Failures)
	return res, level, nil
}

// driver sends a case's messages in one conversation and answers its
// approvals as the case says.
type driver struct {
	a    *ask.Assistant
	p    access.Principal
	c    Case
	conv string
	// turn is the scored turn's ID; events are its events, approvals
	// and their answers included.
	turn   string
	events []ask.Event
	// sel is the selection in force: the last one sent.
	sel []ask.ContextRef
}

// maxDecisions bounds the approvals a turn may ask in a row while the
// case approves them, so that a model that asks forever still ends.
const maxDecisions = 5

// send sends one message (with a selection, when sel is not empty) and
// answers the approvals it leads to; it keeps the events of the last
// message sent, and its error, or that of an answer to an approval.
func (d *driver) send(ctx context.Context, msg string, sel []ask.ContextRef) error {
	if len(sel) > 0 {
		d.sel = sel
	}
	ctx = withMessage(ctx, msg)
	emit, events := ask.Collect()
	req := ask.SendRequest{ConversationID: d.conv, Message: msg}
	if len(sel) > 0 {
		req.Context = &sel
	}
	err := d.a.Send(ctx, d.p, req, emit)
	d.events = events()
	d.turn = ""
	for _, e := range d.events {
		if e.TurnID != "" {
			d.turn = e.TurnID
			break
		}
	}
	if err != nil {
		return err
	}
	for range maxDecisions {
		pending := lastPending(d.events)
		if pending == nil || d.c.OnApproval == Wait {
			return nil
		}
		req := ask.ApproveRequest{ConversationID: d.conv, ApprovalID: pending.ApprovalID, Tool: pending.Name, Arguments: pending.Arguments}
		emit, more := ask.Collect()
		if d.c.OnApproval == Approve {
			err = d.a.Approve(ctx, d.p, req, emit)
		} else {
			err = d.a.Reject(ctx, d.p, req, emit)
		}
		d.events = append(d.events, more()...)
		if err != nil {
			return err
		}
	}
	return nil
}

// lastPending is the approval the last events wait for, if any: one
// asked that no later event decided.
func lastPending(events []ask.Event) *ask.ToolEvent {
	var pending *ask.ToolEvent
	for _, e := range events {
		switch {
		case e.Type == ask.EventToolApprovalRequired:
			pending = e.Tool
		case e.Tool != nil && pending != nil && e.Tool.CallID == pending.CallID:
			pending = nil
		case e.Type == ask.EventRequestFailed:
			pending = nil
		}
	}
	if n := len(events); n == 0 || events[n-1].State != ask.TurnAwaitingApproval {
		return nil
	}
	return pending
}

func errText(err error) string {
	return string(askbi.ErrorCode(err)) + ": " + askbi.ErrorMessage(err)
}

// quote is s quoted, cut at n characters.
func quote(s string, n int) string {
	b, _ := json.Marshal(cut(s, n))
	return string(b)
}

func hasReason(fs []Failure, r Reason) bool {
	for _, f := range fs {
		if f.Reason == r {
			return true
		}
	}
	return false
}

// lower is the lower of two sharing levels, an unknown one counting as
// schema only: what the model saw of an output stamped at a and
// replayed at b.
func lower(a, b ask.Sharing) ask.Sharing {
	rank := map[ask.Sharing]int{ask.SharingSchema: 1, ask.SharingAggregates: 2, ask.SharingRows: 3}
	switch {
	case rank[a] == 0 || rank[b] == 0:
		return ask.SharingSchema
	case rank[b] < rank[a]:
		return b
	}
	return a
}
