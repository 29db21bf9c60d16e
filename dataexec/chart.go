package dataexec

import (
	"fmt"
	"regexp"
	"strings"
	"unicode/utf8"

	"github.com/askbi/askbi"
	"github.com/askbi/askbi/workspace"
)

// TruncatedPoints is the TruncatedReason of chart data that drew only the
// first Options.MaxChartPoints rows.
const TruncatedPoints = "point_cap"

// Defaults of Options.SampleRows and Options.MaxChartPoints, which
// [TableChart] uses too.
const (
	DefaultSampleRows     = 200
	DefaultMaxChartPoints = 1000
)

// Limits on charts.
const (
	maxSeries     = 10
	maxLabelLen   = 200 // characters; longer labels are cut with "…"
	maxEntityName = 100
)

// ChartSpec describes a chart to create or update.
type ChartSpec struct {
	// DatasetID is the dataset to draw. UpdateChart keeps the chart's
	// dataset when it is empty.
	DatasetID string              `json:"dataset_id"`
	Name      string              `json:"name"`
	Type      workspace.ChartType `json:"chart_type"`
	// XField gives the labels; it may be empty only for a KPI chart.
	XField string `json:"x_field,omitempty"`
	// YFields give one numeric series each: 1 to 10 fields, exactly one for
	// pie, doughnut and KPI charts. A table chart is built the same way: the
	// X field and then numeric columns.
	YFields []string `json:"y_fields"`
	// Filters keep the rows the chart draws, as a dataset run's filters
	// do (at most 20): a preview keeps the filters and date range of the
	// answer it charts. UpdateChart leaves a chart's filters as they are.
	Filters []workspace.Filter `json:"filters,omitempty"`
}

// Series is one value field of a chart. A value is null where the cell is
// null or not a finite number.
type Series struct {
	Name   string     `json:"name"`
	Values []*float64 `json:"values"`
}

// ChartData is what a chart draws: one label per row (from the X field)
// and one series per Y field, aligned with the labels.
type ChartData struct {
	Type workspace.ChartType `json:"chart_type"`
	// XField names the field the labels come from, for the axis title;
	// empty for a KPI chart.
	XField string   `json:"x_field,omitempty"`
	Labels []string `json:"labels"`
	Series []Series `json:"series"`
	Meta
}

// validateChartSpec checks a spec's shape before anything runs. Errors are
// InvalidArgument naming the input.
func validateChartSpec(s ChartSpec) error {
	bad := func(format string, args ...any) error {
		return askbi.Errorf(askbi.InvalidArgument, format, args...)
	}
	if !validEntityName(s.Name) {
		return bad("name: must be 1 to %d printable characters", maxEntityName)
	}
	if !s.Type.Valid() {
		return bad("chart_type: must be one of line, bar, area, pie, doughnut, table, kpi")
	}
	if s.XField == "" && s.Type != workspace.ChartKPI {
		return bad("x_field: required for a %s chart", s.Type)
	}
	if s.XField != "" && !validName(s.XField) {
		return bad("x_field: %s", nameLimitMsg)
	}
	one := s.Type == workspace.ChartPie || s.Type == workspace.ChartDoughnut || s.Type == workspace.ChartKPI
	switch {
	case len(s.YFields) == 0 || len(s.YFields) > maxSeries:
		return bad("y_fields: give 1 to %d value fields", maxSeries)
	case one && len(s.YFields) != 1:
		return bad("y_fields: a %s chart takes exactly one value field", s.Type)
	}
	for i, y := range s.YFields {
		if !validName(y) {
			return bad("y_fields: %s", nameLimitMsg)
		}
		for _, prev := range s.YFields[:i] {
			if prev == y {
				return bad("y_fields: %s appears twice", y)
			}
		}
	}
	return nil
}

// validEntityName reports whether a chart or dataset name is usable.
func validEntityName(s string) bool {
	s = strings.TrimSpace(s)
	return s != "" && utf8.RuneCountInString(s) <= maxEntityName && validName(s)
}

// buildChart turns a result into chart data. A field that is not in the
// result is InvalidResult. With validate, as before a chart is created,
// the first sampleRows rows must exist and hold at least one finite number
// for every Y field, else InvalidResult with a correction the agent can
// act on. Charts draw at most maxPoints rows.
func buildChart(res *Result, s ChartSpec, validate bool, sampleRows, maxPoints int) (*ChartData, error) {
	// Only the rows the chart reads are decoded from a cached result.
	all := res.Head(max(sampleRows, maxPoints+1)).Rows()
	if validate && len(all) == 0 {
		return nil, askbi.Errorf(askbi.InvalidResult, "the query returned no rows; widen the date range or remove filters")
	}
	index := func(name string) (int, error) {
		for i, c := range res.Columns {
			if c == name {
				return i, nil
			}
		}
		return -1, askbi.Errorf(askbi.InvalidResult, "field %s is not in the dataset; available fields: %s", name, fieldList(res.Columns))
	}
	x := -1
	if s.XField != "" {
		var err error
		if x, err = index(s.XField); err != nil {
			return nil, err
		}
	}
	ys := make([]int, len(s.YFields))
	for i, name := range s.YFields {
		var err error
		if ys[i], err = index(name); err != nil {
			return nil, err
		}
		if validate && !hasNumber(all[:min(len(all), sampleRows)], ys[i]) {
			return nil, askbi.Errorf(askbi.InvalidResult, "field %s has no numeric values; choose a numeric field or aggregate", name)
		}
	}

	rows := all
	cd := &ChartData{Type: s.Type, XField: s.XField, Labels: []string{}, Meta: res.Meta}
	if len(rows) > maxPoints {
		rows = rows[:maxPoints]
		cd.Truncated, cd.TruncatedReason = true, TruncatedPoints
	}
	cd.RowCount = len(rows)
	if x >= 0 {
		cd.Labels = make([]string, len(rows))
		for i, row := range rows {
			cd.Labels[i] = label(row[x])
		}
	}
	cd.Series = make([]Series, len(ys))
	for i, col := range ys {
		vals := make([]*float64, len(rows))
		for j, row := range rows {
			if f, ok := number(row[col], true); ok {
				vals[j] = &f
			}
		}
		cd.Series[i] = Series{Name: s.YFields[i], Values: vals}
	}
	return cd, nil
}

// TableChart is the chart a table reads as, for an answer that is not a
// dataset (a remote tool's rows, drawn in the chat), built and checked
// the way a chart is before it is created (buildChart with validation,
// the default sample and point caps): the labels come from the first
// column that holds no number in the sample (the first column when every
// one does), a series from each other column (at most 10); a line chart
// when the label column is named for time (day, week, month, date …),
// else a bar chart. InvalidResult, with buildChart's correction, when
// the table has no rows, only one column, or a series with no finite
// number in the sample: such a table is not a chart.
func TableChart(t *Table) (*ChartData, error) {
	if t == nil || len(t.Columns) < 2 {
		return nil, askbi.Errorf(askbi.InvalidResult, "a chart needs a label column and a numeric column")
	}
	for _, row := range t.Rows {
		if len(row) != len(t.Columns) {
			return nil, askbi.Errorf(askbi.InvalidResult, "every row needs one cell per column")
		}
	}
	res := NewResult(t.Columns, t.Rows, Meta{Truncated: t.Truncated, TruncatedReason: t.TruncatedReason})
	sample := t.Rows[:min(len(t.Rows), DefaultSampleRows)]
	x := 0
	for i := range t.Columns {
		if !hasNumber(sample, i) {
			x = i
			break
		}
	}
	spec := ChartSpec{Name: "answer", Type: workspace.ChartBar, XField: t.Columns[x]}
	if timeName.MatchString(spec.XField) {
		spec.Type = workspace.ChartLine
	}
	for i, c := range t.Columns {
		if i != x && len(spec.YFields) < maxSeries {
			spec.YFields = append(spec.YFields, c)
		}
	}
	if err := validateChartSpec(spec); err != nil {
		return nil, askbi.Errorf(askbi.InvalidResult, "the answer's columns do not make a chart: %s", askbi.ErrorMessage(err))
	}
	return buildChart(res, spec, true, DefaultSampleRows, DefaultMaxChartPoints)
}

// timeName matches a column named for time, whose chart is a line.
var timeName = regexp.MustCompile(`(?i)(^|_)(time|timestamp|hour|day|date|week|month|quarter|year|period)s?($|_)`)

func hasNumber(rows [][]any, col int) bool {
	for _, row := range rows {
		if _, ok := number(row[col], true); ok {
			return true
		}
	}
	return false
}

// fieldList names up to 20 fields for a correction message.
func fieldList(cols []string) string {
	if len(cols) == 0 {
		return "none"
	}
	if len(cols) > 20 {
		return strings.Join(cols[:20], ", ") + fmt.Sprintf(" and %d more", len(cols)-20)
	}
	return strings.Join(cols, ", ")
}

// label is the text of an X value: "(none)" for null, and at most
// maxLabelLen characters.
func label(v any) string {
	s, ok := cellText(v)
	if !ok {
		return "(none)"
	}
	if utf8.RuneCountInString(s) > maxLabelLen {
		s = string([]rune(s)[:maxLabelLen-1]) + "…"
	}
	return s
}
