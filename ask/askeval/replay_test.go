package askeval_test

import (
	"os"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/askbi/askbi/ask"
	"github.com/askbi/askbi/ask/askeval"
	"github.com/askbi/askbi/ask/provider/mock"
)

// goldenCases are the golden set's cases with the IDs given.
func goldenCases(t *testing.T, ids ...string) []askeval.Case {
	t.Helper()
	all, err := askeval.LoadCases(askeval.Golden, "golden")
	if err != nil {
		t.Fatal(err)
	}
	var out []askeval.Case
	for _, c := range all {
		for _, id := range ids {
			if c.ID == id {
				out = append(out, c)
			}
		}
	}
	if len(out) != len(ids) {
		t.Fatalf("%d of the golden cases %v", len(out), ids)
	}
	return out
}

// TestReplayTranscripts scores, offline, the saved replies of
// testdata/transcripts: recorded through the openai provider from the
// fake server of the provider tests answering by hand
// (ask/provider/openai TestEvalTranscripts), not a real model's. Each
// case is scored as its replies deserve, and the tokens they report
// are the report's.
func TestReplayTranscripts(t *testing.T) {
	ts, err := askeval.LoadTranscripts(os.DirFS("testdata/transcripts"), ".")
	if err != nil {
		t.Fatal(err)
	}
	want := map[string][]askeval.Reason{
		"top-country":              {},
		"compare-mrr-jan-nov":      {askeval.WrongNumber},
		"breakdown-france-germany": {askeval.WrongFilters, askeval.ExtraRows},
		"trend-mrr-by-month":       {askeval.NeedlessApproval},
		"top-week":                 {askeval.Refused},
	}
	var ids []string
	for _, tr := range ts {
		ids = append(ids, tr.Case)
		if !strings.Contains(tr.Source, "not a model's") {
			t.Errorf("%s: the source %q does not say the replies are hand-written", tr.Case, tr.Source)
		}
	}
	rep, err := askeval.New(askeval.NewReplay(ts), askeval.Demo, &askeval.Options{Runs: 2, Prices: &askeval.Prices{Input: 1, Output: 10}}).
		Run(t.Context(), goldenCases(t, ids...))
	if err != nil {
		t.Fatal(err)
	}
	got := map[string][]askeval.Reason{}
	for _, c := range rep.Cases {
		for _, run := range c.Runs {
			got[c.ID] = reasons(run)
		}
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("reasons mismatch (-want +got):\n%s", diff)
	}
	// Every reply reports 2,100 input tokens (2,048 cached) and 5 out:
	// 11 replies, each replayed twice.
	if want := (ask.Usage{InputTokens: 22 * 2100, CachedInputTokens: 22 * 2048, OutputTokens: 22 * 5}); rep.Usage != want {
		t.Errorf("usage %+v; want %+v", rep.Usage, want)
	}
	if rep.Cost == nil || *rep.Cost <= 0 {
		t.Errorf("cost %v; want one", rep.Cost)
	}
}

// TestReplayNeverMakesUp: a call the transcripts do not cover fails the
// run with an error; nothing is invented in its place.
func TestReplayNeverMakesUp(t *testing.T) {
	c := goldenCases(t, "top-week")[0]
	for name, ts := range map[string][]askeval.Transcript{
		"no transcript":   nil,
		"another message": {{Case: c.ID, Turns: []askeval.TranscriptTurn{{Message: "something else", Replies: []ask.ModelReply{{Text: "1629"}}}}}},
		"too few replies": {{Case: c.ID, Turns: []askeval.TranscriptTurn{{Message: c.Question, Replies: []ask.ModelReply{
			{ToolCalls: []ask.ToolCall{{ID: "x", Name: "run_dataset", Arguments: []byte(`{"dataset_id":"ds_weekly_signups"}`)}}}}}}}},
	} {
		run := mustRun(t, askeval.NewReplay(ts), askeval.Demo, c)
		if !sameReasons(reasons(run), []askeval.Reason{askeval.Error}) || !strings.Contains(run.Failures[0].Detail, "replay:") {
			t.Errorf("%s: failures %+v; want a replay error", name, run.Failures)
		}
	}
}

// TestRecordThenReplay: what a Recorder saves of a model, Replay plays
// back to the same scores, the model's private reasoning left out.
func TestRecordThenReplay(t *testing.T) {
	cases := goldenCases(t, "trend-weekly-signups", "followup-by-country", "approval-delete-approved", "top-country")
	rec := askeval.NewRecorder(mock.New(), "mock")
	first, err := askeval.New(rec, askeval.Demo, nil).Run(t.Context(), cases)
	if err != nil {
		t.Fatal(err)
	}
	ts := rec.Transcripts()
	dir := t.TempDir()
	if err := askeval.WriteTranscripts(dir, ts); err != nil {
		t.Fatal(err)
	}
	for _, tr := range ts {
		for _, turn := range tr.Turns {
			for _, r := range turn.Replies {
				if r.Reasoning != "" {
					t.Errorf("%s: a reply's reasoning was kept", tr.Case)
				}
			}
		}
	}
	b, _ := os.ReadFile(dir + "/trend-weekly-signups.json")
	if strings.Contains(string(b), mock.ReasoningMarker) {
		t.Errorf("the transcript holds the model's reasoning:\n%s", b)
	}
	loaded, err := askeval.LoadTranscripts(os.DirFS(dir), ".")
	if err != nil {
		t.Fatal(err)
	}
	again, err := askeval.New(askeval.NewReplay(loaded), askeval.Demo, nil).Run(t.Context(), cases)
	if err != nil {
		t.Fatal(err)
	}
	for i := range cases {
		a, b := first.Cases[i].Runs[0], again.Cases[i].Runs[0]
		if !sameReasons(reasons(a), reasons(b)) || a.Answer != b.Answer || strings.Join(a.Tools, ",") != strings.Join(b.Tools, ",") {
			t.Errorf("%s: recorded %v %v %q, replayed %v %v %q", cases[i].ID, reasons(a), a.Tools, a.Answer, reasons(b), b.Tools, b.Answer)
		}
	}
}
