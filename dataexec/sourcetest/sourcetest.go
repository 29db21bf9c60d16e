// Package sourcetest holds the conformance suite for [dataexec.Source]. A
// host runs it against its own source, with a Fixture that says how to ask
// that kind of source for what the suite needs:
//
//	func TestSource(t *testing.T) {
//		sourcetest.Run(t, func(t *testing.T) (dataexec.Source, sourcetest.Fixture) {
//			src := newSource(t) // a fresh source, with a fresh pool or client
//			return src, sourcetest.Fixture{
//				Rows: func(n int) dataexec.Query { ... },
//				...
//			}
//		})
//	}
//
// The suite proves what the dataexec.Source documentation promises: the
// row and byte caps, TooLarge, Timeout, cancellation, the cell types of
// [dataexec.Table], InvalidArgument before anything runs, and safety for
// concurrent use (run it with -race). A source that is a
// [dataexec.VariableBinder] must also bind variables as that documents; one
// that is not must refuse them.
//
// A few cases need a capability not every source has (a query that blocks,
// a way to see whether the backend was asked anything). A Fixture without
// it must say why in NotApplicable; the suite then skips the case with
// that reason, so it shows in the test output and never passes silently.
package sourcetest

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/askbi/askbi"
	"github.com/askbi/askbi/dataexec"
	"github.com/askbi/askbi/workspace"
)

// The cases a Fixture may declare not applicable in NotApplicable. Every
// other case is what [dataexec.Source] requires of every source.
const (
	// CaseDeadlineWhileRunning: a deadline that passes while the backend
	// works gives Timeout and stops the work. Needs Fixture.Block.
	CaseDeadlineWhileRunning = "DeadlineWhileRunning"
	// CaseCancelWhileRunning: cancelling ctx while the backend works
	// stops the work and Query returns an error. Needs Fixture.Block.
	CaseCancelWhileRunning = "CancelWhileRunning"
	// CaseRejectedRanNothing: a rejected query sends nothing to the
	// backend. Needs Fixture.Ran.
	CaseRejectedRanNothing = "RejectedRanNothing"
)

var optionalCases = []string{CaseDeadlineWhileRunning, CaseCancelWhileRunning, CaseRejectedRanNothing}

// Fixture tells the suite how to express the queries it needs for one
// kind of source. The suite sets MaxRows and MaxBytes (and Variables) on
// the queries it gets.
type Fixture struct {
	// Rows returns a query whose result is n rows of (id integer, name
	// text), in this order: id is i (as int64, float64 or json.Number) and
	// name "row i", for i from 1 to n. The suite does not check column
	// names. n is one of RowCounts.
	Rows func(n int) dataexec.Query
	// Wide returns a query whose result is one row of one text column
	// holding n bytes, all "x". n is one of WideSizes.
	Wide func(n int) dataexec.Query
	// Kinds returns a query whose one row holds a cell of each kind the
	// source produces (numbers, text, booleans, NULL, times, nested
	// data); the suite checks each is a type dataexec.Table allows.
	Kinds func() dataexec.Query
	// Rejected are queries the source rejects before running them, at
	// least one.
	Rejected []dataexec.Query
	// Ran reports whether the source has sent anything to its backend
	// since newSource returned it. Nil when that cannot be seen; then
	// NotApplicable[CaseRejectedRanNothing] says why.
	Ran func() bool
	// Block returns a query that runs until it is cancelled (or its
	// deadline passes), a new one on each call, and running, which reports
	// whether the backend still works on that query. Nil when no query
	// of the source can block; then NotApplicable says why for
	// CaseDeadlineWhileRunning and CaseCancelWhileRunning.
	Block func() (q dataexec.Query, running func() bool)
	// Echo returns a query whose one row holds, in order, the values refs
	// stand for, each ref a {{name}} reference. Required when the source
	// is a dataexec.VariableBinder, unused otherwise.
	Echo func(refs ...string) dataexec.Query
	// True is the cell Echo gives for a true boolean variable: nil means
	// true; a source whose SQL has no boolean type says what stands for
	// one (MySQL's int64(1)).
	True any
	// NotApplicable gives the reason for each optional case (the Case
	// constants) that does not apply to the source.
	NotApplicable map[string]string
}

// trueValue is the cell a true boolean variable comes back as.
func (fx Fixture) trueValue() any {
	if fx.True == nil {
		return true
	}
	return fx.True
}

// RowCounts returns the values of n the suite passes to Fixture.Rows, for
// a source that must prepare its answers in advance.
func RowCounts() []int { return []int{0, 1, 2, 3, 5, 10, 1000} }

// WideSizes returns the values of n the suite passes to Fixture.Wide.
func WideSizes() []int { return []int{500, 2000} }

// Bounds on waiting for the backend. They are no speed targets: a cancel
// takes milliseconds. stopBound is how long Query may take to return once
// its ctx is done; it is shorter than the default timeouts sources fall
// back on (pgsource's is 15 seconds), so a source that ignores the cancel
// and waits for its own timeout fails. startBound is how long the backend
// may take to start a blocking query.
const (
	stopBound  = 10 * time.Second
	startBound = time.Minute
)

// Run proves that the sources newSource makes behave as [dataexec.Source]
// documents. Each case calls newSource for a fresh source.
func Run(t *testing.T, newSource func(t *testing.T) (dataexec.Source, Fixture)) {
	start := func(t *testing.T) (dataexec.Source, Fixture) {
		t.Helper()
		src, fx := newSource(t)
		mustComplete(t, fx)
		return src, fx
	}

	t.Run("MaxRows", func(t *testing.T) {
		src, fx := start(t)
		for _, tc := range []struct {
			name         string
			n, maxRows   int
			want         int
			wantTruncate bool
		}{
			{"more rows than the cap", 5, 3, 3, true},
			{"exactly the cap", 3, 3, 3, false},
			{"fewer rows than the cap", 2, 3, 2, false},
			{"no rows", 0, 3, 0, false},
			{"cap of one", 1, 1, 1, false},
			{"far more rows than the cap", 1000, 10, 10, true},
		} {
			t.Run(tc.name, func(t *testing.T) {
				got, err := query(t.Context(), t, src, capped(fx.Rows(tc.n), tc.maxRows, 1<<20))
				if err != nil {
					t.Fatalf("Query: %v", err)
				}
				want := summary{Rows: numberedRows(tc.want)}
				if tc.wantTruncate {
					want.Truncated, want.Reason = true, dataexec.TruncatedRows
				}
				if diff := cmp.Diff(want, summarize(t, got)); diff != "" {
					t.Errorf("Query(%d rows, MaxRows %d) mismatch (-want +got):\n%s", tc.n, tc.maxRows, diff)
				}
			})
		}
	})

	t.Run("MaxBytes", func(t *testing.T) {
		src, fx := start(t)
		t.Run("stops at the cap", func(t *testing.T) {
			const maxBytes = 1000
			got, err := query(t.Context(), t, src, capped(fx.Rows(1000), 5000, maxBytes))
			if err != nil {
				t.Fatalf("Query: %v", err)
			}
			s := summarize(t, got)
			if !s.Truncated || s.Reason != dataexec.TruncatedBytes || len(s.Rows) == 0 || len(s.Rows) >= 1000 {
				t.Fatalf("Query = %d rows, truncated %v (%q); want some of the 1000 rows, truncated by %q",
					len(s.Rows), s.Truncated, s.Reason, dataexec.TruncatedBytes)
			}
			if diff := cmp.Diff(numberedRows(len(s.Rows)), s.Rows); diff != "" {
				t.Errorf("the rows are not the first ones (-want +got):\n%s", diff)
			}
			if n := jsonSize(t, got.Rows); n > maxBytes {
				t.Errorf("the rows take %d bytes as JSON, over the %d byte cap", n, maxBytes)
			}
		})
		t.Run("within the cap", func(t *testing.T) {
			got, err := query(t.Context(), t, src, capped(fx.Rows(10), 5000, 1000))
			if err != nil {
				t.Fatalf("Query: %v", err)
			}
			if diff := cmp.Diff(summary{Rows: numberedRows(10)}, summarize(t, got)); diff != "" {
				t.Errorf("Query mismatch (-want +got):\n%s", diff)
			}
		})
	})

	t.Run("TooLarge", func(t *testing.T) {
		src, fx := start(t)
		_, err := query(t.Context(), t, src, capped(fx.Wide(2000), 10, 1000))
		if askbi.ErrorCode(err) != askbi.TooLarge {
			t.Errorf("Query(one 2000 byte row, MaxBytes 1000) = %v, want too_large", err)
		}
		got, err := query(t.Context(), t, src, capped(fx.Wide(500), 10, 1000))
		if err != nil {
			t.Fatalf("Query(one 500 byte row, MaxBytes 1000): %v", err)
		}
		if diff := cmp.Diff(summary{Rows: [][]any{{strings.Repeat("x", 500)}}}, summarize(t, got)); diff != "" {
			t.Errorf("Query(one 500 byte row) mismatch (-want +got):\n%s", diff)
		}
	})

	t.Run("DeadlinePassed", func(t *testing.T) {
		src, fx := start(t)
		ctx, cancel := context.WithDeadline(t.Context(), time.Now().Add(-time.Second))
		defer cancel()
		if _, err := query(ctx, t, src, capped(fx.Rows(3), 10, 1<<20)); askbi.ErrorCode(err) != askbi.Timeout {
			t.Errorf("Query after the deadline = %v, want timeout", err)
		}
	})

	t.Run("Cancelled", func(t *testing.T) {
		src, fx := start(t)
		ctx, cancel := context.WithCancel(t.Context())
		cancel()
		_, err := query(ctx, t, src, capped(fx.Rows(3), 10, 1<<20))
		mustFailSafely(t, err, "Query with a cancelled context")
	})

	t.Run(CaseDeadlineWhileRunning, func(t *testing.T) {
		src, fx := start(t)
		applies(t, fx, CaseDeadlineWhileRunning)
		q, running := fx.Block()
		ctx, cancel := context.WithTimeout(t.Context(), 500*time.Millisecond)
		defer cancel()
		res := await(t, queryAsync(ctx, src, capped(q, 10, 1<<20)), "its deadline", stopBound+500*time.Millisecond)
		if askbi.ErrorCode(res.err) != askbi.Timeout {
			t.Errorf("Query past its deadline = %v, want timeout", res.err)
		}
		if running() {
			t.Error("the backend still works on the query after Query returned")
		}
	})

	t.Run(CaseCancelWhileRunning, func(t *testing.T) {
		src, fx := start(t)
		applies(t, fx, CaseCancelWhileRunning)
		q, running := fx.Block()
		// A far deadline, so that only the cancel can stop the query soon.
		ctx, cancel := context.WithTimeout(t.Context(), 10*time.Minute)
		defer cancel()
		done := queryAsync(ctx, src, capped(q, 10, 1<<20))
		waitFor(t, running, done)
		cancel()
		res := await(t, done, "the cancel", stopBound)
		mustFailSafely(t, res.err, "Query cancelled while running")
		if running() {
			t.Error("the backend still works on the query after Query returned")
		}
	})

	t.Run("Cells", func(t *testing.T) {
		src, fx := start(t)
		got, err := query(t.Context(), t, src, capped(fx.Kinds(), 10, 1<<20))
		if err != nil {
			t.Fatalf("Query: %v", err)
		}
		if len(got.Rows) != 1 || len(got.Rows[0]) == 0 {
			t.Fatalf("Query(Kinds) = %v, want one row of cells", got.Rows)
		}
		// query checked each cell's type; say what was checked.
		kinds := map[string]bool{}
		for _, c := range got.Rows[0] {
			kinds[fmt.Sprintf("%T", c)] = true
		}
		t.Logf("cell types seen: %s", strings.Join(slices.Sorted(maps.Keys(kinds)), ", "))
	})

	t.Run("Rejected", func(t *testing.T) {
		src, fx := start(t)
		for i, q := range fx.Rejected {
			_, err := query(t.Context(), t, src, capped(q, 10, 1<<20))
			if askbi.ErrorCode(err) != askbi.InvalidArgument || askbi.ErrorMessage(err) == "" {
				t.Errorf("Query(Rejected[%d]) = %v, want invalid_argument with a message", i, err)
			}
		}
	})

	t.Run(CaseRejectedRanNothing, func(t *testing.T) {
		src, fx := start(t)
		applies(t, fx, CaseRejectedRanNothing)
		for _, q := range fx.Rejected {
			_, _ = query(t.Context(), t, src, capped(q, 10, 1<<20))
		}
		if fx.Ran() {
			t.Error("a rejected query sent work to the backend")
		}
		// The probe must be able to see work, or the check above proves
		// nothing.
		if _, err := query(t.Context(), t, src, capped(fx.Rows(1), 10, 1<<20)); err != nil {
			t.Fatalf("Query: %v", err)
		}
		if !fx.Ran() {
			t.Error("Fixture.Ran did not see a query that ran")
		}
	})

	t.Run("Concurrent", func(t *testing.T) {
		src, fx := start(t)
		counts := []int{1, 2, 3, 5, 10}
		var wg sync.WaitGroup
		for i := range 16 {
			n, maxRows := counts[i%len(counts)], 1+i%4
			wg.Go(func() {
				got, err := src.Query(t.Context(), capped(fx.Rows(n), maxRows, 1<<20))
				if err != nil {
					t.Errorf("Query(%d rows, MaxRows %d): %v", n, maxRows, err)
					return
				}
				want := summary{Rows: numberedRows(min(n, maxRows))}
				if n > maxRows {
					want.Truncated, want.Reason = true, dataexec.TruncatedRows
				}
				if diff := cmp.Diff(want, summarize(t, got)); diff != "" {
					t.Errorf("Query(%d rows, MaxRows %d) mismatch (-want +got):\n%s", n, maxRows, diff)
				}
			})
		}
		wg.Wait()
	})

	t.Run("Variables", func(t *testing.T) {
		src, fx := start(t)
		binder, ok := src.(dataexec.VariableBinder)
		if !ok {
			t.Skipf("%T is not a dataexec.VariableBinder; VariablesUnsupported applies instead", src)
		}
		if fx.Echo == nil {
			t.Fatal("Fixture.Echo is nil; a VariableBinder needs it")
		}
		runVariables(t, src, binder, fx, newSource)
	})

	t.Run("VariablesUnsupported", func(t *testing.T) {
		src, fx := start(t)
		if _, ok := src.(dataexec.VariableBinder); ok {
			t.Skipf("%T is a dataexec.VariableBinder; Variables applies instead", src)
		}
		q := capped(fx.Rows(1), 10, 1<<20)
		q.Variables = map[string]dataexec.VariableValue{"v": {Type: workspace.VarString, Value: "x"}}
		if _, err := query(t.Context(), t, src, q); askbi.ErrorCode(err) != askbi.Unsupported {
			t.Errorf("Query with variables = %v, want unsupported", err)
		}
	})
}

// runVariables proves how a VariableBinder binds.
func runVariables(t *testing.T, src dataexec.Source, binder dataexec.VariableBinder, fx Fixture, newSource func(*testing.T) (dataexec.Source, Fixture)) {
	str := func(s string) dataexec.VariableValue {
		return dataexec.VariableValue{Type: workspace.VarString, Value: s}
	}
	num := func(n string) dataexec.VariableValue {
		return dataexec.VariableValue{Type: workspace.VarNumber, Value: json.Number(n)}
	}
	echo := func(t *testing.T, vars map[string]dataexec.VariableValue, refs ...string) []any {
		t.Helper()
		q := capped(fx.Echo(refs...), 10, 1<<20)
		q.Variables = vars
		got, err := query(t.Context(), t, src, q)
		if err != nil {
			t.Fatalf("Query(Echo(%v)): %v", refs, err)
		}
		if len(got.Rows) != 1 || len(got.Rows[0]) != len(refs) {
			t.Fatalf("Query(Echo(%v)) = %v, want one row of %d cells", refs, got.Rows, len(refs))
		}
		return got.Rows[0]
	}

	t.Run("References", func(t *testing.T) {
		got, err := binder.References(fx.Echo("{{a}}", "{{ b }}", "{{a}}").SQL)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff([]string{"a", "b", "a"}, got); diff != "" {
			t.Errorf("References mismatch (-want +got):\n%s", diff)
		}
	})

	t.Run("Values", func(t *testing.T) {
		row := echo(t, map[string]dataexec.VariableValue{
			"s": str("it's"), "n": num("42"), "f": num("-2.5"),
			"b": {Type: workspace.VarBoolean, Value: true}, "d": {Type: workspace.VarDate, Value: "2026-02-28"},
		}, "{{s}}", "{{n}}", "{{f}}", "{{b}}", "{{d}}")
		if row[0] != "it's" {
			t.Errorf("string = %#v, want %q", row[0], "it's")
		}
		if v, ok := number(row[1]); !ok || v != 42 {
			t.Errorf("number = %#v, want 42", row[1])
		}
		if v, ok := number(row[2]); !ok || v != -2.5 {
			t.Errorf("number = %#v, want -2.5", row[2])
		}
		if want := fx.trueValue(); row[3] != want {
			t.Errorf("boolean = %#v, want %#v", row[3], want)
		}
		if d := dateOf(row[4]); d != "2026-02-28" {
			t.Errorf("date = %#v, want 2026-02-28", row[4])
		}
	})

	t.Run("HostileStrings", func(t *testing.T) {
		for _, s := range []string{
			"'; DROP TABLE x; --", "' OR '1'='1", "''", "$$ || 1 || $$", "$1", "{{s}}", "/* */ -- ;", "",
			"Grüße ‘x’\n\t\"y\"", "`x`", "];[",
		} {
			if got := echo(t, map[string]dataexec.VariableValue{"s": str(s)}, "{{s}}"); got[0] != s {
				t.Errorf("string %q came back as %#v", s, got[0])
			}
		}
	})

	t.Run("SameVariableTwice", func(t *testing.T) {
		row := echo(t, map[string]dataexec.VariableValue{"n": num("7"), "s": str("x")}, "{{n}}", "{{s}}", "{{n}}", "{{s}}")
		for _, i := range []int{0, 2} {
			if v, ok := number(row[i]); !ok || v != 7 {
				t.Errorf("cell %d = %#v, want 7", i, row[i])
			}
		}
		for _, i := range []int{1, 3} {
			if row[i] != "x" {
				t.Errorf("cell %d = %#v, want %q", i, row[i], "x")
			}
		}
	})

	t.Run("Refused", func(t *testing.T) {
		src, fx := newSource(t)
		for _, tc := range []struct {
			name string
			vars map[string]dataexec.VariableValue
			ref  string
		}{
			{"undeclared reference", map[string]dataexec.VariableValue{"s": str("x")}, "{{nope}}"},
			{"number with a statement", map[string]dataexec.VariableValue{"n": num("1; DROP")}, "{{n}}"},
			{"impossible date", map[string]dataexec.VariableValue{"d": {Type: workspace.VarDate, Value: "2026-13-40"}}, "{{d}}"},
			{"boolean as text", map[string]dataexec.VariableValue{"b": {Type: workspace.VarBoolean, Value: "true"}}, "{{b}}"},
		} {
			q := capped(fx.Echo(tc.ref), 10, 1<<20)
			q.Variables = tc.vars
			if _, err := query(t.Context(), t, src, q); askbi.ErrorCode(err) != askbi.InvalidArgument {
				t.Errorf("Query(%s) = %v, want invalid_argument", tc.name, err)
			}
		}
		if fx.Ran != nil && fx.Ran() {
			t.Error("a refused query sent work to the backend")
		}
	})
}

// mustComplete fails t when fx lacks what every case needs, or names a
// required case as not applicable.
func mustComplete(t *testing.T, fx Fixture) {
	t.Helper()
	switch {
	case fx.Rows == nil, fx.Wide == nil, fx.Kinds == nil:
		t.Fatal("Fixture.Rows, Wide and Kinds are required")
	case len(fx.Rejected) == 0:
		t.Fatal("Fixture.Rejected needs at least one query")
	}
	for c := range fx.NotApplicable {
		if !slices.Contains(optionalCases, c) {
			t.Fatalf("Fixture.NotApplicable names %q; only %v may not apply, the other cases are what every source must do", c, optionalCases)
		}
	}
}

// applies skips t with the fixture's reason when case c does not apply,
// and fails it when the fixture lacks what c needs and gives no reason.
func applies(t *testing.T, fx Fixture, c string) {
	t.Helper()
	if reason, ok := fx.NotApplicable[c]; ok {
		t.Skipf("%s does not apply to this source: %s", c, reason)
	}
	switch {
	case c == CaseRejectedRanNothing && fx.Ran == nil:
		t.Fatalf("Fixture.Ran is nil; set it, or say why in NotApplicable[%q]", c)
	case c != CaseRejectedRanNothing && fx.Block == nil:
		t.Fatalf("Fixture.Block is nil; set it, or say why in NotApplicable[%q]", c)
	}
}

// capped returns q with the caps set.
func capped(q dataexec.Query, maxRows int, maxBytes int64) dataexec.Query {
	q.MaxRows, q.MaxBytes = maxRows, maxBytes
	return q
}

// query runs q and checks the shape and cell types of a table it returns.
func query(ctx context.Context, t *testing.T, src dataexec.Source, q dataexec.Query) (*dataexec.Table, error) {
	t.Helper()
	got, err := src.Query(ctx, q)
	if err == nil {
		checkTable(t, got)
	}
	return got, err
}

type result struct {
	table *dataexec.Table
	err   error
}

func queryAsync(ctx context.Context, src dataexec.Source, q dataexec.Query) <-chan result {
	done := make(chan result, 1)
	go func() {
		t, err := src.Query(ctx, q)
		done <- result{t, err}
	}()
	return done
}

// await waits up to bound for a Query that what should end.
func await(t *testing.T, done <-chan result, what string, bound time.Duration) result {
	t.Helper()
	select {
	case r := <-done:
		return r
	case <-time.After(bound):
		t.Fatalf("Query did not return within %s of %s", bound, what)
		return result{}
	}
}

// waitFor polls running until the backend works on the query, which must
// not have returned yet.
func waitFor(t *testing.T, running func() bool, done <-chan result) {
	t.Helper()
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	timeout := time.After(startBound)
	for !running() {
		select {
		case r := <-done:
			t.Fatalf("the blocking query returned before it was cancelled: %v, %v", r.table, r.err)
		case <-timeout:
			t.Fatalf("the backend did not start the blocking query within %s", startBound)
		case <-tick.C:
		}
	}
}

// mustFailSafely fails t unless err is an error that is not internal.
func mustFailSafely(t *testing.T, err error, what string) {
	t.Helper()
	if err == nil || askbi.ErrorCode(err) == askbi.Internal {
		t.Errorf("%s = %v, want an error with a code other than internal", what, err)
	}
}

// summary is a Table as the cap checks compare it: ids as int64.
type summary struct {
	Rows      [][]any
	Truncated bool
	Reason    string
}

func summarize(t *testing.T, tab *dataexec.Table) summary {
	t.Helper()
	s := summary{Rows: [][]any{}, Truncated: tab.Truncated, Reason: tab.TruncatedReason}
	for _, row := range tab.Rows {
		out := slices.Clone(row)
		if len(out) > 0 {
			if v, ok := number(out[0]); ok && v == float64(int64(v)) {
				out[0] = int64(v)
			}
		}
		s.Rows = append(s.Rows, out)
	}
	return s
}

// numberedRows returns the first n rows of Fixture.Rows as summarize
// gives them.
func numberedRows(n int) [][]any {
	rows := [][]any{}
	for i := 1; i <= n; i++ {
		rows = append(rows, []any{int64(i), "row " + strconv.Itoa(i)})
	}
	return rows
}

// number returns the value of a numeric cell.
func number(v any) (float64, bool) {
	switch x := v.(type) {
	case int64:
		return float64(x), true
	case float64:
		return x, true
	case json.Number:
		f, err := x.Float64()
		return f, err == nil
	}
	return 0, false
}

// dateOf returns the YYYY-MM-DD of a date cell: a time.Time at midnight
// or the text itself.
func dateOf(v any) string {
	switch x := v.(type) {
	case time.Time:
		if x.Hour() == 0 && x.Minute() == 0 && x.Second() == 0 && x.Nanosecond() == 0 {
			return x.Format(time.DateOnly)
		}
	case string:
		return x
	}
	return fmt.Sprintf("%#v", v)
}

func jsonSize(t *testing.T, rows [][]any) int {
	t.Helper()
	n := 0
	for _, row := range rows {
		b, err := json.Marshal(row)
		if err != nil {
			t.Fatalf("a row does not encode as JSON: %v", err)
		}
		n += len(b)
	}
	return n
}

// checkTable fails t unless every row has one cell per column and every
// cell is of a type dataexec.Table allows.
func checkTable(t *testing.T, tab *dataexec.Table) {
	t.Helper()
	if tab == nil {
		t.Fatal("Query returned a nil table and no error")
	}
	for i, row := range tab.Rows {
		if len(row) != len(tab.Columns) {
			t.Errorf("row %d has %d cells for %d columns", i, len(row), len(tab.Columns))
		}
		for j, c := range row {
			if !cellOK(c) {
				t.Errorf("row %d, column %d: a %T cell; dataexec.Table allows nil, bool, int64, float64, string, json.Number, time.Time and decoded JSON", i, j, c)
			}
		}
	}
	if tab.Truncated != (tab.TruncatedReason != "") ||
		tab.TruncatedReason != "" && tab.TruncatedReason != dataexec.TruncatedRows && tab.TruncatedReason != dataexec.TruncatedBytes {
		t.Errorf("truncated %v with reason %q; want a reason exactly when truncated, %q or %q",
			tab.Truncated, tab.TruncatedReason, dataexec.TruncatedRows, dataexec.TruncatedBytes)
	}
}

func cellOK(v any) bool {
	switch v.(type) {
	case int64, time.Time:
		return true
	}
	return jsonOK(v)
}

// jsonOK reports whether v is a value encoding/json decodes into an any.
func jsonOK(v any) bool {
	switch x := v.(type) {
	case nil, bool, float64, string, json.Number:
		return true
	case map[string]any:
		for _, e := range x {
			if !jsonOK(e) {
				return false
			}
		}
		return true
	case []any:
		for _, e := range x {
			if !jsonOK(e) {
				return false
			}
		}
		return true
	}
	return false
}
