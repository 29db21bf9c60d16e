package askeval_test

import (
	"context"
	"strings"
	"sync"
	"testing"

	"github.com/askbi/askbi"
	"github.com/askbi/askbi/ask"
	"github.com/askbi/askbi/ask/askeval"
	"github.com/askbi/askbi/ask/provider/mock"
)

// keep is an Open of the demo workspace that keeps the workspaces it
// opened, so a test can look at what a run left.
type keep struct {
	mu      sync.Mutex
	opened  []*askeval.Workspace
	sharing ask.Sharing
}

func (k *keep) open(ctx context.Context) (*askeval.Workspace, error) {
	ws, err := askeval.Demo(ctx)
	if err != nil {
		return nil, err
	}
	if k.sharing != "" {
		ws.Options.Sharing = ask.StaticSharing(k.sharing)
	}
	k.mu.Lock()
	k.opened = append(k.opened, ws)
	k.mu.Unlock()
	return ws, nil
}

// TestOnApproval: a case's approval is given, refused or left waiting
// for real: the dashboard is deleted only when the case approves, and
// each run starts on a workspace where it still exists.
func TestOnApproval(t *testing.T) {
	q := "delete the Revenue dashboard"
	model := scripted{q: {callTool("delete_dashboard", `{"dashboard_id":"dash_revenue"}`), say("Deleted the Revenue dashboard.")}}
	for _, tt := range []struct {
		on      askeval.OnApproval
		deleted bool
		want    []askeval.Reason
	}{
		{askeval.Approve, true, nil},
		{askeval.Reject, false, []askeval.Reason{askeval.MissingTool}},
		{askeval.Wait, false, []askeval.Reason{askeval.MissingTool}},
	} {
		t.Run(string(tt.on), func(t *testing.T) {
			k := &keep{}
			c := mustCase(t, "id: d\ncategory: approval\nquestion: "+q+"\non_approval: "+string(tt.on)+"\nexpect: {approval: true, run: [delete_dashboard]}\n")
			rep, err := askeval.New(model, k.open, &askeval.Options{Runs: 2}).Run(t.Context(), []askeval.Case{c})
			if err != nil {
				t.Fatal(err)
			}
			if len(k.opened) != 2 {
				t.Fatalf("%d workspaces opened for 2 runs", len(k.opened))
			}
			for i, ws := range k.opened {
				_, err := ws.Catalog.Dashboard(t.Context(), "dash_revenue")
				if deleted := askbi.ErrorCode(err) == askbi.NotFound; deleted != tt.deleted {
					t.Errorf("run %d: the dashboard deleted = %v (%v); want %v", i, deleted, err, tt.deleted)
				}
			}
			for _, run := range rep.Cases[0].Runs {
				if got := reasons(run); !sameReasons(got, tt.want) {
					t.Errorf("run %d: reasons %v; want %v (%+v)", run.Run, got, tt.want, run.Failures)
				}
			}
		})
	}
}

func sameReasons(a, b []askeval.Reason) bool {
	return strings.Join(reasonStrings(a), ",") == strings.Join(reasonStrings(b), ",")
}

func reasonStrings(rs []askeval.Reason) []string {
	out := []string{}
	for _, r := range rs {
		out = append(out, string(r))
	}
	return out
}

// TestDetailsFollowSharing: a failure names the host's rows only where
// the sharing level shares rows with the model.
func TestDetailsFollowSharing(t *testing.T) {
	q := "How many signups did each country have?"
	// The model reads Brazil and Japan; the gold is France and Germany.
	model := scripted{q: {callTool("run_dataset", `{"dataset_id":"ds_signups_country","filters":[{"field":"country","op":"in","value":["BR","JP"]}]}`), say("Two.")}}
	c := mustCase(t, "id: c\ncategory: t\nquestion: "+q+"\nexpect: {gold: {dataset: ds_signups_eu}}\n")
	for _, tt := range []struct {
		level ask.Sharing
		shown bool
	}{{ask.SharingSchema, false}, {ask.SharingAggregates, false}, {ask.SharingRows, true}} {
		k := &keep{sharing: tt.level}
		run := mustRun(t, model, k.open, c)
		var details []string
		for _, f := range run.Failures {
			details = append(details, f.Detail)
		}
		text := strings.Join(details, " ")
		if !sameReasons(reasons(run), []askeval.Reason{askeval.MissingRows, askeval.ExtraRows}) {
			t.Fatalf("%s: reasons %v; want missing and extra rows", tt.level, reasons(run))
		}
		for _, cellText := range []string{"3305", "BR", "3322", "DE"} {
			if strings.Contains(text, cellText) != tt.shown {
				t.Errorf("%s: the details %q show %s: %v; want %v", tt.level, text, cellText, !tt.shown, tt.shown)
			}
		}
	}
}

// judgeSpy is a model that judges: it answers verdict and keeps what it
// was asked.
type judgeSpy struct {
	mu      sync.Mutex
	verdict string
	asked   []string
}

func (j *judgeSpy) Complete(_ context.Context, req ask.ModelRequest, _ func(string)) (ask.ModelReply, error) {
	j.mu.Lock()
	defer j.mu.Unlock()
	for _, m := range req.Messages {
		j.asked = append(j.asked, m.Text)
	}
	return ask.ModelReply{Text: j.verdict}, nil
}

// TestJudge: the judge is shown the tool output as the model was, at
// the sharing level (aggregates: no country's own figure), and can only
// add a failure.
func TestJudge(t *testing.T) {
	q := "How many signups did each country have?"
	model := scripted{q: {callTool("run_dataset", `{"dataset_id":"ds_signups_country"}`), say("The most is 3,410.")}}
	pass := mustCase(t, byCountry+"  numbers: [3410]\n")
	wrong := mustCase(t, byCountry+"  numbers: [3322]\n")
	for _, tt := range []struct {
		name    string
		c       askeval.Case
		verdict string
		level   ask.Sharing
		want    []askeval.Reason
		judge   string
	}{
		{"a failing judge fails a passing run", pass, "FAIL: it names no country.", ask.SharingAggregates, []askeval.Reason{askeval.Judged}, "fail: it names no country."},
		{"a passing judge keeps a failed run failed", wrong, "**PASS** fine", ask.SharingAggregates, []askeval.Reason{askeval.WrongNumber}, "pass: fine"},
		{"an unclear judge changes nothing", pass, "Maybe.", ask.SharingAggregates, nil, "unclear: the judge's reply does not start with PASS or FAIL"},
		{"the judge sees rows where the model does", pass, "PASS", ask.SharingRows, nil, "pass: "},
	} {
		t.Run(tt.name, func(t *testing.T) {
			spy := &judgeSpy{verdict: tt.verdict}
			k := &keep{sharing: tt.level}
			rep, err := askeval.New(model, k.open, &askeval.Options{Judge: askeval.ModelJudge(spy)}).Run(t.Context(), []askeval.Case{tt.c})
			if err != nil {
				t.Fatal(err)
			}
			run := rep.Cases[0].Runs[0]
			if !sameReasons(reasons(run), tt.want) || run.Judge != tt.judge {
				t.Errorf("reasons %v, judge %q; want %v, %q", reasons(run), run.Judge, tt.want, tt.judge)
			}
			asked := strings.Join(spy.asked, "\n")
			if !strings.Contains(asked, q) || !strings.Contains(asked, "The most is 3,410.") {
				t.Errorf("the judge was not shown the question and the answer:\n%s", asked)
			}
			// Brazil's 3305 is a row: no aggregate (min 3190, max 3410,
			// sum 16478) holds it.
			if shown := strings.Contains(asked, "3305"); shown != (tt.level == ask.SharingRows) {
				t.Errorf("at %s the judge was shown Brazil's row: %v\n%s", tt.level, shown, asked)
			}
		})
	}
}

// TestRunNeedsItsPrincipal: a case naming a principal the workspace
// lacks stops the run: it is the set's fault, not the model's.
func TestRunNeedsItsPrincipal(t *testing.T) {
	c := mustCase(t, "id: c\ncategory: t\nas: mallory\nquestion: hi\nexpect: {run: [t]}\n")
	_, err := askeval.New(scripted{}, askeval.Demo, nil).Run(t.Context(), []askeval.Case{c})
	if askbi.ErrorCode(err) != askbi.InvalidArgument || !strings.Contains(askbi.ErrorMessage(err), "mallory") {
		t.Errorf("Run = %v; want invalid_argument naming mallory", err)
	}
}

// TestParallel: runs at once score as runs one after the other.
func TestParallel(t *testing.T) {
	cases, err := askeval.LoadCases(askeval.Golden, "golden")
	if err != nil {
		t.Fatal(err)
	}
	one, err := askeval.New(mock.New(), askeval.Demo, nil).Run(t.Context(), cases)
	if err != nil {
		t.Fatal(err)
	}
	many, err := askeval.New(mock.New(), askeval.Demo, &askeval.Options{Runs: 2, Parallel: 4}).Run(t.Context(), cases)
	if err != nil {
		t.Fatal(err)
	}
	for i, c := range one.Cases {
		for _, run := range many.Cases[i].Runs {
			if !sameReasons(reasons(run), reasons(c.Runs[0])) {
				t.Errorf("%s run %d: %v; one at a time %v", c.ID, run.Run, reasons(run), reasons(c.Runs[0]))
			}
		}
	}
}
