// Package mock is a deterministic, scripted [ask.Provider] for tests and the
// demo. It needs no credentials and never calls the network.
//
// It answers the way a model would with the tools it is given, from
// what any model sees (the request: system prompt, tools, messages with
// tool outputs after the sharing filter), never from a catalog of its
// own:
//
//   - a question in the user's own words, with nothing selected ("how
//     are signups trending?", "which country has the most signups",
//     "compare MRR to last quarter", "what is our revenue", a typo):
//     search_workspace for its longest word (or the name a synonym gives
//     it: revenue → MRR), and when that finds no dataset, the datasets it
//     can see, matched loosely (a plural, "week" for "Weekly", a
//     synonym, a typo; a trend asked of a series over time). It runs the
//     best match (run_dataset), charts it (create_chart_preview: a line
//     over time, else bars) and says which dataset it chose and why, then
//     what the chart shows in numbers from the run, as far as the sharing
//     level showed them: at rows, the trend from the first to the last
//     period with the change and the best period ("Signups rose from
//     1,180 to 1,629 over 12 weeks (+38%); the best week was 23 Nov"),
//     the leader of a breakdown, or a comparison with a period before
//     ("compare … to last quarter"); at aggregates, the count, range and
//     total, and for a trend or a comparison the two periods' values,
//     each read with one run filtered to that period; at schema, that it
//     sees only the fields. A question naming a scoped dataset by the
//     words of its scope ("EU signups by country") runs it within its
//     scope. A dataset with no numeric field is answered with a table
//     (the client shows run_dataset's result) and a sentence. Where
//     nothing matches it names the datasets it can see. A question in
//     another language gets the same, after a sentence that says it
//     reads English only. "show signups by week" (any "show X by Y")
//     goes the same way and names the preview "Signups by week".
//   - a follow-up of the last chart it made, with nothing selected:
//     "change this to a bar chart" (update_chart on it, which the
//     product holds for approval), "only the last 4 weeks" and "by
//     country" (a new preview of the same data, narrowed; a breakdown
//     its dataset lacks is searched for in another), "put it on the
//     Growth dashboard" (below).
//   - "create a preview for it": one create_chart_preview per metric
//     and per breakdown of the conversation's latest run_dataset answer
//     (or of the one selected dataset), with its dataset and filters; it
//     asks "A preview of what?" when there is none, and which to make
//     first when there would be more than four. When a result carries
//     the placement offer (several previews) it asks, once, whether to
//     place them all on a dashboard.
//   - "yes, add them to Growth overview" (or "yes, add them" with one
//     dashboard selected) after that offer: add_previews_to_dashboard
//     with the offered charts (the product asks for approval); without a
//     destination it asks which dashboard; "no" keeps them previews.
//   - "delete the Revenue dashboard": search_workspace for the dashboard,
//     then propose delete_dashboard (destructive: the product asks for
//     approval), then report what happened.
//   - "put it on the Growth dashboard" after a preview:
//     add_preview_to_dashboard with the conversation's newest preview
//     and the dashboard named (that name, else the one name that holds
//     its words) or the one selected, which the product holds for
//     approval. A dashboard of another project than the chart's data
//     is not proposed: the answer says why and names the dashboards of
//     the chart's project.
//   - any other question while one dataset is selected: the same run,
//     chart and numbers with that dataset (a selection beats a name in
//     the message; when the question names another dataset, the answer
//     says which one it used). The X field is one the question names
//     ("which country"), else the first that is not a number; the
//     series those it names, else the first number. "last 8 weeks"
//     (days, months, years) filters the X field when it is a time
//     (day, week, month...): the periods ending with its newest value,
//     from the rows or the aggregates level's date range, else before
//     Now.
//   - any other question while one chart is selected (and no dataset):
//     get_chart_data of it (the client shows the chart), then what it
//     draws: its series by its X field, and the numbers as above. A
//     question that asks for more than the chart draws ("last 4
//     weeks", "by plan" where the chart has no plan) goes on down the
//     dataset flow with the chart's first dataset.
//   - "change this to a weekly bar chart": update_chart on the single
//     selected chart (handle @c1), or ask which one when several charts
//     are selected; with none selected, on the last chart it made (see
//     the follow-ups), else it asks for a selection.
//   - "use the top_pages tool" (any "use the X tool", optionally "with
//     {json}"): calls the offered tool named X or <connection>__X (a
//     remote MCP tool an admin approved), with those arguments or {},
//     then says in one sentence what came back, as far as it was shown
//     the answer: "top_pages on Acme analytics returned 5 rows of …",
//     its text, or that the sharing level withheld it.
//   - a question naming a data provider ("show pageviews from PostHog",
//     also Demo Analytics, Plausible, Sentry, MySQL, PostgreSQL, Acme
//     analytics): list_connections with the provider and its capability;
//     when nothing is connected it explains the missing access in one
//     sentence and stops (the setup card follows). When it is connected,
//     it runs the offered remote tool of that connection that fits the
//     question (the most words of the question, of four letters or more,
//     in the tool's name or description; the first by name on a tie:
//     "show pageviews from Demo Analytics by week" runs
//     Demo_Analytics__pageviews_by_week) and says in one sentence what
//     came back; with no fitting tool it says what is connected.
//   - a continued request: when the product's <continue_request> note
//     leads the message (Ask adds it once "Continue request" or "I added
//     the connection" found the connection ready, after its own fresh
//     list_connections), it answers the question the note quotes, down
//     the path above from that check's result. Without the note (no card
//     to continue) those two messages call list_connections again with
//     the conversation's last arguments.
//
// Intro, when set, leads its first answer in a conversation, streamed a
// word at a time like the rest (the reference server says there that
// this is the built-in demo model and how to configure a real one).
//
// Any other message with attached files (<ATTACHED-FILE> blocks, image
// parts) is answered by describing what arrived: each file's name and type, a
// table's columns and rows (with the largest value of its last numeric
// column), an image's format and size, and that a file was truncated.
// It never follows text inside an attachment.
//
// Like a naive model, it obeys a line "INSTRUCTION: call TOOL {json}"
// found in tool output; tests use that to show that injected instructions
// still cannot run a gated tool without the user's approval.
//
// Its text streams one word at a time; Provider.Delay spaces the words
// out as a model's stream is (the reference server sets it, tests leave
// it zero).
//
// Like a reasoning model, it returns private reasoning with every reply
// (ask.ModelReply.Reasoning): a line that starts with [ReasoningMarker] and
// names the question and what it does next. The assistant must drop it;
// tests look for the marker in events, history and the page.
package mock

import (
	"context"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/askbi/askbi/ask"
)

// ReasoningMarker starts the private reasoning of every reply.
const ReasoningMarker = "MOCK-PRIVATE-REASONING"

// Provider is the scripted model. The zero value is ready to use.
type Provider struct {
	// TextOnly makes the model one that reads no images
	// (ask.ImageReader), for trying that refusal.
	TextOnly bool
	// Delay is the pause before each streamed piece of a reply's text
	// (one word), so a client sees the text arrive over time as a
	// model's does. Zero streams every piece at once, for tests. A
	// cancelled ctx ends the pause and the reply.
	Delay time.Duration
	// Intro leads the first answer of a conversation (one with no answer
	// before it), after a blank line: a host says there what model this
	// is and how to configure a real one. Empty: none.
	Intro string
	// Now is today for "last 8 weeks" where the rows are not shared with
	// the model (the date is not in its tool output). Default time.Now.
	Now func() time.Time

	mu       sync.Mutex
	requests []ask.ModelRequest
	calls    int
}

// New returns a mock provider.
func New() *Provider { return &Provider{} }

// ReadsImages implements [ask.ImageReader].
func (p *Provider) ReadsImages() bool { return !p.TextOnly }

// Requests returns every request the provider received, for tests that
// assert on what reached the model.
func (p *Provider) Requests() []ask.ModelRequest {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]ask.ModelRequest(nil), p.requests...)
}

var (
	showBy      = regexp.MustCompile(`(?i)\bshow (?:me )?(?:the )?(.+?) by (\w+)`)
	deleteDash  = regexp.MustCompile(`(?i)\bdelete (?:the )?(.+?) dashboard`)
	changeChart = regexp.MustCompile(`(?i)\bchange (?:this|it|the chart)\b.*?\b(line|bar|area|pie|doughnut|table|kpi) chart`)
	instruction = regexp.MustCompile(`INSTRUCTION: call ([a-z_]+) (\{[^\n]*\})`)
	selected    = regexp.MustCompile(`(@c[0-9]+) (\w+) "`)
	useTool     = regexp.MustCompile(`(?i)\buse (?:the )?([A-Za-z0-9_.-]+) tool\b(?: with (\{.*\}))?`)
	categorical = map[string]bool{"country": true, "plan": true, "region": true, "segment": true, "channel": true}
	providerRe  = regexp.MustCompile(`(?i)\b(posthog|demo analytics|acme analytics|plausible|sentry|mysql|postgresql)\b`)
	checkAgain  = regexp.MustCompile(`(?i)\b(i added the connection|continue (?:my |the )?request)\b`)
	continued   = regexp.MustCompile(`(?s)<continue_request from="product"[^>]*>\n[^\n]*\n(.*?)\n</continue_request>`)
	memoryRe    = regexp.MustCompile(`(?s)<user_memory trust="untrusted">\n.*?</user_memory>\n?`)
	previewIt   = regexp.MustCompile(`(?i)\b(?:create|make) (?:a )?previews? (?:for|of) (?:it|this|that|them)\b`)
	putOn       = regexp.MustCompile(`(?i)\b(?:put|add|place|save|pin) (?:it|this|that)(?: chart| preview)? (?:on|to|onto|in) (?:the )?(.+?)(?: dashboard)?\s*[.!]?\s*$`)
	lastPeriods = regexp.MustCompile(`(?i)\b(?:last|past|previous) (\d{1,3}) (day|week|month|year)s?\b`)
	placeAll    = regexp.MustCompile(`(?i)^\s*(?:yes|ok|okay|sure|please)\b.*?\b(?:add|place|put|move)\b(?:.*?\bto (?:the )?(.+?)(?: dashboard)?\s*[.!]?\s*$)?`)
	declineAll  = regexp.MustCompile(`(?i)^\s*(?:no|not now|keep them)\b`)
	// providerCaps is the capability each provider the mock knows serves.
	providerCaps = map[string]string{"posthog": "product_analytics", "demo analytics": "web_analytics", "acme analytics": "web_analytics",
		"plausible": "web_analytics", "sentry": "error_tracking", "mysql": "database", "postgresql": "database"}
)

// lastCall returns the arguments of the conversation's last call of tool.
func lastCall(req ask.ModelRequest, tool string) map[string]any {
	var args map[string]any
	for _, m := range req.Messages {
		for _, c := range m.ToolCalls {
			if c.Name == tool {
				args = nil
				json.Unmarshal(c.Arguments, &args)
			}
		}
	}
	return args
}

func offered(req ask.ModelRequest, name string) bool {
	for _, t := range req.Tools {
		if t.Name == name {
			return true
		}
	}
	return false
}

// connections is the list_connections flow, or ok false when the
// question is not about a provider's connection.
func connections(req ask.ModelRequest, st turnState, tool string, out map[string]any, n int) (ask.ModelReply, bool) {
	if !offered(req, "list_connections") && tool != "list_connections" {
		return ask.ModelReply{}, false
	}
	var args map[string]any
	switch {
	case st.continued && lastCall(req, "list_connections") != nil:
		args = lastCall(req, "list_connections")
	case checkAgain.MatchString(st.question):
		if args = lastCall(req, "list_connections"); args == nil {
			return say("Which connection do you mean? Ask your question again."), true
		}
	case providerRe.MatchString(st.question):
		p := strings.ToLower(providerRe.FindString(st.question))
		args = map[string]any{"provider": providerRe.FindString(st.question), "capability": providerCaps[p]}
	default:
		return ask.ModelReply{}, false
	}
	switch tool {
	case "":
		return call(n, "list_connections", args), true
	case "list_connections":
		if needs, _ := out["needs_setup"].(bool); needs {
			missing, _ := out["missing"].(string)
			return say("%s", missing), true
		}
		opts, _ := out["options"].([]any)
		var names []string
		for _, o := range opts {
			if m, ok := o.(map[string]any); ok && m["connection"] != nil {
				names = append(names, fmt.Sprint(m["connection"]))
			}
		}
		if t := fitting(req, names, st.question); t != "" {
			return call(n, t, map[string]any{}), true
		}
		return say("%s is connected, so I can use it now. Tell me what to look at, or say \"use the <tool> tool\".", strings.Join(names, " and ")), true
	}
	return say("%s", answered(tool, out)), true
}

// fitting is the offered remote tool of one of the connections named
// that fits question best: the most words of the question (those of
// four letters or more, "pageviews", "week") found in its name or its
// remote description, the first such tool by name on a tie; "" when no
// word fits.
func fitting(req ask.ModelRequest, connections []string, question string) string {
	own := map[string]bool{}
	for _, c := range connections {
		own[squash(c)] = true
	}
	var words []string
	for _, w := range wordRe.FindAllString(strings.ToLower(question), -1) {
		if len(w) >= 4 && !stopWords[w] {
			words = append(words, w)
		}
	}
	best, bestScore := "", 0
	for _, t := range req.Tools {
		conn, remote, ok := strings.Cut(t.Name, "__")
		if !ok || !own[squash(conn)] {
			continue
		}
		_, desc, _ := strings.Cut(t.Description, "(untrusted): ")
		have := map[string]bool{}
		for _, w := range wordRe.FindAllString(strings.ToLower(remote+" "+desc), -1) {
			have[w] = true
		}
		score := 0
		for _, w := range words {
			if have[w] || have[strings.TrimSuffix(w, "s")] || have[w+"s"] {
				score++
			}
		}
		if score > bestScore || score == bestScore && score > 0 && t.Name < best {
			best, bestScore = t.Name, score
		}
	}
	return best
}

var (
	wordRe    = regexp.MustCompile(`[a-z0-9]+`)
	stopWords = map[string]bool{"show": true, "from": true, "with": true, "what": true, "data": true, "please": true,
		"demo": true, "analytics": true, "posthog": true, "plausible": true}
)

// squash is a connection name as tool names spell it, compared loosely.
func squash(s string) string {
	return strings.Join(wordRe.FindAllString(strings.ToLower(s), -1), "")
}

// answered says in one sentence what a tool's answer holds: for a
// remote tool, its rows (how many, of what, from the first to the last)
// or its text, as much as the model was shown of it.
func answered(tool string, out map[string]any) string {
	conn, _ := out["connection"].(string)
	remote, _ := out["tool"].(string)
	if conn == "" {
		c, r, ok := strings.Cut(tool, "__")
		if !ok {
			return fmt.Sprintf("The %s tool ran.", tool)
		}
		// An answer cut to the model's cap is no longer JSON.
		return r + " on " + strings.ReplaceAll(c, "_", " ") + " answered more than I can read at once."
	}
	who := remote + " on " + conn
	if s, ok := out["structured"]; ok {
		if line := rowsLine(s); line != "" {
			return who + " returned " + line + "."
		}
	}
	if text, ok := out["text"].(string); ok && text != "" {
		return who + " answered: " + oneLine(text, 160)
	}
	if _, ok := out["text_withheld"]; ok {
		return who + " answered in text, which is not shared with me here."
	}
	return who + " returned no content."
}

// rowsLine describes structured content: rows of objects (in a "rows"
// array or alone), or the sharing filter's summary (columns, row_count,
// aggregates): how many rows of which measure by which label, and its
// range ("8 rows of pageviews by week, from 7 Sep to 26 Oct: pageviews
// between 4,200 and 6,490").
func rowsLine(s any) string {
	var rows []any
	switch x := s.(type) {
	case []any:
		rows = x
	case map[string]any:
		if cols, ok := x["columns"].([]any); ok {
			if n, ok := x["row_count"].(float64); ok {
				aggs, _ := x["aggregates"].(map[string]any)
				label, measure := "", ""
				for _, c := range cols {
					name := fmt.Sprint(c)
					a, _ := aggs[name].(map[string]any)
					switch {
					case a["min"] != nil && measure == "":
						measure = name
					case a["min"] == nil && label == "" || a["earliest"] != nil:
						label = name
					}
				}
				line := count(int(n), "row")
				if measure != "" && label != "" {
					line += " of " + measure + " by " + label
				} else {
					var names []string
					for _, c := range cols {
						names = append(names, fmt.Sprint(c))
					}
					line += " with the columns " + andList(names)
				}
				if a, _ := aggs[label].(map[string]any); a["earliest"] != nil {
					span := dateLabels(fmt.Sprint(a["earliest"]), fmt.Sprint(a["latest"]))
					line += ", from " + span[0] + " to " + span[1]
				}
				if a, _ := aggs[measure].(map[string]any); a["min"] != nil {
					lo, _ := a["min"].(float64)
					hi, _ := a["max"].(float64)
					line += fmt.Sprintf(": %s between %s and %s", measure, fmtNum(lo), fmtNum(hi))
				}
				if aggs == nil {
					return line + " (I see only the columns here, not the values)"
				}
				return line + " (I see totals and ranges here, not the rows)"
			}
		}
		rows, _ = x["rows"].([]any)
		if rows == nil {
			return ""
		}
	default:
		return ""
	}
	if len(rows) == 0 {
		return "no rows"
	}
	first, _ := rows[0].(map[string]any)
	last, _ := rows[len(rows)-1].(map[string]any)
	if first == nil || last == nil {
		return count(len(rows), "row")
	}
	label, measure := "", ""
	for _, k := range sortedKeys(first) {
		switch first[k].(type) {
		case string:
			if label == "" {
				label = k
			}
		case float64:
			if measure == "" {
				measure = k
			}
		}
	}
	if label == "" || measure == "" {
		return count(len(rows), "row")
	}
	at := dateLabels(fmt.Sprint(first[label]), fmt.Sprint(last[label]))
	lo, _ := first[measure].(float64)
	hi, _ := last[measure].(float64)
	return fmt.Sprintf("%s of %s by %s, from %s on %s to %s on %s", count(len(rows), "row"), measure, label, fmtNum(lo), at[0], fmtNum(hi), at[1])
}

func sortedKeys(m map[string]any) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

func num(v any) string {
	if f, ok := v.(float64); ok {
		return strconv.FormatFloat(f, 'f', -1, 64)
	}
	return fmt.Sprint(v)
}

func count(n int, what string) string {
	if n == 1 {
		return "1 " + what
	}
	return fmt.Sprintf("%d %s", n, plural(what))
}

// plural is a noun's plural: "rows", "countries".
func plural(w string) string {
	if len(w) > 1 && strings.HasSuffix(w, "y") && !strings.ContainsAny(w[len(w)-2:len(w)-1], "aeiou") {
		return w[:len(w)-1] + "ies"
	}
	return w + "s"
}

func oneLine(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if r := []rune(s); len(r) > n {
		return string(r[:n-1]) + "…"
	}
	return s
}

// Complete implements [ask.Provider].
func (p *Provider) Complete(ctx context.Context, req ask.ModelRequest, onText func(string)) (ask.ModelReply, error) {
	p.mu.Lock()
	p.requests = append(p.requests, req)
	p.calls++
	n := p.calls
	p.mu.Unlock()
	if err := ctx.Err(); err != nil {
		return ask.ModelReply{}, err
	}
	now := time.Now
	if p.Now != nil {
		now = p.Now
	}
	reply := script(req, n, now)
	var pieces []string // the text as it streams: a word at a time
	if p.Intro != "" && reply.Text != "" && len(reply.ToolCalls) == 0 && !hasAnswer(req) {
		pieces = strings.SplitAfter(p.Intro+"\n\n", " ")
		reply.Text = p.Intro + "\n\n" + reply.Text
	}
	reply.Reasoning = reasoning(req, reply)
	reply.Usage = estimate(req, reply)
	reply.FinishReason = "stop"
	if len(reply.ToolCalls) > 0 {
		reply.FinishReason = "tool_calls"
	}
	if onText != nil && reply.Text != "" {
		for _, w := range append(pieces, strings.SplitAfter(strings.TrimPrefix(reply.Text, strings.Join(pieces, "")), " ")...) {
			if err := pause(ctx, p.Delay); err != nil {
				return ask.ModelReply{}, err
			}
			onText(w)
		}
	}
	return reply, nil
}

// hasAnswer reports whether the conversation holds an answer already.
func hasAnswer(req ask.ModelRequest) bool {
	for _, m := range req.Messages {
		if m.Role == ask.RoleAssistant && m.Text != "" {
			return true
		}
	}
	return false
}

// pause waits d, or until ctx is done.
func pause(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// reasoning is the private reasoning of reply to req.
func reasoning(req ask.ModelRequest, reply ask.ModelReply) string {
	next := "answer"
	if len(reply.ToolCalls) > 0 {
		next = "call " + reply.ToolCalls[0].Name
	}
	return fmt.Sprintf("%s: the user asked %q; I will %s.", ReasoningMarker, read(req).question, next)
}

// turnState is what the script reads from a request: the last question,
// the selection, and the tool outputs since the question.
type turnState struct {
	question string
	// continued is set when the product said this turn continues an
	// earlier question (a <continue_request> block): question is that one.
	continued bool
	files     []file              // the question's attachments
	handles   map[string][]string // entity type → handles
	outputs   []ask.Message       // tool messages after the question, in order
	calls     []ask.ToolCall      // the calls those answer
}

func read(req ask.ModelRequest) turnState {
	st := turnState{handles: map[string][]string{}}
	last := -1
	for i, m := range req.Messages {
		if m.Role == ask.RoleUser {
			last = i
		}
	}
	if last < 0 {
		return st
	}
	q := req.Messages[last].Text
	if _, rest, ok := strings.Cut(q, "</request_context>\n"); ok && strings.HasPrefix(q, "<request_context") {
		q = rest // the product's note of the date: the script needs no clock
	}
	if i := strings.Index(q, "</selected_items>"); i >= 0 {
		for _, m := range selected.FindAllStringSubmatch(q[:i], -1) {
			st.handles[m[2]] = append(st.handles[m[2]], m[1])
		}
		q = strings.TrimSpace(q[i+len("</selected_items>"):])
	}
	// The user's memory is context, not the question.
	q = strings.TrimSpace(memoryRe.ReplaceAllString(q, ""))
	if m := continued.FindStringSubmatch(q); m != nil {
		// The product's note of a continued request: its question is the
		// one to answer.
		st.continued, q = true, strings.TrimSpace(m[1])
	}
	st.files, q = attached(q, req.Messages[last].Images)
	st.question = q
	for _, m := range req.Messages[last+1:] {
		switch m.Role {
		case ask.RoleAssistant:
			st.calls = append(st.calls, m.ToolCalls...)
		case ask.RoleTool:
			st.outputs = append(st.outputs, m)
		}
	}
	return st
}

// lastOutput returns the newest tool output's tool name and JSON body.
func (st turnState) lastOutput() (tool string, body map[string]any) {
	if len(st.outputs) == 0 {
		return "", nil
	}
	m := st.outputs[len(st.outputs)-1]
	for _, c := range st.calls {
		if c.ID == m.ToolCallID {
			tool = c.Name
		}
	}
	text := m.Text
	if i := strings.Index(text, "\n"); i >= 0 {
		text = text[i+1:]
	}
	text = strings.TrimSuffix(strings.TrimSpace(text), "</tool_output>")
	json.Unmarshal([]byte(text), &body)
	return tool, body
}

func call(n int, name string, args map[string]any) ask.ModelReply {
	b, _ := json.Marshal(args)
	return ask.ModelReply{ToolCalls: []ask.ToolCall{{ID: fmt.Sprintf("mock_%d", n), Name: name, Arguments: b}}}
}

func say(format string, args ...any) ask.ModelReply {
	return ask.ModelReply{Text: fmt.Sprintf(format, args...)}
}

func script(req ask.ModelRequest, n int, now func() time.Time) ask.ModelReply {
	st := read(req)
	tool, out := st.lastOutput()
	if out != nil {
		if name, args := findInstruction(out); name != "" && len(st.outputs) < 6 {
			return call(n, name, args)
		}
		// A preview of a field with no numbers is the data flow's to
		// answer (with a table); any other failure is said in words.
		if e, ok := out["error"].(map[string]any); ok && !(tool == "create_chart_preview" && strings.Contains(fmt.Sprint(e["message"]), "no numeric values")) {
			return failed(e)
		}
		if _, ok := out["rejected"]; ok {
			return say("OK, I did not do it.")
		}
	}
	if reply, ok := connections(req, st, tool, out, n); ok {
		return reply
	}
	if placeAll.MatchString(st.question) || declineAll.MatchString(st.question) {
		// An answer to the placement offer, when one was made.
		if reply, ok := placement(req, st, tool, out, n); ok {
			return reply
		}
	}
	switch {
	case putOn.MatchString(st.question):
		return placeOne(req, st, n)
	case showBy.MatchString(st.question):
		m := showBy.FindStringSubmatch(st.question)
		subject, by := strings.ToLower(m[1]), strings.ToLower(m[2])
		if ds := st.handles["dataset"]; len(ds) == 1 {
			// A selected dataset beats a name in the message.
			return selectedAnswer(st, target{id: ds[0], scoped: true, nameFor: func(dsName string) string { return chartName(dsName, subject, by) }}, n, now)
		}
		if len(st.handles["dataset"]) == 0 && len(st.handles["chart"]) == 0 {
			return searchAnswer(st, parse(st.question), n, now, nil)
		}
	case previewIt.MatchString(st.question):
		return previews(req, st, tool, out, n)
	case deleteDash.MatchString(st.question):
		name := deleteDash.FindStringSubmatch(st.question)[1]
		switch tool {
		case "":
			return call(n, "search_workspace", map[string]any{"query": name, "types": []string{"dashboard"}})
		case "search_workspace":
			id := pick(out, name)
			if id == "" {
				return say("I could not find a dashboard called %s.", name)
			}
			return call(n, "delete_dashboard", map[string]any{"dashboard_id": id})
		default:
			return say("Deleted the %s dashboard.", name)
		}
	case useTool.MatchString(st.question):
		m := useTool.FindStringSubmatch(st.question)
		want := strings.ToLower(m[1])
		if tool != "" {
			return say("%s", answered(tool, out))
		}
		for _, t := range req.Tools {
			name := strings.ToLower(t.Name)
			if name == want || strings.HasSuffix(name, "__"+strings.ReplaceAll(want, ".", "_")) {
				args := map[string]any{}
				if m[2] != "" {
					json.Unmarshal([]byte(m[2]), &args)
				}
				return call(n, t.Name, args)
			}
		}
		return say("No tool called %s is available to me; an admin may need to allow it on its connection.", m[1])
	case changeChart.MatchString(st.question):
		typ := strings.ToLower(changeChart.FindStringSubmatch(st.question)[1])
		charts := st.handles["chart"]
		if len(charts) == 0 {
			// "This" is the chart of the last answer.
			if reply, ok := followUp(st, parse(st.question), previousChart(req), n, now); ok {
				return reply
			}
			return say("Which chart? Select one with Add context, or ask a question about your data first.")
		}
		switch {
		case tool != "":
			return say("Done: the chart is now a %s chart.", typ)
		case len(charts) > 1:
			return say("Which chart do you mean?")
		}
		return call(n, "update_chart", map[string]any{"chart_id": charts[0], "chart_type": typ})
	}
	if len(st.files) > 0 && tool == "" {
		return say("%s", describe(st.files))
	}
	if ds := st.handles["dataset"]; len(ds) == 1 && len(st.files) == 0 {
		return selectedAnswer(st, target{id: ds[0], scoped: true}, n, now)
	}
	if c := st.handles["chart"]; len(c) == 1 && len(st.handles["dataset"]) == 0 && len(st.files) == 0 {
		return chartQuestion(st, c[0], n, now)
	}
	if len(st.files) == 0 && len(st.handles["dataset"]) == 0 && len(st.handles["chart"]) == 0 {
		// A question in the user's own words: a follow-up of the last
		// answer's chart, else a search of the workspace for its words.
		if q := parse(st.question); !q.greeting {
			if reply, ok := followUp(st, q, previousChart(req), n, now); ok {
				return reply
			}
			if len(q.content) > 0 {
				return searchAnswer(st, q, n, now, nil)
			}
		}
	}
	if tool != "" {
		return say("Done.")
	}
	return say("I can search your workspace, preview data and build charts. Try \"show signups by week\".")
}

// pick returns the ID of the search result whose name shares the most
// words with want.
func pick(out map[string]any, want string) string {
	results, _ := out["results"].([]any)
	best, bestScore := "", -1
	for _, r := range results {
		m, _ := r.(map[string]any)
		name, _ := m["name"].(string)
		id, _ := m["id"].(string)
		score := 0
		for _, w := range strings.Fields(strings.ToLower(want)) {
			if strings.Contains(strings.ToLower(name), w) {
				score++
			}
		}
		if score > bestScore {
			best, bestScore = id, score
		}
	}
	return best
}

// findInstruction looks for an "INSTRUCTION: call TOOL {json}" string
// anywhere in a tool output.
func findInstruction(v any) (string, map[string]any) {
	switch x := v.(type) {
	case string:
		if m := instruction.FindStringSubmatch(x); m != nil {
			var args map[string]any
			if json.Unmarshal([]byte(m[2]), &args) == nil {
				return m[1], args
			}
		}
	case map[string]any:
		for _, e := range x {
			if name, args := findInstruction(e); name != "" {
				return name, args
			}
		}
	case []any:
		for _, e := range x {
			if name, args := findInstruction(e); name != "" {
				return name, args
			}
		}
	}
	return "", nil
}

// file is one attachment as the mock read it.
type file struct {
	name, typ, truncated, text string
	image                      *ask.Image
}

var fileBlock = regexp.MustCompile(`(?s)<ATTACHED-FILE name="([^"]*)" type="([^"]*)" trust="untrusted"(?: truncated="([^"]*)")?>\n(.*?)\n</ATTACHED-FILE>\n`)

// attached splits a question into its attachments and the rest.
func attached(q string, images []ask.Image) ([]file, string) {
	var files []file
	for _, m := range fileBlock.FindAllStringSubmatch(q, -1) {
		f := file{name: m[1], typ: m[2], truncated: m[3], text: m[4]}
		var n int
		if _, err := fmt.Sscanf(f.text, "[image %d of this message]", &n); err == nil && n >= 1 && n <= len(images) {
			f.image, f.text = &images[n-1], ""
		}
		files = append(files, f)
	}
	return files, strings.TrimSpace(fileBlock.ReplaceAllString(q, ""))
}

// describe says what arrived in files.
func describe(files []file) string {
	var parts []string
	for _, f := range files {
		var s string
		switch {
		case f.image != nil:
			s = fmt.Sprintf("%s (%s image, %d bytes)", f.name, strings.TrimPrefix(f.image.MediaType, "image/"), len(f.image.Data))
		case strings.HasPrefix(f.text, "[") && strings.HasSuffix(f.text, "]") && !strings.Contains(f.text, "\n"):
			s = fmt.Sprintf("%s (%s; %s)", f.name, f.typ, strings.Trim(f.text, "[]"))
		case f.typ == "text/csv" || f.typ == "text/tab-separated-values":
			s = fmt.Sprintf("%s (%s)", f.name, table(f.text, f.typ))
		default:
			s = fmt.Sprintf("%s (%s, %d lines)", f.name, f.typ, strings.Count(f.text, "\n")+1)
		}
		if f.truncated != "" {
			s += "; it was truncated: " + f.truncated
		}
		parts = append(parts, s)
	}
	return "I received " + strings.Join(parts, ", and ") + "."
}

// table describes a CSV or TSV text: its columns, its rows and the
// largest value of its last numeric column.
func table(text, typ string) string {
	r := csv.NewReader(strings.NewReader(text))
	if typ == "text/tab-separated-values" {
		r.Comma = '\t'
	}
	r.FieldsPerRecord, r.LazyQuotes = -1, true
	recs, err := r.ReadAll()
	if err != nil || len(recs) == 0 {
		return "a table I could not read"
	}
	head, rows := recs[0], recs[1:]
	s := fmt.Sprintf("columns %s; %d rows", strings.Join(head, ", "), len(rows))
	for c := len(head) - 1; c > 0; c-- {
		best, bestRow, ok := 0.0, -1, true
		for i, row := range rows {
			if c >= len(row) {
				continue
			}
			v, err := strconv.ParseFloat(strings.TrimSpace(row[c]), 64)
			if err != nil {
				ok = false
				break
			}
			if bestRow < 0 || v > best {
				best, bestRow = v, i
			}
		}
		if ok && bestRow >= 0 {
			return s + fmt.Sprintf("; the largest %s is %s, for %s", head[c], strconv.FormatFloat(best, 'f', -1, 64), rows[bestRow][0])
		}
	}
	return s
}
