package askeval_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/askbi/askbi"
	"github.com/askbi/askbi/ask"
	"github.com/askbi/askbi/ask/askeval"
)

// scripted is a model that answers each turn's calls from a script: the
// replies to the message its turn began with, one per step.
type scripted map[string][]ask.ModelReply

func (s scripted) Complete(_ context.Context, req ask.ModelRequest, onText func(string)) (ask.ModelReply, error) {
	last, step := "", 0
	for _, m := range req.Messages {
		switch m.Role {
		case ask.RoleUser:
			last, step = m.Text, 0
		case ask.RoleAssistant:
			step++
		}
	}
	for msg, replies := range s {
		if strings.HasSuffix(last, msg) && step < len(replies) {
			if r := replies[step]; r.Text != "" && onText != nil {
				onText(r.Text)
			}
			return replies[step], nil
		}
	}
	return ask.ModelReply{}, askbi.Errorf(askbi.Unavailable, "the script has no reply %d to %q", step+1, last)
}

func callTool(name, args string) ask.ModelReply {
	return ask.ModelReply{ToolCalls: []ask.ToolCall{{ID: "c1", Name: name, Arguments: json.RawMessage(args)}}}
}

func say(text string) ask.ModelReply { return ask.ModelReply{Text: text} }

// down is a model that is not there.
type down struct{}

func (down) Complete(context.Context, ask.ModelRequest, func(string)) (ask.ModelReply, error) {
	return ask.ModelReply{}, askbi.Errorf(askbi.Unavailable, "the model could not be reached")
}

// mustCase parses one case written as YAML.
func mustCase(t *testing.T, yaml string) askeval.Case {
	t.Helper()
	cases, err := askeval.ParseCases("case.yaml", []byte(yaml))
	if err != nil {
		t.Fatal(err)
	}
	if len(cases) != 1 {
		t.Fatalf("%d cases; want 1", len(cases))
	}
	return cases[0]
}

// mustRun runs c once with model on open, and returns its run.
func mustRun(t *testing.T, model ask.Provider, open askeval.Open, c askeval.Case) askeval.RunResult {
	t.Helper()
	rep, err := askeval.New(model, open, nil).Run(t.Context(), []askeval.Case{c})
	if err != nil {
		t.Fatal(err)
	}
	return rep.Cases[0].Runs[0]
}

func reasons(run askeval.RunResult) []askeval.Reason {
	out := []askeval.Reason{}
	for _, f := range run.Failures {
		out = append(out, f.Reason)
	}
	return out
}

// byCountry is a question about Signups by country (US 3410, DE 3322,
// BR 3305, FR 3251, JP 3190), with its gold.
const byCountry = `
id: c
category: test
question: How many signups did each country have?
expect:
  datasets: [ds_signups_country]
  breakdown: country
  gold: {dataset: ds_signups_country}
`

// TestReasons: each reason is given for what it names, and only then.
// The model is scripted, so each run does exactly what its row says.
func TestReasons(t *testing.T) {
	q := "How many signups did each country have?"
	run := func(args string) ask.ModelReply { return callTool("run_dataset", args) }
	for _, tt := range []struct {
		name  string
		yaml  string
		model ask.Provider
		want  []askeval.Reason
	}{
		{"a right answer", byCountry + "  numbers: [3410]\n",
			scripted{q: {run(`{"dataset_id":"ds_signups_country"}`), say("The US leads with 3,410.")}}, nil},
		{"a right answer from a preview's data", byCountry,
			scripted{q: {callTool("create_chart_preview", `{"dataset_id":"ds_signups_country","chart_type":"bar","x_field":"country","y_fields":["signups"],"name":"By country"}`), say("Here it is.")}}, nil},
		{"another dataset", "id: c\ncategory: test\nquestion: " + q + "\nexpect: {datasets: [ds_signups_country]}\n",
			scripted{q: {run(`{"dataset_id":"ds_weekly_signups"}`), say("Here.")}}, []askeval.Reason{askeval.WrongDataset}},
		{"no rows", byCountry,
			scripted{q: {run(`{"dataset_id":"ds_signups_country","filters":[{"field":"country","op":"eq","value":"XX"}]}`), say("None.")}},
			[]askeval.Reason{askeval.EmptyResult}},
		{"rows left out", byCountry,
			scripted{q: {run(`{"dataset_id":"ds_signups_country","filters":[{"field":"country","op":"in","value":["US","DE"]}]}`), say("Two.")}},
			[]askeval.Reason{askeval.MissingRows}},
		{"rows too many", strings.Replace(byCountry, "gold: {dataset: ds_signups_country}", `gold: {dataset: ds_signups_country, filters: [{field: country, op: in, value: [FR, DE]}]}`, 1),
			scripted{q: {run(`{"dataset_id":"ds_signups_country"}`), say("Five.")}},
			[]askeval.Reason{askeval.ExtraRows}},
		{"a gold column missing", strings.Replace(byCountry, "datasets: [ds_signups_country]\n  breakdown: country\n", "", 1),
			scripted{q: {run(`{"dataset_id":"ds_weekly_signups"}`), say("Here.")}},
			[]askeval.Reason{askeval.WrongColumns}},
		{"a wrong number", byCountry + "  numbers: [3410]\n",
			scripted{q: {run(`{"dataset_id":"ds_signups_country"}`), say("The US leads with 3,400.")}},
			[]askeval.Reason{askeval.WrongNumber}},
		{"a number within its tolerance", byCountry + "  numbers: [{value: 3410, tolerance: 10}]\n",
			scripted{q: {run(`{"dataset_id":"ds_signups_country"}`), say("The US leads with about 3.4k.")}}, nil},
		{"a filter that does not hold", byCountry + "  filters: [{field: country, op: in, value: [FR, DE]}]\n",
			scripted{q: {run(`{"dataset_id":"ds_signups_country","filters":[{"field":"country","op":"in","value":["FR"]}]}`), say("France.")}},
			[]askeval.Reason{askeval.WrongFilters, askeval.MissingRows}},
		{"a filter in another order", byCountry + "  filters: [{field: country, op: in, value: [FR, DE]}]\n",
			scripted{q: {run(`{"dataset_id":"ds_signups_country","filters":[{"field":"country","op":"in","value":["DE","FR"]}]}`), say("Two.")}},
			[]askeval.Reason{askeval.MissingRows}},
		{"a filter saved on the dataset", "id: c\ncategory: test\nquestion: " + q + "\nexpect: {filters: [{field: country, op: in, value: [FR, DE]}]}\n",
			scripted{q: {run(`{"dataset_id":"ds_signups_eu","filters":[{"field":"country","op":"in","value":["DE","FR"]}]}`), say("Two.")}}, nil},
		{"another breakdown", "id: c\ncategory: test\nquestion: " + q + "\nexpect: {breakdown: country}\n",
			scripted{q: {callTool("create_chart_preview", `{"dataset_id":"ds_weekly_signups","chart_type":"line","x_field":"week","y_fields":["signups"],"name":"Weekly"}`), say("Here.")}},
			[]askeval.Reason{askeval.WrongBreakdown}},
		{"another chart type", byCountry + "  chart_type: bar\n",
			scripted{q: {callTool("create_chart_preview", `{"dataset_id":"ds_signups_country","chart_type":"line","x_field":"country","y_fields":["signups"],"name":"By country"}`), say("Here.")}},
			[]askeval.Reason{askeval.WrongChart}},
		{"an approval nobody needed", byCountry,
			scripted{q: {run(`{"dataset_id":"ds_signups_country"}`), callTool("delete_dashboard", `{"dashboard_id":"dash_revenue"}`)}},
			[]askeval.Reason{askeval.NeedlessApproval}},
		{"an approval that was not asked", "id: c\ncategory: test\nquestion: delete the Revenue dashboard\nexpect: {approval: true}\n",
			scripted{"delete the Revenue dashboard": {say("Deleted.")}}, []askeval.Reason{askeval.MissingApproval}},
		{"no data read", byCountry,
			scripted{q: {say("I cannot help with that.")}}, []askeval.Reason{askeval.Refused}},
		{"no data read, as the tool failed", byCountry,
			scripted{q: {run(`{"dataset_id":"ds_nope"}`), say("It failed.")}}, []askeval.Reason{askeval.Error}},
		{"a model that is down", byCountry, down{}, []askeval.Reason{askeval.Error}},
		{"tools that must and must not run", "id: c\ncategory: test\nquestion: " + q + "\nexpect: {run: [list_connections], not_run: [run_dataset]}\n",
			scripted{q: {run(`{"dataset_id":"ds_signups_country"}`), say("Here.")}},
			[]askeval.Reason{askeval.MissingTool, askeval.ForbiddenTool}},
		{"a word not said", "id: c\ncategory: test\nquestion: " + q + "\nexpect: {mentions: [DE]}\n",
			scripted{q: {say("That does not depend on the dataset.")}}, []askeval.Reason{askeval.MissingMention}},
		{"a word said", "id: c\ncategory: test\nquestion: " + q + "\nexpect: {mentions: [DE]}\n",
			scripted{q: {say("Germany (DE) is second.")}}, nil},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got := mustRun(t, tt.model, askeval.Demo, mustCase(t, tt.yaml))
			if diff := cmp.Diff(tt.want, reasons(got), cmpEmpty); diff != "" {
				t.Errorf("reasons mismatch (-want +got):\n%s\nfailures: %+v\ntools: %v", diff, got.Failures, got.Tools)
			}
			if got.Passed != (len(tt.want) == 0) {
				t.Errorf("Passed = %v with failures %v", got.Passed, got.Failures)
			}
		})
	}
}
