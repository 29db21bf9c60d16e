package mock

import (
	"fmt"
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
)

// level is how much of a run the model was shown (ask.Sharing as the
// output reads): the fields only, their counts and ranges, or the rows.
type level int

const (
	levelSchema level = iota
	levelAggregates
	levelRows
)

func levelOf(out map[string]any) level {
	if _, ok := out["rows"]; ok {
		return levelRows
	}
	if _, ok := out["aggregates"]; ok {
		return levelAggregates
	}
	return levelSchema
}

var (
	// newType is a follow-up that changes the last chart's type.
	newType = regexp.MustCompile(`(?i)^\s*(?:please\s+)?(?:(?:change|make|turn|switch|convert|show|draw)\s+(?:this|it|that|the chart)\b.*?|(?:as|into)\s+(?:a|an)\s+)\b(line|bar|area|pie|doughnut|table|kpi)\b`)
	// fieldPath is the field an error message starts with
	// ("dashboard_id: …").
	fieldPath = regexp.MustCompile(`^[a-z_]+(\[\d+\])?(\.[a-z_]+)*$`)
)

// numbers says in one sentence what the chart of y by x over data
// shows, as far as level lv showed the data (see dataAnswer). points
// are the values of y at given periods, read with filtered runs at the
// aggregates level.
func numbers(dsName, x, y string, data map[string]any, lv level, q query, points map[string]float64) string {
	yName := seriesName(dsName, y)
	unit := timeUnit(x)
	switch lv {
	case levelSchema:
		return fmt.Sprintf("At this team's sharing level I see only the fields of %s, not its numbers; the chart draws %s by %s.", dsName, strings.ToLower(yName), x)
	case levelAggregates:
		aggs := asMap(data["aggregates"])
		a, ax := asMap(aggs[y]), asMap(aggs[x])
		lo, _ := a["min"].(float64)
		hi, _ := a["max"].(float64)
		sum, _ := a["sum"].(float64)
		cnt, _ := a["count"].(float64)
		if a == nil || cnt == 0 {
			return fmt.Sprintf("%s has no %s values to sum up here.", dsName, strings.ToLower(yName))
		}
		note := "At this team's sharing level I see totals and ranges, not the rows, so the chart shows the rest."
		if !isTime(x) {
			return fmt.Sprintf("Across %s, %s run from %s to %s each, %s in all. At this team's sharing level I see those totals, not which %s has which; the chart shows that.",
				count(int(cnt), x), strings.ToLower(yName), fmtNum(lo), fmtNum(hi), fmtNum(sum), x)
		}
		earliest, _ := ax["earliest"].(string)
		latest, _ := ax["latest"].(string)
		span := dateLabels(earliest, latest)
		if q.compare != "" {
			back := shift(latest, x, -1, q.compare)
			if v1, ok := points[back]; ok {
				if v2, ok := points[latest]; ok {
					spanB := dateLabels(back, latest)
					return compareLine(yName, v2, spanB[1], v1, spanB[0], q.compare)
				}
			}
		}
		if v1, ok := points[earliest]; ok {
			if v2, ok := points[latest]; ok {
				return fmt.Sprintf("%s, %s to %s; the best %s had %s. At this team's sharing level I see totals and ranges, not every %s, so I cannot say which %s that was.",
					trendHead(yName, v1, v2, int(cnt), unit), span[0], span[1], unit, fmtNum(hi), unit, unit)
			}
		}
		return fmt.Sprintf("%s ran from %s to %s a %s over %s (%s to %s), %s in all. %s", yName, fmtNum(lo), fmtNum(hi), unit,
			count(int(cnt), unit), span[0], span[1], fmtNum(sum), note)
	}
	cols := asSlice(data["columns"])
	xi, yi := -1, -1
	for i, c := range cols {
		switch fmt.Sprint(c) {
		case x:
			xi = i
		case y:
			yi = i
		}
	}
	var labels []string
	var vals []float64
	for _, r := range asSlice(data["rows"]) {
		row := asSlice(r)
		if xi < 0 || yi < 0 || xi >= len(row) || yi >= len(row) {
			continue
		}
		v, ok := row[yi].(float64)
		if !ok {
			continue
		}
		labels, vals = append(labels, fmt.Sprint(row[xi])), append(vals, v)
	}
	if len(vals) == 0 {
		return fmt.Sprintf("%s has no %s values for that.", dsName, strings.ToLower(yName))
	}
	cut := ""
	if t, _ := data["truncated"].(bool); t {
		cut = fmt.Sprintf(" (in the first %d rows, which is what I was shown)", len(vals))
	}
	if isTime(x) {
		shown := dateLabels(labels...)
		if q.compare != "" {
			back := shift(labels[len(labels)-1], x, -1, q.compare)
			for i := len(labels) - 1; i >= 0; i-- {
				if labels[i] <= back {
					return compareLine(yName, vals[len(vals)-1], shown[len(shown)-1], vals[i], shown[i], q.compare) + cut
				}
			}
		}
		if len(vals) == 1 {
			return fmt.Sprintf("%s was %s for %s.", yName, fmtNum(vals[0]), shown[0])
		}
		best := 0
		for i, v := range vals {
			if v > vals[best] {
				best = i
			}
		}
		return fmt.Sprintf("%s%s; the best %s was %s, with %s.", trendHead(yName, vals[0], vals[len(vals)-1], len(vals), unit), cut, unit, shown[best], fmtNum(vals[best]))
	}
	order := make([]int, len(vals))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int {
		switch {
		case vals[a] > vals[b]:
			return -1
		case vals[a] < vals[b]:
			return 1
		}
		return 0
	})
	var total float64
	for _, v := range vals {
		total += v
	}
	words := strings.ToLower(yName)
	top, bottom := order[0], order[len(order)-1]
	if len(vals) == 1 {
		return fmt.Sprintf("%s has %s %s%s.", labels[top], fmtNum(vals[top]), words, cut)
	}
	if q.least && !q.most {
		return fmt.Sprintf("%s has the fewest %s: %s of %s (%s); %s has the most, %s%s.", labels[bottom], words, fmtNum(vals[bottom]),
			fmtNum(total), share(vals[bottom], total), labels[top], fmtNum(vals[top]), cut)
	}
	return fmt.Sprintf("%s has the most %s: %s of %s (%s); %s has the fewest, %s%s.", labels[top], words, fmtNum(vals[top]),
		fmtNum(total), share(vals[top], total), labels[bottom], fmtNum(vals[bottom]), cut)
}

// trendHead is "Signups rose from 1,180 to 1,629 over 12 weeks (+38%)".
func trendHead(yName string, first, last float64, n int, unit string) string {
	p := change(first, last)
	verb := "rose"
	switch {
	case first != 0 && math.Abs((last-first)/first) < 0.01:
		return fmt.Sprintf("%s held steady at about %s over %s", yName, fmtNum(first), count(n, unit))
	case last < first:
		verb = "fell"
	}
	if p != "" {
		p = " (" + p + ")"
	}
	return fmt.Sprintf("%s %s from %s to %s over %s%s", yName, verb, fmtNum(first), fmtNum(last), count(n, unit), p)
}

// compareLine is "MRR was 62,350 in Nov 2026, up 9.8% from 56,800 in
// Aug 2026, a quarter earlier."
func compareLine(yName string, now float64, nowLabel string, before float64, beforeLabel, unit string) string {
	how := "the same as"
	if p := change(before, now); p != "" && now != before {
		how = strings.TrimPrefix(strings.TrimPrefix(p, "+"), "-")
		if now > before {
			how = "up " + how + " from"
		} else {
			how = "down " + how + " from"
		}
	}
	return fmt.Sprintf("%s was %s in %s, %s %s in %s, a %s earlier.", yName, fmtNum(now), nowLabel, how, fmtNum(before), beforeLabel, unit)
}

// change is the change from a to b in percent: "+38%", "-4.2%" (one
// decimal under 10%); "" when a is 0.
func change(a, b float64) string {
	if a == 0 {
		return ""
	}
	p := (b - a) / math.Abs(a) * 100
	s := strconv.FormatFloat(math.Round(p), 'f', 0, 64)
	if math.Abs(p) < 10 {
		s = strconv.FormatFloat(math.Round(p*10)/10, 'f', -1, 64)
	}
	if p >= 0 {
		s = "+" + s
	}
	return s + "%"
}

// share is part of total in percent: "21%".
func share(part, total float64) string {
	if total == 0 {
		return "0%"
	}
	return strconv.FormatFloat(math.Round(part/total*100), 'f', 0, 64) + "%"
}

// fmtNum is a number as people read it: "1,629", "62,350", "12.5".
func fmtNum(f float64) string {
	neg := f < 0
	f = math.Abs(f)
	s := strconv.FormatFloat(math.Round(f*100)/100, 'f', -1, 64)
	whole, frac, _ := strings.Cut(s, ".")
	var b strings.Builder
	for i, r := range whole {
		if i > 0 && (len(whole)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(r)
	}
	out := b.String()
	if frac != "" {
		out += "." + frac
	}
	if neg {
		out = "-" + out
	}
	return out
}

// dateLabels are dates as people read them, as the chart's labels show
// them: "16 Nov" (with the year when they span years), "Nov 2026" for a
// month; anything else as it is.
func dateLabels(labels ...string) []string {
	out := make([]string, len(labels))
	years := map[string]bool{}
	for _, l := range labels {
		if len(l) >= 4 {
			years[l[:4]] = true
		}
	}
	for i, l := range labels {
		out[i] = l
		if t, err := time.Parse("2006-01-02", l); err == nil {
			out[i] = t.Format("2 Jan")
			if len(years) > 1 {
				out[i] = t.Format("2 Jan 2006")
			}
		} else if t, err := time.Parse("2006-01", l); err == nil {
			out[i] = t.Format("Jan 2006")
		}
	}
	return out
}

// timeUnit is the period a time field counts in: "week" for week.
func timeUnit(x string) string {
	switch f := strings.ToLower(x); f {
	case "week", "month", "quarter", "year", "hour", "day":
		return f
	}
	return "day"
}

// seriesName is a field as the dataset's name spells it ("MRR" for mrr
// in "MRR"), else capitalized with spaces: "Signups", "Page views".
func seriesName(dsName, y string) string {
	words := strings.ReplaceAll(y, "_", " ")
	if i := strings.Index(strings.ToLower(dsName), strings.ToLower(words)); i >= 0 {
		if s := dsName[i : i+len(words)]; s == strings.ToUpper(s) {
			return s
		}
	}
	return title(words)
}

// tableLine answers for a dataset with no numeric field to chart: the
// page shows its rows as a table (the run's result), and the sentence
// says what it holds, as far as lv shows it.
func tableLine(dsName string, cols []string, rows []any, out map[string]any, lv level) string {
	n, _ := out["row_count"].(float64)
	what := fmt.Sprintf("%s has no numeric field to chart, so here it is as a table: %s of %s", dsName, count(int(n), "row"), andList(cols))
	if len(cols) < 2 {
		what = fmt.Sprintf("%s has only one field, %s, so here it is as a table: %s", dsName, andList(cols), count(int(n), "row"))
	}
	switch {
	case lv == levelRows && len(rows) > 0:
		var first []string
		for _, v := range asSlice(rows[0]) {
			first = append(first, fmt.Sprint(v))
		}
		return what + "; the first is " + strings.Join(first, ", ") + "."
	case lv != levelRows:
		return what + ". At this team's sharing level I see how many rows there are, not the rows; the table shows them."
	}
	return what + "."
}
