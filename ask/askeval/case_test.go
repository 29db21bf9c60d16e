package askeval_test

import (
	"slices"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/google/go-cmp/cmp"

	"github.com/askbi/askbi"
	"github.com/askbi/askbi/access"
	"github.com/askbi/askbi/ask"
	"github.com/askbi/askbi/ask/askeval"
	"github.com/askbi/askbi/workspace"
)

// TestParseCases: a case reads the same from JSON and YAML; a bare
// number is an exact one, a bare history entry a message, and a date
// stays the text it was written as.
func TestParseCases(t *testing.T) {
	yaml := `
- id: eu
  category: breakdown
  question: show DE and FR signups
  as: bob
  context:
    - {entity_type: dataset, id: ds_signups_eu}
  history:
    - show signups by week
    - message: and by country?
      context: [{entity_type: chart, id: chart_signups_country}]
  on_approval: reject
  judge: Germany leads.
  expect:
    datasets: [ds_signups_eu]
    filters: [{field: week, op: gte, value: 2026-11-02}]
    numbers: [3322, {value: 3251, tolerance: 1}]
    gold: {dataset: ds_signups_eu}
`
	json := `{"id": "eu", "category": "breakdown", "question": "show DE and FR signups", "as": "bob",
		"context": [{"entity_type": "dataset", "id": "ds_signups_eu"}],
		"history": ["show signups by week", {"message": "and by country?", "context": [{"entity_type": "chart", "id": "chart_signups_country"}]}],
		"on_approval": "reject", "judge": "Germany leads.",
		"expect": {"datasets": ["ds_signups_eu"], "filters": [{"field": "week", "op": "gte", "value": "2026-11-02"}],
			"numbers": [3322, {"value": 3251, "tolerance": 1}], "gold": {"dataset": "ds_signups_eu"}}}`
	want := askeval.Case{ID: "eu", Category: "breakdown", Question: "show DE and FR signups", As: "bob",
		Context: []ask.ContextRef{{Type: access.TypeDataset, ID: "ds_signups_eu"}},
		History: []askeval.HistoryTurn{{Message: "show signups by week"},
			{Message: "and by country?", Context: []ask.ContextRef{{Type: access.TypeChart, ID: "chart_signups_country"}}}},
		OnApproval: askeval.Reject, Judge: "Germany leads.",
		Expect: askeval.Expect{Datasets: []string{"ds_signups_eu"},
			Filters: []workspace.Filter{{Field: "week", Op: workspace.OpGte, Value: "2026-11-02"}},
			Numbers: []askeval.Number{{Value: 3322}, {Value: 3251, Tolerance: 1}},
			Gold:    &askeval.Gold{Dataset: "ds_signups_eu"}}}
	for name, text := range map[string]string{"c.yaml": yaml, "c.json": json} {
		got, err := askeval.ParseCases(name, []byte(text))
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		want.File = name
		if diff := cmp.Diff([]askeval.Case{want}, got); diff != "" {
			t.Errorf("%s mismatch (-want +got):\n%s", name, diff)
		}
	}
}

// TestParseCasesRefuses: what a case file gets wrong is InvalidArgument
// naming the file, the case and the field.
func TestParseCasesRefuses(t *testing.T) {
	for _, tt := range []struct{ name, text, want string }{
		{"c.yaml", "- id: a\n  category: x\n  question: q\n  expect: {datasets: [d]}\n  expected: {}\n", `unknown field "expected"`},
		{"c.yaml", "- id: a\n  category: x\n  question: q\n  expect: {}\n", "no check"},
		{"c.yaml", "- id: a\n  category: x\n  question: q\n  expect: {approval: false}\n", "no check"},
		{"c.yaml", "- id: a\n  category: x\n  question: q\n  on_approval: maybe\n  expect: {run: [t]}\n", "on_approval"},
		{"c.yaml", "- id: a\n  category: x\n  question: q\n  expect: {gold: {sql: select 1}}\n", "sql needs its connection"},
		{"c.yaml", "- id: a\n  category: x\n  question: q\n  expect: {gold: {}}\n", "one of dataset or sql"},
		{"c.yaml", "- id: a\n  category: x\n  question: q\n  expect: {filters: [{field: f, op: like, value: x}]}\n", "op"},
		{"c.yaml", "- id: a\n  category: x\n  question: q\n  context: [{entity_type: page, id: p}]\n  expect: {run: [t]}\n", "entity_type"},
		{"c.yaml", "- id: a b\n  category: x\n  question: q\n  expect: {run: [t]}\n", "id"},
		{"c.yaml", "- id: a\n  question: q\n  expect: {run: [t]}\n", "category: required"},
		{"c.yaml", "- id: a\n  category: x\n  question: q\n  expect: {numbers: [{value: 1, tolerance: -1}]}\n", "tolerance"},
		{"c.yaml", "- id: a\n  category: x\n  question: [q\n", "c.yaml"},
		{"c.json", `{"id": "a", "category": "x", "question": "q", "expect": {"run": "t"}}`, "case 1"},
	} {
		_, err := askeval.ParseCases(tt.name, []byte(tt.text))
		if askbi.ErrorCode(err) != askbi.InvalidArgument || !strings.Contains(askbi.ErrorMessage(err), tt.want) {
			t.Errorf("ParseCases(%q) = %v; want invalid_argument with %q", tt.text, err, tt.want)
		}
	}
}

// TestLoadCases: every case file of a directory, in name order; an ID
// used twice is refused.
func TestLoadCases(t *testing.T) {
	fsys := fstest.MapFS{
		"evals/b.json":     {Data: []byte(`[{"id": "b", "category": "x", "question": "q", "expect": {"run": ["t"]}}]`)},
		"evals/a.yml":      {Data: []byte("id: a\ncategory: x\nquestion: q\nexpect: {run: [t]}\n")},
		"evals/notes.md":   {Data: []byte("not a case")},
		"evals/sub/c.yaml": {Data: []byte("id: c\n")},
	}
	cases, err := askeval.LoadCases(fsys, "evals")
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, c := range cases {
		ids = append(ids, c.ID+" "+c.File)
	}
	if diff := cmp.Diff([]string{"a a.yml", "b b.json"}, ids); diff != "" {
		t.Errorf("cases mismatch (-want +got):\n%s", diff)
	}
	fsys["evals/c.yaml"] = &fstest.MapFile{Data: []byte("id: b\ncategory: x\nquestion: q\nexpect: {run: [t]}\n")}
	if _, err := askeval.LoadCases(fsys, "evals"); err == nil || !strings.Contains(askbi.ErrorMessage(err), "used in b.json too") {
		t.Errorf("a duplicate ID: %v", err)
	}
}

// TestGoldenSet: the demo workspace's set holds at least 40 cases in
// the nine categories, each case's principal and selection
// exist in the demo workspace, and each gold runs there.
func TestGoldenSet(t *testing.T) {
	cases, err := askeval.LoadCases(askeval.Golden, "golden")
	if err != nil {
		t.Fatal(err)
	}
	if len(cases) < 40 {
		t.Errorf("%d cases; want at least 40", len(cases))
	}
	cats := map[string]int{}
	for _, c := range cases {
		cats[c.Category]++
	}
	for _, want := range []string{"trend", "top-N", "comparison", "breakdown", "follow-up", "placement", "approval", "missing connection", "out of scope"} {
		if cats[want] == 0 {
			t.Errorf("no case of category %q", want)
		}
		delete(cats, want)
	}
	if len(cats) > 0 {
		t.Errorf("categories besides the nine: %v", cats)
	}
	ws, err := askeval.Demo(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range cases {
		if _, ok := ws.Principals[c.As]; c.As != "" && !ok {
			t.Errorf("%s: no principal %q", c.ID, c.As)
		}
		refs := slices.Clone(c.Context)
		for _, h := range c.History {
			refs = append(refs, h.Context...)
		}
		for _, r := range refs {
			var err error
			switch r.Type {
			case access.TypeDataset:
				_, err = ws.Catalog.Dataset(t.Context(), r.ID)
			case access.TypeChart:
				_, err = ws.Catalog.Chart(t.Context(), r.ID)
			case access.TypeDashboard:
				_, err = ws.Catalog.Dashboard(t.Context(), r.ID)
			}
			if err != nil {
				t.Errorf("%s: %s %s: %v", c.ID, r.Type, r.ID, err)
			}
		}
		for _, id := range slices.Concat(c.Expect.Datasets, c.Expect.Charts) {
			_, errDS := ws.Catalog.Dataset(t.Context(), id)
			_, errChart := ws.Catalog.Chart(t.Context(), id)
			if errDS != nil && errChart != nil {
				t.Errorf("%s: expects %s, which the demo workspace does not have", c.ID, id)
			}
		}
	}
}
