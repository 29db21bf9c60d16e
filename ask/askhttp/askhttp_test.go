package askhttp_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/askbi/askbi/internal/chattest"
	"github.com/askbi/askbi/workspace"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/askbi/askbi"
	"github.com/askbi/askbi/access"
	"github.com/askbi/askbi/ask"
	"github.com/askbi/askbi/dataexec"
	"github.com/askbi/askbi/internal/httpjson"
	"github.com/askbi/askbi/memory"
)

// routes are every route of the handler, with IDs that need not exist.
var routes = []struct{ method, path string }{
	{"GET", "/ai/status"},
	{"POST", "/ai/conversations"},
	{"GET", "/ai/conversations"},
	{"GET", "/ai/conversations/conv_x"},
	{"PATCH", "/ai/conversations/conv_x"},
	{"DELETE", "/ai/conversations/conv_x"},
	{"POST", "/ai/conversations/conv_x/messages"},
	{"POST", "/ai/conversations/conv_x/approvals/apr_x/approve"},
	{"POST", "/ai/conversations/conv_x/approvals/apr_x/reject"},
	{"GET", "/ai/conversations/conv_x/charts/chart_x"},
	{"POST", "/ai/conversations/conv_x/charts/chart_x/add-to-dashboard"},
	{"GET", "/ai/context?teamId=acme"},
	{"GET", "/ai/memory"},
	{"POST", "/ai/memory"},
	{"PUT", "/ai/memory/mem_x"},
	{"DELETE", "/ai/memory/mem_x"},
	{"DELETE", "/ai/memory"},
}

// TestAuthentication: every route, and a path that is no route, refuses a
// request that the host's Authenticate refuses, with 401 and a Bearer
// challenge.
func TestAuthentication(t *testing.T) {
	ts := MustServer(t, nil)
	all := append(slices.Clone(routes), struct{ method, path string }{"GET", "/ai/nope"})
	for _, tc := range []struct{ name, header string }{
		{"none", ""},
		{"garbage", "Bearer x"},
		{"empty bearer", "Bearer  "},
		{"unknown user", "Bearer " + token("mallory")},
		{"token typo", "Bearer " + token("alice") + "x"},
		{"not bearer", "Basic " + token("alice")},
	} {
		for _, r := range all {
			t.Run(tc.name+" "+r.method+" "+r.path, func(t *testing.T) {
				var header []string
				if tc.header != "" {
					header = []string{"Authorization", tc.header}
				}
				status, h, b := ts.Do(t, r.method, r.path, "", `{"message":"hi"}`, header...)
				if status != http.StatusUnauthorized {
					t.Fatalf("status %d, want 401; body %s", status, b)
				}
				if e := chattest.MustError(t, b); e.Code != askbi.Unauthenticated {
					t.Errorf("code %q, want unauthenticated", e.Code)
				}
				if !strings.HasPrefix(h.Get("WWW-Authenticate"), "Bearer") {
					t.Errorf("WWW-Authenticate %q", h.Get("WWW-Authenticate"))
				}
			})
		}
	}
	// The host's credential works.
	ts.MustDo(t, http.StatusOK, "GET", "/ai/conversations", token("alice"), nil, nil)
}

func TestChatJSONAndSSE(t *testing.T) {
	ts := MustServer(t, nil)
	alice := token("alice")
	conv := ts.MustConversation(t, alice)
	path := "/ai/conversations/" + conv + "/messages"

	events := ts.MustTurn(t, path, alice, map[string]any{"message": "show signups by week"})
	chattest.CheckOrder(t, events)
	if diff := cmp.Diff(chattest.ShowSignupsWant, chattest.Types(events)); diff != "" {
		t.Errorf("JSON event types mismatch (-want +got):\n%s", diff)
	}
	chart := chattest.MustToolEvent(t, events, ask.EventToolCompleted, "create_chart_preview")
	if chart.Tool.Label != "Created chart preview" || !strings.Contains(string(chart.Tool.Result), `"status":"preview"`) {
		t.Errorf("chart event: %+v", chart.Tool)
	}

	streamed := ts.MustStream(t, path, alice, map[string]any{"message": "show signups by week"})
	chattest.CheckOrder(t, streamed)
	if diff := cmp.Diff(chattest.ShowSignupsWant, chattest.Types(streamed)); diff != "" {
		t.Errorf("SSE event types mismatch (-want +got):\n%s", diff)
	}
	if streamed[0].TurnID == events[0].TurnID || streamed[0].ConversationID != conv {
		t.Errorf("SSE turn %q conversation %q", streamed[0].TurnID, streamed[0].ConversationID)
	}

	var view ask.View
	ts.MustDo(t, http.StatusOK, "GET", "/ai/conversations/"+conv, alice, nil, &view)
	var labels []string
	for _, r := range view.WorkSummary {
		labels = append(labels, r.Label+" "+string(r.State))
	}
	want := []string{"Searched the workspace completed", "Previewed data completed", "Created chart preview completed"}
	if diff := cmp.Diff(append(want, want...), labels); diff != "" {
		t.Errorf("work summary mismatch (-want +got):\n%s", diff)
	}
	if len(view.Messages) != 4 || view.Messages[0].Text != "show signups by week" || view.Messages[0].Role != ask.RoleUser {
		t.Errorf("messages: %+v", view.Messages)
	}
	if view.Conversation.Title != "show signups by week" || view.Context == nil || view.Pending == nil {
		t.Errorf("view: %+v", view)
	}

	var list struct{ Conversations []ask.Conversation }
	ts.MustDo(t, http.StatusOK, "GET", "/ai/conversations?limit=5", alice, nil, &list)
	if len(list.Conversations) != 1 || list.Conversations[0].ID != conv {
		t.Errorf("list: %+v", list.Conversations)
	}
	// Another user does not see it.
	bob := token("bob")
	status, _, b := ts.Do(t, "GET", "/ai/conversations/"+conv, bob, nil)
	if status != http.StatusNotFound || chattest.MustError(t, b).Code != askbi.NotFound {
		t.Errorf("bob opens alice's conversation: %d %s", status, b)
	}
	ts.MustDo(t, http.StatusOK, "GET", "/ai/conversations", bob, nil, &list)
	if len(list.Conversations) != 0 {
		t.Errorf("bob lists %d conversations", len(list.Conversations))
	}
	// Renamed by its owner only; the list shows the new title.
	status, _, b = ts.Do(t, "PATCH", "/ai/conversations/"+conv, bob, `{"title": "Mine"}`)
	if status != http.StatusNotFound || chattest.MustError(t, b).Code != askbi.NotFound {
		t.Errorf("bob renames alice's conversation: %d %s", status, b)
	}
	for _, body := range []string{`{}`, `{"title": " "}`, `{"title": 7}`, `{"title": "x", "id": "y"}`} {
		status, _, b = ts.Do(t, "PATCH", "/ai/conversations/"+conv, alice, body)
		if status != http.StatusBadRequest || chattest.MustError(t, b).Code != askbi.InvalidArgument {
			t.Errorf("rename with %s: %d %s", body, status, b)
		}
	}
	var renamed struct{ Conversation ask.Conversation }
	ts.MustDo(t, http.StatusOK, "PATCH", "/ai/conversations/"+conv, alice, `{"title": "Weekly signups"}`, &renamed)
	ts.MustDo(t, http.StatusOK, "GET", "/ai/conversations", alice, nil, &list)
	if renamed.Conversation.Title != "Weekly signups" || len(list.Conversations) != 1 || list.Conversations[0].Title != "Weekly signups" {
		t.Errorf("after rename: %+v, list %+v", renamed.Conversation, list.Conversations)
	}
	ts.MustDo(t, http.StatusNoContent, "DELETE", "/ai/conversations/"+conv, alice, nil, nil)
	ts.MustDo(t, http.StatusNotFound, "GET", "/ai/conversations/"+conv, alice, nil, nil)
}

// TestActiveContext: omitted keeps, a list replaces, [] clears.
func TestActiveContext(t *testing.T) {
	ts := MustServer(t, nil)
	alice := token("alice")
	conv := ts.MustConversation(t, alice)
	path := "/ai/conversations/" + conv + "/messages"
	sel := []map[string]string{{"entity_type": "chart", "id": "chart_mrr"}, {"entity_type": "chart", "id": "chart_mrr"}}
	events := ts.MustTurn(t, path, alice, map[string]any{"message": "hello", "context": sel})
	if events[0].Type != ask.EventContextUpdated || len(events[0].Context) != 1 || events[0].Context[0].Label != "Chart: MRR" {
		t.Fatalf("first event: %+v", events[0])
	}
	ts.MustTurn(t, path, alice, map[string]any{"message": "hello again"})
	var view ask.View
	ts.MustDo(t, http.StatusOK, "GET", "/ai/conversations/"+conv, alice, nil, &view)
	if len(view.Context) != 1 || view.Context[0].ID != "chart_mrr" {
		t.Errorf("context after an omitted one: %+v", view.Context)
	}
	ts.MustTurn(t, path, alice, map[string]any{"message": "clear", "context": []any{}})
	ts.MustDo(t, http.StatusOK, "GET", "/ai/conversations/"+conv, alice, nil, &view)
	if len(view.Context) != 0 {
		t.Errorf("context after []: %+v", view.Context)
	}
	// Another team's chart is not found, and nothing changes.
	status, _, b := ts.Do(t, "POST", path, alice, map[string]any{"message": "x", "context": []map[string]string{{"entity_type": "chart", "id": "chart_tickets"}}})
	if status != http.StatusNotFound {
		t.Errorf("another team's chart: %d %s", status, b)
	}
}

func TestApprove(t *testing.T) {
	ts := MustServer(t, nil)
	alice := token("alice")
	conv := ts.MustConversation(t, alice)
	if got := ts.MustDashboards(t, alice, "acme"); !slices.Contains(got, "Revenue") {
		t.Fatalf("dashboards before: %v", got)
	}
	e := ts.MustStartDelete(t, alice, conv)
	var view ask.View
	ts.MustDo(t, http.StatusOK, "GET", "/ai/conversations/"+conv, alice, nil, &view)
	if len(view.Pending) != 1 || view.Pending[0].ApprovalID != e.Tool.ApprovalID {
		t.Fatalf("pending approvals: %+v", view.Pending)
	}
	if got := ts.MustDashboards(t, alice, "acme"); !slices.Contains(got, "Revenue") {
		t.Fatal("the dashboard was deleted before approval")
	}
	approve := "/ai/conversations/" + conv + "/approvals/" + e.Tool.ApprovalID + "/approve"

	// Changed arguments: nothing runs.
	status, _, b := ts.Do(t, "POST", approve, alice, map[string]any{"tool": "delete_dashboard", "arguments": map[string]string{"dashboard_id": "dash_finance"}})
	if status != http.StatusConflict || chattest.MustError(t, b).Code != askbi.ApprovalInvalid {
		t.Errorf("changed arguments: %d %s", status, b)
	}
	// Another user: the conversation is not theirs.
	status, _, _ = ts.Do(t, "POST", approve, token("bob"), map[string]any{"tool": "delete_dashboard", "arguments": e.Tool.Arguments})
	if status != http.StatusNotFound {
		t.Errorf("bob approves: %d", status)
	}

	events := ts.MustStream(t, approve, alice, map[string]any{"tool": "delete_dashboard", "arguments": e.Tool.Arguments})
	want := []string{"tool.running", "tool.completed", "message.delta", "message.completed", "request.completed"}
	if diff := cmp.Diff(want, chattest.Types(events)); diff != "" {
		t.Errorf("approve event types mismatch (-want +got):\n%s", diff)
	}
	if got := ts.MustDashboards(t, alice, "acme"); slices.Contains(got, "Revenue") {
		t.Errorf("the Revenue dashboard is still there: %v", got)
	}
	if n := ts.auditCount(dataexec.ActionDashboardDelete, access.OutcomeOK); n != 1 {
		t.Errorf("%d dashboard deletions audited, want 1", n)
	}

	// A retry answers from the receipt without running again.
	events = ts.MustTurn(t, approve, alice, map[string]any{"tool": "delete_dashboard", "arguments": e.Tool.Arguments})
	if diff := cmp.Diff([]string{"tool.completed", "request.completed"}, chattest.Types(events)); diff != "" {
		t.Errorf("retry event types mismatch (-want +got):\n%s", diff)
	}
	if n := ts.auditCount(dataexec.ActionDashboardDelete, access.OutcomeOK) + ts.auditCount(dataexec.ActionDashboardDelete, "not_found"); n != 1 {
		t.Errorf("%d dashboard deletions audited after the retry, want 1", n)
	}
	// Rejecting a consumed approval is invalid.
	status, _, b = ts.Do(t, "POST", "/ai/conversations/"+conv+"/approvals/"+e.Tool.ApprovalID+"/reject", alice,
		map[string]any{"tool": "delete_dashboard", "arguments": e.Tool.Arguments})
	if status != http.StatusConflict || chattest.MustError(t, b).Code != askbi.ApprovalInvalid {
		t.Errorf("reject after approve: %d %s", status, b)
	}
	ts.MustDo(t, http.StatusOK, "GET", "/ai/conversations/"+conv, alice, nil, &view)
	if len(view.Pending) != 0 {
		t.Errorf("pending after approval: %+v", view.Pending)
	}
}

func TestReject(t *testing.T) {
	ts := MustServer(t, nil)
	alice := token("alice")
	conv := ts.MustConversation(t, alice)
	e := ts.MustStartDelete(t, alice, conv)
	prefix := "/ai/conversations/" + conv + "/approvals/" + e.Tool.ApprovalID
	events := ts.MustTurn(t, prefix+"/reject", alice, map[string]any{"tool": "delete_dashboard", "arguments": e.Tool.Arguments})
	want := []string{"tool.rejected", "message.delta", "message.completed", "request.completed"}
	if diff := cmp.Diff(want, chattest.Types(events)); diff != "" {
		t.Errorf("reject event types mismatch (-want +got):\n%s", diff)
	}
	if got := ts.MustDashboards(t, alice, "acme"); !slices.Contains(got, "Revenue") {
		t.Errorf("the Revenue dashboard is gone after a rejection: %v", got)
	}
	// The burnt approval cannot be approved.
	status, _, b := ts.Do(t, "POST", prefix+"/approve", alice, map[string]any{"tool": "delete_dashboard", "arguments": e.Tool.Arguments})
	if status != http.StatusConflict || chattest.MustError(t, b).Code != askbi.ApprovalInvalid {
		t.Errorf("approve after reject: %d %s", status, b)
	}
	if got := ts.MustDashboards(t, alice, "acme"); !slices.Contains(got, "Revenue") {
		t.Error("the Revenue dashboard is gone")
	}
	if n := ts.auditCount(dataexec.ActionDashboardDelete, access.OutcomeOK); n != 0 {
		t.Errorf("%d deletions audited", n)
	}
	var view ask.View
	ts.MustDo(t, http.StatusOK, "GET", "/ai/conversations/"+conv, alice, nil, &view)
	last := view.WorkSummary[len(view.WorkSummary)-1]
	if last.Tool != "delete_dashboard" || last.State != ask.RunRejected {
		t.Errorf("work summary ends with %+v", last)
	}
}

func TestAddToDashboard(t *testing.T) {
	ts := MustServer(t, nil)
	alice := token("alice")
	conv := ts.MustConversation(t, alice)
	events := ts.MustTurn(t, "/ai/conversations/"+conv+"/messages", alice, map[string]any{"message": "show signups by week"})
	var cr dataexec.ChartResult
	if err := json.Unmarshal(chattest.MustToolEvent(t, events, ask.EventToolCompleted, "create_chart_preview").Tool.Result, &cr); err != nil || cr.Chart.ID == "" {
		t.Fatalf("chart result: %v %+v", err, cr)
	}
	path := "/ai/conversations/" + conv + "/charts/" + cr.Chart.ID + "/add-to-dashboard"

	status, _, b := ts.Do(t, "POST", path, alice, map[string]any{"dashboard_id": "dash_finance"})
	if status != http.StatusBadRequest || !strings.Contains(chattest.MustError(t, b).Message, "dashboard_id") {
		t.Errorf("dashboard in another project: %d %s", status, b)
	}
	status, _, _ = ts.Do(t, "POST", path, token("bob"), map[string]any{"dashboard_id": "dash_growth"})
	if status != http.StatusNotFound {
		t.Errorf("bob adds alice's chart: %d", status)
	}
	var out struct{ Chart dataexec.ChartResult }
	ts.MustDo(t, http.StatusOK, "POST", path, alice, map[string]any{"dashboard_id": "dash_growth"}, &out)
	if out.Chart.Status != "saved" || out.Chart.Dashboard == nil || out.Chart.Dashboard.ID != "dash_growth" {
		t.Errorf("add to dashboard: %+v", out.Chart)
	}
	status, _, b = ts.Do(t, "POST", path, alice, map[string]any{"dashboard_id": "dash_growth"})
	if status != http.StatusConflict || chattest.MustError(t, b).Code != askbi.Conflict {
		t.Errorf("second add: %d %s", status, b)
	}
	status, _, _ = ts.Do(t, "POST", "/ai/conversations/"+conv+"/charts/chart_mrr/add-to-dashboard", alice, map[string]any{"dashboard_id": "dash_finance"})
	if status != http.StatusNotFound {
		t.Errorf("a chart that is not this conversation's: %d", status)
	}
	var view ask.View
	ts.MustDo(t, http.StatusOK, "GET", "/ai/conversations/"+conv, alice, nil, &view)
	last := view.WorkSummary[len(view.WorkSummary)-1]
	if last.Label != "Added chart to dashboard" || last.State != ask.RunCompleted {
		t.Errorf("work summary ends with %+v", last)
	}
	for _, r := range view.WorkSummary {
		if r.Tool == "create_chart_preview" && !strings.Contains(string(r.Result), `"status":"saved"`) {
			t.Errorf("the preview is not shown as saved: %s", r.Result)
		}
	}
	if n := ts.auditCount(dataexec.ActionChartPlace, access.OutcomeOK); n != 1 {
		t.Errorf("%d chart placements audited, want 1", n)
	}
}

// recentItems is how many results of an empty query the picker's Recent
// group holds (ask.Assistant.SearchContext: "the first five").
const recentItems = 5

func TestContextSearch(t *testing.T) {
	ts := MustServer(t, nil)
	alice, bob := token("alice"), token("bob")
	// search decodes strictly: a field the picker's items do not define
	// (an info line outside "metadata", say) fails the test.
	search := func(token, query string) (int, []ask.ContextGroup, []byte) {
		t.Helper()
		status, _, b := ts.Do(t, "GET", "/ai/context?"+query, token, nil)
		var doc struct {
			Groups []ask.ContextGroup `json:"groups"`
		}
		if status == http.StatusOK {
			d := json.NewDecoder(bytes.NewReader(b))
			d.DisallowUnknownFields()
			if err := d.Decode(&doc); err != nil {
				t.Fatalf("decode %s: %v", b, err)
			}
		}
		return status, doc.Groups, b
	}
	count := func(groups []ask.ContextGroup) int {
		n := 0
		for _, g := range groups {
			n += len(g.Items)
		}
		return n
	}

	status, groups, b := search(alice, "teamId=acme")
	if status != http.StatusOK {
		t.Fatalf("search: %d %s", status, b)
	}
	var names []string
	for _, g := range groups {
		names = append(names, g.Name)
	}
	if diff := cmp.Diff([]string{"Recent", "Dashboards", "Charts", "Datasets", "Connections"}, names); diff != "" {
		t.Errorf("group names mismatch (-want +got):\n%s", diff)
	}
	var recent []string
	for _, it := range groups[0].Items {
		recent = append(recent, it.ID)
	}
	if len(recent) != recentItems {
		t.Fatalf("%d recent items %v, want %d", len(recent), recent, recentItems)
	}
	if diff := cmp.Diff([]string{"chart_weekly_signups", "chart_mrr", "dash_growth", "chart_signups_country"}, recent[:4]); diff != "" {
		t.Errorf("recent items mismatch (-want +got):\n%s", diff)
	}
	byGroup := map[string]string{"Dashboards": "dashboard", "Charts": "chart", "Datasets": "dataset", "Connections": "connection"}
	seen := map[string]bool{}
	for _, g := range groups {
		for _, it := range g.Items {
			if seen[it.ID] {
				t.Errorf("%s appears twice", it.ID)
			}
			seen[it.ID] = true
			if want, ok := byGroup[g.Name]; ok && string(it.EntityType) != want {
				t.Errorf("%s in group %s", it.ID, g.Name)
			}
			if len(it.Metadata) != 1 || it.Metadata["info"] == "" || strings.Contains(it.Label, it.ID) || !strings.HasSuffix(it.Label, ": "+it.Name) {
				t.Errorf("item %+v: want only an info line in metadata and a label without the ID", it)
			}
			if it.Handle != "" {
				t.Errorf("item %+v: a search result has no handle", it)
			}
		}
	}
	if seen["chart_tickets"] || seen["dash_support"] {
		t.Error("another team's items in the results")
	}
	if n := count(groups); n != 10 {
		t.Errorf("%d items for alice, want the 10 Acme items (under the default limit of 20)", n)
	}

	_, groups, _ = search(alice, "teamId=acme&query=signups")
	if len(groups[0].Items) != 0 || len(groups[2].Items) != 2 || len(groups[3].Items) != 2 {
		t.Errorf("query groups: %+v", groups)
	}
	_, groups, _ = search(alice, "teamId=acme&type=dataset,connection")
	if n := count(groups); n != 4 || len(groups[1].Items)+len(groups[2].Items) != 0 {
		t.Errorf("type filter: %+v", groups)
	}
	_, groups, _ = search(alice, "teamId=acme&limit=2")
	if n := count(groups); n != 2 {
		t.Errorf("limit=2 gave %d items", n)
	}
	_, groups, _ = search(alice, "teamId=acme&limit=0")
	if n := count(groups); n != 10 {
		t.Errorf("limit=0 gave %d items", n)
	}
	// Bob reaches only the Growth project and team-wide items.
	_, groups, _ = search(bob, "teamId=acme&limit=50")
	if count(groups) == 0 {
		t.Error("bob sees nothing")
	}
	for _, g := range groups {
		for _, it := range g.Items {
			if it.ProjectID != "" && it.ProjectID != "growth" {
				t.Errorf("bob sees %s in project %s", it.ID, it.ProjectID)
			}
		}
	}

	for _, tc := range []struct {
		query  string
		status int
		code   askbi.Code
		field  string
	}{
		{"teamId=acme&limit=51", 400, askbi.InvalidArgument, "limit"},
		{"teamId=acme&limit=-1", 400, askbi.InvalidArgument, "limit"},
		{"teamId=acme&limit=ten", 400, askbi.InvalidArgument, "limit"},
		{"teamId=acme&type=user", 400, askbi.InvalidArgument, "type"},
		{"teamId=acme&query=" + strings.Repeat("x", 201), 400, askbi.InvalidArgument, "query"},
		{"", 400, askbi.InvalidArgument, "teamId"},
		{"teamId=globex", 404, askbi.NotFound, "team"},
		{"teamId=nope", 404, askbi.NotFound, "team"},
	} {
		t.Run(tc.query, func(t *testing.T) {
			status, _, b := search(alice, tc.query)
			e := chattest.MustError(t, b)
			if status != tc.status || e.Code != tc.code || !strings.Contains(e.Message, tc.field) {
				t.Errorf("status %d %s, want %d %s naming %s", status, b, tc.status, tc.code, tc.field)
			}
		})
	}
	// Carol searches her own team.
	_, groups, _ = search(token("carol"), "teamId=globex")
	if n := count(groups); n != 4 {
		t.Errorf("carol sees %d items, want 4", n)
	}
}

// TestValidation: every payload is checked at the boundary and a failure
// names the field.
func TestValidation(t *testing.T) {
	ts := MustServer(t, nil)
	alice := token("alice")
	conv := ts.MustConversation(t, alice)
	msgs := "/ai/conversations/" + conv + "/messages"
	approve := "/ai/conversations/" + conv + "/approvals/apr_aaaaaaaaaaaaaaaaaaaa/approve"
	ctx11 := make([]map[string]string, 11)
	for i := range ctx11 {
		ctx11[i] = map[string]string{"entity_type": "chart", "id": fmt.Sprintf("c%d", i)}
	}
	big := `{"message": "` + strings.Repeat("x", httpjson.MaxBodyBytes) + `"}`
	for _, tc := range []struct {
		name, method, path string
		body               any
		status             int
		code               askbi.Code
		field              string
	}{
		{"missing message", "POST", msgs, `{}`, 400, askbi.InvalidArgument, "message"},
		{"message wrong type", "POST", msgs, `{"message": 42}`, 400, askbi.InvalidArgument, "message"},
		{"headless wrong type", "POST", msgs, `{"message": "hi", "headless": "yes"}`, 400, askbi.InvalidArgument, "headless"},
		{"unknown field", "POST", msgs, `{"message": "hi", "model": "gpt"}`, 400, askbi.InvalidArgument, "model"},
		{"context not a list", "POST", msgs, `{"message": "hi", "context": {}}`, 400, askbi.InvalidArgument, "context"},
		{"11 context items", "POST", msgs, map[string]any{"message": "hi", "context": ctx11}, 400, askbi.InvalidArgument, "context"},
		{"bad entity type", "POST", msgs, `{"message": "hi", "context": [{"entity_type": "user", "id": "u"}]}`, 400, askbi.InvalidArgument, "context[0].entity_type"},
		{"missing context id", "POST", msgs, `{"message": "hi", "context": [{"entity_type": "chart"}]}`, 400, askbi.InvalidArgument, "context[0].id"},
		{"unknown context field", "POST", msgs, `{"message": "hi", "context": [{"entity_type": "chart", "id": "c", "name": "x"}]}`, 400, askbi.InvalidArgument, "name"},
		{"empty body", "POST", msgs, ``, 400, askbi.InvalidArgument, "body"},
		{"malformed", "POST", msgs, `{"message": `, 400, askbi.InvalidArgument, "body"},
		{"two objects", "POST", msgs, `{"message": "a"} {"message": "b"}`, 400, askbi.InvalidArgument, "body"},
		{"not an object", "POST", msgs, `["hi"]`, 400, askbi.InvalidArgument, "body"},
		{"body too large", "POST", approve, big, 413, askbi.TooLarge, "body"}, // messages take attachments: TestAttachmentErrors
		{"message too long", "POST", msgs, map[string]string{"message": strings.Repeat("x", 4001)}, 413, askbi.TooLarge, "message"},
		{"unknown conversation", "POST", "/ai/conversations/conv_nope/messages", `{"message": "hi"}`, 404, askbi.NotFound, "conversation"},
		{"approve without tool", "POST", approve, `{"arguments": {}}`, 400, askbi.InvalidArgument, "tool"},
		{"approve without arguments", "POST", approve, `{"tool": "delete_dashboard"}`, 400, askbi.InvalidArgument, "arguments"},
		{"approve arguments not an object", "POST", approve, `{"tool": "delete_dashboard", "arguments": "x"}`, 400, askbi.InvalidArgument, "arguments"},
		{"approve malformed id", "POST", "/ai/conversations/" + conv + "/approvals/nope/approve", `{"tool": "t", "arguments": {}}`, 400, askbi.InvalidArgument, "approval_id"},
		{"approve unknown id", "POST", approve, `{"tool": "t", "arguments": {}}`, 409, askbi.ApprovalInvalid, "approval"},
		{"add without dashboard", "POST", "/ai/conversations/" + conv + "/charts/c/add-to-dashboard", `{}`, 400, askbi.InvalidArgument, "dashboard_id"},
		{"create with a field", "POST", "/ai/conversations", `{"title": "x"}`, 400, askbi.InvalidArgument, "title"},
		{"list limit not a number", "GET", "/ai/conversations?limit=many", nil, 400, askbi.InvalidArgument, "limit"},
		{"list limit too big", "GET", "/ai/conversations?limit=101", nil, 400, askbi.InvalidArgument, "limit"},
		{"memory without text", "POST", "/ai/memory", `{"note": "x"}`, 400, askbi.InvalidArgument, "note"},
		{"memory text missing", "POST", "/ai/memory", `{}`, 400, askbi.InvalidArgument, "text"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, accept := range []string{"application/json", "text/event-stream"} {
				status, h, b := ts.Do(t, tc.method, tc.path, alice, tc.body, "Accept", accept)
				if ct := h.Get("Content-Type"); ct != "application/json" {
					t.Errorf("Accept %s: Content-Type %q, want a JSON error", accept, ct)
				}
				e := chattest.MustError(t, b)
				if status != tc.status || e.Code != tc.code || !strings.Contains(e.Message, tc.field) {
					t.Errorf("Accept %s: %d %s, want %d %s naming %q", accept, status, b, tc.status, tc.code, tc.field)
				}
			}
		})
	}
}

// TestUnknownRoutesAnswerJSON: a path under /ai/ that does not exist, or a
// method a route does not take, answers the JSON error body.
func TestUnknownRoutesAnswerJSON(t *testing.T) {
	ts := MustServer(t, nil)
	alice := token("alice")
	for _, tc := range []struct {
		method, path string
		status       int
		allow        []string
	}{
		{"GET", "/ai/nope", 404, nil},
		{"GET", "/ai/conversations/x/nope", 404, nil},
		{"PATCH", "/ai/memory", 405, []string{"DELETE", "GET", "POST"}},
		{"PUT", "/ai/conversations/x", 405, []string{"DELETE", "GET", "PATCH"}},
		{"GET", "/ai/conversations/x/messages", 405, []string{"POST"}},
		{"POST", "/ai/context", 405, []string{"GET"}},
		// The connection routes are connhttp's, mounted apart.
		{"GET", "/ai/connections", 404, nil},
	} {
		t.Run(tc.method+" "+tc.path, func(t *testing.T) {
			status, h, b := ts.Do(t, tc.method, tc.path, alice, nil)
			if status != tc.status || !strings.HasPrefix(h.Get("Content-Type"), "application/json") {
				t.Fatalf("status %d, Content-Type %q, body %s", status, h.Get("Content-Type"), b)
			}
			want := askbi.NotFound
			if tc.status == 405 {
				want = askbi.Unsupported
			}
			if got := chattest.MustError(t, b).Code; got != want {
				t.Errorf("code %q, want %q", got, want)
			}
			if tc.allow != nil {
				var got []string
				for m := range strings.SplitSeq(h.Get("Allow"), ",") {
					if m = strings.TrimSpace(m); m != "HEAD" {
						got = append(got, m)
					}
				}
				slices.Sort(got)
				if !slices.Equal(got, tc.allow) {
					t.Errorf("Allow %q, want %v", h.Get("Allow"), tc.allow)
				}
			}
		})
	}
}

// TestAssistantRight: a host that withdraws the assistant from a role
// keeps those members out of every chat route, and the status says why.
func TestAssistantRight(t *testing.T) {
	ts := MustServer(t, func(c *config) {
		c.withdraw = map[access.Right][]access.Role{access.RightUseAssistant: {access.RoleViewer}}
	})
	vic, alice := token("vic"), token("alice")
	var st ask.Status
	ts.MustDo(t, http.StatusOK, "GET", "/ai/status", vic, nil, &st)
	if st.Available || !strings.Contains(st.Reason, "role") {
		t.Errorf("vic's status = %+v", st)
	}
	st = ask.Status{}
	ts.MustDo(t, http.StatusOK, "GET", "/ai/status", alice, nil, &st)
	if diff := cmp.Diff(ask.Status{Available: true, UserID: "alice", TeamID: "acme", Role: access.RoleOwner, MaxMessageChars: 4000}, st,
		cmpopts.IgnoreFields(ask.Status{}, "Attachments")); diff != "" {
		t.Errorf("alice's status mismatch (-want +got):\n%s", diff)
	}
	conv := ts.MustConversation(t, alice)
	for _, r := range []struct{ method, path, body string }{
		{"POST", "/ai/conversations", ""},
		{"GET", "/ai/conversations", ""},
		{"GET", "/ai/conversations/" + conv, ""},
		{"PATCH", "/ai/conversations/" + conv, `{"title":"x"}`},
		{"DELETE", "/ai/conversations/" + conv, ""},
		{"POST", "/ai/conversations/" + conv + "/messages", `{"message":"hi"}`},
		{"POST", "/ai/conversations/" + conv + "/approvals/apr_aaaaaaaaaaaaaaaaaaaa/approve", `{"tool":"delete_dashboard","arguments":{}}`},
		{"POST", "/ai/conversations/" + conv + "/approvals/apr_aaaaaaaaaaaaaaaaaaaa/reject", `{"tool":"delete_dashboard","arguments":{}}`},
		{"POST", "/ai/conversations/" + conv + "/charts/chart_x/add-to-dashboard", `{"dashboard_id":"dash_growth"}`},
		{"GET", "/ai/context?teamId=acme", ""},
		{"GET", "/ai/memory", ""},
		{"POST", "/ai/memory", `{"text":"x"}`},
		{"DELETE", "/ai/memory", ""},
	} {
		var body any
		if r.body != "" {
			body = r.body
		}
		status, _, b := ts.Do(t, r.method, r.path, vic, body)
		if status != http.StatusForbidden || chattest.MustError(t, b).Code != askbi.Forbidden {
			t.Errorf("vic %s %s: %d %s", r.method, r.path, status, b)
		}
	}
	ts.MustDo(t, http.StatusOK, "GET", "/ai/conversations/"+conv, alice, nil, nil)
}

// TestAssistantUnavailable: an assistant without a model says so on
// /ai/status, answers every conversation route 503 with that reason and
// no retry hint (a configuration error does not pass by waiting), and
// memory, which needs no model, keeps working.
func TestAssistantUnavailable(t *testing.T) {
	ts := MustServer(t, func(c *config) { c.provider = nil })
	alice := token("alice")
	var st ask.Status
	ts.MustDo(t, http.StatusOK, "GET", "/ai/status", alice, nil, &st)
	if st.Available || st.Reason != "The assistant's model is not configured." {
		t.Errorf("status = %+v", st)
	}
	for _, r := range []struct{ method, path, body string }{
		{"POST", "/ai/conversations", "{}"},
		{"GET", "/ai/conversations", ""},
		{"GET", "/ai/conversations/conv_x", ""},
		{"DELETE", "/ai/conversations/conv_x", ""},
		{"POST", "/ai/conversations/conv_x/messages", `{"message":"hi"}`},
		{"POST", "/ai/conversations/conv_x/approvals/apr_aaaaaaaaaaaaaaaaaaaa/approve", `{"tool":"delete_dashboard","arguments":{}}`},
		{"POST", "/ai/conversations/conv_x/approvals/apr_aaaaaaaaaaaaaaaaaaaa/reject", `{"tool":"delete_dashboard","arguments":{}}`},
		{"POST", "/ai/conversations/conv_x/charts/chart_x/add-to-dashboard", `{"dashboard_id":"dash_growth"}`},
		{"GET", "/ai/context?teamId=acme", ""},
	} {
		var body any
		if r.body != "" {
			body = r.body
		}
		status, h, b := ts.Do(t, r.method, r.path, alice, body)
		e := chattest.MustError(t, b)
		if status != http.StatusServiceUnavailable || e.Code != askbi.Unavailable || e.Message != st.Reason || e.RetryAfter != 0 || h.Get("Retry-After") != "" {
			t.Errorf("%s %s: %d Retry-After %q %s", r.method, r.path, status, h.Get("Retry-After"), b)
		}
	}
	// Memory needs no model.
	var added struct{ Item memory.Item }
	ts.MustDo(t, http.StatusCreated, "POST", "/ai/memory", alice, map[string]string{"text": "I report in EUR"}, &added)
	var list struct{ Items []memory.Item }
	ts.MustDo(t, http.StatusOK, "GET", "/ai/memory", alice, nil, &list)
	if len(list.Items) != 1 || list.Items[0].Text != "I report in EUR" {
		t.Errorf("memories: %+v", list.Items)
	}
	ts.MustDo(t, http.StatusNoContent, "DELETE", "/ai/memory/"+added.Item.ID, alice, nil, nil)
}

// TestRemovedMember: a member removed from the team is refused on every
// route at once, their session notwithstanding.
func TestRemovedMember(t *testing.T) {
	ts := MustServer(t, nil)
	bob := token("bob")
	ts.MustDo(t, http.StatusOK, "GET", "/ai/memory", bob, nil, nil)
	ts.dir.RemoveMember("acme", "bob")
	for _, r := range routes {
		status, _, b := ts.Do(t, r.method, r.path, bob, "{}")
		if status != http.StatusForbidden || chattest.MustError(t, b).Code != askbi.Forbidden {
			t.Errorf("%s %s: %d %s", r.method, r.path, status, b)
		}
	}
}

// TestRateLimitEveryRoute: memory routes spend the same per-user budget
// as the rest, one unit per request.
func TestRateLimitEveryRoute(t *testing.T) {
	ts := MustServer(t, func(c *config) {
		c.limiter = access.NewMemoryRateLimiter(&access.RateOptions{Burst: 3, Rate: 0.001})
	})
	alice := token("alice")
	ts.MustDo(t, http.StatusOK, "GET", "/ai/memory", alice, nil, nil)
	ts.MustDo(t, http.StatusCreated, "POST", "/ai/memory", alice, map[string]string{"text": "I report in EUR"}, nil)
	ts.MustDo(t, http.StatusOK, "GET", "/ai/conversations", alice, nil, nil)
	for _, r := range []struct{ method, path string }{{"GET", "/ai/memory"}, {"DELETE", "/ai/memory"}, {"GET", "/ai/conversations"}} {
		status, h, b := ts.Do(t, r.method, r.path, alice, nil)
		if e := chattest.MustError(t, b); status != http.StatusTooManyRequests || e.Code != askbi.RateLimited || e.RetryAfter < 1 ||
			h.Get("Retry-After") != strconv.Itoa(e.RetryAfter) {
			t.Errorf("%s %s after the budget: %d %v %s; want 429 with Retry-After", r.method, r.path, status, h, b)
		}
	}
	// Another user has a budget of their own.
	ts.MustDo(t, http.StatusOK, "GET", "/ai/memory", token("bob"), nil, nil)
}

// TestChart: a chart result of the conversation comes with its data; a
// chart of another conversation is not found; a deleted one is
// unavailable, with its datasets' links.
func TestChart(t *testing.T) {
	ts := MustServer(t, nil)
	alice, vic := token("alice"), token("vic")
	conv := ts.MustConversation(t, alice)
	events := ts.MustTurn(t, "/ai/conversations/"+conv+"/messages", alice, map[string]any{"message": "show signups by week"})
	var cr dataexec.ChartResult
	if err := json.Unmarshal(chattest.MustToolEvent(t, events, ask.EventToolCompleted, "create_chart_preview").Tool.Result, &cr); err != nil {
		t.Fatal(err)
	}
	if cr.Data != nil {
		t.Error("the event carries chart data; it should carry references only")
	}
	path := "/ai/conversations/" + conv + "/charts/" + cr.Chart.ID
	var out struct{ Chart ask.ChartView }
	ts.MustDo(t, http.StatusOK, "GET", path, alice, nil, &out)
	if out.Chart.Status != workspace.StatusPreview || out.Chart.Data == nil || len(out.Chart.Data.Labels) == 0 ||
		len(out.Chart.Data.Series) != 1 || out.Chart.Chart.ID != cr.Chart.ID {
		t.Errorf("chart = %+v", out.Chart)
	}
	// Where alice may place it: the dashboards of its project she may edit.
	if len(out.Chart.PlaceOn) != 1 || out.Chart.PlaceOn[0].ID != "dash_growth" || out.Chart.PlaceOn[0].Name != "Growth overview" {
		t.Errorf("place_on = %+v", out.Chart.PlaceOn)
	}
	// A viewer's own preview has nowhere to go.
	vconv := ts.MustConversation(t, vic)
	vevents := ts.MustTurn(t, "/ai/conversations/"+vconv+"/messages", vic, map[string]any{"message": "show signups by week"})
	var vcr dataexec.ChartResult
	json.Unmarshal(chattest.MustToolEvent(t, vevents, ask.EventToolCompleted, "create_chart_preview").Tool.Result, &vcr)
	var vout struct {
		Chart map[string]json.RawMessage
	}
	ts.MustDo(t, http.StatusOK, "GET", "/ai/conversations/"+vconv+"/charts/"+vcr.Chart.ID, vic, nil, &vout)
	if got := string(vout.Chart["place_on"]); got != "[]" {
		t.Errorf("viewer's place_on = %s, want []", got)
	}
	// Another user, and another conversation of the same user, do not find it.
	ts.MustDo(t, http.StatusNotFound, "GET", path, vic, nil, nil)
	other := ts.MustConversation(t, alice)
	ts.MustDo(t, http.StatusNotFound, "GET", "/ai/conversations/"+other+"/charts/"+cr.Chart.ID, alice, nil, nil)

	ts.cat.DeleteChart(cr.Chart.ID)
	out.Chart = ask.ChartView{}
	ts.MustDo(t, http.StatusOK, "GET", path, alice, nil, &out)
	if out.Chart.Status != workspace.StatusUnavailable || out.Chart.Data != nil || len(out.Chart.Datasets) != 1 ||
		out.Chart.Datasets[0].ID != "ds_weekly_signups" {
		t.Errorf("deleted chart = %+v", out.Chart)
	}
}

// TestHostileBodies: a 10 MB body is refused with 413 and deeply nested
// JSON with 400, both as JSON errors, nothing is saved, and the server
// keeps serving.
func TestHostileBodies(t *testing.T) {
	ts := MustServer(t, nil)
	alice := token("alice")
	huge := `{"text":"` + strings.Repeat("a", 10<<20) + `"}`
	deep := `{"text":` + strings.Repeat("[", 30000) + strings.Repeat("]", 30000) + `}`
	for _, tt := range []struct {
		name, body string
		status     int
		code       askbi.Code
	}{
		{"10 MB", huge, http.StatusRequestEntityTooLarge, askbi.TooLarge},
		{"nested 30,000 deep", deep, http.StatusBadRequest, askbi.InvalidArgument},
	} {
		status, _, b := ts.Do(t, "POST", "/ai/memory", alice, tt.body)
		if status != tt.status || chattest.MustError(t, b).Code != tt.code {
			t.Errorf("%s: %d %.200s; want %d %s", tt.name, status, b, tt.status, tt.code)
		}
	}
	var list struct {
		Items []any `json:"items"`
	}
	ts.MustDo(t, http.StatusOK, "GET", "/ai/memory", alice, nil, &list)
	if len(list.Items) != 0 {
		t.Errorf("hostile bodies saved %d memories", len(list.Items))
	}
}
