package dataexec_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/askbi/askbi"
	"github.com/askbi/askbi/access"
	"github.com/askbi/askbi/dataexec"
	"github.com/askbi/askbi/workspace/workspacetest"
)

// TestActionChecks: an action's Check refuses what its Run refuses before
// it touches data, with the same code, and reads only: no query runs, nothing
// changes, nothing is audited. Adapters rely on this to refuse a change
// before they propose it.
func TestActionChecks(t *testing.T) {
	both := func(p access.Principal, e *env, c func(*dataexec.Executor, context.Context, access.Principal) error,
		r func(*dataexec.Executor, context.Context, access.Principal) error) (error, error) {
		live, err := e.exec.gate.Begin(ctx, p)
		if err != nil {
			t.Fatal(err)
		}
		before, runs, audited := searchAll(t, e), e.calls(), len(e.audit.Entries())
		checked := c(e.exec.x, ctx, live)
		if ran := e.calls() - runs; ran != 0 {
			t.Errorf("Check ran %d queries", ran)
		}
		if diff := cmp.Diff(before, searchAll(t, e), workspacetest.CmpOptions); diff != "" {
			t.Errorf("Check changed the workspace (-before +after):\n%s", diff)
		}
		if n := len(e.audit.Entries()) - audited; n != 0 {
			t.Errorf("Check wrote %d audit entries", n)
		}
		return checked, r(e.exec.x, ctx, live)
	}
	update := func(in dataexec.ChartChange) check { return checkAndRun(both, dataexec.UpdateChartAction, in) }
	place := func(in dataexec.Placement) check { return checkAndRun(both, dataexec.PlaceChartAction, in) }
	remove := func(in dataexec.DashboardRef) check { return checkAndRun(both, dataexec.DeleteDashboardAction, in) }
	for _, tc := range []struct {
		name string
		p    access.Principal
		call check
		want askbi.Code
	}{
		{"update saved chart as viewer", vic, update(dataexec.ChartChange{ChartID: "c-signups", Name: "x"}), askbi.Forbidden},
		{"update own preview as viewer", vic, update(dataexec.ChartChange{ChartID: "c-vic", Name: "x"}), ""},
		{"update another member's preview", alice, update(dataexec.ChartChange{ChartID: "c-draft", Name: "x"}), askbi.NotFound},
		{"update to an unknown type", bob, update(dataexec.ChartChange{ChartID: "c-signups", Type: "radar"}), askbi.InvalidArgument},
		{"update another team's chart", carol, update(dataexec.ChartChange{ChartID: "c-signups", Name: "x"}), askbi.NotFound},
		{"update", bob, update(dataexec.ChartChange{ChartID: "c-signups", Name: "Signups per day"}), ""},
		{"place own preview as viewer", vic, place(dataexec.Placement{ChartID: "c-vic", DashboardID: "d-growth"}), askbi.Forbidden},
		{"place another member's preview", alice, place(dataexec.Placement{ChartID: "c-draft", DashboardID: "d-growth"}), askbi.NotFound},
		{"place saved chart", bob, place(dataexec.Placement{ChartID: "c-signups", DashboardID: "d-growth"}), askbi.Conflict},
		{"place across projects", alice, place(dataexec.Placement{ChartID: "c-alice", DashboardID: "d-fin"}), askbi.InvalidArgument},
		{"place", bob, place(dataexec.Placement{ChartID: "c-draft", DashboardID: "d-growth"}), ""},
		{"delete as viewer", vic, remove(dataexec.DashboardRef{DashboardID: "d-growth"}), askbi.Forbidden},
		{"delete out of projects", bob, remove(dataexec.DashboardRef{DashboardID: "d-fin"}), askbi.NotFound},
		{"delete", bob, remove(dataexec.DashboardRef{DashboardID: "d-growth"}), ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, nil)
			checked, ran := tc.call(e, tc.p)
			if askbi.ErrorCode(checked) != tc.want || askbi.ErrorCode(ran) != tc.want {
				t.Errorf("Check = %v, Run = %v; want code %q from both", checked, ran, tc.want)
			}
		})
	}
}

// check runs an action's Check, then its Run, for p.
type check func(e *env, p access.Principal) (checked, ran error)

// checkAndRun is the check of action a with input in, through both (the
// test's runner, which sees that Check touched nothing).
func checkAndRun[In, Out any](both func(access.Principal, *env, func(*dataexec.Executor, context.Context, access.Principal) error,
	func(*dataexec.Executor, context.Context, access.Principal) error) (error, error), a dataexec.Action[In, Out], in In) check {
	return func(e *env, p access.Principal) (error, error) {
		return both(p, e, func(x *dataexec.Executor, ctx context.Context, p access.Principal) error {
			return a.Check(x, ctx, p, in)
		},
			func(x *dataexec.Executor, ctx context.Context, p access.Principal) error {
				_, err := a.Run(x, ctx, p, in)
				return err
			})
	}
}

func TestClassFromAnnotations(t *testing.T) {
	yes, no := new(true), new(false)
	for _, tc := range []struct {
		readOnly, destructive *bool
		want                  dataexec.Class
	}{
		{nil, nil, dataexec.ClassUnknown},
		{yes, nil, dataexec.ClassReadOnly},
		{yes, no, dataexec.ClassReadOnly},
		{yes, yes, dataexec.ClassDestructive},
		{no, no, dataexec.ClassMutating},
		{no, nil, dataexec.ClassUnknown}, // MCP's default destructiveHint is true
		{no, yes, dataexec.ClassDestructive},
		{nil, no, dataexec.ClassUnknown},
		{nil, yes, dataexec.ClassDestructive},
	} {
		if got := dataexec.ClassFromAnnotations(tc.readOnly, tc.destructive); got != tc.want {
			t.Errorf("ClassFromAnnotations(%v, %v) = %s, want %s", ptr(tc.readOnly), ptr(tc.destructive), got, tc.want)
		}
	}
}

func ptr(b *bool) string {
	if b == nil {
		return "nil"
	}
	return fmt.Sprint(*b)
}
