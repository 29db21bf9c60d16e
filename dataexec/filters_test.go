package dataexec

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/askbi/askbi"
)

func TestValidateFilters(t *testing.T) {
	cols := []string{"day", "country", "signups"}
	many := make([]Filter, 21)
	for i := range many {
		many[i] = Filter{Field: "day", Op: OpEq, Value: "x"}
	}
	for _, tc := range []struct {
		name    string
		filters []Filter
		columns []string
		want    string
	}{
		{"ok", []Filter{{"country", OpIn, []any{"US", "DE"}}, {"signups", OpGte, json.Number("3")}, {"day", OpEq, nil}}, cols, ""},
		{"unknown field", []Filter{{"day", OpEq, "x"}, {"region", OpEq, "EU"}}, cols, `filters[1].field: unknown field "region"`},
		{"field unchecked without columns", []Filter{{"region", OpEq, "EU"}}, nil, ""},
		{"unknown op", []Filter{{"day", "like", "x"}}, cols, `filters[0].op (day): unknown op "like"; use eq, ne, gt, gte, lt, lte, contains or in`},
		{"bool for gt", []Filter{{"signups", OpGt, true}}, cols, "filters[0].value (signups): must be a number or string"},
		{"null for lt", []Filter{{"signups", OpLt, nil}}, cols, "filters[0].value (signups): must be a number or string"},
		{"object for eq", []Filter{{"day", OpEq, map[string]any{}}}, cols, "filters[0].value (day): must be a number, string, boolean or null"},
		{"number for contains", []Filter{{"day", OpContains, 3.0}}, cols, "filters[0].value (day): must be a non-empty string"},
		{"scalar for in", []Filter{{"day", OpIn, "x"}}, cols, "filters[0].value (day): must be an array of 1 to 100 numbers, strings, booleans or nulls"},
		{"empty in", []Filter{{"day", OpIn, []any{}}}, cols, "filters[0].value (day): must be an array of 1 to 100 numbers, strings, booleans or nulls"},
		{"long value", []Filter{{"day", OpEq, strings.Repeat("x", 1001)}}, cols, "filters[0].value (day): longer than 1000 characters"},
		{"empty field", []Filter{{"", OpEq, "x"}}, cols, "filters[0].field: must be 1 to 128 printable characters"},
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
		filters []Filter
		want    []string
	}{
		{"eq string", []Filter{{"country", OpEq, "US"}}, []string{"01"}},
		{"eq zero", []Filter{{"signups", OpEq, 0.0}}, []string{"02"}},
		{"eq null", []Filter{{"signups", OpEq, nil}}, []string{"03"}},
		{"ne null", []Filter{{"country", OpNe, nil}}, []string{"01", "02", "03", "04"}},
		{"gt number, numeric string counts", []Filter{{"signups", OpGt, json.Number("2")}}, []string{"01", "04", "05"}},
		{"lte number", []Filter{{"signups", OpLte, 2.5}}, []string{"02", "05"}},
		{"date range as strings", []Filter{{"day", OpGte, "2026-11-02"}, {"day", OpLt, "2026-11-04"}}, []string{"02", "03"}},
		{"contains, case-insensitive", []Filter{{"country", OpContains, "ger"}}, []string{"04"}},
		{"in", []Filter{{"country", OpIn, []any{"DE", "us"}}}, []string{"02", "03"}},
		{"no match", []Filter{{"country", OpEq, "FR"}}, nil},
		{"bool never equals text", []Filter{{"country", OpEq, true}}, nil},
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
	if _, err := applyFilters([]Filter{{"region", OpEq, "x"}}, cols, rows); askbi.ErrorMessage(err) != `filters[0].field: unknown field "region"` {
		t.Errorf("applyFilters(unknown field) = %v", err)
	}
}
