package openai_test

import (
	"encoding/json"
	"flag"
	"net/http"
	"os"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/askbi/askbi/ask"
	"github.com/askbi/askbi/ask/askeval"
	"github.com/askbi/askbi/ask/provider/internal/providertest"
)

var updateTranscripts = flag.Bool("update-transcripts", false, "rewrite ask/askeval/testdata/transcripts from TestEvalTranscripts")

// transcripts is where ask/askeval's replay test reads the transcripts.
const transcripts = "../../askeval/testdata/transcripts"

// transcriptSource names where the replies came from, in each file.
const transcriptSource = "hand-written replies (not a model's), served as chat completion chunks by the fake server of " +
	"ask/provider/internal/providertest and read by ask/provider/openai: TestEvalTranscripts"

// fakeModel is what the fake server answers, by golden case question
// and step of its turn: a model that answers one case right and gets
// the others wrong in a way each, written by hand so that the scoring
// of ask/askeval has a model's whole answers to replay offline.
var fakeModel = map[string][][]providertest.Step{
	// Right: the country dataset, and the maximum the aggregates show.
	"Which country has the most signups?": {
		{providertest.Call(0, "call_1", "search_workspace"), providertest.Args(0, `{"query":"signups by country",`), providertest.Args(0, `"types":["dataset"]}`)},
		{providertest.Call(0, "call_2", "run_dataset"), providertest.Args(0, `{"dataset_id":"ds_signups_country"}`)},
		{providertest.Text("The top country has 3,410 signups, the most of the 5 countries; "), providertest.Text("the rows are not shared with me, so open the dataset to see which one.")},
	},
	// A wrong number: November's MRR misread.
	"How does MRR in November compare with January?": {
		{providertest.Call(0, "call_1", "run_dataset"), providertest.Args(0, `{"dataset_id":"ds_mrr"}`)},
		{providertest.Text("MRR grew from 43,850 in January to 62,000 in November.")},
	},
	// No filter: every country, where France and Germany were asked.
	"show signups by country for France and Germany only": {
		{providertest.Call(0, "call_1", "run_dataset"), providertest.Args(0, `{"dataset_id":"ds_signups_country"}`)},
		{providertest.Call(0, "call_2", "create_chart_preview"),
			providertest.Args(0, `{"dataset_id":"ds_signups_country","chart_type":"bar","x_field":"country","y_fields":["signups"],"name":"Signups by country"}`)},
		{providertest.Text("Here are signups by country.")},
	},
	// A needless approval: the saved MRR chart changed for a question.
	"show MRR by month": {
		{providertest.Call(0, "call_1", "run_dataset"), providertest.Args(0, `{"dataset_id":"ds_mrr"}`)},
		{providertest.Call(0, "call_2", "update_chart"), providertest.Args(0, `{"chart_id":"chart_mrr","chart_type":"bar"}`)},
	},
	// A refusal.
	"What was our best week for signups?": {
		{providertest.Text("I cannot see your signup data.")},
	},
}

// sameJSON compares tool arguments as JSON values: the files indent
// them.
var sameJSON = cmp.Comparer(func(a, b json.RawMessage) bool {
	var x, y any
	return json.Unmarshal(a, &x) == nil && json.Unmarshal(b, &y) == nil && cmp.Equal(x, y)
})

// TestEvalTranscripts records ask/askeval transcripts of five golden
// cases through the openai provider, from the fake server answering as
// fakeModel, and checks them against the saved ones: the replies the
// replay test of ask/askeval scores offline are what this provider
// makes of the chunks, usage included. -update-transcripts rewrites
// them.
func TestEvalTranscripts(t *testing.T) {
	golden, err := askeval.LoadCases(askeval.Golden, "golden")
	if err != nil {
		t.Fatal(err)
	}
	var cases []askeval.Case
	for _, c := range golden {
		if _, ok := fakeModel[c.Question]; ok {
			cases = append(cases, c)
		}
	}
	if len(cases) != len(fakeModel) {
		t.Fatalf("%d golden cases ask fakeModel's %d questions", len(cases), len(fakeModel))
	}
	var srv *providertest.Server
	p, srv := providertest.MustProvider(t, wire, func(w http.ResponseWriter, r *http.Request) {
		var body struct {
			Messages []struct {
				Role    string `json:"role"`
				Content any    `json:"content"`
			} `json:"messages"`
		}
		b, _ := json.Marshal(srv.Body(srv.Count() - 1))
		json.Unmarshal(b, &body)
		question, step := "", 0
		for _, m := range body.Messages {
			switch m.Role {
			case "user":
				question, step = "", 0
				if s, ok := m.Content.(string); ok {
					question = s
				}
			case "assistant":
				step++
			}
		}
		for q, steps := range fakeModel {
			if strings.HasSuffix(question, q) && step < len(steps) {
				providertest.Stream(events(true, steps[step]...)...)(w, r)
				return
			}
		}
		t.Errorf("the fake model has no reply %d to %q", step+1, question)
		http.Error(w, `{"error":{"message":"no reply"}}`, http.StatusBadRequest)
	}, providertest.Options{})
	rec := askeval.NewRecorder(p, transcriptSource)
	if _, err := askeval.New(rec, askeval.Demo, nil).Run(t.Context(), cases); err != nil {
		t.Fatal(err)
	}
	got := rec.Transcripts()
	if *updateTranscripts {
		if err := askeval.WriteTranscripts(transcripts, got); err != nil {
			t.Fatal(err)
		}
	}
	want, err := askeval.LoadTranscripts(os.DirFS(transcripts), ".")
	if err != nil {
		t.Fatal(err)
	}
	// A saved transcript holds no finish reasons (ModelReply does not
	// serialize them).
	if diff := cmp.Diff(want, got, sameJSON, cmpopts.IgnoreFields(ask.ModelReply{}, "FinishReason")); diff != "" {
		t.Errorf("the recorded transcripts differ from %s (-saved +recorded); run with -update-transcripts if that is meant:\n%s", transcripts, diff)
	}
}
