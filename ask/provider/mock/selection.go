package mock

import (
	"fmt"
	"regexp"
	"slices"
	"strconv"
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

// chartSelection is the flow for any other question while one dataset
// is selected: run it, then chart it. The X field is a field the
// question names (a breakdown in words: "which country", "by plan"),
// else its first field that is not a number; the series are the numeric
// fields the question names, else the first. "last 8 weeks" (days,
// months, years) keeps the periods that end with the newest value (of
// the rows, or of the date range the aggregates level shows), else those
// before now. ok is false once the flow has nothing more to do.
func chartSelection(st turnState, tool string, out map[string]any, handle string, n int, now func() time.Time) (ask.ModelReply, bool) {
	switch tool {
	case "":
		return call(n, "run_dataset", map[string]any{"dataset_id": handle}), true
	case "run_dataset":
		ds, _ := out["dataset"].(map[string]any)
		var cols []string
		for _, c := range asSlice(out["columns"]) {
			cols = append(cols, fmt.Sprint(c))
		}
		if len(cols) < 2 || ds == nil {
			return say("The dataset does not have a field to chart."), true
		}
		rows := asSlice(out["rows"])
		aggs, _ := out["aggregates"].(map[string]any)
		isNum := func(i int) bool {
			a, _ := aggs[cols[i]].(map[string]any)
			return a["sum"] != nil || numeric(rows, i)
		}
		words := map[string]bool{}
		for _, w := range wordRe.FindAllString(strings.ToLower(st.question), -1) {
			words[w], words[strings.TrimSuffix(w, "s")] = true, true
		}
		named := func(c string) bool { return words[strings.ToLower(c)] }
		x, named0 := -1, false
		for i, c := range cols {
			if !isNum(i) && named(c) {
				x, named0 = i, true
				break
			}
		}
		for i := range cols {
			if x < 0 && !isNum(i) {
				x = i
			}
		}
		if x < 0 {
			x = 0
		}
		var ys []any
		for i, c := range cols {
			if i != x && isNum(i) && named(c) {
				ys = append(ys, c)
			}
		}
		for i, c := range cols {
			if len(ys) == 0 && i != x && (isNum(i) || len(aggs) == 0 && len(rows) == 0) {
				ys = append(ys, c)
			}
		}
		typ := "bar"
		if isTime(cols[x]) {
			typ = "line"
		}
		name := title(fmt.Sprint(ds["name"]))
		if named0 && !strings.Contains(strings.ToLower(name), strings.ToLower(cols[x])) {
			name += " by " + cols[x]
		}
		args := map[string]any{"dataset_id": ds["id"], "chart_type": typ, "x_field": cols[x], "y_fields": ys}
		var filters []any
		if m := lastPeriods.FindStringSubmatch(st.question); m != nil && isTime(cols[x]) {
			k, _ := strconv.Atoi(m[1])
			if from := since(newest(rows, x, aggs[cols[x]]), cols[x], now(), k, strings.ToLower(m[2])); k > 0 && from != "" {
				filters = append(filters, map[string]any{"field": cols[x], "op": "gte", "value": from})
				name += fmt.Sprintf(", last %d %ss", k, strings.ToLower(m[2]))
			}
		}
		if fs := withScope(filters, ds); fs != nil {
			args["filters"] = fs
		}
		args["name"] = name
		return call(n, "create_chart_preview", args), true
	case "create_chart_preview":
		if reply, ok := offer(out); ok {
			return reply, true
		}
		c, _ := out["chart"].(map[string]any)
		return say("Here is a preview of %v.", c["name"]), true
	}
	return ask.ModelReply{}, false
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
	back := func(t time.Time, k int) time.Time {
		switch unit {
		case "day":
			return t.AddDate(0, 0, -k)
		case "week":
			return t.AddDate(0, 0, -7*k)
		case "month":
			return t.AddDate(0, -k, 0)
		}
		return t.AddDate(-k, 0, 0)
	}
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

// placeOne is "put it on the Growth overview dashboard" after a preview:
// the conversation's newest preview, placed on the dashboard named (or
// the one selected), which the product holds for approval.
func placeOne(req ask.ModelRequest, st turnState, tool string, out map[string]any, n int) ask.ModelReply {
	_, made := outputOf(req, "create_chart_preview")
	c, _ := made["chart"].(map[string]any)
	chart, _ := c["id"].(string)
	name := strings.TrimSpace(putOn.FindStringSubmatch(st.question)[1])
	switch tool {
	case "":
		if chart == "" {
			return say("Which chart? Ask for a preview first, then tell me where to put it.")
		}
		if d := st.handles["dashboard"]; len(d) == 1 && (name == "" || slices.Contains([]string{"it", "this", "that"}, strings.ToLower(name))) {
			return call(n, "add_preview_to_dashboard", map[string]any{"chart_id": chart, "dashboard_id": d[0]})
		}
		return call(n, "search_workspace", map[string]any{"query": name, "types": []string{"dashboard"}})
	case "search_workspace":
		var match []string
		for _, r := range asSlice(out["results"]) {
			m, _ := r.(map[string]any)
			if strings.EqualFold(fmt.Sprint(m["name"]), name) {
				match = append(match, fmt.Sprint(m["id"]))
			}
		}
		if len(match) != 1 {
			return say("Which dashboard? I found no single dashboard called %s; select one.", name)
		}
		return call(n, "add_preview_to_dashboard", map[string]any{"chart_id": chart, "dashboard_id": match[0]})
	case "add_preview_to_dashboard":
		d, _ := out["dashboard"].(map[string]any)
		return say("Added %v to %v.", c["name"], d["name"])
	}
	return say("Done.")
}

// breakdown is a breakdown named in words: "by country", "which plan".
var breakdown = regexp.MustCompile(`(?i)\b(?:by|per|each|which|every)\s+([a-z_]+)`)

// chartQuestion is the flow for any other question while one chart is
// selected: read the chart (the client shows it) and say what it holds.
// When the question asks for more than the chart draws (a period, "last
// 8 weeks", or a breakdown the chart does not have), it continues down
// chartSelection with the chart's first dataset, so the answer is a
// preview of that. ok is false once the flow has nothing more to do.
func chartQuestion(st turnState, tool string, out map[string]any, handle string, n int, now func() time.Time) (ask.ModelReply, bool) {
	switch tool {
	case "":
		return call(n, "get_chart_data", map[string]any{"chart_id": handle}), true
	case "get_chart_data":
		var id string
		if ds := asSlice(out["datasets"]); len(ds) > 0 {
			m, _ := ds[0].(map[string]any)
			id, _ = m["id"].(string)
		}
		if id != "" && asksMore(st.question, out) {
			return chartSelection(st, "", nil, id, n, now)
		}
		return say("%s", chartLine(out)), true
	}
	return chartSelection(st, tool, out, "", n, now)
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

// chartLine says in one sentence what a chart read holds, as far as the
// sharing level showed it: its type, its series by its X field, how many
// points, and the first and last (the rows), or the range of each (the
// aggregates).
func chartLine(out map[string]any) string {
	c, _ := out["chart"].(map[string]any)
	cols := asSlice(out["columns"])
	line := fmt.Sprintf("%v is a %v chart", c["name"], out["chart_type"])
	if len(cols) < 2 {
		return line + "."
	}
	x, series := fmt.Sprint(cols[0]), make([]string, 0, len(cols)-1)
	for _, s := range cols[1:] {
		series = append(series, fmt.Sprint(s))
	}
	n, _ := out["row_count"].(float64)
	line += fmt.Sprintf(" of %s by %s with %s", strings.Join(series, " and "), x, count(int(n), "point"))
	rows := asSlice(out["rows"])
	if len(rows) > 0 {
		first, _ := rows[0].([]any)
		last, _ := rows[len(rows)-1].([]any)
		if len(first) > 1 && len(last) > 1 {
			line += fmt.Sprintf(": %s was %s on %v and %s on %v", series[0], num(first[1]), first[0], num(last[1]), last[0])
		}
		return line + "."
	}
	aggs, _ := out["aggregates"].(map[string]any)
	if a, _ := aggs[x].(map[string]any); a["earliest"] != nil {
		line += fmt.Sprintf(", from %v to %v", a["earliest"], a["latest"])
	}
	if a, _ := aggs[series[0]].(map[string]any); a["min"] != nil {
		line += fmt.Sprintf("; %s ranges from %s to %s", series[0], num(a["min"]), num(a["max"]))
	}
	return line + " (the rows themselves are not shared with me here)."
}
