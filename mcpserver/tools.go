package mcpserver

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"
	"unsafe"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/askbi/askbi"
	"github.com/askbi/askbi/access"
	"github.com/askbi/askbi/dataexec"
	"github.com/askbi/askbi/internal/canonjson"
	"github.com/askbi/askbi/workspace"
)

// tool is one MCP tool: a dataexec action (name, right, class, input
// schema and call) with the MCP wording, the output schema of its
// structuredContent and its output shaping, and the handler that does all
// of it.
type tool struct {
	name     string
	right    access.Right // its scopes decide who sees the tool
	class    dataexec.Class
	desc     string
	input    json.RawMessage // JSON Schema
	output   string          // JSON Schema of the success shape
	register func(s *Server, t *mcp.Tool)
	// argRights are the rights a call's arguments ask for (refresh:
	// true, a save), read before the call so that a missing scope can
	// answer the HTTP step-up challenge: dataexec's own definition, which
	// it enforces when the call runs.
	argRights func(args json.RawMessage) []access.Right
	// budgeted tools take limit and max_bytes and fit the response
	// budget (budget.go).
	budgeted bool
	// app tools link the chart app (app.go).
	app bool
	// task, when set, says whether a call with these arguments may
	// become a task (tasks.go): the data reads.
	task func(args json.RawMessage) bool
}

// rightsOf reads a call's arguments as In and asks dataexec which rights
// they need (dataexec.Params.Rights, dataexec.Exploration.Rights).
func rightsOf[In interface{ Rights() []access.Right }](args json.RawMessage) []access.Right {
	var in In
	if json.Unmarshal(args, &in) != nil {
		return nil
	}
	return in.Rights()
}

// with sets the tool's argRights.
func (d tool) with(argRights func(json.RawMessage) []access.Right) tool {
	d.argRights = argRights
	return d
}

// tasked lets calls of the tool for which may says so become tasks.
func (d tool) tasked(may func(args json.RawMessage) bool) tool {
	d.task = may
	return d
}

// always is tasked's for every call of a tool.
func always(json.RawMessage) bool { return true }

// previewOnly is tasked's for explore_data: a preview runs a query; an
// inspection is quick and a save writes.
func previewOnly(args json.RawMessage) bool {
	var in struct {
		Operation dataexec.ExploreOp `json:"operation"`
	}
	return json.Unmarshal(args, &in) == nil && in.Operation == dataexec.ExplorePreview
}

// charted links the tool to the chart app.
func (d tool) charted() tool {
	d.app = true
	return d
}

// neededScopes are the scopes a call of d with args needs, in documented
// order.
func (d tool) neededScopes(args json.RawMessage) []access.Scope {
	need := map[access.Scope]bool{}
	rights := []access.Right{d.right}
	if d.argRights != nil {
		rights = append(rights, d.argRights(args)...)
	}
	for _, r := range rights {
		for _, sc := range r.Scopes() {
			need[sc] = true
		}
	}
	var out []access.Scope
	for _, sc := range access.AllScopes {
		if need[sc] {
			out = append(out, sc)
		}
	}
	return out
}

// missingScopes are the scopes of neededScopes that p lacks.
func (d tool) missingScopes(p access.Principal, args json.RawMessage) []access.Scope {
	return slices.DeleteFunc(d.neededScopes(args), p.HasScope)
}

func scopeNames(scopes []access.Scope) []string {
	names := make([]string, len(scopes))
	for i, sc := range scopes {
		names[i] = string(sc)
	}
	return names
}

// fromAction makes a tool of a product action; shape turns its result
// into the reply.
func fromAction[In, Out any](a dataexec.Action[In, Out], desc, output string, shape func(s *Server, in In, out Out) reply) tool {
	return tool{name: a.Name, right: a.Right, class: a.Class, desc: desc, input: a.Input, output: output,
		register: func(s *Server, t *mcp.Tool) {
			mcp.AddTool(s.mcp, t, handle(s, func(ctx context.Context, p access.Principal, in In) (reply, error) {
				out, err := a.Run(s.exec, ctx, p, in)
				if err != nil {
					return reply{}, err
				}
				return shape(s, in, out), nil
			}))
		}}
}

// Output schema pieces. Kept terse: the whole tools/list is budgeted.
const (
	obj         = `{"type":"object"}`
	arr         = `{"type":"array"}`
	tableSchema = `"columns":` + arr + `,"rows":` + arr + `,"row_count":{"type":"integer"},"truncated":{"type":"boolean"}`
	chartSchema = `"labels":` + arr + `,"series":` + arr
)

// tools, in the order tools/list shows them.
var tools = []tool{
	fromAction(dataexec.SearchAction, "Find dashboards, charts, datasets and connections by name. Empty query lists recent items.",
		`{"properties":{"results":`+arr+`},"required":["results"]}`, searchReply),
	activityTool,
	fromDataAction(dataexec.RunDatasetAction, "Run a dataset and return its rows, cut to fit limit and max_bytes.",
		`{"properties":{"dataset":`+obj+`,`+tableSchema+`},"required":["dataset","rows"]}`, datasetReply, datasetCut).with(rightsOf[dataexec.Params]).charted().tasked(always),
	fromDataAction(dataexec.ChartDataAction, "Return a chart's labels and series, cut to fit limit and max_bytes.",
		`{"properties":{"chart":`+obj+`,`+chartSchema+`},"required":["chart","labels","series"]}`, chartDataReply, chartCut).with(rightsOf[dataexec.Params]).charted().tasked(always),
	previewTool,
	fromDataAction(dataexec.ExploreAction, "Explore sources (owner/admin, all-project key). inspect: connections, or a connection's tables, or a table's columns. preview: run read-only sql. save: preview, then save as a dataset on dashboard_id (needs datasets:write).",
		`{"properties":{"connections":`+arr+`,"tables":`+arr+`,"dataset":`+obj+`,`+tableSchema+`},"required":["operation"]}`, exploreReply, exploreCut).with(rightsOf[dataexec.Exploration]).tasked(previewOnly),
}

func toolByName(name string) (tool, bool) {
	i := slices.IndexFunc(tools, func(d tool) bool { return d.name == name })
	if i < 0 {
		return tool{}, false
	}
	return tools[i], true
}

// visibleTo reports whether live principal p may call d: its right on
// p's team, by access.Allow (scopes, live role, an all-project key where
// the rule asks for one). Rights on one entity (a project's dataset) are
// decided when a call names it.
func (d tool) visibleTo(p access.Principal) bool {
	return access.Allow(p, d.right, access.Team(p.TeamID)) == nil
}

// visibleTools puts the SDK's name-sorted list in our order and keeps the
// tools live principal p may call: an array, empty when none is ("tools":
// null is refused by clients).
func visibleTools(listed []*mcp.Tool, p access.Principal) []*mcp.Tool {
	out := []*mcp.Tool{}
	for _, d := range tools {
		if !d.visibleTo(p) {
			continue
		}
		if i := slices.IndexFunc(listed, func(t *mcp.Tool) bool { return t.Name == d.name }); i >= 0 {
			out = append(out, listed[i])
		}
	}
	return out
}

func mustSchema(s []byte) *jsonschema.Schema {
	var js jsonschema.Schema
	if err := json.Unmarshal(s, &js); err != nil {
		panic(fmt.Sprintf("mcpserver: bad schema %s: %v", s, err))
	}
	return &js
}

// errorSchema is the structuredContent of a failed call.
const errorSchema = `{"properties":{"code":{"type":"string"},"message":{"type":"string"}},"required":["code","message"]}`

func (s *Server) addTools() {
	for _, d := range tools {
		readOnly, destructive := d.class.Hints()
		input := d.input
		if d.budgeted {
			input = budgetSchema(input, s.opts.MaxResultBytes)
		}
		s.inputs[d.name], s.rawInputs[d.name] = mustSchema(input), input
		var meta mcp.Meta
		if d.app {
			meta = appToolMeta()
		}
		d.register(s, &mcp.Tool{
			Meta:        meta,
			Name:        d.name,
			Description: d.desc,
			InputSchema: s.inputs[d.name],
			// Failed calls carry {code, message}; clients that validate
			// structuredContent of error results accept either shape.
			OutputSchema: mustSchema([]byte(`{"type":"object","anyOf":[` + d.output + `,` + errorSchema + `]}`)),
			Annotations:  &mcp.ToolAnnotations{ReadOnlyHint: readOnly, DestructiveHint: &destructive},
		})
	}
}

// reply is what a tool handler returns: a short summary for the text
// content, the data for structuredContent (and, serialized, for the
// text content too: see toolResult), and optional extra content.
type reply struct {
	summary string
	data    any
	extra   []mcp.Content
	meta    mcp.Meta // the result's _meta
	teamed  bool     // the OAuth team label is done (fitReply adds it before it measures)
	// quoted is the data's text as a JSON string, when sized escaped it:
	// the data was then quotedOf, which toolResult checks.
	quoted, quotedOf []byte
}

// handle adapts a tool function to the SDK: it passes the live principal
// the middleware began the request with, turns errors into structured
// error results (logging internal ones), and makes the result
// (toolResult).
func handle[In any](s *Server, f func(ctx context.Context, p access.Principal, in In) (reply, error)) mcp.ToolHandlerFor[In, any] {
	return func(ctx context.Context, req *mcp.CallToolRequest, in In) (*mcp.CallToolResult, any, error) {
		p, ok := access.FromContext(ctx)
		if !ok || !p.IsLive() {
			return errorResult(askbi.Errorf(askbi.Unauthenticated, "authentication is required")), nil, nil
		}
		r, err := f(ctx, p, in)
		if err != nil {
			if askbi.ErrorCode(err) == askbi.Internal {
				s.opts.Logger.Error("mcpserver: tool failed", "tool", req.Params.Name, "err", err)
			}
			return errorResult(err), nil, nil
		}
		if p.Auth == access.AuthOAuth && !r.teamed {
			r = s.withTeam(ctx, p.TeamID, r)
		}
		if known, declared := uiSupport(clientCaps(req)); known && !declared {
			r.meta = nil // the app's reading of the rows: before the result is encoded
		}
		res, err := toolResult(r)
		if err != nil {
			s.opts.Logger.Error("mcpserver: encode tool result", "tool", req.Params.Name, "err", err)
			return errorResult(err), nil, nil
		}
		return res, nil, nil
	}
}

// toolResult is the tool result of r: its summary, then the serialized
// JSON of its data, then its extra content, with the data, encoded once
// (encodeData), as structuredContent. The MCP spec (2025-06-18 and
// 2025-11-25, "Structured Content") says a tool that returns structured
// content SHOULD also return the serialized JSON in a TextContent block:
// many clients pass only content to their model, which would otherwise
// see the summary and no data. The summary stays first: it says what
// the JSON does not (the rows the budget left out and how to narrow the
// call, the dataset's scope, the data's date), and the spec asks for the
// JSON as a TextContent block, not as the only one.
//
// The result's JSON is built here too, once (encodedData): the SDK's
// encoding of the rest around the data's text, escaped once (or taken
// from r.quoted, escaped by an earlier call for the same data), and the
// data verbatim, so that the data is escaped and compacted by the SDK
// neither to size the answer (sized) nor to send it (preEncode).
func toolResult(r reply) (*mcp.CallToolResult, error) {
	res, enc, err := prepareResult(r)
	if err != nil {
		return nil, err
	}
	enc.wire = enc.join()
	res.StructuredContent = enc
	return res, nil
}

// prepareResult makes the result of r and the parts of its JSON, but for
// joining them.
func prepareResult(r reply) (*mcp.CallToolResult, encodedData, error) {
	data, err := encodeData(r.data, nil)
	if err != nil {
		return nil, encodedData{}, err
	}
	// The text shares the data's bytes, which nothing changes once they
	// are encoded.
	text := &mcp.TextContent{Text: unsafe.String(unsafe.SliceData(data), len(data))}
	content := append([]mcp.Content{&mcp.TextContent{Text: r.summary}, text}, r.extra...)
	res := &mcp.CallToolResult{Content: content, Meta: r.meta}
	quoted := r.quoted
	if len(quoted) == 0 || len(r.quotedOf) != len(data) || len(data) > 0 && &r.quotedOf[0] != &data[0] {
		quoted = canonjson.AppendMarshaledString(make([]byte, 0, len(data)+len(data)/4+2), text.Text)
	}
	// The SDK's encoding of the result with a stand-in for the text.
	rest := *res
	rest.Content = slices.Clone(content)
	rest.Content[1] = &mcp.TextContent{Text: dataText}
	frame, err := rest.MarshalJSON()
	if err != nil {
		return nil, encodedData{}, err
	}
	at := bytes.Index(frame, dataTextJSON)
	if at < 0 || len(frame) < 2 || frame[len(frame)-1] != '}' {
		return nil, encodedData{}, fmt.Errorf("mcpserver: unexpected encoding of a tool result: %.200s", frame)
	}
	return res, encodedData{data: data, quoted: quoted, frame: frame, at: at}, nil
}

// dataText stands for the data's text in the SDK's encoding of a result,
// where encodedData.join splices in the text escaped. No content holds a
// NUL: summaries and names are printable text.
const dataText = "\x00askbi:data\x00"

// dataTextJSON is dataText as the SDK encodes it.
var dataTextJSON = []byte(`"\u0000askbi:data\u0000"`)

// structuredMember introduces the data in a result's JSON.
const structuredMember = `,"structuredContent":`

// encodedData is the structured content of a result toolResult made: the
// data, its text escaped, the SDK's encoding of the rest of the result
// (frame, with dataTextJSON at at) and the whole result's JSON (wire),
// which preEncode sends as it is.
type encodedData struct {
	data, quoted, frame []byte
	at                  int
	wire                []byte
}

// size is the length of the result's JSON, which join writes.
func (d encodedData) size() int {
	return len(d.frame) - len(dataTextJSON) + len(d.quoted) + len(structuredMember) + len(d.data)
}

// join writes the result's JSON: the frame with the quoted text in place
// of the stand-in, and the data as structuredContent.
func (d encodedData) join() []byte {
	b := make([]byte, 0, d.size())
	b = append(b, d.frame[:d.at]...)
	b = append(b, d.quoted...)
	b = append(b, d.frame[d.at+len(dataTextJSON):len(d.frame)-1]...)
	b = append(b, structuredMember...)
	b = append(b, d.data...)
	return append(b, '}')
}

func (d encodedData) MarshalJSON() ([]byte, error) { return d.data, nil }

// teamOut names the authorized team in an OAuth call's result: a grant is
// for one team, and the client should see which.
type teamOut struct {
	ID   string `json:"id"`
	Name string `json:"name"`
}

// withTeam labels r with the OAuth team, in its summary and as the member
// "team" of its data. The data is encoded once and the team spliced into
// it, instead of a decode and a second encode. Without a team the data
// stays the value itself: go-sdk v1.8.0 compacts a json.RawMessage once
// more than the JSON it encodes itself
// (docs/go-sdk-raw-structured-content.md has the change that would let a
// pre-encoded result through untouched).
func (s *Server) withTeam(ctx context.Context, teamID string, r reply) reply {
	team := &teamOut{ID: teamID, Name: s.opts.TeamName(ctx, teamID)}
	if data, err := encodeData(r.data, team); err == nil {
		r.data = data
	} else {
		s.opts.Logger.Error("mcpserver: encode tool result", "err", err)
	}
	r.summary = "Team " + team.Name + ": " + r.summary
	r.teamed = true
	return r
}

// encodeData encodes data, an object, with team (when set) as its member
// "team". A json.RawMessage is taken as it is, and a table's rows are
// written by Result.AppendRowsJSON: copied from the encoding the executor
// made (a dataset's, which its cache keeps), else encoded without
// reflection.
func encodeData(data any, team *teamOut) (_ json.RawMessage, err error) {
	defer askbi.Wrap(&err, "mcpserver.encodeData")
	var b []byte
	switch d := data.(type) {
	case json.RawMessage:
		b = d
	case table:
		head, err := json.Marshal(d.head)
		if err != nil {
			return nil, err
		}
		meta, err := json.Marshal(tableMeta{d.res.Columns, d.res.Meta})
		if err != nil {
			return nil, err
		}
		// One buffer, grown once for the rows.
		b = appendMembers(append(make([]byte, 0, len(head)+len(meta)+16), '{'), head)
		b = appendMembers(b, meta)
		if len(b) > 1 {
			b = append(b, ',')
		}
		if b, err = d.res.AppendRowsJSON(append(b, `"rows":`...)); err != nil {
			return nil, err
		}
		b = append(b, '}')
	default:
		if b, err = json.Marshal(data); err != nil {
			return nil, err
		}
	}
	if team == nil || len(b) < 2 || b[0] != '{' {
		return b, nil
	}
	t, err := json.Marshal(struct {
		Team *teamOut `json:"team"`
	}{team})
	if err != nil {
		return nil, err
	}
	return joinObjects(b, t), nil
}

// joinObjects returns one JSON object holding the members of objs, in
// order; each is an encoded object ("{...}"), or null (no members).
func joinObjects(objs ...[]byte) []byte {
	n := 2
	for _, o := range objs {
		n += len(o)
	}
	out := append(make([]byte, 0, n), '{')
	for _, o := range objs {
		out = appendMembers(out, o)
	}
	return append(out, '}')
}

// appendMembers appends the members of obj, an encoded object ("{...}")
// or null (no members), to b, an object begun with "{".
func appendMembers(b, obj []byte) []byte {
	if len(obj) <= 2 || obj[0] != '{' {
		return b // {} or null
	}
	if len(b) > 1 {
		b = append(b, ',')
	}
	return append(b, obj[1:len(obj)-1]...)
}

// table is the structured content of a result's rows: the members of
// head (a struct: the dataset, the operation), then columns, the Meta
// members and rows.
type table struct {
	head any
	res  *dataexec.Result
}

type tableMeta struct {
	Columns []string `json:"columns"`
	dataexec.Meta
}

type refOut struct {
	Type string `json:"type"`
	ID   string `json:"id"`
	Name string `json:"name"`
	URL  string `json:"url,omitempty"`
}

// link is the reference of an entity with the URL of its product page,
// from the executor's Links; a same-origin path is made absolute against
// BaseURL, since an MCP client is never on the product's origin.
func (s *Server) link(r dataexec.Ref, page dataexec.Page) refOut {
	u := s.exec.Links()(page, r.ID)
	if strings.HasPrefix(u, "/") && !strings.HasPrefix(u, "//") {
		u = s.opts.BaseURL + u
	}
	return refOut{Type: string(r.Type), ID: r.ID, Name: r.Name, URL: u}
}

// chartPage is the page that opens a chart of status st.
func chartPage(st workspace.ChartStatus) dataexec.Page {
	if st == workspace.StatusPreview {
		return dataexec.PagePreview
	}
	return dataexec.PageChart
}

// search_workspace

type searchHit struct {
	Type string `json:"type"`
	ID   string `json:"id"`
	Name string `json:"name"`
	Info string `json:"info,omitempty"`
}

func hitsOf(refs []dataexec.Ref) []searchHit {
	hits := make([]searchHit, len(refs))
	for i, r := range refs {
		hits[i] = searchHit{Type: string(r.Type), ID: r.ID, Name: r.Name, Info: r.Info}
	}
	return hits
}

func searchReply(_ *Server, _ dataexec.SearchQuery, refs []dataexec.Ref) reply {
	return reply{summary: fmt.Sprintf("%d results.", len(refs)), data: map[string]any{"results": hitsOf(refs)}}
}

// get_workspace_activity

type activityIn struct {
	ProjectID string `json:"project_id"`
	From      string `json:"from"`
	To        string `json:"to"`
	Limit     *int   `json:"limit"`
}

// maxActivityDays bounds the date range of get_workspace_activity.
const maxActivityDays = 90

// activityTool reads the team's activity feed: the one tool that is not a
// dataexec action, since the feed is the host's (Options.Activity).
var activityTool = tool{
	name: "get_workspace_activity", right: access.RightRead, class: dataexec.ClassReadOnly,
	desc: "Recent changes and metric evaluations in the team, newest first.",
	input: json.RawMessage(`{"type":"object","properties":{"project_id":{"type":"string","minLength":1,"maxLength":100},` +
		`"from":{"type":"string","format":"date-time"},"to":{"type":"string","format":"date-time"},` +
		`"limit":{"type":"integer","minimum":1,"maximum":50,"description":"Default 20."}},"additionalProperties":false}`),
	output:   `{"properties":{"items":` + arr + `},"required":["items"]}`,
	register: func(s *Server, t *mcp.Tool) { mcp.AddTool(s.mcp, t, handle(s, s.workspaceActivity)) },
}

func (s *Server) workspaceActivity(ctx context.Context, p access.Principal, in activityIn) (reply, error) {
	live := p
	if err := access.Allow(live, access.RightRead, access.Team(live.TeamID)); err != nil {
		return reply{}, err
	}
	now := s.opts.Now().UTC()
	aq := ActivityQuery{TeamID: live.TeamID, ProjectID: in.ProjectID, To: now, From: now.AddDate(0, 0, -7), Limit: dataexec.DefaultSearchLimit}
	if in.Limit != nil {
		aq.Limit = *in.Limit
	}
	for _, f := range []struct {
		name string
		in   string
		out  *time.Time
	}{{"from", in.From, &aq.From}, {"to", in.To, &aq.To}} {
		if f.in == "" {
			continue
		}
		t, err := time.Parse(time.RFC3339, f.in)
		if err != nil {
			return reply{}, askbi.Errorf(askbi.InvalidArgument, "%s: must be an RFC 3339 date-time such as 2026-11-01T00:00:00Z", f.name)
		}
		*f.out = t
	}
	if !aq.From.Before(aq.To) || aq.To.Sub(aq.From) > maxActivityDays*24*time.Hour {
		return reply{}, askbi.Errorf(askbi.InvalidArgument, "from, to: from must be before to, at most %d days apart", maxActivityDays)
	}
	if !live.Projects.All {
		aq.ProjectIDs = append([]string{}, live.Projects.IDs...)
	}
	if in.ProjectID != "" && !live.Projects.Contains(in.ProjectID) {
		return reply{}, askbi.Errorf(askbi.NotFound, "project not found")
	}
	items, err := s.opts.Activity.Recent(ctx, aq)
	if err != nil {
		return reply{}, err
	}
	if items == nil {
		items = []ActivityItem{}
	}
	return reply{
		summary: fmt.Sprintf("%d activity items from %s to %s.", len(items), aq.From.Format(time.RFC3339), aq.To.Format(time.RFC3339)),
		data:    map[string]any{"team_id": live.TeamID, "items": items},
	}, nil
}

// run_dataset and get_chart_data

func summarizeMeta(n string, m dataexec.Meta) string {
	var b strings.Builder
	b.WriteString(n)
	if m.Truncated {
		fmt.Fprintf(&b, " Truncated (%s).", m.TruncatedReason)
	}
	if !m.DataDate.IsZero() {
		fmt.Fprintf(&b, " Data from %s", m.DataDate.UTC().Format(time.RFC3339))
		if m.Cached {
			b.WriteString(" (cached)")
		}
		b.WriteString(".")
	}
	if m.Warning != "" {
		b.WriteString(" Warning: " + m.Warning)
	}
	return b.String()
}

func datasetReply(s *Server, _ dataexec.DatasetRun, res *dataexec.Result) reply {
	return reply{
		summary: summarizeMeta(fmt.Sprintf("Dataset %q%s: %d rows, %d columns.", res.Dataset.Name, scopeNote(*res.Dataset), res.RowCount, len(res.Columns)), res.Meta),
		data: table{struct {
			Dataset refOut `json:"dataset"`
		}{s.link(*res.Dataset, dataexec.PageDataset)}, res},
		meta: chartHint(res),
	}
}

func chartDataReply(s *Server, _ dataexec.ChartRun, cr *dataexec.ChartResult) reply {
	chart := s.link(dataexec.Ref{Type: access.TypeChart, ID: cr.Chart.ID, Name: cr.Chart.Name}, chartPage(cr.Status))
	return reply{
		summary: summarizeMeta(fmt.Sprintf("Chart %q (%s)%s: %d labels, %d series.", cr.Chart.Name, cr.Data.Type, datasetsScope(cr.Datasets), len(cr.Data.Labels), len(cr.Data.Series)), cr.Data.Meta),
		data: struct {
			Chart refOut `json:"chart"`
			*dataexec.ChartData
		}{chart, cr.Data},
	}
}

// scopeNote names a scoped dataset's scope in a summary: the data holds
// only those rows.
func scopeNote(d dataexec.Ref) string {
	if d.Scope == nil {
		return ""
	}
	return " (scope: " + d.Scope.Text + ")"
}

// datasetsScope is scopeNote of a chart's scoped dataset, if any.
func datasetsScope(ds []dataexec.Ref) string {
	for _, d := range ds {
		if d.Scope != nil {
			return scopeNote(d)
		}
	}
	return ""
}

// create_chart_preview: the action, with an optional PNG of the chart.

type chartPreviewIn struct {
	dataexec.ChartSpec
	Image bool `json:"image"`
}

var previewTool = tool{
	name: dataexec.ChartPreviewAction.Name, right: dataexec.ChartPreviewAction.Right, class: dataexec.ChartPreviewAction.Class,
	desc:   "Create a temporary chart from a dataset, not placed on a dashboard (owner/admin, all-project key).",
	input:  withProperty(dataexec.ChartPreviewAction.Input, "image", `{"type":"boolean","description":"Add a PNG."}`),
	output: `{"properties":{"status":{"enum":["preview"]},"chart":` + obj + `,"datasets":` + arr + `,` + chartSchema + `},"required":["status","chart","datasets"]}`,
	register: func(s *Server, t *mcp.Tool) {
		mcp.AddTool(s.mcp, t, handle(s, s.createChartPreview))
	},
	budgeted: true,
	app:      true,
}

// withProperty adds property name with schema to an object schema.
func withProperty(schema json.RawMessage, name, prop string) json.RawMessage {
	var m map[string]json.RawMessage
	var ps map[string]json.RawMessage
	if json.Unmarshal(schema, &m) != nil || json.Unmarshal(m["properties"], &ps) != nil {
		panic("mcpserver: not an object schema")
	}
	ps[name] = json.RawMessage(prop)
	m["properties"], _ = json.Marshal(ps)
	out, _ := json.Marshal(m)
	return out
}

func (s *Server) createChartPreview(ctx context.Context, p access.Principal, b budgeted[chartPreviewIn]) (reply, error) {
	cr, err := dataexec.ChartPreviewAction.Run(s.exec, ctx, p, b.in.ChartSpec)
	if err != nil {
		return reply{}, err
	}
	var png []byte
	imageError := ""
	switch {
	case !b.in.Image:
	case s.opts.ChartImage == nil:
		imageError = "this server draws no chart images; the chart was created"
	default:
		// The chart exists whatever happens to its picture, which shows
		// the whole chart; the budget applies to the data beside it.
		if png, err = s.opts.ChartImage(cr.Chart.Name, cr.Data); err != nil {
			s.opts.Logger.Warn("mcpserver: chart image", "err", err)
			png, imageError = nil, "the image could not be drawn; the chart was created"
		}
	}
	shape := func(s *Server, _ chartPreviewIn, cr *dataexec.ChartResult) reply {
		chart := s.link(dataexec.Ref{Type: access.TypeChart, ID: cr.Chart.ID, Name: cr.Chart.Name}, chartPage(cr.Status))
		datasets := make([]refOut, len(cr.Datasets))
		for i, d := range cr.Datasets {
			datasets[i] = s.link(d, dataexec.PageDataset)
		}
		summary := summarizeMeta(fmt.Sprintf("Created preview chart %q: %s", cr.Chart.Name, chart.URL), cr.Data.Meta)
		if imageError != "" {
			summary += " The image is unavailable: " + imageError + "."
		}
		return reply{
			summary: summary,
			data: struct {
				Status   string   `json:"status"`
				Chart    refOut   `json:"chart"`
				Datasets []refOut `json:"datasets"`
				*dataexec.ChartData
				ImageError string `json:"image_error,omitempty"`
			}{Status: string(cr.Status), Chart: chart, Datasets: datasets, ChartData: cr.Data, ImageError: imageError},
		}
	}
	r := fitReply(ctx, s, p, b, cr, shape, previewCut)
	if png != nil {
		r.extra = []mcp.Content{&mcp.ImageContent{Data: png, MIMEType: "image/png"}}
	}
	return r, nil
}

// explore_data

func exploreReply(s *Server, _ dataexec.Exploration, ex *dataexec.Explored) reply {
	op := ex.Operation
	switch {
	case ex.Dataset != nil:
		ds := s.link(*ex.Dataset, dataexec.PageDataset)
		return reply{
			summary: fmt.Sprintf("Saved dataset %q (%d preview rows): %s", ex.Dataset.Name, ex.Preview.RowCount, ds.URL),
			data: table{struct {
				Operation dataexec.ExploreOp `json:"operation"`
				Dataset   refOut             `json:"dataset"`
			}{op, ds}, ex.Preview},
		}
	case ex.Preview != nil:
		return reply{
			summary: summarizeMeta(fmt.Sprintf("Preview: %d rows, %d columns.", ex.Preview.RowCount, len(ex.Preview.Columns)), ex.Preview.Meta),
			data: table{struct {
				Operation dataexec.ExploreOp `json:"operation"`
			}{op}, ex.Preview},
		}
	case ex.Tables != nil:
		return reply{summary: fmt.Sprintf("%d tables.", len(ex.Tables)), data: map[string]any{"operation": op, "tables": ex.Tables}}
	}
	return reply{summary: fmt.Sprintf("%d connections.", len(ex.Connections)),
		data: map[string]any{"operation": op, "connections": hitsOf(ex.Connections)}}
}
