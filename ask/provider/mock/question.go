package mock

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/askbi/askbi/ask"
)

// step is one tool call the script wants made in this turn.
type step struct {
	tool string
	args map[string]any
}

func (s step) key() string {
	b, _ := json.Marshal(s.args)
	return s.tool + string(b)
}

// made returns the output of this turn's call identical to s (same tool,
// same arguments), if it was made.
func (st turnState) made(s step) (map[string]any, bool) {
	want := s.key()
	for _, c := range st.calls {
		var args map[string]any
		json.Unmarshal(c.Arguments, &args)
		if (step{c.Name, args}).key() != want {
			continue
		}
		for _, m := range st.outputs {
			if m.ToolCallID == c.ID {
				return toolBody(m.Text), true
			}
		}
	}
	return nil, false
}

// need is the output of s, or the call that makes it.
func (st turnState) need(s step, n int) (map[string]any, *ask.ModelReply) {
	if out, ok := st.made(s); ok {
		return out, nil
	}
	r := call(n, s.tool, s.args)
	return nil, &r
}

// target is what a data answer runs and charts: a dataset, with what the
// question or the conversation already decided.
type target struct {
	id string
	// lead are the sentences before the numbers: which dataset and why.
	lead []string
	// filters every run and the preview keep: the dataset's scope when
	// the question named it, a follow-up's narrowing.
	filters []any
	x       string // the X field, "" to choose from the question
	ys      []any  // the series, nil to choose
	typ     string // the chart type, "" for line over time, else bar
	name    string // the preview's name, "" for the dataset's own
	// period, when set, narrows the runs and the preview to the newest
	// periodN units ("last 4 weeks"), as the question's does.
	periodN    int
	periodUnit string
	// scoped adds the dataset's scope to the preview's filters (a
	// selected scoped dataset asked with its scope).
	scoped bool
	// selected: the user selected the dataset; when the question names
	// another, the answer says which one it used.
	selected bool
	// nameFor names the preview after the dataset's name, when name is
	// empty ("show signups by week": "Signups by week").
	nameFor func(dsName string) string
}

// dataAnswer runs t's dataset, charts it and says what the chart shows,
// with numbers from the runs: at the rows level the trend, the first and
// last values and the best period (or the leader of a breakdown); at the
// aggregates level the count, range and total, and for a series over
// time the first and last period's values read with one filtered run
// each; at the schema level only the fields. A dataset with no numeric
// field is answered with a table (the page shows run_dataset's result
// when no chart follows) and a sentence.
func dataAnswer(st turnState, q query, t target, n int, now func() time.Time) ask.ModelReply {
	run := step{"run_dataset", map[string]any{"dataset_id": t.id}}
	if len(t.filters) > 0 {
		run.args["filters"] = t.filters
	}
	out, r := st.need(run, n)
	if r != nil {
		return *r
	}
	if sm, ok := out["scope_mismatch"].(map[string]any); ok {
		return scopeQuestion(sm)
	}
	ds, _ := out["dataset"].(map[string]any)
	dsName := fmt.Sprint(ds["name"])
	var cols []string
	for _, c := range asSlice(out["columns"]) {
		cols = append(cols, fmt.Sprint(c))
	}
	rows := asSlice(out["rows"])
	aggs, _ := out["aggregates"].(map[string]any)
	lv := levelOf(out)
	x, ys, named := fields(cols, rows, aggs, q, lv)
	if t.x != "" && slices.Contains(cols, t.x) {
		x = t.x
	}
	if t.ys != nil {
		ys = t.ys
	}
	lead := t.lead
	if len(cols) < 2 || len(ys) == 0 || ds == nil {
		return say("%s", sentences(append(lead, tableLine(dsName, cols, rows, out, lv))...))
	}
	if t.selected {
		other, r := otherDataset(st, q, t.id, dsName, cols, n)
		if r != nil {
			return *r
		}
		if other != "" {
			lead = append(lead, fmt.Sprintf("Your question names %s, but I used %s, the dataset you selected; to use %s, select it instead.", other, dsName, other))
		}
	}
	filters := append([]any(nil), t.filters...)
	name := t.name
	if name == "" && t.nameFor != nil {
		name = t.nameFor(dsName)
	}
	if name == "" {
		name = title(dsName)
		if named && !strings.Contains(strings.ToLower(name), strings.ToLower(x)) {
			name += " by " + x
		}
	}
	periodN, unit := q.periodN, q.periodUnit
	if t.periodN > 0 {
		periodN, unit = t.periodN, t.periodUnit
	}
	data := out
	var notes []string
	if periodN > 0 {
		if !isTime(x) {
			notes = append(notes, fmt.Sprintf("%s has no date field, so I could not narrow it to the last %s; it covers the window its source gives.", dsName, periodWords(periodN, unit)))
		} else if from := cutoff(newest(rows, slices.Index(cols, x), aggs[x]), x, now(), periodN, unit); from != "" {
			filters = append(filters, map[string]any{"field": x, "op": "gte", "value": from})
			if t.periodN == 0 {
				name += ", last " + periodWords(periodN, unit)
			}
			narrowed := step{"run_dataset", map[string]any{"dataset_id": t.id, "filters": filters}}
			if data, r = st.need(narrowed, n); r != nil {
				return *r
			}
		}
	}
	// At the aggregates level a question about a trend or a comparison
	// reads the series at its ends (or at the two periods compared), one
	// filtered run each.
	points := map[string]float64{}
	if lv == levelAggregates && isTime(x) && (q.trend || q.compare != "") {
		a, _ := asMap(data["aggregates"])[x].(map[string]any)
		earliest, _ := a["earliest"].(string)
		latest, _ := a["latest"].(string)
		var at []string
		switch {
		case q.compare != "" && latest != "":
			at = []string{shift(latest, x, -1, q.compare), latest}
		case earliest != "" && latest != "" && earliest != latest:
			at = []string{earliest, latest}
		}
		for _, p := range at {
			f := append(append([]any(nil), filters...), map[string]any{"field": x, "op": "eq", "value": p})
			o, r := st.need(step{"run_dataset", map[string]any{"dataset_id": t.id, "filters": f}}, n)
			if r != nil {
				return *r
			}
			if s, ok := asMap(asMap(o["aggregates"])[fmt.Sprint(ys[0])])["sum"].(float64); ok {
				points[p] = s
			}
		}
	}
	typ := t.typ
	if typ == "" {
		typ = "bar"
		if isTime(x) {
			typ = "line"
		}
	}
	spec := map[string]any{"dataset_id": ds["id"], "chart_type": typ, "x_field": x, "y_fields": ys, "name": name}
	pf := filters
	if t.scoped {
		pf = withScope(filters, ds)
	}
	if len(pf) > 0 {
		spec["filters"] = pf
	}
	made, r := st.need(step{"create_chart_preview", spec}, n)
	if r != nil {
		return *r
	}
	if e, ok := made["error"].(map[string]any); ok {
		if msg := fmt.Sprint(e["message"]); strings.Contains(msg, "no numeric values") {
			return say("%s", sentences(append(lead, tableLine(dsName, cols, rows, out, lv))...))
		}
		return failed(e)
	}
	text := sentences(append(append(lead, numbers(dsName, x, fmt.Sprint(ys[0]), data, lv, q, points)), notes...)...)
	if made["reused"] != nil {
		text = sentences(text, "That preview was already in this conversation, so I showed it again.")
	}
	if reply, ok := offer(made); ok {
		text = sentences(text, reply.Text)
	}
	return say("%s", text)
}

// sentences joins the non-empty ones with a space.
func sentences(s ...string) string {
	var out []string
	for _, e := range s {
		if e = strings.TrimSpace(e); e != "" {
			out = append(out, e)
		}
	}
	return strings.Join(out, " ")
}

func asMap(v any) map[string]any {
	m, _ := v.(map[string]any)
	return m
}

// fields chooses the X field and the series of a chart of cols for q:
// the X field is one the question names ("which country"), else the
// first that is not a number; the series those it names, else the first
// number. named reports whether the question named the X field.
func fields(cols []string, rows []any, aggs map[string]any, q query, lv level) (x string, ys []any, named bool) {
	isNum := func(i int) bool {
		a, _ := aggs[cols[i]].(map[string]any)
		return a["sum"] != nil || numeric(rows, i)
	}
	words := map[string]bool{}
	for _, w := range q.tokens {
		words[w], words[strings.TrimSuffix(w, "s")] = true, true
	}
	if q.breakdown != "" {
		words[q.breakdown] = true
	}
	isNamed := func(c string) bool { return words[strings.ToLower(c)] }
	// At the schema level nothing is known to be a number: the X field
	// is a time or a category by its name, else the first.
	canX := func(i int) bool {
		return !isNum(i) && (lv != levelSchema || i == 0 || isTime(cols[i]) || categorical[strings.ToLower(cols[i])])
	}
	xi := -1
	for i, c := range cols {
		if canX(i) && isNamed(c) {
			xi, named = i, true
			break
		}
	}
	for i := range cols {
		if xi < 0 && canX(i) {
			xi = i
		}
	}
	if xi < 0 {
		xi = 0
	}
	for i, c := range cols {
		if i != xi && isNum(i) && isNamed(c) {
			ys = append(ys, c)
		}
	}
	for i, c := range cols {
		// At the schema level the model cannot tell numbers: it tries the
		// first other field, and the preview says when it is not one.
		if len(ys) == 0 && i != xi && (isNum(i) || lv == levelSchema) {
			ys = append(ys, c)
		}
	}
	if len(cols) == 0 {
		return "", nil, false
	}
	return cols[xi], ys, named
}

// cutoff is the first value of the time field x that "the last k units"
// keeps: the periods that end with the newest value (so the newest
// period counts as one), else those before now; in the layout of the
// field's values. The unit may differ from the field's ("last month" of
// weeks keeps the weeks that start within the month before the newest
// week ends).
func cutoff(latest, x string, now time.Time, k int, unit string) string {
	step := strings.ToLower(x)
	if !timeFields[step] {
		step = "day"
	}
	if unit == step {
		return since(latest, x, now, k, unit)
	}
	for _, l := range []string{"2006-01-02", "2006-01", "2006"} {
		if t, err := time.Parse(l, latest); err == nil && len(latest) == len(l) {
			end := addUnits(t, step, 1)
			return addUnits(end, unit, -k).Format(l)
		}
	}
	return since(latest, x, now, k, unit)
}

// addUnits is t moved by k units (day, week, month, quarter, year).
func addUnits(t time.Time, unit string, k int) time.Time {
	switch unit {
	case "day":
		return t.AddDate(0, 0, k)
	case "week":
		return t.AddDate(0, 0, 7*k)
	case "month":
		return t.AddDate(0, k, 0)
	case "quarter":
		return t.AddDate(0, 3*k, 0)
	}
	return t.AddDate(k, 0, 0)
}

// shift is the value of time field x k units from label (a quarter
// before "2026-11" is "2026-08"), in the label's layout.
func shift(label, x string, k int, unit string) string {
	for _, l := range []string{"2006-01-02", "2006-01", "2006"} {
		if t, err := time.Parse(l, label); err == nil && len(label) == len(l) {
			return addUnits(t, unit, k).Format(l)
		}
	}
	return label
}

// periodWords is "4 weeks", "month".
func periodWords(n int, unit string) string {
	if n == 1 {
		return unit
	}
	return fmt.Sprintf("%d %ss", n, unit)
}

// failed says in words why a call did not work, for people: the
// message without the field it names or the product's note to the model
// that it was not proposed; a refusal for the user's role says so.
func failed(e map[string]any) ask.ModelReply {
	msg := strings.TrimSpace(fmt.Sprint(e["message"]))
	if _, rest, ok := strings.Cut(msg, "so it was not proposed: "); ok {
		msg = rest
	}
	msg = strings.TrimPrefix(msg, "Not proposed: ")
	if i := strings.Index(msg, ": "); i > 0 && fieldPath.MatchString(msg[:i]) {
		msg = msg[i+2:]
	}
	msg = strings.TrimSuffix(msg, ".")
	switch e["code"] {
	case "forbidden", "scope_required":
		return say("I did not propose that, because your role cannot do it here: %s. An owner or admin of the team can.", msg)
	}
	return say("That did not work: %s.", title(msg))
}

// lastChart is the chart the conversation last made (a preview, then
// maybe changed), for a follow-up that says "this": its ID, name,
// dataset and how it was drawn. A chart read because it was selected
// is not one: "this" is the selection's while it lasts, and once it is
// gone the user is asked to select again.
type lastChart struct {
	id, name, dataset, x, typ string
	ys, filters               []any
	projectID                 string
	columns                   []string // of its dataset, when a run read them
}

// previousChart finds the newest chart of the conversation before this
// turn's question, or nil.
func previousChart(req ask.ModelRequest) *lastChart {
	last := -1
	for i, m := range req.Messages {
		if m.Role == ask.RoleUser {
			last = i
		}
	}
	var lc *lastChart
	cols := map[string][]string{}
	for i, m := range req.Messages {
		if i >= last {
			break
		}
		for _, c := range m.ToolCalls {
			var args map[string]any
			json.Unmarshal(c.Arguments, &args)
			body := outputFor(req, c.ID)
			switch c.Name {
			case "run_dataset":
				if ds := asMap(body["dataset"]); ds != nil {
					var cs []string
					for _, x := range asSlice(body["columns"]) {
						cs = append(cs, fmt.Sprint(x))
					}
					cols[fmt.Sprint(ds["id"])] = cs
				}
			case "create_chart_preview", "update_chart":
				ch := asMap(body["chart"])
				if ch == nil || ch["id"] == nil {
					continue
				}
				next := &lastChart{id: fmt.Sprint(ch["id"]), name: fmt.Sprint(ch["name"]), projectID: fmt.Sprint(ch["project_id"])}
				switch c.Name {
				case "create_chart_preview":
					next.dataset, next.x, next.typ = fmt.Sprint(args["dataset_id"]), fmt.Sprint(args["x_field"]), fmt.Sprint(args["chart_type"])
					next.ys, next.filters = asSlice(args["y_fields"]), asSlice(args["filters"])
				case "update_chart":
					if lc != nil && lc.id == next.id {
						keep := *lc
						keep.name = next.name
						if t, ok := args["chart_type"].(string); ok {
							keep.typ = t
						}
						next = &keep
					}
				}
				lc = next
			}
		}
	}
	if lc != nil {
		lc.columns = cols[lc.dataset]
	}
	return lc
}

// outputFor is the body of the output of call id, or nil.
func outputFor(req ask.ModelRequest, id string) map[string]any {
	for _, m := range req.Messages {
		if m.Role == ask.RoleTool && m.ToolCallID == id {
			return toolBody(m.Text)
		}
	}
	return nil
}

// followUp answers a question about the last answer's chart: a new
// type ("change this to a bar chart": update_chart, which the product
// holds for approval), a period ("only the last 4 weeks") or a
// breakdown ("by country") of the same data as a new preview. ok is
// false when the question is not one of these, or there is no chart.
func followUp(st turnState, q query, lc *lastChart, n int, now func() time.Time) (ask.ModelReply, bool) {
	if lc == nil {
		return ask.ModelReply{}, false
	}
	if m := newType.FindStringSubmatch(st.question); m != nil {
		typ := strings.ToLower(m[1])
		s := step{"update_chart", map[string]any{"chart_id": lc.id, "chart_type": typ}}
		out, r := st.need(s, n)
		if r != nil {
			return *r, true
		}
		if e, ok := out["error"].(map[string]any); ok {
			return failed(e), true
		}
		return say("Done: %s is now a %s chart.", lc.name, typ), true
	}
	// A follow-up names no other data: only a period or a breakdown.
	extra := 0
	for _, w := range q.content {
		if w != q.breakdown && strings.TrimSuffix(w, "s") != q.breakdown {
			extra++
		}
	}
	if extra > 0 || lc.dataset == "" {
		return ask.ModelReply{}, false
	}
	base := strings.SplitN(lc.name, ", last ", 2)[0]
	switch {
	case q.periodN > 0 && q.breakdown == "":
		t := target{id: lc.dataset, filters: keepScope(lc.filters), x: lc.x, ys: lc.ys, typ: lc.typ,
			name: base + ", last " + periodWords(q.periodN, q.periodUnit), periodN: q.periodN, periodUnit: q.periodUnit,
			lead: []string{fmt.Sprintf("I narrowed %s to the last %s.", base, periodWords(q.periodN, q.periodUnit))}}
		return dataAnswer(st, q, t, n, now), true
	case q.breakdown != "" && q.periodN == 0 && !isTime(q.breakdown):
		if lc.columns == nil || slices.Contains(lc.columns, q.breakdown) {
			y := lc.ys
			t := target{id: lc.dataset, filters: keepScope(lc.filters), x: q.breakdown, ys: y, typ: "bar",
				name: title(fmt.Sprint(firstOr(y, "value"))) + " by " + q.breakdown,
				lead: []string{fmt.Sprintf("I broke %s down by %s.", base, q.breakdown)}}
			return dataAnswer(st, q, t, n, now), true
		}
		// Its dataset has no such field: find one that does, about the
		// same thing.
		subject := fmt.Sprint(firstOr(lc.ys, ""))
		wider := parse(subject + " by " + q.breakdown)
		return searchAnswer(st, wider, n, now, []string{fmt.Sprintf("The data of %s has no %s field, so", base, q.breakdown)}), true
	}
	return ask.ModelReply{}, false
}

func firstOr(s []any, def any) any {
	if len(s) > 0 {
		return s[0]
	}
	return def
}

// keepScope is the filters of a chart a follow-up keeps: all but the
// time window it narrows again.
func keepScope(filters []any) []any {
	var out []any
	for _, f := range filters {
		m := asMap(f)
		if m != nil && isTime(fmt.Sprint(m["field"])) && m["op"] == "gte" {
			continue
		}
		out = append(out, f)
	}
	return out
}

// searchAnswer is the answer to a question with nothing selected: it
// searches the workspace for the question's words (its longest word,
// or the name a synonym gives it: revenue → MRR), and when that finds
// nothing lists the datasets it can see and matches them loosely (a
// typo, a synonym, a trend asked of a series over time). It runs and
// charts the best match and says which it chose and why; where nothing
// matches it names the datasets it can see. lead, when set, is the
// start of the sentence that says why (a follow-up's).
func searchAnswer(st turnState, q query, n int, now func() time.Time, lead []string) ask.ModelReply {
	var intro []string
	if q.foreign {
		intro = append(intro, "I am the demo model and read English only, but I looked for your words in the workspace anyway.")
	}
	var results []any
	word := searchWord(q)
	if word != "" {
		out, r := st.need(step{"search_workspace", map[string]any{"query": word, "types": []any{"dataset"}}}, n)
		if r != nil {
			return *r
		}
		results = asSlice(out["results"])
	}
	cands := rank(results, q)
	var all []any
	if len(cands) == 0 {
		out, r := st.need(step{"search_workspace", map[string]any{"query": "", "types": []any{"dataset"}, "limit": 50}}, n)
		if r != nil {
			return *r
		}
		all = asSlice(out["results"])
		cands = rank(all, q)
	}
	if len(cands) == 0 {
		var names []string
		for _, r := range all {
			names = append(names, fmt.Sprint(asMap(r)["name"]))
		}
		what := strings.Join(q.content, " ")
		if what == "" {
			what = strings.TrimSpace(q.text)
		}
		if len(names) == 0 {
			return say("%s", sentences(append(intro, fmt.Sprintf("I found no dataset about “%s”, and I can see no datasets in this workspace.", what))...))
		}
		return say("%s", sentences(append(intro, fmt.Sprintf("I found no dataset about “%s”. The datasets I can see are %s. Ask about one of them, or select one with Add context.",
			what, andList(names)))...))
	}
	best := cands[0]
	t := target{id: fmt.Sprint(best.ref["id"])}
	why := fmt.Sprintf("I used %s because it matches %s.", best.name, best.why())
	if len(lead) > 0 {
		why = lead[0] + " " + why
	}
	t.lead = append(intro, why)
	// The question named a scoped dataset by its whole name ("EU signups
	// by country"): that scope is what it asks for.
	if sc := asMap(best.ref["scope"]); sc != nil && best.namesScope(asMap(sc["unscoped"])) {
		t.filters = asSlice(sc["filters"])
		t.lead = append(t.lead, fmt.Sprintf("It holds only the rows where %v.", sc["text"]))
	}
	if m := showBy.FindStringSubmatch(q.text); m != nil {
		t.name = chartName(best.name, strings.ToLower(m[1]), strings.ToLower(m[2]))
	}
	return dataAnswer(st, q, t, n, now)
}

// otherDataset is the name of another dataset the question names while
// dataset id (dsName, its fields cols) is selected: the first word of
// the question that neither its name nor its fields have is searched
// for; "" when there is no such word or no other dataset matches it.
func otherDataset(st turnState, q query, id, dsName string, cols []string, n int) (string, *ask.ModelReply) {
	own := append(nameTokens(dsName), cols...)
	for _, w := range q.content {
		if w == q.breakdown || slices.ContainsFunc(own, func(t string) bool { return match(w, strings.ToLower(t)) != noMatch }) {
			continue
		}
		wq := parse(w)
		out, r := st.need(step{"search_workspace", map[string]any{"query": searchWord(wq), "types": []any{"dataset"}}}, n)
		if r != nil {
			return "", r
		}
		if c := rank(asSlice(out["results"]), wq); len(c) > 0 && fmt.Sprint(c[0].ref["id"]) != id {
			return c[0].name, nil
		}
		return "", nil
	}
	return "", nil
}
