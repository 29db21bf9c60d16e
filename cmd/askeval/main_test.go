package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/askbi/askbi/ask/askeval"
)

// TestRun: the command prints the report of the cases it was given,
// writes its JSON, and with -fail-on-regression fails when a case
// passes less often than in an earlier report.
func TestRun(t *testing.T) {
	dir := t.TempDir()
	cases := filepath.Join(dir, "cases")
	if err := os.Mkdir(cases, 0o755); err != nil {
		t.Fatal(err)
	}
	yaml := "- id: by-week\n  category: trend\n  question: show signups by week\n  expect:\n    datasets: [ds_weekly_signups]\n    gold: {dataset: ds_weekly_signups}\n" +
		"- id: by-nothing\n  category: trend\n  question: hello\n  expect:\n    datasets: [ds_mrr]\n"
	if err := os.WriteFile(filepath.Join(cases, "c.yaml"), []byte(yaml), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "r.json")
	var md bytes.Buffer
	if err := run(t.Context(), []string{"-cases", cases, "-provider", "mock", "-json", out}, &md); err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(md.String(), "# Ask evaluation: 1 of 2 runs passed (50.0%)") {
		t.Errorf("report starts %q", strings.SplitN(md.String(), "\n", 2)[0])
	}
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	var rep askeval.Report
	if err := json.Unmarshal(b, &rep); err != nil {
		t.Fatal(err)
	}
	// The earlier run passed the case that fails now.
	rep.Cases[1].Tally.PassRate = 1
	prev := filepath.Join(dir, "prev.json")
	b, _ = json.Marshal(rep)
	if err := os.WriteFile(prev, b, 0o644); err != nil {
		t.Fatal(err)
	}
	md.Reset()
	err = run(t.Context(), []string{"-cases", cases, "-compare", prev, "-fail-on-regression"}, &md)
	if err == nil || !strings.Contains(err.Error(), "1 of 2 cases regressed") {
		t.Errorf("run = %v; want a regression", err)
	}
	if !strings.Contains(md.String(), "- regression: by-nothing, 100.0% → 0.0% (refused)") {
		t.Errorf("the report does not show the regression:\n%s", md.String())
	}
	if err := run(t.Context(), []string{"-cases", cases, "-provider", "gemini"}, &md); err == nil || !strings.Contains(err.Error(), "must be mock, openai or anthropic") {
		t.Errorf("an unknown provider: %v", err)
	}
}
