package mock

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/askbi/askbi/ask"
)

// timeFields are the field names the script reads as time: a chart of
// one is a line, and "last N weeks" filters on it.
var timeFields = map[string]bool{"day": true, "date": true, "week": true, "month": true, "quarter": true, "year": true, "hour": true}

func isTime(field string) bool {
	f := strings.ToLower(field)
	return timeFields[f] || strings.HasSuffix(f, "_date") || strings.HasSuffix(f, "_at") || strings.HasSuffix(f, "_day")
}

// selectedAnswer is the flow for any other question while one dataset
// is selected: it runs and charts that dataset (dataAnswer: the X field
// and series the question names, "last 8 weeks"), and when the
// question names another dataset it says which one it used.
func selectedAnswer(st turnState, t target, n int, now func() time.Time) ask.ModelReply {
	t.selected = true
	return dataAnswer(st, parse(st.question), t, n, now)
}

// newest is the latest value of column x: from the rows where they were
// shared, else from the date range the aggregates level shows; "" when
// neither is there.
func newest(rows []any, x int, agg any) string {
	if len(rows) > 0 {
		if last, _ := rows[len(rows)-1].([]any); x < len(last) {
			return fmt.Sprint(last[x])
		}
	}
	a, _ := agg.(map[string]any)
	s, _ := a["latest"].(string)
	return s
}

// since is the first value of the time field that "the last k units"
// keeps: k-1 units before the newest value (so the newest period counts
// as one), else k units before now; in the layout of the field's values
// (2006-01-02, 2006-01 or 2006).
func since(latest, field string, now time.Time, k int, unit string) string {
	layout := "2006-01-02"
	switch strings.ToLower(field) {
	case "month":
		layout = "2006-01"
	case "year":
		layout = "2006"
	}
	back := func(t time.Time, k int) time.Time { return addUnits(t, unit, -k) }
	for _, l := range []string{"2006-01-02", "2006-01", "2006"} {
		if t, err := time.Parse(l, latest); err == nil && len(latest) == len(l) {
			return back(t, k-1).Format(l)
		}
	}
	return back(now.UTC(), k).Format(layout)
}

func asSlice(v any) []any {
	s, _ := v.([]any)
	return s
}

// placeOne is "put it on the Growth dashboard" after a preview: the
// conversation's newest preview, placed on the dashboard named (the
// one of that name, else the only one whose name holds its words) or
// the one selected, which the product holds for approval. A dashboard
// of another project than the chart's data cannot take it: the answer
// says so and names the dashboards that can.
func placeOne(req ask.ModelRequest, st turnState, n int) ask.ModelReply {
	_, made := outputOf(req, "create_chart_preview")
	c := asMap(made["chart"])
	chart, _ := c["id"].(string)
	name := strings.TrimSpace(putOn.FindStringSubmatch(st.question)[1])
	if chart == "" {
		return say("Which chart? Ask for a preview first, then tell me where to put it.")
	}
	place := func(dashboard string) ask.ModelReply {
		out, r := st.need(step{"add_preview_to_dashboard", map[string]any{"chart_id": chart, "dashboard_id": dashboard}}, n)
		if r != nil {
			return *r
		}
		if e, ok := out["error"].(map[string]any); ok {
			return failed(e)
		}
		return say("Added %v to %v.", c["name"], asMap(out["dashboard"])["name"])
	}
	if d := st.handles["dashboard"]; len(d) == 1 && (name == "" || slices.Contains([]string{"it", "this", "that", "here"}, strings.ToLower(name))) {
		return place(d[0])
	}
	found, r := st.need(step{"search_workspace", map[string]any{"query": name, "types": []any{"dashboard"}}}, n)
	if r != nil {
		return *r
	}
	var exact, loose []map[string]any
	for _, x := range asSlice(found["results"]) {
		m := asMap(x)
		if strings.EqualFold(fmt.Sprint(m["name"]), name) {
			exact = append(exact, m)
		}
		loose = append(loose, m)
	}
	match := exact
	if len(match) == 0 {
		match = loose
	}
	switch {
	case len(match) == 0:
		return say("I found no dashboard called %s. Say the dashboard's name, or choose one in the chart's Dashboard menu.", name)
	case len(match) > 1:
		var names []string
		for _, m := range match {
			names = append(names, fmt.Sprint(m["name"]))
		}
		return say("Which dashboard do you mean: %s? Say its whole name, or select it.", orList(names))
	}
	d := match[0]
	if cp, _ := c["project_id"].(string); cp != "" && d["project_id"] != nil && d["project_id"] != cp {
		all, r := st.need(step{"search_workspace", map[string]any{"query": "", "types": []any{"dashboard"}, "limit": 50}}, n)
		if r != nil {
			return *r
		}
		var fit []string
		for _, x := range asSlice(all["results"]) {
			if m := asMap(x); m["project_id"] == cp {
				fit = append(fit, fmt.Sprint(m["name"]))
			}
		}
		line := fmt.Sprintf("%v cannot go on %v: that dashboard belongs to another project than the chart's data, and a chart can only go on a dashboard of its own project.", c["name"], d["name"])
		if len(fit) == 0 {
			return say("%s I see no dashboard in its project.", line)
		}
		return say("%s It can go on %s: say “put it on %s”, or choose it in the chart's Dashboard menu.", line, orList(fit), fit[0])
	}
	return place(fmt.Sprint(d["id"]))
}

// orList is "a", "a or b", "a, b or c".
func orList(parts []string) string {
	if len(parts) < 2 {
		return strings.Join(parts, "")
	}
	return strings.Join(parts[:len(parts)-1], ", ") + " or " + parts[len(parts)-1]
}

// breakdown is a breakdown named in words: "by country", "which plan".
var breakdown = regexp.MustCompile(`(?i)\b(?:by|per|each|which|every)\s+([a-z_]+)`)

// chartQuestion is the flow for any other question while one chart is
// selected: read the chart (the client shows it) and say what it holds.
// When the question asks for more than the chart draws (a period, "last
// 8 weeks", or a breakdown the chart does not have), it goes on with
// the chart's first dataset (dataAnswer), so the answer is a preview of
// that.
func chartQuestion(st turnState, handle string, n int, now func() time.Time) ask.ModelReply {
	out, r := st.need(step{"get_chart_data", map[string]any{"chart_id": handle}}, n)
	if r != nil {
		return *r
	}
	var id string
	if ds := asSlice(out["datasets"]); len(ds) > 0 {
		id, _ = asMap(ds[0])["id"].(string)
	}
	q := parse(st.question)
	if id != "" && asksMore(st.question, out) {
		return dataAnswer(st, q, target{id: id, scoped: true}, n, now)
	}
	name := fmt.Sprint(asMap(out["chart"])["name"])
	var cols []string
	for _, c := range asSlice(out["columns"]) {
		cols = append(cols, fmt.Sprint(c))
	}
	other, r := otherDataset(st, q, id, name, cols, n)
	if r != nil {
		return *r
	}
	if other != "" {
		return say("%s", sentences(fmt.Sprintf("Your question names %s, but I read %s, the chart you selected; to use %s, select it instead.", other, name, other), chartLine(out, q)))
	}
	return say("%s", chartLine(out, q))
}

// asksMore reports whether question asks for a period, or a breakdown by
// a field the chart read in out does not draw.
func asksMore(question string, out map[string]any) bool {
	if lastPeriods.MatchString(question) {
		return true
	}
	m := breakdown.FindStringSubmatch(question)
	if m == nil {
		return false
	}
	want := strings.ToLower(m[1])
	for _, c := range asSlice(out["columns"]) {
		if c := strings.ToLower(fmt.Sprint(c)); c == want || c == strings.TrimSuffix(want, "s") {
			return false
		}
	}
	return true
}

// chartLine says what a chart read holds, as far as the sharing level
// showed it: its type, its series by its X field and how many points,
// then what the numbers say (numbers).
func chartLine(out map[string]any, q query) string {
	c := asMap(out["chart"])
	name := fmt.Sprint(c["name"])
	cols := asSlice(out["columns"])
	line := fmt.Sprintf("%s is a %v chart", name, out["chart_type"])
	if len(cols) < 2 {
		return line + "."
	}
	x, series := fmt.Sprint(cols[0]), make([]string, 0, len(cols)-1)
	for _, s := range cols[1:] {
		series = append(series, fmt.Sprint(s))
	}
	n, _ := out["row_count"].(float64)
	line += fmt.Sprintf(" of %s by %s with %s.", strings.Join(series, " and "), x, count(int(n), "point"))
	return sentences(line, numbers(name, x, series[0], out, levelOf(out), q, nil))
}
