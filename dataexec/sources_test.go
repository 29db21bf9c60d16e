package dataexec_test

import (
	"strings"
	"testing"

	"github.com/askbi/askbi"
	"github.com/askbi/askbi/dataexec"
)

func TestTableSource(t *testing.T) {
	src := dataexec.NewTableSource(map[string]*dataexec.Table{
		"SELECT n FROM t": {Columns: []string{"n"}, Rows: [][]any{{int64(1)}, {int64(2)}, {int64(3)}}},
		"wide":            {Columns: []string{"s"}, Rows: [][]any{{strings.Repeat("x", 100)}}},
	})
	for _, tc := range []struct {
		name       string
		q          dataexec.Query
		wantRows   int
		wantReason string
		wantCode   askbi.Code
	}{
		{"all rows", dataexec.Query{SQL: " SELECT n FROM t\n", MaxRows: 10, MaxBytes: 1000}, 3, "", ""},
		{"row cap", dataexec.Query{SQL: "SELECT n FROM t", MaxRows: 2, MaxBytes: 1000}, 2, dataexec.TruncatedRows, ""},
		{"byte cap", dataexec.Query{SQL: "SELECT n FROM t", MaxRows: 10, MaxBytes: 9}, 2, dataexec.TruncatedBytes, ""},
		{"one row over the byte cap", dataexec.Query{Tool: "wide", MaxRows: 10, MaxBytes: 50}, 0, "", askbi.TooLarge},
		{"unknown query", dataexec.Query{SQL: "SELECT 2", MaxRows: 10}, 0, "", askbi.InvalidArgument},
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
