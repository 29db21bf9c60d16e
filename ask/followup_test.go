package ask_test

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/askbi/askbi/access"
	"github.com/askbi/askbi/ask"
	"github.com/askbi/askbi/dataexec"
	"github.com/askbi/askbi/workspace"
)

// These cases run the scripted mock model (ask/provider/mock) through the
// real assistant: a scoped dataset and a broader request, follow-up
// previews (metrics, breakdowns, reuse) and the one batch placement.

const sqlPricing = "SELECT week, signups FROM weekly WHERE page_path = '/pricing'"

// withPricing adds "Pricing page signups", scoped to page_path /pricing,
// with Weekly signups as its unscoped dataset.
func withPricing(e *env) {
	e.tables[sqlPricing] = &dataexec.Table{Columns: []string{"week", "signups"}, Rows: [][]any{{"2026-11-02", int64(120)}, {"2026-11-09", int64(131)}}}
	e.cat.PutDataset(workspace.Dataset{ID: "ds-pricing", TeamID: "acme", ProjectID: "growth", Name: "Pricing page signups", Version: 1,
		Request: workspace.Request{ConnectionID: "wh", SQL: sqlPricing,
			Fields: workspace.Fields{{Name: "week", Path: []string{"week"}}, {Name: "signups", Path: []string{"signups"}}}},
		Scope: &workspace.Scope{Filters: []workspace.Filter{{Field: "page_path", Op: workspace.OpEq, Value: "/pricing"}}, UnscopedID: "ds-weekly"}})
}

func completed(events []ask.Event, tool string) []*ask.ToolEvent {
	var out []*ask.ToolEvent
	for _, ev := range events {
		if ev.Type == ask.EventToolCompleted && ev.Tool.Name == tool {
			out = append(out, ev.Tool)
		}
	}
	return out
}

func replyText(events []ask.Event) string {
	var parts []string
	for _, ev := range events {
		if ev.Type == ask.EventMessageCompleted {
			parts = append(parts, ev.Text)
		}
	}
	return strings.Join(parts, "\n")
}

// chartIDs lists the catalog's charts of team acme that alice reaches:
// the saved ones and her previews (the tests here are alice's turns).
func (e *env) chartIDs(t *testing.T) []string {
	t.Helper()
	rows, err := e.cat.Search(context.Background(), workspace.CatalogQuery{TeamID: "acme", Types: []access.EntityType{access.TypeChart},
		Projects: access.AllProjects(), UserID: "alice", Limit: 1000})
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, r := range rows {
		ids = append(ids, r.Entity.ID)
	}
	slices.Sort(ids)
	return ids
}

func TestScopedDatasetBroaderRequest(t *testing.T) {
	e := newEnv(t, nil)
	withPricing(e)
	conv := e.MustConversation(t, alice)
	sel := refs(ask.ContextRef{Type: access.TypeDataset, ID: "ds-pricing"})
	charts := e.chartIDs(t)

	// The scope is in the selected item's info line.
	v := e.MustOpen(t, alice, conv)
	events := e.MustSend(t, alice, conv, "show signups by week", sel)
	v = e.MustOpen(t, alice, conv)
	if got := v.Context[0].Metadata["info"]; got != "Warehouse · PostgreSQL · Scope: page_path = /pricing" {
		t.Errorf("context info line = %q", got)
	}

	// A broader request: nothing runs, the result marks the mismatch, and
	// the answer names the scope and offers the unscoped dataset.
	runs := completed(events, "run_dataset")
	if len(runs) != 1 || !strings.HasPrefix(runs[0].Summary, "Scope not included") {
		t.Fatalf("run_dataset results %+v; events %v", runs, types(events))
	}
	if got := completed(events, "create_chart_preview"); len(got) != 0 {
		t.Errorf("a preview was made from a scoped dataset for a broader request: %+v", got)
	}
	text := replyText(events)
	for _, want := range []string{"page_path = /pricing", "Weekly signups"} {
		if !strings.Contains(text, want) {
			t.Errorf("answer %q does not say %q", text, want)
		}
	}
	if diff := cmp.Diff(charts, e.chartIDs(t)); diff != "" {
		t.Errorf("charts changed (-want +got):\n%s", diff)
	}
	// The model saw the mismatch, not the rows.
	reqs := e.model.Requests()
	last := reqs[len(reqs)-1].Messages
	out := last[len(last)-1].Text
	if !strings.Contains(out, "scope_mismatch") || strings.Contains(out, "131") {
		t.Errorf("model saw %s", out)
	}

	// The same dataset, asked for its scope, answers.
	events = e.MustSend(t, alice, conv, "show signups by week on the /pricing page", nil)
	previews := completed(events, "create_chart_preview")
	if len(previews) != 1 {
		t.Fatalf("no preview for the scoped request: %v; %q", types(events), replyText(events))
	}
	var cr dataexec.ChartResult
	if err := json.Unmarshal(previews[0].Result, &cr); err != nil || cr.Datasets[0].Scope == nil || cr.Datasets[0].Scope.Text != "page_path = /pricing" {
		t.Errorf("chart result %s: the dataset reference does not carry its scope (%v)", previews[0].Result, err)
	}
	if strings.Contains(strings.ToLower(replyText(events)), "dashboard") {
		t.Errorf("a single preview's answer offers placement: %q", replyText(events))
	}

	// A follow-up on that answer keeps its scope: the preview names it in
	// its filters, so it is the same preview, shown again.
	events = e.MustSend(t, alice, conv, "create a preview for it", nil)
	previews = completed(events, "create_chart_preview")
	if len(previews) != 1 || !strings.HasPrefix(previews[0].Summary, "Reused preview") {
		t.Errorf("follow-up on the scoped answer: %+v; %q", previews, replyText(events))
	}
	if n := len(e.chartIDs(t)); n != len(charts)+1 {
		t.Errorf("%d charts, want %d", n, len(charts)+1)
	}
}

// withFunnel adds a dataset with two metrics and a breakdown.
func withFunnel(e *env) {
	const sql = "SELECT week, signups, trials, country FROM funnel"
	e.tables[sql] = &dataexec.Table{Columns: []string{"week", "signups", "trials", "country"}, Rows: [][]any{
		{"2026-11-02", int64(120), int64(30), "US"}, {"2026-11-02", int64(90), int64(20), "DE"}, {"2026-11-09", int64(131), int64(41), "US"},
	}}
	var fs workspace.Fields
	for _, f := range []string{"week", "signups", "trials", "country"} {
		fs = append(fs, workspace.Field{Name: f, Path: []string{f}})
	}
	e.cat.PutDataset(workspace.Dataset{ID: "ds-funnel", TeamID: "acme", ProjectID: "growth", Name: "Funnel", Version: 1,
		Request: workspace.Request{ConnectionID: "wh", SQL: sql, Fields: fs}})
}

// followUps runs an answer filtered to US and "create a preview for it",
// and returns the conversation and the preview chart IDs it made.
func followUps(t *testing.T, e *env) (string, []string) {
	t.Helper()
	withFunnel(e)
	conv := e.MustConversation(t, alice)
	before := e.chartIDs(t)
	e.MustSend(t, alice, conv, `use the run_dataset tool with {"dataset_id":"@c1","filters":[{"field":"country","op":"eq","value":"US"}]}`,
		refs(ask.ContextRef{Type: access.TypeDataset, ID: "ds-funnel"}))
	events := e.MustSend(t, alice, conv, "create a preview for it", nil)
	previews := completed(events, "create_chart_preview")
	if len(previews) != 3 {
		t.Fatalf("%d previews, want one per metric (signups, trials) and breakdown (country): %v; %q", len(previews), types(events), replyText(events))
	}
	var ids []string
	for _, id := range e.chartIDs(t) {
		if !slices.Contains(before, id) {
			ids = append(ids, id)
		}
	}
	if len(ids) != 3 {
		t.Fatalf("new charts %v", ids)
	}
	var got []string
	us := []workspace.Filter{{Field: "country", Op: workspace.OpEq, Value: "US"}}
	for _, id := range ids {
		c, _ := e.cat.Chart(context.Background(), id)
		got = append(got, c.Name+": "+c.XField+" × "+strings.Join(c.YFields, ","))
		if c.DatasetID != "ds-funnel" || c.DashboardID != "" || !cmp.Equal(us, c.Filters) {
			t.Errorf("chart %s: dataset %s, dashboard %q, filters %v: want the answer's source and filters", c.Name, c.DatasetID, c.DashboardID, c.Filters)
		}
	}
	slices.Sort(got)
	want := []string{"Signups by country: country × signups", "Signups by week: week × signups", "Trials by week: week × trials"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("previews mismatch (-want +got):\n%s", diff)
	}
	// The third distinct preview brings the placement offer, once.
	if text := replyText(events); !strings.Contains(text, "3 previews") || !strings.Contains(text, "dashboard") {
		t.Errorf("answer %q does not offer to place the 3 previews", text)
	}
	return conv, ids
}

func TestFollowUpPreviews(t *testing.T) {
	e := newEnv(t, nil)
	conv, ids := followUps(t, e)

	// The same request again reuses every preview and offers nothing.
	events := e.MustSend(t, alice, conv, "create a preview for it", nil)
	if got := len(completed(events, "create_chart_preview")); got != 3 {
		t.Fatalf("%d preview results, want 3 reused", got)
	}
	text := replyText(events)
	if !strings.Contains(text, "shown again") || strings.Contains(text, "dashboard") {
		t.Errorf("answer %q: want the previews reused and no second placement offer", text)
	}
	all := e.chartIDs(t)
	for _, id := range ids {
		if !slices.Contains(all, id) {
			t.Errorf("preview %s gone", id)
		}
	}
	if n := len(all); n != 3+3 { // acme's three charts and the three previews
		t.Errorf("%d charts, want 6: a reused preview is not made twice", n)
	}

	// A fourth distinct preview: the offer is not made again.
	events = e.MustSend(t, alice, conv, `use the create_chart_preview tool with {"dataset_id":"ds-funnel","chart_type":"table","x_field":"week","y_fields":["signups","trials"],"name":"Funnel table"}`, nil)
	if got := completed(events, "create_chart_preview"); len(got) != 1 {
		t.Fatalf("fourth preview: %v", types(events))
	}
	reqs := e.model.Requests()
	msgs := reqs[len(reqs)-1].Messages
	if out := msgs[len(msgs)-1].Text; !strings.Contains(out, "preview_key") || strings.Contains(out, "placement_offer") {
		t.Errorf("fourth preview's output %s: the placement offer is made once per conversation", out)
	}

	// Nothing to resolve "it" against: Ask asks.
	other := e.MustConversation(t, alice)
	events = e.MustSend(t, alice, other, "create a preview for it", nil)
	if got := completed(events, "create_chart_preview"); len(got) != 0 || !strings.Contains(replyText(events), "A preview of what?") {
		t.Errorf("unresolved follow-up: %v, %q", types(events), replyText(events))
	}
}

func TestBatchPlacement(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t, nil)
	conv, ids := followUps(t, e)

	// Charts that are not this conversation's results are not proposed:
	// the model hears why.
	events := e.MustSend(t, alice, conv, `use the add_previews_to_dashboard tool with {"chart_ids":["c-weekly","`+ids[0]+`"],"dashboard_id":"d-growth"}`, nil)
	if find(events, ask.EventToolApprovalRequired) != nil || !strings.Contains(replyText(events), "not found in this conversation") {
		t.Fatalf("another chart in the batch: %v, %q", types(events), replyText(events))
	}

	// No consent, then consent without a destination: nothing is
	// proposed; Ask asks which dashboard.
	events = e.MustSend(t, alice, conv, "not now", nil)
	if find(events, ask.EventToolApprovalRequired) != nil || !strings.Contains(replyText(events), "stay previews") {
		t.Fatalf("declined: %v, %q", types(events), replyText(events))
	}
	events = e.MustSend(t, alice, conv, "yes, add them", nil)
	if find(events, ask.EventToolApprovalRequired) != nil || !strings.Contains(replyText(events), "Which dashboard") {
		t.Fatalf("consent without a destination: %v, %q", types(events), replyText(events))
	}

	// Consent and a named dashboard: one batch placement, held for
	// approval.
	events = e.MustSend(t, alice, conv, "yes, add them to Growth overview", nil)
	ev := find(events, ask.EventToolApprovalRequired)
	if ev == nil || ev.Tool.Name != dataexec.PlaceChartsAction.Name {
		t.Fatalf("no batch placement proposed: %v, %q", types(events), replyText(events))
	}
	var names []string
	for _, r := range ev.Tool.Targets {
		names = append(names, string(r.Type)+": "+r.Name)
	}
	slices.Sort(names)
	wantTargets := []string{"chart: Signups by country", "chart: Signups by week", "chart: Trials by week", "dashboard: Growth overview"}
	if diff := cmp.Diff(wantTargets, names); diff != "" {
		t.Errorf("approval targets mismatch (-want +got):\n%s", diff)
	}
	for _, id := range ids {
		if c, _ := e.cat.Chart(ctx, id); c.DashboardID != "" {
			t.Fatalf("chart %s placed before approval", id)
		}
	}
	if _, err := approve(e, alice, conv, ev.Tool, string(ev.Tool.Arguments)); err != nil {
		t.Fatal(err)
	}
	// A retry of the approval places nothing twice.
	if _, err := approve(e, alice, conv, ev.Tool, string(ev.Tool.Arguments)); err != nil {
		t.Fatalf("retry: %v", err)
	}
	for _, id := range ids {
		if c, _ := e.cat.Chart(ctx, id); c.DashboardID != "d-growth" {
			t.Errorf("chart %s on %q, want d-growth", id, c.DashboardID)
		}
	}
	if n := len(e.chartIDs(t)); n != 6 {
		t.Errorf("%d charts, want 6: placement moves previews, it makes no copies", n)
	}
	if n := e.audited(dataexec.ActionChartPlace); n != 3 {
		t.Errorf("%d placements audited, want 3", n)
	}

	// Every result component of those charts shows Saved, with the
	// dashboard.
	v := e.MustOpen(t, alice, conv)
	seen := 0
	for _, r := range v.WorkSummary {
		var cr dataexec.ChartResult
		if json.Unmarshal(r.Result, &cr) != nil || !slices.Contains(ids, cr.Chart.ID) {
			continue
		}
		seen++
		if cr.Status != workspace.StatusSaved || cr.Dashboard == nil || cr.Dashboard.ID != "d-growth" {
			t.Errorf("result of %s shows %s on %+v, want saved on Growth overview", cr.Chart.Name, cr.Status, cr.Dashboard)
		}
	}
	if seen != 3 {
		t.Errorf("%d chart results of the previews, want 3", seen)
	}
	if got := labels(v.WorkSummary)[len(v.WorkSummary)-1]; got != "Added charts to dashboard: completed" {
		t.Errorf("last work item %q", got)
	}
}
