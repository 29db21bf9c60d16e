package askeval_test

import (
	"bytes"
	"math"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/askbi/askbi/ask"
	"github.com/askbi/askbi/ask/askeval"
)

// TestPricesCost: cached and cache-written input tokens at their own
// prices (Input's when none is given), the rest at Input's.
func TestPricesCost(t *testing.T) {
	u := ask.Usage{InputTokens: 3_000_000, CachedInputTokens: 2_000_000, CacheWriteTokens: 500_000, OutputTokens: 100_000}
	for _, tt := range []struct {
		p    askeval.Prices
		want float64
	}{
		{askeval.Prices{Input: 1, Output: 10}, 3 + 1},
		{askeval.Prices{Input: 1, CachedInput: 0.1, CacheWrite: 1.25, Output: 10}, 0.5 + 0.2 + 0.625 + 1},
	} {
		if got := tt.p.Cost(u); math.Abs(got-tt.want) > 1e-9 {
			t.Errorf("%+v.Cost = %v; want %v", tt.p, got, tt.want)
		}
	}
}

// TestReport: the tallies, reasons, tokens, cost and latency percentiles
// of a run, its JSON read back, and a comparison with an earlier one.
func TestReport(t *testing.T) {
	q := "How many signups did each country have?"
	usage := ask.Usage{InputTokens: 2100, CachedInputTokens: 2048, OutputTokens: 5}
	reply := func(r ask.ModelReply) ask.ModelReply { r.Usage = usage; return r }
	model := scripted{q: {reply(callTool("run_dataset", `{"dataset_id":"ds_signups_country"}`)), reply(say("The most is 3,410."))}}
	right := mustCase(t, byCountry+"  numbers: [3410]\n")
	wrong := mustCase(t, strings.Replace(byCountry, "id: c", "id: w", 1)+"  numbers: [3322]\n")
	wrong.Category = "other"
	rep, err := askeval.New(model, askeval.Demo, &askeval.Options{Runs: 2, Provider: "script",
		Prices: &askeval.Prices{Input: 1, Output: 10}}).Run(t.Context(), []askeval.Case{right, wrong})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(askeval.Tally{Cases: 2, Runs: 4, Passed: 2, PassRate: 0.5}, rep.Total); diff != "" {
		t.Errorf("total mismatch (-want +got):\n%s", diff)
	}
	wantCats := []askeval.CategoryResult{{Category: "test", Tally: askeval.Tally{Cases: 1, Runs: 2, Passed: 2, PassRate: 1}},
		{Category: "other", Tally: askeval.Tally{Cases: 1, Runs: 2, PassRate: 0}}}
	if diff := cmp.Diff(wantCats, rep.Categories); diff != "" {
		t.Errorf("categories mismatch (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(map[askeval.Reason]int{askeval.WrongNumber: 2}, rep.Reasons); diff != "" {
		t.Errorf("reasons mismatch (-want +got):\n%s", diff)
	}
	// Four runs of two model calls each.
	if want := (ask.Usage{InputTokens: 8 * 2100, CachedInputTokens: 8 * 2048, OutputTokens: 8 * 5}); rep.Usage != want {
		t.Errorf("usage %+v; want %+v", rep.Usage, want)
	}
	if rep.Cost == nil || math.Abs(*rep.Cost-(8*2100*1+8*5*10)/1e6) > 1e-12 {
		t.Errorf("cost %v; want 0.01720", rep.Cost)
	}
	if rep.Latency.P95MS < rep.Latency.P50MS || rep.Latency.P50MS <= 0 {
		t.Errorf("latency %+v", rep.Latency)
	}

	var js bytes.Buffer
	if err := rep.JSON(&js); err != nil {
		t.Fatal(err)
	}
	prev, err := askeval.ReadReport(&js)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(rep, prev, cmpEmpty); diff != "" {
		t.Errorf("the JSON read back differs (-want +got):\n%s", diff)
	}
	// Earlier, the right case failed once and the wrong one passed.
	prev.Cases[0].Tally.PassRate, prev.Cases[1].Tally.PassRate = 0.5, 1
	prev.Cases = append(prev.Cases, askeval.CaseResult{ID: "gone"})
	c := rep.CompareWith(prev, "before.json")
	want := &askeval.Comparison{Before: prev.Total, BeforeLabel: "before.json",
		Regressions:  []askeval.Change{{Case: "w", Before: 1, After: 0, Reasons: []askeval.Reason{askeval.WrongNumber}}},
		Improvements: []askeval.Change{{Case: "c", Before: 0.5, After: 1}},
		Removed:      []string{"gone"}}
	if diff := cmp.Diff(want, c); diff != "" {
		t.Errorf("comparison mismatch (-want +got):\n%s", diff)
	}
	var md bytes.Buffer
	if err := rep.Markdown(&md); err != nil {
		t.Fatal(err)
	}
	for _, line := range []string{
		"# Ask evaluation: 2 of 4 runs passed (50.0%)",
		"| test | 1 | 2 | 2 | 100.0% |",
		"| other | 1 | 2 | 0 | 0.0% |",
		"Cost: $0.0172",
		"- regression: w, 100.0% → 0.0% (wrong_number)",
		"- improvement: c, 50.0% → 100.0%",
		"| wrong_number | 2 |",
		"- **w** run 1: wrong_number: the answer does not state 3322.",
	} {
		if !strings.Contains(md.String(), line) {
			t.Errorf("the Markdown lacks %q:\n%s", line, md.String())
		}
	}
}

// TestNumbers: the numbers an answer states, however written.
func TestNumbers(t *testing.T) {
	q := "q"
	for _, tt := range []struct {
		answer string
		value  float64
		tol    float64
		stated bool
	}{
		{"It was 3410.", 3410, 0, true},
		{"It was 3,410 signups.", 3410, 0, true},
		{"MRR reached $62,350.00 in November.", 62350, 0, true},
		{"about 62.35k", 62350, 0, true},
		{"about 62k", 62350, 0, false},
		{"about 62k", 62350, 500, true},
		{"1.6 million", 1.6e6, 0, true},
		{"up 42%", 42, 0, true},
		{"a fall of -5", -5, 0, true},
		{"the week of 2026-11-23", 23, 0, false},
		{"the week of 2026-11-23", 2026, 0, true},
		{"version v3410", 3410, 0, false},
		{"no number here", 0, 0, false},
	} {
		c := mustCase(t, "id: n\ncategory: t\nquestion: q\nexpect: {numbers: [{value: "+ftoa(tt.value)+", tolerance: "+ftoa(tt.tol)+"}]}\n")
		run := mustRun(t, scripted{q: {say(tt.answer)}}, askeval.Demo, c)
		if run.Passed != tt.stated {
			t.Errorf("%q states %v ± %v: %v; want %v (%v)", tt.answer, tt.value, tt.tol, run.Passed, tt.stated, run.Failures)
		}
	}
}

func ftoa(f float64) string {
	return strings.TrimSuffix(strings.TrimRight(strings.TrimRight(strconvF(f), "0"), "."), ".")
}
