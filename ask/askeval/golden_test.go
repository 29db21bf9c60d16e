package askeval_test

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/askbi/askbi/ask"
	"github.com/askbi/askbi/ask/askeval"
	"github.com/askbi/askbi/ask/provider"
	"github.com/askbi/askbi/ask/provider/mock"
)

var update = flag.Bool("update", false, "rewrite testdata/mock-report.json (and the transcripts' replay report) with this run's")

// mockReport is the golden set's report on the demo model, as measured:
// what the README states and TestGoldenMock compares each run with.
const mockReport = "testdata/mock-report.json"

// TestGoldenMock runs the golden set against the demo model, the way CI
// does, and holds it to the measured report: a case that passes or
// fails otherwise than recorded fails the test, in either direction, so
// that the README's pass rate stays the measured one. After a change to
// the mock or the set, run
//
//	go test ./ask/askeval -run TestGoldenMock -update
//
// and write the new figures into the README's line and docs/evaluation.md.
func TestGoldenMock(t *testing.T) {
	cases, err := askeval.LoadCases(askeval.Golden, "golden")
	if err != nil {
		t.Fatal(err)
	}
	rep, err := askeval.New(mock.New(), askeval.Demo, &askeval.Options{Provider: "mock"}).Run(t.Context(), cases)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range rep.Cases {
		for _, run := range c.Runs {
			for _, f := range run.Failures {
				if strings.HasPrefix(f.Detail, "the gold did not run") {
					t.Errorf("%s: %s", c.ID, f.Detail)
				}
			}
		}
	}
	var md bytes.Buffer
	rep.Markdown(&md)
	t.Logf("the demo model on the golden set:\n%s", md.String())
	if *update {
		mustWriteReport(t, mockReport, rep)
	}
	f, err := os.Open(mockReport)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	prev, err := askeval.ReadReport(f)
	if err != nil {
		t.Fatal(err)
	}
	c := rep.CompareWith(prev, mockReport)
	for _, ch := range c.Regressions {
		t.Errorf("%s passes %.0f%% of its runs; it passed %.0f%% (%v)", ch.Case, 100*ch.After, 100*ch.Before, ch.Reasons)
	}
	for _, ch := range c.Improvements {
		t.Errorf("%s passes %.0f%% of its runs now; it passed %.0f%%: run with -update, and update the README", ch.Case, 100*ch.After, 100*ch.Before)
	}
	for _, id := range append(c.Added, c.Removed...) {
		t.Errorf("case %s is new or gone since %s: run with -update, and update the README", id, mockReport)
	}
	line := fmt.Sprintf("passes %d of its %d questions (%.1f%%)", rep.Total.Passed, rep.Total.Runs, 100*rep.Total.PassRate)
	for _, doc := range []string{"../../README.md", "../../docs/evaluation.md"} {
		b, err := os.ReadFile(doc)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(strings.Join(strings.Fields(string(b)), " "), line) {
			t.Errorf("%s does not state the demo model's measured pass rate: want %q in it", doc, line)
		}
	}
}

// mustWriteReport writes rep's JSON to name without its clock (start,
// duration, latencies), so that an unchanged outcome leaves the file
// unchanged.
func mustWriteReport(t *testing.T, name string, rep *askeval.Report) {
	t.Helper()
	r := *rep
	r.Started, r.DurationMS, r.Latency, r.Compared = time.Time{}, 0, askeval.Latency{}, nil
	r.Cases = append([]askeval.CaseResult(nil), rep.Cases...)
	for i := range r.Cases {
		r.Cases[i].Runs = append([]askeval.RunResult(nil), r.Cases[i].Runs...)
		for j := range r.Cases[i].Runs {
			r.Cases[i].Runs[j].LatencyMS = 0
		}
	}
	var b bytes.Buffer
	if err := r.JSON(&b); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Dir(name), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(name, b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestGoldenLive runs the golden set against a real model when its key
// is in the environment: OPENAI_API_KEY (model ASKBI_EVAL_OPENAI_MODEL,
// default gpt-4o-mini; OPENAI_BASE_URL for a compatible server) or
// ANTHROPIC_API_KEY (ASKBI_EVAL_ANTHROPIC_MODEL, default
// claude-sonnet-4-5), ASKBI_EVAL_RUNS times (default 1). It reports the
// pass rate; it fails only when the evaluation could not run, since how
// well a model answers is what it measures, not a defect. Without a
// key it skips, loudly.
func TestGoldenLive(t *testing.T) {
	if testing.Short() {
		t.Skip("calls a model")
	}
	var configs []provider.Config
	if os.Getenv("OPENAI_API_KEY") != "" {
		configs = append(configs, provider.Config{Name: "openai", Model: envOr("ASKBI_EVAL_OPENAI_MODEL", "gpt-4o-mini"), BaseURL: os.Getenv("OPENAI_BASE_URL")})
	}
	if os.Getenv("ANTHROPIC_API_KEY") != "" {
		configs = append(configs, provider.Config{Name: "anthropic", Model: envOr("ASKBI_EVAL_ANTHROPIC_MODEL", "claude-sonnet-4-5")})
	}
	if len(configs) == 0 {
		t.Skip("SKIPPING the golden set against a real model: neither OPENAI_API_KEY nor ANTHROPIC_API_KEY is set; " +
			"no result is made up in their place (the demo model's run is TestGoldenMock)")
	}
	cases, err := askeval.LoadCases(askeval.Golden, "golden")
	if err != nil {
		t.Fatal(err)
	}
	runs := 1
	fmt.Sscan(os.Getenv("ASKBI_EVAL_RUNS"), &runs)
	for _, cfg := range configs {
		t.Run(cfg.Name, func(t *testing.T) {
			var p ask.Provider
			if p, err = provider.New(cfg); err != nil {
				t.Fatal(err)
			}
			rep, err := askeval.New(p, askeval.Demo, &askeval.Options{Runs: runs, Parallel: 4, Provider: cfg.String()}).Run(t.Context(), cases)
			if err != nil {
				t.Fatal(err)
			}
			var md bytes.Buffer
			rep.Markdown(&md)
			t.Logf("%s on the golden set:\n%s", cfg, md.String())
			if dir := os.Getenv("ASKBI_EVAL_REPORT_DIR"); dir != "" {
				mustWriteReport(t, filepath.Join(dir, cfg.Name+".json"), rep)
			}
		})
	}
}

func envOr(name, def string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return def
}
