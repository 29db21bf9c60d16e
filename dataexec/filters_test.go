package dataexec

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/askbi/askbi"
	"github.com/askbi/askbi/workspace"
)

func TestValidateFilters(t *testing.T) {
	cols := []string{"day", "country", "signups"}
	many := make([]workspace.Filter, 21)
	for i := range many {
		many[i] = workspace.Filter{Field: "day", Op: workspace.OpEq, Value: "x"}
	}
	for _, tc := range []struct {
		name    string
		filters []workspace.Filter
		columns []string
		want    string
	}{
		{"ok", []workspace.Filter{{Field: "country", Op: workspace.OpIn, Value: []any{"US", "DE"}}, {Field: "signups", Op: workspace.OpGte, Value: json.Number("3")}, {Field: "day", Op: workspace.OpEq, Value: nil}}, cols, ""},
		{"unknown field", []workspace.Filter{{Field: "day", Op: workspace.OpEq, Value: "x"}, {Field: "region", Op: workspace.OpEq, Value: "EU"}}, cols, `filters[1].field: unknown field "region"`},
		{"field unchecked without columns", []workspace.Filter{{Field: "region", Op: workspace.OpEq, Value: "EU"}}, nil, ""},
		{"unknown op", []workspace.Filter{{Field: "day", Op: "like", Value: "x"}}, cols, `filters[0].op (day): unknown op "like"; use eq, ne, gt, gte, lt, lte, contains or in`},
		{"bool for gt", []workspace.Filter{{Field: "signups", Op: workspace.OpGt, Value: true}}, cols, "filters[0].value (signups): must be a number or string"},
		{"null for lt", []workspace.Filter{{Field: "signups", Op: workspace.OpLt, Value: nil}}, cols, "filters[0].value (signups): must be a number or string"},
		{"object for eq", []workspace.Filter{{Field: "day", Op: workspace.OpEq, Value: map[string]any{}}}, cols, "filters[0].value (day): must be a number, string, boolean or null"},
		{"number for contains", []workspace.Filter{{Field: "day", Op: workspace.OpContains, Value: 3.0}}, cols, "filters[0].value (day): must be a non-empty string"},
		{"scalar for in", []workspace.Filter{{Field: "day", Op: workspace.OpIn, Value: "x"}}, cols, "filters[0].value (day): must be an array of 1 to 100 numbers, strings, booleans or nulls"},
		{"empty in", []workspace.Filter{{Field: "day", Op: workspace.OpIn, Value: []any{}}}, cols, "filters[0].value (day): must be an array of 1 to 100 numbers, strings, booleans or nulls"},
		{"long value", []workspace.Filter{{Field: "day", Op: workspace.OpEq, Value: strings.Repeat("x", 1001)}}, cols, "filters[0].value (day): longer than 1000 characters"},
		{"empty field", []workspace.Filter{{Field: "", Op: workspace.OpEq, Value: "x"}}, cols, "filters[0].field: must be 1 to 128 printable characters"},
		{"too many", many, cols, "filters: at most 20 filters"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := validateFilters(tc.filters, tc.columns)
			if got := askbi.ErrorMessage(err); got != tc.want || (err != nil && askbi.ErrorCode(err) != askbi.InvalidArgument) {
				t.Errorf("validateFilters = %v, want %q", err, tc.want)
			}
		})
	}
}

func TestApplyFilters(t *testing.T) {
	cols := []string{"day", "country", "signups"}
	rows := [][]any{
		{"2026-11-01", "US", int64(10)},
		{"2026-11-02", "us", int64(0)},
		{"2026-11-03", "DE", nil},
		{"2026-11-04", "Germany", "7"},
		{"2026-11-05", nil, 2.5},
	}
	days := func(rs [][]any) []string {
		var out []string
		for _, r := range rs {
			out = append(out, r[0].(string)[8:])
		}
		return out
	}
	for _, tc := range []struct {
		name    string
		filters []workspace.Filter
		want    []string
	}{
		{"eq string", []workspace.Filter{{Field: "country", Op: workspace.OpEq, Value: "US"}}, []string{"01"}},
		{"eq zero", []workspace.Filter{{Field: "signups", Op: workspace.OpEq, Value: 0.0}}, []string{"02"}},
		{"eq null", []workspace.Filter{{Field: "signups", Op: workspace.OpEq, Value: nil}}, []string{"03"}},
		{"ne null", []workspace.Filter{{Field: "country", Op: workspace.OpNe, Value: nil}}, []string{"01", "02", "03", "04"}},
		{"gt number, numeric string counts", []workspace.Filter{{Field: "signups", Op: workspace.OpGt, Value: json.Number("2")}}, []string{"01", "04", "05"}},
		{"lte number", []workspace.Filter{{Field: "signups", Op: workspace.OpLte, Value: 2.5}}, []string{"02", "05"}},
		{"date range as strings", []workspace.Filter{{Field: "day", Op: workspace.OpGte, Value: "2026-11-02"}, {Field: "day", Op: workspace.OpLt, Value: "2026-11-04"}}, []string{"02", "03"}},
		{"contains, case-insensitive", []workspace.Filter{{Field: "country", Op: workspace.OpContains, Value: "ger"}}, []string{"04"}},
		{"in", []workspace.Filter{{Field: "country", Op: workspace.OpIn, Value: []any{"DE", "us"}}}, []string{"02", "03"}},
		{"no match", []workspace.Filter{{Field: "country", Op: workspace.OpEq, Value: "FR"}}, nil},
		{"bool never equals text", []workspace.Filter{{Field: "country", Op: workspace.OpEq, Value: true}}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if err := validateFilters(tc.filters, cols); err != nil {
				t.Fatal(err)
			}
			got, err := applyFilters(tc.filters, cols, rows)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, days(got)); diff != "" {
				t.Errorf("applyFilters mismatch (-want +got):\n%s", diff)
			}
		})
	}
	if _, err := applyFilters([]workspace.Filter{{Field: "region", Op: workspace.OpEq, Value: "x"}}, cols, rows); askbi.ErrorMessage(err) != `filters[0].field: unknown field "region"` {
		t.Errorf("applyFilters(unknown field) = %v", err)
	}
}
