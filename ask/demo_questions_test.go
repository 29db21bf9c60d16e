package ask_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/askbi/askbi/access"
	"github.com/askbi/askbi/ask"
	"github.com/askbi/askbi/ask/provider/mock"
	"github.com/askbi/askbi/dataexec"
	"github.com/askbi/askbi/workspace"
)

// withDemoData gives e's workspace what the newcomer's questions need
// beyond newEnv's: eleven months of MRR, three countries, a dataset
// scoped to two of them, and one with no numeric field.
func withDemoData(e *env) {
	mrr := &dataexec.Table{Columns: []string{"month", "mrr"}}
	for m := 1; m <= 11; m++ {
		mrr.Rows = append(mrr.Rows, []any{fmt.Sprintf("2026-%02d", m), json.Number(fmt.Sprintf("%d.00", 42000+1850*m))})
	}
	e.tables[sqlMRR] = mrr
	e.tables[sqlCountry] = &dataexec.Table{Columns: []string{"country", "signups"}, Rows: [][]any{
		{"US", int64(3410)}, {"DE", int64(3322)}, {"FR", int64(3251)}}}
	const sqlPlans = "SELECT plan, tier FROM plans"
	e.tables[sqlPlans] = &dataexec.Table{Columns: []string{"plan", "tier"}, Rows: [][]any{{"Starter", "self-serve"}, {"Scale", "sales"}}}
	at := e.clock.Now().Add(-2 * 3600e9)
	fields := func(names ...string) workspace.Fields {
		var fs workspace.Fields
		for _, n := range names {
			fs = append(fs, workspace.Field{Name: n, Path: []string{n}})
		}
		return fs
	}
	e.cat.PutDataset(workspace.Dataset{ID: "ds-eu", TeamID: "acme", ProjectID: "growth", Name: "EU signups by country", Version: 1, UpdatedAt: at,
		Request: workspace.Request{ConnectionID: "wh", SQL: sqlCountry, Fields: fields("country", "signups"),
			Filters: []workspace.Filter{{Field: "country", Op: workspace.OpIn, Value: []any{"DE", "FR"}}}},
		Scope: &workspace.Scope{UnscopedID: "ds-country"}})
	const sqlCountries = "SELECT country, first_signup FROM countries"
	e.tables[sqlCountries] = &dataexec.Table{Columns: []string{"country", "first_signup"}, Rows: [][]any{{"DE", "2026-09-07"}, {"US", "2026-09-08"}}}
	e.cat.PutDataset(workspace.Dataset{ID: "ds-countries", TeamID: "acme", ProjectID: "growth", Name: "Signup countries", Version: 1, UpdatedAt: at,
		Request: workspace.Request{ConnectionID: "wh", SQL: sqlCountries, Fields: fields("country", "first_signup")}})
	e.cat.PutDataset(workspace.Dataset{ID: "ds-plans", TeamID: "acme", ProjectID: "growth", Name: "Plans", Version: 1, UpdatedAt: at,
		Request: workspace.Request{ConnectionID: "wh", SQL: sqlPlans, Fields: fields("plan", "tier")}})
}

// TestDemoModelAnswersQuestions: the demo model answers a newcomer's own
// questions about the workspace as a model would with its tools: it
// searches for the question's words (a synonym, a typo, a trend asked of
// a series over time), runs the best match, charts it and says which
// dataset it chose and why, then what the chart shows in numbers taken
// from the runs, as far as the sharing level showed them. It refers a
// follow-up to the last answer's chart, says which dataset it used when
// a selected one is not the one named, answers a dataset with no number
// with a table, names the datasets it sees when nothing matches, and
// says it reads English.
func TestDemoModelAnswersQuestions(t *testing.T) {
	for _, tc := range []struct {
		name     string
		before   []string // earlier questions of the conversation
		selected []ask.ContextRef
		sharing  ask.Sharing // default rows
		question string
		tools    []string // the calls the turn made, in order (completed, failed or proposed)
		dataset  string   // the dataset the first run_dataset ran, "" for none
		says     []string // what the answer says, each a part of it
		preview  map[string]any
		// table: the answer charts nothing, and its run's result names the
		// dataset for the client's table.
		table bool
	}{
		{name: "a trend", question: "how are signups trending?",
			tools: []string{"search_workspace", "run_dataset", "create_chart_preview"}, dataset: "ds-weekly",
			says: []string{"I used Weekly signups because it matches “signups”.", "Signups rose from 1,201 to 1,450 over 3 weeks (+21%); the best week was 16 Nov, with 1,450."}},
		{name: "a trend, aggregates", sharing: ask.SharingAggregates, question: "how are signups trending?",
			tools: []string{"search_workspace", "run_dataset", "run_dataset", "run_dataset", "create_chart_preview"}, dataset: "ds-weekly",
			says: []string{"Signups rose from 1,201 to 1,450 over 3 weeks (+21%), 2 Nov to 16 Nov; the best week had 1,450.", "I cannot say which week that was"}},
		{name: "a trend, schema", sharing: ask.SharingSchema, question: "how are signups trending?",
			tools: []string{"search_workspace", "run_dataset", "create_chart_preview"}, dataset: "ds-weekly",
			says: []string{"I see only the fields of Weekly signups, not its numbers"}},
		{name: "the most, not the scoped dataset", question: "which country has the most signups",
			tools: []string{"search_workspace", "run_dataset", "create_chart_preview"}, dataset: "ds-country",
			says:    []string{"I used Signups by country because it matches “country” and “signups”.", "US has the most signups: 3,410 of 9,983 (34%); FR has the fewest, 3,251."},
			preview: map[string]any{"dataset_id": "ds-country", "chart_type": "bar", "x_field": "country", "y_fields": []any{"signups"}, "name": "Signups by country"}},
		{name: "the most, aggregates", sharing: ask.SharingAggregates, question: "which country has the most signups",
			tools: []string{"search_workspace", "run_dataset", "create_chart_preview"}, dataset: "ds-country",
			says: []string{"Across 3 countries, signups run from 3,251 to 3,410 each, 9,983 in all.", "not which country has which"}},
		{name: "a comparison", question: "compare MRR to last quarter",
			tools: []string{"search_workspace", "run_dataset", "create_chart_preview"}, dataset: "ds-mrr",
			says: []string{"MRR was 62,350 in Nov 2026, up 9.8% from 56,800 in Aug 2026, a quarter earlier."}},
		{name: "a comparison, aggregates", sharing: ask.SharingAggregates, question: "compare MRR to last quarter",
			tools: []string{"search_workspace", "run_dataset", "run_dataset", "run_dataset", "create_chart_preview"}, dataset: "ds-mrr",
			says: []string{"MRR was 62,350 in Nov 2026, up 9.8% from 56,800 in Aug 2026, a quarter earlier."}},
		{name: "a synonym", question: "what is our revenue",
			tools: []string{"search_workspace", "run_dataset", "create_chart_preview"}, dataset: "ds-mrr",
			says: []string{"I used MRR because it matches “revenue” (tracked as MRR here).", "MRR rose from 43,850 to 62,350 over 11 months (+42%)"}},
		{name: "a typo", question: "how many sigups did we get each week",
			tools: []string{"search_workspace", "search_workspace", "run_dataset", "create_chart_preview"}, dataset: "ds-weekly",
			says: []string{"I used Weekly signups because it matches “sigups” (read as “signups”) and “week”.", "from 1,201 to 1,450"}},
		{name: "nothing matches", question: "top pages last month",
			tools: []string{"search_workspace", "search_workspace"},
			says:  []string{"I found no dataset about “pages”. The datasets I can see are", "MRR", "Weekly signups", "Ask about one of them"}},
		{name: "another language", question: "¿Cuántos registros tuvimos por semana?",
			tools: []string{"search_workspace"},
			says:  []string{"I am the demo model and read English only, but I looked for your words in the workspace anyway.", "The datasets I can see are"}},
		{name: "another language, a word it knows", question: "¿Cuál es el MRR por mes?",
			tools: []string{"search_workspace", "run_dataset", "create_chart_preview"}, dataset: "ds-mrr",
			says: []string{"read English only", "I used MRR because it matches “mrr”", "62,350"}},
		{name: "the scoped dataset by its name", question: "EU signups by country",
			tools: []string{"search_workspace", "run_dataset", "create_chart_preview"}, dataset: "ds-eu",
			says: []string{"I used EU signups by country", "It holds only the rows where country in (DE, FR).", "DE has the most signups: 3,322 of 6,573 (51%)"}},
		{name: "the very word beats its plural", question: "show the signup countries",
			tools: []string{"search_workspace", "run_dataset"}, dataset: "ds-countries", table: true,
			says: []string{"I used Signup countries because it matches “signup” and “countries”."}},
		{name: "no numeric field", question: "show the plans",
			tools: []string{"search_workspace", "run_dataset"}, dataset: "ds-plans", table: true,
			says: []string{"Plans has no numeric field to chart, so here it is as a table: 2 rows of plan and tier; the first is Starter, self-serve."}},
		{name: "show X by Y keeps its name", question: "show mrr by month",
			tools: []string{"search_workspace", "run_dataset", "create_chart_preview"}, dataset: "ds-mrr",
			preview: map[string]any{"dataset_id": "ds-mrr", "chart_type": "line", "x_field": "month", "y_fields": []any{"mrr"}, "name": "MRR by month"}},
		{name: "a selection names another", selected: []ask.ContextRef{{Type: access.TypeDataset, ID: "ds-weekly"}}, question: "what is our MRR",
			tools: []string{"run_dataset", "search_workspace", "create_chart_preview"}, dataset: "ds-weekly",
			says: []string{"Your question names MRR, but I used Weekly signups, the dataset you selected; to use MRR, select it instead.", "1,450"}},
		{name: "follow-up: a new type", before: []string{"how are signups trending?"}, question: "change this to a bar chart",
			tools: []string{"update_chart"}},
		{name: "follow-up: a period", before: []string{"how are signups trending?"}, question: "only the last 2 weeks",
			tools: []string{"run_dataset", "run_dataset", "create_chart_preview"}, dataset: "ds-weekly",
			says: []string{"I narrowed Weekly signups to the last 2 weeks.", "Signups rose from 1,342 to 1,450 over 2 weeks (+8%)"},
			preview: map[string]any{"dataset_id": "ds-weekly", "chart_type": "line", "x_field": "week", "y_fields": []any{"signups"}, "name": "Weekly signups, last 2 weeks",
				"filters": []any{map[string]any{"field": "week", "op": "gte", "value": "2026-11-09"}}}},
		{name: "follow-up: a breakdown its data lacks", before: []string{"how are signups trending?"}, question: "by country",
			tools: []string{"search_workspace", "run_dataset", "create_chart_preview"}, dataset: "ds-country",
			says: []string{"The data of Weekly signups has no country field, so I used Signups by country", "US has the most signups"}},
		{name: "follow-up: placed", before: []string{"how are signups trending?"}, question: "put it on the Growth dashboard",
			tools: []string{"search_workspace", "add_preview_to_dashboard"}},
		{name: "follow-up: placed across projects", before: []string{"how are signups trending?"}, question: "put it on the Revenue dashboard",
			tools: []string{"search_workspace", "search_workspace"},
			says:  []string{"Weekly signups cannot go on Revenue: that dashboard belongs to another project than the chart's data", "It can go on Growth overview"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			model, events := askQuestion(t, tc.sharing, tc.before, tc.question, tc.selected)
			var tools []string
			for _, ev := range events {
				switch ev.Type {
				case ask.EventToolCompleted, ask.EventToolFailed, ask.EventToolApprovalRequired:
					tools = append(tools, ev.Tool.Name)
				}
			}
			if diff := cmp.Diff(tc.tools, tools); diff != "" {
				t.Errorf("tools mismatch (-want +got):\n%s", diff)
			}
			if tc.dataset != "" {
				if got := firstRun(model); got != tc.dataset {
					t.Errorf("ran %q, want %q", got, tc.dataset)
				}
			}
			answer := ""
			if ev := find(events, ask.EventMessageCompleted); ev != nil {
				answer = ev.Text
			}
			for _, s := range tc.says {
				if !strings.Contains(answer, s) {
					t.Errorf("answer %q\ndoes not say %q", answer, s)
				}
			}
			if strings.Contains(answer, "Try \"show signups by week\"") {
				t.Errorf("answered with the help line: %q", answer)
			}
			if tc.table {
				var got ask.DatasetResult
				for _, ev := range events {
					if ev.Type == ask.EventToolCompleted && ev.Tool.Name == "run_dataset" {
						json.Unmarshal(ev.Tool.Result, &got)
					}
				}
				if got.Type != ask.DatasetResultType || got.Dataset.ID != tc.dataset {
					t.Errorf("run_dataset's result %+v; want the dataset %s for the table", got, tc.dataset)
				}
			}
			if tc.preview != nil {
				if diff := cmp.Diff(tc.preview, lastCallOf(t, model, "create_chart_preview")); diff != "" {
					t.Errorf("create_chart_preview mismatch (-want +got):\n%s", diff)
				}
			}
		})
	}
}

// askQuestion asks the questions before, then question (with selected,
// or nothing, selected), as alice at a sharing level (rows when empty),
// and returns the model and the last turn's events.
func askQuestion(t *testing.T, level ask.Sharing, before []string, question string, selected []ask.ContextRef) (*mock.Provider, []ask.Event) {
	t.Helper()
	e := newEnv(t, nil)
	withDemoData(e)
	e.model.Now = e.clock.Now
	if level != "" {
		e.sharing.set(level)
	}
	conv := e.MustConversation(t, alice)
	for _, q := range before {
		e.MustSend(t, alice, conv, q, nil)
	}
	var sel *[]ask.ContextRef
	if selected != nil {
		sel = &selected
	}
	return e.model, e.MustSend(t, alice, conv, question, sel)
}

// firstRun is the dataset of the first run_dataset call of the last
// turn the model answered, "" for none.
func firstRun(model *mock.Provider) string {
	reqs := model.Requests()
	if len(reqs) == 0 {
		return ""
	}
	msgs := reqs[len(reqs)-1].Messages
	last := 0
	for i, m := range msgs {
		if m.Role == ask.RoleUser {
			last = i
		}
	}
	for _, m := range msgs[last:] {
		// The output names the dataset by its ID (a call may use a
		// selected item's handle).
		if m.Role == ask.RoleTool && strings.HasPrefix(m.Text, `<tool_output tool="run_dataset"`) {
			body := m.Text[strings.Index(m.Text, "\n")+1 : strings.LastIndex(m.Text, "\n</tool_output>")]
			var out struct {
				Dataset struct{ ID string }
			}
			json.Unmarshal([]byte(body), &out)
			return out.Dataset.ID
		}
	}
	return ""
}
