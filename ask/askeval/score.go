package askeval

import (
	"encoding/json"
	"fmt"
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/askbi/askbi/ask"
	"github.com/askbi/askbi/workspace"
)

// Reason is why a run failed: Databricks Genie's reasons (empty result,
// missing rows, extra rows, wrong number, wrong dataset, needless
// approval, refused, error), and one for each other check a case can
// make. Reasons are stable: reports are compared across versions.
type Reason string

// Reasons a run fails.
const (
	// Error: the turn failed (the model, a tool or the assistant
	// answered an error), or the data it needed failed to load.
	Error Reason = "error"
	// Refused: the case wants data and the answer read none.
	Refused Reason = "refused"
	// WrongDataset: the answer read none of the datasets or charts the
	// case allows.
	WrongDataset Reason = "wrong_dataset"
	// EmptyResult: the rows the tools returned are empty; the gold's
	// are not.
	EmptyResult Reason = "empty_result"
	// MissingRows: gold rows are not among those the tools returned.
	MissingRows Reason = "missing_rows"
	// ExtraRows: the tools returned rows the gold does not have.
	ExtraRows Reason = "extra_rows"
	// WrongColumns: the rows the tools returned lack a gold column.
	WrongColumns Reason = "wrong_columns"
	// WrongNumber: the answer does not state a number it must.
	WrongNumber Reason = "wrong_number"
	// WrongFilters: a filter the case wants does not hold on the data.
	WrongFilters Reason = "wrong_filters"
	// WrongBreakdown: the data is not broken down by the field the case
	// wants.
	WrongBreakdown Reason = "wrong_breakdown"
	// WrongChart: no chart of the type the case wants was made or
	// changed.
	WrongChart Reason = "wrong_chart"
	// MissingTool: a tool that must run did not complete.
	MissingTool Reason = "missing_tool"
	// ForbiddenTool: a tool that must not run ran.
	ForbiddenTool Reason = "forbidden_tool"
	// NeedlessApproval: an approval was asked where the case wants none.
	NeedlessApproval Reason = "needless_approval"
	// MissingApproval: the case wants an approval asked, and none was.
	MissingApproval Reason = "missing_approval"
	// MissingMention: the answer does not say a word it must.
	MissingMention Reason = "missing_mention"
	// Judged: the LLM judge found the answer wrong.
	Judged Reason = "judge"
)

// Failure is one failed check of a run: its reason and, in words, what
// was found. A detail holds a cell of the host's data only where the
// sharing level shares rows with the model.
type Failure struct {
	Reason Reason `json:"reason"`
	Detail string `json:"detail,omitempty"`
}

// score checks out against c's expectations, and the rows its tools
// returned against gold (nil when the case has none).
func score(c Case, out outcome, gold *table, level ask.Sharing) []Failure {
	e := c.Expect
	if out.err != nil || out.state == ask.TurnFailed || out.state == ask.TurnStopped {
		detail := "the turn ended " + string(out.state)
		if out.err != nil {
			detail = errText(out.err)
		}
		return []Failure{{Reason: Error, Detail: detail}}
	}
	var fs []Failure
	fail := func(r Reason, format string, args ...any) {
		fs = append(fs, Failure{Reason: r, Detail: fmt.Sprintf(format, args...)})
	}
	switch asked := len(out.approvals) > 0; {
	case e.Approval && !asked:
		fail(MissingApproval, "no approval was asked")
	case !e.Approval && asked:
		fail(NeedlessApproval, "an approval was asked for %s", strings.Join(out.approvals, ", "))
	}
	for _, t := range e.Run {
		if !slices.ContainsFunc(out.calls, func(c call) bool { return c.tool == t && c.state == ask.RunCompleted }) {
			fail(MissingTool, "%s did not run", t)
		}
	}
	for _, t := range e.NotRun {
		if slices.ContainsFunc(out.calls, func(c call) bool { return c.tool == t && c.ran() }) {
			fail(ForbiddenTool, "%s ran", t)
		}
	}
	refused := false
	if e.wantsData() {
		if len(out.results) == 0 {
			refused = true
			if failed := failedCalls(out.calls); failed != "" {
				fail(Error, "no data was read: %s", failed)
			} else {
				fail(Refused, "no data was read")
			}
		} else {
			fs = append(fs, dataChecks(e, out.results, gold, level)...)
		}
	}
	if !refused {
		stated := numbers(out.answer)
		for _, n := range e.Numbers {
			if !slices.ContainsFunc(stated, func(v float64) bool { return math.Abs(v-n.Value) <= n.Tolerance+1e-9*math.Abs(n.Value) }) {
				fail(WrongNumber, "the answer does not state %s", numberText(n))
			}
		}
	}
	for _, m := range e.Mentions {
		if !mentions(out.answer, m) {
			fail(MissingMention, "the answer does not mention %q", m)
		}
	}
	return fs
}

// mentions reports whether text says word, ignoring case, as a word of
// its own: "DE" is not in "does".
func mentions(text, word string) bool {
	re := regexp.QuoteMeta(strings.TrimSpace(word))
	if w := regexp.MustCompile(`^\w`); w.MatchString(word) {
		re = `\b` + re
	}
	if w := regexp.MustCompile(`\w$`); w.MatchString(word) {
		re += `\b`
	}
	return regexp.MustCompile(`(?i)` + re).MatchString(text)
}

// failedCalls names the calls that failed, with their codes, or "".
func failedCalls(calls []call) string {
	var out []string
	for _, c := range calls {
		if c.state != ask.RunFailed {
			continue
		}
		var o struct {
			Error *ask.ErrorBody `json:"error"`
		}
		json.Unmarshal(c.output, &o)
		if o.Error != nil {
			out = append(out, c.tool+" failed ("+o.Error.Code+": "+o.Error.Message+")")
		} else {
			out = append(out, c.tool+" failed")
		}
	}
	return strings.Join(out, "; ")
}

// dataChecks are the checks on the data the answer read.
func dataChecks(e Expect, results []result, gold *table, level ask.Sharing) []Failure {
	var fs []Failure
	fail := func(r Reason, format string, args ...any) {
		fs = append(fs, Failure{Reason: r, Detail: fmt.Sprintf(format, args...)})
	}
	allowed := append(slices.Clone(e.Datasets), e.Charts...)
	var onAllowed []result
	var usedIDs []string
	for _, r := range results {
		ids := append(slices.Clone(r.datasets), r.chart)
		for _, id := range ids {
			if id != "" && !slices.Contains(usedIDs, id) {
				usedIDs = append(usedIDs, id)
			}
		}
		if slices.ContainsFunc(ids, func(id string) bool { return id != "" && slices.Contains(allowed, id) }) {
			onAllowed = append(onAllowed, r)
		}
	}
	used := results
	if len(allowed) > 0 {
		if len(onAllowed) == 0 {
			fail(WrongDataset, "read %s; want one of %s", orNothing(usedIDs), strings.Join(allowed, ", "))
		} else {
			// The other checks look at the data of the right datasets:
			// a look at another one on the way is no fault.
			used = onAllowed
		}
	}
	if e.ChartType != "" && !slices.ContainsFunc(used, func(r result) bool { return r.chartType == e.ChartType }) {
		fail(WrongChart, "no %s chart was made or changed", e.ChartType)
	}
	for _, f := range e.Filters {
		holds := func(g workspace.Filter) bool { return sameFilter(f, g) }
		if !slices.ContainsFunc(used, func(r result) bool {
			return slices.ContainsFunc(r.filters, holds) || slices.ContainsFunc(r.conditions, holds)
		}) {
			fail(WrongFilters, "the filter %s %s %s does not hold on the data read", f.Field, f.Op, valueText(f.Value))
		}
	}
	if b := e.Breakdown; b != "" && !slices.ContainsFunc(used, func(r result) bool {
		return strings.EqualFold(r.xField, b) || r.xField == "" && r.t != nil && len(r.t.columns) > 0 && strings.EqualFold(r.t.columns[0], b)
	}) {
		fail(WrongBreakdown, "the data is not broken down by %s", b)
	}
	if gold != nil {
		fs = append(fs, compareGold(e.Gold.Columns, used, gold, level)...)
	}
	return fs
}

// sameFilter reports whether filter g says what f says: the same field
// (ignoring case) and operator, and the same value (as sameCell
// compares), an "in" list in any order.
func sameFilter(f, g workspace.Filter) bool {
	if !strings.EqualFold(f.Field, g.Field) || f.Op != g.Op {
		return false
	}
	fl, fIsList := f.Value.([]any)
	gl, gIsList := g.Value.([]any)
	if !fIsList || !gIsList {
		return !fIsList && !gIsList && sameCell(f.Value, g.Value)
	}
	if len(fl) != len(gl) {
		return false
	}
	used := make([]bool, len(gl))
	for _, v := range fl {
		i := slices.IndexFunc(gl, func(w any) bool { return sameCell(v, w) })
		for i >= 0 && used[i] {
			j := slices.IndexFunc(gl[i+1:], func(w any) bool { return sameCell(v, w) })
			if j < 0 {
				i = -1
				break
			}
			i += j + 1
		}
		if i < 0 {
			return false
		}
		used[i] = true
	}
	return true
}

// diff is how a result's rows differ from the gold's.
type diff struct {
	r                  result
	missingCol         string
	missing, extra     int
	missingEx, extraEx [][]any
	empty              bool
}

func (d diff) size() int {
	if d.missingCol != "" {
		return math.MaxInt
	}
	return d.missing + d.extra
}

// compareGold compares the gold's rows with those of the result that
// comes closest, on the gold's columns (cols, or all of them).
func compareGold(cols []string, results []result, gold *table, level ask.Sharing) []Failure {
	if len(cols) == 0 {
		cols = gold.columns
	}
	var best *diff
	for _, r := range results {
		if r.t == nil {
			continue
		}
		d := rowDiff(cols, r, gold)
		if best == nil || d.size() < best.size() {
			best = &d
		}
	}
	if best == nil {
		return []Failure{{Reason: Refused, Detail: "no rows were read"}}
	}
	var fs []Failure
	switch {
	case best.missingCol != "":
		return []Failure{{Reason: WrongColumns, Detail: fmt.Sprintf("the rows %s returned have no column %q", best.r.tool, best.missingCol)}}
	case best.empty && gold.count > 0:
		return []Failure{{Reason: EmptyResult, Detail: fmt.Sprintf("%s returned no rows; the gold has %d", best.r.tool, gold.count)}}
	}
	if best.missing > 0 {
		fs = append(fs, Failure{Reason: MissingRows, Detail: fmt.Sprintf("%d of the gold's %d rows are not among those %s returned%s",
			best.missing, gold.count, best.r.tool, examples(best.missingEx, level))})
	}
	if best.extra > 0 {
		fs = append(fs, Failure{Reason: ExtraRows, Detail: fmt.Sprintf("%s returned %d rows the gold does not have%s",
			best.r.tool, best.extra, examples(best.extraEx, level))})
	}
	return fs
}

// rowDiff compares r's rows with the gold's on cols, as multisets. When
// r holds only the first of its rows, the gold rows missing from them
// count only beyond those it did not show.
func rowDiff(cols []string, r result, gold *table) diff {
	d := diff{r: r, empty: r.t.count == 0}
	var gi, ri []int
	for _, c := range cols {
		g, x := column(gold.columns, c), column(r.t.columns, c)
		if x < 0 {
			d.missingCol = c
			return d
		}
		gi, ri = append(gi, g), append(ri, x)
	}
	pick := func(row []any, idx []int) []any {
		out := make([]any, len(idx))
		for i, j := range idx {
			if j < len(row) {
				out[i] = row[j]
			}
		}
		return out
	}
	used := make([]bool, len(r.t.rows))
	for _, grow := range gold.rows {
		g := pick(grow, gi)
		found := false
		for k, rrow := range r.t.rows {
			if !used[k] && sameRow(g, pick(rrow, ri)) {
				used[k], found = true, true
				break
			}
		}
		if !found {
			d.missing++
			if len(d.missingEx) < 3 {
				d.missingEx = append(d.missingEx, g)
			}
		}
	}
	for k, u := range used {
		if !u {
			d.extra++
			if len(d.extraEx) < 3 {
				d.extraEx = append(d.extraEx, pick(r.t.rows[k], ri))
			}
		}
	}
	if unseen := r.t.count - len(r.t.rows); unseen > 0 {
		d.missing = max(0, d.missing-unseen)
		if d.missing == 0 {
			d.missingEx = nil
		}
	}
	return d
}

// column is the index of the column called name (ignoring case), or -1.
func column(cols []string, name string) int {
	return slices.IndexFunc(cols, func(c string) bool { return strings.EqualFold(c, name) })
}

func sameRow(a, b []any) bool {
	for i := range a {
		if !sameCell(a[i], b[i]) {
			return false
		}
	}
	return true
}

// sameCell compares two cells: as numbers when both read as one (a
// chart's label "2026" is the year 2026; 43850.00 is 43850), else as
// text.
func sameCell(a, b any) bool {
	if a == nil || b == nil {
		return a == nil && b == nil
	}
	x, okA := toNumber(a)
	y, okB := toNumber(b)
	if okA && okB {
		return math.Abs(x-y) <= 1e-9*math.Max(1, math.Max(math.Abs(x), math.Abs(y)))
	}
	return strings.TrimSpace(fmt.Sprint(a)) == strings.TrimSpace(fmt.Sprint(b))
}

func toNumber(v any) (float64, bool) {
	switch x := v.(type) {
	case json.Number:
		f, err := x.Float64()
		return f, err == nil
	case float64:
		return x, true
	case float32:
		return float64(x), true
	case int:
		return float64(x), true
	case int64:
		return float64(x), true
	case int32:
		return float64(x), true
	case string:
		f, err := strconv.ParseFloat(strings.TrimSpace(x), 64)
		return f, err == nil && !math.IsInf(f, 0) && !math.IsNaN(f)
	}
	return 0, false
}

// examples shows rows in a failure's detail, only where the sharing
// level shares rows with the model: a report goes where the model's
// input would not.
func examples(rows [][]any, level ask.Sharing) string {
	if level != ask.SharingRows || len(rows) == 0 {
		return ""
	}
	var parts []string
	for _, r := range rows {
		b, _ := json.Marshal(r)
		parts = append(parts, string(b))
	}
	return ", e.g. " + strings.Join(parts, " ")
}

func orNothing(ids []string) string {
	if len(ids) == 0 {
		return "nothing"
	}
	return strings.Join(ids, ", ")
}

func numberText(n Number) string {
	s := strconv.FormatFloat(n.Value, 'f', -1, 64)
	if n.Tolerance > 0 {
		s += " ± " + strconv.FormatFloat(n.Tolerance, 'f', -1, 64)
	}
	return s
}

func valueText(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

// numberRe finds the numbers of a text: 3410, 3,410, 62,350.00, 6.5%,
// 62.35k, $1.2M, 1.6 million. A number inside a word or date (the 11 of
// 2026-11-23) is none.
var numberRe = regexp.MustCompile(`(?i)(^|[^\w.,-])(-)?[$€£]?(\d{1,3}(?:,\d{3})+|\d+)(\.\d+)?(\s?(?:k|m|bn|thousand|million|billion)\b)?`)

// numbers are the numbers text states.
func numbers(text string) []float64 {
	var out []float64
	for _, m := range numberRe.FindAllStringSubmatch(text, -1) {
		f, err := strconv.ParseFloat(strings.ReplaceAll(m[3], ",", "")+m[4], 64)
		if err != nil {
			continue
		}
		if m[2] == "-" {
			f = -f
		}
		switch strings.ToLower(strings.TrimSpace(m[5])) {
		case "k", "thousand":
			f *= 1e3
		case "m", "million":
			f *= 1e6
		case "bn", "billion":
			f *= 1e9
		}
		out = append(out, f)
	}
	return out
}
