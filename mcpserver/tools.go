package mcpserver

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/askbi/askbi"
	"github.com/askbi/askbi/access"
	"github.com/askbi/askbi/dataexec"
)

// toolDef is one tool, defined once: its name, the scope that shows it,
// its description, and its input and output schemas.
type toolDef struct {
	name     string
	right    access.Right // its scopes decide who sees the tool
	readOnly bool
	desc     string
	input    string // JSON Schema
	output   string // JSON Schema of the success shape
}

// Shared schema pieces. Kept terse: the whole tools/list is budgeted.
const (
	idSchema      = `{"type":"string","minLength":1,"maxLength":100}`
	obj           = `{"type":"object"}`
	arr           = `{"type":"array"}`
	filtersSchema = `{"type":"array","maxItems":20,"items":{"type":"object","properties":{"field":{"type":"string"},"op":{"enum":["eq","ne","gt","gte","lt","lte","contains","in"]},"value":{}},"required":["field","op"],"additionalProperties":false}}`
	dataParams    = `"filters":` + filtersSchema + `,"variables":{"type":"object","maxProperties":20},"refresh":{"type":"boolean","description":"Bypass cache; needs data:refresh"}`
	tableSchema   = `"columns":` + arr + `,"rows":` + arr + `,"row_count":{"type":"integer"},"truncated":{"type":"boolean"}`
	chartSchema   = `"labels":` + arr + `,"series":` + arr
	limitSchema   = `"limit":{"type":"integer","minimum":1,"maximum":50,"description":"Default 20."}`
)

// tools, in the order tools/list shows them.
var tools = []toolDef{
	{
		name: "search_workspace", right: access.RightRead, readOnly: true,
		desc:   "Find dashboards, charts and datasets by name. Empty query lists recent items.",
		input:  `{"type":"object","properties":{"query":{"type":"string","maxLength":200},"types":{"type":"array","maxItems":3,"items":{"enum":["dashboard","chart","dataset"]}},` + limitSchema + `},"additionalProperties":false}`,
		output: `{"properties":{"results":` + arr + `},"required":["results"]}`,
	},
	{
		name: "get_workspace_activity", right: access.RightRead, readOnly: true,
		desc:   "Recent changes and metric evaluations in the team, newest first.",
		input:  `{"type":"object","properties":{"project_id":` + idSchema + `,"from":{"type":"string","format":"date-time"},"to":{"type":"string","format":"date-time"},` + limitSchema + `},"additionalProperties":false}`,
		output: `{"properties":{"items":` + arr + `},"required":["items"]}`,
	},
	{
		name: "run_dataset", right: access.RightRead, readOnly: true,
		desc:   "Run a dataset and return its rows (capped).",
		input:  `{"type":"object","properties":{"dataset_id":` + idSchema + `,` + dataParams + `},"required":["dataset_id"],"additionalProperties":false}`,
		output: `{"properties":{"dataset":` + obj + `,` + tableSchema + `},"required":["dataset","rows"]}`,
	},
	{
		name: "get_chart_data", right: access.RightRead, readOnly: true,
		desc:   "Return a chart's labels and series.",
		input:  `{"type":"object","properties":{"chart_id":` + idSchema + `,` + dataParams + `},"required":["chart_id"],"additionalProperties":false}`,
		output: `{"properties":{"chart":` + obj + `,` + chartSchema + `},"required":["chart","labels","series"]}`,
	},
	{
		name: "create_chart_preview", right: access.RightPreviewChart,
		desc:   "Create a temporary chart from a dataset, not placed on a dashboard (owner/admin, all-project key).",
		input:  `{"type":"object","properties":{"dataset_id":` + idSchema + `,"chart_type":{"enum":["line","bar","area","pie","doughnut","table","kpi"]},"x_field":{"type":"string","maxLength":100},"y_fields":{"type":"array","minItems":1,"maxItems":10,"items":{"type":"string","maxLength":100}},"name":{"type":"string","minLength":1,"maxLength":100},"image":{"type":"boolean","description":"Add a PNG."}},"required":["dataset_id","chart_type","y_fields","name"],"additionalProperties":false}`,
		output: `{"properties":{"status":{"enum":["preview"]},"chart":` + obj + `,"datasets":` + arr + `,` + chartSchema + `},"required":["status","chart","datasets"]}`,
	},
	{
		name: "explore_data", right: access.RightExplore,
		desc: "Explore sources (owner/admin, all-project key). inspect: connections, or a connection's tables, or a table's columns. preview: run read-only sql. save: preview, then save as a dataset on dashboard_id (needs datasets:write).",
		input: `{"type":"object","properties":{"operation":{"enum":["inspect","preview","save"]},"connection_id":` + idSchema + `,"table":{"type":"string","maxLength":200},"sql":{"type":"string","maxLength":20000},` +
			`"tool":{"type":"string","maxLength":64},"arguments":{"type":"object"},"name":{"type":"string","maxLength":100},"dashboard_id":` + idSchema + `},"required":["operation"],"additionalProperties":false}`,
		output: `{"properties":{"connections":` + arr + `,"tables":` + arr + `,"dataset":` + obj + `,` + tableSchema + `},"required":["operation"]}`,
	},
}

func toolByName(name string) (toolDef, bool) {
	i := slices.IndexFunc(tools, func(d toolDef) bool { return d.name == name })
	if i < 0 {
		return toolDef{}, false
	}
	return tools[i], true
}

func (d toolDef) visibleTo(p access.Principal) bool {
	return p.UserID != "" && !slices.ContainsFunc(d.right.Scopes(), func(s access.Scope) bool { return !p.HasScope(s) })
}

// visibleTools puts the SDK's name-sorted list in our order and keeps the
// tools p's scopes allow.
func visibleTools(listed []*mcp.Tool, p access.Principal) []*mcp.Tool {
	var out []*mcp.Tool
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

func mustSchema(s string) *jsonschema.Schema {
	var js jsonschema.Schema
	if err := json.Unmarshal([]byte(s), &js); err != nil {
		panic(fmt.Sprintf("mcpserver: bad schema %s: %v", s, err))
	}
	return &js
}

// errorSchema is the structuredContent of a failed call.
const errorSchema = `{"properties":{"code":{"type":"string"},"message":{"type":"string"}},"required":["code","message"]}`

func (s *Server) addTools() {
	for _, d := range tools {
		t := &mcp.Tool{
			Name:        d.name,
			Description: d.desc,
			InputSchema: mustSchema(d.input),
			// Failed calls carry {code, message}; clients that validate
			// structuredContent of error results accept either shape.
			OutputSchema: mustSchema(`{"type":"object","anyOf":[` + d.output + `,` + errorSchema + `]}`),
			Annotations: &mcp.ToolAnnotations{
				ReadOnlyHint:    d.readOnly,
				DestructiveHint: new(false),
			},
		}
		switch d.name {
		case "search_workspace":
			mcp.AddTool(s.mcp, t, handle(s, s.searchWorkspace))
		case "get_workspace_activity":
			mcp.AddTool(s.mcp, t, handle(s, s.workspaceActivity))
		case "run_dataset":
			mcp.AddTool(s.mcp, t, handle(s, s.runDataset))
		case "get_chart_data":
			mcp.AddTool(s.mcp, t, handle(s, s.chartData))
		case "create_chart_preview":
			mcp.AddTool(s.mcp, t, handle(s, s.createChartPreview))
		case "explore_data":
			mcp.AddTool(s.mcp, t, handle(s, s.exploreData))
		}
	}
}

// reply is what a tool handler returns: a short summary for the text
// content, the data for structuredContent, and optional extra content.
type reply struct {
	summary string
	data    any
	extra   []mcp.Content
}

// handle adapts a tool function to the SDK: it passes the live principal
// the middleware began the request with, turns errors into structured
// error results (logging internal ones), and sets the text summary so the
// SDK never repeats the data as text.
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
		content := append([]mcp.Content{&mcp.TextContent{Text: r.summary}}, r.extra...)
		return &mcp.CallToolResult{Content: content, StructuredContent: r.data}, nil, nil
	}
}

type refOut struct {
	Type string `json:"type"`
	ID   string `json:"id"`
	Name string `json:"name"`
	URL  string `json:"url,omitempty"`
}

// link builds the product URL of an entity from the base URL.
func (s *Server) link(r dataexec.Ref) refOut {
	return refOut{Type: string(r.Type), ID: r.ID, Name: r.Name, URL: s.opts.BaseURL + "/" + string(r.Type) + "s/" + r.ID}
}

// search_workspace

type searchIn struct {
	Query string   `json:"query"`
	Types []string `json:"types"`
	Limit *int     `json:"limit"`
}

type searchHit struct {
	Type string `json:"type"`
	ID   string `json:"id"`
	Name string `json:"name"`
	Info string `json:"info,omitempty"`
}

func (s *Server) searchWorkspace(ctx context.Context, p access.Principal, in searchIn) (reply, error) {
	q := dataexec.SearchQuery{Text: in.Query, Limit: dataexec.DefaultSearchLimit}
	if in.Limit != nil {
		q.Limit = *in.Limit // the schema keeps it in 1..50
	}
	q.Types = []access.EntityType{access.TypeDashboard, access.TypeChart, access.TypeDataset}
	if len(in.Types) > 0 {
		q.Types = nil
		for _, t := range in.Types {
			q.Types = append(q.Types, access.EntityType(t))
		}
	}
	refs, err := s.exec.Search(ctx, p, q)
	if err != nil {
		return reply{}, err
	}
	hits := make([]searchHit, len(refs))
	for i, r := range refs {
		hits[i] = searchHit{Type: string(r.Type), ID: r.ID, Name: r.Name, Info: r.Info}
	}
	return reply{summary: fmt.Sprintf("%d results.", len(hits)), data: map[string]any{"results": hits}}, nil
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

type dataIn struct {
	Filters   []dataexec.Filter `json:"filters"`
	Variables map[string]any    `json:"variables"`
	Refresh   bool              `json:"refresh"`
}

func (in dataIn) params() dataexec.Params {
	return dataexec.Params{Filters: in.Filters, Variables: in.Variables, Refresh: in.Refresh}
}

type runDatasetIn struct {
	DatasetID string `json:"dataset_id"`
	dataIn
}

type tableOut struct {
	Columns []string `json:"columns"`
	Rows    [][]any  `json:"rows"`
	dataexec.Meta
}

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

func (s *Server) runDataset(ctx context.Context, p access.Principal, in runDatasetIn) (reply, error) {
	res, err := s.exec.RunDataset(ctx, p, in.DatasetID, in.params())
	if err != nil {
		return reply{}, err
	}
	return reply{
		summary: summarizeMeta(fmt.Sprintf("Dataset %q: %d rows, %d columns.", res.Dataset.Name, res.RowCount, len(res.Columns)), res.Meta),
		data: struct {
			Dataset refOut `json:"dataset"`
			tableOut
		}{s.link(*res.Dataset), tableOut{res.Columns, res.Rows, res.Meta}},
	}, nil
}

type chartDataIn struct {
	ChartID string `json:"chart_id"`
	dataIn
}

func (s *Server) chartData(ctx context.Context, p access.Principal, in chartDataIn) (reply, error) {
	cr, err := s.exec.ChartData(ctx, p, in.ChartID, in.params())
	if err != nil {
		return reply{}, err
	}
	chart := s.link(dataexec.Ref{Type: access.TypeChart, ID: cr.Chart.ID, Name: cr.Chart.Name})
	return reply{
		summary: summarizeMeta(fmt.Sprintf("Chart %q (%s): %d labels, %d series.", cr.Chart.Name, cr.Data.Type, len(cr.Data.Labels), len(cr.Data.Series)), cr.Data.Meta),
		data: struct {
			Chart refOut `json:"chart"`
			*dataexec.ChartData
		}{chart, cr.Data},
	}, nil
}

// create_chart_preview

type chartPreviewIn struct {
	DatasetID string   `json:"dataset_id"`
	ChartType string   `json:"chart_type"`
	XField    string   `json:"x_field"`
	YFields   []string `json:"y_fields"`
	Name      string   `json:"name"`
	Image     bool     `json:"image"`
}

func (s *Server) createChartPreview(ctx context.Context, p access.Principal, in chartPreviewIn) (reply, error) {
	cr, err := s.exec.CreateChartPreview(ctx, p, dataexec.ChartSpec{
		DatasetID: in.DatasetID, Name: in.Name, Type: dataexec.ChartType(in.ChartType), XField: in.XField, YFields: in.YFields,
	})
	if err != nil {
		return reply{}, err
	}
	chart := s.link(dataexec.Ref{Type: access.TypeChart, ID: cr.Chart.ID, Name: cr.Chart.Name})
	datasets := make([]refOut, len(cr.Datasets))
	for i, d := range cr.Datasets {
		datasets[i] = s.link(d)
	}
	out := struct {
		Status   string   `json:"status"`
		Chart    refOut   `json:"chart"`
		Datasets []refOut `json:"datasets"`
		*dataexec.ChartData
		ImageError string `json:"image_error,omitempty"`
	}{Status: string(cr.Status), Chart: chart, Datasets: datasets, ChartData: cr.Data}
	r := reply{summary: fmt.Sprintf("Created preview chart %q: %s", cr.Chart.Name, chart.URL)}
	if in.Image {
		// The chart exists whatever happens to its picture.
		png, err := renderPNG(cr.Chart.Name, cr.Data)
		if err != nil {
			s.opts.Logger.Warn("mcpserver: chart image", "err", err)
			out.ImageError = "the image could not be drawn; the chart was created"
		} else {
			r.extra = []mcp.Content{&mcp.ImageContent{Data: png, MIMEType: "image/png"}}
		}
	}
	r.data = out
	return r, nil
}

// explore_data

type exploreIn struct {
	Operation    string          `json:"operation"`
	ConnectionID string          `json:"connection_id"`
	Table        string          `json:"table"`
	SQL          string          `json:"sql"`
	Tool         string          `json:"tool"`
	Arguments    json.RawMessage `json:"arguments"`
	Name         string          `json:"name"`
	DashboardID  string          `json:"dashboard_id"`
}

func (s *Server) exploreData(ctx context.Context, p access.Principal, in exploreIn) (reply, error) {
	need := func(field, v string) error {
		if v == "" {
			return askbi.Errorf(askbi.InvalidArgument, "%s: required for %s", field, in.Operation)
		}
		return nil
	}
	req := dataexec.Request{ConnectionID: in.ConnectionID, SQL: in.SQL, Tool: in.Tool, Arguments: in.Arguments}
	switch in.Operation {
	case "inspect":
		if in.ConnectionID == "" {
			conns, err := s.exec.Connections(ctx, p)
			if err != nil {
				return reply{}, err
			}
			out := make([]searchHit, len(conns))
			for i, c := range conns {
				out[i] = searchHit{Type: string(c.Type), ID: c.ID, Name: c.Name, Info: c.Info}
			}
			return reply{summary: fmt.Sprintf("%d connections.", len(out)), data: map[string]any{"operation": in.Operation, "connections": out}}, nil
		}
		rels, err := s.exec.Inspect(ctx, p, in.ConnectionID, in.Table)
		if err != nil {
			return reply{}, err
		}
		if rels == nil {
			rels = []dataexec.Relation{}
		}
		return reply{summary: fmt.Sprintf("%d tables.", len(rels)), data: map[string]any{"operation": in.Operation, "tables": rels}}, nil
	case "preview":
		if err := need("connection_id", in.ConnectionID); err != nil {
			return reply{}, err
		}
		res, err := s.exec.Preview(ctx, p, req)
		if err != nil {
			return reply{}, err
		}
		return reply{
			summary: summarizeMeta(fmt.Sprintf("Preview: %d rows, %d columns.", res.RowCount, len(res.Columns)), res.Meta),
			data: struct {
				Operation string `json:"operation"`
				tableOut
			}{in.Operation, tableOut{res.Columns, res.Rows, res.Meta}},
		}, nil
	case "save":
		for _, f := range [][2]string{{"connection_id", in.ConnectionID}, {"name", in.Name}, {"dashboard_id", in.DashboardID}} {
			if err := need(f[0], f[1]); err != nil {
				return reply{}, err
			}
		}
		sd, err := s.exec.SaveDataset(ctx, p, dataexec.NewDataset{Name: in.Name, DashboardID: in.DashboardID, Request: req})
		if err != nil {
			return reply{}, err
		}
		ds := s.link(sd.Dataset)
		return reply{
			summary: fmt.Sprintf("Saved dataset %q (%d preview rows): %s", sd.Dataset.Name, sd.Preview.RowCount, ds.URL),
			data: struct {
				Operation string `json:"operation"`
				Dataset   refOut `json:"dataset"`
				tableOut
			}{in.Operation, ds, tableOut{sd.Preview.Columns, sd.Preview.Rows, sd.Preview.Meta}},
		}, nil
	}
	return reply{}, askbi.Errorf(askbi.InvalidArgument, "operation: must be inspect, preview or save")
}
