package ask_test

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/askbi/askbi"
	"github.com/askbi/askbi/access"
	"github.com/askbi/askbi/ask"
	"github.com/askbi/askbi/ask/provider/mock"
	"github.com/askbi/askbi/dataexec"
	"github.com/askbi/askbi/workspace"
)

// fault makes the k-th store call after it is armed fail (or cancel the
// caller's request), to test every point where a transient failure can
// strike during an approval.
type fault struct {
	mu     sync.Mutex
	left   int // calls before the failure; 0 means disarmed
	cancel context.CancelFunc
	hit    bool
}

func (f *fault) arm(k int, cancel context.CancelFunc) {
	f.mu.Lock()
	f.left, f.cancel, f.hit = k, cancel, false
	f.mu.Unlock()
}

// call counts one store call and returns the injected error, if this is
// the one.
func (f *fault) call() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.left == 0 {
		return nil
	}
	f.left--
	if f.left > 0 {
		return nil
	}
	f.hit = true
	if f.cancel != nil {
		f.cancel() // the client leaves; the store call itself goes through
		return nil
	}
	return askbi.Errorf(askbi.Unavailable, "the database blipped")
}

func (f *fault) wasHit() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.hit
}

// faultyStores wraps every store of s so that f decides each call.
func faultyStores(s ask.Stores, f *fault) ask.Stores {
	return ask.Stores{Conversations: faultyConvs{s.Conversations, f}, Turns: faultyTurns{s.Turns, f}, Context: faultyContext{s.Context, f},
		ToolRuns: faultyRuns{s.ToolRuns, f}, Approvals: faultyApprovals{s.Approvals, f}, Receipts: faultyReceipts{s.Receipts, f}}
}

type faultyConvs struct {
	ask.ConversationStore
	f *fault
}

func (s faultyConvs) CreateConversation(ctx context.Context, c ask.Conversation) error {
	if err := s.f.call(); err != nil {
		return err
	}
	return s.ConversationStore.CreateConversation(ctx, c)
}

func (s faultyConvs) Conversation(ctx context.Context, id string) (ask.Conversation, error) {
	if err := s.f.call(); err != nil {
		return ask.Conversation{}, err
	}
	return s.ConversationStore.Conversation(ctx, id)
}

func (s faultyConvs) UpdateConversation(ctx context.Context, c ask.Conversation) error {
	if err := s.f.call(); err != nil {
		return err
	}
	return s.ConversationStore.UpdateConversation(ctx, c)
}

type faultyTurns struct {
	ask.TurnStore
	f *fault
}

func (s faultyTurns) SaveTurn(ctx context.Context, t ask.Turn) error {
	if err := s.f.call(); err != nil {
		return err
	}
	return s.TurnStore.SaveTurn(ctx, t)
}

func (s faultyTurns) Turns(ctx context.Context, conversationID string) ([]ask.Turn, error) {
	if err := s.f.call(); err != nil {
		return nil, err
	}
	return s.TurnStore.Turns(ctx, conversationID)
}

func (s faultyTurns) AppendEntry(ctx context.Context, e ask.Entry) (ask.Entry, error) {
	if err := s.f.call(); err != nil {
		return ask.Entry{}, err
	}
	return s.TurnStore.AppendEntry(ctx, e)
}

func (s faultyTurns) Entries(ctx context.Context, conversationID string, limit int) ([]ask.Entry, error) {
	if err := s.f.call(); err != nil {
		return nil, err
	}
	return s.TurnStore.Entries(ctx, conversationID, limit)
}

type faultyContext struct {
	ask.ContextStore
	f *fault
}

func (s faultyContext) SetContext(ctx context.Context, conversationID string, refs []ask.ContextRef) error {
	if err := s.f.call(); err != nil {
		return err
	}
	return s.ContextStore.SetContext(ctx, conversationID, refs)
}

func (s faultyContext) Context(ctx context.Context, conversationID string) ([]ask.ContextRef, error) {
	if err := s.f.call(); err != nil {
		return nil, err
	}
	return s.ContextStore.Context(ctx, conversationID)
}

type faultyRuns struct {
	ask.ToolRunStore
	f *fault
}

func (s faultyRuns) SaveToolRun(ctx context.Context, r ask.ToolRun) error {
	if err := s.f.call(); err != nil {
		return err
	}
	return s.ToolRunStore.SaveToolRun(ctx, r)
}

func (s faultyRuns) ToolRuns(ctx context.Context, conversationID string) ([]ask.ToolRun, error) {
	if err := s.f.call(); err != nil {
		return nil, err
	}
	return s.ToolRunStore.ToolRuns(ctx, conversationID)
}

type faultyApprovals struct {
	ask.ApprovalStore
	f *fault
}

func (s faultyApprovals) Approval(ctx context.Context, id string) (ask.Approval, error) {
	if err := s.f.call(); err != nil {
		return ask.Approval{}, err
	}
	return s.ApprovalStore.Approval(ctx, id)
}

func (s faultyApprovals) Consume(ctx context.Context, id string, b ask.Binding, now time.Time) (ask.Approval, error) {
	if err := s.f.call(); err != nil {
		return ask.Approval{}, err
	}
	return s.ApprovalStore.Consume(ctx, id, b, now)
}

type faultyReceipts struct {
	ask.ReceiptStore
	f *fault
}

func (s faultyReceipts) PutReceipt(ctx context.Context, r ask.Receipt) error {
	if err := s.f.call(); err != nil {
		return err
	}
	return s.ReceiptStore.PutReceipt(ctx, r)
}

func (s faultyReceipts) Receipt(ctx context.Context, approvalID string) (ask.Receipt, error) {
	if err := s.f.call(); err != nil {
		return ask.Receipt{}, err
	}
	return s.ReceiptStore.Receipt(ctx, approvalID)
}

// checkNotBurnt asserts the invariant after a failed approve: the approval
// is still pending and nothing ran, or its tool ran and left a receipt.
func checkNotBurnt(t *testing.T, e *env, conv string, te *ask.ToolEvent) {
	t.Helper()
	ctx := context.Background()
	ap, err := e.approvals.Approval(ctx, te.ApprovalID)
	if err != nil {
		t.Fatal(err)
	}
	_, gone := e.cat.Dashboard(ctx, "d-revenue")
	switch ap.State {
	case ask.ApprovalPending:
		if gone != nil {
			t.Fatal("the dashboard was deleted, yet the approval is still pending")
		}
		if v := e.MustOpen(t, alice, conv); len(v.Pending) != 1 {
			t.Errorf("pending approvals = %+v, want the one", v.Pending)
		}
	case ask.ApprovalConsumed:
		if _, err := e.approvals.Receipt(ctx, te.ApprovalID); err != nil {
			t.Fatalf("the approval was used, but no receipt exists (%v): the approval is burnt", err)
		}
	default:
		t.Fatalf("approval state %q", ap.State)
	}
}

// TestTransientFailureKeepsApproval fails or cancels each store call of an
// approval in turn; whatever breaks, the approval is either still pending
// or has a receipt, and one retry deletes the dashboard exactly once.
func TestTransientFailureKeepsApproval(t *testing.T) {
	for _, mode := range []string{"store error", "cancelled request"} {
		t.Run(mode, func(t *testing.T) {
			for k := 1; ; k++ {
				f := &fault{}
				e := newEnv(t, nil, func(c *envConfig) {
					c.stores = faultyStores(c.stores, f)
				})
				conv, te := proposeDelete(t, e, alice)
				ctx, cancel := context.WithCancel(context.Background())
				if mode == "store error" {
					cancel = nil
				}
				f.arm(k, cancel)
				emit, _ := ask.Collect()
				err := e.a.Approve(ctx, alice, ask.ApproveRequest{ConversationID: conv, ApprovalID: te.ApprovalID, Tool: te.Name, Arguments: te.Arguments}, emit)
				if !f.wasHit() {
					if err != nil {
						t.Fatalf("approve without a fault: %v", err)
					}
					if k < 3 {
						t.Fatalf("only %d store calls: the fault never struck", k)
					}
					return // every store call of the approval was tried
				}
				t.Logf("fault at store call %d: %v", k, err)
				checkNotBurnt(t, e, conv, te)
				f.arm(0, nil)
				if _, err := approve(e, alice, conv, te, string(te.Arguments)); err != nil {
					t.Fatalf("fault at call %d: retry = %v, want the deletion or its receipt", k, err)
				}
				if _, err := e.cat.Dashboard(context.Background(), "d-revenue"); askbi.ErrorCode(err) != askbi.NotFound {
					t.Fatalf("fault at call %d: dashboard still there after the retry", k)
				}
				if n := e.audited(dataexec.ActionDashboardDelete); n != 1 {
					t.Fatalf("fault at call %d: delete ran %d times", k, n)
				}
			}
		})
	}
}

// TestRateLimitKeepsApproval: a caller whose rate budget runs out while
// approving gets rate_limited, and the approval waits for the retry.
func TestRateLimitKeepsApproval(t *testing.T) {
	for left := 0; left <= 4; left++ {
		t.Run(string(rune('0'+left))+" tokens left", func(t *testing.T) {
			var now time.Time
			var mu sync.Mutex
			clockNow := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
			limiter := access.NewMemoryRateLimiter(&access.RateOptions{Burst: 1000, Rate: 1, Now: clockNow})
			e := newEnv(t, nil, func(c *envConfig) { c.limiter = limiter })
			conv, te := proposeDelete(t, e, alice)
			// Spend all but `left` tokens of alice's budget.
			for limiter.Allow(context.Background(), "session:acme/alice") == nil {
			}
			mu.Lock()
			now = now.Add(time.Duration(left) * time.Second)
			mu.Unlock()
			_, err := approve(e, alice, conv, te, string(te.Arguments))
			if err != nil {
				mustCode(t, err, askbi.RateLimited)
				mu.Lock()
				now = now.Add(time.Hour)
				mu.Unlock()
				checkNotBurnt(t, e, conv, te)
				if _, err := approve(e, alice, conv, te, string(te.Arguments)); err != nil {
					t.Fatalf("retry after the limit refilled: %v", err)
				}
			}
			if _, err := e.cat.Dashboard(context.Background(), "d-revenue"); askbi.ErrorCode(err) != askbi.NotFound {
				t.Fatal("the dashboard is still there")
			}
			if n := e.audited(dataexec.ActionDashboardDelete); n != 1 {
				t.Fatalf("delete ran %d times", n)
			}
		})
	}
}

// failAfterTool answers like the mock model until armed, then fails.
type failAfterTool struct {
	*mock.Provider
	mu    sync.Mutex
	armed bool
}

func (m *failAfterTool) Complete(ctx context.Context, req ask.ModelRequest, onText func(string)) (ask.ModelReply, error) {
	m.mu.Lock()
	armed := m.armed
	m.mu.Unlock()
	if armed {
		return ask.ModelReply{}, askbi.Errorf(askbi.Unavailable, "the model provider failed")
	}
	return m.Provider.Complete(ctx, req, onText)
}

// TestProviderErrorAfterToolRan: the tool ran, then the model failed; the
// approval is used, its receipt answers the retry, and nothing is pending.
func TestProviderErrorAfterToolRan(t *testing.T) {
	model := &failAfterTool{Provider: mock.New()}
	e := newEnv(t, model)
	conv, te := proposeDelete(t, e, alice)
	model.mu.Lock()
	model.armed = true
	model.mu.Unlock()
	events, err := approve(e, alice, conv, te, string(te.Arguments))
	mustCode(t, err, askbi.Unavailable)
	if ev := find(events, ask.EventToolCompleted); ev == nil {
		t.Fatalf("no tool.completed before the failure: %v", types(events))
	}
	if _, err := e.cat.Dashboard(context.Background(), "d-revenue"); askbi.ErrorCode(err) != askbi.NotFound {
		t.Fatal("the dashboard is still there")
	}
	v := e.MustOpen(t, alice, conv)
	if len(v.Pending) != 0 {
		t.Errorf("pending = %+v", v.Pending)
	}
	if got := labels(v.WorkSummary); got[len(got)-1] != "Deleted dashboard: completed" {
		t.Errorf("work summary = %v", got)
	}
	events, err = approve(e, alice, conv, te, string(te.Arguments))
	if err != nil {
		t.Fatalf("retry = %v", err)
	}
	if ev := find(events, ask.EventToolCompleted); ev == nil || ev.Tool.ApprovalID != te.ApprovalID {
		t.Errorf("retry events = %v", types(events))
	}
	if n := e.audited(dataexec.ActionDashboardDelete); n != 1 {
		t.Errorf("delete ran %d times", n)
	}
}

// TestConcurrentApprovesShareReceipt: of 50 parallel approves of one
// approval exactly one runs the tool, and every answer carries its
// receipt; none says approval_invalid.
func TestConcurrentApprovesShareReceipt(t *testing.T) {
	e := newEnv(t, nil, func(c *envConfig) { c.opts.MaxTurnsPerUser = 100 })
	conv, te := proposeDelete(t, e, alice)
	const n = 50
	var wg sync.WaitGroup
	completed := make([]*ask.ToolEvent, n)
	errs := make([]error, n)
	for i := range n {
		wg.Go(func() {
			events, err := approve(e, alice, conv, te, string(te.Arguments))
			errs[i] = err
			if ev := find(events, ask.EventToolCompleted); ev != nil {
				completed[i] = ev.Tool
			}
		})
	}
	wg.Wait()
	if n := e.audited(dataexec.ActionDashboardDelete); n != 1 {
		t.Errorf("delete ran %d times, want 1", n)
	}
	for i := range n {
		if errs[i] != nil {
			t.Errorf("approve %d: %v", i, errs[i])
			continue
		}
		if completed[i] == nil {
			t.Errorf("approve %d: no tool.completed", i)
			continue
		}
		if diff := cmp.Diff(completed[0], completed[i]); diff != "" {
			t.Errorf("approve %d carries another result (-first +this):\n%s", i, diff)
		}
	}
	if completed[0] != nil && completed[0].ApprovalID != te.ApprovalID {
		t.Errorf("receipt of approval %q, want %q", completed[0].ApprovalID, te.ApprovalID)
	}
}

// TestUnavailableChartKeepsDatasetLinks: a deleted preview shows
// unavailable with links to the datasets that still exist.
func TestUnavailableChartKeepsDatasetLinks(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t, nil)
	conv := e.MustConversation(t, alice)
	e.MustSend(t, alice, conv, "show signups by week", nil)
	v := e.MustOpen(t, alice, conv)
	var cr dataexec.ChartResult
	if err := json.Unmarshal(v.WorkSummary[2].Result, &cr); err != nil || cr.Chart.ID == "" {
		t.Fatalf("chart result %s: %v", v.WorkSummary[2].Result, err)
	}
	if _, err := e.a.AddPreviewToDashboard(ctx, alice, conv, cr.Chart.ID, "d-growth"); err != nil {
		t.Fatal(err)
	}
	if err := e.cat.DeleteDashboard(ctx, "d-growth"); err != nil { // takes the chart with it
		t.Fatal(err)
	}
	v = e.MustOpen(t, alice, conv)
	json.Unmarshal(v.WorkSummary[2].Result, &cr)
	want := []dataexec.Ref{{Type: access.TypeDataset, ID: "ds-weekly", Name: "Weekly signups", ProjectID: "growth", Info: "Warehouse · PostgreSQL"}}
	if cr.Status != "unavailable" || cr.Dashboard != nil {
		t.Errorf("status %q, dashboard %+v", cr.Status, cr.Dashboard)
	}
	if diff := cmp.Diff(want, cr.Datasets); diff != "" {
		t.Errorf("datasets of an unavailable chart (-want +got):\n%s", diff)
	}
	// A dataset that is gone too is left out.
	e.cat.DeleteDataset("ds-weekly")
	v = e.MustOpen(t, alice, conv)
	json.Unmarshal(v.WorkSummary[2].Result, &cr)
	if cr.Status != "unavailable" || len(cr.Datasets) != 0 {
		t.Errorf("after the dataset went: %+v", cr)
	}
}

// TestOpenManyChartsCostsOneRequest: opening a conversation with 200 chart
// results passes the gate once, and every result comes back fresh.
func TestOpenManyChartsCostsOneRequest(t *testing.T) {
	ctx := context.Background()
	var mu sync.Mutex
	now := time.Unix(0, 0)
	limiter := access.NewMemoryRateLimiter(&access.RateOptions{Burst: 1, Rate: 0.001,
		Now: func() time.Time { mu.Lock(); defer mu.Unlock(); return now }})
	e := newEnv(t, nil, func(c *envConfig) { c.limiter = limiter })
	conv := e.MustConversation(t, alice) // spends the one token
	mu.Lock()
	now = now.Add(time.Hour)
	mu.Unlock()
	for i := range 200 {
		id := fmt.Sprintf("c-many-%03d", i)
		e.cat.PutChart(workspace.Chart{ID: id, TeamID: "acme", ProjectID: "growth", Name: "Old name", Type: workspace.ChartLine,
			DatasetID: "ds-weekly", XField: "week", YFields: []string{"signups"}})
		// As saved when the chart was still a preview on no dashboard.
		b, _ := json.Marshal(dataexec.ChartResult{Status: workspace.StatusPreview,
			Chart: dataexec.Ref{Type: access.TypeChart, ID: id, Name: "Old name"}, Datasets: []dataexec.Ref{}})
		if err := e.convs.SaveToolRun(ctx, ask.ToolRun{CallID: "call-" + id, ConversationID: conv, TurnID: "t", Tool: "create_chart_preview",
			Label: "Created chart preview", State: ask.RunCompleted, Result: b}); err != nil {
			t.Fatal(err)
		}
		e.cat.PutChart(workspace.Chart{ID: id, TeamID: "acme", ProjectID: "growth", DashboardID: "d-growth", Name: "New name",
			Type: workspace.ChartBar, DatasetID: "ds-weekly", XField: "week", YFields: []string{"signups"}})
	}
	v := e.MustOpen(t, alice, conv)
	if len(v.WorkSummary) != 200 {
		t.Fatalf("%d runs", len(v.WorkSummary))
	}
	for _, r := range v.WorkSummary {
		var cr dataexec.ChartResult
		if err := json.Unmarshal(r.Result, &cr); err != nil || cr.Status != workspace.StatusSaved || cr.Chart.Name != "New name" ||
			cr.ChartType != workspace.ChartBar || len(cr.Datasets) != 1 || cr.Dashboard == nil {
			t.Fatalf("stale result %s (%v)", r.Result, err)
		}
	}
	// That was the one request the budget allowed.
	_, err := e.a.Open(ctx, alice, conv)
	mustCode(t, err, askbi.RateLimited)
}

// twoDeletes proposes deleting d-revenue, and once that ran, d-growth:
// the turn waits on a second approval after the first one ran.
type twoDeletes struct {
	mu sync.Mutex
	n  int
}

func (m *twoDeletes) Complete(_ context.Context, req ask.ModelRequest, _ func(string)) (ask.ModelReply, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.n++
	switch m.n {
	case 1:
		return ask.ModelReply{ToolCalls: []ask.ToolCall{{ID: "c1", Name: "delete_dashboard", Arguments: json.RawMessage(`{"dashboard_id":"d-revenue"}`)}}}, nil
	case 2:
		return ask.ModelReply{ToolCalls: []ask.ToolCall{{ID: "c2", Name: "delete_dashboard", Arguments: json.RawMessage(`{"dashboard_id":"d-growth"}`)}}}, nil
	}
	return ask.ModelReply{Text: "ok"}, nil
}

// TestReplayReportsTurnState: a retry of an approval that ran answers
// from its receipt with the turn's state as it stands, here waiting on
// the next approval, never "completed".
func TestReplayReportsTurnState(t *testing.T) {
	e := newEnv(t, &twoDeletes{})
	conv, te := proposeDelete(t, e, alice)
	events, err := approve(e, alice, conv, te, string(te.Arguments))
	if err != nil {
		t.Fatal(err)
	}
	if ev := find(events, ask.EventToolApprovalRequired); ev == nil {
		t.Fatalf("no second approval: %v", types(events))
	}
	events, err = approve(e, alice, conv, te, string(te.Arguments))
	if err != nil {
		t.Fatalf("retry = %v", err)
	}
	last := events[len(events)-1]
	if last.Type != ask.EventRequestCompleted || last.State != ask.TurnAwaitingApproval {
		t.Errorf("retry ends with %s state %q, want %s state %q", last.Type, last.State, ask.EventRequestCompleted, ask.TurnAwaitingApproval)
	}
	if n := e.audited(dataexec.ActionDashboardDelete); n != 1 {
		t.Errorf("delete ran %d times", n)
	}
}
