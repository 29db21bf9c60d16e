package dataexec_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/askbi/askbi"
	"github.com/askbi/askbi/dataexec"
	"github.com/askbi/askbi/dataexec/sourcetest"
)

// TestTableSourceConformance runs the Source suite on TableSource, with
// Rows keyed by SQL and Wide by tool name, so both lookups are proven.
func TestTableSourceConformance(t *testing.T) {
	sourcetest.Run(t, func(t *testing.T) (dataexec.Source, sourcetest.Fixture) {
		tables := map[string]*dataexec.Table{
			"kinds": {Columns: []string{"n", "b", "i", "f", "s", "num", "ts", "j"}, Rows: [][]any{{
				nil, true, int64(-7), 2.5, "text", json.Number("1.50"), time.Date(2026, 11, 30, 8, 0, 0, 0, time.UTC),
				map[string]any{"a": []any{json.Number("1"), "x", nil, false, 0.5}},
			}}},
		}
		for _, n := range sourcetest.RowCounts() {
			rows := &dataexec.Table{Columns: []string{"id", "name"}}
			for i := 1; i <= n; i++ {
				rows.Rows = append(rows.Rows, []any{int64(i), fmt.Sprintf("row %d", i)})
			}
			tables[fmt.Sprintf("rows %d", n)] = rows
		}
		for _, n := range sourcetest.WideSizes() {
			tables[fmt.Sprintf("wide_%d", n)] = &dataexec.Table{Columns: []string{"v"}, Rows: [][]any{{strings.Repeat("x", n)}}}
		}
		const noBlock = "TableSource answers from memory at once; no query can block"
		return dataexec.NewTableSource(tables), sourcetest.Fixture{
			Rows:     func(n int) dataexec.Query { return dataexec.Query{SQL: fmt.Sprintf("rows %d", n)} },
			Wide:     func(n int) dataexec.Query { return dataexec.Query{Tool: fmt.Sprintf("wide_%d", n)} },
			Kinds:    func() dataexec.Query { return dataexec.Query{SQL: "kinds"} },
			Rejected: []dataexec.Query{{SQL: "SELECT no_such_table"}, {Tool: "no_such_tool"}},
			NotApplicable: map[string]string{
				sourcetest.CaseDeadlineWhileRunning: noBlock,
				sourcetest.CaseCancelWhileRunning:   noBlock,
				sourcetest.CaseRejectedRanNothing:   "TableSource has no backend to observe; a query it has no table for finds nothing to run",
			},
		}
	})
}

// TestTableSource covers what the suite does not: surrounding space in
// the SQL key, and where the byte cap cuts by TableSource's own estimate.
func TestTableSource(t *testing.T) {
	src := dataexec.NewTableSource(map[string]*dataexec.Table{
		"SELECT n FROM t": {Columns: []string{"n"}, Rows: [][]any{{int64(1)}, {int64(2)}, {int64(3)}}},
	})
	for _, tc := range []struct {
		name       string
		q          dataexec.Query
		wantRows   int
		wantReason string
		wantCode   askbi.Code
	}{
		{"all rows", dataexec.Query{SQL: " SELECT n FROM t\n", MaxRows: 10, MaxBytes: 1000}, 3, "", ""},
		{"byte cap", dataexec.Query{SQL: "SELECT n FROM t", MaxRows: 10, MaxBytes: 9}, 2, dataexec.TruncatedBytes, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := src.Query(ctx, tc.q)
			mustCode(t, err, tc.wantCode)
			if err != nil {
				return
			}
			if len(got.Rows) != tc.wantRows || got.TruncatedReason != tc.wantReason || got.Truncated != (tc.wantReason != "") {
				t.Errorf("Query = %d rows, truncated %v (%q); want %d rows, %q", len(got.Rows), got.Truncated, got.TruncatedReason, tc.wantRows, tc.wantReason)
			}
		})
	}
}

func TestFailure(t *testing.T) {
	for _, tc := range []struct {
		err    error
		kind   dataexec.FailureKind
		ok     bool
		repair dataexec.Repair
	}{
		{dataexec.Fail(dataexec.FailSignIn, askbi.Forbidden, nil, "sign in"), dataexec.FailSignIn, true, dataexec.RepairOpenConnection},
		{&askbi.Error{Code: askbi.Unavailable, Message: "gone", Err: &dataexec.Failure{Kind: dataexec.FailUnavailableTool}}, dataexec.FailUnavailableTool, true, dataexec.RepairOpenConnection},
		{askbi.Errorf(askbi.Timeout, "slow"), dataexec.FailTimeout, true, dataexec.RepairTryAgain},
		{askbi.Errorf(askbi.InvalidArgument, "bad"), dataexec.FailInvalidRequest, true, dataexec.RepairFixDataset},
		{askbi.Errorf(askbi.InvalidResult, "text"), dataexec.FailInvalidResult, true, dataexec.RepairFixDataset},
		{askbi.Errorf(askbi.Internal, "boom"), "", false, dataexec.RepairFixDataset},
		{&dataexec.Failure{Kind: dataexec.FailTimeout}, dataexec.FailTimeout, true, dataexec.RepairTryAgain},
	} {
		if tc.err.Error() == "" { // a Failure without a cause still has text
			t.Errorf("%#v has no error text", tc.err)
		}
		kind, ok := dataexec.FailureOf(tc.err)
		if kind != tc.kind || ok != tc.ok || ok && kind.Repair() != tc.repair {
			t.Errorf("FailureOf(%v) = %q, %v (repair %q); want %q, %v (%q)", tc.err, kind, ok, kind.Repair(), tc.kind, tc.ok, tc.repair)
		}
	}
}
