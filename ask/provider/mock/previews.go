package mock

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/askbi/askbi/ask"
)

// maxPreviewsPerTurn is how many previews the script makes in one turn;
// a follow-up that needs more asks which to make first.
const maxPreviewsPerTurn = 4

// outputOf returns the arguments and the output body of the newest call
// of tool anywhere in the conversation, or nil.
func outputOf(req ask.ModelRequest, tool string) (args, body map[string]any) {
	id := ""
	for _, m := range req.Messages {
		for _, c := range m.ToolCalls {
			if c.Name == tool {
				id, args = c.ID, nil
				json.Unmarshal(c.Arguments, &args)
			}
		}
	}
	if id == "" {
		return nil, nil
	}
	for _, m := range req.Messages {
		if m.Role == ask.RoleTool && m.ToolCallID == id {
			body = toolBody(m.Text)
		}
	}
	return args, body
}

// toolBody is the JSON body of a wrapped tool output.
func toolBody(text string) map[string]any {
	if i := strings.Index(text, "\n"); i >= 0 {
		text = text[i+1:]
	}
	text = strings.TrimSuffix(strings.TrimSpace(text), "</tool_output>")
	var body map[string]any
	json.Unmarshal([]byte(text), &body)
	return body
}

// scopeQuestion answers a scope mismatch: which scope the data has, and
// the choice between it and the unscoped dataset.
func scopeQuestion(sm map[string]any) ask.ModelReply {
	ds, _ := sm["dataset"].(map[string]any)
	name, _ := ds["name"].(string)
	if u, ok := sm["unscoped"].(map[string]any); ok {
		return say("%s only holds data where %v. Should I answer for that scope only, or use %v for all of it?", name, sm["scope"], u["name"])
	}
	return say("%s only holds data where %v. Should I answer for that scope only? For all of it, select a dataset without that scope.", name, sm["scope"])
}

// offer asks, once, to place the conversation's previews when a tool
// output says there are several (placement_offer, which the code adds).
func offer(out map[string]any) (ask.ModelReply, bool) {
	po, ok := out["placement_offer"].(map[string]any)
	if !ok {
		return ask.ModelReply{}, false
	}
	return say("You now have %v previews in this conversation. Should I add all of them to a dashboard? Say which one, or select it.", po["previews"]), true
}

// previews is the "create a preview for it" flow: one preview per metric
// and per breakdown of the most recent dataset answer (or the selected
// dataset), keeping its dataset and filters.
func previews(req ask.ModelRequest, st turnState, tool string, out map[string]any, n int) ask.ModelReply {
	if tool != "" && tool != "run_dataset" {
		var made, reused []string
		for _, m := range st.outputs {
			body := toolBody(m.Text)
			c, _ := body["chart"].(map[string]any)
			if c == nil {
				continue
			}
			if body["reused"] != nil {
				reused = append(reused, fmt.Sprint(c["name"]))
			} else {
				made = append(made, fmt.Sprint(c["name"]))
			}
			if reply, ok := offer(body); ok {
				return ask.ModelReply{Text: summary(made, reused) + " " + reply.Text}
			}
		}
		return say("%s", summary(made, reused))
	}
	if sm, ok := out["scope_mismatch"].(map[string]any); ok {
		return scopeQuestion(sm)
	}
	args, body := outputOf(req, "run_dataset")
	if body == nil || body["scope_mismatch"] != nil || body["columns"] == nil {
		if ds := st.handles["dataset"]; len(ds) == 1 && tool == "" {
			return call(n, "run_dataset", map[string]any{"dataset_id": ds[0]})
		}
		return say("A preview of what? Select a dataset, or ask a question about your data first.")
	}
	ds, _ := body["dataset"].(map[string]any)
	cols, _ := body["columns"].([]any)
	rows, _ := body["rows"].([]any)
	if ds == nil || len(cols) < 2 {
		return say("The last answer has no field to chart. Which data do you mean?")
	}
	x := fmt.Sprint(cols[0])
	var metrics, breakdowns []string
	for i, c := range cols[1:] {
		if numeric(rows, i+1) {
			metrics = append(metrics, fmt.Sprint(c))
		} else {
			breakdowns = append(breakdowns, fmt.Sprint(c))
		}
	}
	if len(metrics) == 0 {
		return say("The last answer has no numeric field to chart. Which measure do you mean?")
	}
	filters := withScope(args["filters"], ds)
	var specs []map[string]any
	spec := func(typ, x, y string) map[string]any {
		m := map[string]any{"dataset_id": ds["id"], "chart_type": typ, "x_field": x, "y_fields": []any{y}, "name": chartName(ds["name"], y, x)}
		if len(filters) > 0 {
			m["filters"] = filters
		}
		return m
	}
	typ := "line"
	if categorical[x] {
		typ = "bar"
	}
	for _, m := range metrics {
		specs = append(specs, spec(typ, x, m))
	}
	for _, b := range breakdowns {
		specs = append(specs, spec("bar", b, metrics[0]))
	}
	if len(specs) > maxPreviewsPerTurn {
		return say("That answer has %d metrics and breakdowns, more previews than I make in one turn. Which should I preview first?", len(specs))
	}
	var calls []ask.ToolCall
	for i, sp := range specs {
		b, _ := json.Marshal(sp)
		calls = append(calls, ask.ToolCall{ID: fmt.Sprintf("mock_%d_%d", n, i), Name: "create_chart_preview", Arguments: b})
	}
	return ask.ModelReply{ToolCalls: calls}
}

// withScope adds to filters the scope of dataset reference ds that they
// do not name yet: a preview of an answer from a scoped dataset names the
// scope the answer had. It returns nil for no filters.
func withScope(filters any, ds map[string]any) []any {
	out, _ := filters.([]any)
	sc, _ := ds["scope"].(map[string]any)
	scope, _ := sc["filters"].([]any)
	for _, f := range scope {
		b, _ := json.Marshal(f)
		dup := false
		for _, g := range out {
			c, _ := json.Marshal(g)
			dup = dup || string(b) == string(c)
		}
		if !dup {
			out = append(out, f)
		}
	}
	return out
}

func summary(made, reused []string) string {
	var parts []string
	if len(made) > 0 {
		parts = append(parts, fmt.Sprintf("Created %d previews: %s.", len(made), strings.Join(made, ", ")))
		if len(made) == 1 {
			parts[0] = "Created a preview: " + made[0] + "."
		}
	}
	if len(reused) > 0 {
		parts = append(parts, fmt.Sprintf("Already in this conversation, shown again: %s.", strings.Join(reused, ", ")))
	}
	if len(parts) == 0 {
		return "No preview was made."
	}
	return strings.Join(parts, " ")
}

// numeric reports whether column i holds a number in some row.
func numeric(rows []any, i int) bool {
	for _, r := range rows {
		row, _ := r.([]any)
		if i < len(row) {
			if _, ok := row[i].(float64); ok {
				return true
			}
		}
	}
	return false
}

func title(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}

// chartName names a preview of subject by x: "Signups by week". The
// subject is spelled as the dataset's own name spells it, when the name
// holds it ("MRR by month" from the dataset "MRR", never "Mrr by
// month").
func chartName(dataset any, subject, x string) string {
	name, _ := dataset.(string)
	if i := strings.Index(strings.ToLower(name), strings.ToLower(subject)); i >= 0 && subject != "" && len(name) == len(strings.ToLower(name)) {
		subject = name[i : i+len(subject)]
	}
	return title(subject) + " by " + x
}

// placement is the answer to the placement offer: on consent with one
// selected dashboard or a named one, the batch placement (which the
// product holds for approval); without a destination, a question; on
// "no", nothing. ok is false when no offer was made.
func placement(req ask.ModelRequest, st turnState, tool string, out map[string]any, n int) (ask.ModelReply, bool) {
	var ids []any
	for _, m := range req.Messages {
		if m.Role == ask.RoleTool {
			if po, ok := toolBody(m.Text)["placement_offer"].(map[string]any); ok {
				ids, _ = po["chart_ids"].([]any)
			}
		}
	}
	if ids == nil {
		return ask.ModelReply{}, false
	}
	if declineAll.MatchString(st.question) {
		return say("OK, they stay previews. Each one can still be added from its chart."), true
	}
	switch tool {
	case "add_previews_to_dashboard":
		d, _ := out["dashboard"].(map[string]any)
		charts, _ := out["charts"].([]any)
		return say("Added %d charts to %v.", len(charts), d["name"]), true
	case "search_workspace":
		name := placeAll.FindStringSubmatch(st.question)[1]
		var match []string
		results, _ := out["results"].([]any)
		for _, r := range results {
			m, _ := r.(map[string]any)
			if strings.EqualFold(fmt.Sprint(m["name"]), name) {
				match = append(match, fmt.Sprint(m["id"]))
			}
		}
		if len(match) != 1 {
			return say("Which dashboard? I found no single dashboard called %s; select one.", name), true
		}
		return call(n, "add_previews_to_dashboard", map[string]any{"chart_ids": ids, "dashboard_id": match[0]}), true
	case "":
		if d := st.handles["dashboard"]; len(d) == 1 {
			return call(n, "add_previews_to_dashboard", map[string]any{"chart_ids": ids, "dashboard_id": d[0]}), true
		}
		if name := strings.TrimSpace(placeAll.FindStringSubmatch(st.question)[1]); name != "" && !strings.EqualFold(name, "it") {
			return call(n, "search_workspace", map[string]any{"query": name, "types": []string{"dashboard"}}), true
		}
		return say("Which dashboard should they go on? Name it, or select it."), true
	}
	return say("Done."), true
}
