package ask_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/askbi/askbi/access"
	"github.com/askbi/askbi/ask"
	"github.com/askbi/askbi/ask/provider/mock"
)

// lastCallOf is the arguments of the newest call of tool the model made.
func lastCallOf(t *testing.T, model *mock.Provider, tool string) map[string]any {
	t.Helper()
	var args map[string]any
	for _, r := range model.Requests() {
		for _, m := range r.Messages {
			for _, c := range m.ToolCalls {
				if c.Name == tool {
					args = nil
					if err := json.Unmarshal(c.Arguments, &args); err != nil {
						t.Fatal(err)
					}
				}
			}
		}
	}
	return args
}

// ran reports whether tool completed among events.
func ran(events []ask.Event, tool string) bool {
	for _, ev := range events {
		if ev.Type == ask.EventToolCompleted && ev.Tool.Name == tool {
			return true
		}
	}
	return false
}

// askSelected asks the mock model question as alice, with one item
// selected, at a sharing level and on the test clock's today.
func askSelected(t *testing.T, level ask.Sharing, question string, item ask.ContextRef) (*mock.Provider, []ask.Event) {
	t.Helper()
	model := &mock.Provider{}
	e := newEnv(t, model)
	model.Now = e.clock.Now
	e.sharing.set(level)
	conv := e.MustConversation(t, alice)
	return model, e.MustSend(t, alice, conv, question, refs(item))
}

// TestDemoModelChartsSelection: with one dataset selected, the mock model
// runs and charts it for any question about it, honouring "last N
// weeks" (from the rows or the date range where it may read them, else
// from today) and a breakdown named in words.
func TestDemoModelChartsSelection(t *testing.T) {
	for _, tc := range []struct {
		name     string
		sharing  ask.Sharing
		dataset  string
		question string
		want     map[string]any // create_chart_preview's arguments, without name
	}{
		{"last weeks from the rows", ask.SharingRows, "ds-weekly", "weekly signups last 2 weeks",
			map[string]any{"dataset_id": "ds-weekly", "chart_type": "line", "x_field": "week", "y_fields": []any{"signups"},
				"filters": []any{map[string]any{"field": "week", "op": "gte", "value": "2026-11-09"}}}},
		{"last weeks from the date range", ask.SharingAggregates, "ds-weekly", "weekly signups last 2 weeks",
			map[string]any{"dataset_id": "ds-weekly", "chart_type": "line", "x_field": "week", "y_fields": []any{"signups"},
				"filters": []any{map[string]any{"field": "week", "op": "gte", "value": "2026-11-09"}}}},
		{"last weeks from today", ask.SharingSchema, "ds-weekly", "weekly signups last 2 weeks",
			map[string]any{"dataset_id": "ds-weekly", "chart_type": "line", "x_field": "week", "y_fields": []any{"signups"},
				"filters": []any{map[string]any{"field": "week", "op": "gte", "value": "2026-11-16"}}}},
		{"no range", ask.SharingRows, "ds-weekly", "how are signups doing?",
			map[string]any{"dataset_id": "ds-weekly", "chart_type": "line", "x_field": "week", "y_fields": []any{"signups"}}},
		{"a breakdown in words", ask.SharingAggregates, "ds-country", "which country brings the most signups",
			map[string]any{"dataset_id": "ds-country", "chart_type": "bar", "x_field": "country", "y_fields": []any{"signups"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			model, events := askSelected(t, tc.sharing, tc.question, ask.ContextRef{Type: access.TypeDataset, ID: tc.dataset})
			if !ran(events, "create_chart_preview") {
				t.Fatalf("no chart preview: %v", types(events))
			}
			got := lastCallOf(t, model, "create_chart_preview")
			delete(got, "name")
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("create_chart_preview mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

// TestDemoModelReadsSelectedChart: with one chart selected, the mock
// model reads it (get_chart_data: the client shows the chart) for any
// question about it and says what it draws, as far as the sharing level
// shows it; a question that asks for more (a period, a breakdown the
// chart does not draw) goes on to a preview of the chart's dataset.
func TestDemoModelReadsSelectedChart(t *testing.T) {
	for _, tc := range []struct {
		name     string
		sharing  ask.Sharing
		question string
		answer   string         // the answer's text, when no preview is wanted
		preview  map[string]any // create_chart_preview's arguments, without name
	}{
		{"rows", ask.SharingRows, "how is this doing?",
			"Weekly signups is a line chart of signups by week with 3 points. Signups rose from 1,201 to 1,450 over 3 weeks (+21%); the best week was 16 Nov, with 1,450.", nil},
		{"aggregates", ask.SharingAggregates, "what does it show?",
			"Weekly signups is a line chart of signups by week with 3 points. Signups ran from 1,201 to 1,450 a week over 3 weeks (2 Nov to 16 Nov), 3,993 in all. At this team's sharing level I see totals and ranges, not the rows, so the chart shows the rest.", nil},
		{"a period", ask.SharingAggregates, "and the last 2 weeks?", "",
			map[string]any{"dataset_id": "ds-weekly", "chart_type": "line", "x_field": "week", "y_fields": []any{"signups"},
				"filters": []any{map[string]any{"field": "week", "op": "gte", "value": "2026-11-09"}}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			model, events := askSelected(t, tc.sharing, tc.question, ask.ContextRef{Type: access.TypeChart, ID: "c-weekly"})
			if !ran(events, "get_chart_data") {
				t.Fatalf("the chart was not read: %v", types(events))
			}
			if tc.preview == nil {
				if ran(events, "create_chart_preview") {
					t.Error("a preview for a question the chart answers")
				}
				if ev := find(events, ask.EventMessageCompleted); ev == nil || ev.Text != tc.answer {
					t.Errorf("answer %v, want %q", ev, tc.answer)
				}
				return
			}
			got := lastCallOf(t, model, "create_chart_preview")
			delete(got, "name")
			if diff := cmp.Diff(tc.preview, got); diff != "" {
				t.Errorf("create_chart_preview mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

// TestDemoModelPlacesPreview: "put it on the Growth overview dashboard"
// after a preview proposes placing that preview there, for approval.
func TestDemoModelPlacesPreview(t *testing.T) {
	e := newEnv(t, nil)
	conv := e.MustConversation(t, alice)
	e.MustSend(t, alice, conv, "show signups by week", nil)
	chart := lastCallOf(t, e.model, "create_chart_preview")
	if chart == nil {
		t.Fatal("no preview")
	}
	events := e.MustSend(t, alice, conv, "Put it on the Growth overview dashboard", nil)
	ev := find(events, ask.EventToolApprovalRequired)
	if ev == nil || ev.Tool.Name != "add_preview_to_dashboard" {
		t.Fatalf("no placement proposed: %v", types(events))
	}
	var args map[string]any
	json.Unmarshal(ev.Tool.Arguments, &args)
	if args["dashboard_id"] != "d-growth" || !strings.HasPrefix(args["chart_id"].(string), "chart_") {
		t.Errorf("placement arguments %v", args)
	}
}

// TestDemoModelIntro: the mock's Intro leads its first answer in a
// conversation, and only that one.
func TestDemoModelIntro(t *testing.T) {
	const intro = "I am the built-in demo model."
	e := newEnv(t, &mock.Provider{Intro: intro})
	conv := e.MustConversation(t, alice)
	text := func(events []ask.Event) string {
		if ev := find(events, ask.EventMessageCompleted); ev != nil {
			return ev.Text
		}
		return ""
	}
	if got := text(e.MustSend(t, alice, conv, "show signups by week", nil)); !strings.HasPrefix(got, intro+"\n\n") {
		t.Errorf("first answer %q, want it to start with the intro", got)
	}
	if got := text(e.MustSend(t, alice, conv, "hello", nil)); strings.Contains(got, intro) {
		t.Errorf("second answer %q repeats the intro", got)
	}
}

// TestStatusModelNote: the status carries the host's note on the model,
// for the page to show.
func TestStatusModelNote(t *testing.T) {
	const note = "Answers come from the built-in demo model."
	for _, set := range []string{"", note} {
		e := newEnv(t, nil, func(c *envConfig) { c.opts.ModelNote = set })
		st, err := e.a.Status(t.Context(), alice)
		if err != nil {
			t.Fatal(err)
		}
		if st.ModelNote != set {
			t.Errorf("ModelNote %q: status says %q", set, st.ModelNote)
		}
	}
}
