package askhttp_test

import (
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/askbi/askbi/ask"
	"github.com/askbi/askbi/dataexec"
	"github.com/askbi/askbi/internal/chattest"
	"github.com/askbi/askbi/workspace"
)

// TestPreviewPrivate: the preview alice's own chat made is hers until she
// places it. GET /ai/context does not list it to vic or bob, and bob
// selecting it as his chat's context is answered as for a chart that does
// not exist, changing nothing; once placed, it is the team's.
func TestPreviewPrivate(t *testing.T) {
	ts := MustServer(t, nil)
	alice, bob, vic := token("alice"), token("bob"), token("vic")
	conv := ts.MustConversation(t, alice)
	events := ts.MustTurn(t, "/ai/conversations/"+conv+"/messages", alice, map[string]any{"message": "show signups by week"})
	var cr dataexec.ChartResult
	if err := json.Unmarshal(chattest.MustToolEvent(t, events, ask.EventToolCompleted, "create_chart_preview").Tool.Result, &cr); err != nil || cr.Status != workspace.StatusPreview {
		t.Fatalf("chart result: %v %+v", err, cr)
	}
	id := cr.Chart.ID

	// listed reports whether who's context search lists the preview, by
	// its name and among the recent items.
	listed := func(who string) bool {
		t.Helper()
		found := false
		for _, q := range []string{"teamId=acme&query=" + url.QueryEscape(cr.Chart.Name), "teamId=acme&limit=50"} {
			var doc struct{ Groups []ask.ContextGroup }
			ts.MustDo(t, http.StatusOK, "GET", "/ai/context?"+q, who, nil, &doc)
			for _, g := range doc.Groups {
				for _, it := range g.Items {
					found = found || it.ID == id
				}
			}
		}
		return found
	}
	if !listed(alice) {
		t.Fatal("alice's context search does not list her preview")
	}
	for name, who := range map[string]string{"vic": vic, "bob": bob} {
		if listed(who) {
			t.Errorf("%s's context search lists alice's preview", name)
		}
	}

	// select is bob's turn with chart c as its context: the answer, with
	// c's ID replaced so that two charts' answers compare.
	bobs := ts.MustConversation(t, bob)
	selectAs := func(c string) (int, string) {
		t.Helper()
		status, _, b := ts.Do(t, "POST", "/ai/conversations/"+bobs+"/messages", bob,
			map[string]any{"message": "describe it", "context": []map[string]string{{"entity_type": "chart", "id": c}}})
		return status, strings.ReplaceAll(string(b), c, "{id}")
	}
	wantStatus, want := selectAs("chart_nope")
	if wantStatus != http.StatusNotFound {
		t.Fatalf("selecting an unknown chart = %d %s", wantStatus, want)
	}
	if status, got := selectAs(id); status != wantStatus || got != want {
		t.Errorf("bob selecting alice's preview = %d %s; want what an unknown chart gets, %d %s", status, got, wantStatus, want)
	}
	var view ask.View
	ts.MustDo(t, http.StatusOK, "GET", "/ai/conversations/"+bobs, bob, nil, &view)
	if len(view.Context) != 0 {
		t.Errorf("bob's context after the refused selection = %+v", view.Context)
	}

	// Placed, it is the team's.
	ts.MustDo(t, http.StatusOK, "POST", "/ai/conversations/"+conv+"/charts/"+id+"/add-to-dashboard", alice, map[string]any{"dashboard_id": "dash_growth"}, nil)
	if !listed(vic) || !listed(bob) {
		t.Error("the placed chart is not listed to vic and bob")
	}
	if status, b := selectAs(id); status != http.StatusOK {
		t.Errorf("bob selecting the placed chart = %d %s", status, b)
	}
}
