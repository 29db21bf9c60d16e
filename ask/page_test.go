package ask_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/askbi/askbi/access"
	"github.com/askbi/askbi/ask"
	"github.com/askbi/askbi/dataexec"
	"github.com/askbi/askbi/workspace"
)

// TestRoleCheckedBeforeProposing: a gated call the user's role cannot make
// is never proposed for approval; the user and the model are told why,
// and nothing is left pending or changed.
func TestRoleCheckedBeforeProposing(t *testing.T) {
	weekly := refs(chartRef("c-weekly")) // saved on Growth overview
	for _, tc := range []struct {
		name     string
		p        access.Principal
		msg      string
		context  *[]ask.ContextRef
		proposed bool
	}{
		{"owner deletes a dashboard", alice, "delete the Revenue dashboard", nil, true},
		{"viewer deletes a dashboard", vic, "delete the Revenue dashboard", nil, false},
		{"owner changes a saved chart", alice, "change this to a weekly bar chart", weekly, true},
		{"viewer changes a saved chart", vic, "change this to a weekly bar chart", weekly, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, nil)
			conv := e.MustConversation(t, tc.p)
			events := e.MustSend(t, tc.p, conv, tc.msg, tc.context)
			v := e.MustOpen(t, tc.p, conv)
			asked := find(events, ask.EventToolApprovalRequired)
			if tc.proposed {
				if asked == nil || len(v.Pending) != 1 {
					t.Fatalf("not proposed: %v, pending %v", types(events), v.Pending)
				}
				return
			}
			if asked != nil || len(v.Pending) != 0 {
				t.Fatalf("proposed to a %s: %v", tc.name, types(events))
			}
			// The model heard why, and said so; the refused call is no
			// step (TestRefusedCallsAreNoSteps).
			if heard := lastToolOutput(e); !strings.Contains(heard, `"code":"forbidden"`) || !strings.Contains(heard, "not proposed") {
				t.Errorf("the model heard %s", heard)
			}
			if done := find(events, ask.EventMessageCompleted); done == nil || !strings.Contains(done.Text, "editor role") {
				t.Errorf("answer = %+v", done)
			}
			if _, err := e.cat.Dashboard(context.Background(), "d-revenue"); err != nil {
				t.Error("the dashboard is gone")
			}
			if c, _ := e.cat.Chart(context.Background(), "c-weekly"); c.Type != workspace.ChartLine {
				t.Error("the chart changed")
			}
		})
	}
	// A viewer may still change a preview: it is on no dashboard.
	e := newEnv(t, nil)
	conv := e.MustConversation(t, vic)
	events := e.MustSend(t, vic, conv, "show signups by week", nil)
	var cr dataexec.ChartResult
	for _, ev := range events {
		if ev.Type == ask.EventToolCompleted && ev.Tool.Name == "create_chart_preview" {
			json.Unmarshal(ev.Tool.Result, &cr)
		}
	}
	events = e.MustSend(t, vic, conv, "change this to a weekly bar chart", refs(chartRef(cr.Chart.ID)))
	if find(events, ask.EventToolApprovalRequired) == nil {
		t.Errorf("a viewer's preview change was not proposed: %v", types(events))
	}
}

// TestApprovalInWords: an approval names its action and its targets by
// name, live and when the conversation is opened again.
func TestApprovalInWords(t *testing.T) {
	e := newEnv(t, nil)
	conv, te := proposeDelete(t, e, alice)
	want := []dataexec.Ref{{Type: access.TypeDashboard, ID: "d-revenue", Name: "Revenue", ProjectID: "finance", Info: "1 chart"}}
	if te.Title != "Delete dashboard" || te.Class != dataexec.ClassDestructive {
		t.Errorf("event title %q class %q", te.Title, te.Class)
	}
	if diff := cmp.Diff(want, te.Targets); diff != "" {
		t.Errorf("event targets mismatch (-want +got):\n%s", diff)
	}
	v := e.MustOpen(t, alice, conv)
	if len(v.Pending) != 1 {
		t.Fatalf("pending = %+v", v.Pending)
	}
	p := v.Pending[0]
	if p.Title != "Delete dashboard" || p.Class != dataexec.ClassDestructive || p.Label != "Deleted dashboard" || p.TurnID == "" {
		t.Errorf("pending = %+v", p)
	}
	if diff := cmp.Diff(want, p.Targets); diff != "" {
		t.Errorf("pending targets mismatch (-want +got):\n%s", diff)
	}
}

// TestChartPlaceOn: a preview's chart view lists the dashboards the user
// may place it on (its project's, where the user may edit), and none for
// a viewer or a saved chart.
func TestChartPlaceOn(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t, nil)
	e.cat.PutDashboard(workspace.Dashboard{ID: "d-acq", TeamID: "acme", ProjectID: "growth", Name: "Acquisition"})
	names := func(p access.Principal) []string {
		t.Helper()
		conv := e.MustConversation(t, p)
		var chartID string
		for _, ev := range e.MustSend(t, p, conv, "show signups by week", nil) {
			if ev.Type == ask.EventToolCompleted && ev.Tool.Name == "create_chart_preview" {
				var cr dataexec.ChartResult
				json.Unmarshal(ev.Tool.Result, &cr)
				chartID = cr.Chart.ID
			}
		}
		v, err := e.a.Chart(ctx, p, conv, chartID)
		if err != nil {
			t.Fatal(err)
		}
		if v.Status != workspace.StatusPreview || v.Data == nil {
			t.Fatalf("chart view = %+v", v)
		}
		// The executor's Links (same-origin by default): a preview opens
		// its preview page.
		if v.Links.Chart != "/previews/"+chartID || v.Links.Datasets["ds-weekly"] != "/datasets/ds-weekly" {
			t.Errorf("preview links = %+v", v.Links)
		}
		out := []string{}
		for _, d := range v.PlaceOn {
			out = append(out, d.Name)
		}
		if len(out) > 0 {
			// Once placed, there is nowhere left to place it.
			if _, err := e.a.AddPreviewToDashboard(ctx, p, conv, chartID, v.PlaceOn[0].ID); err != nil {
				t.Fatal(err)
			}
			v, err := e.a.Chart(ctx, p, conv, chartID)
			if err != nil || v.Status != workspace.StatusSaved || len(v.PlaceOn) != 0 {
				t.Fatalf("saved chart view = %+v, %v", v, err)
			}
			if v.Links.Chart != "/charts/"+chartID || v.Links.Dashboard != "/dashboards/"+v.Dashboard.ID {
				t.Errorf("saved links = %+v", v.Links)
			}
		}
		return out
	}
	for _, tc := range []struct {
		name string
		p    access.Principal
		want []string
	}{
		{"owner", alice, []string{"Acquisition", "Growth overview"}}, // not Revenue: another project
		{"editor", bob, []string{"Acquisition", "Growth overview"}},
		{"viewer", vic, []string{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, names(tc.p)); diff != "" {
				t.Errorf("place_on mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

// TestStatusNamesSession: the status says whom the session is for.
func TestStatusNamesSession(t *testing.T) {
	e := newEnv(t, nil)
	st, err := e.a.Status(context.Background(), bob)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(ask.Status{Available: true, UserID: "bob", TeamID: "acme", Role: access.RoleEditor, MaxMessageChars: 4000}, st,
		cmpopts.IgnoreFields(ask.Status{}, "Attachments")); diff != "" {
		t.Errorf("status mismatch (-want +got):\n%s", diff)
	}
}

// lastToolOutput is the newest tool output the model was sent.
func lastToolOutput(e *env) string {
	reqs := e.model.Requests()
	msgs := reqs[len(reqs)-1].Messages
	for i := len(msgs) - 1; i >= 0; i-- {
		if msgs[i].Role == ask.RoleTool {
			return msgs[i].Text
		}
	}
	return ""
}

// proposer is a model that proposes the given calls in its first reply
// and answers "Done." after.
type proposer struct{ calls []ask.ToolCall }

func (m proposer) Complete(_ context.Context, req ask.ModelRequest, _ func(string)) (ask.ModelReply, error) {
	if last := req.Messages[len(req.Messages)-1]; last.Role == ask.RoleTool {
		return ask.ModelReply{Text: "Done."}, nil
	}
	return ask.ModelReply{ToolCalls: m.calls}, nil
}

// TestRefusedCallsAreNoSteps: a gated call refused before it could be
// proposed for approval (the user's role cannot make it, its tool is not
// offered, its arguments are invalid) is no step of the work summary,
// live or reopened, so nobody reads "Deleted dashboard · Not available"
// for a deletion that was never proposed. The model hears why. A
// read-only call that ran is a step, and a proposed one too.
func TestRefusedCallsAreNoSteps(t *testing.T) {
	call := func(id, name, args string) ask.ToolCall {
		return ask.ToolCall{ID: id, Name: name, Arguments: json.RawMessage(args)}
	}
	for _, tc := range []struct {
		name  string
		p     access.Principal
		model ask.Provider
		msg   string
		steps []string // the work summary, live and reopened
		heard string   // in what the model was told of the refused call
	}{
		{"a viewer's deletion", vic, nil, "delete the Revenue dashboard",
			[]string{"Searched the workspace: completed"}, "Your role cannot do this, so it was not proposed"},
		{"a tool that is not offered", alice, proposer{[]ask.ToolCall{call("m1", "drop_everything", `{}`)}}, "drop everything",
			nil, `there is no tool named \"drop_everything\"`},
		{"invalid arguments", alice, proposer{[]ask.ToolCall{call("m1", "delete_dashboard", `{"dashboard":"d-revenue"}`)}}, "delete it",
			nil, "dashboard_id is required"},
		{"a proposed deletion", alice, nil, "delete the Revenue dashboard",
			[]string{"Searched the workspace: completed", "Deleted dashboard: approval_required"}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, tc.model)
			conv := e.MustConversation(t, tc.p)
			events := e.MustSend(t, tc.p, conv, tc.msg, nil)
			var live []string
			for _, ev := range events {
				if ev.Tool != nil && ev.Type != ask.EventToolRunning {
					live = append(live, ev.Tool.Label+": "+string(ev.Tool.State))
				}
			}
			if diff := cmp.Diff(tc.steps, live); diff != "" {
				t.Errorf("live steps mismatch (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.steps, labels(e.MustOpen(t, tc.p, conv).WorkSummary)); diff != "" {
				t.Errorf("reopened work summary mismatch (-want +got):\n%s", diff)
			}
			if tc.heard == "" {
				return
			}
			entries, err := e.convs.Entries(context.Background(), conv, 100)
			if err != nil {
				t.Fatal(err)
			}
			last := entries[len(entries)-2] // the refusal, before the answer
			if last.Role != ask.RoleTool || !strings.Contains(string(last.Output), tc.heard) {
				t.Errorf("the model was told %s, want it to hear %q", last.Output, tc.heard)
			}
		})
	}
}

// TestApprovalSaysShared: an approval of a change that reaches a
// dashboard (the dashboard itself, a chart on it, a preview placed on
// it) says in a sentence that the dashboard is shared, naming it, live
// and when the conversation is opened again; a change to a preview,
// which no dashboard shows, says nothing of the kind.
func TestApprovalSaysShared(t *testing.T) {
	const growth = "Growth overview is a shared dashboard: everyone who can open it sees this change."
	preview := func(t *testing.T, e *env, conv string) string {
		t.Helper()
		for _, ev := range e.MustSend(t, alice, conv, "show signups by week", nil) {
			if ev.Type == ask.EventToolCompleted && ev.Tool.Name == "create_chart_preview" {
				var cr dataexec.ChartResult
				json.Unmarshal(ev.Tool.Result, &cr)
				return cr.Chart.ID
			}
		}
		t.Fatal("no preview")
		return ""
	}
	for _, tc := range []struct {
		name    string
		propose func(t *testing.T, e *env, conv string) []ask.Event
		want    string
	}{
		{"delete a dashboard", func(t *testing.T, e *env, conv string) []ask.Event {
			return e.MustSend(t, alice, conv, "delete the Revenue dashboard", nil)
		}, "Revenue is a shared dashboard: everyone who can open it sees this change."},
		{"change a chart on a dashboard", func(t *testing.T, e *env, conv string) []ask.Event {
			return e.MustSend(t, alice, conv, "change this to a weekly bar chart", refs(chartRef("c-weekly")))
		}, growth},
		{"change a preview", func(t *testing.T, e *env, conv string) []ask.Event {
			return e.MustSend(t, alice, conv, "change this to a weekly bar chart", refs(chartRef(preview(t, e, conv))))
		}, ""},
		{"place a preview", func(t *testing.T, e *env, conv string) []ask.Event {
			preview(t, e, conv)
			return e.MustSend(t, alice, conv, "put it on the Growth overview dashboard", nil)
		}, growth},
		{"place several previews", func(t *testing.T, e *env, conv string) []ask.Event {
			e.MustSend(t, alice, conv, `use the run_dataset tool with {"dataset_id":"@c1"}`, refs(ask.ContextRef{Type: access.TypeDataset, ID: "ds-funnel"}))
			e.MustSend(t, alice, conv, "create a preview for it", nil)
			return e.MustSend(t, alice, conv, "yes, add them to Growth overview", nil)
		}, growth},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, nil)
			withFunnel(e)
			conv := e.MustConversation(t, alice)
			events := tc.propose(t, e, conv)
			ev := find(events, ask.EventToolApprovalRequired)
			if ev == nil {
				t.Fatalf("nothing proposed: %v", types(events))
			}
			if ev.Tool.Shared != tc.want {
				t.Errorf("event says %q, want %q", ev.Tool.Shared, tc.want)
			}
			v := e.MustOpen(t, alice, conv)
			if len(v.Pending) != 1 || v.Pending[0].Shared != tc.want {
				t.Errorf("reopened, the pending approval says %+v, want %q", v.Pending, tc.want)
			}
		})
	}
}

// TestReceiptsKeepTheirCards: a reopened conversation lists each
// approval that is no longer pending (approved, rejected, expired) with
// what its card showed when the call was proposed: the action, the
// targets by name as they were then (also a dashboard deleted since) and
// the arguments, the card's settings. Its run gives the outcome.
func TestReceiptsKeepTheirCards(t *testing.T) {
	e := newEnv(t, nil)
	conv := e.MustConversation(t, alice)
	propose := func(msg string, ctxRefs *[]ask.ContextRef) *ask.ToolEvent {
		t.Helper()
		ev := find(e.MustSend(t, alice, conv, msg, ctxRefs), ask.EventToolApprovalRequired)
		if ev == nil {
			t.Fatalf("%q proposed nothing", msg)
		}
		return ev.Tool
	}
	del := propose("delete the Revenue dashboard", nil)
	if _, err := approve(e, alice, conv, del, string(del.Arguments)); err != nil {
		t.Fatal(err)
	}
	if _, err := e.cat.Dashboard(context.Background(), "d-revenue"); err == nil {
		t.Fatal("the dashboard is still there")
	}
	change := propose("change this to a weekly bar chart", refs(chartRef("c-weekly")))
	emit, _ := ask.Collect()
	if err := e.a.Reject(context.Background(), alice, ask.ApproveRequest{ConversationID: conv, ApprovalID: change.ApprovalID,
		Tool: change.Name, Arguments: change.Arguments}, emit); err != nil {
		t.Fatal(err)
	}
	expired := propose("change this to a weekly line chart", refs(chartRef("c-country")))
	e.clock.Advance(6 * time.Minute)

	v := e.MustOpen(t, alice, conv)
	want := []ask.DecidedApproval{
		{ApprovalID: del.ApprovalID, CallID: del.CallID, Tool: "delete_dashboard", Title: "Delete dashboard", Class: dataexec.ClassDestructive,
			Targets:   []dataexec.Ref{{Type: access.TypeDashboard, ID: "d-revenue", Name: "Revenue", ProjectID: "finance", Info: "1 chart"}},
			Arguments: json.RawMessage(`{"dashboard_id":"d-revenue"}`)},
		{ApprovalID: change.ApprovalID, CallID: change.CallID, Tool: "update_chart", Title: "Update chart", Class: dataexec.ClassMutating,
			Targets:   []dataexec.Ref{{Type: access.TypeChart, ID: "c-weekly", Name: "Weekly signups", ProjectID: "growth", Info: "Growth overview · line chart"}},
			Arguments: json.RawMessage(`{"chart_id":"c-weekly","chart_type":"bar"}`)},
		{ApprovalID: expired.ApprovalID, CallID: expired.CallID, Tool: "update_chart", Title: "Update chart", Class: dataexec.ClassMutating,
			Targets:   []dataexec.Ref{{Type: access.TypeChart, ID: "c-country", Name: "Signups by country", ProjectID: "growth", Info: "Growth overview · bar chart"}},
			Arguments: json.RawMessage(`{"chart_id":"c-country","chart_type":"line"}`)},
	}
	if diff := cmp.Diff(want, v.Decided); diff != "" {
		t.Errorf("decided approvals mismatch (-want +got):\n%s", diff)
	}
	outcome := map[string]ask.RunState{}
	for _, r := range v.WorkSummary {
		if r.ApprovalID != "" {
			outcome[r.ApprovalID] = r.State
		}
	}
	wantOutcome := map[string]ask.RunState{del.ApprovalID: ask.RunCompleted, change.ApprovalID: ask.RunRejected, expired.ApprovalID: ask.RunExpired}
	if diff := cmp.Diff(wantOutcome, outcome); diff != "" {
		t.Errorf("outcomes mismatch (-want +got):\n%s", diff)
	}
	if len(v.Pending) != 0 {
		t.Errorf("pending = %+v", v.Pending)
	}
}

// TestSameNamedPreviewsToldApart: every chart reference carries what the
// chart shows of its dataset in words (its filters and date range, then
// its dataset's scope), so two previews of one name can be told apart:
// in their results, live and reopened, and in the targets of the batch
// placement that names them.
func TestSameNamedPreviewsToldApart(t *testing.T) {
	e := newEnv(t, nil)
	at := e.clock.Now().Add(-time.Hour)
	e.cat.PutDataset(workspace.Dataset{ID: "ds-pricing", TeamID: "acme", ProjectID: "growth", Name: "Pricing page signups", Version: 1, UpdatedAt: at,
		Request: workspace.Request{ConnectionID: "wh", SQL: sqlWeekly, Fields: workspace.Fields{{Name: "week", Path: []string{"week"}}, {Name: "signups", Path: []string{"signups"}}}},
		Scope:   &workspace.Scope{Filters: []workspace.Filter{{Field: "page_path", Op: workspace.OpEq, Value: "/pricing"}}}})
	conv := e.MustConversation(t, alice)
	preview := func(msg string) dataexec.ChartResult {
		t.Helper()
		got := completed(e.MustSend(t, alice, conv, msg, nil), "create_chart_preview")
		if len(got) != 1 {
			t.Fatalf("%q made %d previews", msg, len(got))
		}
		var cr dataexec.ChartResult
		json.Unmarshal(got[0].Result, &cr)
		return cr
	}
	const spec = `"chart_type":"line","x_field":"week","y_fields":["signups"],"name":"Signups by week"`
	all := preview("show signups by week")
	recent := preview(`use the create_chart_preview tool with {"dataset_id":"ds-weekly",` + spec + `,"filters":[{"field":"week","op":"gte","value":"2026-11-09"}]}`)
	// No filter repeats the pricing dataset's scope: the message names it.
	pricing := preview(`use the create_chart_preview tool with {"dataset_id":"ds-pricing",` + spec + `} for the pricing page`)
	scopeText := func(r dataexec.Ref) string {
		if r.Scope == nil {
			return r.Name
		}
		return r.Name + " (" + r.Scope.Text + ")"
	}
	want := []string{"Signups by week", "Signups by week (week ≥ 2026-11-09)", "Signups by week (page_path = /pricing)"}
	if diff := cmp.Diff(want, []string{scopeText(all.Chart), scopeText(recent.Chart), scopeText(pricing.Chart)}); diff != "" {
		t.Errorf("chart results mismatch (-want +got):\n%s", diff)
	}
	var reopened []string
	for _, r := range e.MustOpen(t, alice, conv).WorkSummary {
		if cr, ok := chartResultOf(r); ok {
			reopened = append(reopened, scopeText(cr.Chart))
		}
	}
	if diff := cmp.Diff(want, reopened); diff != "" {
		t.Errorf("reopened chart results mismatch (-want +got):\n%s", diff)
	}
	ev := find(e.MustSend(t, alice, conv, `use the add_previews_to_dashboard tool with {"chart_ids":["`+all.Chart.ID+`","`+recent.Chart.ID+`","`+pricing.Chart.ID+`"],"dashboard_id":"d-growth"}`, nil),
		ask.EventToolApprovalRequired)
	if ev == nil {
		t.Fatal("the placement was not proposed")
	}
	var targets []string
	for _, r := range ev.Tool.Targets {
		targets = append(targets, scopeText(r))
	}
	if diff := cmp.Diff(append([]string{"Growth overview"}, want...), targets); diff != "" {
		t.Errorf("placement targets mismatch (-want +got):\n%s", diff)
	}
}

// chartResultOf is the chart result of a run, if it has one.
func chartResultOf(r ask.ToolRun) (dataexec.ChartResult, bool) {
	var cr dataexec.ChartResult
	return cr, json.Unmarshal(r.Result, &cr) == nil && cr.Chart.ID != ""
}
