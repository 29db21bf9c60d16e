package dataexec

import (
	"encoding/json"
	"math"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/askbi/askbi"
	"github.com/askbi/askbi/workspace"
)

func ptr(f float64) *float64 { return &f }

func TestBuildChart(t *testing.T) {
	res := func(cols []string, rows ...[]any) *Result {
		return NewResult(cols, rows, Meta{})
	}
	spec := ChartSpec{Name: "c", Type: workspace.ChartBar, XField: "day", YFields: []string{"v"}}
	for _, tc := range []struct {
		name     string
		res      *Result
		spec     ChartSpec
		validate bool
		points   int // default 10
		want     *ChartData
		wantErr  string
	}{
		{
			name: "numbers, numeric strings, zero and null",
			res: res([]string{"day", "v"},
				[]any{"2026-11-01", int64(3)}, []any{"2026-11-02", json.Number("0")}, []any{"2026-11-03", " 2.5 "},
				[]any{"2026-11-04", nil}, []any{nil, "n/a"}),
			spec: spec, validate: true,
			want: &ChartData{Type: workspace.ChartBar, XField: "day", Labels: []string{"2026-11-01", "2026-11-02", "2026-11-03", "2026-11-04", "(none)"},
				Series: []Series{{Name: "v", Values: []*float64{ptr(3), ptr(0), ptr(2.5), nil, nil}}}, Meta: Meta{RowCount: 5}},
		},
		{
			name:     "empty result",
			res:      res([]string{"day", "v"}),
			spec:     spec,
			validate: true,
			wantErr:  "the query returned no rows; widen the date range or remove filters",
		},
		{
			name: "empty result without validation is empty data",
			res:  res([]string{"day", "v"}),
			spec: spec,
			want: &ChartData{Type: workspace.ChartBar, XField: "day", Labels: []string{}, Series: []Series{{Name: "v", Values: []*float64{}}}},
		},
		{
			name:     "text-only measure",
			res:      res([]string{"day", "v"}, []any{"a", "lots"}, []any{"b", "few"}),
			spec:     spec,
			validate: true,
			wantErr:  "field v has no numeric values; choose a numeric field or aggregate",
		},
		{
			name:     "NaN and Infinity are not finite",
			res:      res([]string{"day", "v"}, []any{"a", "NaN"}, []any{"b", "Infinity"}, []any{"c", math.Inf(1)}, []any{"d", math.NaN()}, []any{"e", "-Infinity"}),
			spec:     spec,
			validate: true,
			wantErr:  "field v has no numeric values; choose a numeric field or aggregate",
		},
		{
			name:     "all null measure",
			res:      res([]string{"day", "v"}, []any{"a", nil}),
			spec:     spec,
			validate: true,
			wantErr:  "field v has no numeric values; choose a numeric field or aggregate",
		},
		{
			name:     "missing x field",
			res:      res([]string{"date", "v"}, []any{"a", int64(1)}),
			spec:     spec,
			validate: true,
			wantErr:  "field day is not in the dataset; available fields: date, v",
		},
		{
			name:    "missing value field, also when reading",
			res:     res([]string{"day", "revenue"}, []any{"a", int64(1)}),
			spec:    spec,
			wantErr: "field v is not in the dataset; available fields: day, revenue",
		},
		{
			name:     "number only after the sample",
			res:      res([]string{"day", "v"}, []any{"a", "x"}, []any{"b", "y"}, []any{"c", int64(1)}),
			spec:     spec,
			validate: true,
			wantErr:  "field v has no numeric values; choose a numeric field or aggregate",
		},
		{
			name:     "KPI without x field",
			res:      res([]string{"total"}, []any{int64(42)}),
			spec:     ChartSpec{Name: "k", Type: workspace.ChartKPI, YFields: []string{"total"}},
			validate: true,
			want:     &ChartData{Type: workspace.ChartKPI, Labels: []string{}, Series: []Series{{Name: "total", Values: []*float64{ptr(42)}}}, Meta: Meta{RowCount: 1}},
		},
		{
			name:   "point cap",
			res:    res([]string{"day", "v"}, []any{"a", int64(1)}, []any{"b", int64(2)}, []any{"c", int64(3)}, []any{"d", int64(4)}),
			spec:   spec,
			points: 3,
			want: &ChartData{Type: workspace.ChartBar, XField: "day", Labels: []string{"a", "b", "c"},
				Series: []Series{{Name: "v", Values: []*float64{ptr(1), ptr(2), ptr(3)}}},
				Meta:   Meta{RowCount: 3, Truncated: true, TruncatedReason: TruncatedPoints}},
		},
		{
			name: "long label is cut",
			res:  res([]string{"day", "v"}, []any{strings.Repeat("é", 300), int64(1)}),
			spec: spec,
			want: &ChartData{Type: workspace.ChartBar, XField: "day", Labels: []string{strings.Repeat("é", 199) + "…"},
				Series: []Series{{Name: "v", Values: []*float64{ptr(1)}}}, Meta: Meta{RowCount: 1}},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			points := tc.points
			if points == 0 {
				points = 10
			}
			got, err := buildChart(tc.res, tc.spec, tc.validate, 2, points)
			if tc.wantErr != "" {
				if askbi.ErrorCode(err) != askbi.InvalidResult || askbi.ErrorMessage(err) != tc.wantErr {
					t.Fatalf("buildChart error = %v, want invalid_result %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("buildChart mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func TestValidateChartSpec(t *testing.T) {
	ok := ChartSpec{DatasetID: "d", Name: "Signups", Type: workspace.ChartLine, XField: "day", YFields: []string{"a", "b"}}
	with := func(f func(*ChartSpec)) ChartSpec {
		s := ok
		s.YFields = append([]string(nil), ok.YFields...)
		f(&s)
		return s
	}
	for _, tc := range []struct {
		name string
		spec ChartSpec
		want string
	}{
		{"ok", ok, ""},
		{"no name", with(func(s *ChartSpec) { s.Name = "  " }), "name: must be 1 to 100 printable characters"},
		{"bad type", with(func(s *ChartSpec) { s.Type = "radar" }), "chart_type: must be one of line, bar, area, pie, doughnut, table, kpi"},
		{"no x", with(func(s *ChartSpec) { s.XField = "" }), "x_field: required for a line chart"},
		{"no y", with(func(s *ChartSpec) { s.YFields = nil }), "y_fields: give 1 to 10 value fields"},
		{"too many y", with(func(s *ChartSpec) { s.YFields = strings.Split("a,b,c,d,e,f,g,h,i,j,k", ",") }), "y_fields: give 1 to 10 value fields"},
		{"pie with two", with(func(s *ChartSpec) { s.Type = workspace.ChartPie }), "y_fields: a pie chart takes exactly one value field"},
		{"duplicate y", with(func(s *ChartSpec) { s.YFields = []string{"a", "a"} }), "y_fields: a appears twice"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := askbi.ErrorMessage(validateChartSpec(tc.spec)); got != tc.want {
				t.Errorf("validateChartSpec = %q, want %q", got, tc.want)
			}
		})
	}
}

// TestTableChart: a table that is not a dataset (a remote tool's rows)
// charts with buildChart's building and sample validation: a label
// column and numeric series, and no chart for an empty table or a
// measure with no finite number.
func TestTableChart(t *testing.T) {
	for _, tc := range []struct {
		name    string
		table   *Table
		want    *ChartData
		wantErr string
	}{
		{
			name: "the label column is the text one, wherever it is; a time name makes a line",
			table: &Table{Columns: []string{"pageviews", "week"},
				Rows: [][]any{{json.Number("4200"), "2026-09-07"}, {json.Number("4630"), "2026-09-14"}}},
			want: &ChartData{Type: workspace.ChartLine, XField: "week", Labels: []string{"2026-09-07", "2026-09-14"},
				Series: []Series{{Name: "pageviews", Values: []*float64{ptr(4200), ptr(4630)}}}, Meta: Meta{RowCount: 2}},
		},
		{
			name:  "a category makes bars, one series per other column",
			table: &Table{Columns: []string{"referrer", "visits", "signups"}, Rows: [][]any{{"google.com", int64(1840), int64(12)}}},
			want: &ChartData{Type: workspace.ChartBar, XField: "referrer", Labels: []string{"google.com"},
				Series: []Series{{Name: "visits", Values: []*float64{ptr(1840)}}, {Name: "signups", Values: []*float64{ptr(12)}}},
				Meta:   Meta{RowCount: 1}},
		},
		{
			name:    "empty",
			table:   &Table{Columns: []string{"week", "pageviews"}, Rows: [][]any{}},
			wantErr: "the query returned no rows; widen the date range or remove filters",
		},
		{
			name:    "a measure with no finite number",
			table:   &Table{Columns: []string{"page", "note"}, Rows: [][]any{{"/", "fine"}, {"/docs", "NaN"}}},
			wantErr: "field note has no numeric values; choose a numeric field or aggregate",
		},
		{
			name:    "one column",
			table:   &Table{Columns: []string{"value"}, Rows: [][]any{{int64(3)}}},
			wantErr: "a chart needs a label column and a numeric column",
		},
		{
			name:    "ragged rows",
			table:   &Table{Columns: []string{"page", "visits"}, Rows: [][]any{{"/"}}},
			wantErr: "every row needs one cell per column",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := TableChart(tc.table)
			if tc.wantErr != "" {
				if askbi.ErrorCode(err) != askbi.InvalidResult || askbi.ErrorMessage(err) != tc.wantErr {
					t.Fatalf("TableChart error = %v (%v), want invalid_result %q", err, got, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("TableChart mismatch (-want +got):\n%s", diff)
			}
		})
	}
}
